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
	// Take checks and takes qty units and, with limit > 0, one of user's
	// limit orders (ErrUserLimit when they are all taken), in one step.
	Take(ctx context.Context, goodsID, qty int64, user string, limit int) (remaining int64, err error)
	// Give undoes a Take whose MySQL half failed.
	Give(ctx context.Context, goodsID, qty int64, user string, limit int) error
	Set(ctx context.Context, goodsID, stock int64) error
	Init(ctx context.Context, goodsID, stock int64) error
}

// MirrorKey is the Redis key holding goods id's stock for redis-atomic.
func MirrorKey(goodsID int64) string { return "seckill:stock:" + strconv.FormatInt(goodsID, 10) }

// RedisMirror keeps the stock of each goods in Redis for redis-atomic.
type RedisMirror struct {
	rdb redis.Cmdable
}

// NewRedisMirror uses rdb (the primary Redis).
func NewRedisMirror(rdb redis.Cmdable) *RedisMirror { return &RedisMirror{rdb: rdb} }

var errMirrorMissing = errors.New("stock mirror missing")

// Take atomically checks and decrements the mirror by qty, and with limit
// > 0 checks and counts user's order (takeForUserScript).
func (m *RedisMirror) Take(ctx context.Context, goodsID, qty int64, user string, limit int) (int64, error) {
	n, err := takeForUserScript.Run(ctx, m.rdb, []string{MirrorKey(goodsID), UserLimitKey(goodsID)}, qty, user, limit).Int64()
	if err != nil {
		return 0, fmt.Errorf("redis stock mirror: %w", err)
	}
	return mirrorResult(n, user, limit)
}

// Give puts qty units (and user's count) back (the MySQL half failed).
func (m *RedisMirror) Give(ctx context.Context, goodsID, qty int64, user string, limit int) error {
	if err := giveForUserScript.Run(ctx, m.rdb, []string{MirrorKey(goodsID), UserLimitKey(goodsID)}, qty, user, limit).Err(); err != nil {
		return fmt.Errorf("redis stock mirror give back: %w", err)
	}
	return nil
}

// Set overwrites the mirror and forgets the goods' per-user counts
// (reset).
func (m *RedisMirror) Set(ctx context.Context, goodsID, stock int64) error {
	if err := m.rdb.Set(ctx, MirrorKey(goodsID), stock, 0).Err(); err != nil {
		return fmt.Errorf("redis stock mirror set: %w", err)
	}
	if err := m.rdb.Del(ctx, UserLimitKey(goodsID)).Err(); err != nil {
		return fmt.Errorf("redis stock mirror: forget the per-user counts: %w", err)
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
	o, limit := d.Order, d.Order.Rule.Limit
	d.Order.Rule = UserRule{} // checked in Redis: the MySQL half takes no slot
	_, err := m.Take(ctx, o.GoodsID, o.Qty, o.UserID, limit)
	if errors.Is(err, errMirrorMissing) {
		// Redis lost the mirror (restart): seed it once from MySQL.
		g, gerr := s.goods(ctx, d.Order.GoodsID)
		if gerr != nil {
			return Result{}, gerr
		}
		if err = m.Init(ctx, g.ID, g.Stock); err == nil {
			_, err = m.Take(ctx, o.GoodsID, o.Qty, o.UserID, limit)
		}
	}
	if err != nil {
		return Result{}, err
	}
	db, err := s.database(d.Order.GoodsID)
	var res Result
	if err == nil {
		res, err = db.Atomic(ctx, d)
	}
	if err != nil {
		// No unit is lost: the MySQL half failed, so the unit goes back.
		gctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 3*time.Second)
		defer cancel()
		if gerr := m.Give(gctx, o.GoodsID, o.Qty, o.UserID, limit); gerr != nil {
			return res, fmt.Errorf("%w (and the unit could not be returned to Redis: %v)", err, gerr)
		}
	}
	return res, err
}
