package answers_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/seckill-lab/seckill/internal/grade"
	"github.com/seckill-lab/seckill/internal/grade/gradetest"
	"github.com/seckill-lab/seckill/internal/stack"
	"github.com/seckill-lab/seckill/internal/stack/stacktest"
)

// TestMain gives the answers' grades a stack of their own (the bench and
// the faults of the stack answers restart its instances and rebuild its
// binary), so that they run beside internal/grade's, which has another.
func TestMain(m *testing.M) {
	os.Exit(stacktest.Main(m, stack.Options{BasePort: 26600, Instances: 3, Backends: gradetest.Backends}))
}

// answer is one answer to an exercise kept under testdata/answers/EXERCISE/
// NAME/lock.go, graded in place of exercises/EXERCISE/lock.go (an overlay:
// the students' files stay as they are): the known wrong answers a class
// writes, and a right one.
type answer struct {
	exercise, name string
	// stack: the grade runs the bench or the faults, so the stack's binary
	// is rebuilt with the answer and its instances restarted; such grades
	// run one at a time. Otherwise the conformance part only, at once.
	stack bool
	parts []string
	// hints are the checks that must fail, each with a phrase of the hint
	// its cause calls for; figures, phrases of their figures. None: the
	// grade must pass.
	hints, figures map[string]string
}

var answers = []answer{
	{exercise: "redislock", name: "right", stack: true},
	// A right lock that also renews its key while held, whatever
	// Options.NoRenew says: exercise 1 does not ask for renewal, and must
	// not fail a lock for it (its expiry case pauses the holder).
	{exercise: "redislock", name: "watchdog", stack: true},
	{exercise: "redislock", name: "getset", hints: map[string]string{"MutualExclusion": "not a GET then a SET"}},
	{exercise: "redislock", name: "plaindel", hints: map[string]string{
		"ReleaseOnlyOwn": "a plain DEL checks nothing", "ExpiresWithoutRenewal": "compare and delete in one step"}},
	{exercise: "redislock", name: "noexpiry", stack: true, parts: []string{grade.PartConformance, grade.PartFaults},
		hints: map[string]string{
			"ExpiresWithoutRenewal":        "has no expiry (PTTL -1)",
			"ExpiryInOneCommand":           "has no expiry (PTTL -1)",
			"instance-crash (unprotected)": "did not free at its TTL",
		},
		figures: map[string]string{"instance-crash (unprotected)": "sales stopped for"}},
	{exercise: "redislock", name: "twocommands", hints: map[string]string{"ExpiryInOneCommand": "in a second command (SETNX, then PEXPIRE)"},
		figures: map[string]string{"ExpiryInOneCommand": "between its SET and its PEXPIRE"}},
	{exercise: "redislock", name: "gocompare", hints: map[string]string{"ReleaseOnlyOwn": "comparing the owner in Go"},
		figures: map[string]string{"ReleaseOnlyOwn": "compared the owner, then DELed"}},

	{exercise: "watchdog", name: "right"},
	{exercise: "watchdog", name: "neverstops", hints: map[string]string{"RenewalStops": "must stop at the release"}},
	{exercise: "watchdog", name: "noowner", hints: map[string]string{"RenewsOnlyOwn": "extended another holder's key"}},
	{exercise: "watchdog", name: "afterrelease", hints: map[string]string{"RenewalStops": "stop the watchdog first"}},

	{exercise: "fencing", name: "right"},
	{exercise: "fencing", name: "notonlease", hints: map[string]string{"TokensIncrease": "carries token 0"}},
	{exercise: "fencing", name: "version", hints: map[string]string{"TokensIncrease": "fence < token"}},
}

// TestAnswers grades each kept answer: a wrong one fails, on the checks
// named, each with the hint of its own cause; a right one passes (the
// redislock one on every part). The conformance-only grades run three at
// a time, beside the ones on the stack, which run one after another (each
// rebuilds the stack's binary with its answer; the stack goes at the end).
func TestAnswers(t *testing.T) {
	t.Run("conformance", func(t *testing.T) {
		t.Parallel()
		sem := make(chan struct{}, 3)
		for _, a := range answers {
			if a.stack {
				continue
			}
			t.Run(a.exercise+"/"+a.name, func(t *testing.T) {
				t.Parallel()
				sem <- struct{}{}
				defer func() { <-sem }()
				a.parts = []string{grade.PartConformance}
				gradeAnswer(t, a)
			})
		}
	})
	t.Run("stack", func(t *testing.T) {
		t.Parallel()
		for _, a := range answers {
			if a.stack {
				t.Run(a.exercise+"/"+a.name, func(t *testing.T) { gradeAnswer(t, a) })
			}
		}
	})
}

func gradeAnswer(t *testing.T, a answer) {
	o := gradetest.Options(t, a.exercise)
	o.Parts, o.Label, o.Build = a.parts, a.name, a.stack
	o.Overlay = map[string]string{
		filepath.Join("exercises", a.exercise, "lock.go"): filepath.Join("testdata", "answers", a.exercise, a.name, "lock.go"),
	}
	sheet, err := grade.Run(gradetest.Ctx(t), o)
	var out strings.Builder
	if sheet != nil {
		_ = sheet.Write(&out)
	}
	if len(a.hints) == 0 {
		if err != nil {
			t.Fatalf("grade of the right answer: %v\n%s", err, out.String())
		}
		logWall(t, a, sheet)
		return
	}
	if !errors.Is(err, grade.ErrFailed) {
		t.Fatalf("grade: err = %v, want ErrFailed\n%s", err, out.String())
	}
	checks := map[string]grade.Check{}
	for _, c := range sheet.Checks {
		checks[c.Name] = c
	}
	for name, hint := range a.hints {
		c, ok := checks[name]
		switch {
		case !ok:
			t.Errorf("no check %s on the sheet\n%s", name, out.String())
		case c.Pass:
			t.Errorf("check %s passed, want a failure\n%s", name, out.String())
		case !strings.Contains(c.Hint.EN, hint) || c.Hint.ZH == "":
			t.Errorf("check %s (cause %q, figure %q): hint %q, want its cause's, with %q", name, c.Cause, c.Figure, c.Hint.EN, hint)
		}
	}
	for name, fig := range a.figures {
		if c := checks[name]; !strings.Contains(c.Figure, fig) {
			t.Errorf("check %s: figure %q, want %q", name, c.Figure, fig)
		}
	}
	logWall(t, a, sheet)
}

// logWall logs the grade's time by part. How long a grade takes is a
// speed figure, measured where it means something: `make dry-run` times a
// class's grades on an idle machine (the handout's dry-run block). Here,
// under -race beside the suite's other packages, the grade is bounded by
// the grader's own deadline (ctxT: 3 minutes for one exercise, the bound
// grade.Run's conformance step also sets), not by the idle figure.
func logWall(t *testing.T, a answer, sheet *grade.Sheet) {
	t.Helper()
	t.Logf("grade of %s/%s: %.1f s in all (%+v)", a.exercise, a.name, sheet.WallS, sheet.Times)
}
