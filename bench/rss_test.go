package bench

import (
	"runtime"
	"strings"
	"testing"
)

// TestPeakRSS: the bench reads its own peak memory, and a reset starts a
// new peak from what it holds now.
func TestPeakRSS(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("VmHWM is Linux's")
	}
	before := peakRSSMB()
	if before <= 0 {
		t.Fatalf("peak RSS %v MB", before)
	}
	if !resetPeakRSS() {
		t.Fatal("clear_refs refused")
	}
	big := make([]byte, 64<<20)
	for i := range big {
		big[i] = 1
	}
	grown := peakRSSMB()
	runtime.KeepAlive(big)
	if grown < before+32 {
		t.Errorf("64 MB touched: peak %v MB, was %v MB", grown, before)
	}
}

// TestChecksFact: the report says what the checks cost, the peak memory,
// and every undecided check with its reason; nothing for a report that
// measured none of it.
func TestChecksFact(t *testing.T) {
	if got := checksFact(&Report{Runs: []RunResult{{Strategy: "redis"}}}); got != "" {
		t.Errorf("an old report: %q", got)
	}
	rep := &Report{PeakRSSMB: 180, Runs: []RunResult{
		{Strategy: "redis", ChecksMS: 40, LinearizabilityMS: 30},
		{Strategy: "none", ChecksMS: 900, LinearizabilityMS: 850, Invariants: []Invariant{{Name: InvLinearizable, Undecided: true, Detail: "undecided: ran out of its 10s"}}},
	}}
	got := checksFact(rep)
	for _, want := range []string{"at most 900 ms", "linearizability at most 850 ms", "peak resident memory 180 MB", "undecided: linearizable of none: undecided: ran out of its 10s"} {
		if !strings.Contains(got, want) {
			t.Errorf("%q lacks %q", got, want)
		}
	}
}
