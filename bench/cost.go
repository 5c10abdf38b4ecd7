package bench

import (
	"cmp"
	"context"
	"fmt"
	"github.com/seckill-lab/seckill/bench/costmodel"
	"net/http"
	"os"
	"slices"
	"strings"

	"github.com/seckill-lab/seckill/bench/fleet"
	"github.com/seckill-lab/seckill/stock/catalog"
)

// The cost model beside the measured figures (internal/cost): each run
// reads every instance's request counters (GET /admin/cost) before and
// after its attack and divides the difference by its successful purchases;
// the report prices each strategy's critical path at the measured round
// trip and fsync latency and sets the predicted serial limit beside the
// measured ok/s.

// RunCost is what a run's purchases cost at the servers, counted by the
// instances' clients.
type RunCost struct {
	// Purchases are the run's successful purchases the counts are
	// divided by.
	Purchases int `json:"purchases"`
	// Counts are the fleet's requests during the run, by server and phase.
	Counts costmodel.Snapshot `json:"counts"`
	// PerPurchase is Counts over Purchases.
	PerPurchase costmodel.PerPurchase `json:"per_purchase"`
	// RoundTrips are the round trips per purchase by server, every phase.
	RoundTrips map[costmodel.Server]float64 `json:"round_trips"`
	// Fsyncs are the writes per purchase on the servers that fsync at the
	// fleet's durability level, every phase.
	Fsyncs float64 `json:"fsyncs"`
}

// newRunCost divides counts by ok purchases; fsyncs says which servers'
// writes cost an fsync. Nil when there was no sale.
func newRunCost(counts costmodel.Snapshot, ok int, fsyncs map[costmodel.Server]bool) *RunCost {
	per := counts.Per(ok)
	if per == nil {
		return nil
	}
	rc := &RunCost{Purchases: ok, Counts: counts, PerPurchase: per, RoundTrips: map[costmodel.Server]float64{}}
	for _, s := range costmodel.Servers() {
		t := per.Total(s)
		if t.RoundTrips > 0 {
			rc.RoundTrips[s] = t.RoundTrips
		}
		if fsyncs[s] {
			rc.Fsyncs += t.Writes
		}
	}
	return rc
}

// costCounts sums GET /admin/cost over the instances (the lab's
// internal/api.CostReply: the instance and its servers' counts).
func (a *admin) costCounts(ctx context.Context, instances []string) (costmodel.Snapshot, error) {
	total := costmodel.Snapshot{}
	for _, base := range instances {
		var r struct {
			Servers costmodel.Snapshot `json:"servers"`
		}
		if err := a.do(ctx, http.MethodGet, base, "/admin/cost", nil, &r); err != nil {
			return nil, fmt.Errorf("request counts of %s: %w", base, err)
		}
		total = total.Add(r.Servers)
	}
	return total, nil
}

// fsyncServers are the servers whose writes cost an fsync on f
// (Fleet.Fsyncs, as the lab describes its servers).
func fsyncServers(f fleet.Fleet) map[costmodel.Server]bool {
	out := map[costmodel.Server]bool{}
	for _, s := range f.Fsyncs {
		out[costmodel.Server(s)] = true
	}
	return out
}

// CostConditions are what the cost model prices a critical path at.
type CostConditions struct {
	// Durability is the level the fsync servers were read at.
	Durability string `json:"durability"`
	// RTTMS is one round trip, in ms; RTTSource says where it comes from.
	RTTMS     float64 `json:"rtt_ms"`
	RTTSource string  `json:"rtt_source"`
	// FsyncMS is the median write+fsync of a small block in FsyncDir.
	FsyncMS  float64 `json:"fsync_ms"`
	FsyncDir string  `json:"fsync_dir"`
	// FsyncServers are the servers whose writes cost an fsync.
	FsyncServers []costmodel.Server `json:"fsync_servers"`
	// ServerProbes are the servers' idle times by operation, in ms, as the
	// stack measured them at start (fleet.ServerProbes: the whole request,
	// its loopback round trip ProbeRTTMS and, for a write where the server
	// fsyncs, its fsync ProbeFsyncMS included); none when the fleet had
	// none (no server time is priced).
	ServerProbes costmodel.ServerTimes `json:"server_probes,omitempty"`
	ProbeRTTMS   float64               `json:"probe_rtt_ms,omitempty"`
	ProbeFsyncMS float64               `json:"probe_fsync_ms,omitempty"`
	// Error says why a figure could not be measured (no prediction then).
	Error string `json:"error,omitempty"`
}

// costProbes are the samples of each probe (median taken).
const costProbes = 50

// measureCostConditions measures the round trip and the fsync latency the
// model uses: the round trip measured through the fleet's links
// (Fleet.RTT), else the direct one measured with it, else a loopback probe
// of its own; the fsync latency on the file system of Fleet.DataDir (the
// stack's directory), else of the temporary directory.
func measureCostConditions(ctx context.Context, f fleet.Fleet) CostConditions {
	c := CostConditions{Durability: cmp.Or(f.Durability, "not given")}
	if f.DurabilityMeans != "" {
		c.Durability += " (" + f.DurabilityMeans + ")"
	}
	fsyncs := fsyncServers(f)
	for _, s := range costmodel.Servers() {
		if fsyncs[s] {
			c.FsyncServers = append(c.FsyncServers, s)
		}
	}
	var errs []string
	switch {
	case f.RTT.MeasuredMS > 0:
		c.RTTMS, c.RTTSource = f.RTT.MeasuredMS, "measured through the stack's links (seckill up)"
	case f.RTT.DirectMS > 0:
		c.RTTMS, c.RTTSource = f.RTT.DirectMS, "the direct round trip measured by seckill up (no links measured)"
	default:
		rtt, err := costmodel.LoopbackRTTMS(ctx, costProbes)
		if err != nil {
			errs = append(errs, err.Error())
		}
		c.RTTMS, c.RTTSource = rtt, fmt.Sprintf("a TCP loopback probe of the bench (median of %d; the fleet gave none)", costProbes)
	}
	c.FsyncDir = cmp.Or(f.DataDir, os.TempDir())
	fs, err := costmodel.FsyncMS(ctx, c.FsyncDir, costProbes)
	if err != nil {
		errs = append(errs, err.Error())
	}
	c.FsyncMS = fs
	c.Error = strings.Join(errs, "; ")
	c.ServerProbes, c.ProbeRTTMS, c.ProbeFsyncMS = serverTimes(f.Probes)
	return c
}

// serverTimes are the probes' medians by server and operation (the
// operations without a figure left out), with the round trip and the
// fsync they include.
func serverTimes(p *fleet.ServerProbes) (costmodel.ServerTimes, float64, float64) {
	if p == nil {
		return nil, 0, 0
	}
	out := costmodel.ServerTimes{}
	for s, sp := range p.Servers {
		for op := range sp.Ops {
			if ms, ok := p.Median(s, op); ok {
				if out[costmodel.Server(s)] == nil {
					out[costmodel.Server(s)] = map[costmodel.Op]float64{}
				}
				out[costmodel.Server(s)][costmodel.Op(op)] = ms
			}
		}
	}
	return out, p.LoopbackRTTMS, p.FsyncMS
}

func (c CostConditions) conditions() costmodel.Conditions {
	fs := map[costmodel.Server]bool{}
	for _, s := range c.FsyncServers {
		fs[s] = true
	}
	return costmodel.Conditions{RTTMS: c.RTTMS, FsyncMS: c.FsyncMS, Fsyncs: fs, Probes: c.ServerProbes, ProbeRTTMS: c.ProbeRTTMS, ProbeFsyncMS: c.ProbeFsyncMS}
}

// CostModel is report.json's cost_model: the conditions and, per summary
// row, the prediction beside the measured figure.
type CostModel struct {
	CostConditions
	Rows []CostRow `json:"rows"`
}

// CostRow is one strategy's (summary row's) cost and prediction.
type CostRow struct {
	Name     string `json:"name"`
	Strategy string `json:"strategy"`
	// Path is "lock" (held + release + final acquire) or "row" (the goods
	// row's serial section).
	Path string `json:"path"`
	// Purchases are the successful purchases of the row's runs.
	Purchases int `json:"purchases"`
	// RoundTrips (by server) and Fsyncs are per purchase, every phase.
	RoundTrips map[costmodel.Server]float64 `json:"round_trips"`
	Fsyncs     float64                      `json:"fsyncs"`
	// Critical is the critical path per purchase.
	Critical   costmodel.Path       `json:"critical_path"`
	Prediction costmodel.Prediction `json:"prediction"`
	// MeasuredOKPerS is the row's median ok/s; Ratio is it over the
	// predicted limit (nil without a prediction).
	MeasuredOKPerS float64  `json:"measured_ok_per_s"`
	Ratio          *float64 `json:"ratio,omitempty"`
	// Split is the predicted time split into wire, disk and server, and
	// what the measure leaves unexplained (nil without a prediction or a
	// sale).
	Split *CostSplit `json:"split,omitempty"`
	// Disagrees is set when Ratio is above 2 or below 1/2.
	Disagrees bool `json:"disagrees,omitempty"`
	// Steps are a lock's cycle step by step, the model's time beside the
	// measured (the runs' lock cycles, per purchase): absent for a row
	// without a lock or without a measured cycle.
	Steps []CostStep `json:"steps,omitempty"`
	// Loses names the step whose measured time exceeds the model's most,
	// when Ratio is below LosesBelow ("" otherwise).
	Loses string `json:"loses,omitempty"`
}

// LosesBelow is the measured/predicted ratio under which the report names
// the step of the lock's cycle that loses the most time.
const LosesBelow = 0.8

// CostStep is one step of a lock's cycle per purchase, in ms: the model's
// time for its phase of the critical path and the mean measured by the
// lock cycle (bench LockCycle), scaled by holds per purchase.
type CostStep struct {
	Step        string  `json:"step"`
	PredictedMS float64 `json:"predicted_ms"`
	MeasuredMS  float64 `json:"measured_ms"`
}

// lockSteps pairs the model's phases of a lock's critical path with the
// measured lock cycle: held (the read, the write and the commit under the
// lock), the release, and the handoff (the wake-up and the next holder's
// last acquire). nil without a measured cycle with its held split.
func lockSteps(p costmodel.Prediction, cycles []*LockCycle, purchases int) []CostStep {
	var held, release, handoff float64
	holds := 0
	for _, c := range cycles {
		if c == nil || c.ReadMS == nil || c.Holds == 0 {
			continue
		}
		n := float64(c.Holds)
		held += (c.ReadMS.Mean + c.WriteMS.Mean) * n
		release += c.ReleaseMS.Mean * n
		handoff += c.HandoffMS.Mean * n
		holds += c.Holds
	}
	if holds == 0 || purchases == 0 {
		return nil
	}
	per := float64(purchases)
	return []CostStep{
		{"held", p.ByPhase[costmodel.Held], held / per},
		{"release", p.ByPhase[costmodel.Release], release / per},
		{"handoff", p.ByPhase[costmodel.AcquireLast], handoff / per},
	}
}

// losing is the step whose measured time exceeds the model's most.
func losing(steps []CostStep) string {
	best, most := "", 0.0
	for _, st := range steps {
		if d := st.MeasuredMS - st.PredictedMS; d > most {
			best, most = st.Step, d
		}
	}
	return best
}

// CostSplit is a strategy's time per purchase on its critical path, in
// ms: the prediction's parts (the round trips at the RTT, the fsyncs, the
// servers' own idle time), and the measured time per purchase (1000 / the
// measured ok/s) less the prediction.
type CostSplit struct {
	WireMS        float64 `json:"wire_ms"`
	DiskMS        float64 `json:"disk_ms"`
	ServerMS      float64 `json:"server_ms"`
	PredictedMS   float64 `json:"predicted_ms"`
	MeasuredMS    float64 `json:"measured_ms"`
	UnexplainedMS float64 `json:"unexplained_ms"`
}

// costModel builds the model's rows from the runs that have counts.
func costModel(c CostConditions, runs []RunResult, sums []Summary) *CostModel {
	m := &CostModel{CostConditions: c}
	nameOf := runNamer(runs)
	cond := c.conditions()
	for _, s := range sums {
		counts, ok := costmodel.Snapshot{}, 0
		for _, r := range runs {
			if nameOf(r) == s.Name && r.Cost != nil {
				counts = counts.Add(r.Cost.Counts)
				ok += r.Cost.Purchases
			}
		}
		var cycles []*LockCycle
		for _, r := range runs {
			if nameOf(r) == s.Name && r.Cost != nil {
				cycles = append(cycles, r.LockCycle)
			}
		}
		rc := newRunCost(counts, ok, cond.Fsyncs)
		if rc == nil {
			continue
		}
		info, _ := catalog.Lookup(s.Strategy)
		locker := info.Kind == catalog.KindLocker
		row := CostRow{Name: s.Name, Strategy: s.Strategy, Path: "row", Purchases: ok, RoundTrips: rc.RoundTrips, Fsyncs: rc.Fsyncs,
			Critical: costmodel.CriticalPath(rc.PerPurchase, locker), MeasuredOKPerS: s.OKPerSec.Median}
		if locker {
			row.Path = "lock"
		}
		row.Prediction = costmodel.Predict(row.Critical, cond)
		if row.Prediction.LimitPerS > 0 && c.Error == "" {
			r := row.MeasuredOKPerS / row.Prediction.LimitPerS
			row.Ratio = &r
			row.Disagrees = r > 2 || r < 0.5
			if row.MeasuredOKPerS > 0 {
				p := row.Prediction
				measured := 1000 / row.MeasuredOKPerS
				row.Split = &CostSplit{WireMS: p.WireMS, DiskMS: p.DiskMS, ServerMS: p.ServerMS, PredictedMS: p.SerialMS,
					MeasuredMS: measured, UnexplainedMS: measured - p.SerialMS}
			}
			if locker {
				row.Steps = lockSteps(row.Prediction, cycles, ok)
				if r < LosesBelow {
					row.Loses = losing(row.Steps)
				}
			}
		}
		m.Rows = append(m.Rows, row)
	}
	return m
}

// costTable is the report's cost model table, with the notes that explain
// it and say where the model and the measure disagree.
func costTable(m *CostModel) (table, []string) {
	t := table{Title: "Cost model", Header: []string{"strategy", "round trips per purchase", "fsyncs", "critical path", "predicted serial limit /s", "predicted ms: wire + disk + server", "measured ms", "unexplained ms", "measured ok/s", "measured/predicted", "model"}}
	if m == nil || len(m.Rows) == 0 {
		return t, nil
	}
	var notes []string
	for _, r := range m.Rows {
		pred, ratio, verdict := "-", "-", "no serial section: the model sets no limit"
		if r.Prediction.LimitPerS > 0 {
			pred = fmt.Sprintf("%.0f", r.Prediction.LimitPerS)
			verdict = "prediction not priced: " + m.Error
		}
		if r.Ratio != nil {
			ratio = fmt.Sprintf("%.2f", *r.Ratio)
			verdict = "agrees within 2x"
			if r.Disagrees {
				verdict = "disagrees by more than 2x: a finding or a bug"
				notes = append(notes, disagreement(r))
			}
		}
		split, measured, unexplained := "-", "-", "-"
		if r.Prediction.SerialMS > 0 {
			p := r.Prediction
			split = fmt.Sprintf("%.2f = %.2f + %.2f + %.2f", p.SerialMS, p.WireMS, p.DiskMS, p.ServerMS)
			if len(p.ServerByServer) > 0 {
				split += " (" + serverFigures(p.ServerByServer) + ")"
			}
		}
		if r.Split != nil {
			measured, unexplained = fmt.Sprintf("%.2f", r.Split.MeasuredMS), fmt.Sprintf("%+.2f", r.Split.UnexplainedMS)
		}
		if r.Loses != "" {
			notes = append(notes, losesNote(r))
		}
		t.Rows = append(t.Rows, []string{r.Name, serverFigures(r.RoundTrips), fmt.Sprintf("%.2f", r.Fsyncs),
			fmt.Sprintf("%s: %.2f round trips (%s), %.2f fsyncs", r.Path, r.Prediction.RoundTrips, serverFigures(r.Critical.RoundTrips), r.Prediction.Fsyncs),
			pred, split, measured, unexplained, fmt.Sprintf("%.1f", r.MeasuredOKPerS), ratio, verdict})
		t.Bad = append(t.Bad, r.Disagrees)
	}
	fsyncs := "no server"
	if len(m.FsyncServers) > 0 {
		names := make([]string, len(m.FsyncServers))
		for i, s := range m.FsyncServers {
			names[i] = string(s)
		}
		fsyncs = strings.Join(names, ", ")
	}
	head := fmt.Sprintf("Cost model: the round trips and writes of every purchase are counted by the instances' own clients (GET /admin/cost) and divided by the successful purchases. "+
		"One holder at a time, a strategy sells at most 1 / (round trips × RTT + fsyncs × fsync + server time) per second over its critical path: for a lock, what is done while it is held, the release and the next holder's last acquire round trip (requests sent at once, as Redlock asks its masters, count as one); "+
		"for a strategy without a lock, the goods row's serial section (from the statement that locks the row to the commit). "+
		"Priced at RTT %.3f ms (%s) and fsync %.3f ms (median of %d write+fsync in %s); a write costs an fsync on %s at durability %s. "+
		"%s "+
		"The predicted time per purchase is split into wire (round trips × RTT), disk (fsyncs × fsync) and server; the unexplained time is the measured time per purchase (1000 / ok/s) less the predicted. "+
		"The model leaves out a loaded server's queueing, the instances' and the load generator's CPU, a server's group commit and the peer round trip of a quorum write.",
		m.RTTMS, m.RTTSource, m.FsyncMS, costProbes, m.FsyncDir, fsyncs, m.Durability, serverNote(m))
	return t, append([]string{head}, notes...)
}

// serverNote says what the server time was priced with.
func serverNote(m *CostModel) string {
	if len(m.ServerProbes) == 0 {
		return "No server time is priced: the fleet had no idle probes of its servers (seckill up measures them)."
	}
	var parts []string
	for _, s := range costmodel.Servers() {
		ops, ok := costmodel.OpsOf(s)
		probes := m.ServerProbes[s]
		if !ok || len(probes) == 0 {
			continue
		}
		var figs []string
		for _, op := range []costmodel.Op{ops.Read, ops.Write, ops.Release} {
			if ms, ok := probes[op]; ok && !slices.Contains(figs, fmt.Sprintf("%s %.3f", op, ms)) {
				figs = append(figs, fmt.Sprintf("%s %.3f", op, ms))
			}
		}
		parts = append(parts, fmt.Sprintf("%s %s", s, strings.Join(figs, ", ")))
	}
	return fmt.Sprintf("A step's server time is each of its reads and writes at the server's idle time for the operation it uses (a read, a write, and the release a waiter watches), "+
		"probed straight at the idle servers when the stack started, in ms: %s; less the %.3f ms loopback round trip and, for a write where the server fsyncs, the %.3f ms fsync measured with them.",
		strings.Join(parts, "; "), m.ProbeRTTMS, cmp.Or(m.ProbeFsyncMS, m.FsyncMS))
}

// disagreement says in words how r's measure and prediction disagree.
func disagreement(r CostRow) string {
	if *r.Ratio > 2 {
		return fmt.Sprintf("%s sold %.1f× the predicted serial limit (%.1f ok/s against %.0f): more than its critical path allows one holder at a time, so its purchases did not go one at a time through that path "+
			"(a lock that excludes nobody, an in-process lock per instance, a server that batches the fsyncs of several writes, a row lock released before the log is flushed) — a finding or a bug.",
			r.Name, *r.Ratio, r.MeasuredOKPerS, r.Prediction.LimitPerS)
	}
	return fmt.Sprintf("%s sold %.2f× the predicted serial limit (%.1f ok/s against %.0f): something besides its critical path limits it "+
		"(the machine's CPU, the load generator, wake-ups and retries of waiters, lock waits that time out) — a finding or a bug.",
		r.Name, *r.Ratio, r.MeasuredOKPerS, r.Prediction.LimitPerS)
}

// losesNote says, for a lock below LosesBelow of its model, which step of
// its cycle loses the most time, with every step's figures.
func losesNote(r CostRow) string {
	var parts []string
	var lost CostStep
	for _, st := range r.Steps {
		parts = append(parts, fmt.Sprintf("%s %.2f ms against %.2f", st.Step, st.MeasuredMS, st.PredictedMS))
		if st.Step == r.Loses {
			lost = st
		}
	}
	return fmt.Sprintf("%s sold %.2f of its model: the step of the lock's cycle that loses the most time is the %s, %.2f ms per purchase measured against %.2f predicted (%s: %s; lock cycle, per purchase, measured against the model).",
		r.Name, *r.Ratio, r.Loses, lost.MeasuredMS, lost.PredictedMS, stepWords[r.Loses], strings.Join(parts, ", "))
}

// stepWords says what each step of a lock's cycle is.
var stepWords = map[string]string{
	"held":    "the read, the write and the commit under the lock",
	"release": "the release, a write a waiter watches",
	"handoff": "the wake-up of the next holder and its last acquire",
}

// serverFigures renders per-server figures as "redis 2.00 + mysql 5.00".
func serverFigures(m map[costmodel.Server]float64) string {
	var parts []string
	for _, s := range costmodel.Servers() {
		if v, ok := m[s]; ok && v >= 0.005 {
			parts = append(parts, fmt.Sprintf("%s %.2f", s, v))
		}
	}
	if len(parts) == 0 {
		return "0"
	}
	return strings.Join(parts, " + ")
}
