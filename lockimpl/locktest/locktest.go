// Package locktest is the conformance suite every lock backend runs from its
// own _test.go, in the style of go-redsync's one test body per adapter.
//
// A backend describes itself with a Factory: how to build an independent
// Locker instance (its own client or session, as a second service instance
// would have), which capabilities it has, how to break a held lease behind
// its back, and how to check that nothing is left at the server for a key.
// Run then executes the cases: mutual exclusion under -race, TryLock while
// held, double Unlock, cancellation while waiting, fencing tokens, the
// watchdog keeping a lock past its TTL, and lost-lease reporting.
package locktest

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"sort"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/seckill-lab/seckill/lockimpl"
)

// Capabilities says which cases apply to a backend.
type Capabilities struct {
	// Distributed: independent Locker instances exclude each other. When
	// false (mutexlock) every case uses one instance.
	Distributed bool
	// Tokens: Lease.Token strictly increases per key.
	Tokens bool
	// Watchdog: a held lock outlives its TTL because the backend renews it
	// (watchdog, keep-alive, extend, or an ephemeral node).
	Watchdog bool
	// LostLease: the backend reports lost ownership through Lease.Lost; the
	// Factory's Break hook must be set.
	LostLease bool
	// NoRenew: the backend honours Options.NoRenew, so without renewal a
	// held lock expires after its TTL and another instance gets it.
	NoRenew bool
	// NoExclusion: the lock deliberately excludes nobody (the flawed
	// `mutex-prototype`). The cases that need exclusion (MutualExclusion,
	// TryLockWhileHeld, CancelWhileWaiting) do not apply; DoesNotExclude
	// runs instead and shows the flaw: a second holder gets in at once.
	NoExclusion bool
}

// Factory builds Locker instances of one backend for the suite.
type Factory struct {
	// New returns a new, independent Locker with the given options. It
	// must register the cleanup of whatever it opens with t.Cleanup, and
	// call testenv.Get / testenv.Unavailable for missing servers.
	New func(t testing.TB, opts lockimpl.Options) lockimpl.Locker
	// Caps lists the cases that apply.
	Caps Capabilities
	// Break destroys the ownership of a held lease at the server (DEL the
	// key, delete the node, revoke the lease, delete the row). Required
	// when Caps.LostLease is set.
	Break func(t testing.TB, l lockimpl.Locker, lease *lockimpl.Lease)
	// AssertClean, when set, checks that no lock state for key is left at
	// the server once every lease for key was released or abandoned.
	AssertClean func(t testing.TB, l lockimpl.Locker, key string)
	// Goroutines and Iterations size the mutual-exclusion case. Defaults:
	// 32 goroutines, 20 iterations each.
	Goroutines, Iterations int
	// TTL is used by the cases that do not test TTL behaviour. Default 5s.
	TTL time.Duration
	// KeyTTL, when set, observes the server's state of key's lock: whether
	// it exists and its remaining expiry (negative: none, Redis's PTTL -1).
	// The TTL cases then say what they saw, not only that they failed.
	KeyTTL func(t testing.TB, key string) (ttl time.Duration, exists bool)
	// Pause, when set, stops the traffic of the Locker l to its server as
	// a paused process's stops (SIGSTOP, a long GC pause: its watchdog
	// stops too) until resume is called; resume is idempotent.
	// ExpiresWithoutRenewal then pauses the first holder right after it
	// took the lock and resumes it once the next holder has it, before
	// the stale release, so the case holds for a lock that renews as well
	// as for one that honours Options.NoRenew. Default nil: the case
	// relies on Options.NoRenew alone.
	Pause func(t testing.TB, l lockimpl.Locker) (resume func())
	// ExpirySlack is how long past a lock's TTL a case that waits for the
	// expiry waits before it fails. Default 0: the backend's own time
	// (ExpiresWithoutRenewal within its 30 s, LostLease 15 s), for
	// backends that raise the TTL; the exercises set DefaultExpirySlack.
	ExpirySlack time.Duration
}

// DefaultExpirySlack is how long past a TTL a case waits for an expiry:
// the polling of Lock and the scheduling of a loaded machine.
const DefaultExpirySlack = 2 * time.Second

// ExpiryResolution is how early, by this process's clock, a server may
// expire a key it was asked to keep for a TTL: Redis keeps expiry times
// in whole milliseconds (PX; MySQL's NOW(6) in microseconds), on the wall
// clock, not the monotonic one a test measures with.
const ExpiryResolution = time.Millisecond

// Key returns a unique lock key for one test.
func Key(t testing.TB) string {
	return "locktest-" + uuid.NewString()
}

func (f Factory) opts() lockimpl.Options {
	ttl := f.TTL
	if ttl <= 0 {
		ttl = 5 * time.Second
	}
	return lockimpl.Options{TTL: ttl}
}

// pair returns two instances: independent ones for distributed backends,
// the same one twice otherwise.
func (f Factory) pair(t *testing.T, opts lockimpl.Options) (lockimpl.Locker, lockimpl.Locker) {
	a := f.New(t, opts)
	if !f.Caps.Distributed {
		return a, a
	}
	return a, f.New(t, opts)
}

func ctxT(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

func mustUnlock(t testing.TB, lease *lockimpl.Lease) {
	t.Helper()
	if err := lease.Unlock(context.Background()); err != nil {
		t.Fatalf("unlock %q: %v", lease.Key, err)
	}
}

// Run runs the conformance cases against f.
func Run(t *testing.T, f Factory) {
	if f.Caps.NoExclusion {
		t.Run("DoesNotExclude", func(t *testing.T) { t.Parallel(); doesNotExclude(t, f) })
	} else {
		t.Run("MutualExclusion", func(t *testing.T) { t.Parallel(); mutualExclusion(t, f) })
		t.Run("TryLockWhileHeld", func(t *testing.T) { t.Parallel(); tryLockWhileHeld(t, f) })
		t.Run("CancelWhileWaiting", func(t *testing.T) { t.Parallel(); cancelWhileWaiting(t, f) })
	}
	t.Run("DoubleUnlock", func(t *testing.T) { t.Parallel(); doubleUnlock(t, f) })
	if f.Caps.Tokens {
		t.Run("TokensIncrease", func(t *testing.T) { t.Parallel(); tokensIncrease(t, f) })
	}
	if f.Caps.Watchdog {
		t.Run("HeldPastTTL", func(t *testing.T) { t.Parallel(); heldPastTTL(t, f) })
	}
	if f.Caps.LostLease {
		t.Run("LostLease", func(t *testing.T) { t.Parallel(); lostLease(t, f) })
	}
	if f.Caps.NoRenew {
		t.Run("ExpiresWithoutRenewal", func(t *testing.T) { t.Parallel(); expiresWithoutRenewal(t, f) })
	}
}

func mutualExclusion(t *testing.T, f Factory) {
	g, n := f.Goroutines, f.Iterations
	if g <= 0 {
		g = 32
	}
	if n <= 0 {
		n = 20
	}
	instances := 1
	if f.Caps.Distributed {
		instances = 2
	}
	lockers := make([]lockimpl.Locker, instances)
	for i := range lockers {
		lockers[i] = f.New(t, f.opts())
	}
	key := Key(t)
	ctx := ctxT(t, 90*time.Second)

	x := &exclusion{tokens: f.Caps.Tokens, t0: time.Now()}
	x.holders.in = map[string]time.Time{}
	var wg sync.WaitGroup
	for i := 0; i < g; i++ {
		wg.Go(func() { x.hold(ctx, lockers[i%instances], key, i%instances, i, n) })
	}
	wg.Wait()
	// Two holders at once is the finding; an Unlock that then finds its
	// lock gone is only its consequence, so it is reported first.
	if o := x.overlaps.Load(); o != 0 || x.holders.first != "" {
		t.Errorf("%s; %d overlapping critical sections in all", x.holders.first, o)
	}
	if x.firstErr != nil {
		t.Fatalf("lock/unlock: %v", x.firstErr)
	}
	if x.counter != g*n {
		t.Errorf("counter = %d, want %d (lost updates)", x.counter, g*n)
	}
	if b := x.badTokens.Load(); b != 0 {
		t.Errorf("%d tokens did not increase: the fencing token went backwards or repeated", b)
	}
	if f.AssertClean != nil {
		f.AssertClean(t, lockers[0], key)
	}
}

// exclusion is the state of the mutual exclusion case: what the lock under
// test must protect, and what the case counts of its failures.
type exclusion struct {
	tokens    bool // the lock gives fencing tokens: they must increase
	counter   int  // deliberately not atomic: the lock must protect it
	lastToken uint64
	inside    atomic.Int32
	overlaps  atomic.Int32
	badTokens atomic.Int32
	errMu     sync.Mutex
	firstErr  error
	t0        time.Time
	// holders is the bookkeeping of who is inside, for the report of the
	// first overlap: it has a mutex of its own, apart from the lock under
	// test.
	holders struct {
		sync.Mutex
		in    map[string]time.Time
		first string
	}
}

// hold is goroutine g of instance inst: n times it takes l's lock on key,
// increments the counter in two steps and unlocks. It stops at the first
// error.
func (x *exclusion) hold(ctx context.Context, l lockimpl.Locker, key string, inst, g, n int) {
	for j := 0; j < n; j++ {
		lease, err := l.Lock(ctx, key)
		if err != nil {
			x.fail(err)
			return
		}
		id := fmt.Sprintf("instance %d goroutine %d acquisition %d (token %d)", inst+1, g, j+1, lease.Token)
		x.enter(id)
		if x.inside.Add(1) != 1 {
			x.overlaps.Add(1)
		}
		if x.tokens {
			if lease.Token <= x.lastToken {
				x.badTokens.Add(1)
			}
			x.lastToken = lease.Token
		}
		v := x.counter
		runtime.Gosched()
		x.counter = v + 1
		x.inside.Add(-1)
		x.leave(id)
		if err := lease.Unlock(ctx); err != nil {
			x.fail(fmt.Errorf("%s: %w", id, err))
			return
		}
	}
}

// fail keeps the first error.
func (x *exclusion) fail(err error) {
	x.errMu.Lock()
	defer x.errMu.Unlock()
	if x.firstErr == nil {
		x.firstErr = err
	}
}

// enter records id inside, and the first time two are, who they were.
func (x *exclusion) enter(id string) {
	x.holders.Lock()
	defer x.holders.Unlock()
	now := time.Now()
	for other, since := range x.holders.in {
		if x.holders.first == "" {
			x.holders.first = fmt.Sprintf("two holders at once: %s (holding since %.1f ms) and %s (got the lock at %.1f ms), ms from the case's start",
				other, ms(since.Sub(x.t0)), id, ms(now.Sub(x.t0)))
		}
	}
	x.holders.in[id] = now
}

// leave records id outside.
func (x *exclusion) leave(id string) {
	x.holders.Lock()
	defer x.holders.Unlock()
	delete(x.holders.in, id)
}

// doesNotExclude: for a lock that deliberately excludes nobody, a second
// Lock and TryLock of a held key, on the holder's own instance, succeed at
// once.
func doesNotExclude(t *testing.T, f Factory) {
	a := f.New(t, f.opts())
	key := Key(t)
	ctx := ctxT(t, 30*time.Second)
	first, err := a.Lock(ctx, key)
	if err != nil {
		t.Fatalf("first Lock: %v", err)
	}
	second, err := a.Lock(ctx, key)
	if err != nil {
		t.Fatalf("second Lock while held: %v; want success (the lock excludes nobody)", err)
	}
	third, err := a.TryLock(ctx, key)
	if err != nil {
		t.Fatalf("TryLock while held twice: %v; want success (the lock excludes nobody)", err)
	}
	for _, l := range []*lockimpl.Lease{first, second, third} {
		mustUnlock(t, l)
	}
	if f.AssertClean != nil {
		f.AssertClean(t, a, key)
	}
}

func tryLockWhileHeld(t *testing.T, f Factory) {
	a, b := f.pair(t, f.opts())
	key := Key(t)
	ctx := ctxT(t, 30*time.Second)
	lease, err := a.TryLock(ctx, key)
	if err != nil {
		t.Fatalf("first TryLock: %v", err)
	}
	if _, err := b.TryLock(ctx, key); !errors.Is(err, lockimpl.ErrLocked) {
		t.Fatalf("TryLock while held: err = %v, want ErrLocked", err)
	}
	if _, err := a.TryLock(ctx, key); !errors.Is(err, lockimpl.ErrLocked) {
		t.Fatalf("TryLock on the holder's instance: err = %v, want ErrLocked", err)
	}
	mustUnlock(t, lease)
	again, err := b.TryLock(ctx, key)
	if err != nil {
		t.Fatalf("TryLock after unlock: %v", err)
	}
	mustUnlock(t, again)
	if f.AssertClean != nil {
		f.AssertClean(t, a, key)
	}
}

func doubleUnlock(t *testing.T, f Factory) {
	a := f.New(t, f.opts())
	key := Key(t)
	ctx := ctxT(t, 30*time.Second)
	lease, err := a.Lock(ctx, key)
	if err != nil {
		t.Fatalf("Lock: %v", err)
	}
	mustUnlock(t, lease)
	if err := lease.Unlock(ctx); !errors.Is(err, lockimpl.ErrNotHeld) {
		t.Fatalf("second Unlock: err = %v, want ErrNotHeld", err)
	}
}

func cancelWhileWaiting(t *testing.T, f Factory) {
	a, b := f.pair(t, f.opts())
	key := Key(t)
	ctx := ctxT(t, 30*time.Second)
	held, err := a.Lock(ctx, key)
	if err != nil {
		t.Fatalf("Lock: %v", err)
	}
	cases := []struct {
		name string
		ctx  func() (context.Context, context.CancelFunc)
		want error
	}{
		{"deadline", func() (context.Context, context.CancelFunc) {
			return context.WithTimeout(ctx, 150*time.Millisecond)
		}, context.DeadlineExceeded},
		{"cancel", func() (context.Context, context.CancelFunc) {
			c, cancel := context.WithCancel(ctx)
			time.AfterFunc(150*time.Millisecond, cancel)
			return c, cancel
		}, context.Canceled},
		{"already-done", func() (context.Context, context.CancelFunc) {
			c, cancel := context.WithCancel(ctx)
			cancel()
			return c, cancel
		}, context.Canceled},
	}
	for _, tc := range cases {
		wctx, cancel := tc.ctx()
		lease, err := b.Lock(wctx, key)
		cancel()
		if err == nil {
			_ = lease.Unlock(ctx)
			t.Fatalf("%s: Lock while held succeeded", tc.name)
		}
		if !errors.Is(err, tc.want) {
			t.Fatalf("%s: err = %v, want %v", tc.name, err, tc.want)
		}
	}
	mustUnlock(t, held)
	// Nothing of the abandoned waits may stand in the way.
	c := f.New(t, f.opts())
	if !f.Caps.Distributed {
		c = a
	}
	lease, err := c.TryLock(ctx, key)
	if err != nil {
		t.Fatalf("TryLock after the cancelled waits: %v", err)
	}
	mustUnlock(t, lease)
	if f.AssertClean != nil {
		f.AssertClean(t, a, key)
	}
}

func tokensIncrease(t *testing.T, f Factory) {
	a, b := f.pair(t, f.opts())
	key := Key(t)
	ctx := ctxT(t, 30*time.Second)
	var last uint64
	for i := 0; i < 6; i++ {
		l := a
		if i%2 == 1 {
			l = b
		}
		lease, err := l.Lock(ctx, key)
		if err != nil {
			t.Fatalf("Lock %d: %v", i, err)
		}
		switch {
		case lease.Token == 0:
			t.Fatalf("token %d = 0 (no token: the store checks nothing at the write): want a strictly increasing non-zero token", i)
		case lease.Token == last:
			t.Fatalf("token %d = %d after %d: the fencing token did not increase (equal tokens): want a strictly increasing non-zero token", i, lease.Token, last)
		case lease.Token < last:
			t.Fatalf("token %d = %d after %d: the fencing token went backwards: want a strictly increasing non-zero token", i, lease.Token, last)
		}
		last = lease.Token
		mustUnlock(t, lease)
	}
}

func heldPastTTL(t *testing.T, f Factory) {
	opts := lockimpl.Options{TTL: time.Second}
	a, b := f.pair(t, opts)
	key := Key(t)
	ctx := ctxT(t, 30*time.Second)
	lease, err := a.Lock(ctx, key)
	if err != nil {
		t.Fatalf("Lock: %v", err)
	}
	select {
	case <-lease.Lost():
		t.Fatalf("lease lost while held: %v", lease.Err())
	case <-time.After(2500 * time.Millisecond):
	}
	if _, err := b.TryLock(ctx, key); !errors.Is(err, lockimpl.ErrLocked) {
		t.Fatalf("TryLock after 2.5x TTL: err = %v, want ErrLocked (the watchdog did not renew)", err)
	}
	if err := lease.Err(); err != nil {
		t.Fatalf("lease.Err() = %v, want nil", err)
	}
	mustUnlock(t, lease)
}

// expiresWithoutRenewal: with Options.NoRenew (and, with Factory.Pause,
// the holder paused so that nothing of it reaches the server) a holder that
// keeps the lock past its TTL loses it to another instance, and that one's
// token is higher: the setting the lab uses to show what fencing is for.
// The second Lock waits the TTL plus Factory.ExpirySlack when set; a
// failure says what the case saw of the key (Factory.KeyTTL): no expiry, still held past
// its TTL, or deleted by the stale holder.
func expiresWithoutRenewal(t *testing.T, f Factory) {
	opts := lockimpl.Options{TTL: 500 * time.Millisecond, NoRenew: true}
	a, b := f.pair(t, opts)
	key := Key(t)
	ctx := ctxT(t, 30*time.Second)
	// The server starts the first holder's TTL when its request arrives,
	// after this moment: no second holder may get in before invoked + TTL,
	// however late the first Lock returns on a loaded machine.
	invoked := time.Now()
	first, err := a.Lock(ctx, key)
	if err != nil {
		t.Fatalf("Lock: %v", err)
	}
	if f.KeyTTL != nil {
		if ttl, ok := f.KeyTTL(t, key); ok && ttl < 0 {
			t.Fatalf("the lock key has no expiry (PTTL -1 right after Lock): a holder that dies keeps the lock for ever")
		}
	}
	resume := func() {}
	if f.Pause != nil {
		resume = f.Pause(t, a)
		t.Cleanup(resume)
	}
	start := time.Now()
	// A backend may raise the TTL (Consul: 10 s at least, invalidated after
	// twice that): without ExpirySlack the wait is the case's 30 s.
	wctx, cancel := ctx, context.CancelFunc(func() {})
	if f.ExpirySlack > 0 {
		wctx, cancel = context.WithTimeout(ctx, opts.TTL+f.ExpirySlack)
	}
	second, err := b.Lock(wctx, key)
	gotSecond := time.Now()
	cancel()
	resume() // the stale holder wakes up: its renewal and its release go out again
	if err != nil {
		if ctx.Err() == nil && errors.Is(err, context.DeadlineExceeded) {
			seen := ""
			if f.KeyTTL != nil {
				switch ttl, ok := f.KeyTTL(t, key); {
				case ok && ttl < 0:
					seen = ": the lock key has no expiry (PTTL -1), so it is never freed"
				case ok:
					seen = fmt.Sprintf(": the lock key is still there, PTTL %d ms", ttl.Milliseconds())
				}
			}
			t.Fatalf("second Lock still waited %v after the first holder's TTL %v ran out (TTL + %v slack)%s",
				time.Since(start).Round(10*time.Millisecond), opts.TTL, f.ExpirySlack, seen)
		}
		t.Fatalf("second Lock after the TTL: %v", err)
	}
	if waited := time.Since(invoked); waited < opts.TTL-ExpiryResolution {
		t.Fatalf("second holder got the lock %v after the first Lock was called, before the first one's TTL %v ran out", waited, opts.TTL)
	}
	if f.Caps.Tokens && second.Token <= first.Token {
		t.Fatalf("token of the new holder %d <= stale holder's %d: the fencing token went backwards", second.Token, first.Token)
	}
	// The stale holder knows, by its own clock, that its TTL ran out: the
	// service's lease check relies on it.
	select {
	case <-first.Lost():
	case <-time.After(opts.TTL):
		t.Fatal("the stale holder's lease does not report the loss after its TTL")
	}
	if err := first.Err(); !errors.Is(err, lockimpl.ErrLeaseLost) {
		t.Fatalf("stale lease Err() = %v, want ErrLeaseLost", err)
	}
	if err := first.Unlock(ctx); !errors.Is(err, lockimpl.ErrNotHeld) {
		seen := ""
		if f.KeyTTL != nil {
			if _, ok := f.KeyTTL(t, key); !ok {
				seen = "; it deleted the new holder's key, which it did not own"
			}
		}
		t.Fatalf("stale holder's Unlock: err = %v, want ErrNotHeld (it must not release the new holder's lock)%s", err, seen)
	}
	// The new holder does not renew either: it holds for its own TTL, no
	// longer. A loaded machine can take that long over the checks above;
	// the two below then test nothing the lock promises, and are left out.
	held := func() bool { return time.Since(gotSecond) < opts.TTL-ExpiryResolution }
	other, err := a.TryLock(ctx, key)
	switch {
	case errors.Is(err, lockimpl.ErrLocked):
	case held():
		t.Fatalf("TryLock while the new holder holds: err = %v, want ErrLocked", err)
	case err == nil:
		mustUnlock(t, other)
	}
	if !held() {
		t.Logf("the new holder's TTL %v ran out over the checks (%v since it locked): its TryLock and Unlock checks are left out",
			opts.TTL, time.Since(gotSecond).Round(time.Millisecond))
		_ = second.Unlock(ctx)
		return
	}
	mustUnlock(t, second)
}

func lostLease(t *testing.T, f Factory) {
	opts := lockimpl.Options{TTL: time.Second}
	a := f.New(t, opts)
	key := Key(t)
	ctx := ctxT(t, 30*time.Second)
	lease, err := a.Lock(ctx, key)
	if err != nil {
		t.Fatalf("Lock: %v", err)
	}
	if err := lease.Err(); err != nil {
		t.Fatalf("fresh lease: Err() = %v", err)
	}
	f.Break(t, a, lease)
	// A backend whose loss shows only at a session's end (ZooKeeper,
	// Consul) takes its own time; with Factory.ExpirySlack set, the case
	// waits the TTL plus that slack, no longer.
	wait := 15 * time.Second
	if f.ExpirySlack > 0 {
		wait = opts.TTL + f.ExpirySlack
	}
	select {
	case <-lease.Lost():
	case <-time.After(wait):
		t.Fatalf("lease.Lost() not closed %v after the lease was broken: the holder did not notice its key was gone", wait)
	}
	if err := lease.Err(); !errors.Is(err, lockimpl.ErrLeaseLost) {
		t.Fatalf("lease.Err() = %v, want ErrLeaseLost", err)
	}
	if err := lease.Unlock(ctx); !errors.Is(err, lockimpl.ErrNotHeld) {
		t.Errorf("Unlock of a lost lease: err = %v, want ErrNotHeld", err)
	}
	// The key is usable again.
	again, err := a.Lock(ctx, key)
	if err != nil {
		t.Fatalf("Lock after loss: %v", err)
	}
	mustUnlock(t, again)
}

// ms is d in milliseconds.
func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// Median returns the median of ds (0 for none). It sorts ds.
func Median(ds []time.Duration) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	slices.Sort(ds)
	return ds[len(ds)/2]
}

// Uncontended is the uncontended benchmark body: b.N Lock+Unlock pairs of
// one key on one instance, nobody else contending.
func Uncontended(b *testing.B, l lockimpl.Locker) {
	key := Key(b)
	ctx := context.Background()
	for b.Loop() {
		lease, err := l.Lock(ctx, key)
		if err != nil {
			b.Fatal(err)
		}
		if err := lease.Unlock(ctx); err != nil {
			b.Fatal(err)
		}
	}
}

// Handoff is the handoff benchmark body: it runs b.N handoffs between holder instance a and waiter instance w
// and reports the p50 and p99 in ms. A handoff is timed from the
// holder's Unlock starting to the waiter's Lock returning.
func Handoff(b *testing.B, a, w lockimpl.Locker) {
	ctx := context.Background()
	key := Key(b)
	durs := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		held, err := a.Lock(ctx, key)
		if err != nil {
			b.Fatal(err)
		}
		type result struct {
			at  time.Time
			err error
		}
		done := make(chan result, 1)
		go func() {
			lease, err := w.Lock(ctx, key)
			if err != nil {
				done <- result{err: err}
				return
			}
			at := time.Now()
			done <- result{at: at, err: lease.Unlock(ctx)}
		}()
		time.Sleep(2 * time.Millisecond) // let the waiter start waiting
		t0 := time.Now()
		if err := held.Unlock(ctx); err != nil {
			b.Fatal(err)
		}
		r := <-done
		if r.err != nil {
			b.Fatal(r.err)
		}
		durs = append(durs, r.at.Sub(t0))
	}
	b.StopTimer()
	sort.Slice(durs, func(i, j int) bool { return durs[i] < durs[j] })
	if len(durs) > 0 {
		b.ReportMetric(float64(durs[len(durs)/2].Microseconds())/1000, "handoff-p50-ms")
		b.ReportMetric(float64(durs[len(durs)*99/100].Microseconds())/1000, "handoff-p99-ms")
	}
}
