package orderstream

import (
	"fmt"
	"strconv"

	"github.com/redis/go-redis/v9"

	"github.com/seckill-lab/seckill/stock"
)

// buyersKeyPrefix starts the keys of UserLimitKey.
const buyersKeyPrefix = "seckill:buyers:"

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
		return 0, stock.ErrSoldOut
	case -2:
		return 0, stock.ErrMirrorMissing
	case -3:
		return 0, fmt.Errorf("user %q is at the limit of %d orders: %w", userID, limit, stock.ErrUserLimit)
	}
	return n, nil
}
