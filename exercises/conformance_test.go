package exercises_test

import (
	"context"
	"io"
	"os"
	"testing"
	"time"

	"github.com/seckill-lab/seckill/exercises"
	"github.com/seckill-lab/seckill/internal/lockwire"
	"github.com/seckill-lab/seckill/internal/testenv"
	"github.com/seckill-lab/seckill/lockimpl"
	"github.com/seckill-lab/seckill/lockimpl/locktest"
	"github.com/seckill-lab/seckill/stock/catalog"
)

// TestConformance runs lockimpl's conformance suite on each exercise's
// lock with the properties the exercise requires (exercises.Required),
// whatever the lock claims of itself. Whose lock: $SECKILL_GRADE_TARGET,
// "student" (the packages under exercises/: what `seckill grade` runs) or
// "key" (the answer keys: the default, so the suite proves that the keys
// pass what the exercises ask).
func TestConformance(t *testing.T) {
	key := os.Getenv(exercises.EnvGradeTarget) != exercises.TargetStudent
	for _, e := range exercises.All() {
		t.Run(e.Name, func(t *testing.T) {
			clients := clientsFor(t, e.Server)
			// A Redis exercise that does not own the renewal (exercise 1)
			// is not asked to honour Options.NoRenew: its expiry case
			// pauses the holder's own client instead, so a right lock
			// that also renews its key passes. The watchdog exercise owns
			// the renewal and its switch, and is asked to honour NoRenew.
			pausable := e.Server == catalog.ServerRedis && !e.Required.Renewal
			var ps pausers
			var pause func(testing.TB, lockimpl.Locker) func()
			if pausable {
				pause = ps.Pause
			}
			locktest.Run(t, locktest.Factory{
				New: func(tb testing.TB, opts lockimpl.Options) lockimpl.Locker {
					opts.Prefix = e.Prefix()
					c, p := clients, (*pauser)(nil)
					if pausable {
						p = &pauser{}
						hooked := testenv.RedisClient(tb)
						hooked.AddHook(p)
						c = lockwire.Clients{Redis: hooked}
					}
					l, err := e.Locker(key, c, opts)
					if err != nil {
						tb.Fatalf("build the lock: %v", err)
					}
					if c, ok := l.(io.Closer); ok {
						tb.Cleanup(func() { _ = c.Close() })
					}
					if p != nil {
						ps.add(l, p)
					}
					return l
				},
				Pause: pause,
				Caps: locktest.Capabilities{
					Distributed: true, Tokens: e.Required.Tokens, Watchdog: e.Required.Watchdog,
					LostLease: e.Required.LostLease, NoRenew: e.Required.NoRenew,
				},
				Break: func(tb testing.TB, _ lockimpl.Locker, lease *lockimpl.Lease) {
					// A Redis lock's key is the prefix and the lock's name
					// (exercises.Exercise.Prefix): DEL takes it away.
					if err := clients.Redis.Del(context.Background(), e.Prefix()+lease.Key).Err(); err != nil {
						tb.Fatalf("DEL: %v", err)
					}
				},
				KeyTTL: func(tb testing.TB, key string) (time.Duration, bool) {
					if e.Server != catalog.ServerRedis {
						return 0, false
					}
					return pttl(tb, clients.Redis, e.Prefix()+key)
				},
				Iterations:  10,
				ExpirySlack: locktest.DefaultExpirySlack,
			})
			if e.Required.Acquire {
				t.Run("ExpiryInOneCommand", func(t *testing.T) { t.Parallel(); expiryInOneCommand(t, e, key) })
				t.Run("ReleaseOnlyOwn", func(t *testing.T) { t.Parallel(); releaseOnlyOwn(t, e, key) })
			}
			if e.Required.Renewal {
				t.Run("RenewsOnlyOwn", func(t *testing.T) { t.Parallel(); renewsOnlyOwn(t, e, key) })
				t.Run("RenewalStops", func(t *testing.T) { t.Parallel(); renewalStops(t, e, key) })
			}
		})
	}
}

// clientsFor connects to the test stack's server s.
func clientsFor(t *testing.T, s catalog.Server) lockwire.Clients {
	t.Helper()
	switch s {
	case catalog.ServerRedis:
		return lockwire.Clients{Redis: testenv.RedisClient(t)}
	case catalog.ServerEtcd:
		return lockwire.Clients{Shared: map[catalog.Server]any{catalog.ServerEtcd: testenv.EtcdClient(t)}}
	}
	t.Fatalf("no client for server %q", s)
	return lockwire.Clients{}
}
