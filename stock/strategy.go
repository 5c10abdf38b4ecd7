package stock

import (
	"fmt"
	"strings"
	"time"

	"github.com/seckill-lab/seckill/lockimpl"
	"github.com/seckill-lab/seckill/stock/catalog"
)

// Defaults and bounds of Config: each default is defined here once.
const (
	// DefaultLockTTL is Config.LockTTL's default: the lock contract's
	// (lockimpl.DefaultTTL), one default for both.
	DefaultLockTTL = lockimpl.DefaultTTL
	// DefaultLockWait is Config.LockWait's default.
	DefaultLockWait = 5 * time.Second
	MaxWorkDelay    = 30 * time.Second
	MinLockTTL      = 100 * time.Millisecond
	MaxLockTTL      = 10 * time.Minute
	MaxLockWait     = 2 * time.Minute
	// MaxReleasePause stays below the service's 3s bound on an unlock.
	MaxReleasePause = 2 * time.Second
	MaxBatch        = 256
)

// Config is the setting of a strategy: what an instance runs
// (Service.SetConfig), the body of PUT /admin/strategy, what a bench asks
// for and records. Its zero value, with a Name, is the strategy's default
// setting: every other field is optional and its zero value means the
// default its comment gives.
type Config struct {
	// Name is the strategy name. Required.
	Name string
	// WorkDelay is simulated business work inside the critical section.
	// Optional, defaults to 0 (none).
	WorkDelay time.Duration
	// LockTTL is the lock's time to live (renewed by backends that renew).
	// Optional, defaults to DefaultLockTTL (0 = the default).
	LockTTL time.Duration
	// LockWait is the budget for acquiring the lock (or, for store
	// strategies, for row locks and retries). Optional, defaults to
	// DefaultLockWait (0 = the default).
	LockWait time.Duration
	// Fencing makes the holder claim the goods row with the lock's token
	// before it reads (`SET fence = token WHERE fence < token`) and makes
	// the stock write conditional on that claim still standing
	// (`... AND fence = token`): a holder whose lock expired and was taken
	// by a newer token is rolled back with ErrStaleLock. Only strategies
	// whose registry entry has Tokens accept it. Optional, defaults to off.
	Fencing bool
	// NoWatchdog stops keeping a held lock alive past its TTL (Redis
	// watchdog, Redlock extension, MySQL expires_at renewal): a holder
	// that works longer than the TTL then loses its lock while it still
	// works, as a stop-the-world pause would: the scenario fencing exists
	// for. Only the strategies whose registry entry Renews accept it.
	// Optional, defaults to false: the watchdog is on.
	NoWatchdog bool
	// NoLocalQueue makes every waiter contend at the lock server at once.
	// With the local queue (the default) a purchase waits its turn in an
	// in-process FIFO per goods before it contends for a distributed lock,
	// so at most one waiter per instance and goods polls or watches the
	// lock server: two-level locking. Without it, after a fault the
	// backlog of waiters can keep a polling lock (Redlock, mysql-unique)
	// failing for as long as the load lasts. For mysql-optimistic the turn
	// lasts the whole purchase: one compare-and-swap attempt per instance
	// and goods at a time. The queue does not apply to in-process locks,
	// row locks and lock-free strategies (Strategy.Queued). Optional,
	// defaults to false: the local queue is on.
	NoLocalQueue bool
	// NoLeaseCheck lets a holder whose lease the backend reported lost
	// (TTL expired, session ended, node deleted) commit anyway. With the
	// check (the default) it rolls back before COMMIT, answered with
	// ErrLeaseLost. The check narrows the window but cannot close it: a
	// pause between the check and the COMMIT still lets a stale holder
	// write. Only fencing closes it. Optional, defaults to false: the
	// lease check is on.
	NoLeaseCheck bool
	// ReleasePause pauses the release of a lock whose release is two
	// commands (the registry's ReleasePause: `redis-owner`) between its
	// owner check and its delete: a pause longer than what is left of the
	// TTL lets the key expire, the next holder take it, and the delete
	// remove that holder's lock. Only those strategies accept it.
	// Optional, defaults to 0 (none).
	ReleasePause time.Duration
	// Batch is the most purchases one lock holder sells in one critical
	// section and one transaction: purchases of one goods queue up in the
	// instance, and whoever takes the lock drains up to Batch of them, in
	// arrival order, reads the stock once and writes it once. At most
	// MaxBatch; more than 1 only for the locker strategies that release
	// after the commit. Optional, defaults to 0 (0 or 1 = off).
	Batch int
	// PerUserLimit is the most orders one user may have of one goods
	// (peruser.go: "one order per user" is 1); a purchase past it is
	// refused with ErrUserLimit. At most MaxPerUserLimit. Optional,
	// defaults to 0 (no limit).
	PerUserLimit int
}

// WithDefaults returns c with every default it leaves to its zero value
// filled in (LockTTL, LockWait): the setting as an instance runs and
// reports it.
func (c Config) WithDefaults() Config {
	if c.LockTTL == 0 {
		c.LockTTL = DefaultLockTTL
	}
	if c.LockWait == 0 {
		c.LockWait = DefaultLockWait
	}
	return c
}

// Equal reports whether c and o are the same setting once their defaults
// are filled in (a zero LockTTL equals DefaultLockTTL).
func (c Config) Equal(o Config) bool { return c.WithDefaults() == o.WithDefaults() }

// Knob is one knob of a setting that differs from its strategy's default:
// its name as `seckill status` and the dashboard print it ("work", "ttl",
// "wait", "fencing", "no watchdog", "no local queue", "no lease check",
// "release pause", "batch", "per-user limit") and its value, empty for a
// switch.
type Knob struct {
	Name  string `json:"name"`
	Value string `json:"value,omitempty"`
}

// String is the knob as the status line prints it: "work 250ms".
func (k Knob) String() string { return strings.TrimSpace(k.Name + " " + k.Value) }

// Validate checks c (its defaults filled in) and names the first problem.
func (c Config) Validate() error {
	info, ok := catalog.Lookup(c.Name)
	if !ok {
		return fmt.Errorf("%w %q: valid names are %s", catalog.ErrUnknownStrategy, c.Name, strings.Join(catalog.StrategyNames(), ", "))
	}
	c = c.WithDefaults()
	tokens := func(s catalog.Strategy) bool { return s.Tokens }
	renews := func(s catalog.Strategy) bool { return s.Renews }
	pauses := func(s catalog.Strategy) bool { return s.ReleasePause }
	switch {
	case c.WorkDelay < 0 || c.WorkDelay > MaxWorkDelay:
		return fmt.Errorf("work_delay %s out of range [0, %s]", c.WorkDelay, MaxWorkDelay)
	case c.LockTTL < MinLockTTL || c.LockTTL > MaxLockTTL:
		return fmt.Errorf("lock_ttl %s out of range [%s, %s]", c.LockTTL, MinLockTTL, MaxLockTTL)
	case c.LockWait <= 0 || c.LockWait > MaxLockWait:
		return fmt.Errorf("lock_wait %s out of range (0, %s]", c.LockWait, MaxLockWait)
	case c.Fencing && !info.Tokens:
		return fmt.Errorf("fencing needs a lock that supplies tokens; %s does not (use %s)", c.Name, strings.Join(catalog.Names(tokens), ", "))
	case c.NoWatchdog && !info.Renews:
		return fmt.Errorf("watchdog can be turned off only for %s; %s has none to turn off or keeps its session alive on its own", strings.Join(catalog.Names(renews), ", "), c.Name)
	case c.ReleasePause < 0 || c.ReleasePause > MaxReleasePause:
		return fmt.Errorf("release_pause %s out of range [0, %s]", c.ReleasePause, MaxReleasePause)
	case c.ReleasePause > 0 && !info.ReleasePause:
		return fmt.Errorf("release_pause applies only to %s (a release in two commands); %s releases in one step", strings.Join(catalog.Names(pauses), ", "), c.Name)
	case c.Batch < 0 || c.Batch > MaxBatch:
		return fmt.Errorf("batch %d out of range [0, %d] (0 or 1 = off)", c.Batch, MaxBatch)
	case c.PerUserLimit < 0 || c.PerUserLimit > MaxPerUserLimit:
		return fmt.Errorf("per_user_limit %d out of range [0, %d] (0 = no limit)", c.PerUserLimit, MaxPerUserLimit)
	case c.Batch > 1 && !info.Batches():
		return fmt.Errorf("batch applies only to %s; %s has no lock holder to drain a queue (use batch 0)", strings.Join(catalog.Names(catalog.Strategy.Batches), ", "), c.Name)
	}
	return nil
}

// MarshalJSON writes c with its defaults filled in, durations as Go
// duration strings ("250ms").
func (c Config) MarshalJSON() ([]byte, error) { return marshalConfig(c, "") }

// UnmarshalJSON reads durations as Go duration strings. Omitted fields
// take their defaults.
func (c *Config) UnmarshalJSON(b []byte) error {
	out, _, err := decodeConfig(b)
	if err != nil {
		return err
	}
	*c = out
	return nil
}

// InstanceConfig is the answer of GET /admin/strategy: the setting an
// instance runs, its defaults filled in, and the instance's name.
type InstanceConfig struct {
	Config
	// Instance names the instance that answered.
	Instance string
}

// MarshalJSON writes the setting's fields and "instance".
func (ic InstanceConfig) MarshalJSON() ([]byte, error) {
	return marshalConfig(ic.Config, ic.Instance)
}

// UnmarshalJSON reads the setting's fields and "instance".
func (ic *InstanceConfig) UnmarshalJSON(b []byte) error {
	c, instance, err := decodeConfig(b)
	if err != nil {
		return err
	}
	*ic = InstanceConfig{Config: c, Instance: instance}
	return nil
}
