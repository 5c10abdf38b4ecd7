package zklock_test

import (
	"context"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/seckill-lab/seckill/internal/netfault"
	"github.com/seckill-lab/seckill/internal/testenv"
	"github.com/seckill-lab/seckill/lockimpl"
	"github.com/seckill-lab/seckill/lockimpl/locktest"
	"github.com/seckill-lab/seckill/lockimpl/zklock"
)

// conn opens a new ZooKeeper session, closed at cleanup.
func conn(tb testing.TB, opts lockimpl.Options) *zk.Conn {
	tb.Helper()
	servers := testenv.List(tb, testenv.ZKServers)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	c, err := zklock.Dial(ctx, servers, opts)
	if err != nil {
		testenv.Unavailable(tb, "zookeeper", err)
	}
	tb.Cleanup(c.Close)
	return c
}

func children(tb testing.TB, l lockimpl.Locker, key string) []string {
	tb.Helper()
	kids, _, err := conn(tb, lockimpl.Options{}).Children(l.(*zklock.Locker).Dir(key))
	if err != nil && err != zk.ErrNoNode {
		tb.Fatalf("children: %v", err)
	}
	return kids
}

// variants are the predecessor recipe and the herd variant: both correct.
var variants = []struct {
	name string
	new  func(*zk.Conn, lockimpl.Options) *zklock.Locker
}{
	{"recipe", zklock.New},
	{"herd", zklock.NewHerd},
}

func TestConformance(t *testing.T) {
	for _, v := range variants {
		t.Run(v.name, func(t *testing.T) {
			t.Parallel()
			conformance(t, v.new)
		})
	}
}

func conformance(t *testing.T, build func(*zk.Conn, lockimpl.Options) *zklock.Locker) {
	locktest.Run(t, locktest.Factory{
		New: func(tb testing.TB, opts lockimpl.Options) lockimpl.Locker {
			return build(conn(tb, opts), opts)
		},
		Caps: locktest.Capabilities{Distributed: true, Tokens: true, Watchdog: true, LostLease: true},
		Break: func(tb testing.TB, l lockimpl.Locker, lease *lockimpl.Lease) {
			c := conn(tb, lockimpl.Options{})
			dir := l.(*zklock.Locker).Dir(lease.Key)
			for _, k := range children(tb, l, lease.Key) {
				if err := c.Delete(dir+"/"+k, -1); err != nil {
					tb.Fatalf("delete %s: %v", k, err)
				}
			}
		},
		AssertClean: func(tb testing.TB, l lockimpl.Locker, key string) {
			if kids := children(tb, l, key); len(kids) != 0 {
				tb.Errorf("nodes left under %s: %v", l.(*zklock.Locker).Dir(key), kids)
			}
		},
		Iterations: 10,
	})
}

// TestSessionExpiryIsLost: closing the holder's session (which deletes its
// ephemeral node and ends its watches) is reported as a lost lease.
func TestSessionEndIsLost(t *testing.T) {
	c := conn(t, lockimpl.Options{})
	l := zklock.New(c, lockimpl.Options{})
	lease, err := l.Lock(context.Background(), locktest.Key(t))
	if err != nil {
		t.Fatal(err)
	}
	c.Close()
	select {
	case <-lease.Lost():
	case <-time.After(10 * time.Second):
		t.Fatal("lease not reported lost after the session ended")
	}
}

func BenchmarkZKCreate(b *testing.B) {
	c := conn(b, lockimpl.Options{})
	for b.Loop() {
		p, err := c.Create("/seckill-bench-", nil, zk.FlagEphemeral|zk.FlagSequence, zk.WorldACL(zk.PermAll))
		if err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		_ = c.Delete(p, -1)
		b.StartTimer()
	}
}

func BenchmarkZKLockUncontended(b *testing.B) {
	locktest.Uncontended(b, zklock.New(conn(b, lockimpl.Options{}), lockimpl.Options{}))
}

func BenchmarkZKHandoff(b *testing.B) {
	a := zklock.New(conn(b, lockimpl.Options{}), lockimpl.Options{})
	w := zklock.New(conn(b, lockimpl.Options{}), lockimpl.Options{})
	locktest.Handoff(b, a, w)
}

// TestHerdWatchEvents counts the watch events delivered to waiters per
// acquisition with N waiters queued behind a holder (each its own
// session, as separate instances): the recipe wakes only the next waiter
// (at most 1 event per acquisition), the herd variant wakes every waiter on
// every change (about N/2). A count, not a timing.
func TestHerdWatchEvents(t *testing.T) {
	const waiters = 8
	perAcq := map[string]float64{}
	for _, v := range variants {
		t.Run(v.name, func(t *testing.T) {
			perAcq[v.name] = watchEventsPerAcquisition(t, v.new, waiters)
			t.Logf("%s: %.2f watch events per acquisition with %d waiters", v.name, perAcq[v.name], waiters)
		})
	}
	recipe, herd := perAcq["recipe"], perAcq["herd"]
	if recipe > 1 {
		t.Errorf("recipe: %.2f watch events per acquisition, want at most 1 (only the predecessor is watched)", recipe)
	}
	if herd <= recipe {
		t.Errorf("herd: %.2f watch events per acquisition, want more than the recipe's %.2f", herd, recipe)
	}
}

func watchEventsPerAcquisition(t *testing.T, build func(*zk.Conn, lockimpl.Options) *zklock.Locker, waiters int) float64 {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var events atomic.Int64
	opts := lockimpl.Options{OnWatchEvent: func() { events.Add(1) }}
	key := locktest.Key(t)
	gate := build(conn(t, opts), opts)
	held, err := gate.Lock(ctx, key)
	if err != nil {
		t.Fatalf("gate: Lock: %v", err)
	}
	var (
		wg       sync.WaitGroup
		acquired atomic.Int64
		errs     = make(chan error, waiters)
	)
	for range waiters {
		l := build(conn(t, opts), opts)
		wg.Add(1)
		go func() {
			defer wg.Done()
			lease, err := l.Lock(ctx, key)
			if err != nil {
				errs <- err
				return
			}
			acquired.Add(1)
			errs <- lease.Unlock(ctx)
		}()
	}
	// Release the gate only once every waiter queued its node.
	for len(children(t, gate, key)) < waiters+1 {
		select {
		case <-ctx.Done():
			t.Fatalf("waiters did not queue: %v", ctx.Err())
		case <-time.After(10 * time.Millisecond):
		}
	}
	before := events.Load() // the herd already woke on the others' creates
	if err := held.Unlock(ctx); err != nil {
		t.Fatalf("gate: Unlock: %v", err)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatalf("waiter: %v", err)
		}
	}
	if n := acquired.Load(); n != int64(waiters) {
		t.Fatalf("%d of %d waiters acquired", n, waiters)
	}
	t.Logf("%d watch events while queuing, %d after the gate's release", before, events.Load()-before)
	return float64(events.Load()) / float64(waiters)
}

// TestReleaseLostWithTheConnection: an Unlock whose delete is lost with
// the connection (the link stalls after the lock was taken, so the client
// gives the connection up and the request fails) must still release the
// lock once the link heals. The session survives the stall (it reconnects
// within its timeout), so a node left behind would hold the lock for as
// long as the session lives: no other session could ever take it
// (Curator's answer is the "guaranteed" delete, retried until it is
// applied or the session is gone).
func TestReleaseLostWithTheConnection(t *testing.T) {
	servers := testenv.List(t, testenv.ZKServers)
	p, err := netfault.Start("zk-release", "127.0.0.1:"+strconv.Itoa(testenv.FreePort(t)), servers[0])
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	opts := lockimpl.Options{TTL: 4 * time.Second, Prefix: "/seckill-test/release-lost-" + strconv.FormatInt(time.Now().UnixNano(), 36)}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	viaProxy, err := zklock.Dial(ctx, []string{p.Addr()}, opts)
	cancel()
	if err != nil {
		testenv.Unavailable(t, "zookeeper through a proxy", err)
	}
	t.Cleanup(viaProxy.Close)
	holder := zklock.New(viaProxy, opts)
	lease, err := holder.Lock(context.Background(), "k")
	if err != nil {
		t.Fatal(err)
	}
	session := viaProxy.SessionID()
	if err := p.Stall(); err != nil {
		t.Fatal(err)
	}
	// The client gives the stalled connection up after 2/3 of the session
	// timeout and fails the pending delete.
	uctx, ucancel := context.WithTimeout(context.Background(), 10*time.Second)
	unlockErr := lease.Unlock(uctx)
	ucancel()
	if unlockErr == nil {
		t.Fatal("Unlock through a stalled link returned nil")
	}
	if err := p.Heal(context.Background()); err != nil {
		t.Fatal(err)
	}
	other := zklock.New(conn(t, opts), opts)
	// Bounded by the session timeout plus a reconnect: a node left behind
	// would never go, because the holder's session does not end.
	lctx, lcancel := context.WithTimeout(context.Background(), 2*opts.TTL)
	defer lcancel()
	next, err := other.Lock(lctx, "k")
	if err != nil {
		t.Fatalf("the released lock was not free %v after the heal (the holder's Unlock said %q; holder's session %x now %x): %v",
			2*opts.TTL, unlockErr, session, viaProxy.SessionID(), err)
	}
	if viaProxy.SessionID() != session {
		t.Errorf("the holder's session changed (%x to %x): the stall outlived it, and the test proved nothing", session, viaProxy.SessionID())
	}
	if err := next.Unlock(context.Background()); err != nil {
		t.Fatal(err)
	}
}
