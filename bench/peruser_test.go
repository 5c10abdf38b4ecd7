package bench

import (
	"fmt"
	"testing"
	"time"

	"github.com/seckill-lab/seckill/stock"
)

// TestPerUser: the orders are counted per user as the targeter drew them,
// and the invariant fails by the orders past the limit.
func TestPerUser(t *testing.T) {
	ids := make([]string, 40)
	for i := range ids {
		ids[i] = fmt.Sprintf("run-g1-%d", i)
	}
	per := map[string]int{}
	for _, id := range ids {
		per[userOf(id, 5)]++
	}
	over := 0
	for _, n := range per {
		over += max(0, n-2)
	}
	for _, tc := range []struct {
		name        string
		ids         []string
		users       int
		limit       int
		wantBuyers  int
		wantOver    int
		wantPass    bool
		wantMaxLess int
	}{
		{"one user per request", ids, 0, 1, 40, 0, true, 2},
		{"5 users, limit 2", ids, 5, 2, len(per), over, over == 0, 41},
		{"5 users, limit 40", ids, 5, 40, len(per), 0, true, 41},
		{"no orders", nil, 5, 1, 0, 0, true, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, inv := perUser(tc.ids, tc.users, tc.limit)
			if p.Buyers != tc.wantBuyers || p.OrdersOverLimit != tc.wantOver || inv.Pass != tc.wantPass || inv.Count != tc.wantOver || p.MaxOrders >= tc.wantMaxLess {
				t.Errorf("perUser = %+v, %+v; want %d buyers, %d over, pass %t", p, inv, tc.wantBuyers, tc.wantOver, tc.wantPass)
			}
		})
	}
	if over == 0 {
		t.Errorf("40 requests of 5 users under a limit of 2 should put some user over it: %v", per)
	}
	if a, b := userOf("run-g1-7", 7), userOf("run-g1-7", 7); a != b || userOf("x", 0) != "u-x" {
		t.Errorf("userOf is not a function of the request id: %s, %s", a, b)
	}
	// The users drawn cover all of them: 500 requests of 50 users leave
	// none out (a hash whose low bits are skewed left 3 out).
	seen := map[string]bool{}
	for i := 1; i <= 500; i++ {
		seen[userOf(fmt.Sprintf("sql-atomic-1-g1-%08x-%d", 0x9e3779b9, i), 50)] = true
	}
	if len(seen) != 50 {
		t.Errorf("500 requests drew %d of 50 users", len(seen))
	}
}

// TestOrderQueue: the order lag's percentiles over the consumers'
// samples, and the orders per batch.
func TestOrderQueue(t *testing.T) {
	st := stock.QueueStatus{Accepted: 4, Written: 4, Batches: 3, LagUS: []int64{4000, 1000, 3000, 2000}}
	q := orderQueue(st, 1500*time.Millisecond)
	if q.LagP50MS != 3 || q.LagP99MS != 4 || q.LagMaxMS != 4 || q.DrainS != 1.5 || q.Written != 4 || q.Batches != 3 {
		t.Errorf("orderQueue = %+v", q)
	}
	if got := perBatch(&q); got != "1.3" {
		t.Errorf("per batch %q, want 1.3 (4 orders in 3 batches)", got)
	}
	if got := perBatch(&OrderQueue{}); got != "-" {
		t.Errorf("per batch without batches %q, want -", got)
	}
	if e := orderQueue(stock.QueueStatus{}, 0); e.LagP50MS != 0 || e.LagMaxMS != 0 {
		t.Errorf("no samples: %+v", e)
	}
}
