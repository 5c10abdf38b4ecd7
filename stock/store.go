package stock

import (
	"context"
	"errors"
	"time"
)

// Store is what the Service needs of the database: the reads and writes of
// goods and orders, and one method per way of deducting stock (see
// deduct.go). SQLStore is the one implementation: gorm for the schema and
// the queries off the purchase path, database/sql for the purchase path.
type Store interface {
	// Ping checks the database.
	Ping(ctx context.Context) error
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

	// ReadModifyWrite is the seeds' reductStock, correct only when the
	// caller serialises it (a lock); inside runs within its transaction.
	ReadModifyWrite(ctx context.Context, d Deduction, inside func(context.Context) (release func(), err error)) (Result, error)
	// ReadModifyWriteBatch is ReadModifyWrite for a batch of one goods.
	ReadModifyWriteBatch(ctx context.Context, ds []Deduction, fence uint64, beforeCommit func() error) ([]Result, []error, error)
	// ForUpdate deducts under the row lock (SELECT ... FOR UPDATE).
	ForUpdate(ctx context.Context, d Deduction, lockWait time.Duration) (Result, error)
	// Optimistic deducts with a version compare-and-swap and retries.
	Optimistic(ctx context.Context, d Deduction, maxRetries int, budget time.Duration) (Result, error)
	// Atomic deducts with one conditional UPDATE.
	Atomic(ctx context.Context, d Deduction) (Result, error)
}

var _ Store = (*SQLStore)(nil)

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

func (d Deduction) trace(kind EventKind, v int64) {
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

// errDuplicateRequest is returned when the order's request id already
// exists; the service answers with the original order.
var errDuplicateRequest = errors.New("request already sold")
