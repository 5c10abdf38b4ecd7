package bench_test

import (
	"context"
	"testing"
	"time"

	"github.com/seckill-lab/seckill/bench"
	"github.com/seckill-lab/seckill/stock"
	"github.com/seckill-lab/seckill/stock/catalog"
)

// TestPerUserLimitBench: "one order per user" with 50 users drawn by 500
// requests on a stock of 300. A correct strategy sells at most 50 orders
// (one per user; the MySQL key for sql-atomic, the Lua check for
// redis-atomic and redis-stream) and passes the per-user invariant; none, whose check then
// insert races like its stock read, sells more and fails it.
func TestPerUserLimitBench(t *testing.T) {
	fleet, _ := fleetFromEnv(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	rep, err := bench.Run(ctx, bench.Options{
		Strategies: []string{catalog.SQLAtomic, catalog.RedisAtomic, catalog.RedisStream, catalog.None}, Fleet: fleet,
		Stock: 300, Requests: 500, Concurrency: 50, Config: stock.Config{PerUserLimit: 1}, Users: 50, Seed: 42,
		CalibrateRequests: -1, RunTimeout: time.Minute,
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rep.Runs {
		if r.PerUser == nil {
			t.Fatalf("%s: no per-user figures in the run", r.Strategy)
		}
		var inv bench.Invariant
		for _, i := range r.Invariants {
			if i.Name == bench.InvPerUserLimit {
				inv = i
			}
		}
		if inv.Name == "" {
			t.Fatalf("%s: no %s check among %v", r.Strategy, bench.InvPerUserLimit, r.Invariants)
		}
		if r.Strategy == catalog.None {
			if r.Orders <= 50 || inv.Pass || r.PerUser.OrdersOverLimit != r.Orders-r.PerUser.Buyers {
				t.Errorf("none: %d orders, %+v, check %+v; want more than 50 orders and the check failed by the extra ones", r.Orders, *r.PerUser, inv)
			}
			continue
		}
		if r.Orders > 50 || r.Orders == 0 || !inv.Pass || r.PerUser.MaxOrders != 1 || r.Oversold != 0 {
			t.Errorf("%s: %d orders, %+v, check %+v, oversold %d; want 1 to 50 orders, one per user", r.Strategy, r.Orders, *r.PerUser, inv, r.Oversold)
		}
		if got := r.OK + r.Outcomes[bench.OutcomeUserLimit]; got != 500 {
			t.Errorf("%s: %d sold + %d refused at the limit, want all 500 answered one or the other: %v", r.Strategy, r.OK, r.Outcomes[bench.OutcomeUserLimit], r.Outcomes)
		}
	}
}
