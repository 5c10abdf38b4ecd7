// Package lockimpl defines the lock contract every seckill lock backend
// implements, in the style of etcd's client/v3/concurrency package.
//
// A Locker hands out a *Lease per successful acquisition. Lock waits until
// the lock is free or ctx is done; TryLock makes one attempt and returns
// ErrLocked when someone else holds the lock. A Lease carries a fencing
// Token (0 where the backend offers none) that strictly increases per key
// for backends that supply one, and reports when ownership was lost (for
// example when a TTL expired or a session died) through Lost and Err.
//
// Backends live in sub-packages, one per adapter: mutexlock (in-process),
// redislock, redisnaive (the sources' deliberately flawed Redis locks),
// redlock, zklock, etcdlock and mysqllock. The conformance suite in
// lockimpl/locktest runs one body of tests against all of them.
package lockimpl

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"
)

// Sentinel errors. Compare with errors.Is.
var (
	// ErrLocked is returned by TryLock when another owner holds the lock.
	ErrLocked = errors.New("lockimpl: lock is held by another owner")
	// ErrNotHeld is returned by Unlock when the lease was already released
	// (or was never held any more at the backend).
	ErrNotHeld = errors.New("lockimpl: lock not held")
	// ErrLeaseLost is reported through Lease.Err once the backend says the
	// lease's ownership is gone (TTL expired, session expired, node deleted).
	ErrLeaseLost = errors.New("lockimpl: lease lost")
)

// Locker acquires named locks. Implementations are safe for concurrent use.
type Locker interface {
	// Lock blocks until the lock for key is acquired or ctx is done. On ctx
	// cancellation it returns an error wrapping ctx.Err() and leaves nothing
	// behind at the backend.
	Lock(ctx context.Context, key string) (*Lease, error)
	// TryLock makes a single attempt. It returns ErrLocked when the lock is
	// held by someone else.
	TryLock(ctx context.Context, key string) (*Lease, error)
}

// DefaultTTL is the lock TTL used when Options.TTL is zero.
const DefaultTTL = 10 * time.Second

// Options configure a backend Locker. The zero value is usable: every field
// documents its default.
type Options struct {
	// TTL bounds how long a lock survives its holder going silent. Backends
	// that renew (watchdog, keep-alive, Redlock extend) renew at TTL/3.
	// Default: DefaultTTL (10s).
	TTL time.Duration
	// Prefix namespaces the backend keys. Default: "seckill:lock:" for
	// Redis, "/seckill/locks/" for etcd and ZooKeeper, "" for MySQL.
	Prefix string
	// NoRenew switches off the watchdog (Redis), the extension (Redlock)
	// and the expires_at renewal (MySQL), so a holder that works longer
	// than TTL loses the lock while it still works: the lab's stand-in for
	// a stop-the-world pause that also stops the renewal. Default false.
	// etcd and ZooKeeper keep their sessions alive on their own and ignore
	// it.
	NoRenew bool
	// OnCleanupError receives the errors of clean-up that runs after the
	// caller stopped waiting and that no caller sees: a lock node or key
	// left by an abandoned acquisition that could not be deleted, a lease
	// that could not be revoked. op names the operation ("etcd_revoke",
	// "zookeeper_delete"). Default nil: such errors are dropped (the
	// backend's TTL, lease or session removes what is left).
	OnCleanupError func(op string, err error)
	// ReleasePause is a pause between the owner check and the delete of a
	// lock whose release is two separate commands (redisnaive's Owner, the
	// deliberately flawed `redis-owner`): the window in which the key can
	// expire, be taken by the next holder, and then be deleted under it.
	// Other backends ignore it. Default 0.
	ReleasePause time.Duration
	// OnWatchEvent, when set, is called once per watch event a waiter
	// receives while it waits for the lock (zklock): a waiter of the
	// predecessor recipe gets one per acquisition, a waiter of the herd
	// variant one per change of the lock's children. Backends that do not
	// watch never call it. Default nil.
	OnWatchEvent func()
	// Count is told a backend's notable occurrences by name, for the
	// metrics: Redlock reports each acquisition round's outcome
	// (RoundAcquired, RoundTaken, RoundSplit, RoundUnreachable). Default
	// nil: not counted.
	Count func(name string)
}

// Names given to Options.Count by Redlock, one per acquisition round.
const (
	// RoundAcquired: a quorum of masters granted the lock.
	RoundAcquired = "round_acquired"
	// RoundTaken: every master that answered was held by another owner:
	// plain contention, nothing taken, nothing to give back.
	RoundTaken = "round_taken"
	// RoundSplit: a failed quorum round. The round won some masters but
	// not a quorum (the votes split between contenders, or another owner
	// was partway through its own round), or the quorum came too late for
	// the validity time; it gives its masters back and retries. The lab's
	// count of Redlock's split votes (分票; Chapter 1: 脑裂).
	RoundSplit = "round_split"
	// RoundUnreachable: too many masters did not answer for any quorum.
	RoundUnreachable = "round_unreachable"
	// Attempt: one try to take a lock (a SETNX of the spinning lock): the
	// attempts per acquisition measure a busy wait.
	Attempt = "attempt"
	// DeletedAnother: a release deleted a lock another holder had taken
	// meanwhile (the sources' 锁误删): the flawed Redis locks count it.
	DeletedAnother = "deleted_another"
)

// CountOrDrop returns o.Count, or a function that drops the name when it
// is nil.
func (o Options) CountOrDrop() func(name string) {
	if o.Count == nil {
		return func(string) {}
	}
	return o.Count
}

// WatchEventOrDrop returns o.OnWatchEvent, or a function that does
// nothing when it is nil.
func (o Options) WatchEventOrDrop() func() {
	if o.OnWatchEvent == nil {
		return func() {}
	}
	return o.OnWatchEvent
}

// CleanupErrorOrDrop returns o.OnCleanupError, or a function that drops
// the error when it is nil.
func (o Options) CleanupErrorOrDrop() func(op string, err error) {
	if o.OnCleanupError == nil {
		return func(string, error) {}
	}
	return o.OnCleanupError
}

// TTLOrDefault returns o.TTL, or DefaultTTL when it is not set.
func (o Options) TTLOrDefault() time.Duration {
	if o.TTL <= 0 {
		return DefaultTTL
	}
	return o.TTL
}

// PrefixOr returns o.Prefix, or def when it is empty.
func (o Options) PrefixOr(def string) string {
	if o.Prefix == "" {
		return def
	}
	return o.Prefix
}

// Lease is one successful acquisition of a lock. It is safe for concurrent
// use. Backends build it with NewLease and report ownership loss with
// MarkLost.
type Lease struct {
	// Key is the lock name passed to Lock/TryLock.
	Key string
	// Token is the fencing token: it strictly increases per key for
	// backends that supply one (Redis INCR, etcd create revision, ZooKeeper
	// czxid, MySQL auto-increment id) and is 0 otherwise.
	Token uint64

	release func(ctx context.Context) error

	mu       sync.Mutex
	released bool
	done     chan struct{} // closed by the first Unlock

	lostOnce sync.Once
	lost     chan struct{}
	lostErr  error

	validMu    sync.Mutex
	validUntil time.Time // zero: the backend gives no deadline
}

// SetValidUntil records when the lease runs out by the holder's own clock
// unless it is renewed first: the acquisition's start plus the TTL, moved
// on by each renewal. Backends whose leases expire at the server by a TTL
// (Redis, Redlock, MySQL) set it; Err then reports a lease whose deadline
// passed as lost even before any server said so: after a pause that also
// stopped the renewal (a GC pause, SIGSTOP), the holder knows at once.
func (l *Lease) SetValidUntil(t time.Time) {
	l.validMu.Lock()
	defer l.validMu.Unlock()
	l.validUntil = t
}

// ValidUntil returns the deadline SetValidUntil recorded, if any.
func (l *Lease) ValidUntil() (time.Time, bool) {
	l.validMu.Lock()
	defer l.validMu.Unlock()
	return l.validUntil, !l.validUntil.IsZero()
}

// NewLease builds a lease whose Unlock calls release exactly once.
func NewLease(key string, token uint64, release func(ctx context.Context) error) *Lease {
	return &Lease{Key: key, Token: token, release: release, lost: make(chan struct{}), done: make(chan struct{})}
}

// Unlock releases the lock. A second call returns ErrNotHeld. If the backend
// reports that the lock was no longer ours, Unlock returns an error wrapping
// ErrNotHeld as well.
func (l *Lease) Unlock(ctx context.Context) error {
	l.mu.Lock()
	if l.released {
		l.mu.Unlock()
		return fmt.Errorf("unlock %q: %w", l.Key, ErrNotHeld)
	}
	l.released = true
	close(l.done)
	l.mu.Unlock()
	if l.release == nil {
		return nil
	}
	return l.release(ctx)
}

// Released reports whether Unlock has been called.
func (l *Lease) Released() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.released
}

// Done is closed once Unlock has been called.
func (l *Lease) Done() <-chan struct{} { return l.done }

// Lost is closed when the backend reports that ownership was lost while the
// lease was still held.
func (l *Lease) Lost() <-chan struct{} { return l.lost }

// Err returns nil while ownership is intact, and an error wrapping
// ErrLeaseLost once it was lost: reported by the backend (Lost), or, for a
// lease with a deadline (SetValidUntil), once that deadline passed.
func (l *Lease) Err() error {
	select {
	case <-l.lost:
		return l.lostErr
	default:
	}
	if until, ok := l.ValidUntil(); ok && time.Now().After(until) {
		return fmt.Errorf("lock %q: %w: its TTL ran out %v ago by the holder's clock", l.Key, ErrLeaseLost, time.Since(until).Round(time.Millisecond))
	}
	return nil
}

// MarkLost records that ownership was lost. Only the first call counts.
func (l *Lease) MarkLost(cause error) {
	l.lostOnce.Do(func() {
		if cause == nil {
			l.lostErr = fmt.Errorf("lock %q: %w", l.Key, ErrLeaseLost)
		} else {
			l.lostErr = fmt.Errorf("lock %q: %w: %w", l.Key, ErrLeaseLost, cause)
		}
		close(l.lost)
	})
}

// KeepAlive renews a held lock every ttl/3 with renew until the returned
// stop is called (stop waits for a renewal in flight). It is the one
// renewal loop of the backends that renew (the Redis watchdog, the Redlock
// extension, the MySQL expiry renewal). A renew error that wraps
// ErrNotHeld means ownership is gone: lost is called at once. Any other
// error is transient: lost is called only when no renewal succeeded for a
// whole ttl. Each renewal runs under a ttl/3 timeout. It runs on a timer,
// not a goroutine, so nothing is scheduled until the first renewal is due:
// a short critical section costs nothing.
func KeepAlive(ttl time.Duration, renew func(ctx context.Context) error, lost func(cause error)) (stop func()) {
	every := ttl / 3
	var (
		mu       sync.Mutex
		stopped  bool
		lastOK   = time.Now()
		timer    *time.Timer
		inflight sync.WaitGroup
	)
	tick := func() {
		mu.Lock()
		if stopped {
			mu.Unlock()
			return
		}
		inflight.Add(1)
		mu.Unlock()
		defer inflight.Done()
		ctx, cancel := context.WithTimeout(context.Background(), every)
		err := renew(ctx)
		cancel()
		mu.Lock()
		if stopped { // released meanwhile: the result says nothing about loss
			mu.Unlock()
			return
		}
		var cause error
		switch {
		case err == nil:
			lastOK = time.Now()
		case errors.Is(err, ErrNotHeld):
			cause = err
		case time.Since(lastOK) >= ttl:
			cause = fmt.Errorf("no renewal for %v: %w", ttl, err)
		}
		if cause != nil {
			stopped = true
			mu.Unlock()
			lost(cause)
			return
		}
		timer.Reset(every)
		mu.Unlock()
	}
	mu.Lock()
	timer = time.AfterFunc(every, tick)
	mu.Unlock()
	return func() {
		mu.Lock()
		stopped = true
		timer.Stop()
		mu.Unlock()
		inflight.Wait()
	}
}

// ExpireAfter marks lease lost once ttl has passed, unless the returned stop
// is called first: a lock that is not renewed knows it is gone when its TTL
// runs out, by its own clock, even though no server tells it so. The
// backends use it with Options.NoRenew.
func ExpireAfter(lease *Lease, ttl time.Duration) (stop func()) {
	t := time.AfterFunc(ttl, func() {
		lease.MarkLost(fmt.Errorf("TTL %v ran out without renewal", ttl))
	})
	return func() { t.Stop() }
}
