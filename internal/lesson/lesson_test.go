package lesson

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/seckill-lab/seckill/bench"
	"github.com/seckill-lab/seckill/bench/confidence"
	"github.com/seckill-lab/seckill/internal/democli"
	"github.com/seckill-lab/seckill/internal/scenario"
	"github.com/seckill-lab/seckill/internal/stack"
	"github.com/seckill-lab/seckill/internal/stack/stacktest"
	"github.com/seckill-lab/seckill/internal/testenv"
	"github.com/seckill-lab/seckill/stock"
	"github.com/seckill-lab/seckill/stock/catalog"
)

// TestMain gives the course a stack of its own (every server, base port
// 27200, its lessons' side stacks above it: stack.SideBase): the lessons
// re-scale the fleet and switch its strategy.
func TestMain(m *testing.M) {
	// The packaged servers only: the lessons of the optional ones
	// (Consul) run on internal/scenario's stack, and here say what they
	// need.
	os.Exit(stacktest.Main(m, stack.Options{BasePort: 27200, Backends: []stack.Backend{stack.BackendRedis, "etcd", "zookeeper", stack.BackendMySQL}}))
}

func TestCourseOrder(t *testing.T) {
	if len(course) < 18 {
		t.Fatalf("%d lessons, want at least 18", len(course))
	}
	seen := map[string]bool{}
	for i, l := range course {
		if l.N != i+1 {
			t.Errorf("lesson %q is number %d at position %d", l.Slug, l.N, i+1)
		}
		if seen[l.Slug] {
			t.Errorf("slug %q twice", l.Slug)
		}
		seen[l.Slug] = true
		for name, v := range map[string]string{"TitleZH": l.TitleZH, "TitleEN": l.TitleEN, "ShowsZH": l.ShowsZH, "ShowsEN": l.ShowsEN, "Seed": l.Seed, "SeedFigure": l.SeedFigure} {
			if strings.TrimSpace(v) == "" {
				t.Errorf("lesson %d has no %s", l.N, name)
			}
		}
		// Where to look: a page of one of its reports, a section, in both
		// languages.
		if lk := l.Look; lk.Report < 1 || (lk.Page != BenchPage && lk.Page != ScenarioPage) || lk.Section == "" || strings.TrimSpace(lk.EN) == "" || strings.TrimSpace(lk.ZH) == "" {
			t.Errorf("lesson %d says not where to look: %+v", l.N, lk)
		}
		if l.run == nil || l.Estimate <= 0 || l.Estimate > 60*time.Second && l.Longer == "" {
			t.Errorf("lesson %d: no experiment, or an estimate (%s) past 60 s", l.N, l.Estimate)
		}
	}
}

func TestFind(t *testing.T) {
	tests := []struct {
		key  string
		want int
	}{{"1", 1}, {"no-lock", 1}, {"22", 22}, {"fencing", 22}, {"0", 0}, {"nope", 0}, {"", 0}}
	for _, tt := range tests {
		l, err := Find(tt.key)
		if tt.want == 0 {
			if !errors.Is(err, ErrUnknown) {
				t.Errorf("Find(%q): %v, want ErrUnknown", tt.key, err)
			}
			continue
		}
		if err != nil || l.N != tt.want {
			t.Errorf("Find(%q) = %d, %v; want %d", tt.key, l.N, err, tt.want)
		}
	}
	var b bytes.Buffer
	if err := WriteList(&b); err != nil || strings.Count(b.String(), "\n") != len(course)+1 || !strings.Contains(b.String(), "--topology ha") {
		t.Errorf("WriteList: %v\n%s", err, b.String())
	}
}

// TestLongerSaysWhy: a lesson over a minute says why before it runs, and
// a failure story's where-to-look names the rows its table has (the
// protections: unprotected, lease-check, fencing).
func TestLongerSaysWhy(t *testing.T) {
	rowName := regexp.MustCompile(`the ([a-z-]+) row`)
	for _, l := range course {
		var b bytes.Buffer
		if err := WriteLesson(&b, l); err != nil {
			t.Fatal(err)
		}
		if said := strings.Contains(b.String(), "over a minute: "+l.Longer); l.Longer != "" && !said || l.Longer == "" && strings.Contains(b.String(), "over a minute") {
			t.Errorf("lesson %d (estimate %s): the reason it takes longer printed %v\n%s", l.N, l.Estimate, said, b.String())
		}
		if l.Look.Page != ScenarioPage {
			continue
		}
		for _, m := range rowName.FindAllStringSubmatch(strings.ToLower(l.Look.EN), -1) {
			switch scenario.Protection(m[1]) {
			case scenario.ProtectNone, scenario.ProtectLeaseCheck, scenario.ProtectFencing:
			default:
				t.Errorf("lesson %d: where to look names the %q row; the story's table has rows unprotected, lease-check and fencing", l.N, m[1])
			}
		}
	}
}

// TestLessonsShort runs every lesson on its short load against the
// package's stack and checks its verdict: each reproduces the source's story
// (or its kind), and a lesson that needs another topology is skipped with
// the `seckill up` line. The lessons that compare speeds are checked to
// run, not for their verdict. A failure story is a race that a run may miss;
// such a lesson gets two more tries, but a fenced run that oversells fails
// at once.
func TestLessonsShort(t *testing.T) {
	dir := testenv.Get(t, testenv.StackDir)
	out := t.TempDir()
	var outs []Outcome
	for _, l := range course {
		t.Run(l.Slug, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
			defer cancel()
			var o Outcome
			var err error
			for try := 1; try <= 3; try++ {
				o, err = Run(ctx, l, Options{Dir: dir, Short: true, Seed: int64(try), OutDir: out})
				if err != nil {
					t.Fatal(err)
				}
				// A missed race (the strike did not land, or no contention
				// this time) gets another try; anything else is the verdict.
				missed := strings.Contains(o.Why, "not most") || strings.Contains(o.Why, "the race needs contention")
				if o.Verdict != NotReproduced || !missed {
					break
				}
				t.Logf("try %d: %s (%s)", try, o.Ours, o.Why)
			}
			outs = append(outs, o)
			switch {
			case l.Topology == stack.TopologyHA:
				if o.Verdict != Skipped || !strings.Contains(o.Why, "seckill up --topology ha") {
					t.Errorf("on a single stack: %s (%s), want skipped naming `seckill up --topology ha`", o.Verdict, o.Why)
				}
			case l.Backend != "":
				// The package's stack runs without the optional servers
				// (internal/scenario runs their stories on a stack of its
				// own): the lesson says what it needs.
				if o.Verdict != Skipped || !strings.Contains(o.Why, "make deps") {
					t.Errorf("on a stack without %s: %s (%s), want skipped naming make deps", l.Backend, o.Verdict, o.Why)
				}
			case l.Speed:
				// A comparison of speeds: its verdict follows the machine's
				// load. It must have run; the figures are in o.Ours.
				if o.Verdict == Skipped || strings.Contains(o.Why, "a defect") {
					t.Errorf("%s: %s (%s)", o.Ours, o.Verdict, o.Why)
				}
				t.Logf("%s: %s", o.Ours, o.Verdict)
			case o.Verdict != Reproduced && o.Verdict != InKind:
				t.Errorf("%s: %s (%s)", o.Ours, o.Verdict, o.Why)
			}
			if t.Failed() {
				logFailedChecks(t, o.Reports)
			}
			for _, c := range o.Commands {
				// A command a user can paste: the built binary, the stack.
				if !strings.HasPrefix(c, "bin/seckill ") || !strings.Contains(c, " --dir "+dir) {
					t.Errorf("repeat command %q: want bin/seckill ... --dir %s", c, dir)
				}
			}
			if o.Verdict != Skipped && (o.Ours == "" || len(o.Commands) == 0 || len(o.Reports) == 0 || len(o.Figures) == 0) {
				t.Errorf("outcome without figures, command, report or chart: %+v", o)
			}
			if o.Verdict != Skipped {
				// The page the lesson says to look at exists, and has the
				// section it names (a bench report's heading).
				where := l.Look.Where(o)
				b, err := os.ReadFile(where)
				if err != nil {
					t.Errorf("where to look: %v", err)
				} else if sec, _, _ := strings.Cut(l.Look.Section, ":"); l.Look.Page == BenchPage && !bytes.Contains(b, []byte("<h2>"+sec)) {
					t.Errorf("where to look: %s has no section %q", where, l.Look.Section)
				}
			}
		})
	}
	fleetState{instances: stack.DefaultInstances, cfg: stock.Config{Name: catalog.None}}.restore(dir)
	if err := Write(filepath.Join(out, "course"), Course{Date: time.Now(), Short: true, Outcomes: outs}); err != nil {
		t.Fatal(err)
	}
	html, err := os.ReadFile(filepath.Join(out, "course", "course.html"))
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(html, []byte("<script")) || bytes.Contains(html, []byte("http://")) || bytes.Count(html, []byte("<section")) != len(outs) {
		t.Errorf("course.html: a script, an external reference, or not one section per lesson")
	}
	// Its charts, and a link to each lesson's report page that exists.
	ran := 0
	for _, o := range outs {
		if o.Verdict == Skipped {
			continue
		}
		ran++
		for _, r := range o.Reports {
			href := filepath.Base(r) + "/" + pageOf(r)
			if !bytes.Contains(html, []byte(`href="`+href+`"`)) {
				t.Errorf("course.html has no link to %s", href)
			}
			if _, err := os.Stat(filepath.Join(out, href)); err != nil {
				t.Errorf("course.html links %s: %v", href, err)
			}
		}
	}
	if n := bytes.Count(html, []byte("<svg")); n < ran {
		t.Errorf("course.html has %d charts for %d lessons run", n, ran)
	}
}

// TestStoryVerdict: a story is reproduced when the unprotected runs
// oversold in most repeats and fencing in none; one run that oversold of
// three is not a lesson.
func TestStoryVerdict(t *testing.T) {
	un := func(oversold, runs int) scenario.Row {
		return scenario.Row{Strategy: "redis", Protection: scenario.ProtectNone, Runs: runs, RunsOversold: oversold, RunsTwoHolders: oversold, Oversold: 2 * oversold}
	}
	fen := func(oversold, runs int) scenario.Row {
		return scenario.Row{Strategy: "redis", Protection: scenario.ProtectFencing, Runs: runs, RunsOversold: oversold, RunsTwoHolders: oversold, Oversold: oversold}
	}
	lease := func(oversold, runs int) scenario.Row {
		return scenario.Row{Strategy: "redis", Protection: scenario.ProtectLeaseCheck, Runs: runs, RunsOversold: oversold, Oversold: oversold}
	}
	tests := []struct {
		name string
		rows []scenario.Row
		want Verdict
		why  string
	}{
		{"most runs oversold, fencing none", []scenario.Row{un(2, 3), fen(0, 3)}, Reproduced, ""},
		{"one run of three", []scenario.Row{un(1, 3), fen(0, 3)}, NotReproduced, "in 1 of 3 (95 % interval 0.8–91 %), not most"},
		{"no run of three", []scenario.Row{un(0, 3), fen(0, 3)}, NotReproduced, "in 0 of 3 (95 % interval 0–71 %: 3 runs rule out only rates above 71 %), not most"},
		{"lost updates show two holders", []scenario.Row{{Strategy: "consul-nodelay", Protection: scenario.ProtectNone, Runs: 1, RunsTwoHolders: 1, LostUpdates: 1}, fen(0, 1)}, Reproduced, ""},
		{"half is not most", []scenario.Row{un(5, 10), fen(0, 10)}, NotReproduced, "5 of 10"},
		{"the one short run", []scenario.Row{un(1, 1), fen(0, 1)}, Reproduced, ""},
		{"fencing oversold", []scenario.Row{un(3, 3), fen(1, 3)}, NotReproduced, "fencing let two holders write in 1 of 3 runs (95 % interval 0.8–91 %): a defect"},
		{"lease check is no guarantee", []scenario.Row{un(3, 3), lease(2, 3), fen(0, 3)}, Reproduced, "not a guarantee"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			out := storyVerdict("pause-holder", tc.rows)
			if out.Verdict != tc.want || !strings.Contains(out.Why, tc.why) {
				t.Errorf("verdict %s (%q), want %s with %q", out.Verdict, out.Why, tc.want, tc.why)
			}
			for _, rw := range tc.rows {
				// The frequency, its 95 % interval, and for 0 of n what
				// the runs rule out.
				want := fmt.Sprintf("oversold in %d of %d runs (%s; ", rw.RunsOversold, rw.Runs, confidence.Note(rw.RunsOversold, rw.Runs, "run"))
				if !strings.Contains(out.Ours, want) {
					t.Errorf("ours %q lacks %q", out.Ours, want)
				}
			}
			if f := tc.rows[len(tc.rows)-1]; f.RunsOversold == 0 && f.Runs == 3 && !strings.Contains(out.Ours, "redis fencing: oversold in 0 of 3 runs (95 % interval 0–71 %: 3 runs rule out only rates above 71 %; 0 units;") {
				t.Errorf("ours %q: the fenced 0 of 3 without what 3 runs rule out", out.Ours)
			}
		})
	}
}

// TestLessonRestoresFleet: a lesson leaves the fleet as it found it: its
// setting (not the lesson's 250 ms work and 100 ms TTL) and its size.
func TestLessonRestoresFleet(t *testing.T) {
	dir := testenv.Get(t, testenv.StackDir)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	f, err := democli.FromStack(dir)
	if err != nil {
		t.Fatal(err)
	}
	want := stock.Config{Name: catalog.Redis}
	want.Fencing, want.LockTTL = true, 7*time.Second
	if _, err := f.SetStrategy(ctx, want); err != nil {
		t.Fatal(err)
	}
	defer func() { _, _ = f.SetStrategy(context.Background(), stock.Config{Name: catalog.None}) }()
	l, err := Find("no-watchdog")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Run(ctx, l, Options{Dir: dir, Short: true}); err != nil {
		t.Fatal(err)
	}
	got, err := f.Strategies(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range got {
		if !s.Config.Equal(want) {
			t.Errorf("%s runs %+v after the lesson, want %+v as before it", s.Instance, s.Config, want)
		}
	}
}

// TestWords: a repeat command on course.html wraps between its words,
// never between a flag and its value.
func TestWords(t *testing.T) {
	tests := []struct {
		line string
		want string
	}{
		{"bin/seckill bench --strategies none --requests 60 --dir .seckill", "[bin/seckill] [bench] [--strategies none] [--requests 60] [--dir .seckill]"},
		{"bin/seckill bench --no-watchdog --no-lease-check --lock-ttl 100ms", "[bin/seckill] [bench] [--no-watchdog] [--no-lease-check] [--lock-ttl 100ms]"},
		{"bin/seckill scenario run zk-session --repeat 3", "[bin/seckill] [scenario] [run] [zk-session] [--repeat 3]"},
	}
	for _, tc := range tests {
		var got []string
		for _, w := range words(tc.line) {
			got = append(got, "["+strings.Join(w, " ")+"]")
		}
		if g := strings.Join(got, " "); g != tc.want {
			t.Errorf("words(%q) = %s, want %s", tc.line, g, tc.want)
		}
	}
}

// logFailedChecks logs, for a lesson that failed, the invariants its bench
// reports failed and the runs' outcomes: the report directories are
// temporary, so the log is what is left of them.
func logFailedChecks(t *testing.T, reports []string) {
	t.Helper()
	for _, dir := range reports {
		b, err := os.ReadFile(filepath.Join(dir, "report.json"))
		if err != nil {
			continue // a scenario's directory, or none written
		}
		var rep bench.Report
		if err := json.Unmarshal(b, &rep); err != nil {
			t.Logf("%s: %v", dir, err)
			continue
		}
		for _, r := range rep.Runs {
			for _, inv := range r.Invariants {
				if inv.Failed() && inv.Applicable {
					t.Logf("%s: %s (%d ok, outcomes %v, errors %v, faults %v): %s failed: %s",
						filepath.Base(dir), r.Label(), r.OK, r.Outcomes, r.ErrorKinds, r.Faults, inv.Name, inv.Detail)
				}
			}
		}
	}
}
