package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"
)

// Fleet is where a bench fires: Target is the load balancer (nginx) every
// purchase goes through; Instances are the base URLs of every service
// instance (the admin API is called on each of them); AdminToken is the
// bearer token the instances accept.
type Fleet struct {
	Target     string
	Instances  []string
	AdminToken string
}

// Scaler re-scales the fleet to n service instances and returns the fleet
// as it then is. The local stack implements it; a fleet started elsewhere
// has none.
type Scaler interface {
	Scale(ctx context.Context, n int) (Fleet, error)
}

// ScalerFunc adapts a function to Scaler.
type ScalerFunc func(ctx context.Context, n int) (Fleet, error)

// Scale calls f.
func (f ScalerFunc) Scale(ctx context.Context, n int) (Fleet, error) { return f(ctx, n) }

// Defaults of Options (the load of seed 002: 500 simultaneous requests on a
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
	Repeat      int      // runs per strategy; 0 = 1
	Seed        int64    // seeds request ids and user ids; 0 = derived from the clock (recorded)
	GoodsID     int64    // goods to sell; 0 = DefaultGoodsID

	Instances int           // >0: re-scale to this many instances first (needs Scaler); 0 = as it is
	WorkDelay time.Duration // simulated work inside the critical section; 0 = none
	LockTTL   time.Duration // lock TTL; 0 = the service default
	LockWait  time.Duration // lock wait budget; 0 = the service default
	Fencing   bool          // ask the service to check fencing tokens; default off
	// NoWatchdog asks the service not to renew held locks (the strategies
	// whose registry entry Renews), so work longer than LockTTL makes
	// stale holders. Default false.
	NoWatchdog bool
	// NoLocalQueue makes every waiter contend at the lock server (no
	// two-level locking). Default false: the service's local queue is on.
	NoLocalQueue bool
	// NoEvents skips collecting the instances' lock events (and so the
	// mutual-exclusion and release-after-commit checks, then "not
	// applicable"), to measure a strategy without the event stream.
	NoEvents bool
	// NoLeaseCheck lets a holder whose lease was reported lost commit
	// anyway. Default false: the service's lease check is on.
	NoLeaseCheck bool
	// Batch has a lock holder sell up to Batch queued purchases in one
	// critical section and one transaction (stock.Config.Batch). It is
	// passed to the strategies it applies to (Batching()) and left off for
	// the others. 0 = off (the service default); at most MaxBatch.
	Batch int
	// Faults are injected at fixed times of every run through Faulter; the
	// run then reports throughput before, during and after them. They need
	// an open-model Rate. Default none.
	Faults  []Fault
	Faulter Faulter
	// Striker, when set, runs alongside every run's load (from its first
	// request until the last answer) and strikes when the story needs it,
	// e.g. pausing whichever instance just took the lock. What it returns
	// (the strikes it made) is recorded in the run. Default none.
	Striker Striker

	Fleet  Fleet
	Scaler Scaler // nil: the fleet cannot be re-scaled

	OutDir            string        // where the reports go ("" = write nothing)
	RequestTimeout    time.Duration // per request; 0 = DefaultRequestTimeout
	RunTimeout        time.Duration // per run (one strategy, one repeat); 0 = DefaultRunTimeout
	CalibrateRequests int           // requests of the automatic calibration; 0 = DefaultCalibrateRequests, <0 = skip
	Progress          io.Writer     // live progress line (stderr); nil = none
	CommandLine       []string      // recorded in the report
}

// ErrInvalidOptions wraps every option validation error.
var ErrInvalidOptions = errors.New("invalid options")

// withDefaults returns o with defaults filled in, or an error naming the
// first invalid option.
func (o Options) withDefaults() (Options, error) {
	if len(o.Strategies) == 0 {
		o.Strategies = Strategies()
	}
	for _, s := range o.Strategies {
		if !slices.Contains(Strategies(), s) {
			return o, fmt.Errorf("%w: Strategies: unknown strategy %q; valid: %s", ErrInvalidOptions, s, strings.Join(Strategies(), ", "))
		}
		if o.NoWatchdog && !slices.Contains(Renewing(), s) {
			return o, fmt.Errorf("%w: NoWatchdog applies to %s only, not %s", ErrInvalidOptions, strings.Join(Renewing(), ", "), s)
		}
	}
	def := func(v *int, d int) {
		if *v == 0 {
			*v = d
		}
	}
	def(&o.Stock, DefaultStock)
	def(&o.Requests, DefaultRequests)
	def(&o.Concurrency, DefaultConcurrency)
	def(&o.Qty, DefaultQty)
	def(&o.Repeat, 1)
	def(&o.CalibrateRequests, DefaultCalibrateRequests)
	if o.GoodsID == 0 {
		o.GoodsID = DefaultGoodsID
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
		{o.WorkDelay >= 0, "WorkDelay must be >= 0"},
		{o.LockTTL >= 0, "LockTTL must be >= 0"},
		{o.LockWait >= 0, "LockWait must be >= 0"},
		{o.Batch >= 0 && o.Batch <= MaxBatch, fmt.Sprintf("Batch must be between 0 and %d (0 = off)", MaxBatch)},
		{o.RequestTimeout > 0, "RequestTimeout must be > 0"},
		{o.RunTimeout > 0, "RunTimeout must be > 0"},
		{len(o.Faults) == 0 || o.Faulter != nil, "Faults need a Faulter (the local stack); this fleet has none"},
		{len(o.Faults) == 0 || o.Rate > 0, "Faults need an open-model Rate: with a closed model the load itself stops when the fleet does, and before/during/after compare nothing"},
	}
	for _, c := range checks {
		if !c.ok {
			return o, fmt.Errorf("%w: %s", ErrInvalidOptions, c.msg)
		}
	}
	if o.Rate > 0 {
		runLen := time.Duration(float64(o.Requests) / float64(o.Rate) * float64(time.Second))
		for _, f := range o.Faults {
			if f.Start+f.Duration > runLen {
				return o, fmt.Errorf("%w: Faults: %s ends after the run's %s of load (Requests/Rate); start it earlier or send more requests",
					ErrInvalidOptions, f, runLen)
			}
		}
	}
	return o, nil
}
