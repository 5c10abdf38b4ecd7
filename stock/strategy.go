package stock

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
)

// Strategy names, exactly as users type them (see STRATEGIES in README).
const (
	None            = "none"
	Mutex           = "mutex"
	MutexTx         = "mutex-tx"
	RedisSpin       = "redis-spin"
	RedisTTL        = "redis-ttl"
	Redis           = "redis"
	Redlock         = "redlock"
	ZooKeeper       = "zookeeper"
	Etcd            = "etcd"
	MySQLUnique     = "mysql-unique"
	MySQLForUpdate  = "mysql-forupdate"
	MySQLOptimistic = "mysql-optimistic"
	SQLAtomic       = "sql-atomic"
	RedisAtomic     = "redis-atomic"
)

// Kind says how a strategy protects the read-modify-write.
type Kind int

const (
	// KindUnprotected runs the read-modify-write with no protection.
	KindUnprotected Kind = iota
	// KindLocker runs the read-modify-write under a lockimpl Locker.
	KindLocker
	// KindStore runs inside the store (row lock, version CAS, atomic SQL,
	// or the Redis atomic counter); there is no Locker.
	KindStore
)

// StrategyInfo describes one strategy of the catalogue.
type StrategyInfo struct {
	Name string
	Kind Kind
	// Tokens reports whether the strategy's lock supplies fencing tokens.
	Tokens bool
	// Flawed marks the deliberately flawed teaching strategies.
	Flawed bool
	// Summary is one line for tables and help texts.
	Summary string
}

// Catalogue lists every strategy, in the order reports show them.
var Catalogue = []StrategyInfo{
	{None, KindUnprotected, false, true, "plain read-modify-write, no lock"},
	{Mutex, KindLocker, false, true, "in-process mutex around the whole unit (correct with 1 instance only)"},
	{MutexTx, KindUnprotected, false, true, "in-process mutex taken inside the DB transaction, released before commit"},
	{RedisSpin, KindLocker, false, true, "SETNX busy loop, no TTL, plain DEL"},
	{RedisTTL, KindLocker, false, true, "SET NX PX + sleep-retry, DEL without owner check"},
	{Redis, KindLocker, true, false, "reentrant hash lock, Lua CAS release, watchdog, pub/sub wake-up, INCR fencing token"},
	{Redlock, KindLocker, false, false, "go-redsync over 5 independent Redis servers"},
	{ZooKeeper, KindLocker, true, false, "ephemeral sequential znodes, watch the predecessor, czxid token"},
	{Etcd, KindLocker, true, false, "lease + concurrency.Mutex, create revision token"},
	{MySQLUnique, KindLocker, true, false, "lock row under a UNIQUE index, expired rows reclaimed"},
	{MySQLForUpdate, KindStore, false, false, "SELECT ... FOR UPDATE in the deduction transaction"},
	{MySQLOptimistic, KindStore, false, false, "version column CAS with bounded retries"},
	{SQLAtomic, KindStore, false, false, "one conditional UPDATE, no lock (MySQL ceiling)"},
	{RedisAtomic, KindStore, false, false, "Lua check-and-decrement in Redis, order persisted to MySQL"},
}

// StrategyNames returns the valid strategy names in catalogue order.
func StrategyNames() []string {
	out := make([]string, len(Catalogue))
	for i, s := range Catalogue {
		out[i] = s.Name
	}
	return out
}

// Lookup returns the catalogue entry for name.
func Lookup(name string) (StrategyInfo, bool) {
	for _, s := range Catalogue {
		if s.Name == name {
			return s, true
		}
	}
	return StrategyInfo{}, false
}

// ErrUnknownStrategy is returned for a name not in the catalogue.
var ErrUnknownStrategy = errors.New("unknown strategy")

// Defaults for Config.
const (
	DefaultLockTTL  = 10 * time.Second
	DefaultLockWait = 5 * time.Second
	MaxWorkDelay    = 30 * time.Second
	MinLockTTL      = 100 * time.Millisecond
	MaxLockTTL      = 10 * time.Minute
	MaxLockWait     = 2 * time.Minute
)

// Config is the runtime deduction setting of one instance.
type Config struct {
	// Name is the strategy name.
	Name string
	// WorkDelay is simulated business work inside the critical section.
	// Default 0.
	WorkDelay time.Duration
	// LockTTL is the lock's time to live (renewed by backends that renew).
	// Default 10s.
	LockTTL time.Duration
	// LockWait is the budget for acquiring the lock (or, for store
	// strategies, for row locks and retries). Default 5s.
	LockWait time.Duration
	// Fencing makes the holder claim the goods row with the lock's token
	// before it reads (`SET fence = token WHERE fence < token`) and makes
	// the stock write conditional on that claim still standing
	// (`... AND fence = token`): a holder whose lock expired and was taken
	// by a newer token is rolled back with ErrStaleLock. Only strategies
	// whose lock supplies tokens accept it.
	Fencing bool
	// Watchdog keeps a held lock alive past its TTL (Redis watchdog,
	// Redlock extension, MySQL expires_at renewal). Default true. Turning
	// it off makes a holder that works longer than lock_ttl lose its lock
	// while it still works, as a stop-the-world pause would: the scenario
	// fencing exists for. Only redis, redlock and mysql-unique accept it.
	Watchdog bool
}

// renewing lists the strategies whose lock renews itself and can be told
// not to.
var renewing = []string{Redis, Redlock, MySQLUnique}

// DefaultConfig returns the defaults for strategy name.
func DefaultConfig(name string) Config {
	return Config{Name: name, LockTTL: DefaultLockTTL, LockWait: DefaultLockWait, Watchdog: true}
}

// Validate checks c and names the first problem.
func (c Config) Validate() error {
	info, ok := Lookup(c.Name)
	if !ok {
		return fmt.Errorf("%w %q: valid names are %s", ErrUnknownStrategy, c.Name, strings.Join(StrategyNames(), ", "))
	}
	switch {
	case c.WorkDelay < 0 || c.WorkDelay > MaxWorkDelay:
		return fmt.Errorf("work_delay %s out of range [0, %s]", c.WorkDelay, MaxWorkDelay)
	case c.LockTTL < MinLockTTL || c.LockTTL > MaxLockTTL:
		return fmt.Errorf("lock_ttl %s out of range [%s, %s]", c.LockTTL, MinLockTTL, MaxLockTTL)
	case c.LockWait <= 0 || c.LockWait > MaxLockWait:
		return fmt.Errorf("lock_wait %s out of range (0, %s]", c.LockWait, MaxLockWait)
	case c.Fencing && !info.Tokens:
		return fmt.Errorf("fencing needs a lock that supplies tokens; %s does not (use redis, zookeeper, etcd or mysql-unique)", c.Name)
	case !c.Watchdog && !slices.Contains(renewing, c.Name):
		return fmt.Errorf("watchdog can be turned off only for %s; %s has none to turn off or keeps its session alive on its own", strings.Join(renewing, ", "), c.Name)
	}
	return nil
}

// configJSON is Config's wire form: durations are Go duration strings.
type configJSON struct {
	Name      string `json:"name"`
	WorkDelay string `json:"work_delay"`
	LockTTL   string `json:"lock_ttl"`
	LockWait  string `json:"lock_wait"`
	Fencing   bool   `json:"fencing"`
	Watchdog  *bool  `json:"watchdog,omitempty"`
}

// MarshalJSON writes durations as Go duration strings ("250ms").
func (c Config) MarshalJSON() ([]byte, error) {
	return json.Marshal(configJSON{c.Name, c.WorkDelay.String(), c.LockTTL.String(), c.LockWait.String(), c.Fencing, &c.Watchdog})
}

// UnmarshalJSON reads durations as Go duration strings. Omitted fields
// take their defaults.
func (c *Config) UnmarshalJSON(b []byte) error {
	var w configJSON
	if err := json.Unmarshal(b, &w); err != nil {
		return err
	}
	out := DefaultConfig(w.Name)
	out.Fencing = w.Fencing
	if w.Watchdog != nil {
		out.Watchdog = *w.Watchdog
	}
	for _, f := range []struct {
		field string
		raw   string
		dst   *time.Duration
	}{{"work_delay", w.WorkDelay, &out.WorkDelay}, {"lock_ttl", w.LockTTL, &out.LockTTL}, {"lock_wait", w.LockWait, &out.LockWait}} {
		if f.raw == "" {
			continue
		}
		d, err := time.ParseDuration(f.raw)
		if err != nil {
			return fmt.Errorf("%s: %q is not a Go duration such as \"250ms\"", f.field, f.raw)
		}
		*f.dst = d
	}
	*c = out
	return nil
}
