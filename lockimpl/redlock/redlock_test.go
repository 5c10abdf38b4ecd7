package redlock_test

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

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
