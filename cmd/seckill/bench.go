package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/seckill-lab/seckill/bench"
	"github.com/seckill-lab/seckill/bench/fleet"
	"github.com/seckill-lab/seckill/internal/config"
	"github.com/seckill-lab/seckill/internal/netfault"
	"github.com/seckill-lab/seckill/internal/server"
	"github.com/seckill-lab/seckill/internal/stack"
	"github.com/seckill-lab/seckill/stock"
)

// runBench maps the flags of `seckill bench` to bench.Options and runs
// them: parse and validate the flags, then either measure the ceilings
// (--calibrate) or find the fleet, run the bench (or a round-trip sweep)
// and print its table. The logic lives in package bench.
func runBench(ctx context.Context, args []string) error {
	f := newBenchFlags()
	if err := parse(f.fs, args); err != nil {
		return err
	}
	if f.preset == "list" {
		printPresets()
		return nil
	}
	if err := f.Validate(); err != nil {
		return err
	}
	if f.calibrate {
		return benchCalibrate(ctx, f)
	}
	o := f.options(args)
	if err := f.findFleet(ctx, &o); err != nil {
		return err
	}
	if f.dbDSN != "" {
		o.DatabaseDSN = f.dbDSN
	}
	o.OutDir = f.out
	if o.OutDir == "" {
		var err error
		if o.OutDir, err = bench.NewOutDir("results", "", time.Now()); err != nil {
			return err
		}
	}
	if f.sweepRTT != "" {
		return runRTTSweep(ctx, o, f)
	}
	return runBenchOnce(ctx, o, f.out == "")
}

// benchFlags are the flags of `seckill bench` as given, and the lists
// Validate reads from them.
type benchFlags struct {
	fs *flag.FlagSet

	strategies                                          aliasFlag
	initial, requests, concurrency, qty, rate           int
	instances, warmup, users                            int
	repeat, calRequests                                 int
	seed, goods                                         int64
	reqTimeout, runTimeout                              time.Duration
	noEvents, compareQueue, calibrate                   bool
	knobs                                               *stock.Config
	mode, sweepRTT, sweepBatch, sweep, preset           string
	dir, target, instanceURLs, instancesDNS, adminToken string
	out, dbDSN, experiment                              string
	experimentDuration                                  time.Duration
	faults                                              faultFlags
	services                                            serviceFlags
	unprotected                                         string

	// Read by Validate.
	names   []string      // the strategies to run
	points  []int         // --sweep's client counts
	conc    int           // the clients of each run; 0 with --sweep
	modes   []string      // --mode, both modes for "both"
	batches []int         // --sweep-batch's batch sizes
	load    *bench.Preset // --preset's load; nil without
}

// newBenchFlags declares the flags of `seckill bench` with their defaults.
func newBenchFlags() *benchFlags {
	f := &benchFlags{fs: newFlagSet("bench")}
	fs := f.fs
	f.strategies = newAliasFlag(fs, "strategies", "strategy", "all", "all, correct (= not flawed by design), flawed, or a list")
	fs.IntVar(&f.initial, "stock", bench.DefaultStock, "initial stock of the goods")
	fs.IntVar(&f.requests, "requests", bench.DefaultRequests, "purchases per run")
	fs.IntVar(&f.concurrency, "concurrency", bench.DefaultConcurrency, "concurrent workers (closed model) or worker cap (with --rate)")
	fs.IntVar(&f.qty, "qty", bench.DefaultQty, "units per purchase")
	fs.IntVar(&f.rate, "rate", 0, "requests per second; 0 = closed model, --concurrency workers as fast as they go")
	f.knobs = stock.BindKnobFlags(fs)
	fs.IntVar(&f.instances, "instances", 0, "re-scale the local stack to N instances first, 1.."+strconv.Itoa(stack.MaxInstances)+" (default: as it is)")
	fs.BoolVar(&f.noEvents, "no-events", false, "do not collect the instances' lock events (no mutual-exclusion check; for speed comparisons)")
	fs.StringVar(&f.mode, "mode", bench.ModePurchase, "what a purchase's critical section does: purchase, lock, or both")
	fs.StringVar(&f.sweepRTT, "sweep-rtt", "", "run the bench at each of these round trips, e.g. 0,0.2,2 (ms) or loopback,zone")
	fs.StringVar(&f.sweepBatch, "sweep-batch", "", "with --sweep-rtt: run each round trip at these batch sizes, e.g. 1,8,32")
	fs.StringVar(&f.sweep, "sweep", "", "run each strategy at each of these client counts, e.g. 1,10,50,200")
	fs.BoolVar(&f.compareQueue, "compare-queue", false, "run each distributed lock with and without the local queue")
	fs.IntVar(&f.warmup, "warmup", bench.DefaultWarmup, "uncounted purchases on a separate goods before each strategy's first run")
	fs.IntVar(&f.users, "users", 0, "draw each request's user id from N users, so users repeat (0 = a new user per request)")
	fs.Var(&f.faults, "fault", "inject KIND:COMPONENT@START+DURATION into every run (repeatable)")
	fs.IntVar(&f.repeat, "repeat", 1, "rounds over all strategies, in orders shuffled from --seed")
	fs.Int64Var(&f.seed, "seed", 0, "seed of request and user ids (0 = from the clock; recorded in the report)")
	fs.Int64Var(&f.goods, "goods", bench.DefaultGoodsID, "goods id to sell")
	fs.StringVar(&f.dir, "dir", stack.DefaultDir, "run directory of the local stack (ignored with --target)")
	fs.StringVar(&f.target, "target", "", "URL of a fleet started elsewhere, or of a service that keeps the contract")
	fs.Var(&f.services, "service", "NAME=URL of a service that keeps the contract, run beside the strategies")
	fs.StringVar(&f.unprotected, "unprotected", "", "--service names that take no lock on purpose (oversold expected)")
	fs.StringVar(&f.instanceURLs, "instance-urls", "", "comma-separated base URLs of every instance of that fleet (admin API)")
	fs.StringVar(&f.instancesDNS, "instances-dns", "", "NAME:PORT of a headless Service whose A records are the fleet's instances")
	fs.StringVar(&f.adminToken, "admin-token", "", "admin token of that fleet (default $SECKILL_ADMIN_TOKEN)")
	fs.StringVar(&f.out, "out", "", "report directory (default: a new results/<timestamp>/)")
	fs.BoolVar(&f.calibrate, "calibrate", false, "only measure the ceilings of the load generator and the database")
	fs.StringVar(&f.preset, "preset", "", "a source article's load: "+strings.Join(presetNames(), ", ")+"; list shows them")
	fs.StringVar(&f.dbDSN, "database-dsn", "", "DSN of the fleet's database, for its ceiling (default: the local stack's)")
	fs.IntVar(&f.calRequests, "calibrate-requests", bench.DefaultCalibrateRequests, "requests of the calibration (<0: no short one before each bench)")
	fs.DurationVar(&f.reqTimeout, "timeout", bench.DefaultRequestTimeout, "per-request timeout")
	fs.DurationVar(&f.runTimeout, "run-timeout", bench.DefaultRunTimeout, "timeout of one run (one strategy, one repeat)")
	fs.StringVar(&f.experiment, "experiment", "", "name of a fault applied from outside during the run (a Chaos Mesh experiment)")
	fs.DurationVar(&f.experimentDuration, "experiment-duration", 0, "the --experiment's declared duration, for the report (0: a one-shot fault)")
	return f
}

// presetNames are the names --preset takes.
func presetNames() []string {
	names := make([]string, len(bench.Presets))
	for i, p := range bench.Presets {
		names[i] = p.Name
	}
	return names
}

// printPresets lists the loads --preset accepts (--preset list).
func printPresets() {
	for _, p := range bench.Presets {
		fmt.Printf("%-12s %d requests on a stock of %d, %d at a time: %s\n", p.Name, p.Requests, p.Stock, p.Concurrency, p.Source)
	}
}

// Validate checks the flags as given and reads the lists they name; an
// error is a usage error (exit 2) whose message says the fix. With
// --calibrate only the flags the calibration reads are checked.
func (f *benchFlags) Validate() error {
	fs := f.fs
	if fs.NArg() > 0 {
		return exitError{code: 2, msg: fmt.Sprintf("bench: unexpected argument %q", fs.Arg(0))}
	}
	// Explicit values the options would read as "default" are errors.
	if err := checkBounds(fs,
		bound{name: "stock", min: 1, omit: strconv.Itoa(bench.DefaultStock)},
		bound{name: "requests", min: 1, max: 10_000_000, omit: strconv.Itoa(bench.DefaultRequests)},
		bound{name: "concurrency", min: 1, max: 10_000, omit: strconv.Itoa(bench.DefaultConcurrency)},
		bound{name: "qty", min: 1, omit: strconv.Itoa(bench.DefaultQty)},
		bound{name: "rate", min: 0},
		bound{name: "instances", min: 1, max: stack.MaxInstances, omit: "the fleet as it is"},
		bound{name: "repeat", min: 1, max: 100, omit: "1"},
		bound{name: "goods", min: int64(1), omit: strconv.Itoa(bench.DefaultGoodsID)},
		bound{name: "work-delay", min: time.Duration(0), max: stock.MaxWorkDelay},
		bound{name: "lock-ttl", min: stock.MinLockTTL, max: stock.MaxLockTTL, omit: "the service default"},
		bound{name: "lock-wait", min: time.Millisecond, max: stock.MaxLockWait, omit: "the service default"},
		bound{name: "timeout", min: time.Millisecond, omit: bench.DefaultRequestTimeout.String()},
		bound{name: "run-timeout", min: time.Second, omit: bench.DefaultRunTimeout.String()},
		bound{name: "experiment-duration", min: time.Duration(0)},
	); err != nil {
		return err
	}
	if f.experimentDuration != 0 && f.experiment == "" {
		return exitError{code: 2, msg: "bench: --experiment-duration describes an --experiment: name it"}
	}
	if f.calibrate {
		if f.calRequests <= 0 {
			return exitError{code: 2, msg: "bench: --calibrate-requests must be > 0 with --calibrate"}
		}
		return nil
	}
	if err := f.validateLoad(); err != nil {
		return err
	}
	if f.target != "" && f.instancesDNS != "" && len(config.SplitList(f.instanceURLs)) > 0 {
		return exitError{code: 2, msg: "bench: give --instance-urls or --instances-dns, not both"}
	}
	return f.validateSweep()
}

// validateLoad reads the strategies, the clients and the preset.
func (f *benchFlags) validateLoad() error {
	list, err := f.strategies.get(f.fs)
	if err != nil {
		return err
	}
	if f.names, err = bench.ParseStrategies(list); err != nil {
		return exitError{code: 2, msg: err.Error()}
	}
	if f.sweep != "" {
		if f.points, err = bench.ParseSweep(f.sweep); err != nil {
			return exitError{code: 2, msg: "bench: " + err.Error()}
		}
	}
	if f.warmup < 0 {
		return exitError{code: 2, msg: "bench: --warmup must be >= 0 (0 = no warm-up)"}
	}
	// Only a --concurrency given on the command line conflicts with
	// --sweep; bench.Options rejects the pair with the fix.
	if setFlags(f.fs)["concurrency"] {
		f.conc = f.concurrency
	}
	if f.conc != 0 && len(f.points) > 0 {
		return exitError{code: 2, msg: "bench: --sweep sets the clients of each point; drop --concurrency (or drop --sweep)"}
	}
	if f.compareQueue && f.knobs.NoLocalQueue {
		return exitError{code: 2, msg: "bench: --compare-queue runs each distributed lock with and without the local queue; drop --no-local-queue"}
	}
	if f.conc == 0 && len(f.points) == 0 {
		f.conc = f.concurrency
	}
	if f.preset != "" {
		p, err := bench.LookupPreset(f.preset)
		if err != nil {
			return exitError{code: 2, msg: "bench: --preset: " + err.Error()}
		}
		f.load = &p
	}
	return nil
}

// validateSweep reads --mode and --sweep-batch, which need --sweep-rtt.
func (f *benchFlags) validateSweep() error {
	f.modes = []string{f.mode}
	if f.mode == "both" {
		if f.sweepRTT == "" {
			return exitError{code: 2, msg: "bench: --mode both compares the two modes in a sweep: add --sweep-rtt (one round trip will do, e.g. --sweep-rtt loopback)"}
		}
		f.modes = bench.Modes()
	} else if !slices.Contains(bench.Modes(), f.mode) {
		return exitError{code: 2, msg: fmt.Sprintf("bench: --mode %q: want purchase, lock or both (with --sweep-rtt)", f.mode)}
	}
	if f.sweepBatch == "" {
		return nil
	}
	if f.sweepRTT == "" {
		return exitError{code: 2, msg: "bench: --sweep-batch runs within a sweep: add --sweep-rtt (one round trip will do, e.g. --sweep-rtt cross-zone)"}
	}
	for _, s := range strings.Split(f.sweepBatch, ",") {
		b, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || b < 1 || b > bench.MaxBatch {
			return exitError{code: 2, msg: fmt.Sprintf("bench: --sweep-batch %q: want batch sizes from 1 (off) to %d, e.g. 1,8,32", f.sweepBatch, bench.MaxBatch)}
		}
		f.batches = append(f.batches, b)
	}
	return nil
}

// benchCalibrate measures the load generator's ceiling and, with a local
// stack or --database-dsn, the database's (--calibrate).
func benchCalibrate(ctx context.Context, f *benchFlags) error {
	c, err := bench.Calibrate(ctx, f.calRequests, f.concurrency, f.rate)
	if err != nil {
		return err
	}
	fmt.Printf("generator ceiling: %.0f req/s (%d requests, concurrency %d, %.2fs, p50 %.2fms, p99 %.2fms)\n",
		c.CeilingRPS, c.Requests, c.Concurrency, c.DurationSecs, c.P50MS, c.P99MS)
	dsn := f.dbDSN
	if dsn == "" && f.target == "" {
		if st, err := stack.Load(f.dir); err == nil {
			dsn = st.MySQLDSN()
		}
	}
	if dsn == "" {
		fmt.Println("database ceiling: not measured (no local stack in " + f.dir + "; pass --database-dsn)")
		return nil
	}
	dc, err := bench.CalibrateDatabase(ctx, dsn, f.calRequests, f.concurrency)
	if err != nil {
		return err
	}
	fmt.Printf("database ceiling: %.0f purchase transactions/s (%d transactions, concurrency %d, %.2fs, p50 %.2fms, p99 %.2fms)\n",
		dc.TPS, dc.Transactions, dc.Concurrency, dc.DurationSecs, dc.P50MS, dc.P99MS)
	return nil
}

// options maps the validated flags to bench.Options, without the fleet
// and the report directory; args are the command line's, for the report.
func (f *benchFlags) options(args []string) bench.Options {
	o := bench.Options{
		Strategies: f.names, Stock: f.initial, Requests: f.requests, Concurrency: f.conc, Qty: f.qty, Sweep: f.points,
		CompareQueue: f.compareQueue, Warmup: f.warmup,
		Rate: f.rate, Repeat: f.repeat, Seed: f.seed, GoodsID: f.goods, Instances: f.instances,
		Config:   *f.knobs,
		NoEvents: f.noEvents, Faults: f.faults, Users: f.users, Experiment: f.experiment, ExperimentDuration: f.experimentDuration,
		RequestTimeout: f.reqTimeout, RunTimeout: f.runTimeout, CalibrateRequests: f.calRequests,
		Progress: os.Stderr, CommandLine: append([]string{"seckill", "bench"}, args...),
	}
	if p := f.load; p != nil {
		// The preset fills the load; a flag given explicitly wins.
		set := setFlags(f.fs)
		if !set["requests"] {
			o.Requests = p.Requests
		}
		if !set["stock"] {
			o.Stock = p.Stock
		}
		if !set["concurrency"] && len(f.points) == 0 {
			o.Concurrency = p.Concurrency
		}
	}
	if o.CalibrateRequests == 0 {
		o.CalibrateRequests = -1
	}
	if o.Warmup == 0 {
		o.Warmup = -1 // bench.Options: 0 is the default, <0 none
	}
	o.Mode = f.modes[0]
	return o
}

// findFleet sets o's fleet: the one at --target, or the local stack in
// --dir with its faulter, CPU sampler, scaler and database.
func (f *benchFlags) findFleet(ctx context.Context, o *bench.Options) error {
	if f.target != "" {
		tok := f.adminToken
		if tok == "" {
			tok = os.Getenv(config.EnvAdminToken)
		}
		o.Fleet = fleet.Fleet{Target: f.target, Instances: config.SplitList(f.instanceURLs), AdminToken: tok, Cluster: fleet.ClusterFromEnv(ctx)}
		server.DescribeDurability(&o.Fleet)
		if f.instancesDNS != "" {
			var err error
			if o.Fleet.Instances, err = fleet.ResolveInstances(ctx, net.DefaultResolver, f.instancesDNS); err != nil {
				return err
			}
		}
		if len(o.Fleet.Instances) == 0 {
			return f.contractOnly(o, tok)
		}
		return f.addServices(o, tok)
	}
	st, err := stack.Load(f.dir)
	if errors.Is(err, stack.ErrNotRunning) {
		return fmt.Errorf("no stack in %s: run 'make up' (or seckill up) first, or pass --target", f.dir)
	}
	if err != nil {
		return fmt.Errorf("load the stack in %s: %w", f.dir, err)
	}
	o.Fleet = f.stackFleet(st)
	if err := f.addServices(o, o.Fleet.AdminToken); err != nil {
		return err
	}
	o.DatabaseDSN = st.MySQLDSN()
	o.Faulter = stack.Faulter{Dir: st.Dir}
	o.CPU = st
	stackDir := st.Dir
	o.Scaler = bench.ScalerFunc(func(ctx context.Context, n int) (fleet.Fleet, error) {
		st, err := stack.Rescale(ctx, stackDir, n, os.Stderr)
		if err != nil {
			return fleet.Fleet{}, err
		}
		return f.stackFleet(st), nil
	})
	return nil
}

// contractOnly makes o a bench of the service at --target alone, through
// the contract: no lab fleet, no strategies (its name is "service", or
// the --service naming the same URL).
func (f *benchFlags) contractOnly(o *bench.Options, tok string) error {
	if setFlags(f.fs)["strategies"] || setFlags(f.fs)["strategy"] {
		return exitError{code: 2, msg: "bench: --strategies switch the lab's instances through their admin API: give --instance-urls for a fleet of the lab's, or drop --strategies to load --target through the contract alone"}
	}
	o.Strategies, o.Fleet = nil, fleet.Fleet{}
	if !slices.ContainsFunc(f.services, func(s bench.Service) bool { return s.URL == f.target }) {
		f.services = append(serviceFlags{{Name: "service", URL: f.target}}, f.services...)
	}
	return f.addServices(o, tok)
}

// addServices adds the --service list to o, each with tok as its bearer
// token and --unprotected's mark.
func (f *benchFlags) addServices(o *bench.Options, tok string) error {
	unprotected := config.SplitList(f.unprotected)
	for _, s := range f.services {
		s.Token = tok
		s.Unprotected = slices.Contains(unprotected, s.Name)
		o.Services = append(o.Services, s)
	}
	for _, n := range unprotected {
		if !slices.ContainsFunc(o.Services, func(s bench.Service) bool { return s.Name == n }) {
			return exitError{code: 2, msg: fmt.Sprintf("bench: --unprotected %s: no --service of that name", n)}
		}
	}
	return nil
}

// stackFleet describes a local stack as a bench fleet, with --admin-token's
// token when given.
func (f *benchFlags) stackFleet(st *stack.State) fleet.Fleet {
	fl := st.Fleet()
	if f.adminToken != "" {
		fl.AdminToken = f.adminToken
	}
	return fl
}

// runBenchOnce runs the bench and prints its table; newDir says o.OutDir
// was made for this run, and is removed when nothing was written to it.
func runBenchOnce(ctx context.Context, o bench.Options, newDir bool) error {
	rep, err := bench.Run(ctx, o)
	if rep == nil && newDir {
		_ = os.Remove(o.OutDir) // the new directory, when nothing was written to it
	}
	if errors.Is(err, bench.ErrInvalidOptions) {
		return exitError{code: 2, msg: "bench: " + err.Error()}
	}
	if err != nil {
		return fmt.Errorf("bench: %w", err)
	}
	if err := bench.WriteTable(os.Stdout, rep); err != nil {
		return err
	}
	if len(rep.Skipped) > 0 {
		fmt.Fprintf(os.Stderr, "\nskipped %s\n", bench.SkippedLine(rep.Skipped))
	}
	fmt.Fprintf(os.Stderr, "\nwall time %.1fs; reports in %s (report.json, report.md, report.html, raw/)\n", rep.WallS, o.OutDir)
	if fs := rep.Failures(); len(fs) > 0 {
		return exitError{code: 1, msg: "bench failed:\n  " + strings.Join(fs, "\n  ")}
	}
	return nil
}

// runRTTSweep maps --sweep-rtt to bench.RunRTTSweep on the local stack,
// and puts the stack's round trip back as it was.
func runRTTSweep(ctx context.Context, o bench.Options, f *benchFlags) error {
	points, err := bench.ParseRTTSweep(f.sweepRTT, netfault.ParseRTT)
	if err != nil {
		return exitError{code: 2, msg: "bench: " + err.Error()}
	}
	points = bench.CrossBatches(bench.CrossModes(points, f.modes), f.batches)
	if len(points) > 4*bench.MaxSweepPoints {
		return exitError{code: 2, msg: fmt.Sprintf("bench: %d conditions (round trips x modes x batch sizes): at most %d", len(points), 4*bench.MaxSweepPoints)}
	}
	var set bench.RTTSetter
	if f.target == "" {
		dir := f.dir
		st, err := stack.Load(dir)
		if err != nil {
			return fmt.Errorf("load the stack in %s: %w", dir, err)
		}
		if !st.Proxy {
			return exitError{code: 2, msg: "bench: --sweep-rtt changes the round trip on the proxy's links, and the stack in " + dir + " runs without the proxy: seckill down, then seckill up --rtt loopback (add --topology ha to put the members' links under it too)"}
		}
		before := st.RTT
		defer func() {
			profile, d := "", time.Duration(0)
			if before != nil {
				profile, d = before.Profile, time.Duration(before.RequestedMS*float64(time.Millisecond))
			}
			if err := stack.SetRTT(context.WithoutCancel(ctx), st, profile, d); err != nil {
				fmt.Fprintf(os.Stderr, "warning: putting the round trip back: %v\n", err)
			}
		}()
		set = rttSetter{st: st, token: f.adminToken}
	}
	sw, err := bench.RunRTTSweep(ctx, o, points, set)
	if errors.Is(err, bench.ErrInvalidOptions) {
		return exitError{code: 2, msg: "bench: " + err.Error()}
	}
	if err != nil {
		return fmt.Errorf("bench: %w", err)
	}
	os.Stdout.Write(bench.RTTSweepMarkdown(sw))
	fmt.Fprintf(os.Stderr, "\nwall time %.1fs; the sweep in %s (rtt-sweep.json, rtt-sweep.md, rtt-sweep.html), each point's reports in rtt-N/\n", sw.WallS, o.OutDir)
	return nil
}

// rttSetter is the local stack as a bench.RTTSetter.
type rttSetter struct {
	st    *stack.State
	token string
}

func (r rttSetter) SetRTT(ctx context.Context, profile string, d time.Duration) (fleet.Fleet, error) {
	if err := stack.SetRTT(ctx, r.st, profile, d); err != nil {
		return fleet.Fleet{}, err
	}
	f := r.st.Fleet()
	if r.token != "" {
		f.AdminToken = r.token
	}
	return f, nil
}
