package contract_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/seckill-lab/seckill/bench/contract"
	"github.com/seckill-lab/seckill/bench/contract/contracttest"
)

const goods = 1

// answerCase is one answer a deliberately wrong (or right) service gives
// a call, and what the client must make of it.
type answerCase struct {
	name   string
	status int
	body   string
	// want is the sentinel the error matches (nil: the answer is right),
	// why a piece of the error's text.
	want error
	why  string
	// clientOnly: the answer keeps the yaml's schemas but breaks what only
	// the client checks: it echoes another goods, or repeats a property.
	clientOnly bool
}

// validator is the contract's kin-openapi validator.
func validator(t *testing.T) *contracttest.Validator {
	t.Helper()
	v, err := contracttest.New()
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// fake is a service that answers every request with status and body as
// JSON, and checks that each request it gets keeps the contract and
// carries the bearer token exactly on the admin calls. It says whether
// the yaml validator takes its answer, which must agree with the client.
func fake(t *testing.T, v *contracttest.Validator, token string, tc answerCase) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		in, _ := io.ReadAll(r.Body)
		ex, err := v.Route(r)
		if err == nil {
			err = ex.Request(in)
		}
		if err != nil {
			t.Errorf("the client's request breaks the contract: %v", err)
		}
		wantAuth := ""
		if strings.HasPrefix(r.URL.Path, "/admin/") && token != "" {
			wantAuth = "Bearer " + token
		}
		if got := r.Header.Get("Authorization"); got != wantAuth {
			t.Errorf("%s: Authorization %q, want %q", r.URL.Path, got, wantAuth)
		}
		h := http.Header{"Content-Type": []string{"application/json"}}
		if ex != nil {
			verr := ex.Response(tc.status, h, []byte(tc.body))
			if yamlTakes, clientTakes := verr == nil, tc.want == nil || tc.clientOnly || errors.Is(tc.want, contract.ErrRefused); yamlTakes != clientTakes {
				t.Errorf("the yaml validator takes the answer: %v (%v); the client: %v", yamlTakes, verr, clientTakes)
			}
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(tc.status)
		_, _ = io.WriteString(w, tc.body)
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

// checkErr checks err against tc: nil for a right answer, else a
// *CallError of the call, with the answer, matching tc.want only.
func checkErr(t *testing.T, err error, call string, tc answerCase) {
	t.Helper()
	if tc.want == nil {
		if err != nil {
			t.Fatalf("a right answer refused: %v", err)
		}
		return
	}
	var ce *contract.CallError
	if !errors.As(err, &ce) {
		t.Fatalf("error %v (%T), want a *contract.CallError", err, err)
	}
	for _, s := range []error{contract.ErrViolation, contract.ErrUnreachable, contract.ErrRefused} {
		if errors.Is(err, s) != (s == tc.want) {
			t.Errorf("errors.Is(%v, %v) = %v, want it to match %v only", err, s, errors.Is(err, s), tc.want)
		}
	}
	if ce.Call != call || ce.Status != tc.status || string(ce.Body) != tc.body {
		t.Errorf("CallError{Call %q, Status %d, Body %q}, want %q, %d, %q", ce.Call, ce.Status, ce.Body, call, tc.status, tc.body)
	}
	if !strings.Contains(err.Error(), tc.why) || !strings.HasPrefix(err.Error(), "contract: "+call+": ") {
		t.Errorf("error %q: want it to start with the call and say %q", err, tc.why)
	}
}

// TestClientReset: the reset's wrong answers are errors, a right one is
// taken.
func TestClientReset(t *testing.T) {
	v := validator(t)
	for _, tc := range []answerCase{
		{name: "right", status: 200, body: `{"goods_id":1,"stock":5,"skipped":[]}`},
		{name: "right, no skipped", status: 200, body: `{"goods_id":1,"stock":5}`},
		{name: "right, skipped", status: 200, body: `{"goods_id":1,"stock":5,"skipped":[{"strategy":"redis","server":"redis","reason":"down"}]}`},
		{"misses stock", 200, `{"goods_id":1}`, contract.ErrViolation, `misses "stock"`, false},
		{"unknown property", 200, `{"goods_id":1,"stock":5,"reset":true}`, contract.ErrViolation, `does not name: "reset"`, false},
		{"goods_id a string", 200, `{"goods_id":"1","stock":5}`, contract.ErrViolation, `"goods_id" a string "1", want an integer`, false},
		{"stock negative", 200, `{"goods_id":1,"stock":-5}`, contract.ErrViolation, `"stock" -5, want >= 0`, false},
		{"not JSON", 200, `ok`, contract.ErrViolation, "is not JSON", false},
		{"empty", 200, ``, contract.ErrViolation, "empty body", false},
		{"an array", 200, `[1]`, contract.ErrViolation, "is an array [1], want a JSON object", false},
		{"skipped an object", 200, `{"goods_id":1,"stock":5,"skipped":{}}`, contract.ErrViolation, `"skipped" an object {}, want an array`, false},
		{"skipped misses server", 200, `{"goods_id":1,"stock":5,"skipped":[{"strategy":"redis","reason":"down"}]}`, contract.ErrViolation, `misses "skipped[0].server"`, false},
		{"other goods", 200, `{"goods_id":2,"stock":5}`, contract.ErrViolation, `"goods_id" 2, want 1`, true},
		{"other stock", 200, `{"goods_id":1,"stock":4}`, contract.ErrViolation, `"stock" 4, want 5`, true},
		{"status not given", 404, `{"error":"goods_not_found"}`, contract.ErrViolation, "does not give this call (it gives 200, 400, 401", false},
		{"refused: token", 401, `{"error":"unauthorized","detail":"send Authorization"}`, contract.ErrRefused, "refuses: unauthorized", false},
		{"error not JSON", 503, `<html>bad gateway</html>`, contract.ErrViolation, "is not JSON: body <html>bad gateway</html>", false},
		{"error unknown property", 503, `{"error":"backend_unavailable","trace":"x"}`, contract.ErrViolation, `does not name: "trace"`, false},
		{"error misses code", 503, `{"detail":"down"}`, contract.ErrViolation, `misses "error"`, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := contract.Client{Base: fake(t, v, "tok", tc), Token: "tok"}
			checkErr(t, c.Reset(context.Background(), goods, 5), "POST /admin/reset", tc)
		})
	}
}

// TestClientStock: the stock read's wrong answers are errors, a right one
// gives the stock, a negative one too.
func TestClientStock(t *testing.T) {
	v := validator(t)
	for _, tc := range []struct {
		answerCase
		stock int64
	}{
		{answerCase{name: "right", status: 200, body: `{"id":1,"stock":5,"sold":3}`}, 5},
		{answerCase{name: "right, no sold", status: 200, body: `{"id":1,"stock":0}`}, 0},
		{answerCase{name: "right, oversold", status: 200, body: `{"id":1,"stock":-2,"sold":12}`}, -2},
		{answerCase{"misses stock", 200, `{"id":1}`, contract.ErrViolation, `misses "stock"`, false}, 0},
		{answerCase{"stock a fraction", 200, `{"id":1,"stock":1.5}`, contract.ErrViolation, `"stock" a number 1.5, want an integer`, false}, 0},
		{answerCase{"stock a string", 200, `{"id":1,"stock":"5"}`, contract.ErrViolation, `"stock" a string "5", want an integer`, false}, 0},
		{answerCase{"stock null", 200, `{"id":1,"stock":null}`, contract.ErrViolation, `"stock" null, want an integer`, false}, 0},
		{answerCase{"sold negative", 200, `{"id":1,"stock":5,"sold":-1}`, contract.ErrViolation, `"sold" -1, want >= 0`, false}, 0},
		{answerCase{"stock twice", 200, `{"id":1,"stock":5,"stock":6}`, contract.ErrViolation, `has "stock" twice`, true}, 0},
		{answerCase{"null", 200, `null`, contract.ErrViolation, "is null, want a JSON object", false}, 0},
		{answerCase{"other goods", 200, `{"id":2,"stock":5}`, contract.ErrViolation, `"id" 2, want 1`, true}, 0},
		{answerCase{"refused: not found", 404, `{"error":"goods_not_found","detail":"no goods 1"}`, contract.ErrRefused, "refuses: goods_not_found", false}, 0},
		{answerCase{"error code empty", 500, `{"error":""}`, contract.ErrViolation, `"error" "", want a non-empty string`, false}, 0},
		{answerCase{"status not given", 401, `{"error":"unauthorized"}`, contract.ErrViolation, "does not give this call", false}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := contract.Client{Base: fake(t, v, "tok", tc.answerCase), Token: "tok"}
			got, err := c.Stock(context.Background(), goods)
			checkErr(t, err, "GET /api/v1/goods/1", tc.answerCase)
			if got != tc.stock {
				t.Errorf("stock %d, want %d", got, tc.stock)
			}
		})
	}
}

// TestClientOrders: the orders list's wrong answers are errors, a right
// one gives the request ids, an empty list as one.
func TestClientOrders(t *testing.T) {
	v := validator(t)
	for _, tc := range []struct {
		answerCase
		ids []string
	}{
		{answerCase{name: "right", status: 200, body: `{"goods_id":1,"request_ids":["a","b","a"]}`}, []string{"a", "b", "a"}},
		{answerCase{name: "right, none", status: 200, body: `{"goods_id":1,"request_ids":[]}`}, []string{}},
		{answerCase{"misses request_ids", 200, `{"goods_id":1}`, contract.ErrViolation, `misses "request_ids"`, false}, nil},
		{answerCase{"request_ids null", 200, `{"goods_id":1,"request_ids":null}`, contract.ErrViolation, `"request_ids" null, want an array`, false}, nil},
		{answerCase{"request_ids not a list", 200, `{"goods_id":1,"request_ids":"a,b"}`, contract.ErrViolation, `"request_ids" a string "a,b", want an array`, false}, nil},
		{answerCase{"an id a number", 200, `{"goods_id":1,"request_ids":["a",7]}`, contract.ErrViolation, `"request_ids[1]" a number 7, want a string`, false}, nil},
		{answerCase{"an id empty", 200, `{"goods_id":1,"request_ids":[""]}`, contract.ErrViolation, `"request_ids[0]" "", want a non-empty string`, false}, nil},
		{answerCase{"unknown property", 200, `{"goods_id":1,"request_ids":[],"orders":0}`, contract.ErrViolation, `does not name: "orders"`, false}, nil},
		{answerCase{"other goods", 200, `{"goods_id":3,"request_ids":[]}`, contract.ErrViolation, `"goods_id" 3, want 1`, true}, nil},
		{answerCase{"refused: disabled", 403, `{"error":"admin_disabled"}`, contract.ErrRefused, "refuses: admin_disabled", false}, nil},
		{answerCase{"a proxy's page", 502, `<html>502 Bad Gateway</html>`, contract.ErrViolation, "does not give this call", false}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := contract.Client{Base: fake(t, v, "", tc.answerCase)}
			got, err := c.Orders(context.Background(), goods)
			checkErr(t, err, "GET /admin/orders?goods_id=1", tc.answerCase)
			if !slices.Equal(got, tc.ids) || (tc.ids != nil) != (got != nil) {
				t.Errorf("request ids %q, want %q", got, tc.ids)
			}
		})
	}
}

// TestClientErrorText: the error says the call, the status, what is
// wrong and the body, in one line.
func TestClientErrorText(t *testing.T) {
	tc := answerCase{status: 200, body: `{"goods_id":1}`, want: contract.ErrViolation}
	c := contract.Client{Base: fake(t, validator(t), "", tc)}
	_, err := c.Orders(context.Background(), goods)
	const want = `contract: GET /admin/orders?goods_id=1: 200 answer misses "request_ids": body {"goods_id":1}`
	if err == nil || err.Error() != want {
		t.Errorf("error %v, want %s", err, want)
	}
}

// TestClientUnreachable: a service that does not answer, a Base that is
// no URL and a context that ended are ErrUnreachable, each call's.
func TestClientUnreachable(t *testing.T) {
	gone := httptest.NewServer(http.NotFoundHandler())
	gone.Close()
	ended, cancel := context.WithCancel(context.Background())
	cancel()
	live := httptest.NewServer(http.NotFoundHandler())
	t.Cleanup(live.Close)
	for _, tc := range []struct {
		name, base string
		ctx        context.Context
		why        string
	}{
		{"closed", gone.URL, context.Background(), "unreachable: "},
		{"no base", "", context.Background(), `Base "" is not an http(s) URL`},
		{"no scheme", "127.0.0.1:1", context.Background(), "is not an http(s) URL"},
		{"context ended", live.URL, ended, "context canceled"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := contract.Client{Base: tc.base}
			_, serr := c.Stock(tc.ctx, goods)
			_, oerr := c.Orders(tc.ctx, goods)
			for _, err := range []error{c.Reset(tc.ctx, goods, 5), serr, oerr} {
				var ce *contract.CallError
				if !errors.Is(err, contract.ErrUnreachable) || errors.Is(err, contract.ErrViolation) || !errors.As(err, &ce) || ce.Status != 0 {
					t.Errorf("%v: want a *CallError matching ErrUnreachable only, with no status", err)
				}
				if err != nil && !strings.Contains(err.Error(), tc.why) {
					t.Errorf("%v: want it to say %q", err, tc.why)
				}
			}
		})
	}
}
