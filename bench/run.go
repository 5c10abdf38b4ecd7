package bench

import (
	"context"
	"errors"
	"fmt"
	"github.com/seckill-lab/seckill/bench/costmodel"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/seckill-lab/seckill/bench/fleet"
	"github.com/seckill-lab/seckill/stock"
)

// runner is what every run of one bench shares: the options (defaults
// filled in), the fleet as it is after any re-scale, its admin client and
// the directory of the raw results ("" = none are written).
type runner struct {
	o      Options
	fleet  fleet.Fleet
	adm    *admin
	rawDir string
}

// runOne is one strategy, one repeat, one concurrency: switch, (warm up,)
// reset, attack, audit.
func (r *runner) runOne(ctx context.Context, rs runSpec, label string) (RunResult, error) {
	ctx, cancel := context.WithTimeout(ctx, r.o.RunTimeout)
	defer cancel()
	run, err := r.switchTo(ctx, rs)
	if err != nil {
		return RunResult{}, err
	}
	if rs.Warm {
		if err := r.warmup(ctx, rs, run.Name, rs.Concurrency); err != nil {
			return RunResult{}, err
		}
		run.Warmup = r.o.Warmup
	}
	if err := r.reset(ctx, rs, &run, label); err != nil {
		return RunResult{}, err
	}
	run.PeakRSSOwn = resetPeakRSS()
	before := r.counters(ctx, rs, run.Strategy)
	l, err := r.attack(ctx, &run, rs, label)
	if err != nil {
		return run, err
	}
	if err := r.settle(ctx, &run, &l, before); err != nil {
		return run, err
	}
	err = r.audit(ctx, &run, rs, l, before)
	run.PeakRSSMB = peakRSSMB()
	return run, err
}

// switchTo switches every instance to rs's setting and starts the run's
// record with the setting the fleet then reports.
func (r *runner) switchTo(ctx context.Context, rs runSpec) (RunResult, error) {
	if rs.svc != nil {
		return r.serviceRun(rs), nil
	}
	eff, err := r.adm.setStrategy(ctx, r.fleet.Instances, r.o.serviceConfig(rs.unit))
	if err != nil {
		return RunResult{}, err
	}
	o := r.o
	run := RunResult{
		Strategy: rs.Strategy, Variant: rs.variant(), Name: rs.name(), Repeat: rs.Repeat,
		ExpectedCorrect: ExpectedCorrect(rs.Strategy, len(r.fleet.Instances), eff.Config),
		Instances:       len(r.fleet.Instances), InitialStock: o.Stock, Requests: o.Requests,
		Concurrency: rs.Concurrency, Qty: o.Qty, Rate: o.Rate, Seed: o.Seed,
		AnswersPerInstance: map[string]int{},
	}
	run.setConfig(eff)
	return run, nil
}

// warmup fires o.Warmup purchases under the strategy in force on a goods
// of its own (GoodsID + warmupGoodsOffset), counted nowhere, so the
// measured run does not pay for cold connections, sessions and caches. A
// warm-up longer than warmupTimeout (a long WorkDelay) is cut short.
func (r *runner) warmup(ctx context.Context, rs runSpec, name string, concurrency int) error {
	o := r.o
	goods := o.GoodsID + warmupGoodsOffset
	if err := r.resetGoods(ctx, rs, goods, o.Warmup*o.Qty); err != nil {
		return fmt.Errorf("warm-up: %w", err)
	}
	wctx, cancel := context.WithTimeout(ctx, warmupTimeout)
	defer cancel()
	wname := name + "-warmup"
	_, err := attack(wctx, attackSpec{
		Name: wname, Requests: o.Warmup, Concurrency: max(1, min(concurrency, o.Warmup)), Timeout: o.RequestTimeout,
		Purchases: purchases{Target: r.target(rs), Goods: goods, Qty: o.Qty, Seed: o.Seed, Run: wname},
	})
	if err != nil && ctx.Err() == nil && errors.Is(err, context.DeadlineExceeded) {
		return nil // cut short on purpose
	}
	if err != nil {
		return fmt.Errorf("warm-up: %w", err)
	}
	return nil
}

// reset sets the goods' stock and deletes its orders; the lock backends
// the reset skipped become the run's warnings, or its error when the
// run's strategy needs them.
func (r *runner) reset(ctx context.Context, rs runSpec, run *RunResult, label string) error {
	if rs.svc != nil {
		return r.resetGoods(ctx, rs, r.o.GoodsID, r.o.Stock)
	}
	skipped, err := r.adm.reset(ctx, r.fleet.Instances[0], r.o.GoodsID, r.o.Stock)
	if err != nil {
		return err
	}
	if run.Warnings, err = checkReset(run.Strategy, skipped); err != nil {
		return fmt.Errorf("%s: %w", run.Strategy, err)
	}
	if r.o.Progress != nil {
		for _, w := range run.Warnings {
			fmt.Fprintf(r.o.Progress, "warning: %s: %s\n", label, w)
		}
	}
	return nil
}

// resetGoods sets goods' stock and deletes its orders, on the lab's fleet
// (the strategies it skipped are not looked at) or through a service's
// contract.
func (r *runner) resetGoods(ctx context.Context, rs runSpec, goods int64, stock int) error {
	if rs.svc != nil {
		if err := rs.svc.client().Reset(ctx, goods, stock); err != nil {
			return fmt.Errorf("service %s: %w", rs.svc.Name, err)
		}
		return nil
	}
	_, err := r.adm.reset(ctx, r.fleet.Instances[0], goods, stock)
	return err
}

// target is where rs's purchases go: the fleet's load balancer, or the
// service's URL.
func (r *runner) target(rs runSpec) string {
	if rs.svc != nil {
		return rs.svc.URL
	}
	return r.fleet.Target
}

// errNotLab is why a service's run has no lock metrics, cost counts or
// lock events.
var errNotLab = errors.New("a service audited through the contract alone reports none")

// counters are the fleet's lock metrics and cost counts before a run's
// load; a part that could not be read (its error set) goes unmeasured.
type counters struct {
	locks   lockStats
	lockErr error
	cost    costmodel.Snapshot
	costErr error
}

// counters reads the fleet's lock metrics and cost counts.
func (r *runner) counters(ctx context.Context, rs runSpec, strategy string) counters {
	var c counters
	if rs.svc != nil {
		c.lockErr, c.costErr = errNotLab, errNotLab
		return c
	}
	c.locks, c.lockErr = r.adm.scrapeLocks(ctx, r.fleet.Instances, strategy)
	c.cost, c.costErr = r.adm.costCounts(ctx, r.fleet.Instances)
	return c
}

// loadOutcome is what a run's load left for the audit.
type loadOutcome struct {
	res        attackResult
	t0         time.Time
	responses  []Response
	cpu0, cpu1 cpuMark
	strikes    []Strike
	events     []stock.Event
	gaps       []string
	evErr      error
	// cost is the servers' work the load cost (nil when not counted).
	cost costmodel.Snapshot
	// answers checks a service's purchase answers against the contract
	// (nil for the lab's fleet).
	answers *answerCheck
}

// attack fires the run's purchases, its faults, lock event collection and
// striker beside them, and writes the raw results. Every fault has ended
// when it returns (a paused instance must answer the audit).
func (r *runner) attack(ctx context.Context, run *RunResult, rs runSpec, label string) (loadOutcome, error) {
	o, concurrency := r.o, rs.Concurrency
	cpu := o.CPU
	if rs.svc != nil {
		cpu = nil // the lab's processes do not serve it
	}
	raw, err := r.createRaw(run)
	if err != nil {
		return loadOutcome{}, err
	}
	if raw != nil {
		defer raw.Close()
	}
	// The raw results are encoded after the load, not during it: encoding
	// is the generator's CPU, taken from the system it measures.
	var kept []*vegetaResult
	l := loadOutcome{responses: make([]Response, 0, o.Requests)}
	if rs.svc != nil {
		l.answers = &answerCheck{}
	}
	spec := attackSpec{
		Name: run.Name, Requests: o.Requests, Concurrency: concurrency, Rate: o.Rate, Timeout: o.RequestTimeout, Resend: o.Resend,
		Purchases: purchases{Target: r.target(rs), Goods: o.GoodsID, Qty: o.Qty, Seed: o.Seed,
			Run: run.Name, Users: o.Users},
		// The load ends with its last answer: the results are read after.
		Loaded: func() { l.cpu1 = markCPU(cpu) },
		OnResult: func(v *vegetaResult, id string) {
			if raw != nil {
				kept = append(kept, v)
			}
			if l.answers != nil {
				l.answers.check(int(v.Code), v.Body)
			}
			resp := toResponse(v, id)
			if resp.Instance != "" {
				run.AnswersPerInstance[resp.Instance]++
			}
			l.responses = append(l.responses, resp)
		},
	}
	pl := newProgress(o.Progress, label, o.Requests)
	spec.Progress = pl.update
	l.t0 = time.Now()
	sd := r.startSide(ctx, run, rs, l.t0)
	l.cpu0 = markCPU(cpu)
	l.res, err = attack(ctx, spec)
	pl.done()
	if raw != nil {
		if werr := writeRaw(raw, kept); werr != nil && err == nil {
			err = werr
		}
	}
	if serr := sd.stop(&l); serr != nil && err == nil {
		err = serr
	}
	if err == nil && l.answers != nil && l.answers.first != nil {
		err = fmt.Errorf("service %s: %w", rs.svc.Name, l.answers.first)
	}
	if err != nil {
		return l, err
	}
	if raw != nil {
		if err := raw.Close(); err != nil {
			return l, fmt.Errorf("close raw results: %w", err)
		}
	}
	return l, nil
}

// createRaw creates the run's raw results file and names it in run; nil
// without a raw directory.
func (r *runner) createRaw(run *RunResult) (*os.File, error) {
	if r.rawDir == "" {
		return nil, nil
	}
	run.Raw = filepath.Join("raw", run.Name+".bin")
	f, err := os.Create(filepath.Join(r.rawDir, run.Name+".bin"))
	if err != nil {
		return nil, fmt.Errorf("create raw results file: %w", err)
	}
	return f, nil
}

// side is what runs beside a run's load: its faults, the collection of
// its lock events and its striker.
type side struct {
	healed func() error
	ec     *eventCollector
	evErr  error
	struck func() ([]Strike, error)
}

// startSide schedules the run's faults from t0 and starts collecting the
// lock events and the striker.
func (r *runner) startSide(ctx context.Context, run *RunResult, rs runSpec, t0 time.Time) side {
	o := r.o
	s := side{healed: func() error { return nil }, struck: func() ([]Strike, error) { return nil, nil }}
	if rs.svc != nil {
		s.evErr = errNotLab // nor does the lab's fault or striker reach it
		return s
	}
	if len(o.Faults) > 0 {
		s.healed = scheduleFaults(ctx, o.Faulter, o.Faults, t0)
		for _, f := range o.Faults {
			run.Faults = append(run.Faults, f.String())
		}
	}
	switch {
	case o.NoEvents:
		s.evErr = errors.New("--no-events")
	case r.fleet.AdminToken != "":
		s.ec, s.evErr = collectEvents(ctx, r.fleet, stock.LockKey(o.GoodsID))
	}
	if o.Striker != nil {
		sctx, stop := context.WithCancel(ctx)
		done := make(chan struct{})
		var strikes []Strike
		var serr error
		go func() {
			defer close(done)
			strikes, serr = o.Striker.Run(sctx, r.fleet, t0)
		}()
		s.struck = func() ([]Strike, error) { stop(); <-done; return strikes, serr }
	}
	return s
}

// stop waits for the faults to heal, stops the striker and the event
// collection, and records what they saw in l. It returns the first error.
func (s side) stop(l *loadOutcome) error {
	err := s.healed()
	strikes, serr := s.struck()
	if serr != nil && err == nil {
		err = fmt.Errorf("striker: %w", serr)
	}
	l.strikes, l.evErr = strikes, s.evErr
	if s.ec != nil {
		l.events, l.gaps = s.ec.stop()
	}
	return err
}

// settle records what the end of the load left: the servers' work it
// cost, the throughput around its faults and strikes, an asynchronous
// strategy's order queue (drained first) and the CPU it took.
func (r *runner) settle(ctx context.Context, run *RunResult, l *loadOutcome, before counters) error {
	if before.costErr == nil {
		if after, err := r.adm.costCounts(ctx, r.fleet.Instances); err == nil {
			l.cost = after.Sub(before.cost)
		}
	}
	run.Strikes = l.strikes
	faults := append(slices.Clone(r.o.Faults), strikeFaults(l.strikes)...)
	if r.o.Experiment != "" {
		run.ObservedFault = observeFault(l.responses, l.t0)
		if run.ObservedFault != nil && len(faults) == 0 {
			faults = []fleet.Fault{run.ObservedFault.fault()}
		}
	}
	run.Windows = faultWindows(l.responses, l.t0, faults, l.res.Wall)
	if run.Windows != nil {
		run.LongestGapS = longestGap(l.responses).Seconds()
	}
	setSalesGaps(run.Strikes, l.responses, l.t0)
	stopped, resumed := salesStopped(l.responses, l.t0, l.strikes)
	run.SalesStoppedS, run.SalesNeverResumed = stopped.Seconds(), !resumed
	if isAsync(run.Strategy) {
		q, err := drainQueue(ctx, r.adm, r.fleet.Instances, r.o.GoodsID)
		if err != nil {
			return fmt.Errorf("%s: %w", run.Strategy, err)
		}
		run.Queue = &q
		l.cpu1 = markCPU(r.o.CPU) // the consumers' writes are the purchase's too
	}
	if run.ServiceURL == "" { // a service's processes are not the lab's to read
		run.CPU = cpuSince(l.cpu0, l.cpu1, l.res.Results)
	}
	return nil
}

// audit reads the goods' audit, orders and the fleet's lock metrics, and
// checks the run's invariants against the answers.
func (r *runner) audit(ctx context.Context, run *RunResult, rs runSpec, l loadOutcome, before counters) error {
	st, au, err := r.state(ctx, rs)
	if err != nil {
		return err
	}
	ids := st.RequestIDs
	if before.lockErr == nil {
		r.lockMetrics(ctx, run, before.locks)
	}
	if l.answers != nil {
		run.LockWaitMS = l.answers.lockWaitMS()
	}
	a := Evaluate(l.responses, st, r.o.Qty)
	run.LatencyCDF = latencyCDF(l.responses)
	more, err := r.invariants(ctx, run, l, ids)
	if err != nil {
		return err
	}
	a.Invariants = append(a.Invariants, more...)
	fillRun(run, a, st, l.res)
	run.ServiceOversold, run.ServiceLostUpdates = au.Oversold, au.LostUpdates
	if l.cost != nil {
		run.Cost = newRunCost(l.cost, run.OK, fsyncServers(r.fleet))
	}
	return nil
}

// state reads what the run left: the lab's audit and orders, or a
// service's stock and orders through the contract (its audit then is the
// bench's own count from them).
func (r *runner) state(ctx context.Context, rs runSpec) (ServerState, AuditReply, error) {
	o := r.o
	if rs.svc != nil {
		st, err := r.serviceState(ctx, rs.svc)
		a := Evaluate(nil, st, o.Qty)
		return st, AuditReply{Oversold: a.Oversold, LostUpdates: a.LostUpdates}, err
	}
	first := r.fleet.Instances[0]
	au, err := r.adm.audit(ctx, first, o.GoodsID)
	if err != nil {
		return ServerState{}, au, err
	}
	ids, err := r.adm.orders(ctx, first, o.GoodsID)
	if err != nil {
		return ServerState{}, au, err
	}
	return ServerState{InitialStock: o.Stock, FinalStock: au.Stock, Orders: au.Orders, SoldQty: au.SoldQty,
		PerInstance: au.PerInstance, RequestIDs: ids}, au, nil
}

// lockMetrics records the run's lock waits, holds and backend events: the
// fleet's counters now less before (nothing when they cannot be read).
func (r *runner) lockMetrics(ctx context.Context, run *RunResult, before lockStats) {
	after, err := r.adm.scrapeLocks(ctx, r.fleet.Instances, run.Strategy)
	if err != nil {
		return
	}
	d := after.sub(before)
	run.LockAcquisitions = d.WaitCount
	run.BackendEvents = d.Backend
	if d.WaitCount > 0 {
		v := d.WaitSum / d.WaitCount * 1000
		run.LockWaitMS = &v
	}
	if d.HoldCount > 0 {
		v := d.HoldSum / d.HoldCount * 1000
		run.LockHoldMS = &v
	}
}

// invariants checks the history's linearizability, the lock evidence and,
// with a per-user limit, the orders per user.
func (r *runner) invariants(ctx context.Context, run *RunResult, l loadOutcome, ids []string) ([]Invariant, error) {
	view := ""
	if r.rawDir != "" {
		view = filepath.Join(r.rawDir, run.Name+".history.html")
	}
	lin, lrep, err := checkHistory(ctx, l.responses, r.o.Qty, r.o.Stock, view)
	if err != nil {
		return nil, err
	}
	run.LinearizabilityMS = lin.CheckMS
	if lin.Failed() && view != "" && len(lrep.Visualization) > 0 {
		run.HistoryView = filepath.Join("raw", filepath.Base(view))
	}
	out := []Invariant{lin}
	ex, err := lockEvidence(run, l.events, evidenceInput{sales: ids, gaps: l.gaps, err: l.evErr}, r.rawDir, run.Name)
	if err != nil {
		return nil, err
	}
	out = append(out, ex...)
	if r.o.Resend > 0 {
		run.Resent, run.Unanswered = l.res.Resent, unanswered(l.responses)
		out = append(out, orderAnswered(l.responses, ids))
	}
	if limit := r.o.Config.PerUserLimit; limit > 0 {
		p, inv := perUser(ids, r.o.Users, limit)
		run.PerUser = &p
		out = append(out, inv)
	}
	for _, inv := range out {
		run.ChecksMS += inv.CheckMS
	}
	return out, nil
}
