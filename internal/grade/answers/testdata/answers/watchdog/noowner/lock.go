// Answer "noowner" to exercise 2: the renewal PEXPIREs the key without checking its owner. A grader fixture
// (internal/grade TestAnswers), compiled in place of exercises/watchdog/lock.go.
//
// Package watchdog is workshop exercise 2 (`seckill grade watchdog`): the
// Redis lock of exercise 1, done right, plus the renewal Redisson calls its
// watchdog (Chapter 1 "锁续期").
//
// The lock below takes its key with SET NX PX and releases it with a Lua
// compare-and-delete: that is exercise 1's answer, given. What it lacks is
// renewal: a holder whose work outlasts the TTL loses the key while it
// still works, a second holder gets in, and the stock is sold twice (the
// grader's bench runs work longer than the TTL). You own watch: while the
// lease is held, renew the key's expiry every TTL/3 (lockimpl.KeepAlive
// runs the loop; you write the renewal, a Lua script that PEXPIREs the key
// only while it holds this owner, and move Lease.SetValidUntil on), report
// a renewal that finds the key gone with lease.MarkLost, and stop renewing
// at release. With Options.NoRenew set, do not renew (the lab's stand-in
// for a pause that also stops the watchdog). The answer key is
// lockimpl/redislock (strategy `redis`): see its newHold.
package watchdog

import (
	"context"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/redis/go-redis/v9"

	"github.com/seckill-lab/seckill/lockimpl"
)

// DefaultPrefix namespaces the lock keys when Options.Prefix is empty.
const DefaultPrefix = "seckill:ex:watchdog:"

// releaseScript deletes the key only while it holds ARGV[1]: 1 deleted, 0
// not ours (given).
var releaseScript = redis.NewScript(`
if redis.call("GET", KEYS[1]) == ARGV[1] then
  return redis.call("DEL", KEYS[1])
end
return 0`)

// renewScript extends the key only while it holds ARGV[1]: 1 renewed, 0
// not ours.
var renewScript = redis.NewScript(`
if redis.call("GET", KEYS[1]) == ARGV[1] then
  return redis.call("PEXPIRE", KEYS[1], ARGV[2])
end
return 0`)

// Locker is your lock. New builds one per service instance; it must be safe
// for concurrent use.
type Locker struct {
	client  redis.UniversalClient
	prefix  string
	ttl     time.Duration
	noRenew bool
}

var _ lockimpl.Locker = (*Locker)(nil)

// New returns a Locker over client (owned by the caller). opts.TTL (default
// lockimpl.DefaultTTL) is the key's expiry; opts.NoRenew switches renewal
// off.
func New(client redis.UniversalClient, opts lockimpl.Options) *Locker {
	return &Locker{client: client, prefix: opts.PrefixOr(DefaultPrefix), ttl: opts.TTLOrDefault(), noRenew: opts.NoRenew}
}

// Key returns the Redis key that backs the lock named key.
func (l *Locker) Key(key string) string { return l.prefix + key }

// TryLock makes one SET NX PX (given). It returns an error wrapping
// lockimpl.ErrLocked when another owner holds the lock.
func (l *Locker) TryLock(ctx context.Context, key string) (*lockimpl.Lease, error) {
	full := l.Key(key)
	owner := uuid.NewString()
	start := time.Now()
	ok, err := l.client.SetNX(ctx, full, owner, l.ttl).Result()
	if err != nil {
		return nil, fmt.Errorf("watchdog: set nx px %q: %w", full, err)
	}
	if !ok {
		return nil, fmt.Errorf("watchdog: trylock %q: %w", key, lockimpl.ErrLocked)
	}
	var stop func()
	lease := lockimpl.NewLease(key, 0, func(ctx context.Context) error {
		stop() // no renewal may run once the release starts
		n, err := releaseScript.Run(ctx, l.client, []string{full}, owner).Int64()
		if err != nil {
			return fmt.Errorf("watchdog: release %q: %w", full, err)
		}
		if n == 0 {
			return fmt.Errorf("watchdog: unlock %q: %w", key, lockimpl.ErrNotHeld)
		}
		return nil
	})
	lease.SetValidUntil(start.Add(l.ttl))
	stop = l.watch(lease, full, owner, start)
	return lease, nil
}

// watch keeps the lease's key alive while it is held and returns the
// function that stops it (called first thing at release).
//
// TODO(exercise 2): unless l.noRenew, start lockimpl.KeepAlive(l.ttl,
// renew, lease.MarkLost) where renew runs a Lua script that PEXPIREs full
// to l.ttl only while GET full == owner (an error wrapping
// lockimpl.ErrNotHeld when it does not), and on success calls
// lease.SetValidUntil(time.Now().Add(l.ttl)). The starter never renews: it
// only marks the lease lost when its TTL runs out.
func (l *Locker) watch(lease *lockimpl.Lease, full, owner string, start time.Time) (stop func()) {
	if l.noRenew {
		return lockimpl.ExpireAfter(lease, l.ttl-time.Since(start))
	}
	_ = owner
	renew := func(ctx context.Context) error {
		if err := l.client.PExpire(ctx, full, l.ttl).Err(); err != nil {
			return fmt.Errorf("watchdog: pexpire %q: %w", full, err)
		}
		lease.SetValidUntil(time.Now().Add(l.ttl))
		return nil
	}
	return lockimpl.KeepAlive(l.ttl, renew, lease.MarkLost)
}

// Lock retries TryLock every 5-10 ms until it succeeds or ctx is done
// (given).
func (l *Locker) Lock(ctx context.Context, key string) (*lockimpl.Lease, error) {
	lease, err := lockimpl.Poll(ctx, lockimpl.Backoff{Base: 10 * time.Millisecond}, func(ctx context.Context) (*lockimpl.Lease, error) {
		return l.TryLock(ctx, key)
	})
	if err != nil && ctx.Err() != nil {
		return nil, fmt.Errorf("watchdog: lock %q: %w", key, ctx.Err())
	}
	return lease, err
}
