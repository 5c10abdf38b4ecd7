package stock

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"

	"github.com/seckill-lab/seckill/lockimpl"
	"github.com/seckill-lab/seckill/lockimpl/mutexlock"
)

// Locker is what the service needs of a lock.
type Locker interface {
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
	// Backends are the lock backends by strategy name (see Clients and
	// the registry's Open); a locker strategy without one is unavailable.
	// Reset clears a goods' lock state at every one of them. The caller
	// closes them after the service.
	Backends map[string]LockBackend
	// Mirror is required for redis-atomic.
	Mirror Mirror
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

	queue   *mutexlock.Locker // Config.LocalQueue: one contender per key
	batches batcher           // Config.Batch: the queues of purchases per key
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
	s := &Service{opts: opts, lockers: map[lockerKey]*sharedLocker{}, queue: mutexlock.New(lockimpl.Options{})}
	if err := s.SetConfig(context.Background(), opts.Initial); err != nil {
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
// a setting with another setting's lock. refs counts the purchases using
// it; once it is replaced and the last of them is done, its locker is let
// go.
type active struct {
	cfg     Config
	info    Strategy
	backend LockBackend
	locker  *sharedLocker

	refs    atomic.Int64
	retired atomic.Bool
	done    sync.Once
}

// lockerKey identifies the Locker of a setting: settings that differ only
// in knobs the lock does not see (work delay, lock wait, fencing) share one.
type lockerKey struct {
	name         string
	ttl          time.Duration
	noRenew      bool
	releasePause time.Duration
}

// lockerKey returns the key of c's Locker.
func (c Config) lockerKey() lockerKey {
	return lockerKey{c.Name, c.LockTTL, !c.Watchdog, c.ReleasePause}
}

// sharedLocker is a Locker used by one or more actives (the current one
// and replaced ones whose purchases are still running). It is closed when
// the last of them lets it go.
type sharedLocker struct {
	Locker
	users int // guarded by Service.mu
}

// Config returns the current strategy setting.
func (s *Service) Config() Config { return s.cur.Load().cfg }

// SetConfig validates c and switches to it. The lock is built first (or
// shared with the current setting when its options are the same), so a
// backend that is not configured is an error and the old setting stays.
// The replaced setting's lock is closed once its last purchase is done.
func (s *Service) SetConfig(ctx context.Context, c Config) error {
	if err := c.Validate(); err != nil {
		return err
	}
	info, _ := Lookup(c.Name)
	a := &active{cfg: c, info: info}
	if c.Name == RedisAtomic && s.opts.Mirror == nil {
		return fmt.Errorf("strategy %s needs Redis: %w", c.Name, ErrBackendUnavailable)
	}
	if info.Kind == KindLocker {
		b, ok := s.opts.Backends[c.Name]
		if !ok {
			return fmt.Errorf("strategy %s needs %s: %w", c.Name, info.Server, ErrNotConfigured)
		}
		a.backend = b
		sl, err := s.share(ctx, b, c)
		if err != nil {
			return err
		}
		a.locker = sl
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		if a.locker != nil {
			s.bg.Go(func() { s.letGo(c, a.locker) })
		}
		return errors.New("stock: service closed")
	}
	if old := s.cur.Swap(a); old != nil {
		old.retired.Store(true)
		old.maybeDone(s)
	}
	return nil
}

// share returns the locker of setting c with one more user: the one open
// for the same options, or a new one. NewLocker does I/O (a session, a
// connection), so it runs outside s.mu: a slow lock server holds up no
// purchase and no other setting. Two settings built at once for the same
// options keep the first; the second is closed.
func (s *Service) share(ctx context.Context, b LockBackend, c Config) (*sharedLocker, error) {
	key := c.lockerKey()
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil, errors.New("stock: service closed")
	}
	if sl, ok := s.lockers[key]; ok {
		sl.users++
		s.mu.Unlock()
		return sl, nil
	}
	s.mu.Unlock()
	l, err := b.NewLocker(ctx, c.lockOptions(s.cleanupError, s.counter(c.Name), s.watchEvent(c.Name)))
	if err != nil {
		return nil, fmt.Errorf("strategy %s: %w: %w", c.Name, ErrBackendUnavailable, err)
	}
	s.mu.Lock()
	sl, ok := s.lockers[key]
	if !ok && !s.closed {
		sl = &sharedLocker{Locker: l}
		s.lockers[key] = sl
	}
	closed := s.closed
	if sl != nil {
		sl.users++
	}
	s.mu.Unlock()
	if ok || closed {
		if cl, isCloser := l.(io.Closer); isCloser {
			if err := cl.Close(); err != nil {
				s.cleanupError("close_locker", err)
			}
		}
	}
	if closed {
		return nil, errors.New("stock: service closed")
	}
	return sl, nil
}

// use pins the current setting for one purchase; the caller calls
// a.unuse(s) when the purchase is done.
func (s *Service) use() *active {
	for {
		a := s.cur.Load()
		a.refs.Add(1)
		if s.cur.Load() == a {
			return a
		}
		a.unuse(s) // replaced meanwhile: take the new one
	}
}

func (a *active) unuse(s *Service) {
	if a.refs.Add(-1) == 0 {
		a.maybeDone(s)
	}
}

// maybeDone lets the setting's locker go once the setting is replaced and
// no purchase uses it.
func (a *active) maybeDone(s *Service) {
	if !a.retired.Load() || a.refs.Load() != 0 {
		return
	}
	a.done.Do(func() {
		if a.locker != nil {
			s.bg.Go(func() { s.letGo(a.cfg, a.locker) })
		}
	})
}

// letGo drops one user of sl and closes it when it was the last.
func (s *Service) letGo(c Config, sl *sharedLocker) {
	s.mu.Lock()
	sl.users--
	last := sl.users == 0
	if last {
		delete(s.lockers, c.lockerKey())
	}
	s.mu.Unlock()
	if !last {
		return
	}
	if cl, ok := sl.Locker.(io.Closer); ok {
		if err := cl.Close(); err != nil {
			s.cleanupError("close_locker", err)
		}
	}
}

// Lockers reports how many Lockers the service holds open: the current
// setting's and those of replaced settings whose purchases still run.
func (s *Service) Lockers() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.lockers)
}

// Close closes every Locker the service built, once its background work
// (the last releases) is done: no goroutine of the service outlives it.
// Purchases must be over.
func (s *Service) Close() error {
	s.mu.Lock()
	s.closed = true
	s.mu.Unlock()
	s.bg.Wait()
	s.mu.Lock()
	lockers := s.lockers
	s.lockers = map[lockerKey]*sharedLocker{}
	s.mu.Unlock()
	var errs []error
	for _, sl := range lockers {
		if cl, ok := sl.Locker.(io.Closer); ok {
			errs = append(errs, cl.Close())
		}
	}
	return errors.Join(errs...)
}

// cleanupError counts an error of background clean-up that no caller sees.
func (s *Service) cleanupError(op string, _ error) {
	if s.opts.Observer != nil {
		s.opts.Observer.Error(op)
	}
}

// watchEvent counts strategy's watch events at the Observer (nil without
// one).
func (s *Service) watchEvent(strategy string) func() {
	if s.opts.Observer == nil {
		return nil
	}
	return func() { s.opts.Observer.WatchEvent(strategy) }
}

// lockOptions are the lockimpl options of setting c.
func (c Config) lockOptions(onCleanupError func(op string, err error), count func(string), onWatchEvent func()) lockimpl.Options {
	return lockimpl.Options{TTL: c.LockTTL, NoRenew: !c.Watchdog, OnCleanupError: onCleanupError, Count: count,
		ReleasePause: c.ReleasePause, OnWatchEvent: onWatchEvent}
}

// counter passes a backend's counts to the observer under strategy.
func (s *Service) counter(strategy string) func(string) {
	if s.opts.Observer == nil {
		return nil
	}
	return func(name string) { s.opts.Observer.Count(strategy, name) }
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
// ErrStaleLock, ErrLeaseLost, ErrLockTimeout, ErrGoodsNotFound,
// ErrInvalid, ErrIdempotencyKeyReused or ErrBackendUnavailable.
//
// Idempotency: the orders table's UNIQUE request id decides, so a purchase
// costs no lookup. A key that was already sold is found when the insert
// hits the unique key (the deduction rolls back with it), or, when the
// purchase failed for another reason (the goods sold out since), by one
// lookup on that failure path. A found order is replayed when the request
// is the same (goods, qty, user), and refused with
// ErrIdempotencyKeyReused when it is not.
func (s *Service) Purchase(ctx context.Context, r PurchaseRequest) (Receipt, error) {
	if err := s.Validate(r); err != nil {
		return Receipt{}, err
	}
	a := s.use()
	defer a.unuse(s)
	cfg := a.cfg
	keyed := r.RequestID != ""
	if !keyed {
		r.RequestID = uuid.NewString()
	}
	d := Deduction{
		Order:     Order{GoodsID: r.GoodsID, Qty: r.Qty, UserID: r.UserID, RequestID: r.RequestID, Instance: s.opts.Instance, Strategy: cfg.Name},
		WorkDelay: cfg.WorkDelay,
	}
	res, err := s.run(ctx, a, d)
	if err == nil {
		o := res.Order
		return Receipt{OrderID: o.ID, GoodsID: o.GoodsID, Qty: o.Qty, Remaining: res.Remaining, Instance: o.Instance,
			Strategy: o.Strategy, RequestID: o.RequestID, Fence: o.FenceToken}, nil
	}
	if errors.Is(err, errDuplicateRequest) || keyed && ctx.Err() == nil {
		rc, ok, rerr := s.replay(ctx, r)
		switch {
		case rerr != nil:
			return rc, s.classify(ctx, rerr)
		case ok:
			return rc, nil
		case errors.Is(err, errDuplicateRequest):
			err = fmt.Errorf("request %q reported sold but not found", r.RequestID)
		}
	}
	return Receipt{}, s.classify(ctx, err)
}

// replay answers a request whose key was already sold with the original
// order; ok is false when the key was never sold. A request that differs
// from the original (goods, qty or user) gets ErrIdempotencyKeyReused.
func (s *Service) replay(ctx context.Context, r PurchaseRequest) (Receipt, bool, error) {
	o, ok, err := s.opts.Store.OrderByRequest(ctx, r.RequestID)
	if err != nil || !ok {
		return Receipt{}, false, err
	}
	if o.GoodsID != r.GoodsID || o.Qty != r.Qty || o.UserID != r.UserID {
		return Receipt{}, false, fmt.Errorf("%w: Idempotency-Key %q was used for another purchase (goods %d, qty %d, another user or the same)",
			ErrIdempotencyKeyReused, r.RequestID, o.GoodsID, o.Qty)
	}
	g, err := s.opts.Store.Goods(ctx, o.GoodsID)
	if err != nil {
		return Receipt{}, false, err
	}
	return Receipt{OrderID: o.ID, GoodsID: o.GoodsID, Qty: o.Qty, Remaining: g.Stock, Instance: o.Instance,
		Strategy: o.Strategy, RequestID: o.RequestID, Fence: o.FenceToken, Replayed: true}, true, nil
}

func (s *Service) run(ctx context.Context, a *active, d Deduction) (Result, error) {
	st, cfg := s.opts.Store, a.cfg
	switch cfg.Name {
	case MySQLForUpdate:
		return st.ForUpdate(ctx, d, cfg.LockWait)
	case MySQLOptimistic:
		if cfg.LocalQueue {
			return s.optimisticQueued(ctx, d, cfg.LockWait)
		}
		return st.Optimistic(ctx, d, s.opts.OptimisticRetries, cfg.LockWait)
	case SQLAtomic:
		return st.Atomic(ctx, d)
	case RedisAtomic:
		return s.redisAtomic(ctx, d)
	}
	key := LockKey(d.Order.GoodsID)
	tr := trace{events: s.opts.Events, instance: s.opts.Instance, strategy: cfg.Name, purchase: d.Order.RequestID, key: key}
	if a.batching() {
		return s.batched(ctx, a, d, tr)
	}
	d.Trace = tr.value
	return s.runTraced(ctx, a, d, tr)
}

// outcome records how the transaction ended, when it ran: a lock wait that
// ran out or a dead backend never got to one.
func (tr trace) outcome(err error) {
	switch {
	case err == nil:
		tr.emit(EventCommitted, nil)
	case !errors.Is(err, ErrLockTimeout) && !errors.Is(err, ErrBackendUnavailable) || errors.Is(err, ErrLeaseLost):
		tr.emit(EventRolledBack, func(ev *Event) { ev.Detail = err.Error() })
	}
}

// runTraced runs the read-modify-write strategies (unprotected or under a
// lock) and records their lock events.
func (s *Service) runTraced(ctx context.Context, a *active, d Deduction, tr trace) (Result, error) {
	st, cfg, key := s.opts.Store, a.cfg, tr.key
	if a.locker == nil { // KindUnprotected
		res, err := st.ReadModifyWrite(ctx, d, nil)
		tr.outcome(err)
		return res, err
	}
	if a.info.ReleaseBeforeCommit {
		// Deliberately flawed (seed 003 "transaction mode"): the lock is
		// taken inside the transaction and released after the stock write
		// but before the order insert and COMMIT, so the next holder can
		// read the stock before this write is visible.
		res, err := st.ReadModifyWrite(ctx, d, func(ctx context.Context) (func(), error) {
			tr.emit(EventRequested, nil)
			lease, err := s.acquire(ctx, a, key, tr)
			if err != nil {
				return nil, err
			}
			held := time.Now()
			return func() { s.release(ctx, cfg, lease, held, tr) }, nil
		})
		tr.outcome(err)
		return res, err
	}
	tr.emit(EventRequested, nil)
	lease, err := s.acquire(ctx, a, key, tr)
	if err != nil {
		return Result{}, err
	}
	// The release does not hold up the answer: the order is committed (or
	// not) by then, and a stalled backend must not delay the reply.
	held := time.Now()
	defer s.bg.Go(func() { s.release(ctx, cfg, lease, held, tr) })
	if cfg.Fencing {
		d.Fence = lease.Token
		d.Order.FenceToken = lease.Token
	}
	if cfg.LeaseCheck {
		d.BeforeCommit = func() error {
			if err := lease.Err(); err != nil {
				return fmt.Errorf("%w: %w", ErrLeaseLost, err)
			}
			return nil
		}
	}
	res, err := st.ReadModifyWrite(ctx, d, nil)
	tr.outcome(err) // before the deferred release: the commit came first
	return res, err
}

// acquire waits for a's lock on key within a.cfg.LockWait (the caller
// records EventRequested). A wait that
// runs out while the backend does not answer is ErrBackendUnavailable, not
// ErrLockTimeout. While the lock is held, a loss the backend reports is
// recorded as an event.
func (s *Service) acquire(ctx context.Context, a *active, key string, tr trace) (*lockimpl.Lease, error) {
	cfg := a.cfg
	lctx, cancel := context.WithTimeout(ctx, cfg.LockWait)
	defer cancel()
	start := time.Now()
	lease, err := s.queued(lctx, a, key)
	if s.opts.Observer != nil {
		s.opts.Observer.LockWait(cfg.Name, time.Since(start))
	}
	if err == nil {
		tr.emit(EventAcquired, func(ev *Event) { ev.Token, ev.WaitedNS = lease.Token, time.Since(start).Nanoseconds() })
		if tr.events != nil {
			s.bg.Go(func() {
				select {
				case <-lease.Lost():
					tr.emit(EventLeaseLost, func(ev *Event) { ev.Token, ev.Detail = lease.Token, lease.Err().Error() })
				case <-lease.Done():
				}
			})
		}
		return lease, nil
	}
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
		// The ping gets half a second past the wait: the answer comes
		// within lock_wait + 1s whatever the backend does.
		pctx, cancel := context.WithTimeout(ctx, pingBudget)
		perr := a.backend.Ping(pctx)
		cancel()
		if perr != nil {
			return nil, fmt.Errorf("%s lock: %w: %w", cfg.Name, ErrBackendUnavailable, perr)
		}
		return nil, fmt.Errorf("waited %s for the %s lock: %w", cfg.LockWait, cfg.Name, ErrLockTimeout)
	}
	return nil, fmt.Errorf("%s lock: %w: %w", cfg.Name, ErrBackendUnavailable, err)
}

// queued takes a's lock on key; with LocalQueue, after its turn in the
// instance's own queue for key, so one waiter per instance contends at the
// lock server. The turn ends when the lock is taken (or the wait runs out),
// not when it is released: the queue orders contenders, it does not hold
// the critical section.
func (s *Service) queued(ctx context.Context, a *active, key string) (*lockimpl.Lease, error) {
	if !a.cfg.LocalQueue || !a.info.Queued() {
		return a.locker.Lock(ctx, key)
	}
	turn, err := s.queue.Lock(ctx, key)
	if err != nil {
		return nil, fmt.Errorf("waiting in the local queue: %w", err)
	}
	defer turn.Unlock(context.WithoutCancel(ctx))
	return a.locker.Lock(ctx, key)
}

// optimisticQueued runs mysql-optimistic after its turn in the instance's
// queue for the goods, holding the turn until the purchase is done: the
// instance makes one compare-and-swap attempt per goods at a time. The
// wait for the turn and the retries share the lock_wait budget.
func (s *Service) optimisticQueued(ctx context.Context, d Deduction, budget time.Duration) (Result, error) {
	start := time.Now()
	qctx, cancel := context.WithTimeout(ctx, budget)
	turn, err := s.queue.Lock(qctx, LockKey(d.Order.GoodsID))
	cancel()
	if err != nil {
		if ctx.Err() != nil {
			return Result{}, ctx.Err()
		}
		return Result{}, fmt.Errorf("waited %s in the local queue: %w", budget, ErrLockTimeout)
	}
	defer turn.Unlock(context.WithoutCancel(ctx))
	return s.opts.Store.Optimistic(ctx, d, s.opts.OptimisticRetries, max(budget-time.Since(start), time.Millisecond))
}

// pingBudget bounds the health probe that tells a dead backend from a busy
// lock once a lock wait ran out.
const pingBudget = 500 * time.Millisecond

// releaseTimeout bounds an unlock; a lock that could not be released
// expires with its TTL, lease or session.
const releaseTimeout = 3 * time.Second

func (s *Service) release(ctx context.Context, cfg Config, lease *lockimpl.Lease, held time.Time, tr trace) {
	if s.opts.Observer != nil {
		s.opts.Observer.LockHold(cfg.Name, time.Since(held))
	}
	uctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), releaseTimeout)
	defer cancel()
	err := lease.Unlock(uctx)
	tr.emit(EventReleased, func(ev *Event) {
		ev.Token = lease.Token
		if err != nil {
			ev.Detail = err.Error()
		}
	})
	if err != nil && s.opts.Observer != nil {
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
	for _, known := range []error{ErrSoldOut, ErrStaleLock, ErrLeaseLost, ErrLockTimeout, ErrGoodsNotFound, ErrInvalid, ErrIdempotencyKeyReused, ErrBackendUnavailable} {
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

// SkippedBackend is a lock backend Reset could not clear: it did not
// answer (or failed) within resetClearTimeout.
type SkippedBackend struct {
	// Strategy is the strategy whose lock state (or, for redis-atomic,
	// stock mirror) was not cleared.
	Strategy string `json:"strategy"`
	// Server is the server it lives on.
	Server string `json:"server"`
	// Reason says what happened in words a client may see; Detail is the
	// backend's own error, for the instance's log only (it carries
	// addresses).
	Reason string `json:"reason"`
	Detail string `json:"-"`
}

// ResetReport says what Reset could not clear.
type ResetReport struct {
	// Skipped are the strategies whose lock state or mirror was left as
	// it was, sorted by strategy name: they must not run on this goods
	// until a reset clears them.
	Skipped []SkippedBackend `json:"skipped,omitempty"`
}

// SkippedStrategy returns the skip of strategy name, if any.
func (r ResetReport) SkippedStrategy(name string) (SkippedBackend, bool) {
	for _, sk := range r.Skipped {
		if sk.Strategy == name {
			return sk, true
		}
	}
	return SkippedBackend{}, false
}

// resetClearTimeout bounds the clearing at one backend: a server that is
// down (or hangs) is skipped after it, not waited for.
const resetClearTimeout = 3 * time.Second

// Reset sets goods id's stock and deletes its orders (MySQL: an error
// when that fails), then clears its lock state at every lock backend (lock
// keys, fencing counters, lock rows) and re-seeds the Redis mirror,
// concurrently, each within resetClearTimeout. A backend that is down does
// not fail the reset: it is skipped and listed in the report with the
// reason, so a dead server blocks only the strategies that use it.
func (s *Service) Reset(ctx context.Context, goodsID, stock int64) (ResetReport, error) {
	if goodsID <= 0 || stock < 0 {
		return ResetReport{}, fmt.Errorf("%w: goods_id must be positive and stock not negative", ErrInvalid)
	}
	if err := s.opts.Store.Reset(ctx, goodsID, stock); err != nil {
		return ResetReport{}, fmt.Errorf("%w: %w", ErrBackendUnavailable, err)
	}
	key := LockKey(goodsID)
	type clear struct {
		strategy string
		run      func(ctx context.Context) error
	}
	var clears []clear
	for _, name := range slices.Sorted(maps.Keys(s.opts.Backends)) {
		b := s.opts.Backends[name]
		clears = append(clears, clear{name, func(ctx context.Context) error { return b.Clear(ctx, key) }})
	}
	if m := s.opts.Mirror; m != nil {
		clears = append(clears, clear{RedisAtomic, func(ctx context.Context) error { return m.Set(ctx, goodsID, stock) }})
	}
	errs := make([]error, len(clears))
	var wg sync.WaitGroup
	for i, c := range clears {
		wg.Go(func() {
			cctx, cancel := context.WithTimeout(ctx, resetClearTimeout)
			defer cancel()
			errs[i] = c.run(cctx)
		})
	}
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return ResetReport{}, fmt.Errorf("reset goods %d: %w", goodsID, err)
	}
	var rep ResetReport
	for i, c := range clears {
		if errs[i] == nil {
			continue
		}
		info, _ := Lookup(c.strategy)
		reason := "the server refused or failed (the instance log has the error)"
		if errors.Is(errs[i], context.DeadlineExceeded) {
			reason = fmt.Sprintf("the server did not answer within %s", resetClearTimeout)
		}
		rep.Skipped = append(rep.Skipped, SkippedBackend{Strategy: c.strategy, Server: string(info.Server), Reason: reason, Detail: errs[i].Error()})
	}
	slices.SortFunc(rep.Skipped, func(a, b SkippedBackend) int { return strings.Compare(a.Strategy, b.Strategy) })
	return rep, nil
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
