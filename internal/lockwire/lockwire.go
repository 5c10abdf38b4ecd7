// Package lockwire wires the lab's locker strategies to the lockimpl
// backends that open them: the Clients of one instance, the table of each
// registry strategy's opener, the openers of the strategies added beside
// the registry (Extend), and Open, which opens them all. Package stock sees
// only lockimpl's contract (stock.LockBackend); this package is the one
// place that imports every lock backend.
package lockwire

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/http"
	"sync"

	"github.com/redis/go-redis/v9"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/seckill-lab/seckill/internal/cost"
	"github.com/seckill-lab/seckill/lockimpl/consullock"
	"github.com/seckill-lab/seckill/lockimpl/etcdlock"
	"github.com/seckill-lab/seckill/lockimpl/mutexlock"
	"github.com/seckill-lab/seckill/lockimpl/mysqllock"
	"github.com/seckill-lab/seckill/lockimpl/redislock"
	"github.com/seckill-lab/seckill/lockimpl/redisnaive"
	"github.com/seckill-lab/seckill/lockimpl/redlock"
	"github.com/seckill-lab/seckill/lockimpl/zklock"
	"github.com/seckill-lab/seckill/stock"
	"github.com/seckill-lab/seckill/stock/catalog"
)

// Clients are one instance's connections, from which each locker
// strategy's LockBackend is opened. A nil or empty field means the server
// is not configured; the strategies that need it are then unavailable.
type Clients struct {
	// Redis is the single Redis (or a Sentinel failover client).
	Redis redis.UniversalClient
	// Redlock are the independent Redis servers of the Redlock set.
	Redlock []redis.UniversalClient
	// Etcd is the etcd client.
	Etcd *clientv3.Client
	// ZooKeeper are the ZooKeeper servers (host:port); the backend opens
	// its own sessions, one per session timeout.
	ZooKeeper []string
	// Addrs are the addresses (host:port) of the servers whose backends
	// open their own clients, by Server: Consul's agents.
	Addrs map[string][]string
	// MySQL is the database handle shared with the store.
	MySQL *sql.DB
	// Mutex is the instance's in-process lock table, shared by the
	// strategies that lock in memory.
	Mutex *mutexlock.Locker
	// Cost, when not nil, counts the requests of the clients the backends
	// open themselves (ZooKeeper's sessions, Consul's HTTP client); the
	// caller hooks it into the clients it gives here.
	Cost *cost.Meter
}

// zkOptions are the ZooKeeper backend's options for c.
func (c Clients) zkOptions() []zklock.BackendOption {
	if c.Cost == nil {
		return nil
	}
	return []zklock.BackendOption{zklock.WithDialer(c.Cost.ZooKeeperDialer(nil))}
}

// Opener builds a strategy's LockBackend over an instance's clients. It
// returns an error wrapping stock.ErrNotConfigured when the server has no
// address.
type Opener func(ctx context.Context, c Clients) (stock.LockBackend, error)

// openers are the registry's locker strategies' openers: every
// catalog.KindLocker strategy has one, no other strategy does.
var openers = map[string]Opener{
	catalog.Mutex:          openMutex,
	catalog.MutexTx:        openMutex,
	catalog.MutexPrototype: func(context.Context, Clients) (stock.LockBackend, error) { return mutexlock.NewPrototypeBackend(), nil },
	catalog.RedisSpin:      onRedis(func(c redis.UniversalClient) stock.LockBackend { return redisnaive.NewSpinBackend(c) }),
	catalog.RedisTTL:       onRedis(func(c redis.UniversalClient) stock.LockBackend { return redisnaive.NewTTLBackend(c) }),
	catalog.RedisOwner:     onRedis(func(c redis.UniversalClient) stock.LockBackend { return redisnaive.NewOwnerBackend(c) }),
	catalog.Redis:          onRedis(func(c redis.UniversalClient) stock.LockBackend { return redislock.NewBackend(c) }),
	catalog.Redlock: func(_ context.Context, c Clients) (stock.LockBackend, error) {
		if len(c.Redlock) < 3 {
			return nil, fmt.Errorf("redlock needs at least 3 Redis servers (5 recommended), has %d: %w", len(c.Redlock), stock.ErrNotConfigured)
		}
		return redlock.NewBackend(c.Redlock), nil
	},
	catalog.ZooKeeper: func(_ context.Context, c Clients) (stock.LockBackend, error) {
		if len(c.ZooKeeper) == 0 {
			return nil, notConfigured(catalog.ServerZooKeeper)
		}
		return zklock.NewBackend(c.ZooKeeper, c.zkOptions()...), nil
	},
	catalog.ZooKeeperHerd: func(_ context.Context, c Clients) (stock.LockBackend, error) {
		if len(c.ZooKeeper) == 0 {
			return nil, notConfigured(catalog.ServerZooKeeper)
		}
		return zklock.NewHerdBackend(c.ZooKeeper, c.zkOptions()...), nil
	},
	catalog.Etcd: func(_ context.Context, c Clients) (stock.LockBackend, error) {
		if c.Etcd == nil {
			return nil, notConfigured(catalog.ServerEtcd)
		}
		return etcdlock.NewBackend(c.Etcd), nil
	},
	catalog.Consul:        onConsul(consullock.Config{}),
	catalog.ConsulNoDelay: onConsul(consullock.Config{LockDelay: consullock.NoLockDelay}),
	catalog.MySQLUnique: func(ctx context.Context, c Clients) (stock.LockBackend, error) {
		if c.MySQL == nil {
			return nil, notConfigured(catalog.ServerMySQL)
		}
		return mysqllock.NewBackend(ctx, c.MySQL)
	},
}

// extensions are the openers of the strategies added by Extend.
var (
	extMu      sync.RWMutex
	extensions = map[string]Opener{}
)

// Extend adds strategy s beside the registry (catalog.Extend) with open, the
// opener of its lock backend; a locker needs one.
func Extend(s catalog.Strategy, open Opener) error {
	if s.Kind == catalog.KindLocker && open == nil {
		return fmt.Errorf("extend %q: a locker strategy needs an opener", s.Name)
	}
	extMu.Lock()
	defer extMu.Unlock()
	if err := catalog.Extend(s); err != nil {
		return err
	}
	if open != nil {
		extensions[s.Name] = open
	}
	return nil
}

// OpenerOf returns the opener of strategy name: a registry locker's, or an
// extension's (Extend).
func OpenerOf(name string) (Opener, bool) {
	if o, ok := openers[name]; ok {
		return o, true
	}
	extMu.RLock()
	defer extMu.RUnlock()
	o, ok := extensions[name]
	return o, ok
}

// Open opens the lock backend of every strategy (catalog.Extended) that has
// an opener and whose server c configures; the others are left out (they
// are unavailable on this instance). On an error, the backends opened so
// far are closed.
func Open(ctx context.Context, c Clients) (map[string]stock.LockBackend, error) {
	out := map[string]stock.LockBackend{}
	for _, s := range catalog.Extended() {
		open, ok := OpenerOf(s.Name)
		if !ok {
			continue
		}
		lb, err := open(ctx, c)
		if errors.Is(err, stock.ErrNotConfigured) {
			continue
		}
		if err != nil {
			for _, opened := range out {
				_ = opened.Close()
			}
			return nil, fmt.Errorf("strategy %s: %w", s.Name, err)
		}
		out[s.Name] = lb
	}
	return out, nil
}

// onConsul opens a backend of the Consul agents with cfg.
func onConsul(cfg consullock.Config) Opener {
	return func(_ context.Context, c Clients) (stock.LockBackend, error) {
		addrs := c.Addrs[string(catalog.ServerConsul)]
		if len(addrs) == 0 {
			return nil, notConfigured(catalog.ServerConsul)
		}
		var wrap []func(http.RoundTripper) http.RoundTripper
		if c.Cost != nil {
			wrap = append(wrap, c.Cost.ConsulTransport)
		}
		client, err := consullock.NewClient(addrs, nil, wrap...)
		if err != nil {
			return nil, err
		}
		return consullock.NewBackend(client, cfg), nil
	}
}

func notConfigured(s catalog.Server) error {
	return fmt.Errorf("%s: %w", s, stock.ErrNotConfigured)
}

// onRedis opens a backend of the single Redis with build.
func onRedis(build func(redis.UniversalClient) stock.LockBackend) Opener {
	return func(_ context.Context, c Clients) (stock.LockBackend, error) {
		if c.Redis == nil {
			return nil, notConfigured(catalog.ServerRedis)
		}
		return build(c.Redis), nil
	}
}

func openMutex(_ context.Context, c Clients) (stock.LockBackend, error) {
	if c.Mutex == nil {
		return nil, notConfigured(catalog.ServerProcess)
	}
	return mutexlock.NewBackend(c.Mutex), nil
}
