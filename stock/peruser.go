package stock

import (
	"context"
	"database/sql"
	"fmt"
	"strconv"

	"github.com/redis/go-redis/v9"

	"github.com/seckill-lab/seckill/internal/mysqlerr"
)

// "One order per user" (一人一单), or more generally at most Limit orders
// per user and goods, is the rule a flash sale adds once the stock is
// safe: a user who clicks ten times, or runs a script, must not take ten
// units. The seeds do not cover it; it comes from practice (the
// hm-dianping Redis course's 一人一单). It is a second race of the same
// shape as the stock's: read the user's orders, check, insert.
//
// The service enforces Config.PerUserLimit where each strategy's stock is:
//   - the correct MySQL strategies (locks, row locks, version CAS,
//     sql-atomic) take a slot (goods, user, 0..Limit-1) in user_slots,
//     whose primary key is the guarantee: a purchase takes slot 0, or
//     slot 1 when 0 is taken, ... and is refused with ErrUserLimit when
//     all Limit slots are; two purchases that race for one slot meet at
//     the key, whatever lock they hold or do not hold;
//   - the flawed strategies check then insert (count the user's orders,
//     refuse at Limit, insert the order), as the naive code does: their
//     check races exactly as their stock read does;
//   - redis-atomic (and redis-stream) check the user's count in the same
//     Lua script that checks and takes the stock (UserLimitKey).

// MaxPerUserLimit bounds Config.PerUserLimit.
const MaxPerUserLimit = 1000

// UserSlot is one row of user_slots: slot Slot (0..limit-1) of user
// UserID's orders of goods GoodsID, taken by the order OrderRequest in the
// same transaction. The primary key (goods, user, slot) is what enforces
// the per-user limit for the correct MySQL strategies.
type UserSlot struct {
	GoodsID   int64  `gorm:"primaryKey;autoIncrement:false"`
	UserID    string `gorm:"primaryKey;type:varchar(64) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin"`
	Slot      int    `gorm:"primaryKey;autoIncrement:false"`
	RequestID string `gorm:"type:varchar(128) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin;not null"`
}

// TableName pins the table name.
func (UserSlot) TableName() string { return "user_slots" }

// UserRule is the per-user rule an order is sold under (Order.Rule; not
// stored).
type UserRule struct {
	// Limit is the most orders per user and goods; 0 = no rule.
	Limit int
	// CheckThenInsert counts the user's orders and inserts when the count
	// is below Limit, with no key behind it (the flawed strategies);
	// false takes a slot under user_slots' primary key.
	CheckThenInsert bool
}

const (
	sqlTakeSlot     = "INSERT INTO user_slots (goods_id, user_id, slot, request_id) VALUES (?, ?, ?, ?)"
	sqlFreeSlot     = "DELETE FROM user_slots WHERE goods_id = ? AND user_id = ? AND slot = ? AND request_id = ?"
	sqlUserOrders   = "SELECT COUNT(*) FROM orders WHERE goods_id = ? AND user_id = ?"
	sqlResetSlots   = "DELETE FROM user_slots WHERE goods_id = ?"
	noSlot          = -1
	buyersKeyPrefix = "seckill:buyers:"
)

// checkUser applies o.Rule in tx before o is inserted. It returns the slot
// taken (noSlot when none), or ErrUserLimit.
func checkUser(ctx context.Context, tx *sql.Tx, o *Order) (int, error) {
	r := o.Rule
	if r.Limit <= 0 {
		return noSlot, nil
	}
	if r.CheckThenInsert {
		return noSlot, countUser(ctx, tx, o)
	}
	for slot := range r.Limit {
		_, err := tx.ExecContext(ctx, sqlTakeSlot, o.GoodsID, o.UserID, slot, o.RequestID)
		if err == nil {
			return slot, nil
		}
		if !mysqlerr.IsDuplicate(err) {
			return noSlot, fmt.Errorf("take a user slot: %w", err)
		}
	}
	return noSlot, fmt.Errorf("user %q has all %d slots of goods %d: %w", o.UserID, r.Limit, o.GoodsID, ErrUserLimit)
}

// countUser is the check of a check-then-insert rule: the user's orders
// of the goods are counted, and ErrUserLimit when they reached the limit.
// Nothing stops a second purchase of the same user from counting the same
// number before either inserts.
func countUser(ctx context.Context, q rowQuerier, o *Order) error {
	var n int
	if err := q.QueryRowContext(ctx, sqlUserOrders, o.GoodsID, o.UserID).Scan(&n); err != nil {
		return fmt.Errorf("count the user's orders: %w", err)
	}
	if n >= o.Rule.Limit {
		return fmt.Errorf("user %q has %d orders of goods %d (limit %d): %w", o.UserID, n, o.GoodsID, o.Rule.Limit, ErrUserLimit)
	}
	return nil
}

// freeUserSlot gives back the slot an order took when its own insert
// failed but the transaction goes on (a batch).
func freeUserSlot(ctx context.Context, tx *sql.Tx, o *Order, slot int) error {
	if slot == noSlot {
		return nil
	}
	if _, err := tx.ExecContext(ctx, sqlFreeSlot, o.GoodsID, o.UserID, slot, o.RequestID); err != nil {
		return fmt.Errorf("free a user slot: %w", err)
	}
	return nil
}

// UserLimitKey is the Redis hash of goods id's orders per user
// (redis-atomic, redis-stream): field user id, value its count.
func UserLimitKey(goodsID int64) string { return buyersKeyPrefix + strconv.FormatInt(goodsID, 10) }

// takeForUserScript checks the stock and the user's count and takes both
// in one step: KEYS stock, buyers; ARGV qty, user, limit. Returns the
// remaining stock, -1 when the stock does not cover qty, -2 when the
// mirror is missing, -3 when the user is at the limit.
var takeForUserScript = redis.NewScript(`
local s = redis.call('GET', KEYS[1])
if not s then return -2 end
local q = tonumber(ARGV[1])
if tonumber(s) < q then return -1 end
local lim = tonumber(ARGV[3])
if lim > 0 and tonumber(redis.call('HGET', KEYS[2], ARGV[2]) or '0') >= lim then return -3 end
if lim > 0 then redis.call('HINCRBY', KEYS[2], ARGV[2], 1) end
return redis.call('DECRBY', KEYS[1], q)
`)

// giveForUserScript undoes takeForUserScript: KEYS stock, buyers; ARGV
// qty, user, limit.
var giveForUserScript = redis.NewScript(`
redis.call('INCRBY', KEYS[1], tonumber(ARGV[1]))
if tonumber(ARGV[3]) > 0 and tonumber(redis.call('HGET', KEYS[2], ARGV[2]) or '0') > 0 then
  redis.call('HINCRBY', KEYS[2], ARGV[2], -1)
end
return 1
`)

// mirrorResult maps takeForUserScript's answer.
func mirrorResult(n int64, userID string, limit int) (int64, error) {
	switch n {
	case -1:
		return 0, ErrSoldOut
	case -2:
		return 0, errMirrorMissing
	case -3:
		return 0, fmt.Errorf("user %q is at the limit of %d orders: %w", userID, limit, ErrUserLimit)
	}
	return n, nil
}
