package bench

import (
	"context"
	"encoding/json"
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/seckill-lab/seckill/internal/testenv"
	vegeta "github.com/tsenart/vegeta/v12/lib"
)

// leanGoods are the goods TestLeanPathSameResults buys (no other test's).
const leanGoods = 7_700_001

// TestLeanPathSameResults runs the same purchases against the test
// stack's fleet (through nginx, real instances) once on the lean path and
// once through net/http's client, and checks that both record the same:
// every answer's code and error, its request id (the instance echoes the
// Idempotency-Key it saw), its X-Instance (the instance the body names),
// the same instances, and the same codes for the same stock. One worker
// and more requests than stock: the first stock purchases succeed and
// the rest are sold out, under whatever strategy the fleet runs.
func TestLeanPathSameResults(t *testing.T) {
	target := testenv.Get(t, testenv.NginxURL)
	instances := testenv.List(t, testenv.InstanceURLs)
	adm := newAdmin(testenv.Get(t, testenv.AdminToken))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	const stock, requests = 9, 15

	paths := []struct {
		name     string
		netHTTP  bool
		codes    map[string]int // "code error" -> count
		seen     map[string]bool
		mismatch []string
	}{{name: "lean"}, {name: "net/http", netHTTP: true}}
	for i := range paths {
		p := &paths[i]
		p.codes, p.seen = map[string]int{}, map[string]bool{}
		if _, err := adm.reset(ctx, instances[0], leanGoods, stock); err != nil {
			t.Fatalf("reset goods %d: %v", leanGoods, err)
		}
		spec := attackSpec{
			Name: "lean", Requests: requests, Concurrency: 1, Timeout: 30 * time.Second,
			Purchases: purchases{Target: target, Goods: leanGoods, Qty: 1, Seed: time.Now().UnixNano(), Run: "leanpath"},
			OnResult: func(r *vegeta.Result, id string) {
				resp := toResponse(r, id)
				var body struct {
					RequestID string `json:"request_id"`
					Instance  string `json:"instance"`
				}
				_ = json.Unmarshal(r.Body, &body)
				if r.Code/100 == 2 && (body.RequestID != id || body.Instance != resp.Instance) {
					p.mismatch = append(p.mismatch, id+": body "+string(r.Body)+", X-Instance "+resp.Instance)
				}
				if resp.Instance != "" {
					p.seen[resp.Instance] = true
				}
				kind := resp.Error
				if r.Code/100 == 2 {
					kind = "ok"
				}
				p.codes[kind]++
			},
		}
		if p.netHTTP {
			spec.client = netHTTPClient(1)
		}
		if _, err := attack(ctx, spec); err != nil {
			t.Fatalf("%s: %v", p.name, err)
		}
		if len(p.mismatch) > 0 {
			t.Errorf("%s: answers not mapped to their request: %q", p.name, p.mismatch)
		}
	}
	lean, std := paths[0], paths[1]
	if !maps.Equal(lean.codes, std.codes) || lean.codes["ok"] != stock || lean.codes["sold_out"] != requests-stock {
		t.Errorf("answers: lean %v, net/http %v; want %d ok and %d sold_out on both", lean.codes, std.codes, stock, requests-stock)
	}
	names := func(m map[string]bool) []string { return slices.Sorted(maps.Keys(m)) }
	if l, s := names(lean.seen), names(std.seen); !slices.Equal(l, s) || len(l) == 0 {
		t.Errorf("instances: lean %v, net/http %v; want the same, not none", l, s)
	}
	t.Logf("both paths: %v from %v", lean.codes, names(lean.seen))
}
