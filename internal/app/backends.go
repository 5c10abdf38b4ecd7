package app

import (
	// The lock servers' descriptors provide their wiring (lockwire.Provide).
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"time"

	_ "github.com/seckill-lab/seckill/internal/server"

	"github.com/redis/go-redis/v9"
	"gorm.io/gorm"

	"github.com/seckill-lab/seckill/internal/api"
	"github.com/seckill-lab/seckill/internal/config"
	"github.com/seckill-lab/seckill/internal/cost"
	"github.com/seckill-lab/seckill/internal/lockwire"
	"github.com/seckill-lab/seckill/lockimpl"
	"github.com/seckill-lab/seckill/lockimpl/mutexlock"
	"github.com/seckill-lab/seckill/stock"
	"github.com/seckill-lab/seckill/stock/catalog"
	"github.com/seckill-lab/seckill/stock/sqlstore"
)

// backends holds one instance's clients and the lock backends lockwire
// opened over them. Each instance has its own clients and sessions, as
// separate service processes would. It knows no key layout, lock table or
// quorum: those belong to the lock backends.
type backends struct {
	clients lockwire.Clients
	redis   []*redis.Client // every configured Redis; redis[0] is the primary
	// failover follows the Sentinel-monitored master when sentinels are
	// configured; it then serves the single-Redis strategies.
	failover *redis.Client
	// counter is the lock-alone goods' Redis (cfg.CounterRedis), dialled
	// directly; nil without one.
	counter *redis.Client
	locks   map[string]stock.LockBackend
	// closeShared closes the lock servers' shared clients (lockwire.Connect).
	closeShared func() error
}

// newBackends connects the clients cfg names (lazily: servers that are down
// are reported by /healthz, not here), each counted by meter, and opens the
// lock backend of every strategy whose server is configured.
func newBackends(ctx context.Context, cfg config.Config, db *gorm.DB, meter *cost.Meter) (*backends, error) {
	sqlDB, err := db.DB()
	if err != nil {
		return nil, fmt.Errorf("MySQL handle: %w", err)
	}
	b := &backends{}
	b.clients.MySQL = sqlDB
	b.clients.Mutex = mutexlock.New(lockimpl.Options{})
	b.clients.Addrs = cfg.Servers
	b.clients.Cost = meter
	for _, addr := range cfg.RedisAddrs {
		c := newRedis(addr, meter)
		b.redis = append(b.redis, c)
		b.clients.Redlock = append(b.clients.Redlock, c)
	}
	if len(b.redis) > 0 {
		b.clients.Redis = b.redis[0]
	}
	if cfg.CounterRedis != "" {
		// Not metered: the lock-alone counter crosses no link, and the
		// cost model prices what crosses the links.
		b.counter = newRedis(cfg.CounterRedis, nil)
	}
	if len(cfg.RedisSentinels) > 0 {
		b.failover = redis.NewFailoverClient(&redis.FailoverOptions{
			MasterName:    cfg.RedisMaster,
			SentinelAddrs: cfg.RedisSentinels,
			DialTimeout:   time.Second,
			ReadTimeout:   3 * time.Second,
			WriteTimeout:  3 * time.Second,
			PoolSize:      256,
			MaxRetries:    1,
			Dialer:        proxyDialer(cfg.ProxyShift),
		})
		b.failover.AddHook(meter.RedisHook())
		b.clients.Redis = b.failover
	}
	if b.closeShared, err = lockwire.Connect(ctx, &b.clients); err != nil {
		b.Close()
		return nil, err
	}
	if b.locks, err = lockwire.Open(ctx, b.clients); err != nil {
		b.Close()
		return nil, err
	}
	return b, nil
}

// checks are the /healthz probes of the configured servers; MySQL, without
// which no purchase runs, is also /readyz's. A lock server with no client
// here is probed by its first lock backend (which, for a server whose
// backends open sessions, waits for one).
func (b *backends) checks(store *sqlstore.Store) []api.Check {
	out := []api.Check{{Name: "mysql", Ping: store.Ping, Ready: true}}
	for i, c := range b.redis {
		out = append(out, api.Check{Name: fmt.Sprintf("redis-%d", i+1), Ping: func(ctx context.Context) error { return c.Ping(ctx).Err() }})
	}
	if c := b.failover; c != nil {
		out = append(out, api.Check{Name: "redis-primary", Ping: func(ctx context.Context) error { return c.Ping(ctx).Err() }})
	}
	// The lock servers with no client of their own here: the first lock
	// backend on each probes it.
	seen := map[catalog.Server]bool{catalog.ServerNone: true, catalog.ServerProcess: true, catalog.ServerMySQL: true, catalog.ServerRedis: true, catalog.ServerRedlock: true}
	for _, s := range catalog.Extended() {
		if lb, ok := b.locks[s.Name]; ok && !seen[s.Server] {
			seen[s.Server] = true
			out = append(out, api.Check{Name: string(s.Server), Ping: lb.Ping})
		}
	}
	return out
}

// Close closes the lock backends, then the clients.
func (b *backends) Close() error {
	var errs []error
	for _, lb := range b.locks {
		errs = append(errs, lb.Close())
	}
	for _, c := range b.redis {
		errs = append(errs, c.Close())
	}
	if b.failover != nil {
		errs = append(errs, b.failover.Close())
	}
	if b.counter != nil {
		errs = append(errs, b.counter.Close())
	}
	if b.closeShared != nil {
		errs = append(errs, b.closeShared())
	}
	if b.clients.MySQL != nil {
		errs = append(errs, b.clients.MySQL.Close())
	}
	return errors.Join(errs...)
}

// proxyDialer dials a 127.0.0.1 address shift ports higher (the instance's
// fault proxy for that server); nil (the default dialer) when shift is 0.
func proxyDialer(shift int) func(ctx context.Context, network, addr string) (net.Conn, error) {
	if shift == 0 {
		return nil
	}
	d := net.Dialer{Timeout: time.Second}
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		if h, port, err := net.SplitHostPort(addr); err == nil && h == "127.0.0.1" {
			if p, err := strconv.Atoi(port); err == nil {
				addr = net.JoinHostPort(h, strconv.Itoa(p+shift))
			}
		}
		return d.DialContext(ctx, network, addr)
	}
}
