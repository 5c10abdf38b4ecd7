package bench

import (
	"github.com/seckill-lab/seckill/bench/costmodel"
	"strings"
	"testing"
)

// TestLockSteps: a lock's cycle, measured per hold, is set beside the
// model's phases per purchase, and the step that exceeds the model most is
// the one named; a cycle without its held split gives no steps.
func TestLockSteps(t *testing.T) {
	lat := func(mean float64) *Latency { return &Latency{Mean: mean} }
	cycle := func(holds int, read, write, release, handoff float64) *LockCycle {
		return &LockCycle{Holds: holds, HandoffMS: *lat(handoff), ReadMS: lat(read), WriteMS: lat(write), ReleaseMS: lat(release)}
	}
	pred := costmodel.Prediction{ByPhase: map[costmodel.Phase]float64{costmodel.Held: 6, costmodel.Release: 2, costmodel.AcquireLast: 2.5}}
	tests := []struct {
		name      string
		cycles    []*LockCycle
		purchases int
		want      []CostStep
		loses     string
	}{
		{"the release loses", []*LockCycle{cycle(100, 2, 4.5, 3.5, 2.6)}, 100,
			[]CostStep{{"held", 6, 6.5}, {"release", 2, 3.5}, {"handoff", 2.5, 2.6}}, "release"},
		{"two runs, weighted by holds; the handoff loses", []*LockCycle{cycle(100, 2, 4, 2, 3), cycle(300, 2, 4, 2, 7)}, 400,
			[]CostStep{{"held", 6, 6}, {"release", 2, 2}, {"handoff", 2.5, 6}}, "handoff"},
		{"batches: two purchases a hold halve the time per purchase", []*LockCycle{cycle(50, 4, 10, 4, 4)}, 100,
			[]CostStep{{"held", 6, 7}, {"release", 2, 2}, {"handoff", 2.5, 2}}, "held"},
		{"no step over the model", []*LockCycle{cycle(10, 1, 1, 1, 1)}, 10,
			[]CostStep{{"held", 6, 2}, {"release", 2, 1}, {"handoff", 2.5, 1}}, ""},
		{"no held split", []*LockCycle{{Holds: 10, HandoffMS: Latency{Mean: 1}}}, 10, nil, ""},
		{"no cycle", []*LockCycle{nil}, 10, nil, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := lockSteps(pred, tc.cycles, tc.purchases)
			if len(got) != len(tc.want) {
				t.Fatalf("steps %+v, want %+v", got, tc.want)
			}
			for i := range got {
				if got[i].Step != tc.want[i].Step || !closeTo(got[i].PredictedMS, tc.want[i].PredictedMS) || !closeTo(got[i].MeasuredMS, tc.want[i].MeasuredMS) {
					t.Errorf("step %d: %+v, want %+v", i, got[i], tc.want[i])
				}
			}
			if l := losing(got); l != tc.loses {
				t.Errorf("losing %q, want %q", l, tc.loses)
			}
		})
	}
	ratio := 0.62
	note := losesNote(CostRow{Name: "etcd", Ratio: &ratio, Loses: "release", Steps: []CostStep{{"held", 6, 6.5}, {"release", 2, 3.5}, {"handoff", 2.5, 2.6}}})
	for _, want := range []string{"etcd sold 0.62 of its model", "is the release, 3.50 ms per purchase measured against 2.00 predicted", "a write a waiter watches", "handoff 2.60 ms against 2.50"} {
		if !strings.Contains(note, want) {
			t.Errorf("note lacks %q:\n%s", want, note)
		}
	}
}

func closeTo(a, b float64) bool { return a-b < 1e-9 && b-a < 1e-9 }
