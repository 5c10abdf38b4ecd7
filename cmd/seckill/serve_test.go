package main

import (
	"strings"
	"testing"
	"time"
)

// TestGatherNote: the start line says how long redis-stream's consumer
// lets a batch gather, and names the flag.
func TestGatherNote(t *testing.T) {
	for _, tc := range []struct {
		d    time.Duration
		want string
	}{
		{20 * time.Millisecond, "waits 20ms after a short batch (--stream-gather)"},
		{0, "reads again at once (--stream-gather 0)"},
	} {
		if got := gatherNote(tc.d); !strings.Contains(got, tc.want) {
			t.Errorf("gatherNote(%s) = %q, want it to say %q", tc.d, got, tc.want)
		}
	}
}
