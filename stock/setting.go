package stock

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"time"

	"github.com/seckill-lab/seckill/lockimpl"
	"github.com/seckill-lab/seckill/stock/catalog"
)

// active is the current setting with the Locker it runs under (nil for
// strategies without one), switched as one value so a purchase never sees
// a setting with another setting's lock. refs counts the purchases using
// it; once it is replaced and the last of them is done, its locker is let
// go.
type active struct {
	cfg     Config
	info    catalog.Strategy
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
	return lockerKey{c.Name, c.LockTTL, c.NoWatchdog, c.ReleasePause}
}

// sharedLocker is a Locker used by one or more actives (the current one
// and replaced ones whose purchases are still running). It is closed when
// the last of them lets it go.
type sharedLocker struct {
	locker
	users int // guarded by Service.mu
}

// Config returns the current strategy setting, its defaults filled in.
func (s *Service) Config() Config { return s.cur.Load().cfg }

// SetConfig validates c and switches to it, its defaults filled in (as
// Config then returns it). The lock is built first (or
// shared with the current setting when its options are the same), so a
// backend that is not configured is an error and the old setting stays.
// The replaced setting's lock is closed once its last purchase is done.
func (s *Service) SetConfig(ctx context.Context, c Config) error {
	if err := c.Validate(); err != nil {
		return err
	}
	c = c.WithDefaults()
	info, _ := catalog.Lookup(c.Name)
	a := &active{cfg: c, info: info}
	if c.Name == catalog.RedisAtomic && s.opts.Mirror == nil || c.Name == catalog.RedisStream && (s.opts.Stream == nil || s.opts.Mirror == nil) {
		return fmt.Errorf("strategy %s needs Redis: %w", c.Name, ErrBackendUnavailable)
	}
	if info.Kind == catalog.KindLocker {
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
		sl = &sharedLocker{locker: l}
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
	if cl, ok := sl.locker.(io.Closer); ok {
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
		if cl, ok := sl.locker.(io.Closer); ok {
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
	return lockimpl.Options{TTL: c.LockTTL, NoRenew: c.NoWatchdog, OnCleanupError: onCleanupError, Count: count,
		ReleasePause: c.ReleasePause, OnWatchEvent: onWatchEvent}
}

// counter passes a backend's counts to the observer under strategy.
func (s *Service) counter(strategy string) func(string) {
	if s.opts.Observer == nil {
		return nil
	}
	return func(name string) { s.opts.Observer.Count(strategy, name) }
}
