package bench_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/seckill-lab/seckill/bench"
	"github.com/seckill-lab/seckill/bench/contract"
)

// contractService is a stock service of the test's own that speaks the
// contract (docs/contract.md) over one mutex, so that each case can
// break one of its calls: the bench's error paths against a service
// that is not the lab's.
type contractService struct {
	mu     sync.Mutex
	stock  map[int64]int64
	orders map[int64][]string
	sold   map[string]bool
	// wrong, when set, answers the call it names (a contract path) in
	// its place.
	wrong map[string]func(w http.ResponseWriter)
}

func (s *contractService) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	call := r.URL.Path
	if strings.HasPrefix(call, "/api/v1/goods/") {
		call = contract.PathGoods
	}
	if f := s.wrong[call]; f != nil {
		f(w)
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	answer := func(status int, v any) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		_ = json.NewEncoder(w).Encode(v)
	}
	switch call {
	case contract.PathReset:
		var in struct {
			GoodsID int64 `json:"goods_id"`
			Stock   int64 `json:"stock"`
		}
		_ = json.NewDecoder(r.Body).Decode(&in)
		s.stock[in.GoodsID], s.orders[in.GoodsID] = in.Stock, nil
		answer(200, map[string]int64{"goods_id": in.GoodsID, "stock": in.Stock})
	case contract.PathGoods:
		id, _ := strconv.ParseInt(strings.TrimPrefix(r.URL.Path, "/api/v1/goods/"), 10, 64)
		st, ok := s.stock[id]
		if !ok {
			answer(404, map[string]string{"error": "goods_not_found"})
			return
		}
		answer(200, map[string]int64{"id": id, "stock": st})
	case contract.PathOrders:
		id, _ := strconv.ParseInt(r.URL.Query().Get("goods_id"), 10, 64)
		answer(200, map[string]any{"goods_id": id, "request_ids": append([]string{}, s.orders[id]...)})
	case contract.PathPurchase:
		var in struct {
			GoodsID int64  `json:"goods_id"`
			Qty     int64  `json:"qty"`
			UserID  string `json:"user_id"`
		}
		b, _ := io.ReadAll(r.Body)
		key := r.Header.Get(contract.HeaderIdempotencyKey)
		if json.Unmarshal(b, &in) != nil || key == "" || s.sold[key] {
			answer(400, map[string]string{"error": "invalid_request"})
			return
		}
		if s.stock[in.GoodsID] < in.Qty {
			answer(409, map[string]string{"error": "sold_out"})
			return
		}
		s.stock[in.GoodsID] -= in.Qty
		s.sold[key] = true
		s.orders[in.GoodsID] = append(s.orders[in.GoodsID], key)
		answer(200, map[string]any{"goods_id": in.GoodsID, "qty": in.Qty, "remaining": s.stock[in.GoodsID], "request_id": key, "lock_wait_ms": 0.5})
	default:
		answer(404, map[string]string{"error": "not_found"})
	}
}

func newContractService(t *testing.T, wrong map[string]func(http.ResponseWriter)) string {
	s := &contractService{stock: map[int64]int64{}, orders: map[int64][]string{}, sold: map[string]bool{}, wrong: wrong}
	srv := httptest.NewServer(s)
	t.Cleanup(srv.Close)
	return srv.URL
}

// serviceOptions are a short contract-only bench of the service at u.
func serviceOptions(name, u string) bench.Options {
	return bench.Options{Services: []bench.Service{{Name: name, URL: u}}, Stock: 20, Requests: 60, Concurrency: 8,
		CalibrateRequests: -1, Warmup: -1, RunTimeout: time.Minute}
}

// TestServiceRightAnswers: a service that keeps the contract is loaded
// and audited through it alone: it sold exactly its stock, every
// invariant that applies passed, the lock wait is its answers' and the
// lab's figures are absent.
func TestServiceRightAnswers(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	rep, err := bench.Run(ctx, serviceOptions("toy", newContractService(t, nil)))
	if err != nil {
		t.Fatal(err)
	}
	r := rep.Runs[0]
	if r.Strategy != "toy" || r.OK != 20 || r.Oversold != 0 || r.LostUpdates != 0 || r.ServiceURL == "" {
		t.Fatalf("run %+v", r)
	}
	for _, inv := range r.Invariants {
		if inv.Applicable && !inv.Pass {
			t.Errorf("invariant %s failed: %+v", inv.Name, inv)
		}
	}
	if r.LockWaitMS == nil || *r.LockWaitMS != 0.5 {
		t.Errorf("lock wait %v, want the answers' 0.5 ms", r.LockWaitMS)
	}
	if r.Cost != nil || r.CPU != nil || r.LockHoldMS != nil {
		t.Errorf("lab-only figures on a service's run: cost %v, cpu %v, hold %v", r.Cost, r.CPU, r.LockHoldMS)
	}
	if md := string(bench.Markdown(rep)); !strings.Contains(md, bench.ServiceNote) {
		t.Errorf("report.md does not say what a contract audit leaves out:\n%s", md)
	}
}

// TestServiceWrongAnswers: a service that answers one contract call
// wrongly stops the bench with an error naming the call and what came
// back; one case per call.
func TestServiceWrongAnswers(t *testing.T) {
	body := func(status int, b string) func(http.ResponseWriter) {
		return func(w http.ResponseWriter) {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(status)
			fmt.Fprint(w, b)
		}
	}
	cases := []struct {
		call string
		send func(http.ResponseWriter)
		want []string
	}{
		{contract.PathReset, body(200, `{"goods_id":1}`), []string{"POST /admin/reset", `"stock"`}},
		{contract.PathGoods, body(200, `{"id":1,"stock":"many"}`), []string{"GET /api/v1/goods/1", `"stock"`}},
		{contract.PathOrders, body(200, `{"goods_id":1}`), []string{"GET /admin/orders", `"request_ids"`}},
		{contract.PathPurchase, body(200, `{"goods_id":1,"qty":1,"request_id":"x"}`), []string{"POST /api/v1/purchase", `"remaining"`}},
		{contract.PathPurchase, body(409, `{"error":"gone"}`), []string{"POST /api/v1/purchase", `"gone"`}},
	}
	for _, tc := range cases {
		t.Run(tc.call, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			_, err := bench.Run(ctx, serviceOptions("wrong", newContractService(t, map[string]func(http.ResponseWriter){tc.call: tc.send})))
			if !errors.Is(err, contract.ErrViolation) {
				t.Fatalf("err = %v, want a contract violation", err)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not name %s", err, w)
				}
			}
		})
	}
}

// TestServiceOurs: the lab's own instance, loaded as a service that
// speaks only the contract (no strategy switch, no admin audit), sells
// exactly its stock under its running strategy's lock and passes.
func TestServiceOurs(t *testing.T) {
	fl, _ := fleetFromEnv(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	adm := bench.NewAdmin(fl.AdminToken)
	var cfg struct{}
	if err := adm.Do(ctx, http.MethodPut, fl.Instances[0], "/admin/strategy", map[string]string{"name": "sql-atomic"}, &cfg); err != nil {
		t.Fatal(err)
	}
	o := serviceOptions("ours", fl.Instances[0])
	o.Services[0].Token = fl.AdminToken
	o.GoodsID = 4242
	rep, err := bench.Run(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	r := rep.Runs[0]
	if r.OK != o.Stock || r.Oversold != 0 || r.Orders != o.Stock {
		t.Errorf("our instance through the contract: ok %d, oversold %d, orders %d; want %d, 0, %d", r.OK, r.Oversold, r.Orders, o.Stock, o.Stock)
	}
}
