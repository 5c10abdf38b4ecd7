// Package lesson is the workshop: the sources' story of the flash-sale
// oversell problem as a course of lessons, in the sources' order, from no
// lock to fencing tokens. Each lesson says what it shows (in Chinese and
// English) and which source passage it comes from, runs the smallest
// experiment that shows it on the local stack (a bench.Run or a
// scenario.Run, nothing measured here), and sets our figure beside the
// source's with a verdict: reproduced, reproduced in kind, or not reproduced
// and why.
package lesson

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/seckill-lab/seckill/bench"
	"github.com/seckill-lab/seckill/bench/fleet"
	"github.com/seckill-lab/seckill/internal/democli"
	"github.com/seckill-lab/seckill/internal/scenario"
	"github.com/seckill-lab/seckill/internal/stack"
	"github.com/seckill-lab/seckill/stock"
	"github.com/seckill-lab/seckill/stock/catalog"
)

// Verdict sets our figure against the source's.
type Verdict string

// The verdicts.
const (
	Reproduced    Verdict = "reproduced"
	InKind        Verdict = "reproduced in kind"
	NotReproduced Verdict = "not reproduced"
	Skipped       Verdict = "skipped"
)

// Lesson is one step of the course.
type Lesson struct {
	N                int
	Slug             string
	TitleZH, TitleEN string
	ShowsZH, ShowsEN string
	// Seed is the passage the lesson comes from: its source's short name and a short quote.
	Seed string
	// SeedFigure is what the source measured or claims.
	SeedFigure string
	// Topology and Proxy are what the stack needs (scenario.Fits); "" is
	// any topology.
	Topology string
	Proxy    bool
	// Backend is the server group the lesson needs that a stack may run
	// without (an optional one); "" for none.
	Backend string
	// Estimate is how long the lesson takes on a 2-core machine: at most
	// 60 s, unless Longer says why a server's timing does not allow it.
	Estimate time.Duration
	Longer   string
	// Speed marks a lesson whose verdict compares throughputs: it varies
	// with the machine's load, so the tests check that it ran and sold
	// correctly, not its verdict (speed is measured, never asserted).
	Speed bool
	// Look is where the lesson's report shows its claim.
	Look Look
	run  func(ctx context.Context, r *runner) (Outcome, error)
}

// Look says where to look: the page of one of the lesson's reports, the
// section (its heading there) and what the class should see in it, in
// Chinese and English.
type Look struct {
	// Report is which of the lesson's reports, from 1 (the order it wrote
	// them in).
	Report int
	// Page is the file in that report's directory: report.html (a bench)
	// or scenario.html (a failure story, whose table links each run's
	// report.html).
	Page    string
	Section string
	ZH, EN  string
}

// The pages a lesson's report has.
const (
	BenchPage    = "report.html"
	ScenarioPage = "scenario.html"
)

// inBench is a Look at section of the lesson's report n, a bench.
func inBench(n int, section, en, zh string) Look {
	return Look{Report: n, Page: BenchPage, Section: section, EN: en, ZH: zh}
}

// inStory is a Look at the table of the lesson's report n, a failure story.
func inStory(n int, en, zh string) Look {
	return Look{Report: n, Page: ScenarioPage, Section: "the table of protections", EN: en, ZH: zh}
}

// Where is the page of the Look in outcome o's reports ("" when o wrote
// none).
func (lk Look) Where(o Outcome) string {
	if lk.Report < 1 || lk.Report > len(o.Reports) {
		return ""
	}
	return o.Reports[lk.Report-1] + "/" + lk.Page
}

// Outcome is a lesson's result.
type Outcome struct {
	Lesson  int     `json:"lesson"`
	Slug    string  `json:"slug"`
	Ours    string  `json:"ours"`
	Verdict Verdict `json:"verdict"`
	// Why explains a verdict other than reproduced, or what to look at.
	Why string `json:"why,omitempty"`
	// Reports are the bench or scenario reports the lesson wrote.
	Reports  []string `json:"reports,omitempty"`
	Seconds  float64  `json:"seconds"`
	Commands []string `json:"commands,omitempty"`
	// Figures are the measured figures the verdict rests on, for the
	// course's charts: ours, against the source's figure when it gave one.
	Figures []Figure `json:"figures,omitempty"`
	// Conditions is what the benches the lesson's figures come from ran
	// under (round trip, durability, mode, instances, machine;
	// bench.Environment.Conditions): one line when they share it, else
	// the shared part and each figure's own (conditionsLine). A lesson
	// whose figures come from no bench gives its last bench's; "" when it
	// ran none.
	Conditions string `json:"conditions,omitempty"`
}

// Figure is one chart of a lesson: our bars, and a reference line (the
// source's figure, or the value that separates the cases) when there is one.
type Figure struct {
	Title string      `json:"title"`
	Unit  string      `json:"unit"`
	Bars  []FigureBar `json:"bars"`
	// Ref is drawn as a line labelled RefLabel when RefLabel is not "".
	Ref      float64 `json:"ref,omitempty"`
	RefLabel string  `json:"ref_label,omitempty"`
	// Mark says what the ✗ of a Flawed bar means, in the chart's title
	// (default catalog.ColFlawed: the strategy is flawed by design).
	Mark string `json:"mark,omitempty"`
}

// FigureBar is one bar of a Figure; Flawed draws it hatched with a ✗ (a
// strategy flawed by design, or what Figure.Mark names).
type FigureBar struct {
	Label  string  `json:"label"`
	Value  float64 `json:"value"`
	Flawed bool    `json:"flawed,omitempty"`
}

// Options configure a run of lessons.
type Options struct {
	// Dir is the local stack's run directory.
	Dir string
	// Short runs every experiment on a smaller load (the tests').
	Short bool
	// Seed seeds every load. Default 1.
	Seed int64
	// Repeat runs each failure story this many times, so its verdict says
	// how often the story showed ("oversold in 2 of 3 runs"). Default 3,
	// 1 with Short.
	Repeat int
	// OutDir receives each lesson's reports (and Write's course report);
	// "" writes none.
	OutDir   string
	Progress io.Writer
}

// ErrUnknown is returned for a lesson that does not exist.
var ErrUnknown = errors.New("no such lesson")

// All returns the course in order.
func All() []Lesson { return course }

// Find returns a lesson by number or slug.
func Find(key string) (Lesson, error) {
	for _, l := range course {
		if l.Slug == key || strconv.Itoa(l.N) == key {
			return l, nil
		}
	}
	return Lesson{}, fmt.Errorf("%w %q: `seckill lesson list` shows the %d lessons (by number 1..%d or name)", ErrUnknown, key, len(course), len(course))
}

// Needs says what stack a lesson needs, or "".
func (l Lesson) Needs() string {
	var parts []string
	if l.Topology == stack.TopologyHA {
		parts = append(parts, "--topology ha")
	}
	if l.Proxy {
		parts = append(parts, "--proxy")
	}
	if len(parts) == 0 {
		return ""
	}
	return "seckill up " + strings.Join(parts, " ")
}

// fits reports why st cannot run l, or nil.
func (l Lesson) fits(st *stack.State) error {
	if l.Topology == stack.TopologyHA && !st.HA() || l.Proxy && !st.Proxy {
		return fmt.Errorf("needs a stack started with `%s`", l.Needs())
	}
	if l.Backend != "" && !st.Has(stack.Backend(l.Backend)) {
		return fmt.Errorf("needs %s, which this stack runs without: `make deps` builds it, then `seckill down` and `seckill up`", l.Backend)
	}
	return nil
}

// Run runs one lesson against the stack in o.Dir. A lesson the stack does
// not fit is Skipped with the `seckill up` line it needs.
func Run(ctx context.Context, l Lesson, o Options) (Outcome, error) {
	if o.Seed == 0 {
		o.Seed = 1
	}
	st, err := stack.Load(o.Dir)
	if err != nil {
		return Outcome{}, fmt.Errorf("lesson %d: %w (start the lab with `seckill up`)", l.N, err)
	}
	out := Outcome{Lesson: l.N, Slug: l.Slug}
	if err := l.fits(st); err != nil {
		out.Verdict, out.Why = Skipped, err.Error()
		return out, nil
	}
	// The lesson leaves the fleet as it found it: its instance count and
	// the setting of its first instance (a 300 ms work delay or a 100 ms
	// TTL must not follow the class into the dashboard's next burst).
	defer capture(ctx, o.Dir, len(st.Instances())).restore(o.Dir)
	r := &runner{o: o, st: st, lesson: l}
	began := time.Now()
	out, err = l.run(ctx, r)
	out.Lesson, out.Slug, out.Seconds, out.Reports, out.Commands = l.N, l.Slug, time.Since(began).Seconds(), r.reports, r.commands
	out.Figures = append(out.Figures, r.figures...)
	if out.Conditions = conditionsLine(r.exps); out.Conditions == "" && r.last != nil {
		out.Conditions = r.last.Environment.Conditions()
	}
	if err != nil {
		return out, fmt.Errorf("lesson %d (%s): %w", l.N, l.Slug, err)
	}
	return out, nil
}

// RunAll runs every lesson in order and puts the fleet back: the instance
// count it found and strategy none. A lesson that fails stops the course
// with its error; the outcomes so far are returned.
func RunAll(ctx context.Context, o Options) ([]Outcome, error) {
	st, err := stack.Load(o.Dir)
	if err != nil {
		return nil, fmt.Errorf("lessons: %w (start the lab with `seckill up`)", err)
	}
	defer capture(ctx, o.Dir, len(st.Instances())).restore(o.Dir)
	var outs []Outcome
	for _, l := range course {
		if o.Progress != nil {
			fmt.Fprintf(o.Progress, "lesson %d/%d: %s (%s)\n", l.N, len(course), l.TitleEN, l.TitleZH)
		}
		out, err := Run(ctx, l, o)
		outs = append(outs, out)
		if err != nil {
			return outs, err
		}
		if o.Progress != nil {
			fmt.Fprintf(o.Progress, "  -> %s: %s\n", out.Verdict, out.Ours)
		}
	}
	return outs, nil
}

// fleetState is what a lesson puts back: the instance count and the
// setting the fleet ran (strategy none when it could not be read).
type fleetState struct {
	instances int
	cfg       stock.Config
}

// capture reads the fleet of the stack in dir, which has n instances.
func capture(ctx context.Context, dir string, n int) fleetState {
	fs := fleetState{instances: n, cfg: stock.Config{Name: catalog.None}}
	if f, err := democli.FromStack(dir); err == nil {
		if settings, err := f.Strategies(ctx); err == nil && len(settings) > 0 {
			fs.cfg = settings[0].Config
		}
	}
	return fs
}

// restore scales the fleet back and sets its setting again.
func (fs fleetState) restore(dir string) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if st, err := stack.Load(dir); err == nil && len(st.Instances()) != fs.instances {
		_, _ = stack.Scale(ctx, dir, fs.instances)
	}
	if f, err := democli.FromStack(dir); err == nil {
		_, _ = f.SetStrategy(ctx, fs.cfg)
	}
}

// runner gives a lesson its experiments.
type runner struct {
	// last is the report of the lesson's latest bench, lastDir where it
	// was written ("" without Options.OutDir).
	last     *bench.Report
	lastDir  string
	o        Options
	st       *stack.State
	lesson   Lesson
	reports  []string
	commands []string
	figures  []Figure
	n        int
	// exps are the experiments the lesson's figures come from (for
	// Outcome.Conditions). runs are the conditions of the benches run
	// since the last figure; ran says whether any experiment (a bench or
	// a scenario) ran since; noted is the latest bench in runs.
	exps  []figureRuns
	runs  []string
	ran   bool
	noted *bench.Report
}

// figure adds a chart to the lesson's outcome. It comes from the
// experiments run since the previous figure, or from the previous
// figure's when none ran.
func (r *runner) figure(f Figure) {
	r.figures = append(r.figures, f)
	if r.last != nil && r.last != r.noted {
		r.noteBench(r.last) // a bench the lesson ran itself (bench.Run)
	}
	if r.ran || len(r.exps) == 0 {
		r.exps = append(r.exps, figureRuns{title: f.Title, conds: r.runs})
		r.runs, r.ran = nil, false
	}
}

// noteBench records that rep's bench ran, for the next figure.
func (r *runner) noteBench(rep *bench.Report) {
	r.runs, r.ran, r.noted = append(r.runs, rep.Environment.Conditions()), true, rep
}

// load is an experiment's size: full, or the short one.
type load struct{ requests, stock, concurrency int }

func (r *runner) pick(full, short load) load {
	if r.o.Short {
		return short
	}
	return full
}

// bench runs one bench on the stack's fleet: o's load and knobs, the
// lesson's seed, no calibration, no warm-up.
func (r *runner) bench(ctx context.Context, o bench.Options, cmd string) (*bench.Report, error) {
	st, err := stack.Load(r.o.Dir)
	if err != nil {
		return nil, err
	}
	return r.benchOn(ctx, st, o, cmd)
}

// benchOn is bench on the stack st (the class's, or one the lesson
// started), with st's faults; cmd, its repeat command, is recorded unless
// it is "" (a stack of the lesson's own is gone afterwards).
func (r *runner) benchOn(ctx context.Context, st *stack.State, o bench.Options, cmd string) (*bench.Report, error) {
	o.Fleet = st.Fleet()
	dir := st.Dir
	if len(o.Faults) > 0 && o.Faulter == nil {
		o.Faulter = stack.Faulter{Dir: dir}
	}
	o.Scaler = bench.ScalerFunc(func(ctx context.Context, n int) (fleet.Fleet, error) {
		st, err := stack.Scale(ctx, dir, n)
		if err != nil {
			return fleet.Fleet{}, err
		}
		return st.Fleet(), nil
	})
	o.Seed, o.CalibrateRequests, o.Warmup = r.o.Seed, -1, -1
	if r.o.OutDir != "" {
		r.n++
		o.OutDir = fmt.Sprintf("%s/lesson-%02d-%s-%d", r.o.OutDir, r.lesson.N, r.lesson.Slug, r.n)
		r.reports = append(r.reports, o.OutDir)
	}
	if cmd != "" {
		r.commands = append(r.commands, r.repeatable(cmd))
	}
	r.lastDir = o.OutDir
	rep, err := bench.Run(ctx, o)
	if err != nil {
		return rep, err
	}
	r.last = rep
	r.noteBench(rep)
	return rep, nil
}

// scenario runs one failure story on the stack, unprotected and fenced
// (or the protections given).
func (r *runner) scenario(ctx context.Context, name string, prots ...scenario.Protection) (*scenario.Result, error) {
	sc, err := scenario.Find(name)
	if err != nil {
		return nil, err
	}
	return r.scenarioOf(ctx, sc, sc.Strategies[:1], prots...)
}

// scenarioOf runs sc on the stack for strategies, under prots
// (unprotected and fenced when none are given).
func (r *runner) scenarioOf(ctx context.Context, sc scenario.Scenario, strategies []string, prots ...scenario.Protection) (*scenario.Result, error) {
	name := sc.Name
	if err := sc.Fits(r.st); err != nil {
		return nil, err
	}
	r.ran = true
	if len(prots) == 0 {
		prots = []scenario.Protection{scenario.ProtectNone, scenario.ProtectFencing}
	}
	o := scenario.Options{Dir: r.o.Dir, Fleet: r.st.Fleet(),
		Protections: prots, Strategies: strategies, Seed: r.o.Seed, Short: r.o.Short, Progress: r.o.Progress, Repeat: r.o.repeat()}
	if r.o.OutDir != "" {
		r.n++
		o.OutDir = fmt.Sprintf("%s/lesson-%02d-%s-%d", r.o.OutDir, r.lesson.N, r.lesson.Slug, r.n)
		r.reports = append(r.reports, o.OutDir)
	}
	var ps []string
	for _, p := range prots {
		ps = append(ps, string(p))
	}
	r.commands = append(r.commands, r.repeatable(fmt.Sprintf("seckill scenario run %s --strategies %s --protections %s --repeat %d", name, strings.Join(strategies, ","), strings.Join(ps, ","), o.Repeat)))
	res, err := scenario.Run(ctx, sc, o)
	if errors.Is(err, scenario.ErrFailed) {
		return res, nil // the verdict is the lesson's to give
	}
	return res, err
}

// summary returns strategy's summary (the first row of that strategy and
// no variant).
func summary(rep *bench.Report, strategy string) (bench.Summary, error) {
	for _, s := range rep.Summary {
		if s.Strategy == strategy {
			return s, nil
		}
	}
	return bench.Summary{}, fmt.Errorf("the bench has no row for %s", strategy)
}

// row returns the scenario row of protection p.
func row(res *scenario.Result, p scenario.Protection) (scenario.Row, error) {
	for _, rw := range res.Rows {
		if rw.Protection == p {
			return rw, nil
		}
	}
	return scenario.Row{}, fmt.Errorf("scenario %s has no %s row", res.Scenario, p)
}

// DefaultRepeat is how many times a lesson runs a failure story.
const DefaultRepeat = 3

// repeat is o.Repeat with its default.
func (o Options) repeat() int {
	switch {
	case o.Repeat > 0:
		return o.Repeat
	case o.Short:
		return 1
	}
	return DefaultRepeat
}

// repeatable makes a "seckill ..." command one a user can paste: the
// binary as `make build` puts it (bin/seckill; seckill is not on PATH) and
// the stack's directory, wherever the lab runs.
func (r *runner) repeatable(cmd string) string {
	dir := r.o.Dir
	if dir == "" {
		dir = r.st.Dir
	}
	return "bin/" + cmd + " --dir " + dir
}
