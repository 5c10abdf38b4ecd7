package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/seckill-lab/seckill/bench"
	"github.com/seckill-lab/seckill/internal/config"
	"github.com/seckill-lab/seckill/internal/stack"
)

// runBench maps the flags of `seckill bench` to bench.Options; the logic
// lives in package bench.
func runBench(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("seckill bench", flag.ContinueOnError)
	strategies := fs.String("strategies", "all", "strategies to run: all, or a comma-separated list of "+strings.Join(bench.Strategies(), ", "))
	stock := fs.Int("stock", bench.DefaultStock, "initial stock of the goods")
	requests := fs.Int("requests", bench.DefaultRequests, "purchases per run")
	concurrency := fs.Int("concurrency", bench.DefaultConcurrency, "concurrent workers (closed model) or worker cap (with --rate)")
	qty := fs.Int("qty", bench.DefaultQty, "units per purchase")
	rate := fs.Int("rate", 0, "requests per second; 0 = closed model, --concurrency workers as fast as they go")
	instances := fs.Int("instances", 0, "re-scale the local stack to this many instances first (0 = as it is)")
	workDelay := fs.Duration("work-delay", 0, "simulated work inside the critical section")
	lockTTL := fs.Duration("lock-ttl", 0, "lock TTL (0 = the service default)")
	lockWait := fs.Duration("lock-wait", 0, "lock wait budget (0 = the service default)")
	fencing := fs.Bool("fencing", false, "have the service check fencing tokens")
	noWatchdog := fs.Bool("no-watchdog", false, "have the locks that renew ("+strings.Join(bench.Renewing(), ", ")+") not renew: with --work-delay > --lock-ttl, holders go stale")
	noEvents := fs.Bool("no-events", false, "do not collect the instances' lock events (no mutual-exclusion check; for speed comparisons)")
	noQueue := fs.Bool("no-local-queue", false, "every waiter contends at the lock server (no in-process queue in front of it)")
	batch := fs.Int("batch", 0, fmt.Sprintf("a lock holder sells up to B queued purchases in one critical section and one transaction (0 = off, at most %d); applies to %s, the other strategies run unbatched", bench.MaxBatch, strings.Join(bench.Batching(), ", ")))
	noLeaseCheck := fs.Bool("no-lease-check", false, "let a holder whose lease was reported lost commit anyway")
	var faults faultFlags
	fs.Var(&faults, "fault", "inject KIND:COMPONENT@START+DURATION into every run, e.g. pause:inst-2@5s+5s or kill:redis-1@5s+5s (repeatable; needs --rate and the local stack)")
	repeat := fs.Int("repeat", 1, "runs per strategy (the table shows median and min–max)")
	seed := fs.Int64("seed", 0, "seed of request and user ids (0 = from the clock; recorded in the report)")
	goods := fs.Int64("goods", bench.DefaultGoodsID, "goods id to sell")
	dir := fs.String("dir", stack.DefaultDir, "run directory of the local stack (ignored with --target)")
	target := fs.String("target", "", "URL of a fleet's load balancer started elsewhere (e.g. docker compose); needs --instance-urls")
	instanceURLs := fs.String("instance-urls", "", "comma-separated base URLs of every instance of that fleet (admin API)")
	adminToken := fs.String("admin-token", "", "admin token of that fleet (default $SECKILL_ADMIN_TOKEN)")
	out := fs.String("out", "", "report directory (default results/<timestamp>/)")
	calibrate := fs.Bool("calibrate", false, "only measure the load generator's ceiling against an in-process null handler")
	calRequests := fs.Int("calibrate-requests", bench.DefaultCalibrateRequests, "requests of the calibration (also run, short, before every bench; <0 skips it there)")
	reqTimeout := fs.Duration("timeout", bench.DefaultRequestTimeout, "per-request timeout")
	runTimeout := fs.Duration("run-timeout", bench.DefaultRunTimeout, "timeout of one run (one strategy, one repeat)")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return exitError{code: 2, msg: err.Error()}
	}
	if fs.NArg() > 0 {
		return exitError{code: 2, msg: fmt.Sprintf("bench: unexpected argument %q", fs.Arg(0))}
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
		return nil
	}

	names, err := bench.ParseStrategies(*strategies)
	if err != nil {
		return exitError{code: 2, msg: err.Error()}
	}
	o := bench.Options{
		Strategies: names, Stock: *stock, Requests: *requests, Concurrency: *concurrency, Qty: *qty,
		Rate: *rate, Repeat: *repeat, Seed: *seed, GoodsID: *goods, Instances: *instances,
		WorkDelay: *workDelay, LockTTL: *lockTTL, LockWait: *lockWait, Fencing: *fencing, NoWatchdog: *noWatchdog,
		NoLocalQueue: *noQueue, NoEvents: *noEvents, NoLeaseCheck: *noLeaseCheck, Batch: *batch, Faults: faults,
		RequestTimeout: *reqTimeout, RunTimeout: *runTimeout, CalibrateRequests: *calRequests,
		Progress: os.Stderr, CommandLine: append([]string{"seckill", "bench"}, args...),
	}
	if o.CalibrateRequests == 0 {
		o.CalibrateRequests = -1
	}
	if *target != "" {
		tok := *adminToken
		if tok == "" {
			tok = os.Getenv(config.EnvAdminToken)
		}
		o.Fleet = bench.Fleet{Target: *target, Instances: config.SplitList(*instanceURLs), AdminToken: tok}
		if len(o.Fleet.Instances) == 0 {
			return exitError{code: 2, msg: "bench: --target needs --instance-urls (the admin API must reach every instance)"}
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
		o.Faulter = stackFaulter{dir: st.Dir}
		if *adminToken != "" {
			o.Fleet.AdminToken = *adminToken
		}
		stackDir := st.Dir
		o.Scaler = bench.ScalerFunc(func(ctx context.Context, n int) (bench.Fleet, error) {
			st, err := stack.Scale(ctx, stackDir, n)
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
	if *out == "" {
		*out = filepath.Join("results", time.Now().Format("20060102-150405"))
	}
	o.OutDir = *out

	rep, err := bench.Run(ctx, o)
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
	return bench.Fleet{Target: st.NginxURL(), Instances: st.InstanceURLs(), AdminToken: st.AdminToken}
}
