package stock

import (
	"context"
	"errors"
	"fmt"
)

// Queue is the order queue of redis-stream (package orderstream): a
// purchase is decided and queued in Redis and answered 202 "accepted"; a
// consumer in each instance writes its order to MySQL later.
type Queue interface {
	// Accept checks that o's request id is new, the stock and the
	// per-user limit, takes the stock and queues o, in one step. It
	// returns the stock left and the order id, or, for a request id
	// accepted before, the earlier order and the stock its sale left, with
	// replayed set; ErrMirrorMissing when Redis lost the stock.
	Accept(ctx context.Context, o Order, limit int) (left, orderID int64, replayed bool, err error)
	// Init sets the stock in Redis when it is missing (after a restart).
	Init(ctx context.Context, goodsID, stock int64) error
	// Reset forgets goods' accepted request ids, counts and lag samples.
	Reset(ctx context.Context, goodsID int64) error
	// Status reads the queue's state for goods.
	Status(ctx context.Context, goodsID int64) (QueueStatus, error)
	// Accepted reports whether goods' request id was accepted.
	Accepted(ctx context.Context, goodsID int64, requestID string) (bool, error)
}

// QueueStatus is the state of the order queue (GET /admin/queue).
type QueueStatus struct {
	GoodsID int64 `json:"goods_id"`
	// Length is the stream's entries, Pending those read by a consumer
	// and not yet acknowledged, Lag those not yet read (all goods).
	Length  int64 `json:"length"`
	Pending int64 `json:"pending"`
	Lag     int64 `json:"lag"`
	// Consumers are the group's consumers (one per instance that ran).
	Consumers int64 `json:"consumers"`
	// Accepted, Written, Duplicates and Rejected count goods' entries:
	// accepted by the script, written to MySQL, delivered again after
	// being written (skipped), and not writable (the MySQL stock did not
	// cover them, or the goods is gone).
	Accepted   int64 `json:"accepted"`
	Written    int64 `json:"written"`
	Duplicates int64 `json:"duplicates"`
	Rejected   int64 `json:"rejected"`
	// Reclaimed counts the entries delivered again to be written: taken
	// over from a consumer that held them for ClaimIdle (a killed
	// instance's), or read again by their own consumer after it restarted.
	Reclaimed int64 `json:"reclaimed"`
	// Batches counts the batches of entries the consumers wrote that held
	// goods' entries: one MySQL transaction each, unless the stock did not
	// cover a batch and it was written entry by entry.
	Batches int64 `json:"batches"`
	// LagUS are the order lags of goods' written orders, from accept to
	// COMMIT, in microseconds, in the order they were written.
	LagUS []int64 `json:"lag_us"`
}

// Drained reports whether every entry was read and acknowledged.
func (s QueueStatus) Drained() bool { return s.Pending == 0 && s.Lag == 0 }

// redisStream is the purchase of redis-stream: accept in Redis, answer.
func (s *Service) redisStream(ctx context.Context, d Deduction) (Result, error) {
	q := s.opts.Stream
	if q == nil {
		return Result{}, fmt.Errorf("redis-stream: no Redis configured: %w", ErrBackendUnavailable)
	}
	o, limit := d.Order, d.Order.Rule.Limit
	o.Rule = UserRule{}
	left, id, replayed, err := q.Accept(ctx, o, limit)
	if errors.Is(err, ErrMirrorMissing) {
		// Redis lost the stock (restart): seed it once from MySQL.
		g, gerr := s.goods(ctx, o.GoodsID)
		if gerr != nil {
			return Result{}, gerr
		}
		if err = q.Init(ctx, g.ID, g.Stock); err == nil {
			left, id, replayed, err = q.Accept(ctx, o, limit)
		}
	}
	if err != nil {
		return Result{}, err
	}
	o.ID = id
	return Result{Order: o, Remaining: left, Accepted: true, Replayed: replayed}, nil
}

// QueueStatus is the order queue's state for goods (redis-stream).
func (s *Service) QueueStatus(ctx context.Context, goodsID int64) (QueueStatus, error) {
	if s.opts.Stream == nil {
		return QueueStatus{}, fmt.Errorf("redis-stream: no Redis configured: %w", ErrBackendUnavailable)
	}
	st, err := s.opts.Stream.Status(ctx, goodsID)
	return st, s.classify(ctx, err)
}

// OrderStatus says whether the order of requestID is written to MySQL
// ("written"), accepted and still queued ("accepted", redis-stream; needs
// goodsID), or unknown.
func (s *Service) OrderStatus(ctx context.Context, goodsID int64, requestID string) (string, Order, error) {
	o, ok, err := s.orderByRequest(ctx, goodsID, requestID)
	if err != nil {
		return "", o, s.classify(ctx, err)
	}
	if ok {
		return orderWritten, o, nil
	}
	if s.opts.Stream != nil && goodsID > 0 {
		acc, err := s.opts.Stream.Accepted(ctx, goodsID, requestID)
		if err != nil {
			return "", o, s.classify(ctx, err)
		}
		if acc {
			return orderAccepted, o, nil
		}
	}
	return orderUnknown, o, nil
}

// Order statuses (OrderStatus).
const (
	orderWritten  = "written"
	orderAccepted = "accepted"
	orderUnknown  = "unknown"
)
