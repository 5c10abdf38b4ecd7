package redisnaive_test

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/seckill-lab/seckill/lockimpl"
	"github.com/seckill-lab/seckill/lockimpl/locktest"
	"github.com/seckill-lab/seckill/lockimpl/redisnaive"
)

func client(tb testing.TB) *redis.Client { return locktest.RedisClient(tb) }

type keyer interface{ Key(string) string }

func assertClean(tb testing.TB, l lockimpl.Locker, key string) {
	n, err := client(tb).Exists(context.Background(), l.(keyer).Key(key)).Result()
	if err != nil {
		tb.Fatalf("EXISTS: %v", err)
	}
	if n != 0 {
		tb.Errorf("lock key for %q still exists after release", key)
	}
}

func TestConformance(t *testing.T) {
	tests := []struct {
		name string
		new  func(tb testing.TB, opts lockimpl.Options) lockimpl.Locker
	}{
		{"Spin", func(tb testing.TB, opts lockimpl.Options) lockimpl.Locker {
			return redisnaive.NewSpin(client(tb), opts)
		}},
		{"TTL", func(tb testing.TB, opts lockimpl.Options) lockimpl.Locker {
			return redisnaive.NewTTL(client(tb), opts)
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			locktest.Run(t, locktest.Factory{
				New:         tc.new,
				Caps:        locktest.Capabilities{Distributed: true},
				AssertClean: assertClean,
				// Work is far below the TTL here: the flaw needs work > TTL.
				TTL:        10 * time.Second,
				Goroutines: 32,
				Iterations: 10,
			})
		})
	}
}

// TestTTLFlaw reproduces the seed's failure story: the work outlasts the
// TTL, a second holder gets in while the first still works, and the first
// holder's plain DEL removes the second holder's lock, letting a third in.
func TestTTLFlaw(t *testing.T) {
	ctx := context.Background()
	ttl := 200 * time.Millisecond
	a := redisnaive.NewTTL(client(t), lockimpl.Options{TTL: ttl})
	b := redisnaive.NewTTL(client(t), lockimpl.Options{TTL: ttl})
	key := locktest.Key(t)

	first, err := a.Lock(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	took := time.Now()
	// The first holder is still "working" (it never unlocks before this
	// point) when the second one gets in: the key expired under it, so the
	// second waited out the TTL rather than a release.
	wctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	second, err := b.Lock(wctx, key)
	if err != nil {
		t.Fatalf("second holder never got in after the TTL: %v", err)
	}
	if waited := time.Since(took); waited < ttl-20*time.Millisecond {
		t.Fatalf("second holder got in after %v, before the %v TTL ran out", waited, ttl)
	}
	// The first holder finishes and deletes the lock — the second's.
	if err := first.Unlock(ctx); err != nil {
		t.Fatalf("first holder's DEL: %v (want it to succeed: it deletes the second's key)", err)
	}
	third, err := a.TryLock(ctx, key)
	if err != nil {
		t.Fatalf("third TryLock while the second still holds: %v; want success (the flaw)", err)
	}
	// Both second and third now "hold" the lock at once: the key is the
	// third's, and the second, still working, never let go.
	if n, err := client(t).Exists(ctx, a.Key(key)).Result(); err != nil || n != 1 {
		t.Fatalf("EXISTS = %d, %v: want the third holder's key", n, err)
	}
	_ = third.Unlock(ctx)
	_ = second.Unlock(ctx) // may find nothing: the key was already deleted
}

// TestSpinNeverExpires shows the other flaw: a holder that never unlocks
// (a crashed process) blocks the key forever.
func TestSpinNeverExpires(t *testing.T) {
	ctx := context.Background()
	a := redisnaive.NewSpin(client(t), lockimpl.Options{TTL: 100 * time.Millisecond})
	key := locktest.Key(t)
	c := client(t)
	crashed, err := a.TryLock(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	ttl, err := c.PTTL(ctx, a.Key(key)).Result()
	if err != nil {
		t.Fatal(err)
	}
	if ttl >= 0 {
		t.Fatalf("PTTL = %v, want no expiry (-1)", ttl)
	}
	_ = crashed.Unlock(ctx)
}
