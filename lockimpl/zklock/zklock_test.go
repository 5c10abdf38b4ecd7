package zklock_test

import (
	"context"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

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

func TestConformance(t *testing.T) {
	locktest.Run(t, locktest.Factory{
		New: func(tb testing.TB, opts lockimpl.Options) lockimpl.Locker {
			return zklock.New(conn(tb, opts), opts)
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
