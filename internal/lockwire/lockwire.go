// Package lockwire wires the lab's locker strategies to the lockimpl
// backends that open them: the Clients of one instance, the table of each
// registry strategy's opener on the servers it types (the process, Redis,
// MySQL), the wiring each other lock server's descriptor provides
// (Provide: internal/server), the openers of the strategies added beside
// the registry (Extend), and Open, which opens them all. Package stock sees
// only lockimpl's contract (stock.LockBackend).
package lockwire

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sync"

	"github.com/redis/go-redis/v9"

	"github.com/seckill-lab/seckill/internal/cost"
	"github.com/seckill-lab/seckill/lockimpl/mutexlock"
	"github.com/seckill-lab/seckill/lockimpl/mysqllock"
	"github.com/seckill-lab/seckill/lockimpl/redislock"
	"github.com/seckill-lab/seckill/lockimpl/redisnaive"
	"github.com/seckill-lab/seckill/lockimpl/redlock"
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
	// Addrs are the addresses (host:port) of the other lock servers, by
	// server (config.Config.Servers): their wiring (Provide) opens their
	// clients from them.
	Addrs map[catalog.Server][]string
	// Shared are the clients a server's wiring connected (Connect) for
	// its backends and the workshop's exercises to share, by server.
	Shared map[catalog.Server]any
	// MySQL is the database handle shared with the store.
	MySQL *sql.DB
	// Mutex is the instance's in-process lock table, shared by the
	// strategies that lock in memory.
	Mutex *mutexlock.Locker
	// Cost, when not nil, counts the requests of the clients the backends
	// and the wirings open themselves; the caller hooks it into the
	// clients it gives here.
	Cost *cost.Meter
}

// Opener builds a strategy's LockBackend over an instance's clients. It
// returns an error wrapping stock.ErrNotConfigured when the server has no
// address.
type Opener func(ctx context.Context, c Clients) (stock.LockBackend, error)

// openers are the registry's locker strategies' openers on the servers
// Clients types; the other lock servers' come with their wiring
// (Provide). Every catalog.KindLocker strategy has one, no other strategy
// does.
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
	catalog.MySQLUnique: func(ctx context.Context, c Clients) (stock.LockBackend, error) {
		if c.MySQL == nil {
			return nil, NotConfigured(catalog.ServerMySQL)
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

// Wiring is how an instance reaches one lock server of the catalogue
// beyond the clients Clients types: its descriptor's (internal/server).
type Wiring struct {
	// Server is the server (catalog.ServerInfo.Name).
	Server catalog.Server
	// Connect, when set, opens the client the server's backends and the
	// workshop's exercises share (kept in Clients.Shared), from the
	// server's addresses, its requests counted by meter (nil: not
	// counted); close closes it. Optional: a backend may open its own.
	Connect func(ctx context.Context, addrs []string, meter *cost.Meter) (client any, close func() error, err error)
	// Openers are the backends of the registry's strategies on the
	// server, by strategy.
	Openers map[string]Opener
}

// wirings are the lock servers' wirings (Provide), by server.
var wirings = map[catalog.Server]Wiring{}

// Provide adds lock server w.Server's wiring: Connect opens its client
// and OpenerOf finds its strategies' openers. A server or a strategy
// that already has one is an error; remove takes it away again.
func Provide(w Wiring) (remove func(), err error) {
	extMu.Lock()
	defer extMu.Unlock()
	if _, ok := wirings[w.Server]; ok || w.Server == "" {
		return nil, fmt.Errorf("wiring of server %q: none or one already", w.Server)
	}
	for name := range w.Openers {
		if _, ok := openerOfLocked(name); ok {
			return nil, fmt.Errorf("wiring of server %q: strategy %q has an opener already", w.Server, name)
		}
	}
	wirings[w.Server] = w
	return func() {
		extMu.Lock()
		defer extMu.Unlock()
		delete(wirings, w.Server)
	}, nil
}

// Connect opens the shared client of every provided server that has
// addresses in c.Addrs into c.Shared, and returns what closes them all.
// On an error, the clients opened so far are closed.
func Connect(ctx context.Context, c *Clients) (closeAll func() error, err error) {
	extMu.RLock()
	ws := make([]Wiring, 0, len(wirings))
	for _, w := range wirings {
		ws = append(ws, w)
	}
	extMu.RUnlock()
	var closers []func() error
	closeAll = func() error {
		var errs []error
		for _, cl := range closers {
			errs = append(errs, cl())
		}
		return errors.Join(errs...)
	}
	for _, w := range ws {
		addrs := c.Addrs[w.Server]
		if w.Connect == nil || len(addrs) == 0 {
			continue
		}
		client, cl, err := w.Connect(ctx, addrs, c.Cost)
		if err != nil {
			_ = closeAll()
			return nil, fmt.Errorf("%s client for %v: %w", w.Server, addrs, err)
		}
		if c.Shared == nil {
			c.Shared = map[catalog.Server]any{}
		}
		c.Shared[w.Server], closers = client, append(closers, cl)
	}
	return closeAll, nil
}

// OpenerOf returns the opener of strategy name: a registry locker's (on
// a server Clients types, or a provided wiring's), or an extension's
// (Extend).
func OpenerOf(name string) (Opener, bool) {
	extMu.RLock()
	defer extMu.RUnlock()
	return openerOfLocked(name)
}

func openerOfLocked(name string) (Opener, bool) {
	if o, ok := openers[name]; ok {
		return o, true
	}
	for _, w := range wirings {
		if o, ok := w.Openers[name]; ok {
			return o, true
		}
	}
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

// NotConfigured is the error of an opener whose server s has no address.
func NotConfigured(s catalog.Server) error {
	return fmt.Errorf("%s: %w", s, stock.ErrNotConfigured)
}

// onRedis opens a backend of the single Redis with build.
func onRedis(build func(redis.UniversalClient) stock.LockBackend) Opener {
	return func(_ context.Context, c Clients) (stock.LockBackend, error) {
		if c.Redis == nil {
			return nil, NotConfigured(catalog.ServerRedis)
		}
		return build(c.Redis), nil
	}
}

func openMutex(_ context.Context, c Clients) (stock.LockBackend, error) {
	if c.Mutex == nil {
		return nil, NotConfigured(catalog.ServerProcess)
	}
	return mutexlock.NewBackend(c.Mutex), nil
}
