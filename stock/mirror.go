package stock

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// Mirror is the Redis stock mirror used by redis-atomic (package
// orderstream).
type Mirror interface {
	// Take checks and takes qty units and, with limit > 0, one of user's
	// limit orders (ErrUserLimit when they are all taken), in one step.
	Take(ctx context.Context, goodsID, qty int64, user string, limit int) (remaining int64, err error)
	// Give undoes a Take whose MySQL half failed.
	Give(ctx context.Context, goodsID, qty int64, user string, limit int) error
	Set(ctx context.Context, goodsID, stock int64) error
	Init(ctx context.Context, goodsID, stock int64) error
}

// ErrMirrorMissing is a Mirror's or a Queue's answer when Redis lost the
// goods' stock (a restart): the Service seeds it from the database (Init)
// and tries once more.
var ErrMirrorMissing = errors.New("stock mirror missing")

// redisAtomic is the purchase of redis-atomic: take the stock in Redis,
// then write the order with the database's conditional UPDATE; a failed
// write gives the unit back.
func (s *Service) redisAtomic(ctx context.Context, d Deduction) (Result, error) {
	m := s.opts.Mirror
	if m == nil {
		return Result{}, fmt.Errorf("redis-atomic: no Redis configured: %w", ErrBackendUnavailable)
	}
	o, limit := d.Order, d.Order.Rule.Limit
	d.Order.Rule = UserRule{} // checked in Redis: the MySQL half takes no slot
	_, err := m.Take(ctx, o.GoodsID, o.Qty, o.UserID, limit)
	if errors.Is(err, ErrMirrorMissing) {
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
