package bench_test

import (
	"context"
	"testing"
	"time"

	"github.com/seckill-lab/seckill/bench"
	"github.com/seckill-lab/seckill/stock/catalog"
)

// TestRedisStreamBench: redis-stream answers 202 before its orders are
// written; the run waits for the queue to drain, then every invariant
// holds: oversold 0, every 2xx has its order, orders equal units sold, and
// the queue's figures (drain time, order lag) are in the run.
func TestRedisStreamBench(t *testing.T) {
	fleet, _ := fleetFromEnv(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	rep, err := bench.Run(ctx, bench.Options{
		Strategies: []string{catalog.RedisStream}, Fleet: fleet, Stock: 100, Requests: 150, Concurrency: 30, Seed: 7,
		CalibrateRequests: -1, RunTimeout: time.Minute,
	})
	if err != nil {
		t.Fatal(err)
	}
	r := rep.Runs[0]
	if r.Queue == nil {
		t.Fatalf("no order queue in the run: %+v", r)
	}
	q := r.Queue
	if r.Oversold != 0 || r.OK != 100 || r.Orders != 100 || r.FinalStock != 0 || r.InvariantsPassed != r.InvariantsTotal {
		t.Errorf("oversold %d, ok %d, orders %d, final stock %d, invariants %d/%d; want the stock of 100 sold exactly, every check passed",
			r.Oversold, r.OK, r.Orders, r.FinalStock, r.InvariantsPassed, r.InvariantsTotal)
	}
	if q.Accepted != 100 || q.Written != 100 || q.Rejected != 0 || q.LagP50MS <= 0 || q.LagP99MS < q.LagP50MS || q.DrainS < 0 ||
		q.Batches < 1 || q.Batches > q.Written {
		t.Errorf("queue %+v; want 100 accepted and written in 1 to 100 batches, lags measured", *q)
	}
}
