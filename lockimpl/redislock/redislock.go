// Package redislock is the finished single-Redis lock of the `redis`
// strategy (Chapter 1's Lua scripts and Redisson section):
//
//   - every lease has a unique owner value (the Locker's UUID plus a
//     per-lease sequence number);
//   - acquire is ONE Lua script on the source's reentrant hash (HINCRBY owner 1
//   - PEXPIRE ttl) that, in the same script, INCRs the per-key fence
//     counter "<key>:fence" and returns it as the fencing token;
//   - release is a Lua compare-and-delete: it decrements the reentrant count
//     of our owner only, DELs the hash when the count reaches 0 and PUBLISHes
//     an unlock message on "<key>:unlock"; releasing a lock that is no longer
//     ours returns an error wrapping lockimpl.ErrNotHeld;
//   - Reenter bumps the count of a held lease's owner (reentrancy);
//   - a watchdog (lockimpl.KeepAlive) renews PEXPIRE at TTL/3 while the
//     lease is held (Lua: only while our owner is still in the hash) and
//     marks the lease lost when the lock is gone or no renewal succeeded for
//     a whole TTL;
//   - waiters are woken by the unlock message: each Locker keeps ONE pattern
//     subscription ("<prefix>*:unlock") and fans the messages out to its
//     waiters per key, one waiter per message; a fallback timer of
//     min(remaining PTTL, 100ms) bounds the wait if a message is missed.
//
// Fencing tokens survive a restart of the server. Redis runs without
// persistence in the lab, so a restart loses the token counter; a plain INCR
// would restart at 1 while the resource's fence still holds the last token
// it accepted, and every fenced holder would be refused as stale forever.
// A failover does the same to a counter that exists: the replica promoted
// may have missed the last increments (replication is asynchronous), and
// measured here every fenced purchase after a failover was then refused.
// So each token is max(counter+1, the server's clock in microseconds,
// Redis TIME), stored back: tokens issued after a restart or a failover
// start above every token issued before it, as long as fewer than a
// million tokens per second were issued and the servers' clocks did not go
// back. The tokens are large (about 1.7e15), and
// fit a MySQL BIGINT UNSIGNED and a float64 exactly.
//
// Keys: "<prefix><key>" (the hash), "<prefix><key>:fence" (the token
// counter, kept until Clear so tokens never go back) and the channel
// "<prefix><key>:unlock". The default prefix is "seckill:lock:". With Redis
// Cluster, put a hash tag in the key ("{goods-1}") so the hash and its fence
// share a slot.
//
// It is a single-master lock: a failover that loses the hash loses the lock
// (see the redlock package for the quorum variant).
package redislock

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	"github.com/redis/go-redis/v9"

	"github.com/seckill-lab/seckill/lockimpl"
)

// DefaultPrefix namespaces the Redis keys when Options.Prefix is empty.
const DefaultPrefix = "seckill:lock:"

// maxWait bounds one wait for the unlock message before the waiter retries
// on its own.
const maxWait = 100 * time.Millisecond

// Acquire: KEYS[1]=hash, KEYS[2]=fence; ARGV[1]=owner, ARGV[2]=pttl.
// Returns {1, token} when taken, {0, pttl} when held by someone else. The
// token is max(counter+1, the server's clock in microseconds), so tokens
// keep increasing when the counter is gone (a new key, a reset, a restart
// without persistence) or went back (a failover to a replica that missed
// the last increments); see the package doc.
var acquireScript = redis.NewScript(`
if redis.call('EXISTS', KEYS[1]) == 0 then
  redis.call('HINCRBY', KEYS[1], ARGV[1], 1)
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  local t = redis.call('TIME')
  local now = t[1] .. string.format('%06d', tonumber(t[2]))
  local n = redis.call('INCR', KEYS[2])
  if n < tonumber(now) then
    redis.call('SET', KEYS[2], now)
    n = tonumber(now)
  end
  return {1, n}
end
return {0, redis.call('PTTL', KEYS[1])}
`)

// Reenter: KEYS[1]=hash; ARGV[1]=owner, ARGV[2]=pttl. Returns the new count,
// or 0 when the owner does not hold the lock.
var reenterScript = redis.NewScript(`
if redis.call('HEXISTS', KEYS[1], ARGV[1]) == 1 then
  local n = redis.call('HINCRBY', KEYS[1], ARGV[1], 1)
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  return n
end
return 0
`)

// Release: KEYS[1]=hash, KEYS[2]=channel; ARGV[1]=owner, ARGV[2]=pttl.
// Returns -1 when the owner does not hold the lock, else the count left.
var releaseScript = redis.NewScript(`
if redis.call('HEXISTS', KEYS[1], ARGV[1]) == 0 then
  return -1
end
local n = redis.call('HINCRBY', KEYS[1], ARGV[1], -1)
if n > 0 then
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  return n
end
redis.call('DEL', KEYS[1])
redis.call('PUBLISH', KEYS[2], ARGV[1])
return 0
`)

// Renew: KEYS[1]=hash; ARGV[1]=owner, ARGV[2]=pttl. 1 when renewed, 0 when
// the owner no longer holds the lock.
var renewScript = redis.NewScript(`
if redis.call('HEXISTS', KEYS[1], ARGV[1]) == 1 then
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  return 1
end
return 0
`)

// Locker is the Redis lock. Build it with New; it is safe for concurrent
// use. Close stops its subscription.
type Locker struct {
	client  redis.UniversalClient
	ttl     time.Duration
	prefix  string
	noRenew bool

	subMu   sync.Mutex
	closed  bool
	pubsub  *redis.PubSub
	subDone chan struct{}

	wmu     sync.Mutex
	waiters map[string][]*waiter // by full hash key, FIFO

	holdsMu sync.Mutex
	holds   map[*lockimpl.Lease]*hold

	id  string        // random per Locker
	seq atomic.Uint64 // per lease
}

var _ lockimpl.Locker = (*Locker)(nil)

// waiter is one Lock call waiting for key's unlock message.
type waiter struct{ wake chan struct{} }

// hold is one owner's grip on a key, shared by a lease and its re-entries.
type hold struct {
	l      *Locker
	key    string // full hash key
	owner  string
	token  uint64
	refs   atomic.Int32      // leases (outer + reentered) not yet released
	stop   func()            // stops the watchdog; guarded by Locker.holdsMu
	leases []*lockimpl.Lease // guarded by Locker.holdsMu
}

// New returns a Locker over client (a *redis.Client, ring or cluster client;
// the caller owns it). Options: TTL (default lockimpl.DefaultTTL) is the
// PEXPIRE of the hash, renewed at TTL/3 while held; Prefix defaults to
// DefaultPrefix.
func New(client redis.UniversalClient, opts lockimpl.Options) *Locker {
	return &Locker{
		client:  client,
		ttl:     opts.TTLOrDefault(),
		prefix:  opts.PrefixOr(DefaultPrefix),
		noRenew: opts.NoRenew,
		waiters: make(map[string][]*waiter),
		holds:   make(map[*lockimpl.Lease]*hold),
		id:      uuid.NewString(),
	}
}

// owner returns a value unique to one lease: the Locker's random UUID and a
// sequence number (cheaper than a fresh UUID per lease, just as unique).
func (l *Locker) owner() string {
	return l.id + ":" + strconv.FormatUint(l.seq.Add(1), 10)
}

// Key returns the Redis key of the hash that backs the lock named key.
func (l *Locker) Key(key string) string { return l.prefix + key }

// FenceKey returns the Redis key of key's fencing-token counter.
func (l *Locker) FenceKey(key string) string { return l.prefix + key + ":fence" }

func (l *Locker) channel(full string) string { return full + ":unlock" }

// Close stops the unlock subscription. Waiting Lock calls fall back to
// their timers. It does not close the client.
func (l *Locker) Close() error {
	l.subMu.Lock()
	defer l.subMu.Unlock()
	l.closed = true
	if l.pubsub == nil {
		return nil
	}
	err := l.pubsub.Close()
	<-l.subDone
	l.pubsub = nil
	if err != nil {
		return fmt.Errorf("redislock: close subscription: %w", err)
	}
	return nil
}

func (l *Locker) ms() int64 { return l.ttl.Milliseconds() }

// attempt runs the acquire script once. It returns the token when taken,
// or the remaining PTTL of the holder's hash.
func (l *Locker) attempt(ctx context.Context, full, owner string) (bool, uint64, time.Duration, error) {
	res, err := acquireScript.Run(ctx, l.client, []string{full, full + ":fence"}, owner, l.ms()).Int64Slice()
	if err != nil {
		return false, 0, 0, fmt.Errorf("redislock: acquire %q: %w", full, err)
	}
	if len(res) != 2 {
		return false, 0, 0, fmt.Errorf("redislock: acquire %q: unexpected reply %v", full, res)
	}
	if res[0] == 1 {
		return true, uint64(res[1]), 0, nil
	}
	return false, 0, time.Duration(res[1]) * time.Millisecond, nil
}

// TryLock makes one attempt and returns lockimpl.ErrLocked when another
// owner holds the lock.
func (l *Locker) TryLock(ctx context.Context, key string) (*lockimpl.Lease, error) {
	full := l.Key(key)
	owner := l.owner()
	start := time.Now()
	ok, token, _, err := l.attempt(ctx, full, owner)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, fmt.Errorf("redislock: trylock %q: %w", key, lockimpl.ErrLocked)
	}
	return l.newHold(key, full, owner, token, start), nil
}

// Lock waits until the lock is taken or ctx is done. It is woken by the
// unlock message of the holder, with a fallback timer of min(PTTL, 100ms).
func (l *Locker) Lock(ctx context.Context, key string) (*lockimpl.Lease, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("redislock: lock %q: %w", key, err)
	}
	full := l.Key(key)
	owner := l.owner()
	start := time.Now()
	ok, token, _, err := l.attempt(ctx, full, owner)
	if err != nil {
		return nil, err
	}
	if ok {
		return l.newHold(key, full, owner, token, start), nil
	}
	// Contended: subscribe (once per Locker), register, then retry so that
	// an unlock between the first attempt and the registration is not lost.
	subscribed := l.subscribe(ctx) == nil
	w := &waiter{wake: make(chan struct{}, 1)}
	l.addWaiter(full, w)
	defer l.removeWaiter(full, w)
	timer := time.NewTimer(0)
	defer timer.Stop()
	<-timer.C
	for {
		start = time.Now()
		var pttl time.Duration
		ok, token, pttl, err = l.attempt(ctx, full, owner)
		if err != nil {
			if ctxErr := ctx.Err(); ctxErr != nil {
				return nil, fmt.Errorf("redislock: lock %q: %w", key, ctxErr)
			}
			return nil, err
		}
		if ok {
			return l.newHold(key, full, owner, token, start), nil
		}
		wait := maxWait
		if !subscribed {
			wait = 10 * time.Millisecond
		}
		if pttl >= 0 && pttl < wait {
			wait = pttl + time.Millisecond
		}
		timer.Reset(wait)
		select {
		case <-w.wake:
			if !timer.Stop() {
				<-timer.C
			}
		case <-timer.C:
		case <-ctx.Done():
			return nil, fmt.Errorf("redislock: lock %q: %w", key, ctx.Err())
		}
	}
}

// subscribe starts the Locker's single pattern subscription to the unlock
// channels, once, and waits for its confirmation. A failure is retried by a
// later call.
func (l *Locker) subscribe(ctx context.Context) error {
	l.subMu.Lock()
	defer l.subMu.Unlock()
	if l.closed {
		return errors.New("redislock: locker closed")
	}
	if l.pubsub != nil {
		return nil
	}
	ps := l.client.PSubscribe(ctx, l.prefix+"*:unlock")
	if _, err := ps.Receive(ctx); err != nil {
		_ = ps.Close()
		return fmt.Errorf("redislock: subscribe: %w", err)
	}
	l.pubsub = ps
	l.subDone = make(chan struct{})
	go l.dispatch(ps, l.subDone)
	return nil
}

// dispatch wakes the first waiter of a key for every unlock message.
func (l *Locker) dispatch(ps *redis.PubSub, done chan struct{}) {
	defer close(done)
	for msg := range ps.Channel() {
		full := strings.TrimSuffix(msg.Channel, ":unlock")
		l.wmu.Lock()
		if ws := l.waiters[full]; len(ws) > 0 {
			select {
			case ws[0].wake <- struct{}{}:
			default:
			}
		}
		l.wmu.Unlock()
	}
}

func (l *Locker) addWaiter(full string, w *waiter) {
	l.wmu.Lock()
	l.waiters[full] = append(l.waiters[full], w)
	l.wmu.Unlock()
}

// removeWaiter unregisters w and passes on a wake-up it did not use.
func (l *Locker) removeWaiter(full string, w *waiter) {
	l.wmu.Lock()
	defer l.wmu.Unlock()
	ws := l.waiters[full]
	for i, x := range ws {
		if x == w {
			ws = append(ws[:i:i], ws[i+1:]...)
			break
		}
	}
	if len(ws) == 0 {
		delete(l.waiters, full)
		return
	}
	l.waiters[full] = ws
	select {
	case <-w.wake:
		select {
		case ws[0].wake <- struct{}{}:
		default:
		}
	default:
	}
}

func (l *Locker) newHold(key, full, owner string, token uint64, start time.Time) *lockimpl.Lease {
	h := &hold{l: l, key: full, owner: owner, token: token}
	lease := h.lease(key)
	lease.SetValidUntil(start.Add(l.ttl))
	var stop func()
	if l.noRenew {
		// Options.NoRenew: no watchdog; the hash expires after TTL, and
		// the holder knows it by its own clock.
		t := time.AfterFunc(l.ttl, func() { h.markLost(fmt.Errorf("redislock: TTL %v ran out without renewal", l.ttl)) })
		stop = func() { t.Stop() }
	} else {
		stop = lockimpl.KeepAlive(l.ttl, h.renew, h.markLost)
	}
	h.l.holdsMu.Lock()
	h.stop = stop
	h.l.holdsMu.Unlock()
	return lease
}

// lease builds one lease (outer or reentered) over h.
func (h *hold) lease(key string) *lockimpl.Lease {
	h.refs.Add(1)
	var lease *lockimpl.Lease
	lease = lockimpl.NewLease(key, h.token, func(ctx context.Context) error {
		return h.release(ctx, lease)
	})
	h.l.holdsMu.Lock()
	h.l.holds[lease] = h
	h.leases = append(h.leases, lease)
	h.l.holdsMu.Unlock()
	return lease
}

func (h *hold) release(ctx context.Context, lease *lockimpl.Lease) error {
	h.l.holdsMu.Lock()
	delete(h.l.holds, lease)
	h.l.holdsMu.Unlock()
	if h.refs.Add(-1) == 0 {
		h.l.holdsMu.Lock()
		stop := h.stop
		h.l.holdsMu.Unlock()
		if stop != nil {
			stop()
		}
	}
	n, err := releaseScript.Run(ctx, h.l.client, []string{h.key, h.l.channel(h.key)}, h.owner, h.l.ms()).Int64()
	if err != nil {
		return fmt.Errorf("redislock: release %q: %w", h.key, err)
	}
	if n < 0 {
		return fmt.Errorf("redislock: release %q: %w", h.key, lockimpl.ErrNotHeld)
	}
	return nil
}

// markLost reports the loss on every lease of the hold.
func (h *hold) markLost(cause error) {
	h.l.holdsMu.Lock()
	leases := append([]*lockimpl.Lease(nil), h.leases...)
	h.l.holdsMu.Unlock()
	for _, lease := range leases {
		lease.MarkLost(cause)
	}
}

// renew is the watchdog's renewal: it renews the hash's PEXPIRE only while
// our owner is in it, and reports lockimpl.ErrNotHeld when it is not.
func (h *hold) renew(ctx context.Context) error {
	start := time.Now()
	n, err := renewScript.Run(ctx, h.l.client, []string{h.key}, h.owner, h.l.ms()).Int64()
	if err != nil {
		return fmt.Errorf("redislock: renew %q: %w", h.key, err)
	}
	if n == 0 {
		return fmt.Errorf("redislock: %q no longer held by this owner: %w", h.key, lockimpl.ErrNotHeld)
	}
	h.l.holdsMu.Lock()
	leases := append([]*lockimpl.Lease(nil), h.leases...)
	h.l.holdsMu.Unlock()
	for _, lease := range leases {
		lease.SetValidUntil(start.Add(h.l.ttl))
	}
	return nil
}

// Reenter takes the lock held by lease again for the same owner (the
// source's reentrant HINCRBY) and returns a nested lease with the same token.
// Each returned lease must be unlocked; the lock is released when the last
// one is. It returns an error wrapping lockimpl.ErrNotHeld when lease is not
// a live lease of this Locker.
func (l *Locker) Reenter(ctx context.Context, lease *lockimpl.Lease) (*lockimpl.Lease, error) {
	l.holdsMu.Lock()
	h, ok := l.holds[lease]
	l.holdsMu.Unlock()
	if !ok {
		return nil, fmt.Errorf("redislock: reenter %q: %w", lease.Key, lockimpl.ErrNotHeld)
	}
	n, err := reenterScript.Run(ctx, l.client, []string{h.key}, h.owner, l.ms()).Int64()
	if err != nil {
		return nil, fmt.Errorf("redislock: reenter %q: %w", lease.Key, err)
	}
	if n == 0 {
		return nil, fmt.Errorf("redislock: reenter %q: %w", lease.Key, lockimpl.ErrNotHeld)
	}
	nested := h.lease(lease.Key)
	if until, ok := lease.ValidUntil(); ok {
		nested.SetValidUntil(until)
	}
	return nested, nil
}

// Backend is what the service needs of the Redis lock on its server: a
// Locker per setting, Ping and Clear.
type Backend struct {
	client redis.UniversalClient
}

// NewBackend returns the backend over client (owned by the caller).
func NewBackend(client redis.UniversalClient) *Backend { return &Backend{client: client} }

// NewLocker returns a Locker for opts. Close it when the setting it serves
// is replaced: it holds a pub/sub connection.
func (b *Backend) NewLocker(_ context.Context, opts lockimpl.Options) (lockimpl.Locker, error) {
	return New(b.client, opts), nil
}

// Ping checks the server.
func (b *Backend) Ping(ctx context.Context) error {
	if err := b.client.Ping(ctx).Err(); err != nil {
		return fmt.Errorf("redislock: ping: %w", err)
	}
	return nil
}

// Clear deletes key's lock hash and its fencing counter (the next token is
// seeded from the server's clock).
func (b *Backend) Clear(ctx context.Context, key string) error {
	l := Locker{prefix: DefaultPrefix}
	if err := b.client.Del(ctx, l.Key(key), l.FenceKey(key)).Err(); err != nil {
		return fmt.Errorf("redislock: clear %q: %w", key, err)
	}
	return nil
}

// Close does nothing: the client belongs to the caller.
func (b *Backend) Close() error { return nil }
