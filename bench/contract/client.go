package contract

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"
)

// DefaultTimeout bounds one call of a Client whose HTTP is nil.
const DefaultTimeout = 15 * time.Second

// MaxAnswer is the largest answer body a Client reads: the orders list
// of a long run. A larger one is a violation.
const MaxAnswer = 64 << 20

// Client is a strict client of the contract's three audit calls: reset,
// stock read, orders list. Every answer is checked against the contract
// before it is used; one that breaks it is an ErrViolation. Its zero value
// needs only Base. A Client is safe for concurrent use.
type Client struct {
	// Base is the service's URL: scheme, host and port, and a path prefix
	// if the service has one ("http://127.0.0.1:17080"). Required.
	Base string
	// Token is the bearer token the /admin calls send. Optional, defaults
	// to none: no Authorization header, for a service without one.
	Token string
	// HTTP sends the requests. Optional, defaults to a client whose
	// requests end after DefaultTimeout; ctx bounds each call too.
	HTTP *http.Client
}

// defaultHTTP is the client of a Client whose HTTP is nil.
var defaultHTTP = &http.Client{Timeout: DefaultTimeout}

// The statuses the contract gives each audit call (openapi.yaml's
// responses; a test compares them). Any other is a violation.
var (
	resetStatuses  = []int{200, 400, 401, 403, 413, 415, 500, 503}
	goodsStatuses  = []int{200, 400, 404, 500, 503}
	ordersStatuses = []int{200, 400, 401, 403, 404, 500, 503}
)

// Reset sets goods' stock and deletes its orders (POST /admin/reset). The
// answer must echo both.
func (c *Client) Reset(ctx context.Context, goods int64, stock int) error {
	in, _ := json.Marshal(map[string]int64{"goods_id": goods, "stock": int64(stock)})
	var out struct {
		GoodsID int64 `json:"goods_id"`
		Stock   int64 `json:"stock"`
	}
	a, err := c.call(ctx, http.MethodPost, PathReset, in, resetShape, resetStatuses, &out)
	if err != nil {
		return err
	}
	switch {
	case out.GoodsID != goods:
		return a.violation(fmt.Sprintf("has \"goods_id\" %d, want %d", out.GoodsID, goods))
	case out.Stock != int64(stock):
		return a.violation(fmt.Sprintf("has \"stock\" %d, want %d", out.Stock, stock))
	}
	return nil
}

// Stock returns goods' stock now (GET /api/v1/goods/{id}). It is negative
// when the service holds a negative stock (one that oversold).
func (c *Client) Stock(ctx context.Context, goods int64) (int64, error) {
	var out struct {
		ID    int64 `json:"id"`
		Stock int64 `json:"stock"`
	}
	a, err := c.call(ctx, http.MethodGet, GoodsPath(goods), nil, goodsShape, goodsStatuses, &out)
	if err != nil {
		return 0, err
	}
	if out.ID != goods {
		return 0, a.violation(fmt.Sprintf("has \"id\" %d, want %d", out.ID, goods))
	}
	return out.Stock, nil
}

// Orders returns the request id of every order of goods, once per order
// (GET /admin/orders?goods_id=N); an empty list when it has none.
func (c *Client) Orders(ctx context.Context, goods int64) ([]string, error) {
	var out struct {
		GoodsID    int64    `json:"goods_id"`
		RequestIDs []string `json:"request_ids"`
	}
	a, err := c.call(ctx, http.MethodGet, OrdersPath(goods), nil, ordersShape, ordersStatuses, &out)
	if err != nil {
		return nil, err
	}
	if out.GoodsID != goods {
		return nil, a.violation(fmt.Sprintf("has \"goods_id\" %d, want %d", out.GoodsID, goods))
	}
	if out.RequestIDs == nil {
		out.RequestIDs = []string{}
	}
	return out.RequestIDs, nil
}

// answer is one call's request and what came back.
type answer struct {
	call, method, url string
	status            int
	body              []byte
}

func (a answer) error(kind error, reason string) *CallError {
	return &CallError{Call: a.call, Method: a.method, URL: a.url, Status: a.status, Body: a.body, Reason: reason, kind: kind}
}

func (a answer) violation(reason string) *CallError { return a.error(ErrViolation, reason) }

// call sends one request to c.Base+path (in, when not nil, as its JSON
// body) and checks the answer: a 200 must be an object of ok, which is
// then decoded into out; another status must be among statuses with an
// error body (ErrRefused), else it is a violation.
func (c *Client) call(ctx context.Context, method, path string, in []byte, ok shape, statuses []int, out any) (answer, error) {
	a := answer{call: method + " " + path, method: method}
	u, err := c.url(path)
	if err != nil {
		return a, &CallError{Call: a.call, Method: method, Reason: err.Error(), Err: err, kind: ErrUnreachable}
	}
	a.url = u
	var body io.Reader
	if in != nil {
		body = bytes.NewReader(in)
	}
	req, err := http.NewRequestWithContext(ctx, method, u, body)
	if err != nil {
		return a, &CallError{Call: a.call, Method: method, URL: u, Reason: err.Error(), Err: err, kind: ErrUnreachable}
	}
	if in != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Accept", "application/json")
	if c.Token != "" && strings.HasPrefix(path, "/admin/") {
		req.Header.Set("Authorization", "Bearer "+c.Token)
	}
	hc := c.HTTP
	if hc == nil {
		hc = defaultHTTP
	}
	resp, err := hc.Do(req)
	if err != nil {
		return a, &CallError{Call: a.call, Method: method, URL: u, Reason: "unreachable: " + err.Error(), Err: err, kind: ErrUnreachable}
	}
	defer resp.Body.Close()
	a.status = resp.StatusCode
	a.body, err = io.ReadAll(io.LimitReader(resp.Body, MaxAnswer+1))
	switch {
	case err != nil:
		return a, &CallError{Call: a.call, Method: method, URL: u, Status: a.status, Body: a.body,
			Reason: "broke off: " + err.Error(), Err: err, kind: ErrUnreachable}
	case len(a.body) > MaxAnswer:
		return a, a.violation(fmt.Sprintf("is larger than %d bytes", MaxAnswer))
	case a.status == http.StatusOK:
		if why := ok.check(a.body); why != "" {
			return a, a.violation(why)
		}
		if err := json.Unmarshal(a.body, out); err != nil { // checked: it fits
			return a, a.violation(err.Error())
		}
		return a, nil
	case !slices.Contains(statuses, a.status):
		return a, a.violation("has a status the contract does not give this call (it gives " + statusList(statuses) + ")")
	}
	return a, refusal(a)
}

// refusal is the error of an error answer a: ErrRefused with its code
// when its body is the contract's error object, else a violation.
func refusal(a answer) *CallError {
	if why := errorShape.check(a.body); why != "" {
		return a.violation(why)
	}
	var e struct{ Error, Detail string }
	_ = json.Unmarshal(a.body, &e) // checked: it fits
	ce := a.error(ErrRefused, "refuses: "+e.Error)
	ce.Code, ce.Detail = e.Error, e.Detail
	return ce
}

// url is c.Base joined with path (which may carry a query).
func (c *Client) url(path string) (string, error) {
	b, err := url.Parse(c.Base)
	if err != nil || (b.Scheme != "http" && b.Scheme != "https") || b.Host == "" {
		return "", fmt.Errorf("the client's Base %q is not an http(s) URL", c.Base)
	}
	return strings.TrimSuffix(c.Base, "/") + path, nil
}

func statusList(statuses []int) string {
	s := make([]string, len(statuses))
	for i, st := range statuses {
		s[i] = strconv.Itoa(st)
	}
	return strings.Join(s, ", ")
}
