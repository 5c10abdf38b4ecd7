package consullock_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/consul/api"

	"github.com/seckill-lab/seckill/internal/testenv"
	"github.com/seckill-lab/seckill/lockimpl"
	"github.com/seckill-lab/seckill/lockimpl/consullock"
	"github.com/seckill-lab/seckill/lockimpl/locktest"
)

// client is a client of the test stack's Consul, which must answer.
func client(tb testing.TB) *api.Client {
	tb.Helper()
	c, err := consullock.NewClient(testenv.List(tb, testenv.ConsulAddrs), nil)
	if err != nil {
		tb.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := consullock.NewBackend(c, consullock.Config{}).Ping(ctx); err != nil {
		testenv.Unavailable(tb, "consul", err)
	}
	return c
}

func newLocker(tb testing.TB, opts lockimpl.Options, cfg consullock.Config) *consullock.Locker {
	return consullock.New(client(tb), opts, cfg)
}

func TestConformance(t *testing.T) {
	locktest.Run(t, locktest.Factory{
		New: func(tb testing.TB, opts lockimpl.Options) lockimpl.Locker {
			return newLocker(tb, opts, consullock.Config{LockDelay: consullock.NoLockDelay})
		},
		// NoRenew is in: the suite's 500 ms TTL is raised to Consul's 10 s
		// minimum, and Consul invalidates the unrenewed session after twice
		// that, so ExpiresWithoutRenewal takes about 20 s of its 30 s (it
		// runs in parallel with the other cases).
		Caps: locktest.Capabilities{Distributed: true, Tokens: true, Watchdog: true, LostLease: true, NoRenew: true},
		Break: func(tb testing.TB, l lockimpl.Locker, lease *lockimpl.Lease) {
			if _, err := client(tb).KV().Delete(l.(*consullock.Locker).Name(lease.Key), nil); err != nil {
				tb.Fatalf("delete the lock key: %v", err)
			}
		},
		AssertClean: func(tb testing.TB, l lockimpl.Locker, key string) {
			pair, _, err := client(tb).KV().Get(l.(*consullock.Locker).Name(key), nil)
			if err != nil {
				tb.Fatal(err)
			}
			if pair != nil {
				tb.Errorf("lock key %q left (session %q)", pair.Key, pair.Session)
			}
		},
		Iterations: 5,
	})
}

// TestSessionInvalidated: a holder's session destroyed by another client
// (what Consul does when the TTL runs out) marks the lease lost, and the
// next holder gets the key once the lock-delay, 0 here, allows it; with a
// lock-delay, nobody gets it before the delay.
func TestSessionInvalidated(t *testing.T) {
	for _, tc := range []struct {
		name     string
		delay    time.Duration
		min, max time.Duration
	}{
		// Below Consul's default 15 s: a zero lock-delay left out of the
		// request got the default (the api package omits zero).
		{"no lock-delay", consullock.NoLockDelay, 0, consullock.DefaultLockDelay / 2},
		{"lock-delay 2s", 2 * time.Second, 2 * time.Second, consullock.DefaultLockDelay / 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			c := client(t)
			a, b := newLocker(t, lockimpl.Options{}, consullock.Config{LockDelay: tc.delay}), newLocker(t, lockimpl.Options{}, consullock.Config{LockDelay: tc.delay})
			key := locktest.Key(t)
			first, err := a.Lock(ctx, key)
			if err != nil {
				t.Fatal(err)
			}
			pair, _, err := c.KV().Get(a.Name(key), nil)
			if err != nil || pair == nil {
				t.Fatalf("the lock key: %v %v", pair, err)
			}
			destroyed := time.Now()
			if _, err := c.Session().Destroy(pair.Session, nil); err != nil {
				t.Fatal(err)
			}
			select {
			case <-first.Lost():
			case <-ctx.Done():
				t.Fatal("the lease does not report the invalidated session")
			}
			if err := first.Err(); !errors.Is(err, lockimpl.ErrLeaseLost) {
				t.Errorf("Err() = %v, want ErrLeaseLost", err)
			}
			second, err := b.Lock(ctx, key)
			if err != nil {
				t.Fatalf("the next holder: %v", err)
			}
			if waited := time.Since(destroyed); waited < tc.min || waited > tc.max {
				t.Errorf("the next holder got the key %v after the invalidation, want between %v (the lock-delay) and %v", waited, tc.min, tc.max)
			}
			if second.Token <= first.Token {
				t.Errorf("token %d after %d: want it higher", second.Token, first.Token)
			}
			if err := first.Unlock(ctx); !errors.Is(err, lockimpl.ErrNotHeld) {
				t.Errorf("stale Unlock: %v, want ErrNotHeld (it must not remove the next holder's key)", err)
			}
			if err := second.Unlock(ctx); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestTTLClamped: Consul's sessions last at least 10 s.
func TestTTLClamped(t *testing.T) {
	for _, tc := range []struct{ in, want time.Duration }{
		{time.Second, consullock.MinTTL}, {0, consullock.MinTTL}, {12 * time.Second, 12 * time.Second}, {12400 * time.Millisecond, 12 * time.Second},
	} {
		if got := consullock.EffectiveTTL(tc.in); got != tc.want {
			t.Errorf("EffectiveTTL(%v) = %v, want %v", tc.in, got, tc.want)
		}
	}
}

// TestDownIsAnError: an agent that is not there is an error: Ping says so
// at once, and Lock, which waits through an election or a restart as the
// other locks do, gives up with its caller's deadline, not later.
func TestDownIsAnError(t *testing.T) {
	c, err := consullock.NewClient([]string{"127.0.0.1:1"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	if err := consullock.NewBackend(c, consullock.Config{}).Ping(ctx); err == nil || ctx.Err() != nil {
		t.Fatalf("Ping of a dead agent: %v (ctx %v), want an error at once", err, ctx.Err())
	}
	lctx, lcancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer lcancel()
	start := time.Now()
	_, err = consullock.New(c, lockimpl.Options{}, consullock.Config{}).Lock(lctx, "k")
	if err == nil || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Lock on a dead agent: %v, want the caller's deadline", err)
	}
	if took := time.Since(start); took > 2*time.Second+testenv.LoadSlack {
		t.Fatalf("Lock on a dead agent took %v, past its 2 s deadline", took)
	}
}

// TestFailover: a client of several agents moves past one that is down.
func TestFailover(t *testing.T) {
	addrs := testenv.List(t, testenv.ConsulAddrs)
	c, err := consullock.NewClient(append([]string{"127.0.0.1:1"}, addrs...), nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	l := consullock.New(c, lockimpl.Options{}, consullock.Config{})
	lease, err := l.Lock(ctx, locktest.Key(t))
	if err != nil {
		t.Fatalf("Lock through a dead first agent: %v", err)
	}
	if err := lease.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
}

// TestWaiterOutlastsItsTTL: a waiter that waits longer than its session's
// TTL (Consul invalidates an unrenewed session after up to twice it) still
// holds a live lease once it acquires. Before, the waiting session was not
// renewed, and such a waiter acquired with a session about to go: its
// lease was lost at once (seen in consul-partition: lease_lost 10 ms after
// the acquisition).
func TestWaiterOutlastsItsTTL(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cfg := consullock.Config{LockDelay: consullock.NoLockDelay}
	a, b := newLocker(t, lockimpl.Options{}, cfg), newLocker(t, lockimpl.Options{}, cfg)
	key := locktest.Key(t)
	first, err := a.Lock(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan *lockimpl.Lease, 1)
	go func() {
		lease, err := b.Lock(ctx, key)
		if err != nil {
			t.Errorf("the waiter: %v", err)
		}
		got <- lease
	}()
	// Past twice the minimum TTL: an unrenewed waiting session is gone.
	time.Sleep(2*consullock.MinTTL + 2*time.Second)
	if err := first.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	second := <-got
	if second == nil {
		t.FailNow()
	}
	defer func() { _ = second.Unlock(context.Background()) }()
	select {
	case <-second.Lost():
		t.Fatalf("the waiter's lease was lost right after it acquired: %v", second.Err())
	case <-time.After(2 * time.Second):
	}
}

// handoffCase is a holder's locker and a key for a handoff test: a TTL of
// 30 s, no lock-delay, and a context that ends after a minute.
func handoffCase(t *testing.T) (context.Context, lockimpl.Options, consullock.Config, *consullock.Locker, string) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	cfg := consullock.Config{LockDelay: consullock.NoLockDelay}
	opts := lockimpl.Options{TTL: 30 * time.Second}
	return ctx, opts, cfg, newLocker(t, opts, cfg), locktest.Key(t)
}

// clientVia is a client of the test stack's first Consul agent whose
// requests go through rt, over the connections of base (closed at the
// test's end).
func clientVia(t *testing.T, base *http.Transport, rt http.RoundTripper) *api.Client {
	t.Helper()
	t.Cleanup(base.CloseIdleConnections)
	c, err := api.NewClient(&api.Config{Address: testenv.List(t, testenv.ConsulAddrs)[0], Scheme: "http", HttpClient: &http.Client{Transport: rt}})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// counting is a transport that counts a client's requests, and among them
// the blocking queries (a read with an index) on one key.
type counting struct {
	next     http.RoundTripper
	path     string // the key's path, /v1/kv/NAME
	requests atomic.Int64
	blocking atomic.Int64 // blocking queries started on path
	inFlight atomic.Int64 // of which not answered yet
}

func (c *counting) RoundTrip(req *http.Request) (*http.Response, error) {
	c.requests.Add(1)
	if req.Method == http.MethodGet && req.URL.Path == c.path && req.URL.Query().Get("index") != "" {
		c.blocking.Add(1)
		c.inFlight.Add(1)
		defer c.inFlight.Add(-1)
	}
	return c.next.RoundTrip(req)
}

// TestWaiterWakesOnRelease: a waiter waits on one blocking query on the
// key and sends nothing else while the key stays held (no polling), and
// that query returns on the release: the waiter has the key before the
// query's wait (TTL/3, 10 s here) could have run out.
func TestWaiterWakesOnRelease(t *testing.T) {
	ctx, opts, cfg, holder, key := handoffCase(t)
	rt := &counting{next: http.DefaultTransport.(*http.Transport).Clone(), path: "/v1/kv/" + holder.Name(key)}
	waiter := consullock.New(clientVia(t, rt.next.(*http.Transport), rt), opts, cfg)

	first, err := holder.Lock(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	type result struct {
		lease *lockimpl.Lease
		at    time.Time
		err   error
	}
	got := make(chan result, 1)
	go func() {
		lease, err := waiter.Lock(ctx, key)
		got <- result{lease, time.Now(), err}
	}()
	for rt.inFlight.Load() == 0 {
		select {
		case r := <-got:
			t.Fatalf("the waiter returned while the key is held: %v", r.err)
		case <-ctx.Done():
			t.Fatal("the waiter never sent a blocking query on the key")
		case <-time.After(10 * time.Millisecond):
		}
	}
	// While the key stays held, the waiter sends nothing more: its one
	// query waits at the server.
	sent := rt.requests.Load()
	time.Sleep(1500 * time.Millisecond)
	if n := rt.requests.Load() - sent; n != 0 {
		t.Fatalf("the waiter sent %d requests in 1.5 s while the key was held, want 0 (it polls)", n)
	}
	if n := rt.blocking.Load(); n != 1 {
		t.Fatalf("%d blocking queries before the release, want 1", n)
	}
	released := time.Now()
	if err := first.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	r := <-got
	if r.err != nil {
		t.Fatalf("the waiter: %v", r.err)
	}
	defer func() { _ = r.lease.Unlock(context.Background()) }()
	woke := r.at.Sub(released)
	t.Logf("the waiter had the key %v after the release", woke)
	if woke >= opts.TTL/3 {
		t.Fatalf("the waiter had the key %v after the release: its blocking query ran out (%v), the release did not wake it", woke, opts.TTL/3)
	}
	if r.lease.Token <= first.Token {
		t.Errorf("token %d after %d: want it higher", r.lease.Token, first.Token)
	}
}

// TestReleasedBetweenRefusalAndRead: a waiter refused because the key was
// held, which then reads the key free (the holder released it in between),
// tries again at once: only a key refused twice while free is a
// lock-delay worth a sleep. The release is made to land in that gap, and
// the sleep made longer than the waiter's whole wait, so a waiter that
// slept would not get the key.
func TestReleasedBetweenRefusalAndRead(t *testing.T) {
	consullock.SetLockDelayRetry(t, 10*time.Minute)
	ctx, opts, cfg, holder, key := handoffCase(t)
	first, err := holder.Lock(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	rt := &releaseOnRefusal{next: http.DefaultTransport.(*http.Transport).Clone(), release: func() error { return first.Unlock(ctx) }}
	wctx, wcancel := context.WithTimeout(ctx, 30*time.Second)
	defer wcancel()
	second, err := consullock.New(clientVia(t, rt.next.(*http.Transport), rt), opts, cfg).Lock(wctx, key)
	if !rt.released.Load() {
		t.Fatal("the waiter was never refused: the release did not land between the refusal and the read")
	}
	if err != nil {
		t.Fatalf("the waiter, refused while held and then reading the key free: %v (it slept as for a lock-delay)", err)
	}
	if err := second.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
}

// releaseOnRefusal is a transport that, on the first refused transaction
// (an acquire, 409), calls release before the refusal reaches the client.
type releaseOnRefusal struct {
	next     http.RoundTripper
	release  func() error
	released atomic.Bool
}

func (r *releaseOnRefusal) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := r.next.RoundTrip(req)
	if err == nil && req.URL.Path == "/v1/txn" && resp.StatusCode == http.StatusConflict && !r.released.Swap(true) {
		if rerr := r.release(); rerr != nil {
			return nil, fmt.Errorf("release the holder: %w", rerr)
		}
	}
	return resp, err
}

// TestSessionReused: a released lease's session serves the next
// acquisition (no session write per purchase), Close destroys the idle
// ones, and with NoRenew every acquisition has a session of its own.
func TestSessionReused(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c := client(t)
	session := func(l *consullock.Locker, key string) string {
		t.Helper()
		pair, _, err := c.KV().Get(l.Name(key), nil)
		if err != nil || pair == nil {
			t.Fatalf("read the lock key: %v (pair %v)", err, pair)
		}
		return pair.Session
	}
	for _, tc := range []struct {
		name   string
		opts   lockimpl.Options
		reused bool
	}{
		{"renewed", lockimpl.Options{TTL: 10 * time.Second}, true},
		{"no renew", lockimpl.Options{TTL: 10 * time.Second, NoRenew: true}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := consullock.New(c, tc.opts, consullock.Config{LockDelay: consullock.NoLockDelay})
			key := locktest.Key(t)
			var ids []string
			for i := 0; i < 2; i++ {
				lease, err := l.Lock(ctx, key)
				if err != nil {
					t.Fatal(err)
				}
				ids = append(ids, session(l, key))
				if err := lease.Unlock(ctx); err != nil {
					t.Fatal(err)
				}
			}
			if got := ids[0] == ids[1]; got != tc.reused {
				t.Fatalf("sessions %q then %q: reused %v, want %v", ids[0], ids[1], got, tc.reused)
			}
			if err := l.Close(); err != nil {
				t.Fatal(err)
			}
			// Destroyed at Close (reused) or at Unlock, in the background
			// (no renew): Consul no longer has either.
			for _, id := range ids {
				for {
					info, _, err := c.Session().Info(id, nil)
					if err != nil {
						t.Fatal(err)
					}
					if info == nil {
						break
					}
					select {
					case <-ctx.Done():
						t.Fatalf("session %s still there after Close", id)
					case <-time.After(20 * time.Millisecond):
					}
				}
			}
		})
	}
}

// TestRefusedSessionReused: an attempt that ends without the lock (TryLock
// refused, Lock given up at its deadline) leaves its session to the next
// acquisition instead of destroying it and creating another (two raft
// writes a refused purchase).
func TestRefusedSessionReused(t *testing.T) {
	for _, tc := range []struct {
		name   string
		giveUp func(ctx context.Context, l *consullock.Locker, key string) error
	}{
		{"trylock refused", func(ctx context.Context, l *consullock.Locker, key string) error {
			_, err := l.TryLock(ctx, key)
			return err
		}},
		{"lock given up", func(ctx context.Context, l *consullock.Locker, key string) error {
			wctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
			defer cancel()
			_, err := l.Lock(wctx, key)
			return err
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, opts, cfg, holder, key := handoffCase(t)
			c := client(t)
			held, err := holder.Lock(ctx, key)
			if err != nil {
				t.Fatal(err)
			}
			waiter := newLocker(t, opts, cfg)
			if err := tc.giveUp(ctx, waiter, key); err == nil {
				t.Fatal("acquired a held lock")
			}
			before, _, err := c.Session().List(nil)
			if err != nil {
				t.Fatal(err)
			}
			if err := held.Unlock(ctx); err != nil {
				t.Fatal(err)
			}
			lease, err := waiter.TryLock(ctx, key)
			if err != nil {
				t.Fatal(err)
			}
			defer func() { _ = lease.Unlock(ctx) }()
			pair, _, err := c.KV().Get(waiter.Name(key), nil)
			if err != nil || pair == nil {
				t.Fatalf("read the lock key: %v (pair %v)", err, pair)
			}
			if !slices.ContainsFunc(before, func(s *api.SessionEntry) bool { return s.ID == pair.Session }) {
				t.Fatalf("the acquisition after the attempt used a new session %s, not the attempt's", pair.Session)
			}
		})
	}
}
