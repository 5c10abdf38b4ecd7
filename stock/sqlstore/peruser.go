package sqlstore

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/seckill-lab/seckill/lockimpl/mysqlerr"
	"github.com/seckill-lab/seckill/stock"
)

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

const (
	sqlTakeSlot   = "INSERT INTO user_slots (goods_id, user_id, slot, request_id) VALUES (?, ?, ?, ?)"
	sqlFreeSlot   = "DELETE FROM user_slots WHERE goods_id = ? AND user_id = ? AND slot = ? AND request_id = ?"
	sqlUserOrders = "SELECT COUNT(*) FROM orders WHERE goods_id = ? AND user_id = ?"
	sqlResetSlots = "DELETE FROM user_slots WHERE goods_id = ?"
	noSlot        = -1
)

// checkUser applies o.Rule in tx before o is inserted. It returns the slot
// taken (noSlot when none), or ErrUserLimit.
func checkUser(ctx context.Context, tx *sql.Tx, o *stock.Order) (int, error) {
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
	return noSlot, fmt.Errorf("user %q has all %d slots of goods %d: %w", o.UserID, r.Limit, o.GoodsID, stock.ErrUserLimit)
}

// countUser is the check of a check-then-insert rule: the user's orders
// of the goods are counted, and ErrUserLimit when they reached the limit.
// Nothing stops a second purchase of the same user from counting the same
// number before either inserts.
func countUser(ctx context.Context, q rowQuerier, o *stock.Order) error {
	var n int
	if err := q.QueryRowContext(ctx, sqlUserOrders, o.GoodsID, o.UserID).Scan(&n); err != nil {
		return fmt.Errorf("count the user's orders: %w", err)
	}
	if n >= o.Rule.Limit {
		return fmt.Errorf("user %q has %d orders of goods %d (limit %d): %w", o.UserID, n, o.GoodsID, o.Rule.Limit, stock.ErrUserLimit)
	}
	return nil
}

// freeUserSlot gives back the slot an order took when its own insert
// failed but the transaction goes on (a batch).
func freeUserSlot(ctx context.Context, tx *sql.Tx, o *stock.Order, slot int) error {
	if slot == noSlot {
		return nil
	}
	if _, err := tx.ExecContext(ctx, sqlFreeSlot, o.GoodsID, o.UserID, slot, o.RequestID); err != nil {
		return fmt.Errorf("free a user slot: %w", err)
	}
	return nil
}
