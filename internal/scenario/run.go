package scenario

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/seckill-lab/seckill/bench"
	"github.com/seckill-lab/seckill/bench/confidence"
	"github.com/seckill-lab/seckill/bench/fleet"
	"github.com/seckill-lab/seckill/stock"
	"github.com/seckill-lab/seckill/stock/catalog"
)

// Options of Run. Zero values take the defaults given.
type Options struct {
	// Dir is the local stack's run directory (faults need it).
	Dir   string
	Fleet fleet.Fleet
	// Strategies overrides the scenario's; Protections defaults to all.
	Strategies  []string
	Protections []Protection
	// Repeat runs each row this many times (default 1); Seed seeds the
	// load (default 1; repeat r uses Seed+r).
	Repeat int
	Seed   int64
	// Short runs the scenario's short load (the tests').
	Short bool
	// OutDir receives scenario.json, .md and .html and each run's bench
	// reports; "" writes nothing.
	OutDir   string
	Progress io.Writer
	// MustNotOversell are protections under which an oversell fails the
	// verdict too, beyond fencing's (which always does): the grader's
	// (internal/grade) for a lock the exercise requires to be safe
	// unprotected. Default none: an unprotected or lease-checked run that
	// oversells is the story, not a failure.
	MustNotOversell []Protection
	// LockWait, when set, replaces the load's lock wait: the grader's
	// bound on how long a purchase waits for a lock that a fault left
	// held, so that a lock that never frees costs the run seconds, not
	// minutes. Default 0: the scenario's own.
	LockWait time.Duration
}

// config is the service's setting for load under protection p.
func (l Load) config(p Protection) stock.Config {
	return stock.Config{WorkDelay: l.WorkDelay, LockTTL: l.LockTTL, LockWait: l.LockWait, NoWatchdog: l.NoWatchdog,
		Fencing: p == ProtectFencing, NoLeaseCheck: p != ProtectLeaseCheck}
}

// Row is one strategy under one protection, over the repeats.
type Row struct {
	Strategy   string     `json:"strategy"`
	Protection Protection `json:"protection"`
	Runs       int        `json:"runs"`
	// RunsOversold counts the runs that oversold; Oversold and the other
	// counts are summed over the runs.
	RunsOversold int `json:"runs_oversold"`
	Oversold     int `json:"oversold"`
	LostUpdates  int `json:"lost_updates"`
	StaleRefused int `json:"stale_refused"`
	LeaseLost    int `json:"lease_lost"`
	OKWithout    int `json:"ok_without_order"` // 2xx answers with no order
	// RunsTwoHolders counts the runs that show two holders' writes: an
	// oversell or a lost update (a stale holder's write over another's).
	RunsTwoHolders int `json:"runs_two_holders"`
	// RunsMostlyErrors counts the runs in which most purchases got an
	// error (5xx, a transport error): such a run proves nothing.
	RunsMostlyErrors int            `json:"runs_mostly_errors,omitempty"`
	Errors           map[string]int `json:"errors"` // outcomes other than ok and sold_out
	Strikes          int            `json:"strikes"`
	// LongestGapS is the longest time without a sale in any run (the
	// outage buyers saw).
	LongestGapS float64 `json:"longest_gap_without_sale_s"`
	// SalesStoppedS is the longest time in any run from a strike to the
	// next sale (bench.RunResult.SalesStoppedS); SalesNeverResumed, that
	// in some run none came before the run ended.
	SalesStoppedS     float64 `json:"sales_stopped_after_strike_s"`
	SalesNeverResumed bool    `json:"sales_never_resumed,omitempty"`
	// OKPerSec are the medians over the runs of the ok/s before, during
	// and after the strikes; -1 when no run had that window long enough to
	// give a rate (bench.MinWindow).
	OKPerSec     [3]float64 `json:"ok_per_s_before_during_after"`
	Reports      []string   `json:"reports,omitempty"`
	okPerSecRuns [3][]float64
}

// Result is a scenario's outcome.
type Result struct {
	Scenario string    `json:"scenario"`
	Seed     string    `json:"seed_passage"`
	Story    string    `json:"story"`
	Predicts string    `json:"predicts"`
	Date     time.Time `json:"date"`
	Load     string    `json:"load"`
	Rows     []Row     `json:"rows"`
	// Failures are the verdict's reasons: a fenced strategy that oversold,
	// a 2xx without its order.
	Failures []string `json:"failures"`
	WallS    float64  `json:"wall_s"`
}

// ErrFailed is returned (with the Result) when the verdict fails.
var ErrFailed = errors.New("scenario failed")

// Run runs sc: every strategy under every protection, Repeat times.
func Run(ctx context.Context, sc Scenario, o Options) (*Result, error) {
	began := time.Now()
	if o.Repeat <= 0 {
		o.Repeat = 1
	}
	if o.Seed == 0 {
		o.Seed = 1
	}
	if len(o.Protections) == 0 {
		o.Protections = Protections()
	}
	if len(o.Strategies) == 0 {
		o.Strategies = sc.Strategies
	}
	load := sc.Load
	if o.Short {
		load = sc.Short
	}
	if o.LockWait > 0 {
		load.LockWait = o.LockWait
	}
	res := &Result{Scenario: sc.Name, Seed: sc.Seed, Story: sc.Story, Predicts: sc.Predicts, Date: began.UTC(),
		Load: fmt.Sprintf("%d purchases of a stock of %d, %d at a time, work %s, lock TTL %s, lock wait %s",
			load.Requests, load.Stock, load.Concurrency, load.WorkDelay, load.LockTTL, load.LockWait)}
	for _, name := range o.Strategies {
		info, ok := catalog.Lookup(name)
		if !ok || info.Kind != catalog.KindLocker {
			return nil, fmt.Errorf("strategy %q: a scenario runs lockers only", name)
		}
		for _, p := range o.Protections {
			if p == ProtectFencing && !info.Tokens {
				continue // no tokens to fence with: the row would say nothing
			}
			row := Row{Strategy: name, Protection: p, Errors: map[string]int{}}
			for r := 1; r <= o.Repeat; r++ {
				goods := goodsBase(sc.Name) + int64(r)
				bo := bench.Options{
					Strategies: []string{name}, Stock: load.Stock, Requests: load.Requests, Concurrency: load.Concurrency,
					Config: load.config(p),
					Seed:   o.Seed + int64(r), GoodsID: goods, Fleet: o.Fleet, CalibrateRequests: -1,
					// A scenario measures correctness under a strike, not speed: no warm-up.
					Warmup:  -1,
					Striker: sc.Strike(o.Dir, info, goods), Progress: o.Progress,
					CommandLine: []string{"seckill", "scenario", "run", sc.Name},
				}
				if o.OutDir != "" {
					bo.OutDir = filepath.Join(o.OutDir, fmt.Sprintf("%s-%s-%d", name, p, r))
					row.Reports = append(row.Reports, filepath.Base(bo.OutDir)+"/report.html")
				}
				if sc.Prepare != nil {
					if err := sc.Prepare(ctx, o.Dir); err != nil {
						return res, fmt.Errorf("%s, %s, run %d: prepare: %w", name, p, r, err)
					}
				}
				rep, err := bench.Run(ctx, bo)
				if err != nil {
					return res, fmt.Errorf("%s, %s, run %d: %w", name, p, r, err)
				}
				row.add(rep.Runs[0])
			}
			row.finish()
			res.Rows = append(res.Rows, row)
		}
	}
	res.Failures = failures(res.Rows, o.MustNotOversell)
	res.WallS = time.Since(began).Seconds()
	if o.OutDir != "" {
		if err := write(o.OutDir, res); err != nil {
			return res, err
		}
	}
	if len(res.Failures) > 0 {
		return res, fmt.Errorf("%w: %s", ErrFailed, strings.Join(res.Failures, "; "))
	}
	return res, nil
}

// failures are the rows' failures: a fenced row, or one of a protection
// in mustNot, that oversold; runs that lost most of their purchases to
// errors; 2xx answers without an order. Each count of runs has its 95 %
// interval beside it.
func failures(rows []Row, mustNot []Protection) []string {
	var out []string
	for _, r := range rows {
		if r.Protection == ProtectFencing && r.Oversold > 0 {
			out = append(out, fmt.Sprintf("%s with fencing oversold %d in %d of %d runs (%s)",
				r.Strategy, r.Oversold, r.RunsOversold, r.Runs, confidence.Interval(r.RunsOversold, r.Runs)))
		} else if slices.Contains(mustNot, r.Protection) && r.Oversold > 0 {
			out = append(out, fmt.Sprintf("%s (%s) oversold %d in %d of %d runs (%s), where it must not",
				r.Strategy, r.Protection, r.Oversold, r.RunsOversold, r.Runs, confidence.Interval(r.RunsOversold, r.Runs)))
		}
		if r.RunsMostlyErrors > 0 {
			out = append(out, fmt.Sprintf("%s (%s): %d of %d runs (%s) lost most of their purchases to errors, so they prove nothing",
				r.Strategy, r.Protection, r.RunsMostlyErrors, r.Runs, confidence.Interval(r.RunsMostlyErrors, r.Runs)))
		}
		if r.OKWithout > 0 {
			out = append(out, fmt.Sprintf("%s (%s): %d answers of 2xx have no order", r.Strategy, r.Protection, r.OKWithout))
		}
	}
	return out
}

func (r *Row) add(run bench.RunResult) {
	r.Runs++
	if run.Oversold > 0 {
		r.RunsOversold++
	}
	if run.Oversold > 0 || run.LostUpdates > 0 {
		r.RunsTwoHolders++
	}
	r.Oversold += run.Oversold
	r.LostUpdates += run.LostUpdates
	r.StaleRefused += run.Outcomes[bench.OutcomeStaleLock]
	r.LeaseLost += run.Outcomes[bench.OutcomeLeaseLost]
	for k, v := range run.Outcomes {
		if k != bench.OutcomeOK && k != bench.OutcomeSoldOut {
			r.Errors[k] += v
		}
	}
	for _, inv := range run.Invariants {
		if inv.Name == bench.InvOKHasOrder && !inv.Pass {
			r.OKWithout += inv.Count
		}
	}
	if answered := sum(run.Outcomes); answered > 0 && 2*run.Outcomes[bench.OutcomeError] > answered {
		r.RunsMostlyErrors++
	}
	r.Strikes += len(run.Strikes)
	r.LongestGapS = max(r.LongestGapS, run.LongestGapS)
	r.SalesStoppedS = max(r.SalesStoppedS, run.SalesStoppedS)
	r.SalesNeverResumed = r.SalesNeverResumed || run.SalesNeverResumed
	for i, w := range run.Windows {
		if i < 3 && !w.TooShort {
			r.okPerSecRuns[i] = append(r.okPerSecRuns[i], w.OKPerSec)
		}
	}
}

func (r *Row) finish() {
	for i, vs := range r.okPerSecRuns {
		r.OKPerSec[i] = -1
		if len(vs) > 0 {
			sort.Float64s(vs)
			r.OKPerSec[i] = vs[len(vs)/2]
		}
	}
}

// header and cells are the scenario table's, shared by every rendering.
var header = []string{"strategy", "protection", "runs", "oversold in", "95 % interval", "units oversold", "lost updates", "stale refused", "lease_lost", "2xx without order", "other outcomes", "strikes", "longest gap s", "ok/s before", "during", "after"}

func (r Row) cells() []string {
	var errs []string
	for _, k := range sortedKeys(r.Errors) {
		if k != bench.OutcomeStaleLock && k != bench.OutcomeLeaseLost && r.Errors[k] > 0 {
			errs = append(errs, fmt.Sprintf("%s=%d", k, r.Errors[k]))
		}
	}
	if len(errs) == 0 {
		errs = []string{"-"}
	}
	return []string{r.Strategy, string(r.Protection), fmt.Sprint(r.Runs), fmt.Sprintf("%d of %d runs", r.RunsOversold, r.Runs),
		cmp.Or(confidence.Range(r.RunsOversold, r.Runs), "-"), fmt.Sprint(r.Oversold),
		fmt.Sprint(r.LostUpdates), fmt.Sprint(r.StaleRefused), fmt.Sprint(r.LeaseLost), fmt.Sprint(r.OKWithout),
		strings.Join(errs, " "), fmt.Sprint(r.Strikes), fmt.Sprintf("%.1f", r.LongestGapS),
		rate(r.OKPerSec[0]), rate(r.OKPerSec[1]), rate(r.OKPerSec[2])}
}

// rate prints an ok/s median, "-" when there was none.
func rate(v float64) string {
	if v < 0 {
		return "-"
	}
	return fmt.Sprintf("%.1f", v)
}

func sortedKeys(m map[string]int) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}

// WriteTable prints the result as a table, then the verdict.
func WriteTable(w io.Writer, res *Result) error {
	fmt.Fprintf(w, "%s (%s)\n  story:    %s\n  predicts: %s\n  load:     %s\n\n", res.Scenario, res.Seed, res.Story, res.Predicts, res.Load)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, strings.Join(header, "\t"))
	for _, r := range res.Rows {
		fmt.Fprintln(tw, strings.Join(r.cells(), "\t"))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintln(w)
	for _, p := range res.protections() {
		fmt.Fprintf(w, "  %s\n", Meaning[p])
	}
	if len(res.Failures) == 0 {
		_, err := fmt.Fprintf(w, "\nverdict: ok (no fenced strategy oversold, every 2xx has its order%s); %.0f s\n", res.ruleOut("; "), res.WallS)
		return err
	}
	_, err := fmt.Fprintf(w, "\nverdict: FAILED: %s\n", strings.Join(res.Failures, "; "))
	return err
}

func write(dir string, res *Result) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("create %s: %w", dir, err)
	}
	js, err := json.MarshalIndent(res, "", "  ")
	if err != nil {
		return err
	}
	var md strings.Builder
	fmt.Fprintf(&md, "# Scenario %s\n\n- source: %s\n- story: %s\n- predicts: %s\n- load: %s\n- date: %s, %.0f s\n\n",
		res.Scenario, res.Seed, res.Story, res.Predicts, res.Load, res.Date.Format(time.RFC3339), res.WallS)
	md.WriteString("| " + strings.Join(header, " | ") + " |\n|" + strings.Repeat("---|", len(header)) + "\n")
	for _, r := range res.Rows {
		md.WriteString("| " + strings.Join(r.cells(), " | ") + " |\n")
	}
	md.WriteString("\n")
	for _, p := range res.protections() {
		md.WriteString("- " + Meaning[p] + "\n")
	}
	if len(res.Failures) > 0 {
		md.WriteString("\n**Verdict: failed.** " + strings.Join(res.Failures, "; ") + "\n")
	} else {
		md.WriteString("\n**Verdict: ok.** No fenced strategy oversold; every 2xx has its order" + res.ruleOut("; ") + ".\n")
	}
	html, err := renderHTML(res)
	if err != nil {
		return err
	}
	for name, b := range map[string][]byte{"scenario.json": append(js, '\n'), "scenario.md": []byte(md.String()), "scenario.html": html} {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			return fmt.Errorf("write %s: %w", name, err)
		}
	}
	return nil
}

// sum adds up counts.
func sum(counts map[string]int) int {
	n := 0
	for _, v := range counts {
		n += v
	}
	return n
}

// ruleOut is what an ok verdict, which rests on 0 oversold in each row's
// runs, can claim: sep and "each row's 3 runs rule out only rates above
// 71 %" (the fewest runs of a row); "" without rows.
func (res *Result) ruleOut(sep string) string {
	n := 0
	for _, r := range res.Rows {
		if r.Runs > 0 && (n == 0 || r.Runs < n) {
			n = r.Runs
		}
	}
	if n == 0 {
		return ""
	}
	return sep + "each row's " + confidence.RuleOut(n, "run")
}

// protections are the protections of res's rows, in order, once each.
func (res *Result) protections() []Protection {
	var out []Protection
	for _, p := range Protections() {
		for _, r := range res.Rows {
			if r.Protection == p {
				out = append(out, p)
				break
			}
		}
	}
	return out
}
