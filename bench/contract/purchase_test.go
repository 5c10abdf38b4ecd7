package contract_test

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/seckill-lab/seckill/bench/contract"
)

// TestCheckPurchase: every answer the contract allows is read, an error
// answer included; every other is an ErrViolation naming what is wrong.
// The yaml validator agrees with CheckPurchase on each.
func TestCheckPurchase(t *testing.T) {
	v := validator(t)
	ms := 1500 * time.Microsecond
	const receipt = `"goods_id":1,"qty":2,"remaining":7,"request_id":"k1"`
	for _, tc := range []struct {
		name   string
		status int
		body   string
		want   contract.Purchase // when why is ""
		why    string
	}{
		{"sold", 200, `{"order_id":9,` + receipt + `,"instance":"inst-1","strategy":"redis","fence":3}`,
			contract.Purchase{Status: 200, Code: "ok", Effect: contract.Sold, GoodsID: 1, Qty: 2, Remaining: 7, RequestID: "k1",
				OrderID: 9, Instance: "inst-1", Strategy: "redis", Fence: 3}, ""},
		{"sold, the required only", 200, `{` + receipt + `}`,
			contract.Purchase{Status: 200, Code: "ok", Effect: contract.Sold, GoodsID: 1, Qty: 2, Remaining: 7, RequestID: "k1"}, ""},
		{"accepted, lock wait", 202, `{` + receipt + `,"accepted":true,"lock_wait_ms":1.5}`,
			contract.Purchase{Status: 202, Code: "ok", Effect: contract.Sold, GoodsID: 1, Qty: 2, Remaining: 7, RequestID: "k1", Accepted: true, LockWait: &ms}, ""},
		{"replayed", 200, `{` + receipt + `,"replayed":true}`,
			contract.Purchase{Status: 200, Code: "ok", Effect: contract.Sold, GoodsID: 1, Qty: 2, Remaining: 7, RequestID: "k1", Replayed: true}, ""},
		{"sold out", 409, `{"error":"sold_out"}`, contract.Purchase{Status: 409, Code: "sold_out", Effect: contract.NothingSold}, ""},
		{"lock timeout", 503, `{"error":"lock_timeout","detail":"waited 5s"}`,
			contract.Purchase{Status: 503, Code: "lock_timeout", Effect: contract.NothingSold, Detail: "waited 5s"}, ""},
		{"backend unavailable", 503, `{"error":"backend_unavailable"}`, contract.Purchase{Status: 503, Code: "backend_unavailable", Effect: contract.Unknown}, ""},
		{"misses remaining", 200, `{"goods_id":1,"qty":2,"request_id":"k1"}`, contract.Purchase{}, `misses "remaining"`},
		{"remaining negative (an oversold service)", 200, `{"goods_id":1,"qty":2,"remaining":-1,"request_id":"k1"}`,
			contract.Purchase{Status: 200, Code: "ok", Effect: contract.Sold, GoodsID: 1, Qty: 2, Remaining: -1, RequestID: "k1"}, ""},
		{"remaining a string", 200, `{"goods_id":1,"qty":2,"remaining":"7","request_id":"k1"}`, contract.Purchase{}, `"remaining" a string "7", want an integer`},
		{"request_id empty", 200, `{"goods_id":1,"qty":2,"remaining":7,"request_id":""}`, contract.Purchase{}, `"request_id" "", want a non-empty string`},
		{"unknown property", 200, `{` + receipt + `,"price":10}`, contract.Purchase{}, `does not name: "price"`},
		{"lock wait negative", 200, `{` + receipt + `,"lock_wait_ms":-1}`, contract.Purchase{}, `"lock_wait_ms" -1, want >= 0`},
		{"replayed a string", 200, `{` + receipt + `,"replayed":"yes"}`, contract.Purchase{}, `"replayed" a string "yes", want a boolean`},
		{"qty zero", 202, `{"goods_id":1,"qty":0,"remaining":7,"request_id":"k1"}`, contract.Purchase{}, `"qty" 0, want >= 1`},
		{"not JSON", 200, `sold`, contract.Purchase{}, "is not JSON"},
		{"empty", 200, ``, contract.Purchase{}, "empty body"},
		{"unknown code", 409, `{"error":"nope"}`, contract.Purchase{}, `code "nope", which the contract does not give a 409 purchase (it gives sold_out, user_limit, stale_lock, lease_lost)`},
		{"another status's code", 400, `{"error":"sold_out"}`, contract.Purchase{}, `code "sold_out"`},
		{"error unknown property", 409, `{"error":"sold_out","left":0}`, contract.Purchase{}, `does not name: "left"`},
		{"status not given", 201, `{` + receipt + `}`, contract.Purchase{}, "does not give a purchase (it gives 200, 202, 400"},
		{"a proxy's page", 502, `<html>502 Bad Gateway</html>`, contract.Purchase{}, "does not give a purchase"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := contract.CheckPurchase(tc.status, []byte(tc.body))
			if tc.why == "" {
				if err != nil {
					t.Fatalf("a right answer refused: %v", err)
				}
				if !samePurchase(got, tc.want) {
					t.Errorf("got %+v, want %+v", got, tc.want)
				}
			} else {
				var ce *contract.CallError
				if !errors.Is(err, contract.ErrViolation) || !errors.As(err, &ce) || ce.Status != tc.status || string(ce.Body) != tc.body {
					t.Fatalf("error %v: want a *CallError of the answer matching ErrViolation", err)
				}
				if !strings.HasPrefix(err.Error(), "contract: POST /api/v1/purchase: ") || !strings.Contains(err.Error(), tc.why) {
					t.Errorf("error %q: want it to say %q", err, tc.why)
				}
			}
			req := httptest.NewRequest(http.MethodPost, contract.PathPurchase, nil)
			ex, rerr := v.Route(req)
			if rerr != nil {
				t.Fatal(rerr)
			}
			verr := ex.Response(tc.status, http.Header{"Content-Type": []string{"application/json"}}, []byte(tc.body))
			if (verr == nil) != (err == nil) {
				t.Errorf("the yaml validator takes the answer: %v (%v); CheckPurchase: %v", verr == nil, verr, err == nil)
			}
		})
	}
}

// samePurchase compares two Purchases, LockWait by value.
func samePurchase(a, b contract.Purchase) bool {
	if (a.LockWait == nil) != (b.LockWait == nil) || a.LockWait != nil && *a.LockWait != *b.LockWait {
		return false
	}
	a.LockWait, b.LockWait = nil, nil
	return a == b
}
