// Package ports knows which loopback TCP ports the lab's stacks and its test
// suite take, so that several of them can share one machine: port ranges,
// whether anything listens in one, and the suite's own ranges (Suite),
// which SECKILL_TEST_PORT_SHIFT moves as a whole (internal/testenv.Port).
//
// It imports nothing of the lab, so internal/testenv and internal/lab can
// both use it.
package ports

import (
	"fmt"
	"net"
	"strconv"
)

// Range is the ports Lo..Hi, both included.
type Range struct {
	Lo, Hi int
}

// Span is the range base..base+n.
func Span(base, n int) Range { return Range{base, base + n} }

// String is "Lo-Hi".
func (r Range) String() string { return fmt.Sprintf("%d-%d", r.Lo, r.Hi) }

// Overlaps reports whether r and o share a port.
func (r Range) Overlaps(o Range) bool { return r.Lo <= o.Hi && o.Lo <= r.Hi }

// Within reports whether r lies inside o.
func (r Range) Within(o Range) bool { return r.Lo >= o.Lo && r.Hi <= o.Hi }

// Shift is r moved by d.
func (r Range) Shift(d int) Range { return Range{r.Lo + d, r.Hi + d} }

// OverlapsAny returns the first range of os that r overlaps.
func (r Range) OverlapsAny(os []Range) (Range, bool) {
	for _, o := range os {
		if r.Overlaps(o) {
			return o, true
		}
	}
	return Range{}, false
}

// ShiftAll is rs moved by d.
func ShiftAll(rs []Range, d int) []Range {
	out := make([]Range, len(rs))
	for i, r := range rs {
		out[i] = r.Shift(d)
	}
	return out
}

// Taken returns the first port of r that cannot be listened on at
// 127.0.0.1 (something listens there, on 127.0.0.1 or on every address),
// or ok=false when every port of r is free now.
func Taken(r Range) (port int, ok bool) {
	for p := r.Lo; p <= r.Hi; p++ {
		ln, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(p))
		if err != nil {
			return p, true
		}
		_ = ln.Close()
	}
	return 0, false
}

// TakenAny is Taken over every range of rs.
func TakenAny(rs []Range) (port int, ok bool) {
	for _, r := range rs {
		if p, ok := Taken(r); ok {
			return p, true
		}
	}
	return 0, false
}

// The test suite's ports, unshifted (SECKILL_TEST_PORT_SHIFT adds the same
// shift to each; internal/testenv.Port). Every fixed port a test uses is a
// base in one of these ranges (TestSuiteCoversTests checks the sources).
// A stack's range reaches B+150 (50 instances), or B+350 for the stacks
// with the fault proxy (3 instances).
var Suite = []Range{
	Span(21500, 150),  // internal/stack TestUpBackendsSubset
	Span(21800, 150),  // internal/stack TestDurability
	Span(22400, 350),  // internal/stack TestRTT (ha, proxy)
	Span(23000, 2099), // internal/lab's two labs side by side (each B..B+349), room for their lessons' side stacks
	Span(25400, 150),  // internal/soak's stack
	Span(26000, 150),  // cmd/seckill's stack (stacktest)
	Span(26200, 150),  // internal/democli's stack
	Span(26400, 150),  // internal/dashboard's stack
	Span(26600, 150),  // internal/grade/answers' stack (stacktest)
	Span(26800, 150),  // internal/grade's stack (stacktest)
	Span(27000, 150),  // the make test stack (scripts/test.sh)
	Span(27200, 150),  // internal/lesson's stack
	Span(27550, 693),  // its lessons' side stacks (lessons 26 and 28: stack.SideBase(27200, 0) and (27200, 1))
	Span(28300, 150),  // internal/stack TestIdleProbes
	Span(28500, 10),   // examples/curator's Java instances (its test)
	Span(28600, 150),  // bench TestIntegrationDeadRedisBlocksOnlyItsStrategies
	Span(29000, 350),  // internal/stack TestProxy
	Span(29500, 150),  // internal/stack TestNginxRoutesAroundDeadInstances
	Span(29800, 150),  // internal/stack TestNginxConfValid (nginx -t: nothing listens)
	Span(30000, 150),  // internal/stack TestUpMissingTool (fails before listening)
	Span(30200, 150),  // internal/stack TestUpPortTaken
	Span(30400, 150),  // internal/stack
	Span(30600, 150),  // internal/stack
	Span(30800, 150),  // internal/stack
	Span(31000, 150),  // internal/stack
	Span(31200, 150),  // internal/stack (ha)
	Span(31500, 350),  // internal/scenario's single stack (proxy)
	Span(31700, 350),  // internal/scenario's ha stack (proxy)
	Span(32100, 350),  // internal/nemesis's ha stack (proxy)
}

// SuiteBase is the make test stack's base port before any shift
// (scripts/test.sh).
const SuiteBase = 27000

// FreeRange is where internal/testenv.FreePort looks for a free port (not
// shifted: it takes only a port free at that moment).
var FreeRange = Range{22000, 22999}

// Usable bounds every port: above the privileged ones, below Linux's
// ephemeral ports (32768-60999 by default), where client sockets of any
// program may take a port at any time.
var Usable = Range{1024, 32767}

// ShiftBounds are the smallest and largest shifts that keep the whole
// Suite inside Usable.
func ShiftBounds() (lo, hi int) {
	min, max := Suite[0].Lo, Suite[0].Hi
	for _, r := range Suite {
		if r.Lo < min {
			min = r.Lo
		}
		if r.Hi > max {
			max = r.Hi
		}
	}
	return Usable.Lo - min, Usable.Hi - max
}
