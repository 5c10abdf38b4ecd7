package lab

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/seckill-lab/seckill/internal/ports"
	"github.com/seckill-lab/seckill/internal/stack"
	"github.com/seckill-lab/seckill/internal/supervise"
	"github.com/seckill-lab/seckill/internal/testenv"
)

var seckillBin string

func TestMain(m *testing.M) {
	bin, cleanup, err := testenv.BuildSeckill()
	if err != nil {
		fmt.Fprintln(os.Stderr, "lab test:", err)
		os.Exit(1)
	}
	seckillBin = bin
	code := m.Run()
	cleanup()
	os.Exit(code)
}

// window is the suite's range for this package's labs (ports.Suite): two
// labs side by side.
func window() ports.Range {
	lo := testenv.Port(23000)
	return ports.Range{Lo: lo, Hi: lo + 2099}
}

func TestValidName(t *testing.T) {
	tests := []struct {
		name string
		ok   bool
	}{
		{"alice", true},
		{"team-3", true},
		{"a", true},
		{strings.Repeat("a", 32), true},
		{strings.Repeat("a", 33), false},
		{"", false},
		{"Alice", false},
		{"3team", false},
		{"team-", false},
		{"a_b", false},
		{"../x", false},
		{".make-test-1", false},
	}
	for _, tt := range tests {
		err := ValidName(tt.name)
		if (err == nil) != tt.ok {
			t.Errorf("ValidName(%q) = %v, want ok=%v", tt.name, err, tt.ok)
		}
		if err != nil && !strings.Contains(err.Error(), "lowercase letters, digits and dashes") {
			t.Errorf("ValidName(%q): %v does not say what a name is", tt.name, err)
		}
	}
}

// TestFootprint: a lab's block holds its stack (with the proxy, 3
// instances, or 50 without), and nothing of its lessons' side stacks,
// which take ports of their own (ReserveSide).
func TestFootprint(t *testing.T) {
	fp := Footprint(10000)
	for _, topology := range stack.Topologies() {
		main := ports.Span(10000, max(stack.Span(topology, 3, true), stack.Span(topology, stack.MaxInstances, false)))
		if !main.Within(fp) {
			t.Errorf("%s: the stack's %s is not inside %s", topology, main, fp)
		}
	}
	if side := SideRange(stack.SideBase(10000, 0)); side.Overlaps(fp) {
		t.Errorf("the first side stack's %s overlaps the lab's %s", side, fp)
	}
}

// TestReserveSide: a lesson's side stack goes to stack.SideBase when its
// ports are free, elsewhere when a lab, another lesson's side stack, a
// listener or (for a lab's lesson) the test suite is there; the suite's
// own lessons keep their SideBase in the suite's ports; a reservation
// keeps new labs off until it is given back or its process is gone.
func TestReserveSide(t *testing.T) {
	free := func(ports.Range) (int, bool) { return 0, false }
	me := os.Getpid()
	const base = 12000 // a lab's stack in the default window
	side := stack.SideBase(base, 0)
	tests := []struct {
		name  string
		base  int
		setup func(t *testing.T, reg string)
		taken func(ports.Range) (int, bool)
		want  func(got int) bool
		why   string
	}{
		{"free", base, nil, free, func(got int) bool { return got == side }, "SideBase"},
		{"a lab there", base, func(t *testing.T, reg string) {
			if err := writeJSON(recordPath(reg, "bob"), Record{Name: "bob", BasePort: side}); err != nil {
				t.Fatal(err)
			}
		}, free, func(got int) bool {
			return !SideRange(got).Overlaps(Footprint(side)) && !SideRange(got).Overlaps(Footprint(base))
		}, "off lab bob and its own lab"},
		{"another lesson's side stack there", base, func(t *testing.T, reg string) {
			if err := writeJSON(sidePath(reg, os.Getppid(), side), sideRun{Pid: os.Getppid(), StartTime: supervise.StartTime(os.Getppid()), Base: side}); err != nil {
				t.Fatal(err)
			}
		}, free, func(got int) bool { return !SideRange(got).Overlaps(SideRange(side)) }, "off the other side stack"},
		{"a dead lesson's record", base, func(t *testing.T, reg string) {
			if err := writeJSON(sidePath(reg, 1<<30, side), sideRun{Pid: 1 << 30, StartTime: 1, Base: side}); err != nil {
				t.Fatal(err)
			}
		}, free, func(got int) bool { return got == side }, "SideBase (the dead record dropped)"},
		{"something listens there", base, nil, func(r ports.Range) (int, bool) { return side + 5, r.Lo <= side+5 && side+5 <= r.Hi },
			func(got int) bool { return !SideRange(got).Overlaps(SideRange(side)) }, "off the listener"},
		{"a lab's lesson next to the suite", 25600, nil, free, func(got int) bool {
			_, in := SideRange(got).OverlapsAny(ports.Suite)
			return !in
		}, "off the test suite's ports"},
		{"the suite's own lesson", 27200, nil, free, func(got int) bool { return got == stack.SideBase(27200, 0) }, "SideBase inside the suite"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			reg := t.TempDir()
			if tt.setup != nil {
				tt.setup(t, reg)
			}
			got, release, err := reserveSide(reg, "/labs/ann", tt.base, 0, me, tt.taken)
			if err != nil {
				t.Fatal(err)
			}
			if !tt.want(got) || !SideRange(got).Within(ports.Usable) {
				t.Fatalf("side stack on %d (%s): want %s", got, SideRange(got), tt.why)
			}
			// While reserved, a second pick and a new lab keep off it.
			again, release2, err := reserveSide(reg, "/labs/ann", tt.base, 0, me, tt.taken)
			if err != nil {
				t.Fatal(err)
			}
			defer release2()
			if SideRange(again).Overlaps(SideRange(got)) {
				t.Errorf("a second side stack on %d overlaps the first on %d", again, got)
			}
			lab, err := reserve(Options{Name: "cat", Owner: "cat", Dir: t.TempDir(), Registry: reg, Window: ports.Range{Lo: got, Hi: got + 2000}, Topology: stack.TopologySingle, Instances: 1, inSuite: true})
			if err == nil && lab.Footprint().Overlaps(SideRange(got)) {
				t.Errorf("lab cat on %s overlaps the reserved side stack %s", lab.Footprint(), SideRange(got))
			}
			release()
			if _, err := os.Stat(sidePath(reg, me, got)); !os.IsNotExist(err) {
				t.Errorf("the reservation is still there after release (%v)", err)
			}
		})
	}
}

// TestPickBase: labs are packed from the window's bottom, around what is
// kept or taken, and a full window says how to widen it.
func TestPickBase(t *testing.T) {
	w := ports.Range{Lo: 40000, Hi: 44999}
	free := func(ports.Range) (int, bool) { return 0, false }
	n := Footprint(0).Hi + 1
	tests := []struct {
		name  string
		as    []avoid
		taken func(ports.Range) (int, bool)
		want  int // 0: an error
	}{
		{"empty", nil, free, 40000},
		{"after a lab", []avoid{{Footprint(40000), "lab a"}}, free, 40000 + ((n+step-1)/step)*step},
		{"below a range kept", []avoid{{ports.Range{Lo: 40000 + n, Hi: 44999}, "suite"}}, free, 40000},
		{"something listens low", nil, func(r ports.Range) (int, bool) { return 40010, r.Lo <= 40010 }, 40050},
		{"full", []avoid{{w, "suite"}}, free, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := pickBase(w, tt.as, tt.taken)
			if tt.want == 0 {
				if err == nil || !strings.Contains(err.Error(), "--port-min") || !strings.Contains(err.Error(), "seckill lab rm") {
					t.Fatalf("got %d, %v: want an error saying how to make room", got, err)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("got %d, %v; want %d", got, err, tt.want)
			}
		})
	}
}

// TestShiftPicks: shift 0 when nothing is in the way; another, recorded,
// when a lab, a running make test or a listener is; a dead run's record
// is dropped.
func TestShiftPicks(t *testing.T) {
	reg := t.TempDir()
	free := func([]ports.Range) (int, bool) { return 0, false }
	me := os.Getpid()
	s, err := testShift(reg, me, free)
	if err != nil || s.Shift != 0 || !s.Reserved {
		t.Fatalf("empty registry: %+v, %v; want shift 0, reserved", s, err)
	}
	// Another run (this test's parent stands for it: it lives) must
	// keep off this one's ports.
	other := os.Getppid()
	s2, err := testShift(reg, other, free)
	if err != nil || s2.Shift == 0 || !strings.Contains(s2.Why, fmt.Sprintf("pid %d", me)) {
		t.Fatalf("second run: %+v, %v; want another shift, saying pid %d holds 0", s2, err, me)
	}
	for _, a := range ports.ShiftAll(ports.Suite, s2.Shift) {
		if _, ok := a.OverlapsAny(ports.Suite); ok {
			t.Fatalf("shift %d: %s overlaps the first run's ports", s2.Shift, a)
		}
	}
	if !strings.Contains(s2.String(), fmt.Sprintf("SECKILL_TEST_PORT_SHIFT=%d", s2.Shift)) {
		t.Errorf("line %q does not name the shift", s2)
	}
	// A dead run's record goes; a lab keeps its block.
	if err := os.WriteFile(testRunPath(reg, 1<<30), []byte(`{"pid":1073741824,"start_time":1,"shift":0}`), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{testRunPath(reg, me), testRunPath(reg, other)} {
		if err := os.Remove(f); err != nil {
			t.Fatal(err)
		}
	}
	if err := writeJSON(recordPath(reg, "alice"), Record{Name: "alice", BasePort: ports.SuiteBase, Topology: stack.TopologySingle, Instances: 1}); err != nil {
		t.Fatal(err)
	}
	s3, err := testShift(reg, 0, free)
	if err != nil || s3.Shift == 0 || !strings.Contains(s3.Why, "lab alice") || s3.Reserved {
		t.Fatalf("with lab alice on the suite's base: %+v, %v", s3, err)
	}
	if _, err := os.Stat(testRunPath(reg, 1<<30)); !os.IsNotExist(err) {
		t.Errorf("the dead run's record is still there (%v)", err)
	}
	// Something listening on shift 0's ports moves it too.
	if err := os.Remove(recordPath(reg, "alice")); err != nil {
		t.Fatal(err)
	}
	busy0 := func(rs []ports.Range) (int, bool) {
		for _, r := range rs {
			if r.Lo == ports.SuiteBase {
				return r.Lo + 80, true
			}
		}
		return 0, false
	}
	s4, err := testShift(reg, 0, busy0)
	if err != nil || s4.Shift == 0 || !strings.Contains(s4.Why, fmt.Sprintf("port %d is in use", ports.SuiteBase+80)) {
		t.Fatalf("with 27080 taken: %+v, %v", s4, err)
	}
}

func TestGradeRoundTrip(t *testing.T) {
	dir := t.TempDir()
	if _, ok, err := ReadGrade(dir); ok || err != nil {
		t.Fatalf("never graded: ok=%v err=%v", ok, err)
	}
	g := Grade{Exercise: "redislock", Passed: 7, Failed: 2, At: time.Date(2026, 5, 1, 9, 30, 0, 0, time.UTC)}
	if err := WriteGrade(dir, g); err != nil {
		t.Fatal(err)
	}
	got, ok, err := ReadGrade(dir)
	if err != nil || !ok || got != g {
		t.Fatalf("read back %+v ok=%v err=%v, want %+v", got, ok, err, g)
	}
	if got.String() != "redislock 7/9 fail" {
		t.Errorf("String() = %q", got)
	}
	g.Passed, g.Failed, g.OK = 9, 0, true
	if err := WriteGrade(dir, g); err != nil {
		t.Fatal(err)
	}
	if got, _, _ := ReadGrade(dir); got.String() != "redislock 9/9 ok" {
		t.Errorf("after a pass: %q", got)
	}
	for _, bad := range []Grade{{Passed: 1}, {Exercise: "x", Failed: -1}} {
		if err := WriteGrade(dir, bad); err == nil {
			t.Errorf("WriteGrade(%+v): no error", bad)
		}
	}
	if err := WriteGrade(filepath.Join(dir, "nope"), g); err == nil || !strings.Contains(err.Error(), "does not exist") {
		t.Errorf("no run directory: %v", err)
	}
}

// TestTwoLabs creates two labs side by side in a registry of its own, as
// `seckill lab new` does (both at once: the registry's lock gives each its
// own block), lists them running with their grades, refuses a third of
// the same name before starting anything, and removes them.
func TestTwoLabs(t *testing.T) {
	testenv.Binary(t, "redis-server")
	reg, root := t.TempDir(), t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	names := []string{"ann", "bob"}
	recs := make([]Record, len(names))
	sts := make([]*stack.State, len(names))
	errs := make([]error, len(names))
	var wg sync.WaitGroup
	for i, name := range names {
		dir := filepath.Join(root, name)
		t.Cleanup(func() { _ = stack.Down(context.Background(), dir, nil) })
		wg.Add(1)
		go func() {
			defer wg.Done()
			// ann's lab is sized to exercise 1: Redis and MySQL only.
			var forEx string
			if name == "ann" {
				forEx = "redislock"
			}
			recs[i], sts[i], errs[i] = New(ctx, Options{Name: name, Registry: reg, Instances: 1, Dir: dir, Window: window(), Binary: seckillBin, Owner: "t-" + name, inSuite: true, For: forEx})
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			testenv.Unavailable(t, "lab "+names[i]+"'s stack", err)
		}
	}
	// Exercise 1's lab starts no etcd, ZooKeeper or Consul; the full one
	// starts etcd and ZooKeeper (Consul where make deps built it).
	for i, st := range sts {
		var started []string
		for _, c := range st.Components {
			started = append(started, c.Name)
		}
		for _, g := range []string{"etcd", "zookeeper", "consul"} {
			switch has := slices.Contains(started, g); {
			case i == 0 && has:
				t.Errorf("lab ann (for redislock) runs %s: %v", g, started)
			case i == 1 && !has && g != "consul":
				t.Errorf("lab bob (every server) runs no %s: %v", g, started)
			}
		}
	}
	if a, b := recs[0].Footprint(), recs[1].Footprint(); a.Overlaps(b) || !a.Within(window()) || !b.Within(window()) {
		t.Fatalf("footprints %s and %s: want disjoint, inside %s", a, b, window())
	}
	for _, r := range recs {
		if _, err := os.Stat(filepath.Join(r.Dir, "env.sh")); err != nil {
			t.Errorf("lab %s: no env.sh to source: %v", r.Name, err)
		}
	}

	// The grader's record shows in the list.
	if err := WriteGrade(recs[0].Dir, Grade{Exercise: "redislock", Passed: 7, Failed: 2, At: time.Now()}); err != nil {
		t.Fatal(err)
	}
	ss, err := List(ctx, reg)
	if err != nil {
		t.Fatal(err)
	}
	if len(ss) != 2 {
		t.Fatalf("list: %d labs, want 2: %+v", len(ss), ss)
	}
	for i, s := range ss {
		if s.Name != names[i] || s.State != Running || s.RSSBytes <= 0 || s.Owner != "t-"+names[i] {
			t.Errorf("lab %d: %+v; want %s running, owned by t-%s, with its memory", i, s, names[i], names[i])
		}
	}
	if ss[0].Grade == nil || ss[0].Grade.String() != "redislock 7/9 fail" || ss[1].Grade != nil {
		t.Errorf("grades: %v and %v; want redislock 7/9 fail and none", ss[0].Grade, ss[1].Grade)
	}
	var table bytes.Buffer
	if err := WriteTable(&table, ss); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"NAME", "ann", "bob", "running", "redislock 7/9 fail", fmt.Sprint(recs[1].BasePort), "2 labs"} {
		if !strings.Contains(table.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, table.String())
		}
	}

	// A name taken: refused, naming the fix, nothing started.
	_, _, err = New(ctx, Options{Name: "ann", Registry: reg, Instances: 1, Dir: filepath.Join(root, "ann2"), Window: window(), Binary: seckillBin, inSuite: true})
	if err == nil || !strings.Contains(err.Error(), "seckill lab rm ann") {
		t.Fatalf("a second ann: %v; want an error naming `seckill lab rm ann`", err)
	}
	if _, err := os.Stat(filepath.Join(root, "ann2")); !os.IsNotExist(err) {
		t.Errorf("the refused lab's directory was created (%v)", err)
	}

	// rm stops the stack and drops the record; --purge takes the dir.
	if err := Remove(ctx, reg, "bob", true, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(recs[1].Dir); !os.IsNotExist(err) {
		t.Errorf("bob's dir after rm --purge: %v", err)
	}
	if err := Remove(ctx, reg, "ann", false, nil); err != nil {
		t.Fatal(err)
	}
	if g, ok, err := ReadGrade(recs[0].Dir); !ok || err != nil || g.Exercise != "redislock" {
		t.Errorf("ann's dir (kept without --purge) lost its grade: %+v %v %v", g, ok, err)
	}
	if _, err := stack.Load(recs[0].Dir); err == nil {
		t.Error("ann's stack still has a state after rm")
	}
	if ss, err := List(ctx, reg); err != nil || len(ss) != 0 {
		t.Errorf("after rm: %+v, %v; want no labs", ss, err)
	}
	if err := Remove(ctx, reg, "ann", false, nil); err == nil || !strings.Contains(err.Error(), "no such lab") {
		t.Errorf("rm twice: %v", err)
	}
}

// TestREADMECapacity: docs/labs.md's counts of labs per window are
// Capacity's, and its sizes the code's.
func TestREADMECapacity(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "..", "docs", "labs.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		fmt.Sprintf("The default window holds\n  %d labs", Capacity(DefaultWindow)),
		fmt.Sprintf("`--port-min 1024` gives room for %d.", Capacity(ports.Range{Lo: 1024, Hi: DefaultWindow.Hi})),
		fmt.Sprintf("one block of %d ports, `B..B+%d`", Footprint(0).Hi+1, Footprint(0).Hi),
		fmt.Sprintf("beside the lab's (%d ports each)", SideRange(0).Hi+1),
	} {
		if !strings.Contains(string(b), want) {
			t.Errorf("docs/labs.md lacks %q", want)
		}
	}
}

// TestAliveOnly: a lab whose admin token cannot be read (another user's)
// is still told running, partial or stopped from state.json's processes.
func TestAliveOnly(t *testing.T) {
	me := os.Getpid()
	live := stack.Component{Name: "inst-1", Kind: stack.KindInstance, Pid: me, StartTime: supervise.StartTime(me)}
	dead := stack.Component{Name: "inst-2", Kind: stack.KindInstance, Pid: me, StartTime: 1}
	tests := []struct {
		name string
		cs   []stack.Component
		want string
	}{
		{"all run", []stack.Component{live}, Running},
		{"one of two", []stack.Component{live, dead}, Partial},
		{"none", []stack.Component{dead}, Stopped},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			if err := writeJSON(filepath.Join(dir, "state.json"), stack.State{Components: tt.cs}); err != nil {
				t.Fatal(err)
			}
			s := aliveOnly(Status{Record: Record{Dir: dir}, State: Stopped}, map[int]int64{me: 1 << 20}, errors.New("read admin token: permission denied"))
			if s.State != tt.want || !strings.Contains(s.Health, "permission denied") {
				t.Errorf("got %s (%s), want %s", s.State, s.Health, tt.want)
			}
		})
	}
}

// TestBackendsFor: a lab sized to an exercise starts MySQL and the servers
// its grade needs; "" is every server; an unknown name names the choices.
func TestBackendsFor(t *testing.T) {
	for _, tc := range []struct {
		name, want, err string
	}{
		{"", "", ""},
		{"redislock", "mysql,redis", ""},
		{"watchdog", "mysql,redis", ""},
		{"fencing", "mysql,etcd", ""},
		{"all", "mysql,redis,etcd", ""},
		{"nope", "", "want redislock, watchdog, fencing or all"},
	} {
		got, err := BackendsFor(tc.name)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("BackendsFor(%q): %v, want an error containing %q", tc.name, err, tc.err)
			}
			continue
		}
		var names []string
		for _, b := range got {
			names = append(names, string(b))
		}
		if err != nil || strings.Join(names, ",") != tc.want {
			t.Errorf("BackendsFor(%q) = %v, %v; want %s", tc.name, names, err, tc.want)
		}
	}
}
