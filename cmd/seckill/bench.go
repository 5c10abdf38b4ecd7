package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/seckill-lab/seckill/bench"
	"github.com/seckill-lab/seckill/internal/config"
	"github.com/seckill-lab/seckill/internal/netfault"
	"github.com/seckill-lab/seckill/internal/stack"
	"github.com/seckill-lab/seckill/stock"
)

// runBench maps the flags of `seckill bench` to bench.Options; the logic
// lives in package bench.
func runBench(ctx context.Context, args []string) error {
	fs := newFlagSet("bench")
	strategies := newAliasFlag(fs, "strategies", "strategy", "all", "strategies to run: all, correct (the ones not deliberately flawed), flawed, or a comma-separated list of "+strings.Join(bench.Strategies(), ", "))
	initial := fs.Int("stock", bench.DefaultStock, "initial stock of the goods")
	requests := fs.Int("requests", bench.DefaultRequests, "purchases per run")
	concurrency := fs.Int("concurrency", bench.DefaultConcurrency, "concurrent workers (closed model) or worker cap (with --rate)")
	qty := fs.Int("qty", bench.DefaultQty, "units per purchase")
	rate := fs.Int("rate", 0, "requests per second; 0 = closed model, --concurrency workers as fast as they go")
	instances := fs.Int("instances", 0, "re-scale the local stack to this many instances first, 1.."+strconv.Itoa(stack.MaxInstances)+"; it stays so (default: as it is)")
	workDelay := fs.Duration("work-delay", 0, "simulated work inside the critical section, up to "+stock.MaxWorkDelay.String())
	lockTTL := fs.Duration("lock-ttl", 0, "lock TTL, "+stock.MinLockTTL.String()+".."+stock.MaxLockTTL.String()+" (default: the service's, "+stock.DefaultLockTTL.String()+")")
	lockWait := fs.Duration("lock-wait", 0, "lock wait budget, up to "+stock.MaxLockWait.String()+" (default: the service's, "+stock.DefaultLockWait.String()+")")
	fencing := fs.Bool("fencing", false, "have the service check fencing tokens")
	noWatchdog := fs.Bool("no-watchdog", false, "have the locks that renew ("+strings.Join(bench.Renewing(), ", ")+") not renew: with --work-delay > --lock-ttl, holders go stale")
	noEvents := fs.Bool("no-events", false, "do not collect the instances' lock events (no mutual-exclusion check; for speed comparisons)")
	noQueue := fs.Bool("no-local-queue", false, "every waiter contends at the lock server (no in-process queue in front of it)")
	mode := fs.String("mode", bench.ModePurchase, "what a purchase's critical section does: purchase (the database transaction: ranks whole purchases) or lock (a Redis counter on a direct link: ranks the locks alone, as the seeds do; the locks and none run); both (with --sweep-rtt) runs every round trip in each mode")
	sweepRTT := fs.String("sweep-rtt", "", "run the bench at each of these network round trips on the stack's links, e.g. 0,0.2,2 (ms) or loopback,zone,cross-zone (2 to 10; needs a stack with the proxy: seckill up --rtt loopback); writes rtt-sweep.html with throughput and p50 against the measured round trip, each point's report in rtt-N/, and puts the stack's round trip back after")
	sweepBatch := fs.String("sweep-batch", "", "with --sweep-rtt: run each round trip at each of these batch sizes, e.g. 1,8,32 (1: off; the strategies that batch only); the sweep charts ok/s, p50 and p99 against the batch size")
	sweep := fs.String("sweep", "", "run each strategy at each of these client counts, e.g. 1,10,50,200 (at most 10; replaces --concurrency); the report adds throughput and p99 by clients and the locks' scaling ratio")
	compareQueue := fs.Bool("compare-queue", false, "run each distributed lock ("+strings.Join(bench.Queued(), ", ")+") with and without the local queue, the second as \"NAME (no queue)\"")
	warmup := fs.Int("warmup", bench.DefaultWarmup, "purchases fired, uncounted, on a separate goods before each strategy's first run; 0 = no warm-up")
	releasePause := fs.Duration("release-pause", 0, "pause between the owner check and the DEL of "+strings.Join(bench.Pausing(), ", ")+" (longer than the rest of --lock-ttl: it deletes the next holder's lock)")
	batch := fs.Int("batch", 0, fmt.Sprintf("a lock holder sells up to B queued purchases in one critical section and one transaction (0 = off, at most %d); applies to %s, the other strategies run unbatched", bench.MaxBatch, strings.Join(bench.Batching(), ", ")))
	perUserLimit := fs.Int("per-user-limit", 0, fmt.Sprintf("at most N orders per user and goods, for every strategy (\"one order per user\" is 1; at most %d): a unique key in MySQL, the check then insert of the flawed strategies, the Lua check of redis-atomic; the run checks %s (0 = no limit)", stock.MaxPerUserLimit, bench.InvPerUserLimit))
	users := fs.Int("users", 0, "draw each request's user id from N users, so users repeat (0 = a new user per request)")
	noLeaseCheck := fs.Bool("no-lease-check", false, "let a holder whose lease was reported lost commit anyway")
	var faults faultFlags
	fs.Var(&faults, "fault", "inject KIND:COMPONENT@START+DURATION into every run, e.g. pause:inst-2@5s+5s or kill:redis-1@5s+5s (repeatable; needs --rate and the local stack)")
	repeat := fs.Int("repeat", 1, "rounds over all strategies, each in an order shuffled from --seed (the table shows median and min–max)")
	seed := fs.Int64("seed", 0, "seed of request and user ids (0 = from the clock; recorded in the report)")
	goods := fs.Int64("goods", bench.DefaultGoodsID, "goods id to sell")
	dir := fs.String("dir", stack.DefaultDir, "run directory of the local stack (ignored with --target)")
	target := fs.String("target", "", "URL of a fleet's load balancer started elsewhere (e.g. docker compose); needs --instance-urls")
	instanceURLs := fs.String("instance-urls", "", "comma-separated base URLs of every instance of that fleet (admin API)")
	instancesDNS := fs.String("instances-dns", "", "NAME:PORT of a headless Service whose A records are every instance of that fleet (on Kubernetes; instead of --instance-urls)")
	adminToken := fs.String("admin-token", "", "admin token of that fleet (default $SECKILL_ADMIN_TOKEN)")
	out := fs.String("out", "", "report directory (default: a new results/<timestamp>/)")
	calibrate := fs.Bool("calibrate", false, "only measure the ceilings: the load generator's (an in-process null handler) and the database's (the purchase transaction straight at MariaDB, with the local stack or --database-dsn)")
	preset := fs.String("preset", "", "a seed's load: seed003 (5000 requests on a stock of 5000, 50 at a time), seed002 (500 on 300, the default); --preset list shows them; flags given explicitly win")
	dbDSN := fs.String("database-dsn", "", "DSN of the fleet's database for its ceiling (default: the local stack's; with --target, none unless given)")
	calRequests := fs.Int("calibrate-requests", bench.DefaultCalibrateRequests, "requests of the calibration (also run, short, before every bench; <0 skips it there)")
	reqTimeout := fs.Duration("timeout", bench.DefaultRequestTimeout, "per-request timeout")
	runTimeout := fs.Duration("run-timeout", bench.DefaultRunTimeout, "timeout of one run (one strategy, one repeat)")
	if err := parse(fs, args); err != nil {
		return err
	}
	if *preset == "list" {
		for _, p := range bench.Presets {
			fmt.Printf("%-8s %d requests on a stock of %d, %d at a time: %s\n", p.Name, p.Requests, p.Stock, p.Concurrency, p.Seed)
		}
		return nil
	}
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
	); err != nil {
		return err
	}

	if *calibrate {
		if *calRequests <= 0 {
			return exitError{code: 2, msg: "bench: --calibrate-requests must be > 0 with --calibrate"}
		}
		c, err := bench.Calibrate(ctx, *calRequests, *concurrency, *rate)
		if err != nil {
			return err
		}
		fmt.Printf("generator ceiling: %.0f req/s (%d requests, concurrency %d, %.2fs, p50 %.2fms, p99 %.2fms)\n",
			c.CeilingRPS, c.Requests, c.Concurrency, c.DurationSecs, c.P50MS, c.P99MS)
		dsn := *dbDSN
		if dsn == "" && *target == "" {
			if st, err := stack.Load(*dir); err == nil {
				dsn = st.MySQLDSN()
			}
		}
		if dsn == "" {
			fmt.Println("database ceiling: not measured (no local stack in " + *dir + "; pass --database-dsn)")
			return nil
		}
		dc, err := bench.CalibrateDatabase(ctx, dsn, *calRequests, *concurrency)
		if err != nil {
			return err
		}
		fmt.Printf("database ceiling: %.0f purchase transactions/s (%d transactions, concurrency %d, %.2fs, p50 %.2fms, p99 %.2fms)\n",
			dc.TPS, dc.Transactions, dc.Concurrency, dc.DurationSecs, dc.P50MS, dc.P99MS)
		return nil
	}

	list, err := strategies.get(fs)
	if err != nil {
		return err
	}
	names, err := bench.ParseStrategies(list)
	if err != nil {
		return exitError{code: 2, msg: err.Error()}
	}
	var points []int
	if *sweep != "" {
		if points, err = bench.ParseSweep(*sweep); err != nil {
			return exitError{code: 2, msg: "bench: " + err.Error()}
		}
	}
	if *warmup < 0 {
		return exitError{code: 2, msg: "bench: --warmup must be >= 0 (0 = no warm-up)"}
	}
	// Only a --concurrency given on the command line conflicts with
	// --sweep; bench.Options rejects the pair with the fix.
	conc := 0
	if setFlags(fs)["concurrency"] {
		conc = *concurrency
	}
	if conc != 0 && len(points) > 0 {
		return exitError{code: 2, msg: "bench: --sweep sets the clients of each point; drop --concurrency (or drop --sweep)"}
	}
	if *compareQueue && *noQueue {
		return exitError{code: 2, msg: "bench: --compare-queue runs each distributed lock with and without the local queue; drop --no-local-queue"}
	}
	if conc == 0 && len(points) == 0 {
		conc = *concurrency
	}
	o := bench.Options{
		Strategies: names, Stock: *initial, Requests: *requests, Concurrency: conc, Qty: *qty, Sweep: points,
		CompareQueue: *compareQueue, Warmup: *warmup,
		Rate: *rate, Repeat: *repeat, Seed: *seed, GoodsID: *goods, Instances: *instances,
		Config: stock.Config{WorkDelay: *workDelay, LockTTL: *lockTTL, LockWait: *lockWait, Fencing: *fencing, NoWatchdog: *noWatchdog,
			NoLocalQueue: *noQueue, NoLeaseCheck: *noLeaseCheck, ReleasePause: *releasePause, Batch: *batch, PerUserLimit: *perUserLimit},
		NoEvents: *noEvents, Faults: faults, Users: *users,
		RequestTimeout: *reqTimeout, RunTimeout: *runTimeout, CalibrateRequests: *calRequests,
		Progress: os.Stderr, CommandLine: append([]string{"seckill", "bench"}, args...),
	}
	if *preset != "" {
		p, err := bench.LookupPreset(*preset)
		if err != nil {
			return exitError{code: 2, msg: "bench: --preset: " + err.Error()}
		}
		// The preset fills the load; a flag given explicitly wins.
		set := setFlags(fs)
		if !set["requests"] {
			o.Requests = p.Requests
		}
		if !set["stock"] {
			o.Stock = p.Stock
		}
		if !set["concurrency"] && len(points) == 0 {
			o.Concurrency = p.Concurrency
		}
	}
	if o.CalibrateRequests == 0 {
		o.CalibrateRequests = -1
	}
	if o.Warmup == 0 {
		o.Warmup = -1 // bench.Options: 0 is the default, <0 none
	}
	if *target != "" {
		tok := *adminToken
		if tok == "" {
			tok = os.Getenv(config.EnvAdminToken)
		}
		o.Fleet = bench.Fleet{Target: *target, Instances: config.SplitList(*instanceURLs), AdminToken: tok, Cluster: bench.ClusterFromEnv(ctx)}
		if *instancesDNS != "" {
			if len(o.Fleet.Instances) > 0 {
				return exitError{code: 2, msg: "bench: give --instance-urls or --instances-dns, not both"}
			}
			if o.Fleet.Instances, err = bench.ResolveInstances(ctx, net.DefaultResolver, *instancesDNS); err != nil {
				return err
			}
		}
		if len(o.Fleet.Instances) == 0 {
			return exitError{code: 2, msg: "bench: --target needs --instance-urls or --instances-dns (the admin API must reach every instance)"}
		}
	} else {
		st, err := stack.Load(*dir)
		if errors.Is(err, stack.ErrNotRunning) {
			return fmt.Errorf("no stack in %s: run 'make up' (or seckill up) first, or pass --target", *dir)
		}
		if err != nil {
			return fmt.Errorf("load the stack in %s: %w", *dir, err)
		}
		o.Fleet = fleetOf(st)
		o.DatabaseDSN = st.MySQLDSN()
		o.Faulter = stack.Faulter{Dir: st.Dir}
		o.CPU = st
		if *adminToken != "" {
			o.Fleet.AdminToken = *adminToken
		}
		stackDir := st.Dir
		o.Scaler = bench.ScalerFunc(func(ctx context.Context, n int) (bench.Fleet, error) {
			st, err := stack.Rescale(ctx, stackDir, n, os.Stderr)
			if err != nil {
				return bench.Fleet{}, err
			}
			f := fleetOf(st)
			if *adminToken != "" {
				f.AdminToken = *adminToken
			}
			return f, nil
		})
	}
	if *dbDSN != "" {
		o.DatabaseDSN = *dbDSN
	}
	o.OutDir = *out
	if o.OutDir == "" {
		if o.OutDir, err = bench.NewOutDir("results", "", time.Now()); err != nil {
			return err
		}
	}

	modes := []string{*mode}
	if *mode == "both" {
		if *sweepRTT == "" {
			return exitError{code: 2, msg: "bench: --mode both compares the two modes in a sweep: add --sweep-rtt (one round trip will do, e.g. --sweep-rtt loopback)"}
		}
		modes = bench.Modes()
	} else if !slices.Contains(bench.Modes(), *mode) {
		return exitError{code: 2, msg: fmt.Sprintf("bench: --mode %q: want purchase, lock or both (with --sweep-rtt)", *mode)}
	}
	o.Mode = modes[0]
	var batches []int
	if *sweepBatch != "" {
		if *sweepRTT == "" {
			return exitError{code: 2, msg: "bench: --sweep-batch runs within a sweep: add --sweep-rtt (one round trip will do, e.g. --sweep-rtt cross-zone)"}
		}
		for _, f := range strings.Split(*sweepBatch, ",") {
			b, err := strconv.Atoi(strings.TrimSpace(f))
			if err != nil || b < 1 || b > bench.MaxBatch {
				return exitError{code: 2, msg: fmt.Sprintf("bench: --sweep-batch %q: want batch sizes from 1 (off) to %d, e.g. 1,8,32", *sweepBatch, bench.MaxBatch)}
			}
			batches = append(batches, b)
		}
	}
	if *sweepRTT != "" {
		return runRTTSweep(ctx, o, *sweepRTT, modes, batches, *dir, *target != "", *adminToken)
	}
	rep, err := bench.Run(ctx, o)
	if rep == nil && *out == "" {
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
	fmt.Fprintf(os.Stderr, "\nwall time %.1fs; reports in %s (report.json, report.md, report.html, raw/)\n", rep.WallS, o.OutDir)
	if fs := rep.Failures(); len(fs) > 0 {
		return exitError{code: 1, msg: "bench failed:\n  " + strings.Join(fs, "\n  ")}
	}
	return nil
}

// fleetOf describes a local stack as a bench fleet.
func fleetOf(st *stack.State) bench.Fleet {
	return st.Fleet()
}

// runRTTSweep maps --sweep-rtt to bench.RunRTTSweep on the local stack,
// and puts the stack's round trip back as it was.
func runRTTSweep(ctx context.Context, o bench.Options, list string, modes []string, batches []int, dir string, remote bool, adminToken string) error {
	points, err := bench.ParseRTTSweep(list, netfault.ParseRTT)
	if err != nil {
		return exitError{code: 2, msg: "bench: " + err.Error()}
	}
	points = bench.CrossBatches(bench.CrossModes(points, modes), batches)
	if len(points) > 4*bench.MaxSweepPoints {
		return exitError{code: 2, msg: fmt.Sprintf("bench: %d conditions (round trips x modes x batch sizes): at most %d", len(points), 4*bench.MaxSweepPoints)}
	}
	var set bench.RTTSetter
	if !remote {
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
		set = rttSetter{st: st, token: adminToken}
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

func (r rttSetter) SetRTT(ctx context.Context, profile string, d time.Duration) (bench.Fleet, error) {
	if err := stack.SetRTT(ctx, r.st, profile, d); err != nil {
		return bench.Fleet{}, err
	}
	f := r.st.Fleet()
	if r.token != "" {
		f.AdminToken = r.token
	}
	return f, nil
}
