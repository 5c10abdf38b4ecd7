package app_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/seckill-lab/seckill/internal/api"
	"github.com/seckill-lab/seckill/internal/cost"
	"github.com/seckill-lab/seckill/stock/catalog"
)

// costOf reads the instance's request counts (GET /admin/cost).
func costOf(t testing.TB, in instance) cost.Snapshot {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, in.url+"/admin/cost", nil)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var r api.CostReply
	if err := json.NewDecoder(resp.Body).Decode(&r); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /admin/cost: %d %v", resp.StatusCode, err)
	}
	if r.Instance != in.name {
		t.Fatalf("GET /admin/cost answered for %q, want %q", r.Instance, in.name)
	}
	return r.Servers
}

// TestPurchasePhases buys once under each strategy on one instance and
// checks where its clients' round trips were counted: a lock's DB
// transaction in the held phase, the lock server's requests in acquire and
// release; a strategy without a lock has its transaction held and the
// row's serial section counted.
func TestPurchasePhases(t *testing.T) {
	type want struct {
		server cost.Server
		phase  cost.Phase
		c      cost.Counts
	}
	// The read-modify-write under a lock: the SELECT, then BEGIN, UPDATE,
	// INSERT and COMMIT as one batch (two round trips, one write); the row
	// is locked only while the server runs the batch: no round trip.
	rmw := []want{{catalog.ServerMySQL, cost.Held, cost.Counts{RoundTrips: 2, Writes: 1}}, {catalog.ServerMySQL, cost.RowLocked, cost.Counts{}}}
	cases := []struct {
		strategy string
		lock     cost.Server // the lock server ("" for none)
		want     []want
	}{
		{catalog.Redis, catalog.ServerRedis, append(rmw, want{catalog.ServerRedis, cost.Release, cost.Counts{RoundTrips: 1, Writes: 1}}, want{catalog.ServerRedis, cost.AcquireLast, cost.Counts{RoundTrips: 1, Writes: 1}})},
		{catalog.Etcd, catalog.ServerEtcd, append(rmw, want{catalog.ServerEtcd, cost.Release, cost.Counts{RoundTrips: 1, Writes: 1}})},
		{catalog.ZooKeeper, catalog.ServerZooKeeper, append(rmw, want{catalog.ServerZooKeeper, cost.Release, cost.Counts{RoundTrips: 1, Writes: 1}})},
		{catalog.Consul, catalog.ServerConsul, rmw},
		{catalog.MySQLUnique, catalog.ServerMySQL, []want{{catalog.ServerMySQL, cost.Held, cost.Counts{RoundTrips: 2, Writes: 1}}}},
		// BEGIN; UPDATE (locks the row); INSERT; COMMIT in one batch
		// (sqlstore.SQLPurchase): one round trip, no row lock across one.
		{catalog.SQLAtomic, "", []want{{catalog.ServerMySQL, cost.Held, cost.Counts{RoundTrips: 1, Writes: 1}}, {catalog.ServerMySQL, cost.RowLocked, cost.Counts{}}}},
		// BEGIN, SELECT ... FOR UPDATE (locks the row), UPDATE, INSERT, COMMIT.
		{catalog.MySQLForUpdate, "", []want{{catalog.ServerMySQL, cost.Held, cost.Counts{RoundTrips: 5, Writes: 1}}, {catalog.ServerMySQL, cost.RowLocked, cost.Counts{RoundTrips: 3, Writes: 1}}}},
	}
	in := fleet(t, 1, nil)[0]
	for _, tc := range cases {
		t.Run(tc.strategy, func(t *testing.T) {
			setStrategy(t, []instance{in}, map[string]any{"name": tc.strategy})
			goods := goodsID()
			reset(t, in, goods, 10)
			buy := func(user string) cost.Snapshot {
				before := costOf(t, in)
				r := do(t, http.MethodPost, in.url+"/api/v1/purchase", "application/json", jsonBody(map[string]any{"goods_id": goods, "qty": 1, "user_id": user}), nil)
				if r.status != http.StatusOK {
					t.Fatalf("purchase: %d %v", r.status, r.body)
				}
				// The release runs after the answer: await it.
				var d cost.Snapshot
				awaitCond(t, func() bool {
					d = costOf(t, in).Sub(before)
					return tc.lock == "" || d[tc.lock][cost.Release].RoundTrips > 0
				})
				return d
			}
			buy("warm-up") // sessions and connections of a new setting
			d := buy("u1")
			for _, w := range tc.want {
				if got := d[w.server][w.phase]; got != w.c {
					t.Errorf("%s %s: got %+v, want %+v (all: %v)", w.server, w.phase, got, w.c, d)
				}
			}
			if tc.lock != "" && d[tc.lock][cost.Acquire].RoundTrips < 1 {
				t.Errorf("%s acquire: no round trip counted (all: %v)", tc.lock, d)
			}
			if tc.lock == "" {
				for s, ps := range d {
					if c := ps[cost.Acquire]; c != (cost.Counts{}) {
						t.Errorf("%s: %s acquire counted %+v", tc.strategy, s, c)
					}
				}
			}
		})
	}
}

// awaitCond polls cond until it holds, for at most 10 s.
func awaitCond(t testing.TB, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal(fmt.Errorf("condition not met within 10s"))
		}
		<-tick.C
	}
}
