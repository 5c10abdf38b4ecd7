package stock

import (
	"context"
	"errors"
	"time"
)

// Store keeps goods and their orders: what the Service needs of every
// goods, and the read-modify-write that the lock strategies protect (see
// ReadModifyWrite). The database (Database) keeps the goods with a row;
// the lock-alone counter (ServiceOptions.Counter) the lock-alone goods.
type Store interface {
	// Goods returns one goods row (ErrGoodsNotFound when there is none).
	Goods(ctx context.Context, id int64) (Goods, error)
	// Reset sets a goods' stock (creating it if needed) and deletes its
	// orders.
	Reset(ctx context.Context, id, stock int64) error
	// Audit summarises a goods: stock, orders, sold quantity per instance.
	Audit(ctx context.Context, id int64) (Audit, error)
	// RequestIDs returns the request ids of a goods' orders.
	RequestIDs(ctx context.Context, id int64) ([]string, error)
	// OrderByRequest returns the order of a request id, if any.
	OrderByRequest(ctx context.Context, requestID string) (Order, bool, error)
	// ReadModifyWrite is Chapter 1's reductStock, correct only when the
	// caller serialises it (a lock); inside runs within its transaction.
	ReadModifyWrite(ctx context.Context, d Deduction, inside func(context.Context) (release func(), err error)) (Result, error)
}

// Database is the Store of the goods with a database row (package
// sqlstore): it also deducts in the database itself, which a lock-alone
// goods, with no row, does not offer (ErrLockAloneOnly).
type Database interface {
	Store
	// ReadModifyWriteBatch is ReadModifyWrite for a batch of one goods.
	ReadModifyWriteBatch(ctx context.Context, ds []Deduction, fence uint64, beforeCommit func() error) ([]Result, []error, error)
	// ForUpdate deducts under the row lock (SELECT ... FOR UPDATE).
	ForUpdate(ctx context.Context, d Deduction, lockWait time.Duration) (Result, error)
	// Optimistic deducts with a version compare-and-swap and retries.
	Optimistic(ctx context.Context, d Deduction, maxRetries int, budget time.Duration) (Result, error)
	// Atomic deducts with one conditional UPDATE.
	Atomic(ctx context.Context, d Deduction) (Result, error)
}

// store returns the Store of goods id: the lock-alone counter for a
// lock-alone goods (errNoCounter when the instance has none), the database
// otherwise.
func (s *Service) store(id int64) (Store, error) {
	switch {
	case !LockAlone(id):
		return s.opts.Store, nil
	case s.opts.Counter == nil:
		return nil, errNoCounter
	}
	return s.opts.Counter, nil
}

// database returns the Database that deducts goods id in the database
// itself: ErrLockAloneOnly for a lock-alone goods (errNoCounter when the
// instance has no counter).
func (s *Service) database(id int64) (Database, error) {
	if _, err := s.store(id); err != nil {
		return nil, err
	}
	if LockAlone(id) {
		return nil, ErrLockAloneOnly
	}
	return s.opts.Store, nil
}

// goods reads goods id at its Store.
func (s *Service) goods(ctx context.Context, id int64) (Goods, error) {
	st, err := s.store(id)
	if err != nil {
		return Goods{}, err
	}
	return st.Goods(ctx, id)
}

// orderByRequest looks requestID's order up: for a lock-alone goods in
// the lock-alone counter alone (its orders are recorded nowhere else, so a
// sold-out answer in `bench --mode lock` costs no round trip to the
// database); for any other goods, or goodsID 0 (not known), in the
// database, then in the counter.
func (s *Service) orderByRequest(ctx context.Context, goodsID int64, requestID string) (Order, bool, error) {
	if LockAlone(goodsID) {
		st, err := s.store(goodsID)
		if err != nil {
			return Order{}, false, err
		}
		return st.OrderByRequest(ctx, requestID)
	}
	o, ok, err := s.opts.Store.OrderByRequest(ctx, requestID)
	if err != nil || ok || s.opts.Counter == nil {
		return o, ok, err
	}
	return s.opts.Counter.OrderByRequest(ctx, requestID)
}

// readModifyWrite runs d's read-modify-write at the Store of its goods.
func (s *Service) readModifyWrite(ctx context.Context, d Deduction, inside func(context.Context) (func(), error)) (Result, error) {
	st, err := s.store(d.Order.GoodsID)
	if err != nil {
		return Result{}, err
	}
	return st.ReadModifyWrite(ctx, d, inside)
}

// Deduction is one unit of work: the order to insert and the knobs of the
// critical section.
type Deduction struct {
	Order     Order
	WorkDelay time.Duration
	// Fence, when non-zero, is the lock's token: the holder claims the row
	// with it before reading and writes only while the claim stands (see
	// ReadModifyWrite).
	Fence uint64
	// BeforeCommit, when set, runs after the order insert and right before
	// COMMIT; an error rolls the whole deduction back (the lease check).
	BeforeCommit func() error
	// Trace, when set, is told the stock read (EventRead) and the stock
	// written (EventWritten), for the lock event stream.
	Trace func(kind EventKind, value int64)
}

// Note tells d.Trace, when set, the stock read or written.
func (d Deduction) Note(kind EventKind, v int64) {
	if d.Trace != nil {
		d.Trace(kind, v)
	}
}

// Result is a committed deduction.
type Result struct {
	Order     Order
	Remaining int64
	// Accepted: the purchase is decided and its order queued, not yet
	// written (redis-stream); Replayed: the request id was accepted
	// before and this is that order.
	Accepted, Replayed bool
}

// ErrDuplicateRequest is returned when the order's request id already
// exists; the service answers with the original order.
var ErrDuplicateRequest = errors.New("request already sold")
