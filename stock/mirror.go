package stock

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
)

// Mirror is the Redis stock mirror used by redis-atomic.
type Mirror interface {
	Take(ctx context.Context, goodsID, qty int64) (remaining int64, err error)
	Give(ctx context.Context, goodsID, qty int64) error
	Set(ctx context.Context, goodsID, stock int64) error
	Init(ctx context.Context, goodsID, stock int64) error
}

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

func (s *Service) redisAtomic(ctx context.Context, d Deduction) (Result, error) {
	m := s.opts.Mirror
	if m == nil {
		return Result{}, fmt.Errorf("redis-atomic: no Redis configured: %w", ErrBackendUnavailable)
	}
	_, err := m.Take(ctx, d.Order.GoodsID, d.Order.Qty)
	if errors.Is(err, errMirrorMissing) {
		// Redis lost the mirror (restart): seed it once from MySQL.
		g, gerr := s.opts.Store.Goods(ctx, d.Order.GoodsID)
		if gerr != nil {
			return Result{}, gerr
		}
		if err = m.Init(ctx, g.ID, g.Stock); err == nil {
			_, err = m.Take(ctx, d.Order.GoodsID, d.Order.Qty)
		}
	}
	if err != nil {
		return Result{}, err
	}
	res, err := s.opts.Store.Atomic(ctx, d)
	if err != nil {
		// No unit is lost: the MySQL half failed, so the unit goes back.
		gctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 3*time.Second)
		defer cancel()
		if gerr := m.Give(gctx, d.Order.GoodsID, d.Order.Qty); gerr != nil {
			return res, fmt.Errorf("%w (and the unit could not be returned to Redis: %v)", err, gerr)
		}
	}
	return res, err
}
