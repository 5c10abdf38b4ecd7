package nemesis

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"github.com/seckill-lab/seckill/bench"
	"github.com/seckill-lab/seckill/internal/stack"
	"github.com/seckill-lab/seckill/stock"
	"github.com/seckill-lab/seckill/stock/catalog"
)

// Options of Run. Zero values take the defaults given.
type Options struct {
	// Dir is the running ha stack's directory (required).
	Dir string
	// Strategy is the lock the purchases run under. Default redis.
	Strategy string
	// Fencing turns the strategy's fencing tokens on (catalog.Strategy.Tokens).
	Fencing bool
	// For is how long the load runs. Default 10m.
	For time.Duration
	// Seed draws the schedule. Default 1.
	Seed int64
	// Every is the mean time between two faults' starts. Default 15s.
	Every time.Duration
	// Rate is purchases per second. Default 40.
	Rate int
	// Resend is how many times a purchase without a definite answer is
	// sent again (bench.Options.Resend). Default DefaultResend.
	Resend int
	// RequestTimeout is each try's limit. Default 10s.
	RequestTimeout time.Duration
	// PauseHolder turns every planned pause of an instance into a pause
	// of the instance that holds the goods' lock when it begins (the next
	// one to read the stock under it, awaited up to HolderWait) for the
	// lock's TTL plus HolderOvershoot: the stop-the-world pause of the
	// sources' fencing story, which lets the lock expire under its holder
	// before it writes what it read. The lock's TTL is then HolderTTL
	// (3 s), so the pause ends before the client gives up, and each
	// purchase works HolderWork between its stock read and its write
	// (stock.Config.WorkDelay), so the pause lands inside the section it
	// was aimed at, and the lease check is off (stock.Config.NoLeaseCheck),
	// so only fencing stands between the resumed holder's stale write and
	// the stock. The schedule is the same; only those pauses' targets and
	// lengths change. Default off.
	PauseHolder bool
	// GoodsID is the goods sold. Default 910001.
	GoodsID int64
	// OutDir receives nemesis.json, nemesis.md, nemesis.svg and the
	// bench's report (bench/). Required.
	OutDir   string
	Progress io.Writer
}

// DefaultResend is Options.Resend's default: with bench's waits (100 ms
// doubling to 2 s) a purchase is given up after about 35 s of waits.
const DefaultResend = 20

// ErrInvalid wraps a bad option.
var ErrInvalid = errors.New("invalid nemesis options")

func (o *Options) defaults() error {
	if o.Strategy == "" {
		o.Strategy = catalog.Redis
	}
	if o.For == 0 {
		o.For = 10 * time.Minute
	}
	if o.Seed == 0 {
		o.Seed = 1
	}
	if o.Every == 0 {
		o.Every = 15 * time.Second
	}
	if o.Rate == 0 {
		o.Rate = 40
	}
	if o.Resend == 0 {
		o.Resend = DefaultResend
	}
	if o.RequestTimeout == 0 {
		o.RequestTimeout = 10 * time.Second
	}
	if o.GoodsID == 0 {
		o.GoodsID = 910_001
	}
	info, ok := catalog.Lookup(o.Strategy)
	switch {
	case o.Dir == "" || o.OutDir == "":
		return fmt.Errorf("%w: the stack's directory and an output directory are required", ErrInvalid)
	case !ok:
		return fmt.Errorf("%w: unknown strategy %q; valid: %s", ErrInvalid, o.Strategy, strings.Join(catalog.StrategyNames(), ", "))
	case o.Fencing && !info.Tokens:
		return fmt.Errorf("%w: %s has no fencing tokens; drop --fencing (the strategies with them: %s)", ErrInvalid, o.Strategy,
			strings.Join(catalog.Names(func(s catalog.Strategy) bool { return s.Tokens }), ", "))
	case o.For < 10*time.Second || o.For > 24*time.Hour:
		return fmt.Errorf("%w: --for must be between 10s and 24h, got %s", ErrInvalid, o.For)
	case o.Rate < 1 || o.Rate > 2000:
		return fmt.Errorf("%w: --rate must be between 1 and 2000 purchases/s, got %d", ErrInvalid, o.Rate)
	case o.Resend < 1 || o.Resend > bench.MaxResend:
		return fmt.Errorf("%w: --resend must be between 1 and %d, got %d", ErrInvalid, bench.MaxResend, o.Resend)
	}
	return nil
}

// Result is a nemesis run's outcome (nemesis.json).
type Result struct {
	Stack    string `json:"stack"`
	Strategy string `json:"strategy"`
	Fencing  bool   `json:"fencing"`
	// PauseHolder: the pauses of instances paused the lock's holder
	// (Options.PauseHolder).
	PauseHolder bool   `json:"pause_holder,omitempty"`
	Seed        int64  `json:"seed"`
	For         string `json:"for"`
	Every       string `json:"every"`
	Rate        int    `json:"rate"`
	Resend      int    `json:"resend"`
	// NeededLink is the link group the strategy needs.
	NeededLink string         `json:"needed_link"`
	Faults     []Record       `json:"faults"`
	Kinds      map[string]int `json:"kinds"`
	Made       int            `json:"made"`
	NeededMade int            `json:"needed_made"`
	Overlaps   int            `json:"overlaps"`
	// The bench's figures of the whole run.
	Requests          int               `json:"requests"`
	OK                int               `json:"ok"`
	Oversold          int               `json:"oversold"`
	Outcomes          map[string]int    `json:"outcomes"`
	Resent            int               `json:"resent"`
	Unanswered        int               `json:"unanswered"`
	LongestGapS       float64           `json:"longest_gap_without_sale_s"`
	Invariants        []bench.Invariant `json:"invariants"`
	InvariantsPassed  int               `json:"invariants_passed"`
	InvariantsDecided int               `json:"invariants_decided"`
	BenchReport       string            `json:"bench_report"`
	// SalesPerSecond are the sales answered in each second of the load.
	SalesPerSecond []int     `json:"sales_per_second"`
	Machine        string    `json:"machine"`
	Began          time.Time `json:"began"`
	WallS          float64   `json:"wall_s"`
	Command        string    `json:"command"`
	// FailedBy is what failed the run (Failures), empty when it held.
	FailedBy []string `json:"failures"`
}

// Unchecked says why an invariant the bench failed was not checked, not
// broken (bench.Invariant.Incomplete: mutual exclusion whose evidence an
// instance's kill cut short, no two sections seen overlapping); "" for
// the others.
func Unchecked(inv bench.Invariant) string {
	if inv.Failed() && inv.Incomplete {
		return "no two critical sections seen overlapping, but " + inv.Detail
	}
	return ""
}

// Fenced says why a broken mutual exclusion does not fail a run with
// fencing: a lease ran out under its holder (a pause, a lost renewal), so
// two holders' critical sections overlapped, which a lock with a TTL
// cannot rule out; the tokens refuse the stale holder's write, and the
// data checks (oversold, lost updates, linearizability) decide whether a
// sale was lost. "" for the others.
func (r *Result) Fenced(inv bench.Invariant) string {
	if !r.Fencing || inv.Name != bench.InvMutualExclusion || !inv.Failed() || inv.Incomplete {
		return ""
	}
	return fmt.Sprintf("%s; with fencing the data checks decide, and the tokens refused %d stale writes", inv.Detail, r.Outcomes[bench.OutcomeStaleLock])
}

// Failures are what makes a nemesis run fail: an oversell, a decided
// invariant that broke (not one left unchecked, Unchecked, nor the
// overlap a fenced run's tokens answer, Fenced), a fault not healed.
func (r *Result) Failures() []string {
	var out []string
	if r.Oversold > 0 {
		out = append(out, fmt.Sprintf("oversold %d", r.Oversold))
	}
	for _, inv := range r.Invariants {
		if inv.Applicable && inv.Failed() && Unchecked(inv) == "" && r.Fenced(inv) == "" {
			out = append(out, fmt.Sprintf("%s: %s", inv.Name, inv.Detail))
		}
	}
	for _, f := range r.Faults {
		if f.Made && !f.Healed {
			out = append(out, fmt.Sprintf("%s %s: %s", f.Kind, f.Target, f.Error))
		}
	}
	return out
}

// Run runs the nemesis on the ha stack in o.Dir.
func Run(ctx context.Context, o Options) (*Result, error) {
	if err := o.defaults(); err != nil {
		return nil, err
	}
	st, err := stack.Load(o.Dir)
	if err != nil {
		return nil, fmt.Errorf("nemesis: %w", err)
	}
	layout, err := LayoutOf(st, o.Strategy)
	if err != nil {
		return nil, err
	}
	plan, err := Plan(o.Seed, o.For, o.Every, layout)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	if err := os.MkdirAll(o.OutDir, 0o755); err != nil {
		return nil, fmt.Errorf("nemesis: %w", err)
	}
	fencing := ""
	if o.Fencing {
		fencing = " --fencing"
	}
	cfg := stock.Config{Fencing: o.Fencing}
	if o.PauseHolder {
		fencing += " --pause-holder"
		cfg.WorkDelay, cfg.LockTTL, cfg.NoLeaseCheck = HolderWork, HolderTTL, true
	}
	res := &Result{Stack: fmt.Sprintf("%s topology, %d instances, fault proxy", st.Topology, len(layout.Instances)),
		Strategy: o.Strategy, Fencing: o.Fencing, PauseHolder: o.PauseHolder, Seed: o.Seed, For: o.For.String(), Every: o.Every.String(), Rate: o.Rate,
		Resend: o.Resend, NeededLink: layout.Needed.Link, Machine: machine(), Began: time.Now().UTC(),
		Command: fmt.Sprintf("seckill nemesis --dir %s --strategy %s%s --for %s --seed %d --every %s --rate %d --resend %d --out %s",
			o.Dir, o.Strategy, fencing, o.For, o.Seed, o.Every, o.Rate, o.Resend, o.OutDir)}
	if o.Progress != nil {
		fmt.Fprintf(o.Progress, "nemesis: %d faults planned (%s), %d on %s\n", len(plan), kindList(Kinds(plan)), needed(plan), layout.Needed.Link)
	}
	s := &striker{dir: o.Dir, layout: layout, plan: plan, progress: o.Progress, holder: o.PauseHolder}
	requests := int(float64(o.Rate) * o.For.Seconds())
	fl := st.Fleet()
	benchDir := filepath.Join(o.OutDir, "bench")
	rep, err := bench.Run(ctx, bench.Options{
		Strategies: []string{o.Strategy}, Stock: requests, Requests: requests, Rate: o.Rate,
		Concurrency: max(200, 10*o.Rate), GoodsID: o.GoodsID, Fleet: fl,
		Config:  cfg,
		Striker: s, Resend: o.Resend, RequestTimeout: o.RequestTimeout,
		Warmup: -1, CalibrateRequests: -1, RunTimeout: o.For + 15*time.Minute,
		OutDir: benchDir, CommandLine: strings.Fields(res.Command),
	})
	res.Faults = s.records
	// Whatever happened, leave the stack as it was: every fault undone.
	herr := stack.Heal(context.WithoutCancel(ctx), o.Dir, io.Discard)
	if err != nil {
		return res, fmt.Errorf("nemesis: the load: %w", errors.Join(err, herr))
	}
	if herr != nil {
		return res, fmt.Errorf("nemesis: heal after the load: %w", herr)
	}
	run := rep.Runs[0]
	res.summarize(run)
	if run.Raw != "" {
		if res.SalesPerSecond, err = salesPerSecond(filepath.Join(benchDir, run.Raw)); err != nil {
			return res, err
		}
	}
	res.WallS = time.Since(res.Began).Seconds()
	return res, write(o.OutDir, res)
}

// summarize keeps the bench run's figures and each fault's sales gap.
func (r *Result) summarize(run bench.RunResult) {
	r.Requests, r.OK, r.Oversold, r.Outcomes = run.Requests, run.OK, run.Oversold, run.Outcomes
	r.Resent, r.Unanswered, r.LongestGapS = run.Resent, run.Unanswered, run.LongestGapS
	r.Invariants, r.InvariantsPassed, r.InvariantsDecided = run.Invariants, run.InvariantsPassed, run.InvariantsTotal
	r.BenchReport = filepath.Join("bench", "report.html")
	k := 0
	var made []Fault
	for i := range r.Faults {
		f := &r.Faults[i]
		if !f.Made {
			continue
		}
		made = append(made, f.Fault)
		r.Made++
		if f.Needed {
			r.NeededMade++
		}
		if k < len(run.Strikes) {
			f.SalesGapS, f.GapOpen = run.Strikes[k].SalesGapS, run.Strikes[k].GapOpen
		}
		k++
	}
	r.Kinds = Kinds(made)
	r.Overlaps = Overlaps(made)
}

// needed counts the faults on the needed group.
func needed(fs []Fault) int {
	n := 0
	for _, f := range fs {
		if f.Needed {
			n++
		}
	}
	return n
}

// machine names the machine: CPUs, OS.
func machine() string {
	return fmt.Sprintf("%d CPUs, %s/%s", runtime.NumCPU(), runtime.GOOS, runtime.GOARCH)
}

// write writes nemesis.json, nemesis.svg and nemesis.md.
func write(dir string, r *Result) error {
	r.FailedBy = r.Failures()
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return fmt.Errorf("nemesis: %w", err)
	}
	if err := os.WriteFile(filepath.Join(dir, "nemesis.json"), b, 0o644); err != nil {
		return fmt.Errorf("nemesis: %w", err)
	}
	if err := os.WriteFile(filepath.Join(dir, "nemesis.svg"), SVG(r), 0o644); err != nil {
		return fmt.Errorf("nemesis: %w", err)
	}
	if err := os.WriteFile(filepath.Join(dir, "nemesis.md"), []byte(Markdown(r)), 0o644); err != nil {
		return fmt.Errorf("nemesis: %w", err)
	}
	return nil
}
