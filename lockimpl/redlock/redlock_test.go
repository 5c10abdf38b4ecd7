package redlock_test

import (
	"context"
	"errors"
	"fmt"
	"math/bits"
	"strconv"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"golang.org/x/sync/errgroup"

	"github.com/seckill-lab/seckill/internal/testenv"
	"github.com/seckill-lab/seckill/lockimpl"
	"github.com/seckill-lab/seckill/lockimpl/locktest"
	"github.com/seckill-lab/seckill/lockimpl/redlock"
)

// clients opens one new client per configured Redis master.
func clients(tb testing.TB) []redis.UniversalClient {
	tb.Helper()
	addrs := testenv.List(tb, testenv.RedisAddrs)
	out := make([]redis.UniversalClient, 0, len(addrs))
	for _, a := range addrs {
		c := redis.NewClient(&redis.Options{Addr: a})
		tb.Cleanup(func() { _ = c.Close() })
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		err := c.Ping(ctx).Err()
		cancel()
		if err != nil {
			testenv.Unavailable(tb, "redis "+a, err)
		}
		out = append(out, c)
	}
	return out
}

func TestConformance(t *testing.T) {
	locktest.Run(t, locktest.Factory{
		New: func(tb testing.TB, opts lockimpl.Options) lockimpl.Locker {
			return redlock.New(clients(tb), opts)
		},
		Caps: locktest.Capabilities{Distributed: true, Watchdog: true, LostLease: true, NoRenew: true},
		Break: func(tb testing.TB, l lockimpl.Locker, lease *lockimpl.Lease) {
			for _, c := range clients(tb) {
				if err := c.Del(context.Background(), l.(*redlock.Locker).Key(lease.Key)).Err(); err != nil {
					tb.Fatalf("DEL: %v", err)
				}
			}
		},
		AssertClean: func(tb testing.TB, l lockimpl.Locker, key string) {
			for i, c := range clients(tb) {
				n, err := c.Exists(context.Background(), l.(*redlock.Locker).Key(key)).Result()
				if err != nil {
					tb.Fatalf("EXISTS on master %d: %v", i, err)
				}
				if n != 0 {
					tb.Errorf("lock key for %q still on master %d after release", key, i)
				}
			}
		},
		Goroutines: 32,
		Iterations: 8,
	})
}

// TestQuorum runs, as redsync's own TestMutexQuorum does, every pattern of
// masters being down (a client pointed at a port nothing listens on): with
// a majority up the lock works, and a second owner still waits for it; with
// a majority down, Lock fails at once with an error that is not ErrLocked,
// and the backend's Ping says so.
func TestQuorum(t *testing.T) {
	live := clients(t)
	n := len(live)
	dead := func(i int) redis.UniversalClient {
		c := redis.NewClient(&redis.Options{Addr: "127.0.0.1:" + strconv.Itoa(1+i), MaxRetries: -1, DialTimeout: 200 * time.Millisecond})
		t.Cleanup(func() { _ = c.Close() })
		return c
	}
	for mask := 0; mask < 1<<n; mask++ {
		down := bits.OnesCount(uint(mask))
		if down != 1 && down != 3 && mask != 0 {
			continue // the cases: none, 1 and 3 of 5 down, in every position
		}
		t.Run(fmt.Sprintf("down=%0*b", n, mask), func(t *testing.T) {
			cs := make([]redis.UniversalClient, n)
			for i := range cs {
				cs[i] = live[i]
				if mask&(1<<i) != 0 {
					cs[i] = dead(i)
				}
			}
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			b := redlock.NewBackend(cs)
			a, _ := b.NewLocker(ctx, lockimpl.Options{TTL: 2 * time.Second})
			other, _ := b.NewLocker(ctx, lockimpl.Options{TTL: 2 * time.Second})
			key := locktest.Key(t)
			lease, err := a.Lock(ctx, key)
			if n-down >= n/2+1 {
				if err != nil {
					t.Fatalf("%d of %d masters up (a quorum): Lock: %v", n-down, n, err)
				}
				if err := b.Ping(ctx); err != nil {
					t.Errorf("Ping with a quorum up: %v", err)
				}
				if _, err := other.TryLock(ctx, key); !errors.Is(err, lockimpl.ErrLocked) {
					t.Errorf("second owner's TryLock while held: %v, want ErrLocked", err)
				}
				if err := lease.Unlock(ctx); err != nil {
					t.Fatalf("Unlock: %v", err)
				}
				// Contention splits votes between owners; with a master down,
				// redsync joins the dead master's error to the taken votes.
				// That is a lost round, not an outage: every owner gets in.
				var g errgroup.Group
				for w := range 8 {
					l := []lockimpl.Locker{a, other}[w%2]
					g.Go(func() error {
						for range 3 {
							lease, err := l.Lock(ctx, key)
							if err != nil {
								return fmt.Errorf("contended Lock with %d of %d up: %w", n-down, n, err)
							}
							if err := lease.Unlock(ctx); err != nil {
								return err
							}
						}
						return nil
					})
				}
				if err := g.Wait(); err != nil {
					t.Fatal(err)
				}
				return
			}
			if err == nil {
				_ = lease.Unlock(ctx)
				t.Fatalf("%d of %d masters up: Lock succeeded without a quorum", n-down, n)
			}
			if errors.Is(err, lockimpl.ErrLocked) || ctx.Err() != nil {
				t.Fatalf("no quorum possible: Lock = %v (ctx %v), want a prompt error that is not ErrLocked", err, ctx.Err())
			}
			if err := b.Ping(ctx); err == nil {
				t.Error("Ping with a majority down succeeded")
			}
		})
	}
}

// TestRoundsCounted: each TryLock round is counted by its outcome, with
// other owners' keys placed by hand on chosen masters: none (acquired), a
// every master held by another owner (taken), and the round winning some
// masters but not a quorum (split: a failed quorum round), whether one
// other owner holds the rest or two others split them.
func TestRoundsCounted(t *testing.T) {
	cs := clients(t)
	if len(cs) < 5 {
		t.Fatalf("need 5 Redis masters, have %d", len(cs))
	}
	cases := []struct {
		name   string
		owners []string // per master: "" free, else the value another owner set
		want   string
	}{
		{"free", []string{"", "", "", "", ""}, lockimpl.RoundAcquired},
		{"two held", []string{"x", "x", "", "", ""}, lockimpl.RoundAcquired},
		{"all held", []string{"x", "x", "x", "x", "x"}, lockimpl.RoundTaken},
		{"quorum held", []string{"x", "x", "x", "", ""}, lockimpl.RoundSplit},
		{"votes split", []string{"x", "x", "y", "", ""}, lockimpl.RoundSplit},
	}
	ctx := context.Background()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			counts := map[string]int{}
			l := redlock.New(cs, lockimpl.Options{TTL: 5 * time.Second, Count: func(n string) { counts[n]++ }})
			key := locktest.Key(t)
			for i, v := range tc.owners {
				if v != "" {
					if err := cs[i].Set(ctx, l.Key(key), v, 5*time.Second).Err(); err != nil {
						t.Fatal(err)
					}
				}
			}
			t.Cleanup(func() {
				for _, c := range cs {
					c.Del(ctx, l.Key(key))
				}
			})
			lease, err := l.TryLock(ctx, key)
			if tc.want == lockimpl.RoundAcquired {
				if err != nil {
					t.Fatalf("TryLock: %v", err)
				}
				_ = lease.Unlock(ctx)
			} else if !errors.Is(err, lockimpl.ErrLocked) {
				t.Fatalf("TryLock: %v, want ErrLocked", err)
			}
			if counts[tc.want] != 1 || len(counts) != 1 {
				t.Fatalf("counts %v, want one %s", counts, tc.want)
			}
		})
	}
}
