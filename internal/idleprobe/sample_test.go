package idleprobe

import (
	"context"
	"strings"
	"testing"
	"time"
)

// TestSampleOp: an operation keeps the median of its timed samples; one
// whose share ends within the warm-ups (a slow, loaded server) is priced
// by them and says so, rather than left without a figure.
func TestSampleOp(t *testing.T) {
	const d = 2 * time.Millisecond
	fixed := Op[struct{}]{Op: "x", Sample: func(ctx context.Context, _ struct{}, _ string) (time.Duration, error) {
		select {
		case <-ctx.Done():
			return 0, ctx.Err()
		case <-time.After(d):
		}
		return d, nil
	}}
	for _, tc := range []struct {
		name     string
		share    time.Duration
		n        int
		wantN    int
		errHas   string
		complete bool
	}{
		{"every sample", 10 * time.Second, 10, 10, "", true},
		{"the share ends in the warm-ups", 5 * d, 100, 0, "the median of", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), tc.share)
			defer cancel()
			got := sampleOp(ctx, struct{}{}, fixed, tc.n, "k")
			if got.MS != float64(d.Nanoseconds())/1e6 || got.N <= 0 {
				t.Errorf("%+v: want the median %v of some samples", got, d)
			}
			if tc.complete && (got.N != tc.wantN || got.Error != "") {
				t.Errorf("%+v: want %d samples and no error", got, tc.wantN)
			}
			if tc.errHas != "" && !strings.Contains(got.Error, tc.errHas) {
				t.Errorf("error %q, want it to contain %q", got.Error, tc.errHas)
			}
		})
	}
}
