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

// Options configure Run. Zero values take the defaults above where noted.
type Options struct {
	Strategies  []string // names from Strategies; empty = all
	Stock       int      // initial stock of the goods
	Requests    int      // purchases per run
	Concurrency int      // closed model: this many workers; open model: worker cap
	Qty         int      // units per purchase
	Rate        int      // requests per second; 0 = closed model (as fast as the workers go)
	Repeat      int      // runs per strategy
	Seed        int64    // seeds request ids and user ids; 0 = derived from the clock (recorded)
	GoodsID     int64    // goods to sell; 0 = DefaultGoodsID

	Instances int           // >0: re-scale to this many instances first (needs Scaler)
	WorkDelay time.Duration // simulated work inside the critical section
	LockTTL   time.Duration // lock TTL (0 = service default)
	LockWait  time.Duration // lock wait budget (0 = service default)
	Fencing   bool          // ask the service to check fencing tokens
	// NoWatchdog asks the service not to renew held locks (redis, redlock,
	// mysql-unique), so work longer than LockTTL makes stale holders.
	NoWatchdog bool

	Fleet  Fleet
	Scaler Scaler // nil: the fleet cannot be re-scaled

	OutDir            string        // where the reports go ("" = write nothing)
	RequestTimeout    time.Duration // per request; 0 = DefaultRequestTimeout
	RunTimeout        time.Duration // per run (one strategy, one repeat); 0 = DefaultRunTimeout
	CalibrateRequests int           // requests of the automatic calibration; 0 = default, <0 = skip
	Progress          io.Writer     // live progress line (stderr); nil = none
	CommandLine       []string      // recorded in the report
}

// ErrInvalidOptions wraps every flag validation error.
var ErrInvalidOptions = errors.New("invalid options")

// withDefaults returns o with defaults filled in, or an error naming the
// first invalid field.
func (o Options) withDefaults() (Options, error) {
	if len(o.Strategies) == 0 {
		o.Strategies = append([]string(nil), Strategies...)
	}
	for _, s := range o.Strategies {
		if _, err := ParseStrategies(s); err != nil || s == "all" {
			return o, fmt.Errorf("%w: unknown strategy %q; valid: %s", ErrInvalidOptions, s, strings.Join(Strategies, ", "))
		}
		if o.NoWatchdog && !slices.Contains(Renewing, s) {
			return o, fmt.Errorf("%w: --no-watchdog applies to %s only, not %s: pick those with --strategies",
				ErrInvalidOptions, strings.Join(Renewing, ", "), s)
		}
	}
	if o.GoodsID == 0 {
		o.GoodsID = DefaultGoodsID
	}
	if o.Qty == 0 {
		o.Qty = DefaultQty
	}
	if o.Repeat == 0 {
		o.Repeat = 1
	}
	if o.RequestTimeout == 0 {
		o.RequestTimeout = DefaultRequestTimeout
	}
	if o.RunTimeout == 0 {
		o.RunTimeout = DefaultRunTimeout
	}
	if o.CalibrateRequests == 0 {
		o.CalibrateRequests = DefaultCalibrateRequests
	}
	if o.Seed == 0 {
		o.Seed = time.Now().UnixNano()
	}
	checks := []struct {
		ok  bool
		msg string
	}{
		{o.Stock > 0, "--stock must be > 0"},
		{o.Requests > 0, "--requests must be > 0"},
		{o.Requests <= 10_000_000, "--requests must be <= 10000000"},
		{o.Concurrency > 0, "--concurrency must be > 0"},
		{o.Concurrency <= 10_000, "--concurrency must be <= 10000"},
		{o.Qty > 0, "--qty must be > 0"},
		{o.Rate >= 0, "--rate must be >= 0 (0 = closed model)"},
		{o.Repeat > 0 && o.Repeat <= 100, "--repeat must be between 1 and 100"},
		{o.Instances >= 0 && o.Instances <= 64, "--instances must be between 1 and 64"},
		{o.WorkDelay >= 0, "--work-delay must be >= 0"},
		{o.LockTTL >= 0, "--lock-ttl must be >= 0"},
		{o.LockWait >= 0, "--lock-wait must be >= 0"},
		{o.RequestTimeout > 0, "request timeout must be > 0"},
		{o.RunTimeout > 0, "run timeout must be > 0"},
	}
	for _, c := range checks {
		if !c.ok {
			return o, fmt.Errorf("%w: %s", ErrInvalidOptions, c.msg)
		}
	}
	return o, nil
}
