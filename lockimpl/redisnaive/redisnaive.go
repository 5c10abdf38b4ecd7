// Package redisnaive builds the sources' DELIBERATELY FLAWED Redis locks
// (Chapter 1, first versions), faithfully, so the harness can show how they
// fail. Do not use them to protect anything.
//
//   - Spin (`redis-spin`): SETNX in a busy loop, no TTL, plain DEL. It
//     excludes correctly but burns CPU and round trips while waiting, and a
//     holder that crashes blocks the key forever (nothing expires it).
//   - TTL (`redis-ttl`): SET NX PX ttl with a 5-10ms sleep between attempts,
//     plain DEL without an owner check. It excludes correctly while the work
//     is shorter than the TTL; when the work takes longer, the key expires, a
//     second holder gets in while the first still works, and the first's DEL
//     then removes the second holder's lock.
//   - Owner (`redis-owner`): SET NX PX ttl with a unique owner value, the
//     same sleep-retry, released by GET, a compare in the client, then DEL:
//     two commands, no Lua (Chapter 1 "锁被误删", before the Lua step). The
//     owner check stops a late holder from deleting a lock it sees is not
//     its own, but not one that becomes someone else's between the GET and
//     the DEL: when the key expires in that window (Options.ReleasePause
//     widens it), the next holder takes it and the DEL removes that
//     holder's lock, letting a third in while the second still works.
//
// All three hand out token 0, have no watchdog and never report a lost
// lease.
// The key is "<prefix><key>" with the default prefix "seckill:naive:".
// NewSpinBackend and NewTTLBackend give the service what it needs of each:
// a Locker per setting, a Ping of the server and a Clear of a key.
package redisnaive

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/redis/go-redis/v9"

	"github.com/seckill-lab/seckill/lockimpl"
)

// DefaultPrefix namespaces the Redis keys when Options.Prefix is empty.
const DefaultPrefix = "seckill:naive:"

// ttlBackoff is redis-ttl's sleep between attempts: 5-10ms.
var ttlBackoff = lockimpl.Backoff{Base: 10 * time.Millisecond}

// Spin is the SETNX busy-loop lock. Safe for concurrent use.
type Spin struct {
	client redis.UniversalClient
	prefix string
	count  func(string)
}

// TTL is the SET NX PX lock with sleep-retry and an unchecked DEL. Safe for
// concurrent use.
type TTL struct {
	client redis.UniversalClient
	prefix string
	ttl    time.Duration
	count  func(string)
}

var (
	_ lockimpl.Locker = (*Spin)(nil)
	_ lockimpl.Locker = (*TTL)(nil)
)

// NewSpin returns the busy-loop lock over client (owned by the caller).
// Options.TTL is ignored: this lock has none. Prefix defaults to
// DefaultPrefix.
func NewSpin(client redis.UniversalClient, opts lockimpl.Options) *Spin {
	return &Spin{client: client, prefix: opts.PrefixOr(DefaultPrefix), count: opts.CountOrDrop()}
}

// NewTTL returns the SET NX PX lock over client (owned by the caller).
// Options.TTL (default lockimpl.DefaultTTL) is the key's PX; it is never
// renewed. Prefix defaults to DefaultPrefix.
func NewTTL(client redis.UniversalClient, opts lockimpl.Options) *TTL {
	return &TTL{client: client, prefix: opts.PrefixOr(DefaultPrefix), ttl: opts.TTLOrDefault(), count: opts.CountOrDrop()}
}

// Key returns the Redis key that backs the lock named key.
func (s *Spin) Key(key string) string { return s.prefix + key }

// Key returns the Redis key that backs the lock named key.
func (s *TTL) Key(key string) string { return s.prefix + key }

// plainDel is the sources' unlock: DEL whatever is there, ours or not. It only
// reports ErrNotHeld when there was nothing to delete at all.
func plainDel(client redis.UniversalClient, full, key string) func(context.Context) error {
	return func(ctx context.Context) error {
		n, err := client.Del(ctx, full).Result()
		if err != nil {
			return fmt.Errorf("redisnaive: del %q: %w", full, err)
		}
		if n == 0 {
			return fmt.Errorf("redisnaive: unlock %q: %w", key, lockimpl.ErrNotHeld)
		}
		return nil
	}
}

// TryLock makes one SETNX (counted: lockimpl.Attempt).
func (s *Spin) TryLock(ctx context.Context, key string) (*lockimpl.Lease, error) {
	full := s.Key(key)
	s.count(lockimpl.Attempt)
	ok, err := s.client.SetNX(ctx, full, "1", 0).Result()
	if err != nil {
		return nil, fmt.Errorf("redisnaive: setnx %q: %w", full, err)
	}
	if !ok {
		return nil, fmt.Errorf("redisnaive: trylock %q: %w", key, lockimpl.ErrLocked)
	}
	return lockimpl.NewLease(key, 0, plainDel(s.client, full, key)), nil
}

// Lock repeats SETNX without pause until it succeeds or ctx is done.
func (s *Spin) Lock(ctx context.Context, key string) (*lockimpl.Lease, error) {
	lease, err := lockimpl.Poll(ctx, lockimpl.Backoff{}, func(ctx context.Context) (*lockimpl.Lease, error) { return s.TryLock(ctx, key) })
	if err != nil && ctx.Err() != nil {
		return nil, fmt.Errorf("redisnaive: lock %q: %w", key, ctx.Err())
	}
	return lease, err
}

// TryLock makes one SET NX PX. The value names the holder only so that the
// lab can count a release that deletes another's lock: the release itself
// does not look at it (see countingDel).
func (s *TTL) TryLock(ctx context.Context, key string) (*lockimpl.Lease, error) {
	full := s.Key(key)
	owner := uuid.NewString()
	ok, err := s.client.SetNX(ctx, full, owner, s.ttl).Result()
	if err != nil {
		return nil, fmt.Errorf("redisnaive: set nx px %q: %w", full, err)
	}
	if !ok {
		return nil, fmt.Errorf("redisnaive: trylock %q: %w", key, lockimpl.ErrLocked)
	}
	return lockimpl.NewLease(key, 0, countingDel(s.client, full, key, owner, s.count)), nil
}

// countingDel is plainDel that also learns whose lock it deleted: GETDEL
// deletes whatever is there, as DEL does, and returns it, so a release that
// removed another holder's lock is counted (lockimpl.DeletedAnother).
func countingDel(client redis.UniversalClient, full, key, owner string, count func(string)) func(context.Context) error {
	return func(ctx context.Context) error {
		v, err := client.GetDel(ctx, full).Result()
		switch {
		case errors.Is(err, redis.Nil):
			return fmt.Errorf("redisnaive: unlock %q: %w", key, lockimpl.ErrNotHeld)
		case err != nil:
			return fmt.Errorf("redisnaive: del %q: %w", full, err)
		case v != owner:
			count(lockimpl.DeletedAnother)
		}
		return nil
	}
}

// Lock repeats SET NX PX with a 5-10ms sleep between attempts until it
// succeeds or ctx is done.
func (s *TTL) Lock(ctx context.Context, key string) (*lockimpl.Lease, error) {
	lease, err := lockimpl.Poll(ctx, ttlBackoff, func(ctx context.Context) (*lockimpl.Lease, error) { return s.TryLock(ctx, key) })
	if err != nil && ctx.Err() != nil {
		return nil, fmt.Errorf("redisnaive: lock %q: %w", key, ctx.Err())
	}
	return lease, err
}

// Owner is the SET NX PX lock with an owner value, released by GET, a
// client-side compare and DEL, without Lua. Safe for concurrent use.
type Owner struct {
	client redis.UniversalClient
	prefix string
	ttl    time.Duration
	pause  time.Duration
	count  func(string)
}

var _ lockimpl.Locker = (*Owner)(nil)

// NewOwner returns the owner-checked lock over client (owned by the
// caller). Options.TTL (default lockimpl.DefaultTTL) is the key's PX,
// never renewed; Options.ReleasePause is slept between the GET and the
// DEL of every release. Prefix defaults to DefaultPrefix.
func NewOwner(client redis.UniversalClient, opts lockimpl.Options) *Owner {
	return &Owner{client: client, prefix: opts.PrefixOr(DefaultPrefix), ttl: opts.TTLOrDefault(), pause: opts.ReleasePause, count: opts.CountOrDrop()}
}

// Key returns the Redis key that backs the lock named key.
func (o *Owner) Key(key string) string { return o.prefix + key }

// TryLock makes one SET key owner NX PX ttl.
func (o *Owner) TryLock(ctx context.Context, key string) (*lockimpl.Lease, error) {
	full := o.Key(key)
	owner := uuid.NewString()
	ok, err := o.client.SetNX(ctx, full, owner, o.ttl).Result()
	if err != nil {
		return nil, fmt.Errorf("redisnaive: set nx px %q: %w", full, err)
	}
	if !ok {
		return nil, fmt.Errorf("redisnaive: trylock %q: %w", key, lockimpl.ErrLocked)
	}
	return lockimpl.NewLease(key, 0, o.release(full, key, owner)), nil
}

// Lock repeats TryLock with a 5-10ms sleep between attempts until it
// succeeds or ctx is done.
func (o *Owner) Lock(ctx context.Context, key string) (*lockimpl.Lease, error) {
	lease, err := lockimpl.Poll(ctx, ttlBackoff, func(ctx context.Context) (*lockimpl.Lease, error) { return o.TryLock(ctx, key) })
	if err != nil && ctx.Err() != nil {
		return nil, fmt.Errorf("redisnaive: lock %q: %w", key, ctx.Err())
	}
	return lease, err
}

// release is the flawed unlock: GET, compare in the client, (pause,) DEL.
// The check and the delete are two commands, so the DEL can remove a key
// that became another owner's after the GET.
func (o *Owner) release(full, key, owner string) func(context.Context) error {
	return func(ctx context.Context) error {
		v, err := o.client.Get(ctx, full).Result()
		if errors.Is(err, redis.Nil) || err == nil && v != owner {
			return fmt.Errorf("redisnaive: unlock %q: %w", key, lockimpl.ErrNotHeld)
		}
		if err != nil {
			return fmt.Errorf("redisnaive: get %q: %w", full, err)
		}
		if o.pause > 0 {
			t := time.NewTimer(o.pause)
			select {
			case <-t.C:
			case <-ctx.Done():
				t.Stop()
				return fmt.Errorf("redisnaive: unlock %q: pause before DEL: %w", key, ctx.Err())
			}
		}
		// GETDEL deletes as DEL does, and says whose lock it was.
		v, err = o.client.GetDel(ctx, full).Result()
		if err != nil && !errors.Is(err, redis.Nil) {
			return fmt.Errorf("redisnaive: del %q: %w", full, err)
		}
		if err == nil && v != owner {
			o.count(lockimpl.DeletedAnother)
		}
		return nil
	}
}

// Backend is what the service needs of one of these locks on its Redis
// server: a Locker per setting, Ping and Clear.
type Backend struct {
	client redis.UniversalClient
	build  func(redis.UniversalClient, lockimpl.Options) lockimpl.Locker
}

// NewSpinBackend returns the backend of the busy-loop lock over client
// (owned by the caller).
func NewSpinBackend(client redis.UniversalClient) *Backend {
	return &Backend{client: client, build: func(c redis.UniversalClient, o lockimpl.Options) lockimpl.Locker { return NewSpin(c, o) }}
}

// NewTTLBackend returns the backend of the SET NX PX lock over client
// (owned by the caller).
func NewTTLBackend(client redis.UniversalClient) *Backend {
	return &Backend{client: client, build: func(c redis.UniversalClient, o lockimpl.Options) lockimpl.Locker { return NewTTL(c, o) }}
}

// NewOwnerBackend returns the backend of the owner-checked lock over
// client (owned by the caller).
func NewOwnerBackend(client redis.UniversalClient) *Backend {
	return &Backend{client: client, build: func(c redis.UniversalClient, o lockimpl.Options) lockimpl.Locker { return NewOwner(c, o) }}
}

// NewLocker returns the lock for opts (the default prefix).
func (b *Backend) NewLocker(_ context.Context, opts lockimpl.Options) (lockimpl.Locker, error) {
	return b.build(b.client, opts), nil
}

// Ping checks the server.
func (b *Backend) Ping(ctx context.Context) error {
	if err := b.client.Ping(ctx).Err(); err != nil {
		return fmt.Errorf("redisnaive: ping: %w", err)
	}
	return nil
}

// Clear deletes key's lock.
func (b *Backend) Clear(ctx context.Context, key string) error {
	if err := b.client.Del(ctx, DefaultPrefix+key).Err(); err != nil {
		return fmt.Errorf("redisnaive: clear %q: %w", key, err)
	}
	return nil
}

// Close does nothing: the client belongs to the caller.
func (b *Backend) Close() error { return nil }
