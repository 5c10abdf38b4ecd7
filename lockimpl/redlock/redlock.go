// Package redlock is the `redlock` strategy: go-redsync/redsync v4 over
// several independent Redis masters (5 in the lab), through the goredis v9
// pool adapter. A lock is held when a quorum (N/2+1) of the masters took it
// within the validity time (expiry minus elapsed time and clock drift).
//
// Options.TTL is the redsync expiry; while a lease is held a goroutine
// extends it every TTL/3 (Mutex.ExtendContext) and marks the lease lost when
// an extension fails to reach a quorum. Redlock has no fencing token: Token
// is always 0. The known weaknesses (a master restarting without
// persistence, clock jumps, split votes under heavy contention) are the
// strategy's subject, not bugs of this package.
package redlock

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"time"

	"github.com/go-redsync/redsync/v4"
	redsyncredis "github.com/go-redsync/redsync/v4/redis"
	"github.com/go-redsync/redsync/v4/redis/goredis/v9"
	"github.com/redis/go-redis/v9"

	"github.com/seckill-lab/seckill/lockimpl"
)

// DefaultPrefix namespaces the Redis keys when Options.Prefix is empty.
const DefaultPrefix = "seckill:redlock:"

// backoff is the pause between two acquisition rounds: 1-2ms at first,
// doubling to at most 8-16ms, jittered. Short first pauses hand a released
// lock on quickly (with the service's local queue at most one waiter per
// instance polls); the cap bounds the rounds of a long wait.
var backoff = lockimpl.Backoff{Base: 2 * time.Millisecond, Max: 16 * time.Millisecond}

// attemptTimeout bounds one acquisition attempt across the masters.
const attemptTimeout = 2 * time.Second

// Locker is the Redlock lock. Build it with New; it is safe for concurrent
// use.
type Locker struct {
	rs      *redsync.Redsync
	pools   []redsyncredis.Pool
	ttl     time.Duration
	prefix  string
	noRenew bool
	count   func(name string)
}

var _ lockimpl.Locker = (*Locker)(nil)

// New returns a Locker over clients, one per independent Redis master (the
// caller owns them). Options: TTL (default lockimpl.DefaultTTL) is the lock
// expiry, extended at TTL/3 while held; Prefix defaults to DefaultPrefix.
func New(clients []redis.UniversalClient, opts lockimpl.Options) *Locker {
	pools := make([]redsyncredis.Pool, 0, len(clients))
	for _, c := range clients {
		pools = append(pools, goredis.NewPool(c))
	}
	return &Locker{rs: redsync.New(pools...), pools: pools, ttl: opts.TTLOrDefault(), prefix: opts.PrefixOr(DefaultPrefix), noRenew: opts.NoRenew, count: opts.CountOrDrop()}
}

// Key returns the Redis key (on every master) of the lock named key.
func (l *Locker) Key(key string) string { return l.prefix + key }

// attempt makes one redsync acquisition. It runs under a context that is not
// cancelled with ctx so that a failed attempt always finishes releasing the
// masters it did take: a cancelled Lock leaves nothing behind.
func (l *Locker) attempt(ctx context.Context, key string) (*redsync.Mutex, error) {
	m := l.rs.NewMutex(l.Key(key), redsync.WithExpiry(l.ttl), redsync.WithTries(1))
	actx, cancel := context.WithTimeout(context.WithoutCancel(ctx), attemptTimeout)
	defer cancel()
	if err := m.TryLockContext(actx); err != nil {
		down := unreachable(err)
		if down > len(l.pools)-quorum(len(l.pools)) {
			l.count(lockimpl.RoundUnreachable)
			return nil, fmt.Errorf("redlock: trylock %q: %d of %d servers unreachable, no quorum possible: %w", key, down, len(l.pools), err)
		}
		if down+taken(err) >= len(l.pools) {
			l.count(lockimpl.RoundTaken)
		} else {
			l.count(lockimpl.RoundSplit)
		}
		// Not enough votes, but a quorum of servers answered: others hold
		// the lock, or the votes split. Retry.
		return nil, fmt.Errorf("redlock: trylock %q: %w (%v)", key, lockimpl.ErrLocked, err)
	}
	l.count(lockimpl.RoundAcquired)
	return m, nil
}

// unreachable counts the servers that a failed round could not reach at
// all (a redsync.RedisError that is not a timeout: connection refused, no
// route) in redsync's joined error. Votes taken by another owner
// (ErrNodeTaken, ErrTaken) are not failures of the server, and a server
// that was merely slow to answer may answer the next round: both are a
// lost round, retried until the caller's wait runs out.
func unreachable(err error) int {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		n := 0
		for _, e := range j.Unwrap() {
			n += unreachable(e)
		}
		return n
	}
	var re *redsync.RedisError
	if !errors.As(err, &re) {
		return 0
	}
	var ne net.Error
	if errors.Is(re.Err, context.DeadlineExceeded) || errors.As(re.Err, &ne) && ne.Timeout() {
		return 0
	}
	return 1
}

// taken counts the masters another owner held in a failed round's error.
func taken(err error) int {
	var all *redsync.ErrTaken
	if errors.As(err, &all) {
		return len(all.Nodes)
	}
	n := 0
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		for _, e := range j.Unwrap() {
			n += taken(e)
		}
		return n
	}
	var one *redsync.ErrNodeTaken
	if errors.As(err, &one) {
		return 1
	}
	return 0
}

// TryLock makes one attempt on all masters and returns lockimpl.ErrLocked
// when no quorum was reached because others hold the lock.
func (l *Locker) TryLock(ctx context.Context, key string) (*lockimpl.Lease, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("redlock: trylock %q: %w", key, err)
	}
	m, err := l.attempt(ctx, key)
	if err != nil {
		return nil, err
	}
	return l.hold(key, m), nil
}

// Lock retries one-round acquisitions, pausing between rounds as backoff
// says (1-2ms at first, doubling to at most 8-16ms, jittered), until one succeeds
// or ctx is done.
func (l *Locker) Lock(ctx context.Context, key string) (*lockimpl.Lease, error) {
	lease, err := lockimpl.Poll(ctx, backoff, func(ctx context.Context) (*lockimpl.Lease, error) {
		m, err := l.attempt(ctx, key)
		if err != nil {
			return nil, err
		}
		return l.hold(key, m), nil
	})
	if err != nil && ctx.Err() != nil {
		return nil, fmt.Errorf("redlock: lock %q: %w", key, ctx.Err())
	}
	return lease, err
}

// hold builds the lease and starts the extender.
func (l *Locker) hold(key string, m *redsync.Mutex) *lockimpl.Lease {
	var mu sync.Mutex // redsync.Mutex is not safe for concurrent use
	stopExtend := func() {}
	lease := lockimpl.NewLease(key, 0, func(ctx context.Context) error {
		stopExtend()
		mu.Lock()
		defer mu.Unlock()
		ok, err := m.UnlockContext(ctx)
		if !ok {
			if err == nil {
				err = errors.New("no quorum")
			}
			return fmt.Errorf("redlock: unlock %q: %w: %w", key, lockimpl.ErrNotHeld, err)
		}
		return nil
	})
	lease.SetValidUntil(m.Until())
	if l.noRenew { // Options.NoRenew: the keys expire after TTL; the holder knows it
		stopExtend = lockimpl.ExpireAfter(lease, l.ttl)
		return lease
	}
	// A failed extension means no quorum still holds the lock: lost at once.
	stopExtend = lockimpl.KeepAlive(l.ttl, func(ctx context.Context) error {
		mu.Lock()
		ok, err := m.ExtendContext(ctx)
		until := m.Until()
		mu.Unlock()
		if ok {
			lease.SetValidUntil(until)
		}
		if !ok {
			if err == nil {
				err = redsync.ErrExtendFailed
			}
			return fmt.Errorf("redlock: extend %q: %w: %w", key, lockimpl.ErrNotHeld, err)
		}
		return nil
	}, lease.MarkLost)
	return lease
}

// Backend is what the service needs of Redlock on its servers: a Locker per
// setting, a quorum Ping and Clear.
type Backend struct {
	clients []redis.UniversalClient
}

// NewBackend returns the backend over clients, one per independent Redis
// master (owned by the caller).
func NewBackend(clients []redis.UniversalClient) *Backend { return &Backend{clients: clients} }

// NewLocker returns a Locker for opts.
func (b *Backend) NewLocker(_ context.Context, opts lockimpl.Options) (lockimpl.Locker, error) {
	return New(b.clients, opts), nil
}

// quorum is the majority of n masters.
func quorum(n int) int { return n/2 + 1 }

// each runs f on every master at once and returns how many succeeded and
// the failures.
func (b *Backend) each(ctx context.Context, f func(ctx context.Context, c redis.UniversalClient) error) (int, error) {
	errs := make([]error, len(b.clients))
	var wg sync.WaitGroup
	for i, c := range b.clients {
		wg.Go(func() { errs[i] = f(ctx, c) })
	}
	wg.Wait()
	ok := 0
	for _, err := range errs {
		if err == nil {
			ok++
		}
	}
	return ok, errors.Join(errs...)
}

// Ping succeeds when a quorum of the masters answers: Redlock works with a
// minority down.
func (b *Backend) Ping(ctx context.Context) error {
	up, err := b.each(ctx, func(ctx context.Context, c redis.UniversalClient) error { return c.Ping(ctx).Err() })
	if up < quorum(len(b.clients)) {
		return fmt.Errorf("redlock: only %d of %d servers answer, %d needed: %w", up, len(b.clients), quorum(len(b.clients)), err)
	}
	return nil
}

// Clear deletes key's lock on every master that answers; it fails only when
// fewer than a quorum did (a minority that is down holds no lock a quorum
// could grant).
func (b *Backend) Clear(ctx context.Context, key string) error {
	full := DefaultPrefix + key
	ok, err := b.each(ctx, func(ctx context.Context, c redis.UniversalClient) error { return c.Del(ctx, full).Err() })
	if ok < quorum(len(b.clients)) {
		return fmt.Errorf("redlock: clear %q on %d of %d servers: %w", key, ok, len(b.clients), err)
	}
	return nil
}

// Close does nothing: the clients belong to the caller.
func (b *Backend) Close() error { return nil }
