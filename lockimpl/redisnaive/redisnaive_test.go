package redisnaive_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/seckill-lab/seckill/internal/testenv"
	"github.com/seckill-lab/seckill/lockimpl"
	"github.com/seckill-lab/seckill/lockimpl/locktest"
	"github.com/seckill-lab/seckill/lockimpl/redislock"
	"github.com/seckill-lab/seckill/lockimpl/redisnaive"
)

func client(tb testing.TB) *redis.Client { return testenv.RedisClient(tb) }

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
		// Owner without a release pause: correct while the work and the
		// release stay within the TTL (TestOwnerReleasePause shows the flaw).
		{"Owner", func(tb testing.TB, opts lockimpl.Options) lockimpl.Locker {
			return redisnaive.NewOwner(client(tb), opts)
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

// TestTTLFlaw reproduces the source's failure story: the work outlasts the
// TTL, a second holder gets in while the first still works, and the first
// holder's plain DEL removes the second holder's lock, letting a third in.
func TestTTLFlaw(t *testing.T) {
	ctx := context.Background()
	ttl := 200 * time.Millisecond
	var mu sync.Mutex
	counts := map[string]int{}
	count := func(name string) { mu.Lock(); counts[name]++; mu.Unlock() }
	a := redisnaive.NewTTL(client(t), lockimpl.Options{TTL: ttl, Count: count})
	b := redisnaive.NewTTL(client(t), lockimpl.Options{TTL: ttl, Count: count})
	key := locktest.Key(t)

	// Redis starts the key's TTL when the SET arrives, after this moment.
	invoked := time.Now()
	first, err := a.Lock(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	// The first holder is still "working" (it never unlocks before this
	// point) when the second one gets in: the key expired under it, so the
	// second waited out the TTL rather than a release.
	wctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	second, err := b.Lock(wctx, key)
	if err != nil {
		t.Fatalf("second holder never got in after the TTL: %v", err)
	}
	if waited := time.Since(invoked); waited < ttl-locktest.ExpiryResolution {
		t.Fatalf("second holder got in %v after the first Lock was called, before the %v TTL ran out", waited, ttl)
	}
	// The first holder finishes and deletes the lock — the second's, and
	// the lab counts it.
	if err := first.Unlock(ctx); err != nil {
		t.Fatalf("first holder's DEL: %v (want it to succeed: it deletes the second's key)", err)
	}
	mu.Lock()
	deleted := counts[lockimpl.DeletedAnother]
	mu.Unlock()
	if deleted != 1 {
		t.Fatalf("deleted_another = %d after the first holder deleted the second's lock, want 1", deleted)
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

// TestOwnerReleasePause reproduces the source's 锁被误删 story for the
// owner-checked lock without Lua: holder A's GET still sees its own value,
// A pauses before its DEL, its key expires in the pause, B takes the lock,
// and A's DEL deletes B's key, so C gets in while B still holds. Without
// the pause (the release comes after B got in), the owner check holds; and
// the Lua compare-and-delete of the `redis` lock keeps B's key however late
// A's release comes.
func TestOwnerReleasePause(t *testing.T) {
	const ttl = 400 * time.Millisecond
	tests := []struct {
		name string
		new  func(tb testing.TB) lockimpl.Locker
		// early: A's release starts right after it took the lock, before
		// its key expires; otherwise after B got the lock.
		early       bool
		wantDeleted bool
	}{
		{"owner/GET-pause-DEL", func(tb testing.TB) lockimpl.Locker {
			return redisnaive.NewOwner(client(tb), lockimpl.Options{TTL: ttl, ReleasePause: 4 * ttl})
		}, true, true},
		{"owner/late-release", func(tb testing.TB) lockimpl.Locker {
			return redisnaive.NewOwner(client(tb), lockimpl.Options{TTL: ttl})
		}, false, false},
		{"redis-lua/late-release", func(tb testing.TB) lockimpl.Locker {
			return redislock.New(client(tb), lockimpl.Options{TTL: ttl, NoRenew: true})
		}, false, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			a, b, c := tc.new(t), tc.new(t), tc.new(t)
			key := locktest.Key(t)
			full := a.(keyer).Key(key)

			first, err := a.Lock(ctx, key)
			if err != nil {
				t.Fatalf("A: Lock: %v", err)
			}
			released := make(chan error, 1)
			release := func() { released <- first.Unlock(ctx) }
			if tc.early {
				go release() // GET now, then the pause, then DEL
			}
			// B gets in only once A's key expired (A never released it in
			// time).
			second, err := b.Lock(ctx, key)
			if err != nil {
				t.Fatalf("B: Lock after A's TTL: %v", err)
			}
			defer func() { _ = second.Unlock(ctx) }()
			if !tc.early {
				go release()
			}
			err = <-released
			n, xerr := client(t).Exists(ctx, full).Result()
			if xerr != nil {
				t.Fatalf("EXISTS %s: %v", full, xerr)
			}
			third, terr := c.TryLock(ctx, key)
			if terr == nil {
				defer func() { _ = third.Unlock(ctx) }()
			}
			if tc.wantDeleted {
				if err != nil {
					t.Errorf("A's release: %v; want its DEL to succeed (on B's key)", err)
				}
				if n != 0 {
					t.Errorf("B's lock key still exists after A's DEL; want it deleted (the flaw)")
				}
				if terr != nil {
					t.Errorf("C: TryLock while B holds: %v; want success (the flaw)", terr)
				}
				return
			}
			if !errors.Is(err, lockimpl.ErrNotHeld) {
				t.Errorf("A's late release: %v; want ErrNotHeld", err)
			}
			if n != 1 {
				t.Errorf("B's lock key is gone after A's late release; want it kept")
			}
			if !errors.Is(terr, lockimpl.ErrLocked) {
				t.Errorf("C: TryLock while B holds: %v; want ErrLocked", terr)
			}
		})
	}
}
