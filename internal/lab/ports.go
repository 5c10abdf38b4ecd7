package lab

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"time"

	"github.com/seckill-lab/seckill/internal/ports"
	"github.com/seckill-lab/seckill/internal/supervise"
)

// step is how far apart the base ports New tries are.
const step = 50

// avoid is a range no new lab or test suite may take, and whose it is.
type avoid struct {
	r   ports.Range
	who string
}

func firstOverlap(rs []ports.Range, as []avoid) (avoid, bool) {
	for _, r := range rs {
		for _, a := range as {
			if r.Overlaps(a.r) {
				return a, true
			}
		}
	}
	return avoid{}, false
}

// labRanges are the footprints of the labs rs, except the one named skip.
func labRanges(rs []Record, skip string) []avoid {
	var out []avoid
	for _, r := range rs {
		if r.Name == skip {
			continue
		}
		out = append(out, avoid{r.Footprint(), "lab " + r.Name})
	}
	return out
}

// suiteRanges are the test suite's ports moved by shift.
func suiteRanges(shift int, who string) []avoid {
	var out []avoid
	for _, r := range ports.ShiftAll(ports.Suite, shift) {
		out = append(out, avoid{r, who})
	}
	return out
}

// pickBase returns the lowest base port in window (tried every step
// ports) whose footprint lies inside window, overlaps nothing in as, and
// where nothing listens now.
func pickBase(window ports.Range, as []avoid, taken func(ports.Range) (int, bool)) (int, error) {
	for base := window.Lo; base <= window.Hi; base += step {
		fp := Footprint(base)
		if !fp.Within(window) {
			break
		}
		if _, ok := firstOverlap([]ports.Range{fp}, as); ok {
			continue
		}
		if _, ok := taken(fp); ok {
			continue
		}
		return base, nil
	}
	fp := Footprint(0)
	return 0, fmt.Errorf("no free port range for a lab in %s (a lab keeps %d ports, B..B+%d): widen it (--port-min, --port-max) or remove a lab (seckill lab rm NAME)",
		window, fp.Hi-fp.Lo+1, fp.Hi)
}

// testRun is a running `make test` that took its ports with TestShift.
type testRun struct {
	Pid       int       `json:"pid"`
	StartTime uint64    `json:"start_time"`
	Shift     int       `json:"shift"`
	Dir       string    `json:"dir"`
	Started   time.Time `json:"started"`
}

func testRunPath(reg string, pid int) string {
	return filepath.Join(reg, ".make-test-"+strconv.Itoa(pid)+".json")
}

// liveTestRuns reads the registry's test runs, removing those whose
// process is gone.
func liveTestRuns(reg string) []testRun {
	return liveRecords(reg, ".make-test-*.json", func(t testRun) supervise.ID { return supervise.ID{Pid: t.Pid, StartTime: t.StartTime} })
}

// liveRecords reads the registry's records matching glob, each held for a
// process (id), removing those whose process is gone.
func liveRecords[T any](reg, glob string, id func(T) supervise.ID) []T {
	ms, _ := filepath.Glob(filepath.Join(reg, glob))
	var out []T
	for _, m := range ms {
		var v T
		b, err := os.ReadFile(m)
		if err != nil || json.Unmarshal(b, &v) != nil {
			continue
		}
		if !supervise.Alive(id(v)) {
			_ = os.Remove(m)
			continue
		}
		out = append(out, v)
	}
	return out
}

func testRunRanges(runs []testRun, skipPid int) []avoid {
	var out []avoid
	for _, t := range runs {
		if t.Pid != skipPid {
			out = append(out, suiteRanges(t.Shift, fmt.Sprintf("the make test of pid %d in %s (shift %d)", t.Pid, t.Dir, t.Shift))...)
		}
	}
	return out
}

// Shift is the port shift TestShift picked for a `make test`.
type Shift struct {
	// Shift is SECKILL_TEST_PORT_SHIFT.
	Shift int
	// Why says why not 0 ("" at 0).
	Why string
	// Reserved: the registry records it for the run's process, so other
	// runs and new labs keep off its ports while it lives.
	Reserved bool
	// Note says why it could not be reserved ("" when it was, or when no
	// process was given).
	Note string
}

// String is the line scripts/test.sh prints.
func (s Shift) String() string {
	line := fmt.Sprintf("make test: ports at shift 0 (test stack on %d)", ports.SuiteBase)
	if s.Shift != 0 {
		line = fmt.Sprintf("make test: %s; SECKILL_TEST_PORT_SHIFT=%d (test stack on %d, the suite's ports %s moved by %d)",
			s.Why, s.Shift, ports.SuiteBase+s.Shift, suiteSpan(), s.Shift)
	}
	if s.Note != "" {
		line += "; " + s.Note
	}
	return line
}

func suiteSpan() string {
	lo, hi := ports.Suite[0].Lo, ports.Suite[0].Hi
	for _, r := range ports.Suite {
		lo, hi = min(lo, r.Lo), max(hi, r.Hi)
	}
	return ports.Range{Lo: lo, Hi: hi}.String()
}

// TestShift picks the test suite's port shift for a `make test` run by
// process pid: 0 when the suite's ports (ports.Suite) are free, else the
// nearest shift below (every 100) whose ports are: nothing listens there,
// no lab keeps them, no other running `make test` took them. With pid > 0
// it records the run in the registry reg (created if need be) so that
// others keep off while pid lives; a registry it cannot write only loses
// that (said in Note).
func TestShift(reg string, pid int) (Shift, error) { return testShift(reg, pid, ports.TakenAny) }

// testShift is TestShift with taken telling where something listens.
func testShift(reg string, pid int, taken func([]ports.Range) (int, bool)) (Shift, error) {
	var out Shift
	unlock := func() {}
	if err := ensureRegistry(reg); err != nil {
		out.Note = err.Error()
	} else if u, err := lockRegistry(reg); err != nil {
		out.Note = err.Error()
	} else {
		unlock = u
	}
	defer unlock()
	labs, err := Records(reg)
	if err != nil {
		return out, err
	}
	as := slices.Concat(labRanges(labs, ""), testRunRanges(liveTestRuns(reg), pid), sideRanges(liveSides(reg)))
	lo, _ := ports.ShiftBounds()
	found := false
	for s := 0; s >= lo; s -= 100 {
		rs := ports.ShiftAll(ports.Suite, s)
		why := ""
		if a, ok := firstOverlap(rs, as); ok {
			why = "kept by " + a.who
		} else if p, ok := taken(rs); ok {
			why = fmt.Sprintf("port %d is in use", p)
		}
		if why == "" {
			out.Shift, found = s, true
			break
		}
		if s == 0 {
			out.Why = "shift 0's ports are taken (" + why + ")"
		}
	}
	if !found {
		return out, fmt.Errorf("no free port shift for the test suite (%s, shifts %d..0): stop a stack or a lab, or set SECKILL_TEST_PORT_SHIFT", suiteSpan(), lo)
	}
	if pid > 0 && out.Note == "" {
		wd, _ := os.Getwd()
		t := testRun{Pid: pid, StartTime: supervise.StartTime(pid), Shift: out.Shift, Dir: wd, Started: time.Now().UTC()}
		if t.StartTime == 0 {
			return out, fmt.Errorf("make test's process %d: %w", pid, errors.New("not running"))
		}
		if err := writeJSON(testRunPath(reg, pid), t); err != nil {
			out.Note = err.Error()
		} else {
			out.Reserved = true
		}
	}
	return out, nil
}

// Capacity is how many labs window holds on an otherwise idle machine:
// blocks packed from its bottom, off the test suite's ports.
func Capacity(window ports.Range) int {
	free := func(ports.Range) (int, bool) { return 0, false }
	as := append(suiteRanges(0, "the test suite"), avoid{ports.FreeRange, "the tests' free ports"})
	n := 0
	for {
		b, err := pickBase(window, as, free)
		if err != nil {
			return n
		}
		as = append(as, avoid{Footprint(b), "a lab"})
		n++
	}
}
