package stock_test

import (
	"context"
	"math/rand/v2"
	"slices"
	"strconv"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/seckill-lab/seckill/internal/sqltest"
	"github.com/seckill-lab/seckill/internal/testenv"
	"github.com/seckill-lab/seckill/lockimpl/mysqllock"
	"github.com/seckill-lab/seckill/lockimpl/redislock"
	"github.com/seckill-lab/seckill/lockimpl/redisnaive"
	. "github.com/seckill-lab/seckill/stock"
	"github.com/seckill-lab/seckill/stock/catalog"
	"github.com/seckill-lab/seckill/stock/orderstream"
)

// TestResetSkipsDeadBackends resets with lock backends opened over a real
// Redis and over an address where nothing listens (a Redis that is down): the reset succeeds, clears what answers and lists
// the strategies of the dead one with the reason.
func TestResetSkipsDeadBackends(t *testing.T) {
	st := sqltest.Store(t)
	ctx := context.Background()
	live := redis.NewClient(&redis.Options{Addr: testenv.List(t, testenv.RedisAddrs)[0]})
	t.Cleanup(func() { live.Close() })
	if err := live.Ping(ctx).Err(); err != nil {
		testenv.Unavailable(t, "Redis", err)
	}
	dead := redis.NewClient(&redis.Options{Addr: "127.0.0.1:" + strconv.Itoa(testenv.FreePort(t)), MaxRetries: -1})
	t.Cleanup(func() { dead.Close() })

	sqlHandle, err := st.DB().DB()
	if err != nil {
		t.Fatal(err)
	}

	tests := []struct {
		name        string
		redis       redis.UniversalClient
		wantSkipped []string
	}{
		{"every backend answers", live, nil},
		{"redis is down", dead, []string{catalog.Redis, catalog.RedisAtomic, catalog.RedisSpin, catalog.RedisTTL}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			unique, err := mysqllock.NewBackend(ctx, sqlHandle)
			if err != nil {
				t.Fatalf("open %s: %v", catalog.MySQLUnique, err)
			}
			backends := map[string]LockBackend{catalog.Redis: redislock.NewBackend(tc.redis), catalog.RedisSpin: redisnaive.NewSpinBackend(tc.redis),
				catalog.RedisTTL: redisnaive.NewTTLBackend(tc.redis), catalog.MySQLUnique: unique}
			svc, err := NewService(ServiceOptions{Instance: "test", Store: st, Backends: backends, Mirror: orderstream.NewMirror(tc.redis)})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { svc.Close() })
			goods := 2_000_000_000 + rand.Int64N(1_000_000_000)
			rep, err := svc.Reset(ctx, goods, 7)
			if err != nil {
				t.Fatalf("Reset: %v", err)
			}
			var got []string
			for _, sk := range rep.Skipped {
				got = append(got, sk.Strategy)
				if sk.Server != string(catalog.ServerRedis) || sk.Reason == "" {
					t.Errorf("skip %+v: want server redis and a reason", sk)
				}
			}
			if !slices.Equal(got, tc.wantSkipped) {
				t.Errorf("skipped %v, want %v", got, tc.wantSkipped)
			}
			if slices.ContainsFunc(rep.Skipped, func(sk SkippedBackend) bool { return sk.Strategy == catalog.MySQLUnique }) {
				t.Error("mysql-unique skipped, but MySQL answers")
			}
			g, err := st.Goods(ctx, goods)
			if err != nil || g.Stock != 7 {
				t.Fatalf("goods after reset: %+v, %v; want stock 7", g, err)
			}
		})
	}
}
