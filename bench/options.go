package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/seckill-lab/seckill/bench/fleet"
	"github.com/seckill-lab/seckill/stock"
	"github.com/seckill-lab/seckill/stock/catalog"
)

// Scaler re-scales the fleet to n service instances and returns the fleet
// as it then is. The local stack implements it; a fleet started elsewhere
// has none.
type Scaler interface {
	Scale(ctx context.Context, n int) (fleet.Fleet, error)
}

// ScalerFunc adapts a function to Scaler.
type ScalerFunc func(ctx context.Context, n int) (fleet.Fleet, error)

// Scale calls f.
func (f ScalerFunc) Scale(ctx context.Context, n int) (fleet.Fleet, error) { return f(ctx, n) }

// Defaults of Options (the load of the etcd article: 500 simultaneous requests on a
// stock of 300).
const (
	DefaultStock             = 300
	DefaultRequests          = 500
	DefaultConcurrency       = 50
	DefaultQty               = 1
	DefaultGoodsID           = 1
	DefaultRequestTimeout    = 30 * time.Second
	DefaultRunTimeout        = 10 * time.Minute
	DefaultCalibrateRequests = 2000
	// DefaultWarmup is the purchases fired, uncounted, on a separate goods
	// before each strategy's first measured run.
	DefaultWarmup = 50
	// MaxSweepPoints is the most concurrency points a Sweep may have.
	MaxSweepPoints = 10
	// warmupGoodsOffset puts the warm-up goods far from any goods a bench
	// or scenario sells: GoodsID + warmupGoodsOffset.
	warmupGoodsOffset = 900_000_000
	// warmupTimeout caps a warm-up: with a long WorkDelay it stops early.
	warmupTimeout = 5 * time.Second
	// MinCeilingRatio is the least ratio of the generator's ceiling to the
	// best measured throughput for the figures to measure the fleet rather
	// than the load generator.
	MinCeilingRatio = 5.0
)

// Options configure Run. The zero value of every field takes the default
// its comment gives; only out-of-range values are errors, and they name
// the option.
type Options struct {
	Strategies  []string // names from Strategies(); empty = all
	Stock       int      // initial stock of the goods; 0 = DefaultStock
	Requests    int      // purchases per run; 0 = DefaultRequests
	Concurrency int      // closed model: this many workers; open model: worker cap; 0 = DefaultConcurrency
	Qty         int      // units per purchase; 0 = DefaultQty
	Rate        int      // requests per second; 0 = closed model (as fast as the workers go)
	Repeat      int      // runs per strategy; 0 = 1. Each repeat is a round over all strategies, in an order shuffled per round from Seed (round 1 keeps the given order)
	Seed        int64    // seeds request ids and user ids; 0 = derived from the clock (recorded)
	GoodsID     int64    // goods to sell; 0 = DefaultGoodsID
	// Mode is what a purchase's critical section does: ModePurchase (the
	// default: the database's transaction) or ModeLock (a Redis counter,
	// counterstore.Store: the lock alone, what the source articles rank). In
	// ModeLock the goods is GoodsID + stock.CounterGoodsBase and only the
	// strategies that run the read-modify-write (none and the locks) run.
	Mode string
	// skipped are the strategies Mode lock left out of the list given
	// (Report.Skipped).
	skipped []string

	Instances int // >0: re-scale to this many instances first (needs Scaler); 0 = as it is
	// Config is the setting every strategy runs under; its zero value is
	// the service's defaults and its Name is ignored (each run sets its
	// strategy's). Config.NoWatchdog applies to Renewing() only,
	// Config.ReleasePause to Pausing() only; Config.Batch is passed to the
	// strategies it applies to (Batching()) and left off for the others;
	// with Config.PerUserLimit the run checks InvPerUserLimit. Default: the
	// service's defaults.
	Config stock.Config
	// CompareQueue runs every strategy the local queue applies to (a
	// distributed lock, see Queued) twice per round: with the local queue
	// and without it, the second labelled "NAME (no queue)". It cannot be
	// combined with Config.NoLocalQueue. Default false.
	CompareQueue bool
	// Sweep runs each strategy at each of these concurrencies (closed
	// model, Requests per point, Repeat rounds as usual); at most
	// MaxSweepPoints values >= 1, sorted and deduplicated here. It replaces
	// Concurrency, which must then be 0. Default none: one run at
	// Concurrency.
	Sweep []int
	// Warmup is the purchases fired before each strategy's first measured
	// run, under that strategy, on a separate goods (GoodsID + 900000000),
	// counted nowhere; at most 5 s of them. 0 = DefaultWarmup, <0 = none.
	Warmup int
	// NoEvents skips collecting the instances' lock events (and so the
	// mutual-exclusion and release-after-commit checks, then "not
	// applicable"), to measure a strategy without the event stream.
	NoEvents bool
	// Users draws each request's user id from this many users, so users
	// repeat (bench/peruser.go). 0 = a new user per request.
	Users int
	// Faults are injected at fixed times of every run through Faulter; the
	// run then reports throughput before, during and after them. They need
	// an open-model Rate. Default none.
	Faults  []fleet.Fault
	Faulter Faulter
	// Resend makes the clients careful: a purchase whose answer does not
	// say whether it sold (a transport error, a 5xx the outcome table
	// calls unknown: the proxy's 502 for a killed instance) is sent again
	// with the same Idempotency-Key, up to Resend more times (after
	// resendWait), and then counts as unanswered (RunResult.Unanswered).
	// It adds the invariant InvOrderAnswered. 0 = off, at most MaxResend.
	Resend int
	// Striker, when set, runs alongside every run's load (from its first
	// request until the last answer) and strikes when the story needs it,
	// e.g. pausing whichever instance just took the lock. What it returns
	// (the strikes it made) is recorded in the run. Default none.
	Striker Striker
	// Experiment names a fault applied to the fleet from outside the
	// bench (a Chaos Mesh experiment) and its declared duration; when
	// Experiment is set every run records its ObservedFault window.
	// Default none.
	Experiment         string
	ExperimentDuration time.Duration

	Fleet fleet.Fleet
	// Services are stock services loaded and audited through the service
	// contract alone (Service), each a unit of every round after the
	// strategies. With a Fleet that has no target and no instances, they
	// run alone and Strategies must be empty. Default none.
	Services []Service
	Scaler   Scaler // nil: the fleet cannot be re-scaled
	// CPU samples the fleet's processes' CPU time around each run's load
	// (RunResult.CPU, the report's "CPU per purchase"). nil: only the
	// bench's own and the machine's are read.
	CPU CPUSampler

	OutDir            string        // where the reports go ("" = write nothing)
	RequestTimeout    time.Duration // per request; 0 = DefaultRequestTimeout
	RunTimeout        time.Duration // per run (one strategy, one repeat); 0 = DefaultRunTimeout
	CalibrateRequests int           // requests of the automatic calibration; 0 = DefaultCalibrateRequests, <0 = skip
	// DatabaseDSN is the fleet's MariaDB/MySQL (a go-sql-driver DSN). When
	// set, the calibration also measures the database's own limit for the
	// purchase transaction (CalibrateDatabase, CalibrateRequests
	// transactions at Concurrency) and the report gives every strategy's
	// sales per second as a fraction of it. Default "": not measured.
	DatabaseDSN string
	Progress    io.Writer // live progress line (stderr); nil = none
	CommandLine []string  // recorded in the report
}

// serviceConfig is the setting the instances get for u: o.Config under
// u's strategy name, without the local queue for a "no queue" unit, and
// without a batch for a strategy that cannot batch.
func (o Options) serviceConfig(u unit) stock.Config {
	c := o.Config
	c.Name = u.Strategy
	if u.NoQueue {
		c.NoLocalQueue = true
	}
	if !slices.Contains(Batching(), u.Strategy) {
		c.Batch = 0
	}
	return c
}

// The modes of Options.Mode.
const (
	ModePurchase = "purchase"
	ModeLock     = "lock"
)

// Modes lists Options.Mode's values.
func Modes() []string { return []string{ModePurchase, ModeLock} }

// lockAlone reports whether strategy s runs in ModeLock: the read-modify-
// write, unprotected or under a lock that releases after its commit (the
// locks that can batch).
func lockAlone(s string) bool {
	info, ok := catalog.Lookup(s)
	return ok && (info.Kind == catalog.KindUnprotected || info.Batches())
}

// locksOf keeps the strategies of list that run in Mode lock.
func locksOf(list []string) []string {
	return slices.DeleteFunc(slices.Clone(list), func(s string) bool { return !lockAlone(s) })
}

// NotALock is why Mode lock skips a strategy (Report.Skipped).
const NotALock = "not a lock: it deducts in the database itself (row lock, version or one statement), so it has no lock to measure alone"

// keepLocks keeps, in Mode lock, the strategies that run there and puts
// the others in o.skipped: a mixed list runs its locks. A list with no
// lock at all, and fencing or batches, are errors.
func (o *Options) keepLocks() error {
	var kept []string
	o.skipped = nil
	for _, s := range o.Strategies {
		if lockAlone(s) {
			kept = append(kept, s)
		} else {
			o.skipped = append(o.skipped, s)
		}
	}
	if len(kept) == 0 {
		return fmt.Errorf("%w: Mode lock: %s: %s; give a lock (%s) or drop --mode lock", ErrInvalidOptions,
			strings.Join(o.skipped, ", "), NotALock, strings.Join(locksOf(Strategies()), ", "))
	}
	if o.Config.Fencing || o.Config.Batch > 0 {
		return fmt.Errorf("%w: Mode lock: fencing and batches work on the database's row; drop them", ErrInvalidOptions)
	}
	o.Strategies = kept
	return nil
}

// ErrInvalidOptions wraps every option validation error.
var ErrInvalidOptions = errors.New("invalid options")

// withDefaults returns o with defaults filled in, or an error naming the
// first invalid option.
func (o Options) withDefaults() (Options, error) {
	if err := o.fillStrategies(); err != nil {
		return o, err
	}
	if err := o.fillDefaults(); err != nil {
		return o, err
	}
	if err := o.checkRanges(); err != nil {
		return o, err
	}
	return o, o.checkSetting()
}

// fillStrategies fills in the mode and the strategies (every one that
// runs in the mode) and checks that the mode and the setting's knobs
// apply to each.
func (o *Options) fillStrategies() error {
	if o.Mode == "" {
		o.Mode = ModePurchase
	}
	if !slices.Contains(Modes(), o.Mode) {
		return fmt.Errorf("%w: Mode %q: want %s", ErrInvalidOptions, o.Mode, strings.Join(Modes(), " or "))
	}
	if o.contractOnly() {
		if len(o.Strategies) > 0 {
			return fmt.Errorf("%w: Strategies %s need the lab's fleet (its admin API switches them); with Services alone, drop them",
				ErrInvalidOptions, strings.Join(o.Strategies, ", "))
		}
		return o.checkServices()
	}
	if len(o.Strategies) == 0 {
		o.Strategies = Strategies()
		if o.Mode == ModeLock {
			o.Strategies = locksOf(o.Strategies)
		}
	}
	for _, s := range o.Strategies {
		if _, ok := catalog.Lookup(s); !ok { // the registry's, or an exercise's (catalog.Extend)
			return fmt.Errorf("%w: Strategies: unknown strategy %q; valid: %s", ErrInvalidOptions, s, strings.Join(Strategies(), ", "))
		}
	}
	if o.Mode == ModeLock {
		if err := o.keepLocks(); err != nil {
			return err
		}
	}
	if err := o.checkServices(); err != nil {
		return err
	}
	for _, s := range o.Strategies {
		if o.Config.NoWatchdog && !slices.Contains(Renewing(), s) {
			return fmt.Errorf("%w: Config.NoWatchdog applies to %s only, not %s", ErrInvalidOptions, strings.Join(Renewing(), ", "), s)
		}
		if o.Config.ReleasePause != 0 && !slices.Contains(Pausing(), s) {
			return fmt.Errorf("%w: Config.ReleasePause applies to %s only, not %s", ErrInvalidOptions, strings.Join(Pausing(), ", "), s)
		}
	}
	return nil
}

// fillDefaults fills in every count, goods, timeout and seed left to its
// default, and the sweep's points.
func (o *Options) fillDefaults() error {
	def := func(v *int, d int) {
		if *v == 0 {
			*v = d
		}
	}
	def(&o.Stock, DefaultStock)
	def(&o.Requests, DefaultRequests)
	if len(o.Sweep) > 0 && o.Concurrency != 0 {
		return fmt.Errorf("%w: Sweep sets the concurrency of each point; drop Concurrency or drop Sweep", ErrInvalidOptions)
	}
	if len(o.Sweep) > 0 && o.Rate != 0 {
		return fmt.Errorf("%w: Sweep is a closed-model sweep of concurrency; drop Rate or drop Sweep", ErrInvalidOptions)
	}
	def(&o.Concurrency, DefaultConcurrency)
	def(&o.Qty, DefaultQty)
	def(&o.Repeat, 1)
	def(&o.CalibrateRequests, DefaultCalibrateRequests)
	def(&o.Warmup, DefaultWarmup)
	if err := o.normalizeSweep(); err != nil {
		return err
	}
	if o.GoodsID == 0 {
		o.GoodsID = DefaultGoodsID
	}
	if o.Mode == ModeLock && !stock.LockAlone(o.GoodsID) {
		o.GoodsID += stock.CounterGoodsBase
	}
	if o.RequestTimeout == 0 {
		o.RequestTimeout = DefaultRequestTimeout
	}
	if o.RunTimeout == 0 {
		o.RunTimeout = DefaultRunTimeout
	}
	if o.Seed == 0 {
		o.Seed = time.Now().UnixNano()
	}
	return nil
}

// checkRanges names the first option out of its range.
func (o Options) checkRanges() error {
	checks := []struct {
		ok  bool
		msg string
	}{
		{o.Stock > 0, "Stock must be > 0"},
		{o.Requests > 0 && o.Requests <= 10_000_000, "Requests must be between 1 and 10000000"},
		{o.Concurrency > 0 && o.Concurrency <= 10_000, "Concurrency must be between 1 and 10000"},
		{o.Qty > 0, "Qty must be > 0"},
		{o.Rate >= 0, "Rate must be >= 0 (0 = closed model)"},
		{o.Repeat > 0 && o.Repeat <= 100, "Repeat must be between 1 and 100"},
		{o.Instances >= 0 && o.Instances <= 64, "Instances must be between 1 and 64 (0 = as it is)"},
		{o.GoodsID > 0, "GoodsID must be > 0"},
		{o.Config.WorkDelay >= 0, "Config.WorkDelay must be >= 0"},
		{o.Config.LockTTL >= 0, "Config.LockTTL must be >= 0 (0 = the default)"},
		{o.Config.LockWait >= 0, "Config.LockWait must be >= 0 (0 = the default)"},
		{o.Config.ReleasePause >= 0, "Config.ReleasePause must be >= 0"},
		{o.Config.Batch >= 0 && o.Config.Batch <= MaxBatch, fmt.Sprintf("Config.Batch must be between 0 and %d (0 = off)", MaxBatch)},
		{o.Config.PerUserLimit >= 0 && o.Config.PerUserLimit <= stock.MaxPerUserLimit, fmt.Sprintf("Config.PerUserLimit must be between 0 and %d (0 = no limit)", stock.MaxPerUserLimit)},
		{o.Users >= 0 && o.Users <= MaxUsers, fmt.Sprintf("Users must be between 0 and %d (0 = a new user per request)", MaxUsers)},
		{o.RequestTimeout > 0, "RequestTimeout must be > 0"},
		{o.RunTimeout > 0, "RunTimeout must be > 0"},
		{o.Resend >= 0 && o.Resend <= MaxResend, fmt.Sprintf("Resend must be between 0 and %d (0 = off)", MaxResend)},
		{!o.CompareQueue || !o.Config.NoLocalQueue, "CompareQueue runs each queued strategy with and without the local queue; drop Config.NoLocalQueue"},
		{!o.CompareQueue || slices.ContainsFunc(o.Strategies, func(s string) bool { return slices.Contains(Queued(), s) }),
			"CompareQueue: none of the strategies uses the local queue; add one of " + strings.Join(Queued(), ", ")},
		{len(o.Faults) == 0 || o.Faulter != nil, "Faults need a Faulter (the local stack); this fleet has none"},
		{len(o.Faults) == 0 || o.Rate > 0, "Faults need an open-model Rate: with a closed model the load itself stops when the fleet does, and before/during/after compare nothing"},
	}
	for _, c := range checks {
		if !c.ok {
			return fmt.Errorf("%w: %s", ErrInvalidOptions, c.msg)
		}
	}
	return nil
}

// checkSetting checks every strategy's setting as the instances will,
// before anything is sent (a bad knob stops the bench, not its fifth
// run), and that every fault ends within the load.
func (o Options) checkSetting() error {
	for _, s := range o.Strategies {
		if err := o.serviceConfig(unit{Strategy: s}).Validate(); err != nil {
			return fmt.Errorf("%w: %s: %v", ErrInvalidOptions, s, err)
		}
	}
	if o.Rate > 0 {
		runLen := time.Duration(float64(o.Requests) / float64(o.Rate) * float64(time.Second))
		for _, f := range o.Faults {
			if f.Start+f.Duration > runLen {
				return fmt.Errorf("%w: Faults: %s ends after the run's %s of load (Requests/Rate); start it earlier or send more requests",
					ErrInvalidOptions, f, runLen)
			}
		}
	}
	return nil
}

// normalizeSweep checks o.Sweep and sorts and deduplicates it; with a
// sweep, Concurrency becomes its largest point (for the calibration).
func (o *Options) normalizeSweep() error {
	if len(o.Sweep) == 0 {
		o.Sweep = nil
		return nil
	}
	for _, c := range o.Sweep {
		if c < 1 || c > 10_000 {
			return fmt.Errorf("%w: Sweep: %d clients is out of range; every point must be between 1 and 10000", ErrInvalidOptions, c)
		}
	}
	s := slices.Clone(o.Sweep)
	slices.Sort(s)
	s = slices.Compact(s)
	if len(s) > MaxSweepPoints {
		return fmt.Errorf("%w: Sweep has %d points; at most %d (e.g. 1,10,50,200)", ErrInvalidOptions, len(s), MaxSweepPoints)
	}
	o.Sweep = s
	o.Concurrency = s[len(s)-1]
	return nil
}

// ParseSweep reads a --sweep value: comma-separated client counts such as
// "1,10,50,200". Options validates the values.
func ParseSweep(v string) ([]int, error) {
	var out []int
	for _, p := range strings.Split(v, ",") {
		p = strings.TrimSpace(p)
		if p == "" {
			continue
		}
		c, err := strconv.Atoi(p)
		if err != nil {
			return nil, fmt.Errorf("sweep: %q is not a number of clients; give comma-separated integers such as 1,10,50,200", p)
		}
		out = append(out, c)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("sweep: no client counts given; give comma-separated integers such as 1,10,50,200")
	}
	return out, nil
}
