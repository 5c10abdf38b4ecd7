package stock

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/redis/go-redis/v9"
)

// MirrorKey is the Redis key holding goods id's stock for redis-atomic.
func MirrorKey(goodsID int64) string { return "seckill:stock:" + strconv.FormatInt(goodsID, 10) }

// takeScript checks and decrements the mirrored stock in one step.
// Returns the remaining stock, -1 when it does not cover qty, -2 when the
// mirror is missing.
var takeScript = redis.NewScript(`
local s = redis.call('GET', KEYS[1])
if not s then return -2 end
local q = tonumber(ARGV[1])
if tonumber(s) < q then return -1 end
return redis.call('DECRBY', KEYS[1], q)
`)

// RedisMirror keeps the stock of each goods in Redis for redis-atomic.
type RedisMirror struct {
	rdb redis.Cmdable
}

// NewRedisMirror uses rdb (the primary Redis).
func NewRedisMirror(rdb redis.Cmdable) *RedisMirror { return &RedisMirror{rdb: rdb} }

var errMirrorMissing = errors.New("stock mirror missing")

// Take atomically checks and decrements the mirror by qty.
func (m *RedisMirror) Take(ctx context.Context, goodsID, qty int64) (int64, error) {
	n, err := takeScript.Run(ctx, m.rdb, []string{MirrorKey(goodsID)}, qty).Int64()
	if err != nil {
		return 0, fmt.Errorf("redis stock mirror: %w", err)
	}
	switch n {
	case -1:
		return 0, ErrSoldOut
	case -2:
		return 0, errMirrorMissing
	}
	return n, nil
}

// Give puts qty units back (the MySQL half failed).
func (m *RedisMirror) Give(ctx context.Context, goodsID, qty int64) error {
	if err := m.rdb.IncrBy(ctx, MirrorKey(goodsID), qty).Err(); err != nil {
		return fmt.Errorf("redis stock mirror give back: %w", err)
	}
	return nil
}

// Set overwrites the mirror (reset).
func (m *RedisMirror) Set(ctx context.Context, goodsID, stock int64) error {
	if err := m.rdb.Set(ctx, MirrorKey(goodsID), stock, 0).Err(); err != nil {
		return fmt.Errorf("redis stock mirror set: %w", err)
	}
	return nil
}

// Init sets the mirror only if it is missing (after a Redis restart).
func (m *RedisMirror) Init(ctx context.Context, goodsID, stock int64) error {
	if err := m.rdb.SetNX(ctx, MirrorKey(goodsID), stock, 0).Err(); err != nil {
		return fmt.Errorf("redis stock mirror init: %w", err)
	}
	return nil
}

// Ping checks the mirror's Redis.
func (m *RedisMirror) Ping(ctx context.Context) error {
	if err := m.rdb.Ping(ctx).Err(); err != nil {
		return fmt.Errorf("redis: %w", err)
	}
	return nil
}
