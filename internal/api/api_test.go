package api_test

import (
	"context"
	"encoding/json"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/seckill-lab/seckill/internal/api"
	"github.com/seckill-lab/seckill/internal/sqltest"
	"github.com/seckill-lab/seckill/lockimpl"
	"github.com/seckill-lab/seckill/lockimpl/mutexlock"
	"github.com/seckill-lab/seckill/stock"
	"github.com/seckill-lab/seckill/stock/catalog"
	"github.com/seckill-lab/seckill/stock/sqlstore"
)

const token = "test-token"

// newHandler is the real handler over a real Service on the test stack's
// MariaDB, with the in-process mutex as its only lock backend.
func newHandler(t *testing.T, adminToken string) (http.Handler, *stock.Service) {
	t.Helper()
	return newHandlerEvents(t, adminToken, stock.NewEvents(100))
}

// newHandlerEvents is newHandler recording into events.
func newHandlerEvents(t *testing.T, adminToken string, events *stock.Events) (http.Handler, *stock.Service) {
	t.Helper()
	svc, _ := newService(t, "api-test")
	return api.New(api.Options{Service: svc, AdminToken: adminToken, Events: events, Log: log.New(io.Discard, "", 0)}), svc
}

// newService is a real Service named instance over the test stack's
// MariaDB (the store is returned too), with the in-process mutex as its
// only lock backend; it is closed at the test's end.
func newService(t *testing.T, instance string) (*stock.Service, *sqlstore.Store) {
	t.Helper()
	gin.SetMode(gin.TestMode)
	st := sqltest.Store(t)
	svc, err := stock.NewService(stock.ServiceOptions{Instance: instance, Store: st,
		Backends: map[string]stock.LockBackend{catalog.Mutex: mutexlock.NewBackend(mutexlock.New(lockimpl.Options{}))}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { svc.Close() })
	return svc, st
}

type answer struct {
	status int
	header http.Header
	body   map[string]any
}

func call(t *testing.T, h http.Handler, method, path, contentType, body, auth string) answer {
	t.Helper()
	req := httptest.NewRequest(method, path, strings.NewReader(body))
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, req)
	a := answer{status: w.Code, header: w.Header()}
	if strings.HasPrefix(w.Header().Get("Content-Type"), "application/json") {
		if err := json.Unmarshal(w.Body.Bytes(), &a.body); err != nil {
			t.Fatalf("%s %s: body %q is not a JSON object: %v", method, path, w.Body.String(), err)
		}
	}
	return a
}

// TestBadInput: every bad request gets its status and a JSON error code,
// and changes nothing (the strategy stays none).
func TestBadInput(t *testing.T) {
	h, svc := newHandler(t, token)
	const js = "application/json"
	bearer := "Bearer " + token
	tests := []struct {
		name                      string
		method, path, ctype, body string
		auth                      string
		status                    int
		code                      string
	}{
		{"purchase: not JSON", http.MethodPost, "/api/v1/purchase", "text/plain", `{}`, "", http.StatusUnsupportedMediaType, ""},
		{"purchase: unknown field", http.MethodPost, "/api/v1/purchase", js, `{"goods_id":1,"qty":1,"user_id":"u","x":1}`, "", http.StatusBadRequest, ""},
		{"purchase: missing qty", http.MethodPost, "/api/v1/purchase", js, `{"goods_id":1,"user_id":"u"}`, "", http.StatusBadRequest, ""},
		{"purchase: wrong type", http.MethodPost, "/api/v1/purchase", js, `{"goods_id":"1","qty":1,"user_id":"u"}`, "", http.StatusBadRequest, ""},
		{"purchase: duplicate key", http.MethodPost, "/api/v1/purchase", js, `{"goods_id":1,"qty":1,"qty":2,"user_id":"u"}`, "", http.StatusBadRequest, ""},
		{"purchase: too large", http.MethodPost, "/api/v1/purchase", js, `{"user_id":"` + strings.Repeat("u", 8<<10) + `"}`, "", http.StatusRequestEntityTooLarge, ""},
		{"no route", http.MethodGet, "/nope", "", "", "", http.StatusNotFound, "not_found"},
		{"wrong method", http.MethodGet, "/api/v1/purchase", "", "", "", http.StatusMethodNotAllowed, "method_not_allowed"},
		{"admin: no token", http.MethodGet, "/admin/strategy", "", "", "", http.StatusUnauthorized, "unauthorized"},
		{"admin: wrong token", http.MethodGet, "/admin/strategy", "", "", "Bearer nope", http.StatusUnauthorized, "unauthorized"},
		{"strategy: unknown name", http.MethodPut, "/admin/strategy", js, `{"name":"nope"}`, bearer, http.StatusBadRequest, "unknown_strategy"},
		{"strategy: no name", http.MethodPut, "/admin/strategy", js, `{"lock_wait":"1s"}`, bearer, http.StatusBadRequest, ""},
		{"strategy: bad knob", http.MethodPut, "/admin/strategy", js, `{"name":"mutex","lock_wait":"-1s"}`, bearer, http.StatusBadRequest, ""},
		{"strategy: unknown knob", http.MethodPut, "/admin/strategy", js, `{"name":"mutex","speed":"fast"}`, bearer, http.StatusBadRequest, ""},
		{"strategy: server not configured", http.MethodPut, "/admin/strategy", js, `{"name":"redis"}`, bearer, http.StatusServiceUnavailable, "backend_unavailable"},
		{"reset: negative stock", http.MethodPost, "/admin/reset", js, `{"goods_id":1,"stock":-1}`, bearer, http.StatusBadRequest, ""},
		{"audit: no goods", http.MethodGet, "/admin/audit", "", "", bearer, http.StatusBadRequest, ""},
		{"goods: not a number", http.MethodGet, "/api/v1/goods/abc", "", "", "", http.StatusBadRequest, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			a := call(t, h, tc.method, tc.path, tc.ctype, tc.body, tc.auth)
			if a.status != tc.status {
				t.Fatalf("status %d, want %d (body %v)", a.status, tc.status, a.body)
			}
			code, _ := a.body["error"].(string)
			if code == "" || tc.code != "" && code != tc.code {
				t.Errorf("error code %q, want %q (body %v)", code, tc.code, a.body)
			}
			if got := svc.Config().Name; got != catalog.None {
				t.Errorf("strategy %s after a refused request, want none", got)
			}
		})
	}
}

// TestAdminDisabled: without a token every admin route answers 403.
func TestAdminDisabled(t *testing.T) {
	h, _ := newHandler(t, "")
	for _, path := range []string{"/admin/strategy", "/admin/events", "/admin/audit?goods_id=1"} {
		if a := call(t, h, http.MethodGet, path, "", "", "Bearer x"); a.status != http.StatusForbidden || a.body["error"] != "admin_disabled" {
			t.Errorf("%s: %d %v, want 403 admin_disabled", path, a.status, a.body)
		}
	}
}

// TestStrategyRoundTrip: PUT then GET /admin/strategy give the setting.
func TestStrategyRoundTrip(t *testing.T) {
	h, svc := newHandler(t, token)
	a := call(t, h, http.MethodPut, "/admin/strategy", "application/json", `{"name":"mutex","lock_wait":"2s"}`, "Bearer "+token)
	if a.status != http.StatusOK || a.body["name"] != catalog.Mutex {
		t.Fatalf("PUT: %d %v", a.status, a.body)
	}
	if svc.Config().Name != catalog.Mutex {
		t.Errorf("service strategy %s, want mutex", svc.Config().Name)
	}
	g := call(t, h, http.MethodGet, "/admin/strategy", "", "", "Bearer "+token)
	if g.status != http.StatusOK || g.body["name"] != catalog.Mutex || g.body["lock_wait"] != "2s" || g.body["instance"] != "api-test" {
		t.Errorf("GET: %d %v", g.status, g.body)
	}
}

// TestEventsStream: /admin/events is a server-sent event stream (it ends
// here when the request's context does).
func TestEventsStream(t *testing.T) {
	h, _ := newHandler(t, token)
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL+"/admin/events?replay=true", nil)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("%d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	buf := make([]byte, len(stock.ReplayedComment))
	if _, err := io.ReadFull(resp.Body, buf); err != nil || string(buf) != stock.ReplayedComment {
		t.Errorf("first bytes %q (%v), want %q", buf, err, stock.ReplayedComment)
	}
}

// TestEventSubscribersBounded: past stock.MaxSubscribers live streams, a
// subscriber gets 503 with a JSON error and Retry-After, and a stream that
// ends frees its place.
func TestEventSubscribersBounded(t *testing.T) {
	events := stock.NewEvents(100)
	h, _ := newHandlerEvents(t, token, events)
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	open := func(ctx context.Context) *http.Response {
		t.Helper()
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL+"/admin/events?replay=true", nil)
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cancels := make([]context.CancelFunc, stock.MaxSubscribers)
	for i := range cancels {
		sctx, scancel := context.WithCancel(ctx)
		cancels[i] = scancel
		resp := open(sctx)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("subscriber %d: %d", i+1, resp.StatusCode)
		}
		t.Cleanup(func() { scancel(); resp.Body.Close() })
	}
	resp := open(ctx)
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable || !strings.Contains(string(body), `"too_many_subscribers"`) || resp.Header.Get("Retry-After") == "" {
		t.Fatalf("subscriber %d: %d %q (Retry-After %q), want 503 too_many_subscribers", stock.MaxSubscribers+1, resp.StatusCode, body, resp.Header.Get("Retry-After"))
	}
	cancels[0]()
	for events.Subscribers() >= stock.MaxSubscribers {
		select {
		case <-ctx.Done():
			t.Fatal("a closed stream kept its place")
		case <-time.After(5 * time.Millisecond):
		}
	}
	if resp := open(ctx); resp.StatusCode != http.StatusOK {
		t.Fatalf("after one left: %d", resp.StatusCode)
	} else {
		resp.Body.Close()
	}
}
