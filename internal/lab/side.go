package lab

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"time"

	"github.com/seckill-lab/seckill/internal/ports"
	"github.com/seckill-lab/seckill/internal/stack"
	"github.com/seckill-lab/seckill/internal/supervise"
)

// A lesson's side stacks (lessons 26 and 28 start stacks of their own
// beside the class's) take their ports only while the lesson runs:
// ReserveSide records each in the registry for the lesson's process, and
// `lab new`, `make test` and other lessons keep off it while that process
// lives. A lab's footprint is therefore its own stack only.

// sideRun is a side stack's ports, held for a running lesson.
type sideRun struct {
	Pid       int       `json:"pid"`
	StartTime uint64    `json:"start_time"`
	Base      int       `json:"base"`
	Beside    int       `json:"beside"` // the class stack's base port
	Dir       string    `json:"dir"`    // the class stack's run directory
	Started   time.Time `json:"started"`
}

// SideRange is the ports a side stack on base takes (single topology,
// stack.SideInstances instances, the fault proxy).
func SideRange(base int) ports.Range {
	return ports.Span(base, stack.Span(stack.TopologySingle, stack.SideInstances, true))
}

func sidePath(reg string, pid, base int) string {
	return filepath.Join(reg, ".side-"+strconv.Itoa(pid)+"-"+strconv.Itoa(base)+".json")
}

// liveSides reads the registry's side stacks, removing those whose lesson
// is gone.
func liveSides(reg string) []sideRun {
	return liveRecords(reg, ".side-*.json", func(s sideRun) supervise.ID { return supervise.ID{Pid: s.Pid, StartTime: s.StartTime} })
}

func sideRanges(ss []sideRun) []avoid {
	out := make([]avoid, 0, len(ss))
	for _, s := range ss {
		out = append(out, avoid{SideRange(s.Base), fmt.Sprintf("a side stack of the lesson of pid %d (beside %s)", s.Pid, s.Dir)})
	}
	return out
}

// ReserveSide returns the base port of the k-th side stack (k from 0) a
// lesson of this process starts beside the stack on base in dir, and the
// func that gives its ports back (when the side stack is down; the
// process's end gives them back too). It is stack.SideBase(base, k) when
// those ports are free: no lab keeps them, no other lesson's side stack,
// nothing listens there and, unless the class's stack is itself on the
// test suite's ports (the suite's own lessons), no test suite's. Otherwise
// it is the lowest free base in the labs' window (DefaultWindow), then in
// every usable port. The pick is recorded in the registry reg under its
// lock, so two lessons never get the same ports.
func ReserveSide(reg, dir string, base, k int) (int, func(), error) {
	return reserveSide(reg, dir, base, k, os.Getpid(), ports.Taken)
}

// reserveSide is ReserveSide for process pid, with taken telling where
// something listens.
func reserveSide(reg, dir string, base, k, pid int, taken func(ports.Range) (int, bool)) (int, func(), error) {
	if err := ensureRegistry(reg); err != nil {
		return 0, nil, fmt.Errorf("reserve a side stack's ports: %w", err)
	}
	unlock, err := lockRegistry(reg)
	if err != nil {
		return 0, nil, fmt.Errorf("reserve a side stack's ports: %w", err)
	}
	defer unlock()
	labs, err := Records(reg)
	if err != nil {
		return 0, nil, err
	}
	as := append(labRanges(labs, ""), sideRanges(liveSides(reg))...)
	suite := append(suiteRanges(0, "the test suite (make test, CI)"), testRunRanges(liveTestRuns(reg), 0)...)
	suite = append(suite, avoid{ports.FreeRange, "the tests' free ports"})
	free := func(b int, kept []avoid) bool {
		r := SideRange(b)
		if !r.Within(ports.Usable) || r.Overlaps(Footprint(base)) {
			return false
		}
		if _, ok := firstOverlap([]ports.Range{r}, kept); ok {
			return false
		}
		_, busy := taken(r)
		return !busy
	}
	pick := stack.SideBase(base, k)
	all := slices.Concat(as, suite)
	first := all
	if _, ok := firstOverlap([]ports.Range{Footprint(base)}, suite); ok {
		first = as // the suite's own lessons: their side stacks are in the suite's ports
	}
	if !free(pick, first) {
		pick = 0
		for _, w := range []ports.Range{DefaultWindow, ports.Usable} {
			for b := w.Lo; pick == 0 && SideRange(b).Hi <= w.Hi; b += step {
				if free(b, all) {
					pick = b
				}
			}
		}
		if pick == 0 {
			return 0, nil, fmt.Errorf("no free ports for a side stack of %d ports beside %s: stop a stack or remove a lab (seckill lab rm NAME)",
				SideRange(0).Hi+1, dir)
		}
	}
	s := sideRun{Pid: pid, StartTime: supervise.StartTime(pid), Base: pick, Beside: base, Dir: dir, Started: time.Now().UTC()}
	path := sidePath(reg, pid, pick)
	if err := writeJSON(path, s); err != nil {
		return 0, nil, fmt.Errorf("reserve a side stack's ports: %w", err)
	}
	return pick, func() { _ = os.Remove(path) }, nil
}
