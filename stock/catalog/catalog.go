// Package catalog is the lab's strategy catalogue: every strategy's name
// as users type it, how it protects the read-modify-write, the server it
// needs, when it is expected to oversell, and the source article it comes
// from. It is data only: package stock runs the strategies, and package
// lockwire opens their lock backends.
package catalog

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
)

// Strategy names, exactly as users type them. They appear as literals only
// here and in the registry's tests; everything else refers to these
// constants or reads the registry.
const (
	None            = "none"
	Mutex           = "mutex"
	MutexTx         = "mutex-tx"
	MutexPrototype  = "mutex-prototype"
	RedisSpin       = "redis-spin"
	RedisTTL        = "redis-ttl"
	RedisOwner      = "redis-owner"
	Redis           = "redis"
	Redlock         = "redlock"
	ZooKeeper       = "zookeeper"
	ZooKeeperHerd   = "zookeeper-herd"
	Etcd            = "etcd"
	MySQLUnique     = "mysql-unique"
	MySQLForUpdate  = "mysql-forupdate"
	MySQLOptimistic = "mysql-optimistic"
	SQLAtomic       = "sql-atomic"
	RedisAtomic     = "redis-atomic"
	RedisStream     = "redis-stream"
	Consul          = "consul"
	ConsulNoDelay   = "consul-nodelay"
)

// Kind says how a strategy protects the read-modify-write.
type Kind int

const (
	// KindUnprotected runs the read-modify-write with no protection.
	KindUnprotected Kind = iota
	// KindLocker runs the read-modify-write under a lock from a
	// stock.LockBackend.
	KindLocker
	// KindStore relies on the database's own concurrency control: a row
	// lock (SELECT ... FOR UPDATE) or a version compare-and-swap.
	KindStore
	// KindLockFree takes no lock at all: one atomic conditional step (a
	// conditional UPDATE, or a Lua check-and-decrement in Redis).
	KindLockFree
)

// String names the kind for tables and help texts.
func (k Kind) String() string {
	switch k {
	case KindUnprotected:
		return "unprotected"
	case KindLocker:
		return "locker"
	case KindStore:
		return "store"
	case KindLockFree:
		return "lock-free"
	}
	return fmt.Sprintf("Kind(%d)", int(k))
}

// Server is the server a strategy needs.
type Server string

// Servers.
const (
	ServerNone      Server = ""          // nothing beyond MySQL
	ServerProcess   Server = "process"   // the instance's own memory
	ServerRedis     Server = "redis"     // the single Redis (redis-1)
	ServerRedlock   Server = "redis x5"  // the five independent Redis servers
	ServerZooKeeper Server = "zookeeper" // the ZooKeeper ensemble
	ServerEtcd      Server = "etcd"      // the etcd cluster
	ServerConsul    Server = "consul"    // the Consul server(s)
	ServerMySQL     Server = "mysql"     // MariaDB, beyond the goods row
)

// Breaks says under which setting a strategy is expected to oversell.
type Breaks int

const (
	// BreaksNever: correct under every setting the lab offers (without
	// faults).
	BreaksNever Breaks = iota
	// BreaksAlways: oversells under contention, even with one instance.
	BreaksAlways
	// BreaksMultiInstance: correct with one instance, oversells with more
	// (an in-process lock).
	BreaksMultiInstance
	// BreaksWorkOutlastsTTL: oversells when the work inside the critical
	// section (plus, for a lock with ReleasePause, the pause inside its
	// release) outlasts the lock's TTL (a TTL lock with no renewal).
	BreaksWorkOutlastsTTL
)

// ColFlawed names Strategy.Flawed wherever the lab prints it (yes or no):
// the catalogue's verdict, whatever the settings. Whether a run's settings
// leave a strategy safe is another column, bench.ColSafe ("safe at this
// setting"): a lock correct by design is unsafe at a setting that defeats
// it.
const ColFlawed = "flawed by design"

// Strategy describes one strategy: what it is, what it needs and what the
// lab expects of it. The registry below is the one place that knows them.
type Strategy struct {
	// Name is what users type (--strategies, PUT /admin/strategy).
	Name string
	// Kind says how the read-modify-write is protected.
	Kind Kind
	// Flawed marks the deliberately flawed teaching strategies; what the
	// lab prints as ColFlawed.
	Flawed bool
	// Breaks says when the strategy is expected to oversell.
	Breaks Breaks
	// Tokens reports whether the lock supplies fencing tokens.
	Tokens bool
	// Renews reports whether the lock renews its lease while held (a
	// watchdog, an extension, an expiry renewal) and can be told not to.
	Renews bool
	// ReleaseBeforeCommit: the lock is taken inside the transaction and
	// released after the stock write, before the order insert and COMMIT
	// (Chapter 1's "transaction mode").
	ReleaseBeforeCommit bool
	// ReleasePause: the lock's release is two commands (check the owner,
	// then delete), and stock.Config.ReleasePause pauses between them.
	ReleasePause bool
	// Async: the purchase is accepted (202) before its order is written;
	// a consumer writes it later (package orderstream), so the bench waits for the
	// queue to drain before it audits.
	Async bool
	// Server is what the strategy needs besides the goods row.
	Server Server
	// Summary is one line for tables and help texts.
	Summary string
	// Source names the source article and passage the strategy comes
	// from (docs/sources.md).
	Source string
}

// Queued reports whether the local queue (stock.Config.NoLocalQueue) applies to the strategy: the
// locks held at a server (each instance then sends one waiter per goods to
// the lock server) and mysql-optimistic (each instance then makes one
// compare-and-swap attempt per goods at a time). In-process locks, row
// locks and the lock-free strategies have nothing to queue for.
func (s Strategy) Queued() bool {
	return s.Kind == KindLocker && s.Server != ServerProcess || s.Name == MySQLOptimistic
}

// registry lists every strategy, in the order reports show them.
var registry = []Strategy{
	{
		Name: None, Kind: KindUnprotected, Flawed: true, Breaks: BreaksAlways, Server: ServerNone,
		Summary: "plain read-modify-write, no lock",
		Source:  "Chapter 1: reductStock",
	},
	{
		Name: Mutex, Kind: KindLocker, Flawed: true, Breaks: BreaksMultiInstance, Server: ServerProcess,
		Summary: "in-process mutex around the whole unit (correct with 1 instance only)",
		Source:  "Chapter 1: synchronized / ReentrantLock, cluster mode",
	},
	{
		Name: MutexTx, Kind: KindLocker, Flawed: true, Breaks: BreaksAlways, ReleaseBeforeCommit: true, Server: ServerProcess,
		Summary: "in-process mutex taken inside the DB transaction, released before commit",
		Source:  "Chapter 1: transaction mode (@Transactional around synchronized)",
	},
	// Deliberately wrong: a new lock object per request, so every request
	// locks its own mutex and nothing is excluded, even on one instance.
	{
		Name: MutexPrototype, Kind: KindLocker, Flawed: true, Breaks: BreaksAlways, Server: ServerProcess,
		Summary: "a new in-process mutex per request (a prototype-scoped bean): excludes nobody",
		Source:  "Chapter 1: 多例模式 (@Scope prototype)",
	},
	{
		Name: RedisSpin, Kind: KindLocker, Flawed: true, Breaks: BreaksNever, Server: ServerRedis,
		Summary: "SETNX busy loop, no TTL, plain DEL",
		Source:  "Chapter 1: first version (SETNX spin)",
	},
	{
		Name: RedisTTL, Kind: KindLocker, Flawed: true, Breaks: BreaksWorkOutlastsTTL, Server: ServerRedis,
		Summary: "SET NX PX + sleep-retry, DEL without owner check",
		Source:  "Chapter 1: steps 1-2 (expiry, 锁被误删)",
	},
	// Deliberately wrong: the owner check (GET, compare in the client) and
	// the DEL are two commands, not one Lua script, so a key that expires
	// between them (release_pause widens the gap) is taken by the next
	// holder and then deleted under it.
	{
		Name: RedisOwner, Kind: KindLocker, Flawed: true, Breaks: BreaksWorkOutlastsTTL, ReleasePause: true, Server: ServerRedis,
		Summary: "SET NX PX with an owner value, released by GET, compare, then DEL (no Lua; release_pause widens the gap)",
		Source:  "Chapter 1: 锁被误删 (owner check before the Lua step)",
	},
	{
		Name: Redis, Kind: KindLocker, Tokens: true, Renews: true, Server: ServerRedis,
		Summary: "reentrant hash lock, Lua CAS release, watchdog, pub/sub wake-up, INCR fencing token",
		Source:  "Chapter 1: Lua scripts and Redisson; Q&A: Redisson",
	},
	{
		Name: Redlock, Kind: KindLocker, Renews: true, Server: ServerRedlock,
		Summary: "go-redsync over 5 independent Redis servers",
		Source:  "Chapter 1, Scheduler notes: RedLock",
	},
	{
		Name: ZooKeeper, Kind: KindLocker, Tokens: true, Server: ServerZooKeeper,
		Summary: "ephemeral sequential znodes, watch the predecessor, czxid token",
		Source:  "Chapter 1, Scheduler notes, Q&A: ZooKeeper",
	},
	// Deliberately wasteful, not unsafe: every waiter watches the lock's
	// parent and re-lists its children on every change (the herd effect),
	// so each release wakes all waiters instead of the next one.
	{
		Name: ZooKeeperHerd, Kind: KindLocker, Tokens: true, Server: ServerZooKeeper,
		Summary: "ephemeral sequential znodes, every waiter watches the parent's children (correct, slow: herd)",
		Source:  "Chapter 1: 羊群效应; Overview, etcd article: herd effect",
	},
	{
		Name: Etcd, Kind: KindLocker, Tokens: true, Server: ServerEtcd,
		Summary: "lease + concurrency.Mutex, create revision token",
		Source:  "Overview, etcd article, Chapter 1: etcd",
	},
	{
		Name: Consul, Kind: KindLocker, Tokens: true, Renews: true, Server: ServerConsul,
		Summary: "session (TTL at least 10 s, renewed) + KV acquire, blocking-query wait, lock-delay 15 s, ModifyIndex token",
		Source:  "Q&A: 基于 Consul 做分布式锁",
	},
	// The same lock with lock-delay 0: the key is free the moment its
	// holder's session is invalidated, so a paused holder is overtaken at
	// once. It shows what Consul's lock-delay is for.
	{
		Name: ConsulNoDelay, Kind: KindLocker, Flawed: true, Breaks: BreaksWorkOutlastsTTL, Tokens: true, Renews: true, Server: ServerConsul,
		Summary: "the consul lock with lock-delay 0: nothing holds the key back after its session is invalidated",
		Source:  "Q&A: Consul; its lock-delay",
	},
	{
		Name: MySQLUnique, Kind: KindLocker, Tokens: true, Renews: true, Server: ServerMySQL,
		Summary: "lock row under a UNIQUE index, expired rows reclaimed",
		Source:  "Chapter 1, Q&A: database unique index",
	},
	{
		Name: MySQLForUpdate, Kind: KindStore, Server: ServerNone,
		Summary: "SELECT ... FOR UPDATE in the deduction transaction",
		Source:  "Chapter 1: pessimistic lock; Q&A",
	},
	{
		Name: MySQLOptimistic, Kind: KindStore, Server: ServerNone,
		Summary: "version column CAS with bounded retries",
		Source:  "Chapter 1, Q&A: optimistic lock (CAS)",
	},
	{
		Name: SQLAtomic, Kind: KindLockFree, Server: ServerNone,
		Summary: "one conditional UPDATE, no lock (MySQL ceiling)",
		Source:  "etcd article, Chapter 1: UPDATE ... WHERE stock >= qty",
	},
	{
		Name: RedisAtomic, Kind: KindLockFree, Server: ServerRedis,
		Summary: "Lua check-and-decrement in Redis, order persisted to MySQL",
		Source:  "Chapter 1: Redis pre-deduction",
	},
	{
		Name: RedisStream, Kind: KindLockFree, Async: true, Server: ServerRedis,
		Summary: "Lua check (stock, per-user limit) and XADD in one script, 202 accepted; a consumer group in each instance writes the orders to MySQL (request id unique), XACK after COMMIT, XAUTOCLAIM takes a dead consumer's entries",
		Source:  "Chapter 1: Redis pre-deduction; practice: hm-dianping 异步秒杀 (Redis Stream)",
	},
}

// Batches reports whether stock.Config.Batch applies to s: a lock holder that
// commits before it releases can sell a queue of purchases in one critical
// section.
func (s Strategy) Batches() bool { return s.Kind == KindLocker && !s.ReleaseBeforeCommit }

// Strategies returns the registry, in report order. The slice is a copy.
func Strategies() []Strategy { return slices.Clone(registry) }

// StrategyNames returns the valid strategy names in registry order.
func StrategyNames() []string {
	out := make([]string, len(registry))
	for i, s := range registry {
		out[i] = s.Name
	}
	return out
}

// Lookup returns the registry entry for name, or the extension of that
// name (Extend).
func Lookup(name string) (Strategy, bool) {
	for _, s := range Extended() {
		if s.Name == name {
			return s, true
		}
	}
	return Strategy{}, false
}

// extensions are the strategies added by Extend: the workshop's exercises
// (package exercises), each a student's lock under a name of its own.
var (
	extMu      sync.RWMutex
	extensions []Strategy
)

// Extend adds strategies beside the registry: Lookup finds them, the
// service opens their backends (Extended) and accepts them in a setting,
// but Strategies, StrategyNames, Names and MarkdownTable list the registry
// only, so the lab's tables, reports and pinned lists do not change when a
// student's lock joins. A name the registry or an earlier Extend already
// has is an error. A locker's backend is opened by package lockwire
// (lockwire.Extend adds the strategy with its opener).
func Extend(ss ...Strategy) error {
	extMu.Lock()
	defer extMu.Unlock()
	for _, s := range ss {
		if s.Name == "" {
			return errors.New("extend: a strategy needs a name")
		}
		for _, have := range slices.Concat(registry, extensions) {
			if have.Name == s.Name {
				return fmt.Errorf("extend %q: the name is taken", s.Name)
			}
		}
		extensions = append(extensions, s)
	}
	return nil
}

// Extended returns the registry followed by the extensions (Extend).
func Extended() []Strategy {
	extMu.RLock()
	defer extMu.RUnlock()
	return slices.Concat(registry, extensions)
}

// Names returns the names of the strategies for which keep is true, in
// registry order.
func Names(keep func(Strategy) bool) []string {
	var out []string
	for _, s := range registry {
		if keep(s) {
			out = append(out, s.Name)
		}
	}
	return out
}

// ErrUnknownStrategy is returned for a name not in the registry.
var ErrUnknownStrategy = errors.New("unknown strategy")

// MarkdownTable renders the registry as docs/strategies.md's table.
func MarkdownTable() string {
	var b strings.Builder
	b.WriteString("| strategy | kind | flawed by design | fencing tokens | renews | needs | what it does | source |\n")
	b.WriteString("|---|---|---|---|---|---|---|---|\n")
	yes := func(v bool) string {
		if v {
			return "yes"
		}
		return ""
	}
	for _, s := range registry {
		server := string(s.Server)
		if server == "" {
			server = "MySQL only"
		}
		fmt.Fprintf(&b, "| `%s` | %s | %s | %s | %s | %s | %s | %s |\n",
			s.Name, s.Kind, yes(s.Flawed), yes(s.Tokens), yes(s.Renews), server, s.Summary, s.Source)
	}
	return b.String()
}
