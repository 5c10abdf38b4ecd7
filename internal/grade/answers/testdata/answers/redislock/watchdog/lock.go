// Answer "watchdog" to exercise 1: SET NX PX, a Lua compare-and-delete, and
// a watchdog that renews the key every TTL/3 while it is held, whatever
// Options.NoRenew says (exercise 1's Locker has no such switch): a right
// answer that goes further than the exercise asks. A grader fixture
// (internal/grade TestAnswers), compiled in place of
// exercises/redislock/lock.go; it must pass.
package redislock

import (
	"context"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/redis/go-redis/v9"

	"github.com/seckill-lab/seckill/lockimpl"
)

// releaseScript deletes the key only while it holds ARGV[1]: 1 deleted, 0
// not ours.
var releaseScript = redis.NewScript(`
if redis.call("GET", KEYS[1]) == ARGV[1] then
  return redis.call("DEL", KEYS[1])
end
return 0`)

// renewScript moves the key's expiry to ARGV[2] ms only while it holds
// ARGV[1]: 1 renewed, 0 not ours.
var renewScript = redis.NewScript(`
if redis.call("GET", KEYS[1]) == ARGV[1] then
  return redis.call("PEXPIRE", KEYS[1], ARGV[2])
end
return 0`)

// DefaultPrefix namespaces the lock keys when Options.Prefix is empty.
const DefaultPrefix = "seckill:ex:redislock:"

// Locker is a Redis lock with a watchdog; safe for concurrent use.
type Locker struct {
	client redis.UniversalClient
	prefix string
	ttl    time.Duration
}

var _ lockimpl.Locker = (*Locker)(nil)

// New returns a Locker over client (owned by the caller). opts.TTL (default
// lockimpl.DefaultTTL) is the key's expiry, renewed every TTL/3 while held.
func New(client redis.UniversalClient, opts lockimpl.Options) *Locker {
	return &Locker{client: client, prefix: opts.PrefixOr(DefaultPrefix), ttl: opts.TTLOrDefault()}
}

// Key returns the Redis key that backs the lock named key.
func (l *Locker) Key(key string) string { return l.prefix + key }

// TryLock makes one attempt. It returns an error wrapping
// lockimpl.ErrLocked when another owner holds the lock.
func (l *Locker) TryLock(ctx context.Context, key string) (*lockimpl.Lease, error) {
	full := l.Key(key)
	owner := uuid.NewString()
	start := time.Now()
	ok, err := l.client.SetNX(ctx, full, owner, l.ttl).Result()
	if err != nil {
		return nil, fmt.Errorf("redislock: set nx %q: %w", full, err)
	}
	if !ok {
		return nil, fmt.Errorf("redislock: trylock %q: %w", key, lockimpl.ErrLocked)
	}
	var stop func()
	lease := lockimpl.NewLease(key, 0, func(ctx context.Context) error {
		stop() // no renewal runs once the release starts
		n, err := releaseScript.Run(ctx, l.client, []string{full}, owner).Int64()
		if err != nil {
			return fmt.Errorf("redislock: release %q: %w", full, err)
		}
		if n == 0 {
			return fmt.Errorf("redislock: unlock %q: %w", key, lockimpl.ErrNotHeld)
		}
		return nil
	})
	lease.SetValidUntil(start.Add(l.ttl))
	stop = lockimpl.KeepAlive(l.ttl, func(ctx context.Context) error {
		n, err := renewScript.Run(ctx, l.client, []string{full}, owner, l.ttl.Milliseconds()).Int64()
		if err != nil {
			return fmt.Errorf("redislock: renew %q: %w", full, err)
		}
		if n == 0 {
			return fmt.Errorf("redislock: renew %q: %w", key, lockimpl.ErrNotHeld)
		}
		lease.SetValidUntil(time.Now().Add(l.ttl))
		return nil
	}, lease.MarkLost)
	return lease, nil
}

// Lock retries TryLock every 5-10 ms until it succeeds or ctx is done.
func (l *Locker) Lock(ctx context.Context, key string) (*lockimpl.Lease, error) {
	lease, err := lockimpl.Poll(ctx, lockimpl.Backoff{Base: 10 * time.Millisecond}, func(ctx context.Context) (*lockimpl.Lease, error) {
		return l.TryLock(ctx, key)
	})
	if err != nil && ctx.Err() != nil {
		return nil, fmt.Errorf("redislock: lock %q: %w", key, ctx.Err())
	}
	return lease, err
}
