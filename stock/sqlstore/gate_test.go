package sqlstore

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"
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
