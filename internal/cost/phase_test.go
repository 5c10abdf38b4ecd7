package cost_test

import (
	"context"
	"testing"

	"github.com/seckill-lab/seckill/bench/costmodel"
	"github.com/seckill-lab/seckill/internal/cost"
)

// TestPhaseMarks: a context carries the phase it was marked with; an
// unmarked one is Other.
func TestPhaseMarks(t *testing.T) {
	for _, p := range costmodel.Phases() {
		if got := cost.PhaseOf(cost.WithPhase(context.Background(), p)); got != p {
			t.Errorf("PhaseOf(WithPhase(%s)) = %s", p, got)
		}
	}
	if got := cost.PhaseOf(context.Background()); got != cost.Other {
		t.Errorf("an unmarked context is in phase %s, want other", got)
	}
	if got := cost.NewMeter().Snapshot(); len(got) != 0 {
		t.Errorf("a new meter counted %v", got)
	}
}
