package grade_test

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/seckill-lab/seckill/exercises"
	"github.com/seckill-lab/seckill/internal/config"
	"github.com/seckill-lab/seckill/internal/democli"
	"github.com/seckill-lab/seckill/internal/grade"
	"github.com/seckill-lab/seckill/internal/grade/gradetest"
	"github.com/seckill-lab/seckill/internal/lab"
	"github.com/seckill-lab/seckill/internal/stack"
	"github.com/seckill-lab/seckill/internal/stack/stacktest"
	"github.com/seckill-lab/seckill/internal/testenv"
	"github.com/seckill-lab/seckill/stock"
	"github.com/seckill-lab/seckill/stock/catalog"
)

// TestMain gives the grader a stack of its own: it restarts the instances
// and runs fault scenarios, which the shared `make test` stack must not
// see.
func TestMain(m *testing.M) {
	os.Exit(stacktest.Main(m, stack.Options{BasePort: 26800, Instances: 3, Backends: gradetest.Backends}))
}

// TestStartersFail grades each exercise's starter as it is committed: the
// grade fails, and it fails on the property the starter breaks, with the
// figure that shows it.
func TestStartersFail(t *testing.T) {
	tests := []struct {
		exercise string
		parts    []string
		// fail are the checks that must fail, each with a piece of its
		// figure.
		fail map[string]string
	}{
		{"redislock", []string{grade.PartConformance, grade.PartBench}, map[string]string{
			"MutualExclusion":       "two holders at once: instance",
			"ExpiresWithoutRenewal": "want ErrNotHeld (it must not release the new holder's lock)",
			"oversold":              "oversold ",
		}},
		{"watchdog", []string{grade.PartConformance, grade.PartBench}, map[string]string{
			"HeldPastTTL": "ran out without renewal",
			"oversold":    "work 400ms, lock TTL 300ms",
		}},
		{"fencing", nil, map[string]string{
			"TokensIncrease":       "want a strictly increasing non-zero token",
			"etcd-lease (fencing)": "oversold ",
		}},
	}
	for _, tt := range tests {
		t.Run(tt.exercise, func(t *testing.T) {
			o := gradetest.Options(t, tt.exercise)
			o.Parts = tt.parts
			o.BuiltS = 2.5 // as the CLI passes its build's time
			sheet, err := grade.Run(gradetest.Ctx(t), o)
			if !errors.Is(err, grade.ErrFailed) {
				t.Fatalf("grade of the starter: err = %v, want ErrFailed", err)
			}
			// The sheet's time includes the build: its first step, and in
			// the whole.
			steps := 0.0
			for _, pt := range sheet.Times {
				steps += pt.WallS
			}
			if len(sheet.Times) == 0 || sheet.Times[0] != (grade.PartTime{Part: grade.PartBuild, WallS: o.BuiltS}) || sheet.WallS < steps {
				t.Errorf("times %+v, wall %.1f s: want the build's %.1f s first and the wall at least the steps' %.1f s", sheet.Times, sheet.WallS, o.BuiltS, steps)
			}
			failed := map[string]grade.Check{}
			for _, c := range sheet.Checks {
				if !c.Pass {
					failed[c.Name] = c
				}
			}
			for name, figure := range tt.fail {
				c, ok := failed[name]
				if !ok {
					t.Errorf("check %s passed or is missing; failed: %v", name, keys(failed))
					continue
				}
				if !strings.Contains(c.Figure, figure) {
					t.Errorf("check %s: figure %q, want it to contain %q", name, c.Figure, figure)
				}
				if c.Hint.ZH == "" || c.Hint.EN == "" || c.Lesson == 0 {
					t.Errorf("check %s has no lesson or hint in both languages: %+v", name, c)
				}
			}
			// The lab's last grade, as `seckill lab list` shows it.
			g, ok, err := lab.ReadGrade(o.Dir)
			if err != nil || !ok || g.Exercise != tt.exercise || g.OK || g.Failed != sheet.Failed() || g.Passed != sheet.Passed() {
				t.Errorf("lab grade = %+v, %v, %v; want %s with the sheet's %d passed, %d failed", g, ok, err, tt.exercise, sheet.Passed(), sheet.Failed())
			}
			var out strings.Builder
			if err := sheet.Write(&out); err != nil {
				t.Fatal(err)
			}
			for _, want := range []string{"✗ 失败 FAIL", "未通过 FAILED", "提示: ", "hint: ", "（含编译）", "s in all, the build included", "build 2.5 s"} {
				if !strings.Contains(out.String(), want) {
					t.Errorf("score sheet lacks %q:\n%s", want, out.String())
				}
			}
		})
	}
}

// TestKeysPass grades each exercise's answer key, every part: it passes.
func TestKeysPass(t *testing.T) {
	for _, e := range exercises.All() {
		t.Run(e.Name, func(t *testing.T) {
			o := gradetest.Options(t, e.Name)
			o.Key = true
			sheet, err := grade.Run(gradetest.Ctx(t), o)
			if err != nil {
				var out strings.Builder
				if sheet != nil {
					_ = sheet.Write(&out)
				}
				t.Fatalf("grade of the answer key %s: %v\n%s", e.Key, err, out.String())
			}
			parts := map[string]int{}
			for _, c := range sheet.Checks {
				parts[c.Part]++
			}
			if parts[grade.PartConformance] < 4 || parts[grade.PartBench] < 5 || parts[grade.PartFaults] < 1 {
				t.Errorf("checks by part %v: want the conformance cases, the bench's invariants and a fault scenario", parts)
			}
		})
	}
}

// TestBadInput: an unknown exercise and a directory without a stack are
// errors that say what to do.
func TestBadInput(t *testing.T) {
	if _, err := exercises.Find("nope"); err == nil || !strings.Contains(err.Error(), "redislock") {
		t.Errorf("Find(nope) = %v, want an error listing the exercises", err)
	}
	o := gradetest.Options(t, "redislock")
	o.Dir = t.TempDir()
	if _, err := grade.Run(context.Background(), o); !errors.Is(err, stack.ErrNotRunning) {
		t.Errorf("grade without a stack: err = %v, want stack.ErrNotRunning", err)
	}
	if _, err := grade.ModuleRoot(t.TempDir()); err == nil || !strings.Contains(err.Error(), "go.mod") {
		t.Errorf("ModuleRoot outside the checkout: %v, want an error naming go.mod", err)
	}
}

func keys(m map[string]grade.Check) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

// TestGradeRestoresFleet: a grade that switches the fleet (its bench, its
// scenarios) leaves it running the strategy and knobs it found, as
// `seckill status` shows them, whatever the grade and the target.
func TestGradeRestoresFleet(t *testing.T) {
	dir := testenv.Get(t, config.EnvStackDir)
	fleet, err := democli.FromStack(dir)
	if err != nil {
		t.Fatal(err)
	}
	ctx := gradetest.Ctx(t)
	before := stock.Config{Name: catalog.Redis, WorkDelay: 5 * time.Millisecond, LockTTL: 3 * time.Second, NoLeaseCheck: true, NoWatchdog: true}
	if _, err := fleet.SetStrategy(ctx, before); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _, _ = fleet.SetStrategy(context.Background(), stock.Config{Name: catalog.None}) })
	want := stack.DescribeStrategy(before)
	for _, s := range []string{"no lease check", "no watchdog", "work 5ms", "ttl 3s"} {
		if !strings.Contains(want, s) {
			t.Fatalf("status shows %q for %+v: want it to name %q", want, before, s)
		}
	}
	tests := []struct {
		exercise string
		key      bool
		parts    []string
	}{
		{"watchdog", false, []string{grade.PartBench}},
		{"redislock", true, []string{grade.PartFaults}},
	}
	for _, tt := range tests {
		t.Run(tt.exercise, func(t *testing.T) {
			o := gradetest.Options(t, tt.exercise)
			o.Key, o.Parts = tt.key, tt.parts
			sheet, err := grade.Run(ctx, o)
			if err != nil && !errors.Is(err, grade.ErrFailed) {
				t.Fatal(err)
			}
			if !strings.Contains(sheet.Fleet, want) {
				t.Errorf("sheet says the fleet runs %q, want %q", sheet.Fleet, want)
			}
			_, cs, err := stack.Status(ctx, dir)
			if err != nil {
				t.Fatal(err)
			}
			n := 0
			for _, c := range cs {
				if c.Kind != stack.KindInstance {
					continue
				}
				n++
				if c.Strategy != want {
					t.Errorf("after grade %s: status shows %s running %q, want %q as before", tt.exercise, c.Name, c.Strategy, want)
				}
			}
			if n == 0 {
				t.Fatal("status shows no instance")
			}
		})
	}
}
