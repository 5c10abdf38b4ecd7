package testenv

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// RedisClient opens a new client to the primary Redis of the test
// environment (the first of SECKILL_REDIS_ADDRS), closed at cleanup; a
// Redis that does not answer fails (CI) or skips the test.
func RedisClient(tb testing.TB) *redis.Client {
	tb.Helper()
	addr := List(tb, RedisAddrs)[0]
	c := redis.NewClient(&redis.Options{Addr: addr})
	tb.Cleanup(func() { _ = c.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	if err := c.Ping(ctx).Err(); err != nil {
		Unavailable(tb, "redis "+addr, err)
	}
	return c
}

// EtcdClient opens a new client to the etcd of the test environment
// (SECKILL_ETCD_ENDPOINTS), closed at cleanup; an etcd that does not answer
// fails (CI) or skips the test.
func EtcdClient(tb testing.TB) *clientv3.Client {
	tb.Helper()
	eps := List(tb, EtcdEndpoints)
	c, err := clientv3.New(clientv3.Config{Endpoints: eps, DialTimeout: 3 * time.Second})
	if err != nil {
		Unavailable(tb, "etcd", err)
	}
	tb.Cleanup(func() { _ = c.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	if _, err := c.Get(ctx, "health-probe"); err != nil {
		Unavailable(tb, "etcd", err)
	}
	return c
}
