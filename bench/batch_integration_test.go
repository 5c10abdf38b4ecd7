package bench_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/seckill-lab/seckill/bench"
	"github.com/seckill-lab/seckill/stock"
	"github.com/seckill-lab/seckill/stock/catalog"
)

// TestIntegrationBatch runs batched strategies against the fleet of the
// stack named by the SECKILL_* environment (seckill up ...; source
// env.sh): every invariant holds with a lock holder selling up to B
// purchases per hold, and a strategy batching does not apply to runs
// unbatched.
func TestIntegrationBatch(t *testing.T) {
	fleet, _ := fleetFromEnv(t)
	cases := []struct {
		strategy  string
		batch     int
		wantBatch int // what the fleet reports it runs
	}{
		{catalog.Redis, 8, 8},
		{catalog.SQLAtomic, 8, 0},
	}
	for _, tc := range cases {
		t.Run(tc.strategy, func(t *testing.T) {
			o := bench.Options{Fleet: fleet, Strategies: []string{tc.strategy}, Config: stock.Config{Batch: tc.batch}, Seed: 13}
			o.OutDir = filepath.Join(t.TempDir(), "out")
			r := runOne(t, o)
			t.Log(describe(r))
			if r.Setting().Batch != tc.wantBatch || r.Service.Batch != tc.wantBatch {
				t.Errorf("run recorded batch %d, fleet reports %d; want %d", r.Setting().Batch, r.Service.Batch, tc.wantBatch)
			}
			if r.Oversold != 0 || r.LostUpdates != 0 || r.FinalStock != 0 || r.InvariantsPassed != r.InvariantsTotal {
				t.Errorf("want oversold 0, lost 0, final stock 0, every invariant; got %s", describe(r))
			}
			for _, name := range []string{bench.InvLinearizable, bench.InvMutualExclusion, bench.InvReleaseAfterCommit} {
				if inv := invariant(t, r, name); !inv.Pass {
					t.Errorf("%s: %s %+v, want a pass", tc.strategy, name, inv)
				}
			}
			checkOutputs(t, o.OutDir, r)
			if tc.wantBatch == 0 {
				return
			}
			// The checks above saw real batches: some lock hold sold more
			// than one purchase (24 concurrent buyers, 8 ms of work per hold).
			events, err := readEvents(filepath.Join(o.OutDir, r.Events))
			if err != nil {
				t.Fatal(err)
			}
			perBatch := map[string]int{}
			biggest := 0
			for _, ev := range events {
				if ev.Kind == stock.EventCommitted {
					perBatch[ev.Instance+"/"+ev.Batch]++
					biggest = max(biggest, perBatch[ev.Instance+"/"+ev.Batch])
				}
			}
			if biggest < 2 || biggest > tc.batch {
				t.Errorf("the largest batch sold %d purchases, want 2..%d (%d batches)", biggest, tc.batch, len(perBatch))
			}
			t.Logf("%d committed batches, the largest of %d", len(perBatch), biggest)
		})
	}
}

// readEvents reads an events.jsonl file.
func readEvents(path string) ([]stock.Event, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("read events: %w", err)
	}
	defer f.Close()
	var out []stock.Event
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		var ev stock.Event
		if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
			return nil, fmt.Errorf("read events %s: %w", path, err)
		}
		out = append(out, ev)
	}
	return out, sc.Err()
}
