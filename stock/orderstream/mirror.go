package orderstream

import (
	"context"
	"fmt"
	"strconv"

	"github.com/redis/go-redis/v9"
)

// MirrorKey is the Redis key holding goods id's stock for redis-atomic.
func MirrorKey(goodsID int64) string { return "seckill:stock:" + strconv.FormatInt(goodsID, 10) }

// Mirror keeps the stock of each goods in Redis for redis-atomic.
type Mirror struct {
	rdb redis.Cmdable
}

// NewMirror uses rdb (the primary Redis).
func NewMirror(rdb redis.Cmdable) *Mirror { return &Mirror{rdb: rdb} }

// Take atomically checks and decrements the mirror by qty, and with limit
// > 0 checks and counts user's order (takeForUserScript).
func (m *Mirror) Take(ctx context.Context, goodsID, qty int64, user string, limit int) (int64, error) {
	n, err := takeForUserScript.Run(ctx, m.rdb, []string{MirrorKey(goodsID), UserLimitKey(goodsID)}, qty, user, limit).Int64()
	if err != nil {
		return 0, fmt.Errorf("redis stock mirror: %w", err)
	}
	return mirrorResult(n, user, limit)
}

// Give puts qty units (and user's count) back (the MySQL half failed).
func (m *Mirror) Give(ctx context.Context, goodsID, qty int64, user string, limit int) error {
	if err := giveForUserScript.Run(ctx, m.rdb, []string{MirrorKey(goodsID), UserLimitKey(goodsID)}, qty, user, limit).Err(); err != nil {
		return fmt.Errorf("redis stock mirror give back: %w", err)
	}
	return nil
}

// Set overwrites the mirror and forgets the goods' per-user counts
// (reset).
func (m *Mirror) Set(ctx context.Context, goodsID, stock int64) error {
	if err := m.rdb.Set(ctx, MirrorKey(goodsID), stock, 0).Err(); err != nil {
		return fmt.Errorf("redis stock mirror set: %w", err)
	}
	if err := m.rdb.Del(ctx, UserLimitKey(goodsID)).Err(); err != nil {
		return fmt.Errorf("redis stock mirror: forget the per-user counts: %w", err)
	}
	return nil
}

// Init sets the mirror only if it is missing (after a Redis restart).
func (m *Mirror) Init(ctx context.Context, goodsID, stock int64) error {
	if err := m.rdb.SetNX(ctx, MirrorKey(goodsID), stock, 0).Err(); err != nil {
		return fmt.Errorf("redis stock mirror init: %w", err)
	}
	return nil
}

// Ping checks the mirror's Redis.
func (m *Mirror) Ping(ctx context.Context) error {
	if err := m.rdb.Ping(ctx).Err(); err != nil {
		return fmt.Errorf("redis: %w", err)
	}
	return nil
}
