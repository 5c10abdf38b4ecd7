package stock

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"
	"github.com/seckill-lab/seckill/lockimpl"
	"github.com/seckill-lab/seckill/stock/catalog"
	"github.com/seckill-lab/seckill/stock/phase"
)

// locker is what the service needs of a lock.
type locker interface {
	Lock(ctx context.Context, key string) (*lockimpl.Lease, error)
}

// Observer receives the service's timings; the HTTP layer turns them into
// Prometheus metrics. A nil Observer is allowed.
type Observer interface {
	LockWait(strategy string, d time.Duration)
	LockHold(strategy string, d time.Duration)
	// Error counts an error by kind: "unlock", "backend", and the
	// clean-up operations of lockimpl.Options.OnCleanupError (a lease
	// revoke, a node delete, ...).
	Error(kind string)
	// Count counts a lock backend's notable occurrence (lockimpl.Options.
	// Count: Redlock's rounds) under strategy.
	Count(strategy, name string)
	// WatchEvent counts one watch event a waiter for strategy's lock
	// received (lockimpl.Options.OnWatchEvent): per acquisition, 1 for a
	// recipe that watches its predecessor, about N/2 with N waiters for
	// the herd variant that watches the parent.
	WatchEvent(strategy string)
}

// ServiceOptions configure a Service. Zero values take the defaults given.
type ServiceOptions struct {
	// Instance is this instance's name, stored on every order.
	Instance string
	// Store is the database, required.
	Store Database
	// Counter keeps the lock-alone goods (LockAlone: ids from
	// CounterGoodsBase); nil means they answer backend_unavailable.
	Counter Store
	// Backends are the lock backends by strategy name (package lockwire
	// opens them); a locker strategy without one is unavailable.
	// Reset clears a goods' lock state at every one of them. The caller
	// closes them after the service.
	Backends map[string]LockBackend
	// Mirror is required for redis-atomic.
	Mirror Mirror
	// Stream is required for redis-stream (stream.go).
	Stream Queue
	// Observer receives timings; nil means none.
	Observer Observer
	// Events receives the lock events of every purchase (see Event); nil
	// means none are recorded.
	Events *Events
	// MaxQty bounds qty per purchase. Default 100.
	MaxQty int64
	// OptimisticRetries bounds mysql-optimistic's retries. Default 100.
	OptimisticRetries int
	// Initial is the starting strategy. Default: none with default knobs.
	Initial Config
}

// Service runs purchases under the instance's current strategy. It is safe
// for concurrent use; the strategy can be switched at any time.
type Service struct {
	opts ServiceOptions
	cur  atomic.Pointer[active]

	mu      sync.Mutex // guards lockers and closed; no I/O under it
	lockers map[lockerKey]*sharedLocker
	closed  bool
	// bg tracks the service's background work (releases, closing a
	// replaced setting's locker): Close waits for it.
	bg sync.WaitGroup

	queue   keyQueue // unless Config.NoLocalQueue: one contender per key
	batches batcher  // Config.Batch: the queues of purchases per key
}

// NewService validates opts and returns a Service.
func NewService(opts ServiceOptions) (*Service, error) {
	if opts.Store == nil {
		return nil, errors.New("stock: ServiceOptions.Store is required")
	}
	if opts.MaxQty <= 0 {
		opts.MaxQty = 100
	}
	if opts.OptimisticRetries <= 0 {
		opts.OptimisticRetries = 100
	}
	if opts.Initial.Name == "" {
		opts.Initial = Config{Name: catalog.None}
	}
	s := &Service{opts: opts, lockers: map[lockerKey]*sharedLocker{}}
	if err := s.SetConfig(context.Background(), opts.Initial); err != nil {
		return nil, fmt.Errorf("initial strategy: %w", err)
	}
	return s, nil
}

// Instance is the instance name.
func (s *Service) Instance() string { return s.opts.Instance }

// LockKey is the lock name guarding goods id.
func LockKey(goodsID int64) string { return "goods:" + strconv.FormatInt(goodsID, 10) }

// PurchaseRequest is one purchase.
type PurchaseRequest struct {
	GoodsID int64
	Qty     int64
	UserID  string
	// RequestID is the idempotency key; empty means a fresh one.
	RequestID string
}

// Receipt is an accepted purchase.
type Receipt struct {
	OrderID   int64  `json:"order_id"`
	GoodsID   int64  `json:"goods_id"`
	Qty       int64  `json:"qty"`
	Remaining int64  `json:"remaining"`
	Instance  string `json:"instance"`
	Strategy  string `json:"strategy"`
	RequestID string `json:"request_id"`
	Fence     uint64 `json:"fence"`
	// Replayed is true when the request id was already sold and this is
	// the original order. Remaining is then the stock that sale left for
	// redis-stream (its queue keeps it), and the stock now for the
	// strategies that write the order at once (the orders table does not
	// keep it): clients must not read it as this sale's remaining.
	Replayed bool `json:"replayed,omitempty"`
	// Accepted is true when the purchase is decided and its order queued,
	// to be written later (redis-stream; the API answers 202).
	Accepted bool `json:"accepted,omitempty"`
}

// Validate checks the request's fields against the service's limits.
func (s *Service) Validate(r PurchaseRequest) error {
	switch {
	case r.GoodsID <= 0:
		return fmt.Errorf("%w: goods_id must be a positive integer", ErrInvalid)
	case r.Qty <= 0 || r.Qty > s.opts.MaxQty:
		return fmt.Errorf("%w: qty must be between 1 and %d", ErrInvalid, s.opts.MaxQty)
	case !utf8.ValidString(r.UserID) || !utf8.ValidString(r.RequestID):
		return fmt.Errorf("%w: user_id and Idempotency-Key must be valid UTF-8", ErrInvalid)
	case r.UserID == "" || utf8.RuneCountInString(r.UserID) > 64:
		return fmt.Errorf("%w: user_id must be 1 to 64 characters", ErrInvalid)
	case utf8.RuneCountInString(r.RequestID) > 128:
		return fmt.Errorf("%w: Idempotency-Key must be at most 128 characters", ErrInvalid)
	}
	return nil
}

// Purchase sells r.Qty units under the current strategy. The order row is
// committed before it returns a Receipt. Failures wrap ErrSoldOut,
// ErrUserLimit, ErrStaleLock, ErrLeaseLost, ErrLockTimeout, ErrGoodsNotFound,
// ErrInvalid, ErrIdempotencyKeyReused or ErrBackendUnavailable.
//
// It reads as the purchase runs: validate, idempotency, protect and
// deduct, record.
func (s *Service) Purchase(ctx context.Context, r PurchaseRequest) (Receipt, error) {
	// 1. Validate: a bad request changes nothing.
	if err := s.Validate(r); err != nil {
		return Receipt{}, err
	}
	// 2. Idempotency: the orders table's UNIQUE request id decides, so a
	// purchase costs no lookup. A request without a key gets a fresh one.
	keyed := r.RequestID != ""
	if !keyed {
		r.RequestID = uuid.NewString()
	}
	// 3 and 4. Protect and deduct, under the setting current now.
	res, err := s.deduct(ctx, r)
	// 5. Record: the order is committed; its row is the receipt.
	if err == nil {
		o := res.Order
		return Receipt{OrderID: o.ID, GoodsID: o.GoodsID, Qty: o.Qty, Remaining: res.Remaining, Instance: o.Instance,
			Strategy: o.Strategy, RequestID: o.RequestID, Fence: o.FenceToken, Accepted: res.Accepted, Replayed: res.Replayed}, nil
	}
	// A key that was already sold is found when the insert hits the
	// unique key (the deduction rolled back with it), or, when the
	// purchase failed for another reason (the goods sold out since), by
	// one lookup on this failure path. A found order is replayed when the
	// request is the same (goods, qty, user), and refused with
	// ErrIdempotencyKeyReused when it is not.
	if errors.Is(err, ErrDuplicateRequest) || keyed && ctx.Err() == nil {
		rc, ok, rerr := s.replay(ctx, r)
		switch {
		case rerr != nil:
			return rc, s.classify(ctx, rerr)
		case ok:
			return rc, nil
		case errors.Is(err, ErrDuplicateRequest):
			err = fmt.Errorf("request %q reported sold but not found", r.RequestID)
		}
	}
	return Receipt{}, s.classify(ctx, err)
}

// deduct runs r's deduction under the current setting: the strategy's own
// deduction (ownDeduction) or, for the others, the read-modify-write
// unprotected or under the lab's lock (protected, protect.go).
func (s *Service) deduct(ctx context.Context, r PurchaseRequest) (Result, error) {
	a := s.use()
	defer a.unuse(s)
	d := Deduction{
		Order:     Order{GoodsID: r.GoodsID, Qty: r.Qty, UserID: r.UserID, RequestID: r.RequestID, Instance: s.opts.Instance, Strategy: a.cfg.Name},
		WorkDelay: a.cfg.WorkDelay,
	}
	d.Order.Rule = UserRule{Limit: a.cfg.PerUserLimit, CheckThenInsert: a.info.Flawed}
	// What the deduction sends is the held phase's, but for the lock's
	// own acquire and release (which mark theirs).
	ctx = phase.With(ctx, phase.Held)
	if own := ownDeduction[a.cfg.Name]; own != nil {
		return own(s, ctx, a.cfg, d)
	}
	return s.protected(ctx, a, d)
}

// ownDeduction are the deductions of the strategies that bring their own
// protection (KindStore, KindLockFree): the database's row lock or
// compare-and-swap, or one atomic step. Every other strategy runs the
// read-modify-write, unprotected or under a lock.
var ownDeduction = map[string]func(s *Service, ctx context.Context, cfg Config, d Deduction) (Result, error){
	catalog.MySQLForUpdate: func(s *Service, ctx context.Context, cfg Config, d Deduction) (Result, error) {
		db, err := s.database(d.Order.GoodsID)
		if err != nil {
			return Result{}, err
		}
		return db.ForUpdate(ctx, d, cfg.LockWait)
	},
	catalog.MySQLOptimistic: func(s *Service, ctx context.Context, cfg Config, d Deduction) (Result, error) {
		if !cfg.NoLocalQueue {
			return s.optimisticQueued(ctx, d, cfg.LockWait)
		}
		db, err := s.database(d.Order.GoodsID)
		if err != nil {
			return Result{}, err
		}
		return db.Optimistic(ctx, d, s.opts.OptimisticRetries, cfg.LockWait)
	},
	catalog.SQLAtomic: func(s *Service, ctx context.Context, _ Config, d Deduction) (Result, error) {
		db, err := s.database(d.Order.GoodsID)
		if err != nil {
			return Result{}, err
		}
		return db.Atomic(ctx, d)
	},
	catalog.RedisAtomic: func(s *Service, ctx context.Context, _ Config, d Deduction) (Result, error) {
		return s.redisAtomic(ctx, d)
	},
	catalog.RedisStream: func(s *Service, ctx context.Context, _ Config, d Deduction) (Result, error) {
		return s.redisStream(ctx, d)
	},
}

// replay answers a request whose key was already sold with the original
// order; ok is false when the key was never sold. A request that differs
// from the original (goods, qty or user) gets ErrIdempotencyKeyReused.
func (s *Service) replay(ctx context.Context, r PurchaseRequest) (Receipt, bool, error) {
	o, ok, err := s.orderByRequest(ctx, r.GoodsID, r.RequestID)
	if err != nil || !ok {
		return Receipt{}, false, err
	}
	if o.GoodsID != r.GoodsID || o.Qty != r.Qty || o.UserID != r.UserID {
		return Receipt{}, false, fmt.Errorf("%w: Idempotency-Key %q was used for another purchase (goods %d, qty %d, another user or the same)",
			ErrIdempotencyKeyReused, r.RequestID, o.GoodsID, o.Qty)
	}
	g, err := s.goods(ctx, o.GoodsID)
	if err != nil {
		return Receipt{}, false, err
	}
	return Receipt{OrderID: o.ID, GoodsID: o.GoodsID, Qty: o.Qty, Remaining: g.Stock, Instance: o.Instance,
		Strategy: o.Strategy, RequestID: o.RequestID, Fence: o.FenceToken, Replayed: true}, true, nil
}

// classify maps an error to the service's outcomes (errors.go): one of
// the service's errors as it is, a context's end as the context's error,
// anything else as ErrBackendUnavailable.
func (s *Service) classify(ctx context.Context, err error) error {
	if err == nil {
		return nil
	}
	if _, known := knownOutcome(err); known {
		return err
	}
	if ctx.Err() != nil {
		return ctx.Err()
	}
	if s.opts.Observer != nil {
		s.opts.Observer.Error("backend")
	}
	return fmt.Errorf("%w: %w", ErrBackendUnavailable, err)
}
