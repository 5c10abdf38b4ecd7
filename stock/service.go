package stock

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"

	"github.com/seckill-lab/seckill/lockimpl"
)

// Locker is what the service needs of a lock backend.
type Locker interface {
	Lock(ctx context.Context, key string) (*lockimpl.Lease, error)
}

// Pinger is implemented by lockers that can tell whether their backend
// answers. When a lock wait runs out, the service pings: a backend that
// does not answer is reported as ErrBackendUnavailable, not ErrLockTimeout.
type Pinger interface {
	Ping(ctx context.Context) error
}

// LockerFactory returns the Locker for a strategy name with the lock
// options of the current setting (TTL, NoRenew). The service caches what it
// returns, per name and options.
type LockerFactory func(name string, opts lockimpl.Options) (Locker, error)

// Observer receives the service's timings; the HTTP layer turns them into
// Prometheus metrics. A nil Observer is allowed.
type Observer interface {
	LockWait(strategy string, d time.Duration)
	LockHold(strategy string, d time.Duration)
	Error(kind string)
}

// Mirror is the Redis stock mirror used by redis-atomic.
type Mirror interface {
	Take(ctx context.Context, goodsID, qty int64) (remaining int64, err error)
	Give(ctx context.Context, goodsID, qty int64) error
	Set(ctx context.Context, goodsID, stock int64) error
	Init(ctx context.Context, goodsID, stock int64) error
}

// ServiceOptions configure a Service. Zero values take the defaults given.
type ServiceOptions struct {
	// Instance is this instance's name, stored on every order.
	Instance string
	// Store is required.
	Store *Store
	// Lockers builds lock backends; required for locker strategies.
	Lockers LockerFactory
	// Mirror is required for redis-atomic.
	Mirror Mirror
	// ClearLocks, when set, is called by Reset to drop a goods' lock state
	// (lock keys, fencing counters, lock rows) at the backends.
	ClearLocks func(ctx context.Context, key string) error
	// Observer receives timings; nil means none.
	Observer Observer
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

	mu      sync.Mutex
	lockers map[string]Locker
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
		opts.Initial = DefaultConfig(None)
	}
	s := &Service{opts: opts, lockers: map[string]Locker{}}
	if err := s.SetConfig(opts.Initial); err != nil {
		return nil, fmt.Errorf("initial strategy: %w", err)
	}
	return s, nil
}

// Instance is the instance name.
func (s *Service) Instance() string { return s.opts.Instance }

// MaxQty is the largest qty accepted per purchase.
func (s *Service) MaxQty() int64 { return s.opts.MaxQty }

// active is the current setting with the Locker it runs under (nil for
// strategies without one), switched as one value so a purchase never sees
// a setting with another setting's lock.
type active struct {
	cfg    Config
	locker Locker
}

// Config returns the current strategy setting.
func (s *Service) Config() Config { return s.cur.Load().cfg }

// SetConfig validates c and switches to it. The lock backend is built (or
// taken from the cache) first, so a backend that is not configured is an
// error and the old setting stays.
func (s *Service) SetConfig(c Config) error {
	if err := c.Validate(); err != nil {
		return err
	}
	a := &active{cfg: c}
	if name := lockerName(c.Name); name != "" {
		l, err := s.locker(name, c.lockOptions())
		if err != nil {
			return err
		}
		a.locker = l
	}
	if c.Name == RedisAtomic && s.opts.Mirror == nil {
		return fmt.Errorf("strategy %s needs Redis: %w", c.Name, ErrBackendUnavailable)
	}
	s.cur.Store(a)
	return nil
}

// lockerName is the Locker backend strategy name runs under ("" for none).
func lockerName(name string) string {
	info, _ := Lookup(name)
	switch {
	case info.Kind == KindLocker:
		return name
	case name == MutexTx:
		return Mutex
	}
	return ""
}

// lockOptions are the lockimpl options of setting c.
func (c Config) lockOptions() lockimpl.Options {
	return lockimpl.Options{TTL: c.LockTTL, NoRenew: !c.Watchdog}
}

func (s *Service) locker(name string, opts lockimpl.Options) (Locker, error) {
	key := fmt.Sprintf("%s|%s|%t", name, opts.TTL, opts.NoRenew)
	s.mu.Lock()
	defer s.mu.Unlock()
	if l, ok := s.lockers[key]; ok {
		return l, nil
	}
	if s.opts.Lockers == nil {
		return nil, fmt.Errorf("strategy %s: no lock backends configured", name)
	}
	l, err := s.opts.Lockers(name, opts)
	if err != nil {
		return nil, fmt.Errorf("strategy %s: %w", name, err)
	}
	s.lockers[key] = l
	return l, nil
}

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
	// the original outcome.
	Replayed bool `json:"replayed,omitempty"`
}

// Validate checks the request's fields against the service's limits.
func (s *Service) Validate(r PurchaseRequest) error {
	switch {
	case r.GoodsID <= 0:
		return fmt.Errorf("%w: goods_id must be a positive integer", ErrInvalid)
	case r.Qty <= 0 || r.Qty > s.opts.MaxQty:
		return fmt.Errorf("%w: qty must be between 1 and %d", ErrInvalid, s.opts.MaxQty)
	case r.UserID == "" || len(r.UserID) > 64:
		return fmt.Errorf("%w: user_id must be 1 to 64 characters", ErrInvalid)
	case len(r.RequestID) > 128:
		return fmt.Errorf("%w: Idempotency-Key must be at most 128 characters", ErrInvalid)
	}
	return nil
}

// Purchase sells r.Qty units under the current strategy. The order row is
// committed before it returns a Receipt. Failures wrap ErrSoldOut,
// ErrStaleLock, ErrLockTimeout, ErrGoodsNotFound, ErrInvalid or
// ErrBackendUnavailable.
func (s *Service) Purchase(ctx context.Context, r PurchaseRequest) (Receipt, error) {
	if err := s.Validate(r); err != nil {
		return Receipt{}, err
	}
	a := s.cur.Load()
	cfg := a.cfg
	if r.RequestID != "" {
		if rc, ok, err := s.replay(ctx, r.RequestID); err != nil || ok {
			return rc, s.classify(ctx, err)
		}
	} else {
		r.RequestID = uuid.NewString()
	}
	d := Deduction{
		Order:     Order{GoodsID: r.GoodsID, Qty: r.Qty, UserID: r.UserID, RequestID: r.RequestID, Instance: s.opts.Instance, Strategy: cfg.Name},
		WorkDelay: cfg.WorkDelay,
	}
	res, err := s.run(ctx, a, d)
	if errors.Is(err, errDuplicateRequest) {
		// A concurrent retry of the same key won; answer with its order.
		rc, ok, rerr := s.replay(ctx, r.RequestID)
		if rerr == nil && !ok {
			rerr = fmt.Errorf("request %q reported sold but not found", r.RequestID)
		}
		return rc, s.classify(ctx, rerr)
	}
	if err != nil {
		return Receipt{}, s.classify(ctx, err)
	}
	o := res.Order
	return Receipt{OrderID: o.ID, GoodsID: o.GoodsID, Qty: o.Qty, Remaining: res.Remaining, Instance: o.Instance,
		Strategy: o.Strategy, RequestID: o.RequestID, Fence: o.FenceToken}, nil
}

func (s *Service) replay(ctx context.Context, requestID string) (Receipt, bool, error) {
	o, ok, err := s.opts.Store.OrderByRequest(ctx, requestID)
	if err != nil || !ok {
		return Receipt{}, false, err
	}
	g, err := s.opts.Store.Goods(ctx, o.GoodsID)
	if err != nil {
		return Receipt{}, false, err
	}
	return Receipt{OrderID: o.ID, GoodsID: o.GoodsID, Qty: o.Qty, Remaining: g.Stock, Instance: o.Instance,
		Strategy: o.Strategy, RequestID: o.RequestID, Fence: o.FenceToken, Replayed: true}, true, nil
}

func (s *Service) run(ctx context.Context, a *active, d Deduction) (Result, error) {
	st, cfg, l := s.opts.Store, a.cfg, a.locker
	switch cfg.Name {
	case None:
		return st.ReadModifyWrite(ctx, d, nil)
	case MutexTx:
		// Deliberately flawed (seed 003 "transaction mode"): the mutex is
		// taken inside the transaction and released after the stock write
		// but before the order insert and COMMIT, so the next holder can
		// read the stock before this write is visible.
		return st.ReadModifyWrite(ctx, d, func(ctx context.Context) (func(), error) {
			lease, err := s.acquire(ctx, cfg, l, LockKey(d.Order.GoodsID))
			if err != nil {
				return nil, err
			}
			held := time.Now()
			return func() { s.release(ctx, cfg, lease, held) }, nil
		})
	case MySQLForUpdate:
		return st.ForUpdate(ctx, d, cfg.LockWait)
	case MySQLOptimistic:
		return st.Optimistic(ctx, d, s.opts.OptimisticRetries, cfg.LockWait)
	case SQLAtomic:
		return st.Atomic(ctx, d)
	case RedisAtomic:
		return s.redisAtomic(ctx, d)
	}
	lease, err := s.acquire(ctx, cfg, l, LockKey(d.Order.GoodsID))
	if err != nil {
		return Result{}, err
	}
	defer s.release(ctx, cfg, lease, time.Now())
	if cfg.Fencing {
		d.Fence = lease.Token
		d.Order.FenceToken = lease.Token
	}
	return st.ReadModifyWrite(ctx, d, nil)
}

// acquire waits for the lock within cfg.LockWait.
func (s *Service) acquire(ctx context.Context, cfg Config, l Locker, key string) (*lockimpl.Lease, error) {
	lctx, cancel := context.WithTimeout(ctx, cfg.LockWait)
	defer cancel()
	start := time.Now()
	lease, err := l.Lock(lctx, key)
	if s.opts.Observer != nil {
		s.opts.Observer.LockWait(cfg.Name, time.Since(start))
	}
	if err == nil {
		return lease, nil
	}
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
		if p, ok := l.(Pinger); ok {
			pctx, cancel := context.WithTimeout(ctx, time.Second)
			perr := p.Ping(pctx)
			cancel()
			if perr != nil {
				return nil, fmt.Errorf("%s lock: %w: %w", cfg.Name, ErrBackendUnavailable, perr)
			}
		}
		return nil, fmt.Errorf("waited %s for the %s lock: %w", cfg.LockWait, cfg.Name, ErrLockTimeout)
	}
	return nil, fmt.Errorf("%s lock: %w: %w", cfg.Name, ErrBackendUnavailable, err)
}

func (s *Service) release(ctx context.Context, cfg Config, lease *lockimpl.Lease, held time.Time) {
	if s.opts.Observer != nil {
		s.opts.Observer.LockHold(cfg.Name, time.Since(held))
	}
	uctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 3*time.Second)
	defer cancel()
	if err := lease.Unlock(uctx); err != nil && s.opts.Observer != nil {
		s.opts.Observer.Error("unlock")
	}
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

// classify maps an error to the service's outcomes.
func (s *Service) classify(ctx context.Context, err error) error {
	if err == nil {
		return nil
	}
	for _, known := range []error{ErrSoldOut, ErrStaleLock, ErrLockTimeout, ErrGoodsNotFound, ErrInvalid, ErrBackendUnavailable} {
		if errors.Is(err, known) {
			return err
		}
	}
	if ctx.Err() != nil {
		return ctx.Err()
	}
	if s.opts.Observer != nil {
		s.opts.Observer.Error("backend")
	}
	return fmt.Errorf("%w: %w", ErrBackendUnavailable, err)
}

// Reset sets goods id's stock, deletes its orders, clears its locks and
// fencing counters and re-seeds the Redis mirror.
func (s *Service) Reset(ctx context.Context, goodsID, stock int64) error {
	if goodsID <= 0 || stock < 0 {
		return fmt.Errorf("%w: goods_id must be positive and stock not negative", ErrInvalid)
	}
	if err := s.opts.Store.Reset(ctx, goodsID, stock); err != nil {
		return fmt.Errorf("%w: %w", ErrBackendUnavailable, err)
	}
	if s.opts.ClearLocks != nil {
		if err := s.opts.ClearLocks(ctx, LockKey(goodsID)); err != nil {
			return fmt.Errorf("%w: clear locks: %w", ErrBackendUnavailable, err)
		}
	}
	if s.opts.Mirror != nil {
		if err := s.opts.Mirror.Set(ctx, goodsID, stock); err != nil {
			return fmt.Errorf("%w: %w", ErrBackendUnavailable, err)
		}
	}
	return nil
}

// Audit returns goods id's safety summary.
func (s *Service) Audit(ctx context.Context, goodsID int64) (Audit, error) {
	a, err := s.opts.Store.Audit(ctx, goodsID)
	return a, s.classify(ctx, err)
}

// RequestIDs returns the request ids of goods id's persisted orders.
func (s *Service) RequestIDs(ctx context.Context, goodsID int64) ([]string, error) {
	if _, err := s.opts.Store.Goods(ctx, goodsID); err != nil {
		return nil, s.classify(ctx, err)
	}
	ids, err := s.opts.Store.RequestIDs(ctx, goodsID)
	return ids, s.classify(ctx, err)
}
