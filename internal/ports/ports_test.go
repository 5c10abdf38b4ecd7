package ports

import (
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/seckill-lab/seckill/internal/stack"
)

func TestRange(t *testing.T) {
	a := Span(1000, 100)
	tests := []struct {
		name string
		b    Range
		over bool
		in   bool
	}{
		{"same", a, true, true},
		{"inside", Range{1010, 1020}, true, false},
		{"touching at the top", Range{1100, 1200}, true, false},
		{"just above", Range{1101, 1200}, false, false},
		{"just below", Range{900, 999}, false, false},
		{"around", Range{0, 5000}, true, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := a.Overlaps(tt.b); got != tt.over || tt.b.Overlaps(a) != got {
				t.Errorf("%s overlaps %s = %v, want %v (both ways)", a, tt.b, got, tt.over)
			}
			if got := a.Within(tt.b); got != tt.in {
				t.Errorf("%s within %s = %v, want %v", a, tt.b, got, tt.in)
			}
		})
	}
	if got := a.Shift(-300); got != (Range{700, 800}) {
		t.Errorf("shift: %s", got)
	}
	if a.String() != "1000-1100" {
		t.Errorf("string: %s", a)
	}
}

// TestTaken listens on a port and finds it taken, and the port above free.
func TestTaken(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	p := ln.Addr().(*net.TCPAddr).Port
	// Only the listener's own port: its neighbours are in the ephemeral
	// range, where other programs' sockets come and go (CI: 33028 was
	// taken beside a listener on 33029, and Taken rightly named it).
	if got, ok := TakenAny([]Range{{p, p}}); !ok || got != p {
		t.Errorf("Taken around a listener on %d: %d, %v", p, got, ok)
	}
	ln.Close()
	if got, ok := Taken(Range{p, p}); ok {
		t.Errorf("port %d taken after close: %d", p, got)
	}
}

// TestShiftBounds: the suite fits Usable at both bounds, not past them.
func TestShiftBounds(t *testing.T) {
	lo, hi := ShiftBounds()
	if lo >= 0 || hi < 0 {
		t.Fatalf("bounds %d..%d: want 0 inside", lo, hi)
	}
	for _, s := range []int{lo, hi} {
		for _, r := range ShiftAll(Suite, s) {
			if !r.Within(Usable) {
				t.Errorf("shift %d: %s outside %s", s, r, Usable)
			}
		}
	}
	out := 0
	for _, r := range ShiftAll(Suite, lo-1) {
		if !r.Within(Usable) {
			out++
		}
	}
	if out == 0 {
		t.Errorf("shift %d still fits", lo-1)
	}
}

// TestSuiteCoversTests reads every test of the module: each fixed port
// goes through testenv.Port (or stacktest.Main, which moves it) and is the
// base of a range of Suite, so SECKILL_TEST_PORT_SHIFT moves all of them
// and `seckill lab test-shift` knows them. A literal base port (a valid
// one: tests of validation use others) or a literal address on 26000-31999
// fails: two checkouts' suites would collide there.
func TestSuiteCoversTests(t *testing.T) {
	root := filepath.Join("..", "..")
	viaPort := regexp.MustCompile(`testenv\.Port\((\d+)\)`)
	viaMain := regexp.MustCompile(`stacktest\.Main\(m, stack\.Options\{BasePort: (\d+)`)
	literal := regexp.MustCompile(`BasePort:\s*(\d{4,5})\b`)
	fixed := regexp.MustCompile(`"127\.0\.0\.1:(2[6-9]\d{3}|3[01]\d{3})"`)
	bases := map[int]bool{}
	for _, r := range Suite {
		bases[r.Lo] = true
	}
	found := map[int]bool{}
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (strings.HasPrefix(d.Name(), ".") && path != root || d.Name() == "node_modules") {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, "_test.go") {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		src := string(b)
		for _, re := range []*regexp.Regexp{viaPort, viaMain} {
			for _, m := range re.FindAllStringSubmatch(src, -1) {
				p, _ := strconv.Atoi(m[1])
				found[p] = true
				if !bases[p] {
					t.Errorf("%s: port %d is no base of ports.Suite: add its range there", path, p)
				}
			}
		}
		for _, m := range literal.FindAllStringSubmatch(src, -1) {
			p, _ := strconv.Atoi(m[1])
			if !strings.Contains(src, "stacktest.Main(m, stack.Options{BasePort: "+m[1]) && p >= Usable.Lo && p <= Usable.Hi {
				t.Errorf("%s: BasePort: %d is a fixed port: use testenv.Port(%d) (and list it in ports.Suite)", path, p, p)
			}
		}
		for _, m := range fixed.FindAllStringSubmatch(src, -1) {
			t.Errorf("%s: address 127.0.0.1:%s is a fixed port: derive it from a testenv.Port base", path, m[1])
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	// The ranges no test names: the make test stack's, and the side
	// stacks the lessons start beside the lesson package's stack.
	lessonBase := 27200
	if !found[lessonBase] {
		t.Errorf("no test has a stack on %d (internal/lesson's): update lessonBase", lessonBase)
	}
	sides := Range{stack.SideBase(lessonBase, 0), stack.SideBase(lessonBase, stack.SideStacks-1) + stack.Span(stack.TopologySingle, stack.SideInstances, true)}
	derived := []Range{Span(SuiteBase, 150), sides}
	for _, d := range derived {
		in := false
		for _, r := range Suite {
			in = in || d.Within(r)
		}
		if !in {
			t.Errorf("%s (the make test stack's, or the lesson stack's side stacks) is in no range of ports.Suite", d)
		}
	}
	for _, r := range Suite {
		if _, ok := r.OverlapsAny(derived); !found[r.Lo] && !ok {
			t.Errorf("ports.Suite has %s, which no test uses: remove it", r)
		}
	}
	sh, err := os.ReadFile(filepath.Join(root, "scripts", "test.sh"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(sh), "$(("+strconv.Itoa(SuiteBase)+" + ${SECKILL_TEST_PORT_SHIFT") {
		t.Errorf("scripts/test.sh does not start its stack on %d + the shift (ports.SuiteBase)", SuiteBase)
	}
}

// TestScriptsOutsideSuite: the stacks the scripts start on a fixed base
// port (make soak, make readme's round-trip sweep, make proxy-cost) stay
// out of the test suite's ranges, so that `make test` can run beside them.
// A stack's range reaches base+350 (the ha topology or the fault proxy).
func TestScriptsOutsideSuite(t *testing.T) {
	base := regexp.MustCompile(`(?:--base-port |PORT:-)(\d{4,5})\b`)
	paths, err := filepath.Glob(filepath.Join("..", "..", "scripts", "*.sh"))
	if err != nil || len(paths) == 0 {
		t.Fatalf("no scripts: %v", err)
	}
	found := 0
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range base.FindAllStringSubmatch(string(b), -1) {
			port, _ := strconv.Atoi(m[1])
			if port == SuiteBase {
				continue // scripts/test.sh: the suite's own stack
			}
			found++
			if o, ok := Span(port, 350).OverlapsAny(Suite); ok {
				t.Errorf("%s: a stack on base port %d overlaps the suite's range %s: pick a base outside ports.Suite", filepath.Base(p), port, o)
			}
		}
	}
	if found < 4 {
		t.Errorf("found %d fixed base ports in scripts/, want at least 4 (soak, the round-trip sweep, proxy-cost's two)", found)
	}
}
