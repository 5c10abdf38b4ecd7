package stock

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"time"
)

// Defaults for Config.
const (
	DefaultLockTTL  = 10 * time.Second
	DefaultLockWait = 5 * time.Second
	MaxWorkDelay    = 30 * time.Second
	MinLockTTL      = 100 * time.Millisecond
	MaxLockTTL      = 10 * time.Minute
	MaxLockWait     = 2 * time.Minute
	// MaxReleasePause stays below the service's 3s bound on an unlock.
	MaxReleasePause = 2 * time.Second
	MaxBatch        = 256
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
	// whose registry entry has Tokens accept it.
	Fencing bool
	// Watchdog keeps a held lock alive past its TTL (Redis watchdog,
	// Redlock extension, MySQL expires_at renewal). Default true. Turning
	// it off makes a holder that works longer than lock_ttl lose its lock
	// while it still works, as a stop-the-world pause would: the scenario
	// fencing exists for. Only the strategies whose registry entry Renews
	// accept it.
	Watchdog bool
	// LocalQueue makes a purchase wait its turn in an in-process FIFO per
	// goods before it contends for a distributed lock, so at most one
	// waiter per instance and goods polls or watches the lock server:
	// two-level locking. Without it, every waiter contends at once; after
	// a fault the backlog of waiters can keep a polling lock (Redlock,
	// mysql-unique) failing for as long as the load lasts. For
	// mysql-optimistic the turn lasts the whole purchase: one
	// compare-and-swap attempt per instance and goods at a time, instead
	// of every client retrying against every other. Default true. It does
	// not apply to in-process locks, row locks and lock-free strategies
	// (Strategy.Queued).
	LocalQueue bool
	// LeaseCheck makes a holder whose lease the backend reported lost
	// (TTL expired, session ended, node deleted) roll back before COMMIT,
	// answered with ErrLeaseLost. Default true. It narrows the window but
	// cannot close it: a pause between the check and the COMMIT still
	// lets a stale holder write. Only fencing closes it.
	LeaseCheck bool
	// ReleasePause pauses the release of a lock whose release is two
	// commands (the registry's ReleasePause: `redis-owner`) between its
	// owner check and its delete: a pause longer than what is left of the
	// TTL lets the key expire, the next holder take it, and the delete
	// remove that holder's lock. Only those strategies accept it. Default 0.
	ReleasePause time.Duration
	// Batch is the most purchases one lock holder sells in one critical
	// section and one transaction: purchases of one goods queue up in the
	// instance, and whoever takes the lock drains up to Batch of them, in
	// arrival order, reads the stock once and writes it once. 0 or 1 = off.
	// Default 0. At most MaxBatch; more than 1 only for the locker
	// strategies that release after the commit.
	Batch int
	// PerUserLimit is the most orders one user may have of one goods
	// (peruser.go: "one order per user" is 1); a purchase past it is
	// refused with ErrUserLimit. 0 = no limit (the default). At most
	// MaxPerUserLimit.
	PerUserLimit int
}

// DefaultConfig returns the defaults for strategy name.
func DefaultConfig(name string) Config {
	return Config{Name: name, LockTTL: DefaultLockTTL, LockWait: DefaultLockWait, Watchdog: true, LocalQueue: true, LeaseCheck: true}
}

// Validate checks c and names the first problem.
func (c Config) Validate() error {
	info, ok := Lookup(c.Name)
	if !ok {
		return fmt.Errorf("%w %q: valid names are %s", ErrUnknownStrategy, c.Name, strings.Join(StrategyNames(), ", "))
	}
	tokens := func(s Strategy) bool { return s.Tokens }
	renews := func(s Strategy) bool { return s.Renews }
	pauses := func(s Strategy) bool { return s.ReleasePause }
	switch {
	case c.WorkDelay < 0 || c.WorkDelay > MaxWorkDelay:
		return fmt.Errorf("work_delay %s out of range [0, %s]", c.WorkDelay, MaxWorkDelay)
	case c.LockTTL < MinLockTTL || c.LockTTL > MaxLockTTL:
		return fmt.Errorf("lock_ttl %s out of range [%s, %s]", c.LockTTL, MinLockTTL, MaxLockTTL)
	case c.LockWait <= 0 || c.LockWait > MaxLockWait:
		return fmt.Errorf("lock_wait %s out of range (0, %s]", c.LockWait, MaxLockWait)
	case c.Fencing && !info.Tokens:
		return fmt.Errorf("fencing needs a lock that supplies tokens; %s does not (use %s)", c.Name, strings.Join(Names(tokens), ", "))
	case !c.Watchdog && !info.Renews:
		return fmt.Errorf("watchdog can be turned off only for %s; %s has none to turn off or keeps its session alive on its own", strings.Join(Names(renews), ", "), c.Name)
	case c.ReleasePause < 0 || c.ReleasePause > MaxReleasePause:
		return fmt.Errorf("release_pause %s out of range [0, %s]", c.ReleasePause, MaxReleasePause)
	case c.ReleasePause > 0 && !info.ReleasePause:
		return fmt.Errorf("release_pause applies only to %s (a release in two commands); %s releases in one step", strings.Join(Names(pauses), ", "), c.Name)
	case c.Batch < 0 || c.Batch > MaxBatch:
		return fmt.Errorf("batch %d out of range [0, %d] (0 or 1 = off)", c.Batch, MaxBatch)
	case c.PerUserLimit < 0 || c.PerUserLimit > MaxPerUserLimit:
		return fmt.Errorf("per_user_limit %d out of range [0, %d] (0 = no limit)", c.PerUserLimit, MaxPerUserLimit)
	case c.Batch > 1 && !info.Batches():
		return fmt.Errorf("batch applies only to %s; %s has no lock holder to drain a queue (use batch 0)", strings.Join(Names(Strategy.Batches), ", "), c.Name)
	}
	return nil
}

// ConfigWire is the one wire form of a strategy setting: the body of PUT
// /admin/strategy and, with Instance, the answer of GET /admin/strategy.
// Durations are Go duration strings; an omitted field takes its default
// (a nil Watchdog, LocalQueue or LeaseCheck keeps the default: on).
type ConfigWire struct {
	Name       string `json:"name"`
	WorkDelay  string `json:"work_delay"`
	LockTTL    string `json:"lock_ttl"`
	LockWait   string `json:"lock_wait"`
	Fencing    bool   `json:"fencing"`
	Watchdog   *bool  `json:"watchdog,omitempty"`
	LocalQueue *bool  `json:"local_queue,omitempty"`
	LeaseCheck *bool  `json:"lease_check,omitempty"`
	Batch      int    `json:"batch,omitempty"`
	// ReleasePause is last: older clients do not send it.
	ReleasePause string `json:"release_pause,omitempty"`
	// PerUserLimit is Config.PerUserLimit (0, omitted: no limit).
	PerUserLimit int `json:"per_user_limit,omitempty"`
	// Instance names the instance that answered a GET; a PUT does not
	// take it.
	Instance string `json:"instance,omitempty"`
}

// Same reports whether w and o are the same setting (Instance aside; an
// absent switch is false).
func (w ConfigWire) Same(o ConfigWire) bool {
	flag := func(b *bool) bool { return b != nil && *b }
	return w.Name == o.Name && w.WorkDelay == o.WorkDelay && w.LockTTL == o.LockTTL && w.LockWait == o.LockWait &&
		w.Fencing == o.Fencing && flag(w.Watchdog) == flag(o.Watchdog) && flag(w.LocalQueue) == flag(o.LocalQueue) &&
		flag(w.LeaseCheck) == flag(o.LeaseCheck) && w.Batch == o.Batch && w.ReleasePause == o.ReleasePause &&
		w.PerUserLimit == o.PerUserLimit
}

// String shows the setting as the CLI's flags would.
func (w ConfigWire) String() string {
	flag := func(b *bool) bool { return b != nil && *b }
	return fmt.Sprintf("%s work_delay=%s lock_ttl=%s lock_wait=%s fencing=%t watchdog=%t local_queue=%t lease_check=%t batch=%d release_pause=%s",
		w.Name, w.WorkDelay, w.LockTTL, w.LockWait, w.Fencing, flag(w.Watchdog), flag(w.LocalQueue), flag(w.LeaseCheck), w.Batch, w.ReleasePause)
}

// Wire returns c's wire form.
func (c Config) Wire() ConfigWire {
	return ConfigWire{Name: c.Name, WorkDelay: c.WorkDelay.String(), LockTTL: c.LockTTL.String(), LockWait: c.LockWait.String(),
		Fencing: c.Fencing, Watchdog: &c.Watchdog, LocalQueue: &c.LocalQueue, LeaseCheck: &c.LeaseCheck, Batch: c.Batch,
		ReleasePause: c.ReleasePause.String(), PerUserLimit: c.PerUserLimit}
}

// ConfigFields are the JSON fields of a setting (PUT /admin/strategy).
func ConfigFields() []string {
	t := reflect.TypeFor[ConfigWire]()
	out := make([]string, 0, t.NumField())
	for i := range t.NumField() {
		if name, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ","); name != "instance" {
			out = append(out, name)
		}
	}
	return out
}

// MarshalJSON writes durations as Go duration strings ("250ms").
func (c Config) MarshalJSON() ([]byte, error) {
	return json.Marshal(c.Wire())
}

// UnmarshalJSON reads durations as Go duration strings. Omitted fields
// take their defaults.
func (c *Config) UnmarshalJSON(b []byte) error {
	var w ConfigWire
	if err := json.Unmarshal(b, &w); err != nil {
		return err
	}
	out := DefaultConfig(w.Name)
	out.Fencing, out.Batch, out.PerUserLimit = w.Fencing, w.Batch, w.PerUserLimit
	if w.Watchdog != nil {
		out.Watchdog = *w.Watchdog
	}
	if w.LocalQueue != nil {
		out.LocalQueue = *w.LocalQueue
	}
	if w.LeaseCheck != nil {
		out.LeaseCheck = *w.LeaseCheck
	}
	for _, f := range []struct {
		field string
		raw   string
		dst   *time.Duration
	}{{"work_delay", w.WorkDelay, &out.WorkDelay}, {"lock_ttl", w.LockTTL, &out.LockTTL}, {"lock_wait", w.LockWait, &out.LockWait},
		{"release_pause", w.ReleasePause, &out.ReleasePause}} {
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
