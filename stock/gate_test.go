package stock

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"gorm.io/gorm"
)

// TestGate: at most bound callers are inside at once, as many as can be
// are let in, and a caller whose context ends while it waits is refused
// with the context's error.
func TestGate(t *testing.T) {
	cases := []struct{ bound, callers, inside int }{
		{0, 6, 6}, // no bound
		{1, 6, 1},
		{3, 6, 3},
		{4, 2, 2},
	}
	for _, c := range cases {
		t.Run(fmt.Sprintf("bound %d callers %d", c.bound, c.callers), func(t *testing.T) {
			g := newGate(c.bound)
			var inside, most atomic.Int32
			release := make(chan struct{})
			var wg sync.WaitGroup
			for range c.callers {
				wg.Go(func() {
					if err := g.enter(context.Background()); err != nil {
						t.Error(err)
						return
					}
					n := inside.Add(1)
					for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
					}
					<-release
					inside.Add(-1)
					g.leave()
				})
			}
			for inside.Load() < int32(c.inside) {
				time.Sleep(time.Millisecond)
			}
			if c.bound > 0 && c.callers > c.bound {
				ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
				err := g.enter(ctx)
				cancel()
				if !errors.Is(err, context.DeadlineExceeded) {
					t.Errorf("enter at a full gate: %v, want the context's deadline", err)
				}
			}
			close(release)
			wg.Wait()
			if got := most.Load(); got != int32(c.inside) {
				t.Errorf("at most %d inside at once, want %d", got, c.inside)
			}
		})
	}
}

// TestBoundedAtomic: a bounded store's lock-free purchases use at most
// its bound of MySQL connections at once and sell exactly the stock; a
// purchase that cannot get a place before its context ends writes
// nothing.
func TestBoundedAtomic(t *testing.T) {
	const bound = 2
	st := testStoreOf(t, func(db *gorm.DB) *SQLStore { return NewBoundedStore(db, bound) })
	sqlDB, err := st.sqlDB()
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	goods := 4_000_000_000 + rand.Int64N(1_000_000_000)
	sell := func(n int, prefix string) (sold, soldOut int) {
		var mu sync.Mutex
		var wg sync.WaitGroup
		for i := range n {
			wg.Go(func() {
				_, err := st.Atomic(ctx, Deduction{Order: order(goods, fmt.Sprintf("%d-%s-%d", goods, prefix, i))})
				mu.Lock()
				defer mu.Unlock()
				switch {
				case err == nil:
					sold++
				case errors.Is(err, ErrSoldOut):
					soldOut++
				default:
					t.Error(err)
				}
			})
		}
		wg.Wait()
		return sold, soldOut
	}

	// 24 at once on stock to spare: the pool never needed more than the
	// bound (Migrate's connection is closed by now).
	if err := st.Reset(ctx, goods, 100); err != nil {
		t.Fatal(err)
	}
	sqlDB.SetMaxIdleConns(100)
	if sold, _ := sell(24, "a"); sold != 24 {
		t.Fatalf("sold %d of 24 with stock to spare", sold)
	}
	if open := sqlDB.Stats().OpenConnections; open > bound {
		t.Errorf("%d MySQL connections open after 24 concurrent purchases, want at most the bound %d", open, bound)
	}

	// The gate full: a purchase gives up when its context ends, and writes
	// nothing.
	for range bound {
		if err := st.atomic.enter(ctx); err != nil {
			t.Fatal(err)
		}
	}
	wctx, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	_, err = st.Atomic(wctx, Deduction{Order: order(goods, fmt.Sprintf("%d-waiting", goods))})
	cancel()
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("purchase at a full gate: %v, want the context's deadline", err)
	}
	for range bound {
		st.atomic.leave()
	}
	if a, err := st.Audit(ctx, goods); err != nil || a.Orders != 24 || a.Stock != 76 {
		t.Fatalf("after the refused purchase: audit %+v, %v; want 24 orders and stock 76", a, err)
	}

	// A reset to 10 (its orders go): 30 at once sell exactly 10.
	if err := st.Reset(ctx, goods, 10); err != nil {
		t.Fatal(err)
	}
	sold, soldOut := sell(30, "b")
	if a, err := st.Audit(ctx, goods); err != nil || sold != 10 || soldOut != 20 || a.Stock != 0 || a.Orders != 10 {
		t.Fatalf("30 on stock 10: sold %d, sold out %d, audit %+v, %v", sold, soldOut, a, err)
	}
}

// TestScaledInflight: the bound grows with the round trip to the
// database, from base on loopback.
func TestScaledInflight(t *testing.T) {
	cases := []struct {
		base int
		rtt  time.Duration
		want int
	}{
		{4, 0, 4},
		{4, 30 * time.Microsecond, 4},    // loopback
		{4, 90 * time.Microsecond, 5},    // loopback, a slower ping
		{4, 240 * time.Microsecond, 6},   // zone
		{4, 2100 * time.Microsecond, 21}, // cross-zone
		{4, 30 * time.Millisecond, 244},  // another region
		{0, 2 * time.Millisecond, 0},     // no bound stays none
		{-1, time.Millisecond, 0},
		{4, -time.Millisecond, 4},
	}
	for _, c := range cases {
		if got := ScaledInflight(c.base, c.rtt); got != c.want {
			t.Errorf("ScaledInflight(%d, %v) = %d, want %d", c.base, c.rtt, got, c.want)
		}
	}
}
