package api_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/google/uuid"

	"github.com/seckill-lab/seckill/bench/contract"
	"github.com/seckill-lab/seckill/bench/contract/contracttest"
)

// contractStep is one exchange with the real handler: the request, whether
// the contract takes it, and the answer the service gives.
type contractStep struct {
	name, method, path string
	// key is the Idempotency-Key ("": none sent); ctype the
	// Content-Type ("": application/json, "-": none).
	key, ctype, body, auth string
	// reqOK: the contract takes the request. The service takes more
	// than the contract asks (a purchase without a key) and refuses
	// what it does not take, with an answer the contract allows.
	reqOK  bool
	status int
	code   string // the error code; "" for a 2xx
}

// exchanged is what an exchange gave: the contract's validator of it and
// the service's answer.
type exchanged struct {
	ex     *contracttest.Exchange
	status int
	header http.Header
	body   []byte
}

// exchange sends s to h, validates the request and the answer against
// the contract, and checks the status and code.
func exchange(t *testing.T, v *contracttest.Validator, h http.Handler, s contractStep) exchanged {
	t.Helper()
	req := httptest.NewRequest(s.method, s.path, strings.NewReader(s.body))
	switch s.ctype {
	case "":
		req.Header.Set("Content-Type", "application/json")
	case "-":
	default:
		req.Header.Set("Content-Type", s.ctype)
	}
	if s.key != "" {
		req.Header.Set(contract.HeaderIdempotencyKey, s.key)
	}
	if s.auth != "" {
		req.Header.Set("Authorization", s.auth)
	}
	ex, err := v.Route(req)
	if err != nil {
		t.Fatal(err)
	}
	if err := ex.Request([]byte(s.body)); (err == nil) != s.reqOK {
		t.Errorf("%s: the contract takes the request: %v (%v), want %v", s.name, err == nil, err, s.reqOK)
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, req)
	got := exchanged{ex, w.Code, w.Header(), w.Body.Bytes()}
	if err := ex.Response(got.status, got.header, got.body); err != nil {
		t.Errorf("%s: the service's answer breaks the contract: %v", s.name, err)
	}
	var e struct{ Error string }
	_ = json.Unmarshal(got.body, &e)
	if got.status != s.status || e.Error != s.code {
		t.Errorf("%s: %d %q, want %d %q (body %s)", s.name, got.status, e.Error, s.status, s.code, got.body)
	}
	return got
}

// TestContractAnswers drives the real handler over a real Service through
// the contract's four calls (a reset, sales, a replay, a sale without a
// key, sold out, a reused key, every malformed request, a goods read, the
// orders list, the admin token) and validates every request and answer
// against openapi.yaml with kin-openapi: the contract must take each of
// the service's answers, and its requests exactly when they keep it.
// Each purchase answer passes contract.CheckPurchase too; the audit calls
// go through contract.Client against the handler; mutated answers are
// rejected by both.
func TestContractAnswers(t *testing.T) {
	v, err := contracttest.New()
	if err != nil {
		t.Fatal(err)
	}
	h, _ := newHandler(t, token)
	bearer := "Bearer " + token
	goods := 5_000_000_000 + rand.Int64N(1_000_000_000)
	missing := 900_000_000_000_000 + rand.Int64N(1_000_000_000) // never reset: no such goods
	g := strconv.FormatInt(goods, 10)
	run := uuid.NewString()
	key := func(n string) string { return "contract-" + run + "-" + n }
	buy := func(qty int) string {
		return `{"goods_id":` + g + `,"qty":` + strconv.Itoa(qty) + `,"user_id":"u1"}`
	}
	p := contract.PathPurchase
	steps := []contractStep{
		{name: "reset", method: "POST", path: contract.PathReset, body: `{"goods_id":` + g + `,"stock":3}`, auth: bearer, reqOK: true, status: 200},
		{name: "sale", method: "POST", path: p, key: key("1"), body: buy(1), reqOK: true, status: 200},
		{name: "replay", method: "POST", path: p, key: key("1"), body: buy(1), reqOK: true, status: 200},
		{name: "sale without a key", method: "POST", path: p, body: buy(1), status: 200},
		{name: "last sale", method: "POST", path: p, key: key("2"), body: buy(1), reqOK: true, status: 200},
		{name: "sold out", method: "POST", path: p, key: key("3"), body: buy(1), reqOK: true, status: 409, code: "sold_out"},
		{name: "key reused", method: "POST", path: p, key: key("1"), body: buy(2), reqOK: true, status: 422, code: "idempotency_key_reused"},
		{name: "no such goods", method: "POST", path: p, key: key("4"), body: `{"goods_id":` + strconv.FormatInt(missing, 10) + `,"qty":1,"user_id":"u1"}`,
			reqOK: true, status: 404, code: "goods_not_found"},
		{name: "not JSON", method: "POST", path: p, key: key("5"), ctype: "text/plain", body: buy(1), status: 415, code: "unsupported_media_type"},
		{name: "no Content-Type", method: "POST", path: p, key: key("5"), ctype: "-", body: buy(1), status: 415, code: "unsupported_media_type"},
		{name: "malformed", method: "POST", path: p, key: key("6"), body: `{"goods_id":`, status: 400, code: "invalid_json"},
		// The yaml cannot say "valid UTF-8"; the JSON decoder it reads the
		// body with turns the bad byte into U+FFFD and takes the request.
		{name: "not UTF-8", method: "POST", path: p, key: key("7"), body: `{"goods_id":1,"qty":1,"user_id":"u` + "\xff" + `"}`, reqOK: true, status: 400, code: "invalid_utf8"},
		{name: "unknown field", method: "POST", path: p, key: key("8"), body: `{"goods_id":1,"qty":1,"user_id":"u","coupon":"x"}`, status: 400, code: "invalid_field"},
		{name: "wrong type", method: "POST", path: p, key: key("9"), body: `{"goods_id":"1","qty":1,"user_id":"u"}`, status: 400, code: "invalid_field"},
		{name: "missing qty", method: "POST", path: p, key: key("10"), body: `{"goods_id":1,"user_id":"u"}`, status: 400, code: "missing_field"},
		{name: "qty zero", method: "POST", path: p, key: key("11"), body: `{"goods_id":1,"qty":0,"user_id":"u"}`, status: 400, code: "invalid_request"},
		{name: "user_id too long", method: "POST", path: p, key: key("12"), body: `{"goods_id":1,"qty":1,"user_id":"` + strings.Repeat("u", contract.MaxUserID+1) + `"}`,
			status: 400, code: "invalid_request"},
		{name: "key too long", method: "POST", path: p, key: strings.Repeat("k", contract.MaxIdempotencyKey+1), body: buy(1), status: 400, code: "invalid_request"},
		{name: "too large", method: "POST", path: p, key: key("13"), body: `{"user_id":"` + strings.Repeat("u", 8<<10) + `"}`, status: 413, code: "body_too_large"},
		{name: "goods", method: "GET", path: contract.GoodsPath(goods), reqOK: true, status: 200},
		{name: "goods: none", method: "GET", path: contract.GoodsPath(missing), reqOK: true, status: 404, code: "goods_not_found"},
		{name: "goods: not a number", method: "GET", path: "/api/v1/goods/abc", status: 400, code: "invalid_request"},
		{name: "orders", method: "GET", path: contract.OrdersPath(goods), auth: bearer, reqOK: true, status: 200},
		{name: "orders: no token", method: "GET", path: contract.OrdersPath(goods), reqOK: true, status: 401, code: "unauthorized"},
		{name: "orders: no goods_id", method: "GET", path: contract.PathOrders, auth: bearer, status: 400, code: "missing_field"},
		{name: "orders: goods_id not a number", method: "GET", path: contract.PathOrders + "?goods_id=x", auth: bearer, status: 400, code: "invalid_field"},
		{name: "orders: none", method: "GET", path: contract.OrdersPath(missing), auth: bearer, reqOK: true, status: 404, code: "goods_not_found"},
		{name: "reset: no token", method: "POST", path: contract.PathReset, body: `{"goods_id":` + g + `,"stock":3}`, reqOK: true, status: 401, code: "unauthorized"},
		{name: "reset: negative stock", method: "POST", path: contract.PathReset, body: `{"goods_id":` + g + `,"stock":-1}`, auth: bearer, status: 400, code: "invalid_request"},
		{name: "reset: missing stock", method: "POST", path: contract.PathReset, body: `{"goods_id":` + g + `}`, auth: bearer, status: 400, code: "missing_field"},
	}
	answers := map[string]exchanged{}
	seen := map[string]bool{}
	for _, s := range steps {
		a := exchange(t, v, h, s)
		answers[s.name] = a
		if s.path != p {
			continue
		}
		got, err := contract.CheckPurchase(a.status, a.body)
		if err != nil {
			t.Errorf("%s: CheckPurchase: %v", s.name, err)
		}
		seen[got.Code] = true
	}
	for _, o := range contract.Outcomes() {
		if o.Layer == contract.LayerHTTP && o.Code != "internal" && !seen[o.Code] {
			t.Errorf("no step drove the HTTP layer's %d %s", o.Status, o.Code)
		}
	}
	checkSales(t, answers, key)
	checkMutations(t, answers["sale"], answers["orders"])

	adminOff, _ := newHandler(t, "")
	exchange(t, v, adminOff, contractStep{name: "orders: admin disabled", method: "GET", path: contract.OrdersPath(goods), auth: bearer,
		reqOK: true, status: 403, code: "admin_disabled"})
	checkClient(t, h, goods)
}

// checkSales checks what the sales said: remaining counts down, the
// replay is the first sale's order, the sale without a key got a request
// id of its own, and the goods read and the orders list agree.
func checkSales(t *testing.T, answers map[string]exchanged, key func(string) string) {
	t.Helper()
	purchase := func(name string) contract.Purchase {
		p, _ := contract.CheckPurchase(answers[name].status, answers[name].body)
		return p
	}
	sale, replay, keyless, last := purchase("sale"), purchase("replay"), purchase("sale without a key"), purchase("last sale")
	if sale.Remaining != 2 || keyless.Remaining != 1 || last.Remaining != 0 || sale.Replayed {
		t.Errorf("remaining %d, %d, %d (replayed %v): want 2, 1, 0 and a fresh sale", sale.Remaining, keyless.Remaining, last.Remaining, sale.Replayed)
	}
	if !replay.Replayed || replay.OrderID != sale.OrderID || replay.RequestID != key("1") {
		t.Errorf("replay %+v: want the first sale's order %d, replayed", replay, sale.OrderID)
	}
	if keyless.RequestID == "" || strings.HasPrefix(keyless.RequestID, "contract-") {
		t.Errorf("a sale without a key got request id %q: want one of the service's", keyless.RequestID)
	}
	var goods struct{ Stock, Sold int64 }
	var orders struct {
		RequestIDs []string `json:"request_ids"`
	}
	_ = json.Unmarshal(answers["goods"].body, &goods)
	_ = json.Unmarshal(answers["orders"].body, &orders)
	want := []string{key("1"), keyless.RequestID, key("2")}
	if goods.Stock != 0 || goods.Sold != 3 || !slices.Equal(slices.Sorted(slices.Values(orders.RequestIDs)), slices.Sorted(slices.Values(want))) {
		t.Errorf("goods %+v, orders %q: want stock 0, sold 3, orders %q", goods, orders.RequestIDs, want)
	}
}

// checkMutations: the service's own answers, each changed in one way the
// contract forbids, are rejected by the yaml validator and by the Go
// checks.
func checkMutations(t *testing.T, sale, orders exchanged) {
	t.Helper()
	mutate := func(body []byte, f func(map[string]any)) []byte {
		var m map[string]any
		d := json.NewDecoder(bytes.NewReader(body))
		d.UseNumber()
		if err := d.Decode(&m); err != nil {
			t.Fatal(err)
		}
		f(m)
		b, _ := json.Marshal(m)
		return b
	}
	for _, tc := range []struct {
		name string
		a    exchanged
		f    func(map[string]any)
	}{
		{"purchase: no remaining", sale, func(m map[string]any) { delete(m, "remaining") }},
		{"purchase: an unknown property", sale, func(m map[string]any) { m["price"] = 10 }},
		{"purchase: remaining a string", sale, func(m map[string]any) { m["remaining"] = "2" }},
		{"purchase: qty zero", sale, func(m map[string]any) { m["qty"] = 0 }},
		{"purchase: no request_id", sale, func(m map[string]any) { delete(m, "request_id") }},
		{"purchase: replayed a string", sale, func(m map[string]any) { m["replayed"] = "no" }},
		{"orders: request_ids null", orders, func(m map[string]any) { m["request_ids"] = nil }},
		{"orders: request_ids a string", orders, func(m map[string]any) { m["request_ids"] = "a,b" }},
		{"orders: no goods_id", orders, func(m map[string]any) { delete(m, "goods_id") }},
	} {
		body := mutate(tc.a.body, tc.f)
		if err := tc.a.ex.Response(tc.a.status, tc.a.header, body); err == nil {
			t.Errorf("%s: the yaml validator takes %s", tc.name, body)
		}
		if strings.HasPrefix(tc.name, "purchase") {
			if _, err := contract.CheckPurchase(tc.a.status, body); err == nil {
				t.Errorf("%s: CheckPurchase takes %s", tc.name, body)
			}
		}
	}
}

// checkClient: contract.Client resets, reads and lists through the real
// handler, and a wrong token is a refusal.
func checkClient(t *testing.T, h http.Handler, goods int64) {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	ctx := context.Background()
	c := contract.Client{Base: srv.URL, Token: token}
	if err := c.Reset(ctx, goods, 4); err != nil {
		t.Fatal(err)
	}
	if n, err := c.Stock(ctx, goods); err != nil || n != 4 {
		t.Errorf("Stock: %d, %v; want 4", n, err)
	}
	if ids, err := c.Orders(ctx, goods); err != nil || ids == nil || len(ids) != 0 {
		t.Errorf("Orders after a reset: %q, %v; want an empty list", ids, err)
	}
	wrong := contract.Client{Base: srv.URL, Token: "nope"}
	var ce *contract.CallError
	if _, err := wrong.Orders(ctx, goods); !errors.Is(err, contract.ErrRefused) || !errors.As(err, &ce) || ce.Code != "unauthorized" {
		t.Errorf("Orders with a wrong token: %v; want ErrRefused unauthorized", err)
	}
}
