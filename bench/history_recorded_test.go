package bench_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/seckill-lab/seckill/bench"
	"github.com/seckill-lab/seckill/bench/history"
)

// TestRecordedHistories: the histories of real runs (testdata/histories,
// how each was recorded in its README) get the same verdict from the
// counter checker and from porcupine alone: the flawed strategies' (none,
// redis-owner) not linearizable, with a counter-example naming two
// operations and their times, and a correct lock's (redis) linearizable.
func TestRecordedHistories(t *testing.T) {
	tests := []struct {
		file    string
		initial int64
		want    history.Verdict
	}{
		{"none.bin", 80, history.NotLinearizable},
		{"redis-owner.bin", 20, history.NotLinearizable},
		{"redis.bin", 80, history.Linearizable},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			f, err := os.Open(filepath.Join("testdata", "histories", tt.file))
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			ops, err := bench.ReadHistory(f, 1)
			if err != nil {
				t.Fatal(err)
			}
			if len(ops) == 0 {
				t.Fatal("no operations read")
			}
			ctx := context.Background()
			got, err := history.Check(ctx, ops, tt.initial, 10*time.Second)
			if err != nil {
				t.Fatal(err)
			}
			if got.Verdict != tt.want || got.Checker != history.CheckerCounter {
				t.Fatalf("Check: %s by %q (%s), want %s by the counter checker", got.Verdict, got.Checker, got.Fallback, tt.want)
			}
			cross, err := history.CheckPorcupine(ctx, ops, tt.initial, 30*time.Second)
			if err != nil {
				t.Fatal(err)
			}
			if cross.Verdict != tt.want || cross.Checker != history.CheckerPorcupine {
				t.Fatalf("CheckPorcupine: %s by %q, want %s", cross.Verdict, cross.Checker, tt.want)
			}
			if tt.want == history.Linearizable {
				return
			}
			if len(got.Counterexample) != 2 || got.Reason == "" {
				t.Fatalf("counter-example %d operations, reason %q: want two operations and the reason", len(got.Counterexample), got.Reason)
			}
			for _, op := range got.Counterexample {
				if op.ID == "" || op.Call.IsZero() {
					t.Errorf("counter-example operation without its id or call time: %+v", op)
				}
			}
			// porcupine's own search found it illegal (and drew it), not
			// only the quick refutation.
			if len(cross.Visualization) == 0 || len(got.Visualization) == 0 {
				t.Errorf("no porcupine visualization: %d bytes alone, %d beside the counter checker", len(cross.Visualization), len(got.Visualization))
			}
			t.Logf("%d operations: %s", got.Ops, got.Reason)
		})
	}
}
