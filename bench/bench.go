package bench

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/seckill-lab/seckill/bench/adminclient"
	"github.com/seckill-lab/seckill/bench/fleet"
	"github.com/seckill-lab/seckill/stock"
)

// Latency is a latency summary in milliseconds.
type Latency struct {
	// Min is the fastest: the floor a run's round trips set, which a
	// moment of stall elsewhere on the machine (an fsync storm) does not
	// move, as it moves the percentiles.
	Min  float64 `json:"min"`
	Mean float64 `json:"mean"`
	P50  float64 `json:"p50"`
	P90  float64 `json:"p90"`
	P99  float64 `json:"p99"`
	Max  float64 `json:"max"`
}

// RunResult is the record of one strategy, one repeat.
type RunResult struct {
	Strategy string `json:"strategy"`
	// Variant sets the run apart from the strategy's usual setting:
	// VariantNoQueue (Options.CompareQueue) or "".
	Variant string `json:"variant,omitempty"`
	// Name is the run's id: the stem of its raw files and its anchor.
	Name string `json:"name,omitempty"`
	// Repeat is the round the run belongs to (1-based).
	Repeat          int  `json:"repeat"`
	ExpectedCorrect bool `json:"expected_correct"`
	// Warmup is the purchases fired, uncounted, on a separate goods just
	// before this run (the strategy's first run only; 0 = none).
	Warmup       int   `json:"warmup,omitempty"`
	Instances    int   `json:"instances"`
	InitialStock int   `json:"initial_stock"`
	Requests     int   `json:"requests"`
	Concurrency  int   `json:"concurrency"`
	Qty          int   `json:"qty"`
	Rate         int   `json:"rate"`
	Seed         int64 `json:"seed"`
	// PerUser is what a run with a per-user limit sold per user
	// (Options.Config.PerUserLimit, Options.Users); nil without a limit.
	PerUser *PerUser `json:"per_user,omitempty"`
	// Queue is the order queue of an asynchronous strategy's run
	// (bench/drain.go); nil for the others.
	Queue *OrderQueue `json:"queue,omitempty"`
	// CPU is where the machine's CPU went during the load (nil when it
	// could not be read).
	CPU *CPUUse `json:"cpu,omitempty"`
	// Service is the strategy configuration the fleet reported after the
	// switch (effective TTL and wait budget): the setting the run ran
	// under (Setting fills in its defaults). report.json also gives its
	// knobs at the top level (work_delay, lock_ttl, lock_wait, fencing,
	// no_watchdog, release_pause, batch: MarshalJSON).
	Service     stock.InstanceConfig `json:"service_config"`
	OK          int                  `json:"ok"`
	Outcomes    map[string]int       `json:"outcomes"`
	ErrorKinds  map[string]int       `json:"error_kinds,omitempty"`
	Orders      int                  `json:"orders"`
	SoldQty     int                  `json:"sold_qty"`
	FinalStock  int                  `json:"final_stock"`
	Oversold    int                  `json:"oversold"`
	LostUpdates int                  `json:"lost_updates"`
	// ServiceOversold and ServiceLostUpdates are what /admin/audit itself
	// computed, kept to cross-check the harness's arithmetic.
	ServiceOversold    int            `json:"service_oversold"`
	ServiceLostUpdates int            `json:"service_lost_updates"`
	SalesPerInstance   map[string]int `json:"sales_per_instance"`
	AnswersPerInstance map[string]int `json:"answers_per_instance"`
	DurationS          float64        `json:"duration_s"`
	ThroughputRPS      float64        `json:"throughput_rps"`
	OKPerSec           float64        `json:"ok_per_s"`
	LatencyMS          Latency        `json:"latency_ms"`
	// LockWaitMS is the mean lock wait per acquisition over the fleet
	// (delta of seckill_lock_wait_seconds _sum/_count); nil when the
	// strategy takes no lock or /metrics could not be read.
	LockWaitMS       *float64 `json:"lock_wait_ms"`
	LockHoldMS       *float64 `json:"lock_hold_ms"`
	LockAcquisitions float64  `json:"lock_acquisitions"`
	// BackendEvents are the lock backend's counts during the run, over the
	// fleet (seckill_lock_backend_events_total; Redlock's acquisition
	// rounds by outcome: round_split counts the failed quorum rounds).
	BackendEvents    map[string]float64 `json:"backend_events,omitempty"`
	Invariants       []Invariant        `json:"invariants"`
	InvariantsPassed int                `json:"invariants_passed"`
	InvariantsTotal  int                `json:"invariants_total"`
	Raw              string             `json:"raw,omitempty"`
	// Events is the run's lock events file (raw/NAME.events.jsonl), and
	// HistoryView and Timeline the porcupine view of a history that is not
	// linearizable and the SVG timeline of the first overlapping critical
	// sections (both only when that check failed).
	Events      string `json:"events,omitempty"`
	HistoryView string `json:"history_view,omitempty"`
	Timeline    string `json:"timeline,omitempty"`
	// LockCycle is where the run's lock time went, from the same events
	// (nil without lock holds).
	LockCycle *LockCycle `json:"lock_cycle,omitempty"`
	// LinearizabilityMS is how long the history check took.
	LinearizabilityMS float64 `json:"linearizability_ms"`
	// ChecksMS is how long the checks whose cost grows with the run took
	// together (the history, the lock evidence: Invariant.CheckMS).
	ChecksMS float64 `json:"checks_ms"`
	// PeakRSSMB is the bench process's peak resident set during the run,
	// in MB (PeakRSSOwn), or since the bench started (not PeakRSSOwn:
	// the peak could not be reset); 0 where it cannot be read.
	PeakRSSMB  float64 `json:"bench_peak_rss_mb,omitempty"`
	PeakRSSOwn bool    `json:"bench_peak_rss_own,omitempty"`
	// LatencyCDF is the latency distribution of the run: up to 60 points
	// (ms, fraction answered within it).
	LatencyCDF [][2]float64 `json:"latency_cdf,omitempty"`
	// timelineSVG is the timeline drawn for report.html (not in the JSON).
	timelineSVG []byte
	// Faults are the faults injected into the run (Fault.String), and
	// Windows the throughput before, during and after them.
	Faults  []string `json:"faults,omitempty"`
	Strikes []Strike `json:"strikes,omitempty"`
	Windows []Window `json:"windows,omitempty"`
	// ObservedFault is, with Options.Experiment, the span in which the
	// run's answers went wrong (nil when none did); without faults or
	// strikes of the bench's own, Windows split the run by it.
	ObservedFault *ObservedFault `json:"observed_fault_window,omitempty"`
	// LongestGapS is, in a run with faults, the longest time between two
	// consecutive sales as the clients saw them answered: the outage a
	// buyer saw.
	LongestGapS float64 `json:"longest_gap_without_sale_s,omitempty"`
	// SalesStoppedS is, in a run with strikes, the longest time from a
	// strike's start to the next answer that sold (or said sold out): how
	// long the goods stayed blocked after the fault. With no such answer
	// it runs to the run's last answer after the strike, and
	// SalesNeverResumed is set. 0 when nobody asked after the strike.
	SalesStoppedS     float64 `json:"sales_stopped_after_strike_s,omitempty"`
	SalesNeverResumed bool    `json:"sales_never_resumed,omitempty"`
	// Resent is the purchases sent again and Unanswered those still
	// without a definite answer after Options.Resend tries (0 without it).
	Resent     int `json:"resent,omitempty"`
	Unanswered int `json:"unanswered,omitempty"`
	// ServiceURL is the URL of the service the run loaded and audited
	// through the contract alone (Options.Services); "" for a strategy of
	// the lab's fleet.
	ServiceURL string `json:"service_url,omitempty"`
	// Warnings are what the run went on despite: the reset before it
	// skipped a dead backend that this strategy does not use.
	Warnings []string `json:"warnings,omitempty"`
	// Cost is what the run's purchases cost at the servers, counted by
	// the instances' clients (nil when the instances do not count or
	// nothing sold).
	Cost *RunCost `json:"cost,omitempty"`
}

// Environment describes where the bench ran.
type Environment struct {
	GoVersion string `json:"go_version"`
	OS        string `json:"os"`
	Arch      string `json:"arch"`
	CPUs      int    `json:"cpus"`
	Hostname  string `json:"hostname"`
	Target    string `json:"target"`
	Instances int    `json:"instances"`
	// Durability is the servers' durability level (Fleet.Durability),
	// "unknown" for a fleet started elsewhere.
	Durability string `json:"durability"`
	// DurabilityMeans says what Durability means (Fleet.DurabilityMeans);
	// "" when the fleet did not say.
	DurabilityMeans string `json:"durability_means,omitempty"`
	// RTT is the round trip the fleet's links added (Fleet.RTT).
	RTT fleet.RTT `json:"rtt"`
	// Mode is what the critical section did (Options.Mode).
	Mode string `json:"mode"`
	// Priority is the CPU priorities of the fleet's processes
	// (Fleet.Priority), "" when nobody said.
	Priority string `json:"priority,omitempty"`
	// Cluster says where on Kubernetes it ran (Fleet.Cluster); nil off one.
	Cluster *fleet.Cluster `json:"cluster,omitempty"`
}

// Conditions says in one line what the figures ran under: the round trip
// on the links, the servers' durability, the mode, the instances and the
// machine. Every figure a bench prints comes with it.
func (e Environment) Conditions() string {
	rtt := rttText(e.RTT)
	mode := cmp.Or(e.Mode, ModePurchase)
	if mode == ModeLock {
		mode = "lock alone"
	}
	insts := instancesOf(e)
	where := e.Hostname
	if e.Cluster != nil {
		where += ", " + e.Cluster.String()
	}
	prio := ""
	if e.Priority != "" {
		prio = ", CPU priority " + e.Priority
	}
	return fmt.Sprintf("round trip %s, durability %s, mode %s, %s%s, %d CPUs (%s)", rtt, e.Durability, mode, insts, prio, e.CPUs, where)
}

// instancesOf says how many of the lab's instances the run had.
func instancesOf(e Environment) string {
	switch {
	case e.Instances == 1:
		return "1 instance"
	case e.Instances == 0 && e.Target == "":
		return "services alone (none of the lab's instances)"
	}
	return fmt.Sprintf("%d instances", e.Instances)
}

// Report is everything a bench produced (report.json).
type Report struct {
	Date        time.Time    `json:"date"`
	CommandLine string       `json:"command_line"`
	Environment Environment  `json:"environment"`
	Calibration *Calibration `json:"calibration,omitempty"`
	// CeilingRPS is the generator's ceiling (calibration); CeilingRatio is
	// CeilingRPS over the best strategy's throughput (want >= 5).
	CeilingRPS   float64 `json:"calibration_ceiling_rps"`
	CeilingRatio float64 `json:"ceiling_ratio"`
	// DBCeiling is the database's own limit for the purchase transaction
	// (Options.DatabaseDSN; nil when not measured).
	DBCeiling *DBCeiling `json:"db_ceiling,omitempty"`
	// Experiment is the fault applied from outside (Options.Experiment);
	// nil without one.
	Experiment *Experiment `json:"experiment,omitempty"`
	WallS      float64     `json:"wall_s"`
	// PeakRSSMB is the bench process's largest resident set over the
	// runs, in MB (RunResult.PeakRSSMB); 0 where it cannot be read.
	PeakRSSMB float64 `json:"bench_peak_rss_mb,omitempty"`
	// Order is, per round, the order its runs went in (run labels, see
	// RunResult.Label): round 1 as given, later rounds shuffled from the
	// seed, so every strategy runs early and late.
	Order [][]string `json:"order"`
	// Warmup is the purchases fired before each strategy's first run
	// (0 = none).
	Warmup  int         `json:"warmup"`
	Runs    []RunResult `json:"runs"`
	Summary []Summary   `json:"summary"`
	// Skipped are the strategies of the list that Mode lock did not run,
	// for NotALock; nil when every one ran.
	Skipped []string `json:"skipped,omitempty"`
	// Sweep is the concurrency sweep (Options.Sweep); nil without one.
	Sweep *Sweep `json:"sweep,omitempty"`
	// CostModel sets each strategy's predicted serial limit beside its
	// measured ok/s (bench/cost.go); nil when no run had counts.
	CostModel *CostModel `json:"cost_model,omitempty"`
}

// VariantNoQueue labels the runs of Options.CompareQueue made without the
// service's local queue.
const VariantNoQueue = "no queue"

// Label is the run's strategy as the summary and the report show it:
// "NAME", or "NAME (variant)".
func (r RunResult) Label() string { return labelOf(r.Strategy, r.Variant) }

func labelOf(strategy, variant string) string {
	if variant == "" {
		return strategy
	}
	return strategy + " (" + variant + ")"
}

// unit is one entry of a round: a strategy, with or without the local
// queue.
type unit struct {
	Strategy string
	NoQueue  bool
	// svc is the service the unit loads through the contract (Strategy
	// is then its name); nil for a strategy of the lab's fleet.
	svc *Service
}

func (u unit) variant() string {
	if u.NoQueue {
		return VariantNoQueue
	}
	return ""
}

// units are the entries of every round, in the given order: each
// strategy, and with CompareQueue each queued one again without its queue.
func units(o Options) []unit {
	var out []unit
	for _, s := range o.Strategies {
		out = append(out, unit{Strategy: s})
		if o.CompareQueue && slices.Contains(Queued(), s) {
			out = append(out, unit{Strategy: s, NoQueue: true})
		}
	}
	for i := range o.Services {
		out = append(out, unit{Strategy: o.Services[i].Name, svc: &o.Services[i]})
	}
	return out
}

// roundOrder is the order of n units in round (1-based): round 1 as
// given, every later round shuffled by a generator seeded from seed and
// the round, and (for n > 1) never the same order as the round before.
func roundOrder(n int, seed int64, round int) []int {
	idx := make([]int, n)
	for i := range idx {
		idx[i] = i
	}
	if round <= 1 || n < 2 {
		return idx
	}
	prev := roundOrder(n, seed, round-1)
	rng := rand.New(rand.NewPCG(uint64(seed), uint64(round)))
	for try := 0; try < 64; try++ {
		rng.Shuffle(n, func(i, j int) { idx[i], idx[j] = idx[j], idx[i] })
		if !slices.Equal(idx, prev) {
			break
		}
	}
	return idx
}

// runSpec is what one run measures.
type runSpec struct {
	unit
	Repeat      int
	Concurrency int
	Sweep       bool // part of a sweep: the concurrency goes into the name
	Warm        bool // warm up first
}

// name is the run's id, the stem of its raw files.
func (rs runSpec) name() string {
	n := rs.Strategy
	if rs.NoQueue {
		n += "-noqueue"
	}
	if rs.Sweep {
		n += fmt.Sprintf("-c%d", rs.Concurrency)
	}
	return fmt.Sprintf("%s-%d", n, rs.Repeat)
}

// Run benchmarks every strategy of o against the fleet and, when o.OutDir
// is set, writes report.json, report.md, report.html and raw/ there.
func Run(ctx context.Context, o Options) (*Report, error) {
	o, err := o.withDefaults()
	if err != nil {
		return nil, err
	}
	began := time.Now()
	fl, err := readyFleet(ctx, o)
	if err != nil {
		return nil, err
	}
	r := &runner{o: o, fleet: fl, adm: newAdmin(fl.AdminToken)}
	if err := r.checkInstances(ctx); err != nil {
		return nil, err
	}
	if err := r.checkServices(ctx); err != nil {
		return nil, err
	}
	rep := &Report{
		Date:        began.UTC(),
		CommandLine: strings.Join(o.CommandLine, " "),
		Environment: environment(fl, o.Mode),
		Skipped:     o.skipped,
	}
	if o.Experiment != "" {
		rep.Experiment = &Experiment{Name: o.Experiment, DurationS: o.ExperimentDuration.Seconds(), Note: experimentNote}
	}
	costCond := measureCostConditions(ctx, fl)
	if err := calibrate(ctx, o, rep); err != nil {
		return nil, err
	}
	if o.OutDir != "" {
		r.rawDir = filepath.Join(o.OutDir, "raw")
		if err := os.MkdirAll(r.rawDir, 0o755); err != nil {
			return nil, fmt.Errorf("create output directory: %w", err)
		}
	}
	rep.Warmup = max(o.Warmup, 0)
	if err := r.rounds(ctx, rep); err != nil {
		var fail runFailed
		if errors.As(err, &fail) && len(rep.Runs) > 0 && o.OutDir != "" {
			// Keep what was measured before the failure.
			summarize(rep, o, costCond, began)
			if werr := WriteReports(o.OutDir, rep); werr == nil {
				err = fmt.Errorf("%w (reports of the %d runs before it are in %s)", err, len(rep.Runs), o.OutDir)
			}
		}
		return rep, err
	}
	summarize(rep, o, costCond, began)
	if o.OutDir != "" {
		if err := WriteReports(o.OutDir, rep); err != nil {
			return rep, err
		}
	}
	return rep, nil
}

// readyFleet is o.Fleet, re-scaled to o.Instances when asked, once its
// URLs are checked.
func readyFleet(ctx context.Context, o Options) (fleet.Fleet, error) {
	fl := o.Fleet
	if o.contractOnly() {
		return fl, nil // the services alone: nothing of the lab's
	}
	if o.Instances > 0 {
		switch {
		case o.Scaler != nil:
			var err error
			if fl, err = o.Scaler.Scale(ctx, o.Instances); err != nil {
				return fl, fmt.Errorf("scale to %d instances: %w", o.Instances, err)
			}
		case len(fl.Instances) != o.Instances:
			return fl, fmt.Errorf("%w: --instances %d: this fl cannot be re-scaled (it has %d instances); scale it yourself or drop --instances",
				ErrInvalidOptions, o.Instances, len(fl.Instances))
		}
	}
	if fl.Target == "" {
		return fl, fmt.Errorf("%w: no target (the nginx URL)", ErrInvalidOptions)
	}
	if len(fl.Instances) == 0 {
		return fl, fmt.Errorf("%w: no instance URLs (the admin API must reach every instance)", ErrInvalidOptions)
	}
	for _, u := range append([]string{fl.Target}, fl.Instances...) {
		if pu, err := url.Parse(u); err != nil || (pu.Scheme != "http" && pu.Scheme != "https") || pu.Host == "" {
			return fl, fmt.Errorf("%w: %q is not an http(s) URL", ErrInvalidOptions, u)
		}
	}
	return fl, nil
}

// checkInstances fails unless every instance's admin API and the target
// answer.
func (r *runner) checkInstances(ctx context.Context) error {
	if r.o.contractOnly() {
		return nil
	}
	for _, base := range r.fleet.Instances {
		if _, err := r.adm.getStrategy(ctx, base); err != nil {
			return err
		}
	}
	return checkTarget(ctx, r.fleet.Target)
}

// calibrate measures the load generator's ceiling and, with a
// DatabaseDSN, the database's, into rep (nothing when o skips it).
func calibrate(ctx context.Context, o Options, rep *Report) error {
	if o.CalibrateRequests <= 0 {
		return nil
	}
	c, err := Calibrate(ctx, o.CalibrateRequests, o.Concurrency, o.Rate)
	if err != nil {
		return err
	}
	rep.Calibration = &c
	rep.CeilingRPS = c.CeilingRPS
	if o.DatabaseDSN != "" {
		dc, err := CalibrateDatabase(ctx, o.DatabaseDSN, o.CalibrateRequests, o.Concurrency)
		if err != nil {
			return err
		}
		rep.DBCeiling = &dc
	}
	return nil
}

// runFailed is a run's error in rounds: the runs before it are kept.
type runFailed struct{ error }

func (e runFailed) Unwrap() error { return e.error }

// rounds runs o.Repeat rounds, each every unit at every concurrency point
// in the round's order, into rep; with a database ceiling, it is measured
// again before every round after the first. A run's error is a runFailed.
func (r *runner) rounds(ctx context.Context, rep *Report) error {
	o := r.o
	us := units(o)
	points := o.Sweep
	if len(points) == 0 {
		points = []int{o.Concurrency}
	}
	total := len(us) * len(points) * o.Repeat
	n := 0
	warmed := map[unit]bool{}
	for round := 1; round <= o.Repeat; round++ {
		if round > 1 && rep.DBCeiling != nil {
			// The database's ceiling again, before this round: the median
			// over the rounds is what "of DB" divides by.
			dc, err := CalibrateDatabase(ctx, o.DatabaseDSN, o.CalibrateRequests, o.Concurrency)
			if err != nil {
				return fmt.Errorf("round %d: %w", round, err)
			}
			rep.DBCeiling.add(dc)
		}
		order := roundOrder(len(us), o.Seed, round)
		labels := make([]string, len(order))
		for i, k := range order {
			labels[i] = labelOf(us[k].Strategy, us[k].variant())
		}
		rep.Order = append(rep.Order, labels)
		for _, k := range order {
			u := us[k]
			for _, c := range points {
				n++
				rs := runSpec{unit: u, Repeat: round, Concurrency: c, Sweep: len(o.Sweep) > 0, Warm: o.Warmup > 0 && !warmed[u]}
				warmed[u] = true
				label := fmt.Sprintf("[%d/%d] %-16s #%d", n, total, labelOf(u.Strategy, u.variant()), round)
				if rs.Sweep {
					label += fmt.Sprintf(" %4d clients", c)
				}
				run, err := r.runOne(ctx, rs, label)
				if err != nil {
					return runFailed{fmt.Errorf("%s (repeat %d, %d clients): %w", labelOf(u.Strategy, u.variant()), round, c, err)}
				}
				rep.Runs = append(rep.Runs, run)
			}
		}
	}
	return nil
}

// summarize fills rep's summary, sweep, cost model and wall time from its
// runs.
func summarize(rep *Report, o Options, costCond CostConditions, began time.Time) {
	rep.Summary = Summarize(rep.Runs)
	setDBCeiling(rep.Summary, rep.DBCeiling)
	if best := bestThroughput(rep.Summary); best > 0 && rep.CeilingRPS > 0 {
		rep.CeilingRatio = rep.CeilingRPS / best
	}
	setLimits(rep.Summary, rep.Runs, rep.CeilingRPS)
	rep.Sweep = sweepOf(rep.Summary, o.Sweep)
	rep.CostModel = costModel(costCond, rep.Runs, rep.Summary)
	rep.WallS = time.Since(began).Seconds()
	for _, run := range rep.Runs {
		rep.PeakRSSMB = max(rep.PeakRSSMB, run.PeakRSSMB)
	}
	rep.PeakRSSMB = max(rep.PeakRSSMB, peakRSSMB())
}

// checkTarget fails with ErrUnreachable when nothing answers at target.
// Any HTTP answer will do: something listens.
func checkTarget(ctx context.Context, target string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimRight(target, "/")+"/metrics", nil)
	if err != nil {
		return fmt.Errorf("%w: target %q: %v", ErrInvalidOptions, target, err)
	}
	resp, err := (&http.Client{Timeout: 10 * time.Second}).Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return fmt.Errorf("the target %s is %w (%v)", target, ErrUnreachable, adminclient.RootCause(err))
	}
	resp.Body.Close()
	return nil
}

func environment(f fleet.Fleet, mode string) Environment {
	h, _ := os.Hostname()
	return Environment{
		GoVersion: runtime.Version(), OS: runtime.GOOS, Arch: runtime.GOARCH,
		CPUs: runtime.NumCPU(), Hostname: h, Target: f.Target, Instances: len(f.Instances),
		Durability: cmp.Or(f.Durability, "unknown"), DurabilityMeans: f.DurabilityMeans, RTT: f.RTT, Mode: mode, Cluster: f.Cluster, Priority: f.Priority,
	}
}

// setConfig records the setting the fleet reported after the switch.
func (r *RunResult) setConfig(eff stock.InstanceConfig) { r.Service = eff }

// Setting is the setting the run ran under, its defaults filled in.
// Batch is the batch size its strategy was set to (0 = off: the option
// was not given, or the strategy has no lock holder to batch; see
// Options.Config.Batch).
func (r RunResult) Setting() stock.Config { return r.Service.WithDefaults() }

// MarshalJSON writes the run with its setting's knobs (Setting) also at the
// top level, in report.json's form: durations as Go duration strings.
// Reading a report back takes them from service_config.
func (r RunResult) MarshalJSON() ([]byte, error) {
	type plain RunResult // its fields, without this method
	c := r.Setting()
	return json.Marshal(struct {
		plain
		WorkDelay    string `json:"work_delay"`
		LockTTL      string `json:"lock_ttl"`
		LockWait     string `json:"lock_wait"`
		Fencing      bool   `json:"fencing"`
		NoWatchdog   bool   `json:"no_watchdog"`
		ReleasePause string `json:"release_pause,omitempty"`
		Batch        int    `json:"batch,omitempty"`
	}{plain(r), c.WorkDelay.String(), c.LockTTL.String(), c.LockWait.String(), c.Fencing, c.NoWatchdog, durString(c.ReleasePause), c.Batch})
}

func durString(d time.Duration) string {
	if d == 0 {
		return ""
	}
	return d.String()
}

// fillRun copies the audit and the attack's metrics into run.
func fillRun(run *RunResult, a Audit, st ServerState, res attackResult) {
	run.Outcomes = a.Outcomes
	run.ErrorKinds = a.ErrorKinds
	run.OK = a.Outcomes[OutcomeOK]
	run.Orders = st.Orders
	run.SoldQty = st.SoldQty
	run.FinalStock = st.FinalStock
	run.Oversold = a.Oversold
	run.LostUpdates = a.LostUpdates
	run.SalesPerInstance = st.PerInstance
	run.Invariants = a.Invariants
	run.InvariantsPassed = a.Passed()
	run.InvariantsTotal = a.Decided()
	run.DurationS = res.Wall.Seconds()
	if run.DurationS > 0 {
		run.ThroughputRPS = float64(res.Results) / run.DurationS
		run.OKPerSec = float64(run.OK) / run.DurationS
	}
	l := res.Metrics.Latencies
	run.LatencyMS = Latency{Min: ms(l.Min), Mean: ms(l.Mean), P50: ms(l.P50), P90: ms(l.P90), P99: ms(l.P99), Max: ms(l.Max)}
}
