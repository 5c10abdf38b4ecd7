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
	"math/rand/v2"
	"sync"
	"time"

	"github.com/go-redsync/redsync/v4"
	redsyncredis "github.com/go-redsync/redsync/v4/redis"
	"github.com/go-redsync/redsync/v4/redis/goredis/v9"
	"github.com/redis/go-redis/v9"

	"github.com/seckill-lab/seckill/lockimpl"
)

// DefaultPrefix namespaces the Redis keys when Options.Prefix is empty.
const DefaultPrefix = "seckill:lock:"

// attemptTimeout bounds one acquisition attempt across the masters.
const attemptTimeout = 2 * time.Second

// Locker is the Redlock lock. Build it with New; it is safe for concurrent
// use.
type Locker struct {
	rs      *redsync.Redsync
	ttl     time.Duration
	prefix  string
	noRenew bool
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
	return &Locker{rs: redsync.New(pools...), ttl: opts.TTLOrDefault(), prefix: opts.PrefixOr(DefaultPrefix), noRenew: opts.NoRenew}
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
		var taken *redsync.ErrTaken
		if errors.Is(err, redsync.ErrFailed) || errors.As(err, &taken) {
			return nil, fmt.Errorf("redlock: trylock %q: %w (%v)", key, lockimpl.ErrLocked, err)
		}
		return nil, fmt.Errorf("redlock: trylock %q: %w", key, err)
	}
	return m, nil
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

// Lock retries one-attempt acquisitions with a random 2-10ms pause until it
// succeeds or ctx is done.
func (l *Locker) Lock(ctx context.Context, key string) (*lockimpl.Lease, error) {
	for {
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("redlock: lock %q: %w", key, err)
		}
		m, err := l.attempt(ctx, key)
		if err == nil {
			return l.hold(key, m), nil
		}
		if !errors.Is(err, lockimpl.ErrLocked) {
			return nil, err
		}
		t := time.NewTimer(2*time.Millisecond + rand.N(8*time.Millisecond))
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return nil, fmt.Errorf("redlock: lock %q: %w", key, ctx.Err())
		}
	}
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
	if l.noRenew { // Options.NoRenew: the keys expire after TTL
		return lease
	}
	// A failed extension means no quorum still holds the lock: lost at once.
	stopExtend = lockimpl.KeepAlive(l.ttl, lease, func(ctx context.Context) error {
		mu.Lock()
		ok, err := m.ExtendContext(ctx)
		mu.Unlock()
		if !ok {
			if err == nil {
				err = redsync.ErrExtendFailed
			}
			return fmt.Errorf("redlock: extend %q: %w: %w", key, lockimpl.ErrNotHeld, err)
		}
		return nil
	})
	return lease
}
