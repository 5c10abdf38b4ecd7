package phase_test

import (
	"context"
	"sync"
	"testing"

	"github.com/seckill-lab/seckill/stock/phase"
)

// TestMarks: a context carries the phase it was marked with; an unmarked
// one is Other; requests in flight under one mark overlap, under two
// marks they do not.
func TestMarks(t *testing.T) {
	for _, p := range phase.All() {
		if got := phase.Of(phase.With(context.Background(), p)).Phase; got != p {
			t.Errorf("Of(With(%s)) = %s", p, got)
		}
	}
	if got := phase.Of(context.Background()).Phase; got != phase.Other {
		t.Errorf("an unmarked context is in phase %s, want other", got)
	}
	m := phase.Of(phase.With(context.Background(), phase.Held))
	if m.Begin() {
		t.Error("the first request in flight overlapped")
	}
	if !m.Begin() {
		t.Error("a second request in flight under the same mark did not overlap")
	}
	m.End()
	m.End()
	if other := phase.Of(phase.With(context.Background(), phase.Held)); other.Begin() {
		t.Error("a request under another mark overlapped")
	}
	if phase.Of(context.Background()).Begin() {
		t.Error("an unmarked request overlapped")
	}
}

// TestAcquired: only the last request noted during an acquisition is
// counted, once, when the lock is taken; nothing outside Acquire.
func TestAcquired(t *testing.T) {
	ctx := phase.With(context.Background(), phase.Acquire)
	var mu sync.Mutex
	var counted []int
	for i := 1; i <= 3; i++ {
		phase.Of(ctx).Last().Note(func() { mu.Lock(); counted = append(counted, i); mu.Unlock() })
	}
	phase.Acquired(ctx)
	phase.Acquired(ctx)
	if len(counted) != 1 || counted[0] != 3 {
		t.Errorf("counted %v, want the last noted request once: [3]", counted)
	}
	if phase.Of(phase.With(context.Background(), phase.Held)).Last() != nil {
		t.Error("a Held mark notes an acquisition's last request")
	}
	phase.Acquired(context.Background()) // unmarked: nothing to do, no panic
}
