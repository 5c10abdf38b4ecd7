package stock_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/seckill-lab/seckill/internal/sqltest"
	"github.com/seckill-lab/seckill/internal/testenv"
	"github.com/seckill-lab/seckill/lockimpl"
	"github.com/seckill-lab/seckill/lockimpl/mutexlock"
	. "github.com/seckill-lab/seckill/stock"
	"github.com/seckill-lab/seckill/stock/catalog"
)

// gatedBackend is the in-process mutex lock behind two test gates: its
// NewLocker waits for build (a lock server slow to open a session), and
// each Unlock takes unlockDelay (a slow release).
type gatedBackend struct {
	entered     chan struct{} // closed when NewLocker starts waiting
	build       chan struct{}
	unlockDelay time.Duration
}

func (g *gatedBackend) NewLocker(ctx context.Context, opts lockimpl.Options) (lockimpl.Locker, error) {
	if g.build != nil {
		close(g.entered)
		select {
		case <-g.build:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	return slowUnlock{Locker: mutexlock.New(opts), d: g.unlockDelay}, nil
}
func (g *gatedBackend) Ping(context.Context) error          { return nil }
func (g *gatedBackend) Clear(context.Context, string) error { return nil }
func (g *gatedBackend) Close() error                        { return nil }

type slowUnlock struct {
	*mutexlock.Locker
	d time.Duration
}

func (s slowUnlock) Lock(ctx context.Context, key string) (*lockimpl.Lease, error) {
	l, err := s.Locker.Lock(ctx, key)
	if err != nil {
		return nil, err
	}
	return lockimpl.NewLease(key, l.Token, func(ctx context.Context) error {
		time.Sleep(s.d)
		return l.Unlock(ctx)
	}), nil
}

// TestSetConfigOpensTheLockOutsideTheMutex: while a setting's locker is
// being built (NewLocker does network I/O), the service still answers what
// needs its mutex. Before, NewLocker ran under s.mu: Lockers (and every
// other setting change) waited for the lock server.
func TestSetConfigOpensTheLockOutsideTheMutex(t *testing.T) {
	st := sqltest.Store(t)
	g := &gatedBackend{entered: make(chan struct{}), build: make(chan struct{})}
	svc, err := NewService(ServiceOptions{Instance: "test", Store: st, Backends: map[string]LockBackend{catalog.Mutex: g}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { svc.Close() })
	set := make(chan error, 1)
	go func() { set <- svc.SetConfig(context.Background(), Config{Name: catalog.Mutex}) }()
	<-g.entered
	got := make(chan int, 1)
	go func() { got <- svc.Lockers() }()
	select {
	case n := <-got:
		if n != 0 {
			t.Errorf("Lockers while the first is being built: %d, want 0", n)
		}
	case <-time.After(testenv.LoadSlack):
		t.Error("Lockers blocked while a locker was being built: NewLocker runs under the service's mutex")
	}
	close(g.build)
	if err := <-set; err != nil {
		t.Fatal(err)
	}
	if n := svc.Lockers(); n != 1 {
		t.Errorf("Lockers after the switch: %d, want 1", n)
	}
}

// TestCloseWaitsForReleases: a purchase answers before its lock is
// released (the release runs in the background); Close waits for it, so
// no goroutine of the service outlives Close. Before, `go s.release`
// could still run (and use a closed locker) after Close returned.
func TestCloseWaitsForReleases(t *testing.T) {
	st := sqltest.Store(t)
	g := &gatedBackend{unlockDelay: 300 * time.Millisecond}
	svc, err := NewService(ServiceOptions{Instance: "test", Store: st, Backends: map[string]LockBackend{catalog.Mutex: g}, Events: NewEvents(100), Initial: Config{Name: catalog.Mutex}})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	goods := 3_000_000_000 + rand.Int64N(1_000_000_000)
	if _, err := svc.Reset(ctx, goods, 5); err != nil {
		t.Fatal(err)
	}
	if _, err := svc.Purchase(ctx, PurchaseRequest{GoodsID: goods, Qty: 1, UserID: "u", RequestID: fmt.Sprintf("%d-1", goods)}); err != nil {
		t.Fatal(err)
	}
	if err := svc.Close(); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 1<<20)
	stacks := string(buf[:runtime.Stack(buf, true)])
	for _, fn := range []string{"stock.(*Service).release", "stock.(*Service).letGo", "stock.(*Service).acquire.func"} {
		if strings.Contains(stacks, fn) {
			t.Errorf("a goroutine of the service outlived Close: %s\n%s", fn, stacks)
		}
	}
}
