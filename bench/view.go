package bench

import (
	"fmt"
	"slices"
	"strings"

	"github.com/seckill-lab/seckill/bench/fleet"
	"github.com/seckill-lab/seckill/lockimpl"
)

// view is the one model both report.md and report.html are rendered from,
// so a figure cannot be in one and not in the other.
type view struct {
	Title string
	Facts []fact // the run's setting, one line each
	Main  table  // the comparison, one row per strategy
	// Conclusion is what the run found, in prose (Conclusion), under Main.
	Conclusion string
	Tables     []table  // further sections: runs, fault windows
	Failed     []string // failed invariants, one line each
	Notes      []string // sentences under the tables
}

type fact struct{ Label, Value string }

// table is a titled table; Bad marks the rows to highlight.
type table struct {
	Title  string
	Header []string
	Rows   [][]string
	Bad    []bool
}

func buildView(rep *Report) view {
	v := view{Title: "seckill bench", Facts: reportFacts(rep)}
	v.Main = table{Title: "Comparison", Header: tableHeader, Rows: tableRows(rep.Summary)}
	v.Conclusion = Conclusion(rep)
	for _, s := range rep.Summary {
		v.Main.Bad = append(v.Main.Bad, s.InvariantsPassed < s.InvariantsTotal || s.Oversold.Max > 0)
	}

	repeats := 0
	for _, s := range rep.Summary {
		repeats = max(repeats, s.Repeats)
	}
	if repeats > 1 {
		v.Notes = append(v.Notes, fmt.Sprintf("Figures over repeats are the median of the %d rounds with min–max in parentheses.", repeats))
	}
	v.Tables = append(v.Tables, sweepTables(rep.Sweep)...)
	if rep.Sweep != nil {
		v.Notes = append(v.Notes, fmt.Sprintf("The sweep runs each strategy at %s clients in turn (closed model, the same requests at every point). The scaling ratio is a correct lock's ok/s at the most clients over its ok/s at the fewest; the target is >= %.1f.",
			strings.Trim(strings.Join(strings.Fields(fmt.Sprint(rep.Sweep.Clients)), ", "), "[]"), rep.Sweep.TargetRatio))
	}
	v.section(queueTable(rep.Summary), "Local queue on and off: each distributed lock ran in every round with the service's in-process queue in front of the lock server (the default) and without it (\"NAME (no queue)\"), where every waiter contends at the server.")

	nameOf := runNamer(rep.Runs)
	v.Tables = append(v.Tables, runsTable(rep.Runs, nameOf))
	v.section(backendTable(rep.Runs), "Redlock rounds: each acquisition round asks every master at once. A failed quorum round (split) won some masters but not a majority, gave them back and retried: the votes split between contenders. Taken: every master that answered was held by another owner.")
	costs, costNotes := costTable(rep.CostModel)
	v.section(costs, costNotes...)
	v.section(lockCycleTable(rep.Runs), lockCycleNote)
	v.section(orderQueueTable(rep.Runs), orderQueueNote)
	v.section(cpuTable(rep.Runs), cpuNote)
	v.section(windowsTable(rep.Runs), "Fault windows count each purchase by the time its answer came back: before the first fault starts, while a fault lasts, and after the last one ends. ok/s is successful purchases per second of the window.")
	for _, r := range rep.Runs {
		for _, inv := range r.Invariants {
			if inv.Failed() {
				v.Failed = append(v.Failed, fmt.Sprintf("%s #%d: %s failed (count %d): %s", nameOf(r), r.Repeat, inv.Name, inv.Count, inv.Detail))
			}
		}
	}
	return v
}

// section adds t and its notes when t has rows.
func (v *view) section(t table, notes ...string) {
	if len(t.Rows) > 0 {
		v.Tables = append(v.Tables, t)
		v.Notes = append(v.Notes, notes...)
	}
}

// reportFacts are the run's setting: where and how it ran, the load, the
// ceilings it is measured against, and its wall time.
func reportFacts(rep *Report) []fact {
	e := rep.Environment
	facts := []fact{
		{"date", rep.Date.Format("2006-01-02 15:04:05 MST")},
		{"command", rep.CommandLine},
		{"environment", fmt.Sprintf("%s %s/%s, %d CPUs, host %s", e.GoVersion, e.OS, e.Arch, e.CPUs, e.Hostname)},
		{"durability", durabilityFact(e)},
		{"round trip", rttFact(e.RTT)},
		{"mode", modeFact(e.Mode)},
		{"fleet", fleetFact(e)},
	}
	if len(rep.Skipped) > 0 {
		facts = append(facts, fact{"skipped", SkippedLine(rep.Skipped)})
	}
	if sv := servicesFact(rep.Runs); sv != "" {
		facts = append(facts, fact{"services", sv})
	}
	if len(rep.Runs) > 0 {
		facts = append(facts, loadFacts(rep)...)
	}
	if rep.CeilingRPS > 0 {
		facts = append(facts, fact{"generator ceiling", fmt.Sprintf("%.0f req/s (%.1fx the best throughput; want >= %.0fx)", rep.CeilingRPS, rep.CeilingRatio, MinCeilingRatio)})
	}
	if c := rep.DBCeiling; c != nil {
		facts = append(facts, fact{"database ceiling", fmt.Sprintf("%.0f purchase transactions/s (%s); the \"of DB\" column is each strategy's ok/s over it", c.TPS, c.describe())})
	}
	if len(rep.Order) > 0 {
		facts = append(facts, fact{"order", orderFact(rep.Order)})
	}
	if rep.Warmup > 0 {
		facts = append(facts, fact{"warm-up", fmt.Sprintf("%d purchases on a goods of their own before each strategy's first run, counted nowhere", rep.Warmup)})
	}
	facts = append(facts, fact{"wall time", fmt.Sprintf("%.1f s", rep.WallS)})
	if f := checksFact(rep); f != "" {
		facts = append(facts, fact{"checks", f})
	}
	return facts
}

// checksFact says what the checks cost (the slowest run's), the bench's
// peak memory, and which checks were left undecided and why; "" for a
// report without them (one written before they were measured).
func checksFact(rep *Report) string {
	var worst, lin float64
	var undecided []string
	for _, run := range rep.Runs {
		worst, lin = max(worst, run.ChecksMS), max(lin, run.LinearizabilityMS)
		for _, inv := range run.Invariants {
			if inv.Undecided {
				undecided = append(undecided, fmt.Sprintf("%s of %s: %s", inv.Name, run.Label(), inv.Detail))
			}
		}
	}
	if worst == 0 && rep.PeakRSSMB == 0 {
		return ""
	}
	out := fmt.Sprintf("the history and lock-evidence checks took at most %.0f ms in one run (linearizability at most %.0f ms)", worst, lin)
	if rep.PeakRSSMB > 0 {
		out += fmt.Sprintf("; the bench's peak resident memory %.0f MB", rep.PeakRSSMB)
	}
	if len(undecided) > 0 {
		out += "; undecided: " + strings.Join(undecided, "; ")
	}
	return out
}

// sweptClients lists a sweep's client counts: "1, 10, 50".
func sweptClients(rep *Report) string {
	cs := make([]string, len(rep.Sweep.Clients))
	for i, c := range rep.Sweep.Clients {
		cs[i] = fmt.Sprint(c)
	}
	return strings.Join(cs, ", ")
}

// loadFacts are the load of the first run (the others share it): the
// requests, the concurrency or the sweep's, the faults, and which
// strategies sold in batches.
func loadFacts(rep *Report) []fact {
	r := rep.Runs[0]
	conc := fmt.Sprintf("concurrency %d", r.Concurrency)
	if rep.Sweep != nil {
		conc = "concurrency swept over " + sweptClients(rep) + " clients"
	}
	facts := []fact{{"load", fmt.Sprintf("%d requests of qty %d on a stock of %d, %s, rate %s, work delay %s, lock TTL %s, fencing %v, seed %d",
		r.Requests, r.Qty, r.InitialStock, conc, rateString(r.Rate), r.Setting().WorkDelay, r.Setting().LockTTL, r.Setting().Fencing, r.Seed)}}
	if len(r.Faults) > 0 {
		facts = append(facts, fact{"faults", strings.Join(r.Faults, ", ")})
	}
	var batched []string
	for _, r := range rep.Runs {
		if b := r.Setting().Batch; b > 0 && r.Repeat <= 1 {
			batched = append(batched, fmt.Sprintf("%s B=%d", r.Strategy, b))
		}
	}
	if len(batched) > 0 {
		facts = append(facts, fact{"batch", "purchases sold per lock hold and transaction, at most: " + strings.Join(batched, ", ") + " (other strategies unbatched)"})
	}
	return facts
}

// runsTable lists every run: its outcomes, the audit's counts, sales per
// instance and latency; an oversold run is marked.
func runsTable(rs []RunResult, nameOf func(RunResult) string) table {
	runs := table{Title: "Runs", Header: []string{"run", "ok", "sold_out", "lock_timeout", "stale_lock", "lease_lost", "errors",
		"orders", "sold", "final", "oversold", "lost", "sales per instance", "p90 ms", "max ms", "s"}}
	for _, r := range rs {
		var sales []string
		for _, k := range sortedKeys(r.SalesPerInstance) {
			sales = append(sales, fmt.Sprintf("%s=%d", k, r.SalesPerInstance[k]))
		}
		runs.Rows = append(runs.Rows, []string{fmt.Sprintf("%s #%d", nameOf(r), r.Repeat),
			fmt.Sprint(r.OK), fmt.Sprint(r.Outcomes[OutcomeSoldOut]), fmt.Sprint(r.Outcomes[OutcomeLockTimeout]),
			fmt.Sprint(r.Outcomes[OutcomeStaleLock]), fmt.Sprint(r.Outcomes[OutcomeLeaseLost]), fmt.Sprint(r.Outcomes[OutcomeError]),
			fmt.Sprint(r.Orders), fmt.Sprint(r.SoldQty), fmt.Sprint(r.FinalStock), fmt.Sprint(r.Oversold), fmt.Sprint(r.LostUpdates),
			strings.Join(sales, " "), fmt.Sprintf("%.1f", r.LatencyMS.P90), fmt.Sprintf("%.1f", r.LatencyMS.Max), fmt.Sprintf("%.2f", r.DurationS)})
		runs.Bad = append(runs.Bad, r.Oversold > 0)
	}
	return runs
}

// windowsTable lists, for the runs that had faults, the throughput and
// outcomes before, during and after them.
func windowsTable(runs []RunResult) table {
	t := table{Title: "Before, during and after the fault", Header: []string{"run", "window", "from s", "to s", "answered", "ok", "ok/s", "answers/s", "outcomes"}}
	for _, r := range runs {
		for _, w := range r.Windows {
			var outs []string
			for _, k := range sortedKeys(w.Outcomes) {
				outs = append(outs, fmt.Sprintf("%s=%d", k, w.Outcomes[k]))
			}
			t.Rows = append(t.Rows, []string{fmt.Sprintf("%s #%d", r.Strategy, r.Repeat), w.Name,
				fmt.Sprintf("%.1f", w.FromS), fmt.Sprintf("%.1f", w.ToS), fmt.Sprint(w.Answered), fmt.Sprint(w.OK),
				fmt.Sprintf("%.1f", w.OKPerSec), fmt.Sprintf("%.1f", w.AnswersPerSec), strings.Join(outs, " ")})
			t.Bad = append(t.Bad, false)
		}
	}
	return t
}

// markdown renders v.
func (v view) markdown() []byte {
	var b strings.Builder
	fmt.Fprintf(&b, "# %s, %s\n\n", v.Title, v.Facts[0].Value)
	for _, f := range v.Facts[1:] {
		val := f.Value
		if f.Label == "command" {
			val = "`" + val + "`"
		}
		fmt.Fprintf(&b, "- %s: %s\n", f.Label, val)
	}
	b.WriteString("\n")
	writeMDTable(&b, v.Main)
	if v.Conclusion != "" {
		fmt.Fprintf(&b, "\n%s\n", v.Conclusion)
	}
	for _, t := range v.Tables {
		fmt.Fprintf(&b, "\n## %s\n\n", t.Title)
		writeMDTable(&b, t)
	}
	for _, n := range v.Notes {
		fmt.Fprintf(&b, "\n%s\n", n)
	}
	if len(v.Failed) > 0 {
		b.WriteString("\n## Failed invariants\n\n")
		for _, f := range v.Failed {
			fmt.Fprintf(&b, "- %s\n", f)
		}
	}
	return []byte(b.String())
}

func writeMDTable(b *strings.Builder, t table) {
	b.WriteString("| " + strings.Join(t.Header, " | ") + " |\n|")
	for range t.Header {
		b.WriteString("---|")
	}
	b.WriteString("\n")
	for _, r := range t.Rows {
		b.WriteString("| " + strings.Join(r, " | ") + " |\n")
	}
}

// backendTable lists the lock backends' counts per run (Redlock's rounds
// by outcome), with the failed quorum rounds per sale.
func backendTable(runs []RunResult) table {
	t := table{Title: "Redlock rounds", Header: []string{"run", "rounds", "acquired", "taken", "failed quorum (split)", "unreachable", "split per sale"}}
	for _, r := range runs {
		e := r.BackendEvents
		if len(e) == 0 {
			continue
		}
		split := e[lockimpl.RoundSplit]
		total := e[lockimpl.RoundAcquired] + e[lockimpl.RoundTaken] + split + e[lockimpl.RoundUnreachable]
		if total == 0 {
			continue // another backend's counts (the flawed locks' deletions)
		}
		per := "-"
		if r.OK > 0 {
			per = fmt.Sprintf("%.2f", split/float64(r.OK))
		}
		t.Rows = append(t.Rows, []string{fmt.Sprintf("%s #%d", r.Strategy, r.Repeat), fmt.Sprintf("%.0f", total),
			fmt.Sprintf("%.0f", e[lockimpl.RoundAcquired]), fmt.Sprintf("%.0f", e[lockimpl.RoundTaken]), fmt.Sprintf("%.0f", split),
			fmt.Sprintf("%.0f", e[lockimpl.RoundUnreachable]), per})
		t.Bad = append(t.Bad, false)
	}
	return t
}

// fleetFact says what the lab's fleet was, if any.
func fleetFact(e Environment) string {
	if e.Target == "" && e.Instances == 0 {
		return "none of the lab's: the services alone"
	}
	return fmt.Sprintf("%d instances behind %s", e.Instances, e.Target)
}

// servicesFact names the services the runs loaded through the contract
// alone, and what their rows lack and why (ServiceNote); "" when none.
func servicesFact(runs []RunResult) string {
	var names []string
	for _, r := range runs {
		if n := r.Strategy + " at " + r.ServiceURL; r.ServiceURL != "" && !slices.Contains(names, n) {
			names = append(names, n)
		}
	}
	if len(names) == 0 {
		return ""
	}
	return strings.Join(names, ", ") + ": " + ServiceNote
}

// durabilityFact says what the servers' durability level means, for the
// report's facts.
func durabilityFact(e Environment) string {
	if e.DurabilityMeans == "" {
		return e.Durability + " (the fleet did not say what its servers make durable)"
	}
	return e.Durability + ": " + e.DurabilityMeans
}

// rttFact says the round trip the links added, for the report's facts.
func rttFact(r fleet.RTT) string {
	if r == (fleet.RTT{}) {
		return "none added (the links are this machine's loopback, or a fleet started elsewhere that did not say; seckill up --rtt)"
	}
	name := r.Profile
	if name == "" {
		name = "custom"
	}
	return fmt.Sprintf("%s: %.3f ms requested, %.3f ms measured through the links (%.3f ms without them) (seckill up --rtt)", name, r.RequestedMS, r.MeasuredMS, r.DirectMS)
}

// SkippedLine says which strategies Mode lock skipped and why.
func SkippedLine(skipped []string) string {
	return strings.Join(skipped, ", ") + ": " + NotALock + " (seckill bench --mode lock runs the locks of the list)"
}

// modeFact says what the critical section did, for the report's facts.
func modeFact(mode string) string {
	if mode == ModeLock {
		return "lock alone: the critical section reads and writes a Redis counter on a direct link (counterstore.Store), no database transaction: the figures rank the locks (seckill bench --mode)"
	}
	return "purchase: the critical section is the database transaction (read the stock, write it, insert the order, commit): the figures rank whole purchases (seckill bench --mode lock ranks the locks alone)"
}
