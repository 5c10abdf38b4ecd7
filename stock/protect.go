package stock

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/seckill-lab/seckill/lockimpl"
	"github.com/seckill-lab/seckill/stock/phase"
)

// protected runs the read-modify-write of the strategies without their
// own deduction: unprotected (none) or under a's lock, one purchase at a
// time or in batches (batch.go), and records their lock events.
func (s *Service) protected(ctx context.Context, a *active, d Deduction) (Result, error) {
	key := LockKey(d.Order.GoodsID)
	tr := trace{events: s.opts.Events, instance: s.opts.Instance, strategy: a.cfg.Name, purchase: d.Order.RequestID, key: key}
	if a.batching() {
		return s.batched(ctx, a, d, tr)
	}
	d.Trace = tr.value
	return s.runTraced(ctx, a, d, tr)
}

// runTraced runs the read-modify-write strategies (unprotected or under a
// lock) and records their lock events.
func (s *Service) runTraced(ctx context.Context, a *active, d Deduction, tr trace) (Result, error) {
	cfg, key := a.cfg, tr.key
	if a.locker == nil { // KindUnprotected
		res, err := s.readModifyWrite(ctx, d, nil)
		tr.outcome(err)
		return res, err
	}
	if a.info.ReleaseBeforeCommit {
		// Deliberately flawed (Chapter 1's "transaction mode"): the lock is
		// taken inside the transaction and released after the stock write
		// but before the order insert and COMMIT, so the next holder can
		// read the stock before this write is visible.
		res, err := s.readModifyWrite(ctx, d, func(ctx context.Context) (func(), error) {
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
	if !cfg.NoLeaseCheck {
		d.BeforeCommit = func() error {
			if err := lease.Err(); err != nil {
				return fmt.Errorf("%w: %w", ErrLeaseLost, err)
			}
			return nil
		}
	}
	res, err := s.readModifyWrite(ctx, d, nil)
	tr.outcome(err) // before the deferred release: the commit came first
	return res, err
}

// acquire waits for a's lock on key within a.cfg.LockWait (the caller
// records EventRequested). A wait that
// runs out while the backend does not answer is ErrBackendUnavailable, not
// ErrLockTimeout. While the lock is held, a loss the backend reports is
// recorded as an event.
func (s *Service) acquire(ctx context.Context, a *active, key string, tr trace) (*lockimpl.Lease, error) {
	ctx = phase.With(ctx, phase.Acquire) // the round trips counted as the wait's
	cfg := a.cfg
	lctx, cancel := context.WithTimeout(ctx, cfg.LockWait)
	defer cancel()
	start := time.Now()
	lease, err := s.queued(lctx, a, key)
	if s.opts.Observer != nil {
		s.opts.Observer.LockWait(cfg.Name, time.Since(start))
	}
	if err == nil {
		phase.Acquired(ctx)
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

// queued takes a's lock on key; unless NoLocalQueue, after its turn in the
// instance's own queue for key, so one waiter per instance contends at the
// lock server. The turn ends when the lock is taken (or the wait runs out),
// not when it is released: the queue orders contenders, it does not hold
// the critical section.
func (s *Service) queued(ctx context.Context, a *active, key string) (*lockimpl.Lease, error) {
	if a.cfg.NoLocalQueue || !a.info.Queued() {
		return a.locker.Lock(ctx, key)
	}
	done, err := s.queue.wait(ctx, key)
	if err != nil {
		return nil, fmt.Errorf("waiting in the local queue: %w", err)
	}
	defer done()
	return a.locker.Lock(ctx, key)
}

// optimisticQueued runs mysql-optimistic after its turn in the instance's
// queue for the goods, holding the turn until the purchase is done: the
// instance makes one compare-and-swap attempt per goods at a time. The
// wait for the turn and the retries share the lock_wait budget.
func (s *Service) optimisticQueued(ctx context.Context, d Deduction, budget time.Duration) (Result, error) {
	start := time.Now()
	qctx, cancel := context.WithTimeout(ctx, budget)
	done, err := s.queue.wait(qctx, LockKey(d.Order.GoodsID))
	cancel()
	if err != nil {
		if ctx.Err() != nil {
			return Result{}, ctx.Err()
		}
		return Result{}, fmt.Errorf("waited %s in the local queue: %w", budget, ErrLockTimeout)
	}
	defer done()
	db, err := s.database(d.Order.GoodsID)
	if err != nil {
		return Result{}, err
	}
	return db.Optimistic(ctx, d, s.opts.OptimisticRetries, max(budget-time.Since(start), time.Millisecond))
}

// pingBudget bounds the health probe that tells a dead backend from a busy
// lock once a lock wait ran out.
const pingBudget = 500 * time.Millisecond

// releaseTimeout bounds an unlock; a lock that could not be released
// expires with its TTL, lease or session.
const releaseTimeout = 3 * time.Second

func (s *Service) release(ctx context.Context, cfg Config, lease *lockimpl.Lease, held time.Time, tr trace) {
	ctx = phase.With(ctx, phase.Release)
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
