package app

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/redis/go-redis/v9"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	"gorm.io/gorm"

	"github.com/seckill-lab/seckill/internal/api"
	"github.com/seckill-lab/seckill/internal/config"
	"github.com/seckill-lab/seckill/lockimpl"
	"github.com/seckill-lab/seckill/lockimpl/etcdlock"
	"github.com/seckill-lab/seckill/lockimpl/mutexlock"
	"github.com/seckill-lab/seckill/lockimpl/mysqllock"
	"github.com/seckill-lab/seckill/lockimpl/redislock"
	"github.com/seckill-lab/seckill/lockimpl/redisnaive"
	"github.com/seckill-lab/seckill/lockimpl/redlock"
	"github.com/seckill-lab/seckill/lockimpl/zklock"
	"github.com/seckill-lab/seckill/stock"
)

// Key prefixes of the Redis-based locks, so Reset can clear them.
const (
	redisLockPrefix = "seckill:lock:"
	naivePrefix     = "seckill:naive:"
	redlockPrefix   = "seckill:redlock:"
)

// backends holds one instance's clients. Each instance has its own clients
// and sessions, as separate service processes would.
type backends struct {
	cfg   config.Config
	db    *gorm.DB
	sqlDB *sql.DB
	redis []*redis.Client // empty slots are nil; redis[0] is the primary
	etcd  *clientv3.Client
	zk    *zk.Conn

	mutex *mutexlock.Locker

	mu      sync.Mutex
	closers []func() error
}

func newBackends(ctx context.Context, cfg config.Config, db *gorm.DB) (*backends, error) {
	sqlDB, err := db.DB()
	if err != nil {
		return nil, fmt.Errorf("MySQL handle: %w", err)
	}
	b := &backends{cfg: cfg, db: db, sqlDB: sqlDB, redis: make([]*redis.Client, max(1, len(cfg.RedisAddrs))), mutex: mutexlock.New(lockimpl.Options{})}
	for i, addr := range cfg.RedisAddrs {
		b.redis[i] = newRedis(addr)
	}
	if len(cfg.EtcdEndpoints) > 0 {
		cli, err := clientv3.New(clientv3.Config{
			Endpoints:   cfg.EtcdEndpoints,
			DialTimeout: 2 * time.Second,
			Logger:      zap.NewNop(),
			Context:     context.WithoutCancel(ctx),
		})
		if err != nil {
			b.Close()
			return nil, fmt.Errorf("etcd client for %v: %w", cfg.EtcdEndpoints, err)
		}
		b.etcd = cli
	}
	if len(cfg.ZKServers) > 0 {
		conn, _, err := zk.Connect(cfg.ZKServers, stock.DefaultLockTTL, zk.WithLogger(quietLogger{}))
		if err != nil {
			b.Close()
			return nil, fmt.Errorf("ZooKeeper client for %v: %w", cfg.ZKServers, err)
		}
		b.zk = conn
	}
	return b, nil
}

type quietLogger struct{}

func (quietLogger) Printf(string, ...any) {}

// errNotConfigured is returned when a strategy's backend has no address.
var errNotConfigured = errors.New("backend not configured")

func (b *backends) ensureSchema(ctx context.Context) error {
	if err := mysqllock.EnsureSchema(ctx, b.sqlDB); err != nil {
		return fmt.Errorf("lock table: %w", err)
	}
	return nil
}

// pingLocker adds a backend health probe to a Locker (stock.Pinger), so a
// lock wait that runs out because the server is down reads as
// backend_unavailable.
type pingLocker struct {
	stock.Locker
	ping func(ctx context.Context) error
}

func (p pingLocker) Ping(ctx context.Context) error { return p.ping(ctx) }

// locker is the service's LockerFactory.
func (b *backends) locker(name string, opts lockimpl.Options) (stock.Locker, error) {
	l, err := b.newLocker(name, opts)
	if err != nil {
		return nil, err
	}
	if ping := b.pingFor(name); ping != nil {
		return pingLocker{l, ping}, nil
	}
	return l, nil
}

// pingFor returns the health probe of the backend behind strategy name.
func (b *backends) pingFor(name string) func(ctx context.Context) error {
	switch name {
	case stock.RedisSpin, stock.RedisTTL, stock.Redis:
		return func(ctx context.Context) error { return b.redis[0].Ping(ctx).Err() }
	case stock.Redlock:
		return func(ctx context.Context) error {
			up := 0
			var errs []error
			for _, c := range b.redis {
				if err := c.Ping(ctx).Err(); err != nil {
					errs = append(errs, err)
					continue
				}
				up++
			}
			if up <= len(b.redis)/2 {
				return fmt.Errorf("only %d of %d Redlock servers answer: %w", up, len(b.redis), errors.Join(errs...))
			}
			return nil
		}
	case stock.Etcd:
		return b.pingEtcd
	case stock.ZooKeeper:
		return b.pingZK
	case stock.MySQLUnique:
		return b.sqlDB.PingContext
	}
	return nil
}

func (b *backends) pingEtcd(ctx context.Context) error {
	_, err := b.etcd.Get(ctx, "seckill/health")
	return err
}

// pingZK waits, until ctx is done, for the shared connection to have a
// session: a client that is still connecting is not down yet.
func (b *backends) pingZK(ctx context.Context) error {
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		st := b.zk.State()
		if st == zk.StateHasSession {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("ZooKeeper session state %s: %w", st, ctx.Err())
		case <-tick.C:
		}
	}
}

func (b *backends) newLocker(name string, opts lockimpl.Options) (stock.Locker, error) {
	need := func(ok bool, what, env string) error {
		if ok {
			return nil
		}
		return fmt.Errorf("%s: %w (set %s)", what, errNotConfigured, env)
	}
	switch name {
	case stock.Mutex:
		return b.mutex, nil
	case stock.RedisSpin, stock.RedisTTL, stock.Redis:
		if err := need(b.redis[0] != nil, "Redis", config.EnvRedisAddrs); err != nil {
			return nil, err
		}
		switch name {
		case stock.RedisSpin:
			opts.Prefix = naivePrefix
			return redisnaive.NewSpin(b.redis[0], opts), nil
		case stock.RedisTTL:
			opts.Prefix = naivePrefix
			return redisnaive.NewTTL(b.redis[0], opts), nil
		}
		opts.Prefix = redisLockPrefix
		l := redislock.New(b.redis[0], opts)
		b.onClose(l.Close)
		return l, nil
	case stock.Redlock:
		if err := need(len(b.cfg.RedisAddrs) >= 3, "Redlock needs at least 3 Redis servers (5 recommended)", config.EnvRedisAddrs); err != nil {
			return nil, err
		}
		opts.Prefix = redlockPrefix
		clients := make([]redis.UniversalClient, len(b.redis))
		for i, c := range b.redis {
			clients[i] = c
		}
		return redlock.New(clients, opts), nil
	case stock.ZooKeeper:
		if err := need(b.zk != nil, "ZooKeeper", config.EnvZKServers); err != nil {
			return nil, err
		}
		conn, err := b.zkConn(opts.TTLOrDefault())
		if err != nil {
			return nil, err
		}
		return zklock.New(conn, opts), nil
	case stock.Etcd:
		if err := need(b.etcd != nil, "etcd", config.EnvEtcdEndpoints); err != nil {
			return nil, err
		}
		l := etcdlock.New(b.etcd, opts)
		b.onClose(l.Close)
		return l, nil
	case stock.MySQLUnique:
		return mysqllock.New(b.sqlDB, opts), nil
	}
	return nil, fmt.Errorf("strategy %q has no lock backend", name)
}

func (b *backends) onClose(f func() error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.closers = append(b.closers, f)
}

// clearLocks drops key's lock state at every backend: Redis lock keys and
// fencing counters, Redlock keys on all servers, MySQL lock rows.
// ZooKeeper and etcd locks are ephemeral (sessions/leases) and need none.
func (b *backends) clearLocks(ctx context.Context, key string) error {
	var errs []error
	if b.redis[0] != nil {
		rl := redislock.New(b.redis[0], lockimpl.Options{Prefix: redisLockPrefix})
		if err := b.redis[0].Del(ctx, rl.Key(key), rl.FenceKey(key), naivePrefix+key).Err(); err != nil {
			errs = append(errs, fmt.Errorf("redis: %w", err))
		}
	}
	for _, c := range b.redis {
		if c == nil {
			continue
		}
		if err := c.Del(ctx, redlockPrefix+key).Err(); err != nil {
			errs = append(errs, fmt.Errorf("redlock %s: %w", c.Options().Addr, err))
		}
	}
	ml := mysqllock.New(b.sqlDB, lockimpl.Options{})
	for _, table := range []string{mysqllock.Table, mysqllock.FenceTable} {
		if _, err := b.sqlDB.ExecContext(ctx, "DELETE FROM "+table+" WHERE name = ?", ml.Name(key)); err != nil {
			errs = append(errs, fmt.Errorf("mysql lock rows: %w", err))
		}
	}
	return errors.Join(errs...)
}

// zkConn returns a ZooKeeper connection whose session timeout is ttl: the
// shared one for the default TTL, a new one otherwise (ZooKeeper fixes the
// session timeout per connection; the service caches lockers per TTL).
func (b *backends) zkConn(ttl time.Duration) (*zk.Conn, error) {
	if ttl == stock.DefaultLockTTL {
		return b.zk, nil
	}
	conn, _, err := zk.Connect(b.cfg.ZKServers, ttl, zk.WithLogger(quietLogger{}))
	if err != nil {
		return nil, fmt.Errorf("ZooKeeper client for %v: %w", b.cfg.ZKServers, err)
	}
	b.onClose(func() error { conn.Close(); return nil })
	return conn, nil
}

// checks are the /healthz probes of the configured backends.
func (b *backends) checks(store *stock.Store) []api.Check {
	out := []api.Check{{Name: "mysql", Ping: store.Ping}}
	for i, c := range b.redis {
		if c == nil {
			continue
		}
		out = append(out, api.Check{Name: fmt.Sprintf("redis-%d", i+1), Ping: func(ctx context.Context) error { return c.Ping(ctx).Err() }})
	}
	if b.etcd != nil {
		out = append(out, api.Check{Name: "etcd", Ping: b.pingEtcd})
	}
	if b.zk != nil {
		out = append(out, api.Check{Name: "zookeeper", Ping: b.pingZK})
	}
	return out
}

// Close releases every client.
func (b *backends) Close() error {
	b.mu.Lock()
	closers := b.closers
	b.closers = nil
	b.mu.Unlock()
	var errs []error
	for _, f := range closers {
		errs = append(errs, f())
	}
	for _, c := range b.redis {
		if c != nil {
			errs = append(errs, c.Close())
		}
	}
	if b.etcd != nil {
		errs = append(errs, b.etcd.Close())
	}
	if b.zk != nil {
		b.zk.Close()
	}
	errs = append(errs, b.sqlDB.Close())
	return errors.Join(errs...)
}
