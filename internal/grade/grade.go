// Package grade owns `seckill grade`: it scores one workshop exercise's
// lock (package exercises) on the student's own stack and writes a score
// sheet in Chinese and English. Three parts, each a list of checks:
//
//   - conformance: lockimpl's conformance suite on the lock as its source
//     is now (`go test` of exercises/, the exercise's test), with the
//     properties the exercise requires, whatever the lock claims;
//   - bench: one seeded bench of the lock on the stack, with its
//     invariants and the linearizability check;
//   - faults: the exercise's fault scenarios, short, where an oversell
//     under a protection the exercise names fails.
//
// The stack's instances must run the student's code: Build compiles the
// seckill binary the stack runs, and Run restarts the instances first.
// The CLI (cmd/seckill grade) builds, re-executes the new binary and calls
// Run.
package grade

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/seckill-lab/seckill/bench"
	"github.com/seckill-lab/seckill/bench/confidence"
	"github.com/seckill-lab/seckill/exercises"
	"github.com/seckill-lab/seckill/internal/democli"
	"github.com/seckill-lab/seckill/internal/lab"
	"github.com/seckill-lab/seckill/internal/scenario"
	"github.com/seckill-lab/seckill/internal/stack"
	"github.com/seckill-lab/seckill/stock"
	"github.com/seckill-lab/seckill/stock/catalog"
)

// Parts of the sheet, in order.
const (
	PartConformance = "conformance"
	PartBench       = "bench"
	PartFaults      = "faults"
	// PartRestart is not a part of the sheet but a step timed on it: the
	// restart of the instances before the bench and the faults.
	PartRestart = "restart"
	// PartBuild is the build of the student's code into the lab's binary,
	// timed on the sheet too: by the CLI before Run (Options.BuiltS) or by
	// Run itself (Options.Build).
	PartBuild = "build"
)

// Check is one line of the sheet.
type Check struct {
	Part   string `json:"part"`
	Name   string `json:"name"`
	Pass   bool   `json:"pass"`
	Figure string `json:"figure"`
	// Cause is what a failed check's figure shows (exercises.Observe);
	// Lesson and Hint are the exercise's advice for that cause, or for the
	// check (exercises.Advise).
	Cause  exercises.Cause `json:"cause,omitempty"`
	Lesson int             `json:"lesson,omitempty"`
	Hint   exercises.Text  `json:"hint"`
	// Advice is the check's key in exercises.Hints, the advice when the
	// figure shows no known cause.
	Advice string `json:"-"`
}

// Sheet is a grade.
type Sheet struct {
	Exercise string         `json:"exercise"`
	Title    exercises.Text `json:"title"`
	// Target is "student" or "key"; Strategy the lab's name of the lock
	// graded.
	Target   string  `json:"target"`
	Strategy string  `json:"strategy"`
	Checks   []Check `json:"checks"`
	// Times is how long each part took, in the order run (the build of
	// the student's code and the restart of the instances are steps of
	// their own).
	Times   []PartTime `json:"times"`
	Reports []string   `json:"reports,omitempty"`
	// Fleet says what the grade left the fleet running: the strategy and
	// knobs it found (stack.DescribeStrategy), or why it could not put
	// them back. Empty when the grade did not touch the fleet (the
	// conformance part alone).
	Fleet string    `json:"fleet,omitempty"`
	At    time.Time `json:"at"`
	// WallS is the whole grade's time, the build of the student's code
	// included.
	WallS float64 `json:"wall_s"`
}

// PartTime is how long a part (or the restart) of a grade took.
type PartTime struct {
	Part  string  `json:"part"`
	WallS float64 `json:"wall_s"`
}

// timed records since as part's time.
func (s *Sheet) timed(part string, since time.Time) {
	s.Times = append(s.Times, PartTime{Part: part, WallS: time.Since(since).Seconds()})
}

// built reports whether the grade built the student's code (a build step
// in Times, counted in WallS).
func (s *Sheet) built() bool {
	return slices.ContainsFunc(s.Times, func(t PartTime) bool { return t.Part == PartBuild })
}

// Passed and Failed count the checks.
func (s *Sheet) Passed() int { return s.count(true) }

// Failed counts the failed checks.
func (s *Sheet) Failed() int { return s.count(false) }

func (s *Sheet) count(pass bool) int {
	n := 0
	for _, c := range s.Checks {
		if c.Pass == pass {
			n++
		}
	}
	return n
}

// OK reports whether every check passed (and there was one).
func (s *Sheet) OK() bool { return len(s.Checks) > 0 && s.Failed() == 0 }

func (s *Sheet) add(c Check) {
	var a exercises.Advice
	c.Cause, a = exercises.Advise(s.Exercise, c.Advice, c.Figure, !c.Pass)
	c.Lesson, c.Hint = a.Lesson, a.Hint
	s.Checks = append(s.Checks, c)
}

// Options of Run.
type Options struct {
	Exercise exercises.Exercise
	// Dir is the student's stack; Root the module root (go.mod), where
	// the conformance test is built.
	Dir, Root string
	// Key grades the answer key instead of the student's lock.
	Key bool
	// Go is the go command (default "go").
	Go string
	// Parts to run (default all).
	Parts []string
	// Progress receives a line per step (nil: none).
	Progress io.Writer
	// Overlay replaces files of the checkout for this grade only, by path
	// relative to Root: the file to read instead (go build -overlay). The
	// tests grade known wrong answers this way without touching
	// exercises/. Default none: the checkout as it is.
	Overlay map[string]string
	// Build rebuilds the stack's binary (Build, with Overlay) before the
	// instances restart. Default false: the CLI has built it already.
	Build bool
	// BuiltS is how long the CLI's build took before Run (0: none): the
	// sheet counts it in WallS and shows it as the build step.
	BuiltS float64
	// Label names the grade's report directory beside the exercise
	// (default the target, "student" or "key").
	Label string

	buildFlags []string // -overlay FILE, set by Run
}

// ErrFailed is returned with a sheet that has a failed check.
var ErrFailed = errors.New("grade: a check failed")

// Run grades o.Exercise on the stack in o.Dir.
func Run(ctx context.Context, o Options) (*Sheet, error) {
	began := time.Now()
	e := o.Exercise
	if err := exercises.Register(); err != nil { // the bench and the scenarios look the lock up by name
		return nil, fmt.Errorf("grade: %w", err)
	}
	if o.Go == "" {
		o.Go = "go"
	}
	if len(o.Parts) == 0 {
		o.Parts = []string{PartConformance, PartBench, PartFaults}
	}
	progress := o.Progress
	if progress == nil {
		progress = io.Discard
	}
	st, err := stack.Load(o.Dir)
	if err != nil {
		return nil, err
	}
	if err := CheckServers(e, st); err != nil {
		return nil, err
	}
	sheet := &Sheet{Exercise: e.Name, Title: e.Title, Target: exercises.TargetStudent, Strategy: e.Strategy, At: began.UTC()}
	if o.BuiltS > 0 {
		sheet.Times = append(sheet.Times, PartTime{Part: PartBuild, WallS: o.BuiltS})
	}
	if o.Key {
		sheet.Target, sheet.Strategy = "key", e.Key
	}
	label := cmp.Or(o.Label, sheet.Target)
	out := filepath.Join(st.Dir, "grade", fmt.Sprintf("%s-%s-%s", e.Name, label, began.Format("20060102-150405")))
	if len(o.Overlay) > 0 {
		f, err := writeOverlay(o.Root, o.Overlay)
		if err != nil {
			return sheet, err
		}
		defer os.Remove(f)
		o.buildFlags = []string{"-overlay", f}
	}

	if slices.Contains(o.Parts, PartConformance) {
		fmt.Fprintf(progress, "grade %s: conformance (go test ./exercises/ -run TestConformance/%s)\n", e.Name, e.Name)
		t0 := time.Now()
		checks, err := conformance(ctx, o, st)
		sheet.timed(PartConformance, t0)
		if err != nil {
			return sheet, err
		}
		for _, c := range checks {
			sheet.add(c)
		}
	}
	putBack := func() {}
	if slices.Contains(o.Parts, PartBench) || slices.Contains(o.Parts, PartFaults) {
		var err error
		putBack, err = takeFleet(ctx, o, st, sheet, progress)
		defer putBack()
		if err != nil {
			return sheet, err
		}
	}
	if slices.Contains(o.Parts, PartBench) {
		fmt.Fprintf(progress, "grade %s: bench of %s\n", e.Name, sheet.Strategy)
		t0 := time.Now()
		if err := runBench(ctx, e, st, sheet, filepath.Join(out, "bench")); err != nil {
			return sheet, err
		}
		sheet.timed(PartBench, t0)
	}
	if slices.Contains(o.Parts, PartFaults) {
		t0 := time.Now()
		for _, f := range e.Faults {
			fmt.Fprintf(progress, "grade %s: scenario %s (%s)\n", e.Name, f.Scenario, strings.Join(f.Protections, ", "))
			if err := runFault(ctx, f, st, sheet, filepath.Join(out, f.Scenario), progress); err != nil {
				return sheet, err
			}
		}
		sheet.timed(PartFaults, t0)
	}
	putBack()
	sheet.WallS = o.BuiltS + time.Since(began).Seconds()
	if err := os.MkdirAll(out, 0o755); err != nil {
		return sheet, fmt.Errorf("grade: %w", err)
	}
	b, _ := json.MarshalIndent(sheet, "", "  ")
	if err := os.WriteFile(filepath.Join(out, "grade.json"), b, 0o644); err != nil {
		return sheet, fmt.Errorf("grade: %w", err)
	}
	sheet.Reports = append([]string{out}, sheet.Reports...)
	if !o.Key && len(o.Overlay) == 0 {
		// The lab's last grade, for the instructor's `seckill lab list`.
		g := lab.Grade{Exercise: e.Name, Passed: sheet.Passed(), Failed: sheet.Failed(), OK: sheet.OK(), At: sheet.At}
		if err := lab.WriteGrade(st.Dir, g); err != nil {
			return sheet, err
		}
	}
	if !sheet.OK() {
		return sheet, ErrFailed
	}
	return sheet, nil
}

// takeFleet readies the fleet for the bench and the scenarios, which
// switch its strategy and knobs: it notes the setting the fleet runs now,
// builds the binary the instances run when o.Build, and restarts them on
// it, so the student's lock is the one they run. putBack, returned even
// with an error, restores the noted setting once (later calls do
// nothing), whatever happens in between.
func takeFleet(ctx context.Context, o Options, st *stack.State, sheet *Sheet, progress io.Writer) (putBack func(), err error) {
	e := o.Exercise
	found, err := fleetSetting(ctx, st.Dir)
	if err != nil {
		fmt.Fprintf(progress, "grade %s: %v; the fleet goes back to %s at the end\n", e.Name, err, found.Name)
	}
	var once bool
	putBack = func() {
		if once {
			return
		}
		once = true
		sheet.Fleet = restoreFleet(ctx, st.Dir, found)
		fmt.Fprintf(progress, "grade %s: %s\n", e.Name, sheet.Fleet)
	}
	if o.Build {
		fmt.Fprintf(progress, "grade %s: build %s\n", e.Name, st.Binary)
		t0 := time.Now()
		if err := Build(ctx, o.Go, o.Root, st.Binary, o.buildFlags...); err != nil {
			return putBack, err
		}
		sheet.timed(PartBuild, t0)
	}
	t0 := time.Now()
	for _, name := range st.InstanceNames() {
		fmt.Fprintf(progress, "grade %s: restart %s\n", e.Name, name)
		if err := stack.Restart(ctx, st.Dir, name); err != nil {
			return putBack, fmt.Errorf("restart %s: %w", name, err)
		}
	}
	sheet.timed(PartRestart, t0)
	return putBack, nil
}

// fleetSetting reads the setting the fleet of the stack in dir runs now
// (its first instance's). When no instance answers it returns strategy
// none with its defaults, and the error.
func fleetSetting(ctx context.Context, dir string) (stock.Config, error) {
	none := stock.Config{Name: catalog.None}
	f, err := democli.FromStack(dir)
	if err != nil {
		return none, fmt.Errorf("read the fleet's strategy: %w", err)
	}
	settings, err := f.Strategies(ctx)
	if err != nil || len(settings) == 0 {
		return none, fmt.Errorf("read the fleet's strategy: %w", cmp.Or(err, errors.New("no instance")))
	}
	return settings[0].Config, nil
}

// restoreFleet switches every instance of the stack in dir back to cfg
// (within a minute, even when ctx was cancelled) and says what the fleet
// runs now, or why it could not be put back.
func restoreFleet(ctx context.Context, dir string, cfg stock.Config) string {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
	defer cancel()
	f, err := democli.FromStack(dir)
	if err == nil {
		_, err = f.SetStrategy(ctx, cfg)
	}
	if err != nil {
		return fmt.Sprintf("the fleet could not be put back to %s: %v (seckill strategy --dir %s %s)", stack.DescribeStrategy(cfg), err, dir, cfg.Name)
	}
	return "the fleet is back to what it ran before the grade: " + stack.DescribeStrategy(cfg)
}

// cases are the conformance cases the exercise requires, in the suite's
// order (lockimpl/locktest.Run).
func cases(r exercises.Required) []string {
	out := []string{"MutualExclusion", "TryLockWhileHeld", "CancelWhileWaiting", "DoubleUnlock"}
	for _, c := range []struct {
		on   bool
		name string
	}{{r.Tokens, "TokensIncrease"}, {r.Watchdog, "HeldPastTTL"}, {r.LostLease, "LostLease"}, {r.NoRenew, "ExpiresWithoutRenewal"},
		{r.Acquire, "ExpiryInOneCommand"}, {r.Acquire, "ReleaseOnlyOwn"}, {r.Renewal, "RenewsOnlyOwn"}, {r.Renewal, "RenewalStops"}} {
		if c.on {
			out = append(out, c.name)
		}
	}
	return out
}

// testEvent is one line of `go test -json`.
type testEvent struct {
	Action string
	Test   string
	Output string
}

// fileLine is the "file.go:123: " prefix of a test's message.
var fileLine = regexp.MustCompile(`^\s*[\w.-]+\.go:\d+: `)

// conformance runs the exercise's conformance test with the stack's
// environment and reads its events: one check per required case.
func conformance(ctx context.Context, o Options, st *stack.State) ([]Check, error) {
	e := o.Exercise
	target := exercises.TargetStudent
	if o.Key {
		target = "key"
	}
	ctx, cancel := context.WithTimeout(ctx, 3*time.Minute)
	defer cancel()
	args := append([]string{"test", "-count=1", "-json", "-timeout", "150s"}, o.buildFlags...)
	cmd := exec.CommandContext(ctx, o.Go, append(args, "-run", "^TestConformance$/^"+e.Name+"$", "./exercises/")...)
	cmd.Dir = o.Root
	cmd.Env = os.Environ()
	for _, kv := range st.Env() {
		cmd.Env = append(cmd.Env, kv[0]+"="+kv[1])
	}
	cmd.Env = append(cmd.Env, exercises.EnvGradeTarget+"="+target)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	stdout, err := cmd.Output()
	if ctx.Err() != nil {
		return nil, fmt.Errorf("conformance test of %s: %w", e.Name, ctx.Err())
	}
	var exitErr *exec.ExitError
	if err != nil && !errors.As(err, &exitErr) {
		return nil, fmt.Errorf("run go test: %w", err)
	}
	prefix := "TestConformance/" + e.Name + "/"
	results := map[string]bool{}
	msgs := map[string][]string{}
	var build []string
	sc := bufio.NewScanner(bytes.NewReader(stdout))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var ev testEvent
		if json.Unmarshal(sc.Bytes(), &ev) != nil {
			build = append(build, sc.Text())
			continue
		}
		if ev.Action == "build-output" {
			build = append(build, strings.TrimRight(ev.Output, "\n"))
		}
		name, ok := strings.CutPrefix(ev.Test, prefix)
		if !ok {
			continue
		}
		switch ev.Action {
		case "pass", "fail":
			results[name] = ev.Action == "pass"
		case "output":
			line := strings.TrimSpace(ev.Output)
			if fileLine.MatchString(ev.Output) {
				msgs[name] = append(msgs[name], fileLine.ReplaceAllString(ev.Output, ""))
			} else if strings.HasPrefix(line, "panic:") {
				msgs[name] = append(msgs[name], line)
			}
		}
	}
	if len(results) == 0 {
		// Nothing ran: the package did not build (or the test binary
		// died before any case ended).
		text := strings.TrimSpace(strings.Join(append(build, stderr.String()), "\n"))
		return []Check{{Part: PartConformance, Name: "build", Figure: firstLines(text, 6), Advice: "Build"}}, nil
	}
	var out []Check
	for _, name := range cases(e.Required) {
		pass, ran := results[name]
		fig := strings.TrimSpace(strings.Join(msgs[name], " "))
		switch {
		case !ran:
			fig = "did not finish (the test binary stopped first: a panic or the timeout)"
		case pass && fig == "":
			fig = "ok"
		}
		out = append(out, Check{Part: PartConformance, Name: name, Pass: ran && pass, Figure: firstLines(fig, 3), Advice: name})
	}
	return out, nil
}

func firstLines(s string, n int) string {
	lines := strings.Split(s, "\n")
	if len(lines) > n {
		lines = append(lines[:n], "...")
	}
	return strings.Join(lines, " / ")
}

// goodsOf gives each exercise goods of its own, apart from the bench's and
// the lessons'.
func goodsOf(e exercises.Exercise) int64 { return 9100 + int64(e.N) }

// runBench runs the exercise's seeded bench and adds a check for the
// oversold count and one per applicable invariant.
func runBench(ctx context.Context, e exercises.Exercise, st *stack.State, sheet *Sheet, out string) error {
	l := e.Load
	rep, err := bench.Run(ctx, bench.Options{
		Strategies: []string{sheet.Strategy}, Stock: l.Stock, Requests: l.Requests, Concurrency: l.Concurrency,
		Config: stock.Config{WorkDelay: l.WorkDelay, LockTTL: l.LockTTL, Fencing: l.Fencing, NoLeaseCheck: l.NoLeaseCheck}, Seed: 1, GoodsID: goodsOf(e),
		Fleet: st.Fleet(), CalibrateRequests: -1, Warmup: -1, OutDir: out,
		CommandLine: []string{"seckill", "grade", e.Name},
	})
	if err != nil {
		return fmt.Errorf("bench of %s: %w", sheet.Strategy, err)
	}
	r := rep.Runs[0]
	sheet.Reports = append(sheet.Reports, filepath.Join(out, "report.html"))
	sheet.add(Check{Part: PartBench, Name: "oversold", Pass: r.Oversold == 0 && r.LostUpdates == 0, Advice: "Oversold",
		Figure: fmt.Sprintf("oversold %d, lost updates %d; %d of %d purchases ok on a stock of %d, %d clients, work %s, lock TTL %s, %d instances",
			r.Oversold, r.LostUpdates, r.OK, r.Requests, r.InitialStock, r.Concurrency, r.Setting().WorkDelay, r.Setting().LockTTL, r.Instances)})
	for _, inv := range r.Invariants {
		if !inv.Applicable || inv.Undecided {
			continue
		}
		sheet.add(Check{Part: PartBench, Name: inv.Name, Pass: inv.Pass, Figure: inv.Detail, Advice: inv.Name})
	}
	return nil
}

// LivenessSlack is how long past the lock's TTL sales may stay stopped
// after a fault (a crashed or paused holder) before the fault check fails:
// the waiters' polling, the killed instance's restart and a loaded
// machine. A purchase waits for the lock the TTL plus this slack, no
// longer (scenario.Options.LockWait), so a lock that never frees costs the
// grade seconds.
const LivenessSlack = 3 * time.Second

// strikeWord names a scenario's fault in the sheet's figures.
func strikeWord(scenario string) string {
	switch scenario {
	case "instance-crash":
		return "crash"
	case "etcd-lease":
		return "pause"
	}
	return "fault"
}

// runFault runs one of the exercise's scenarios, short, on the protections
// it names, and adds a check per protection: nothing oversold, every 2xx
// with its order, and sales resumed within the lock's TTL plus
// LivenessSlack after the fault.
func runFault(ctx context.Context, f exercises.Fault, st *stack.State, sheet *Sheet, out string, progress io.Writer) error {
	sc, err := scenario.Find(f.Scenario)
	if err != nil {
		return err
	}
	if err := sc.Fits(st); err != nil {
		return fmt.Errorf("scenario %s: %w", f.Scenario, err)
	}
	var ps []scenario.Protection
	for _, p := range f.Protections {
		ps = append(ps, scenario.Protection(p))
	}
	bound := sc.Short.LockTTL + LivenessSlack
	res, err := scenario.Run(ctx, sc, scenario.Options{
		Dir: st.Dir, Fleet: st.Fleet(), Strategies: []string{sheet.Strategy}, Protections: ps,
		MustNotOversell: ps, Short: true, Seed: 1, OutDir: out, Progress: progress, LockWait: bound,
	})
	if err != nil && !errors.Is(err, scenario.ErrFailed) {
		return fmt.Errorf("scenario %s: %w", f.Scenario, err)
	}
	sheet.Reports = append(sheet.Reports, filepath.Join(out, "scenario.html"))
	for _, r := range res.Rows {
		stopped := time.Duration(r.SalesStoppedS * float64(time.Second))
		live := stopped <= bound && !r.SalesNeverResumed
		word := strikeWord(f.Scenario)
		var liveness string
		switch {
		case r.Strikes == 0:
			liveness = "no strike happened, liveness not measured"
		case live:
			liveness = fmt.Sprintf("sales resumed %.1f s after the %s (bound %.0f s: TTL %s + %s slack)", stopped.Seconds(), word, bound.Seconds(), sc.Short.LockTTL, LivenessSlack)
		case r.SalesNeverResumed:
			liveness = fmt.Sprintf("sales stopped for %.1f s after the %s and never resumed before the run ended, beyond the bound of %.0f s (TTL %s + %s slack)",
				stopped.Seconds(), word, bound.Seconds(), sc.Short.LockTTL, LivenessSlack)
		default:
			liveness = fmt.Sprintf("sales stopped for %.1f s after the %s, beyond the bound of %.0f s (TTL %s + %s slack)", stopped.Seconds(), word, bound.Seconds(), sc.Short.LockTTL, LivenessSlack)
		}
		sheet.add(Check{Part: PartFaults, Name: fmt.Sprintf("%s (%s)", f.Scenario, r.Protection),
			Pass: r.Oversold == 0 && r.OKWithout == 0 && r.RunsMostlyErrors == 0 && live, Advice: "Faults:" + f.Scenario,
			Figure: fmt.Sprintf("oversold %d in %d of %d runs (%s), %d strikes, %d 2xx without an order, %d stale writes refused; %s; %s",
				r.Oversold, r.RunsOversold, r.Runs, confidence.Note(r.RunsOversold, r.Runs, "run"), r.Strikes, r.OKWithout, r.StaleRefused, liveness, res.Load)})
	}
	return nil
}

// Write prints the sheet: a block per check (mark, part, name, lesson;
// the figure; for a failure the hint in Chinese and English), then the
// verdict and the reports.
func (s *Sheet) Write(w io.Writer) error {
	target := "你的锁 / your lock"
	if s.Target == "key" {
		target = "参考答案 / the answer key"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "\n练习 / exercise %s: %s / %s\n评分对象 / graded: %s (strategy %s)\n", s.Exercise, s.Title.ZH, s.Title.EN, target, s.Strategy)
	part := ""
	for _, c := range s.Checks {
		if c.Part != part {
			part = c.Part
			fmt.Fprintf(&b, "\n[%s / %s]\n", partZH[part], part)
		}
		mark := "✓ 通过 pass"
		if !c.Pass {
			mark = "✗ 失败 FAIL"
		}
		lesson := ""
		if c.Lesson > 0 {
			lesson = fmt.Sprintf("  (seckill lesson %d)", c.Lesson)
		}
		fmt.Fprintf(&b, "%s  %s%s\n      %s\n", mark, c.Name, lesson, c.Figure)
		if !c.Pass && c.Hint.EN != "" {
			fmt.Fprintf(&b, "      提示: %s\n      hint: %s\n", c.Hint.ZH, c.Hint.EN)
		}
	}
	verdict := "通过 PASSED"
	if !s.OK() {
		verdict = "未通过 FAILED"
	}
	took := fmt.Sprintf("%.0f s", s.WallS)
	if s.built() {
		took = fmt.Sprintf("共 %.0f 秒（含编译）/ %.0f s in all, the build included", s.WallS, s.WallS)
	}
	fmt.Fprintf(&b, "\n%s: %d/%d 项通过 / checks passed, %s\n", verdict, s.Passed(), len(s.Checks), took)
	if len(s.Times) > 0 {
		var ts []string
		for _, t := range s.Times {
			ts = append(ts, fmt.Sprintf("%s %.1f s", t.Part, t.WallS))
		}
		fmt.Fprintf(&b, "用时 / time: %s\n", strings.Join(ts, ", "))
	}
	for _, r := range s.Reports {
		fmt.Fprintf(&b, "报告 / report: %s\n", r)
	}
	if s.Fleet != "" {
		fmt.Fprintf(&b, "实例设置 / fleet: %s\n", s.Fleet)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// partZH names the parts in Chinese.
var partZH = map[string]string{PartConformance: "接口一致性测试", PartBench: "压测", PartFaults: "故障场景"}

// Build compiles ./cmd/seckill in root into binary, the one the stack
// runs: to a new file first, then renamed over it, so running processes
// keep their old binary and a failed build leaves it in place. flags go to
// go build (e.g. -overlay).
func Build(ctx context.Context, goCmd, root, binary string, flags ...string) error {
	if goCmd == "" {
		goCmd = "go"
	}
	tmp := binary + ".new"
	args := append(append([]string{"build"}, flags...), "-o", tmp, "./cmd/seckill")
	cmd := exec.CommandContext(ctx, goCmd, args...)
	cmd.Dir = root
	if b, err := cmd.CombinedOutput(); err != nil {
		_ = os.Remove(tmp)
		return fmt.Errorf("build the lab with your code (go build ./cmd/seckill in %s): %w\n%s", root, err, b)
	}
	if err := os.Rename(tmp, binary); err != nil {
		return fmt.Errorf("install the new seckill binary: %w", err)
	}
	return nil
}

// writeOverlay writes overlay (paths relative to root) as a go build
// -overlay file and returns its name; the caller removes it.
func writeOverlay(root string, overlay map[string]string) (string, error) {
	replace := map[string]string{}
	for path, with := range overlay {
		abs, err := filepath.Abs(with)
		if err != nil {
			return "", fmt.Errorf("grade: overlay %s: %w", with, err)
		}
		replace[filepath.Join(root, path)] = abs
	}
	b, err := json.Marshal(map[string]any{"Replace": replace})
	if err != nil {
		return "", fmt.Errorf("grade: overlay: %w", err)
	}
	f, err := os.CreateTemp("", "seckill-grade-overlay-*.json")
	if err != nil {
		return "", fmt.Errorf("grade: overlay: %w", err)
	}
	if _, err := f.Write(b); err != nil {
		f.Close()
		return "", fmt.Errorf("grade: write overlay: %w", err)
	}
	if err := f.Close(); err != nil {
		return "", fmt.Errorf("grade: write overlay: %w", err)
	}
	return f.Name(), nil
}

// ModuleRoot returns the directory of the go.mod of the seckill module
// at or above dir.
func ModuleRoot(dir string) (string, error) {
	d, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	for {
		b, err := os.ReadFile(filepath.Join(d, "go.mod"))
		if err == nil && bytes.HasPrefix(b, []byte("module github.com/seckill-lab/seckill\n")) {
			return d, nil
		}
		parent := filepath.Dir(d)
		if parent == d {
			return "", fmt.Errorf("no seckill checkout at or above %s: run seckill grade from the repository (where go.mod is)", dir)
		}
		d = parent
	}
}
