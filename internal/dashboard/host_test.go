package dashboard

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/seckill-lab/seckill/bench"
	"github.com/seckill-lab/seckill/internal/democli"
	"github.com/seckill-lab/seckill/internal/testenv"
	"github.com/seckill-lab/seckill/stock"
	"github.com/seckill-lab/seckill/stock/catalog"
)

// rebindGoods is the DNS-rebinding test's goods (the browser test uses
// browserGoods).
const rebindGoods = 4343

// route is one dashboard endpoint and a request that would act on the
// stack if the dashboard obeyed it.
type route struct {
	method, path, body string
}

// routes are every endpoint of the dashboard, each POST with a body that
// changes data when obeyed.
var routes = []route{
	{"GET", "/", ""},
	{"GET", "/healthz", ""},
	{"GET", "/favicon.ico", ""},
	{"GET", "/events", ""},
	{"GET", "/api/snapshot", ""},
	{"POST", "/api/strategy", `{"name":"` + catalog.None + `"}`},
	{"POST", "/api/reset", `{"stock":7}`},
	{"POST", "/api/burst", `{"requests":3,"concurrency":1}`},
	{"POST", "/api/fault", `{"kind":"pause","target":"inst-1","for":"100ms"}`},
	{"POST", "/api/fault", `{"kind":"heal"}`},
}

// errorBody is a JSON error answer.
type errorBody struct {
	Error  string `json:"error"`
	Detail string `json:"detail"`
}

// TestDNSRebinding: what a DNS-rebinding page sends (Host
// evil.example:PORT, Origin http://evil.example:PORT, over a real
// connection to the dashboard) gets 403 forbidden_host from every route,
// and the stack is left as it was: the goods' stock and orders, every
// instance's strategy, no fault on.
func TestDNSRebinding(t *testing.T) {
	dir := testenv.Get(t, testenv.StackDir)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	f, err := democli.FromStack(dir)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.SetStrategy(ctx, stock.Config{Name: catalog.Redis}); err != nil {
		t.Fatal(err)
	}
	before, _, err := f.Reset(ctx, rebindGoods, 50)
	if err != nil {
		t.Fatal(err)
	}
	s, err := New(Options{Dir: dir, GoodsID: rebindGoods, Out: testLog{t}})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(s)
	defer srv.Close()
	defer srv.CloseClientConnections()
	_, port, err := net.SplitHostPort(srv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	evil := "evil.example:" + port

	for _, rt := range routes {
		t.Run(rt.method+" "+rt.path+" "+rt.body, func(t *testing.T) {
			rctx, rcancel := context.WithTimeout(ctx, 20*time.Second)
			defer rcancel()
			req, err := http.NewRequestWithContext(rctx, rt.method, srv.URL+rt.path, strings.NewReader(rt.body))
			if err != nil {
				t.Fatal(err)
			}
			req.Host = evil
			req.Header.Set("Origin", "http://"+evil)
			if rt.body != "" {
				req.Header.Set("Content-Type", "application/json")
			}
			resp, err := srv.Client().Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			if resp.StatusCode != http.StatusForbidden {
				t.Fatalf("status %d, want 403", resp.StatusCode)
			}
			var e errorBody
			if err := json.NewDecoder(io.LimitReader(resp.Body, 4096)).Decode(&e); err != nil {
				t.Fatalf("the 403 is not JSON: %v", err)
			}
			if e.Error != "forbidden_host" || !strings.Contains(e.Detail, "--allow-host") {
				t.Errorf("error %q (%s), want forbidden_host naming --allow-host", e.Error, e.Detail)
			}
		})
	}

	after, err := bench.NewAdmin(f.Token).Audit(ctx, f.Instances[0], rebindGoods)
	if err != nil {
		t.Fatal(err)
	}
	if after.Stock != before.Stock || after.Orders != before.Orders || after.InitialStock != before.InitialStock {
		t.Errorf("the goods changed: %+v, was %+v", after, before)
	}
	got, err := f.Strategies(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, x := range got {
		if x.Config.Name != catalog.Redis {
			t.Errorf("%s runs %s, want %s (as before the requests)", x.Instance, x.Config.Name, catalog.Redis)
		}
	}
	s.mu.Lock()
	faults := len(s.faults)
	s.mu.Unlock()
	if faults != 0 {
		t.Errorf("%d faults on, want none", faults)
	}
}

// TestAllowedHosts: the loopback names and addresses, the listen host and
// the names added with --allow-host are answered; any other is not. A
// dashboard that listens beyond loopback wants the admin token on its
// buttons (401 without it), and takes it.
func TestAllowedHosts(t *testing.T) {
	dir := testenv.Get(t, testenv.StackDir)
	tests := []struct {
		name   string
		addr   string
		allow  []string
		host   string
		token  bool
		status int // of a POST /api/fault with an unknown kind: 400 once past the guards
	}{
		{"localhost", "127.0.0.1:0", nil, "localhost:8088", false, http.StatusBadRequest},
		{"127.0.0.1", "127.0.0.1:0", nil, "127.0.0.1:8088", false, http.StatusBadRequest},
		{"::1", "127.0.0.1:0", nil, "[::1]:8088", false, http.StatusBadRequest},
		{"rebinding name", "127.0.0.1:0", nil, "evil.example:8088", false, http.StatusForbidden},
		{"an added name", "127.0.0.1:0", []string{"projector.lan"}, "projector.lan:8088", false, http.StatusBadRequest},
		{"a name not added", "127.0.0.1:0", []string{"projector.lan"}, "other.lan:8088", false, http.StatusForbidden},
		{"LAN, no token", "0.0.0.0:0", []string{"projector.lan"}, "projector.lan:8088", false, http.StatusUnauthorized},
		{"LAN, token", "0.0.0.0:0", []string{"projector.lan"}, "projector.lan:8088", true, http.StatusBadRequest},
		{"LAN, loopback, no token", "0.0.0.0:0", nil, "127.0.0.1:8088", false, http.StatusUnauthorized},
		{"LAN, a foreign address", "0.0.0.0:0", nil, "203.0.113.9:8088", true, http.StatusForbidden},
	}
	if lan := lanAddr(); lan != "" {
		tests = append(tests, []struct {
			name   string
			addr   string
			allow  []string
			host   string
			token  bool
			status int
		}{
			{"LAN, this machine's address", "0.0.0.0:0", nil, lan + ":8088", true, http.StatusBadRequest},
			{"LAN, this machine's address, no token", "0.0.0.0:0", nil, lan + ":8088", false, http.StatusUnauthorized},
			{"loopback only, this machine's LAN address", "127.0.0.1:0", nil, lan + ":8088", true, http.StatusForbidden},
		}...)
	} else {
		t.Log("this machine has no LAN address: the cases for one are not run")
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s, err := New(Options{Dir: dir, Addr: tc.addr, AllowHosts: tc.allow, Out: testLog{t}})
			if err != nil {
				t.Fatal(err)
			}
			req := localRequest(http.MethodPost, "/api/fault", strings.NewReader(`{"kind":"no-such-kind","target":"inst-1"}`))
			req.Host = tc.host
			req.Header.Set("Origin", "http://"+tc.host)
			req.Header.Set("Content-Type", "application/json")
			if tc.token {
				req.Header.Set("Authorization", "Bearer "+s.st.AdminToken)
			}
			w := httptest.NewRecorder()
			s.ServeHTTP(w, req)
			if w.Code != tc.status {
				t.Fatalf("status %d (%s), want %d", w.Code, w.Body.String(), tc.status)
			}
		})
	}
}

// lanAddr is an IPv4 address of this machine that is not loopback ("" when
// it has none).
func lanAddr() string {
	addrs, _ := net.InterfaceAddrs()
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok && !n.IP.IsLoopback() && n.IP.To4() != nil && !n.IP.IsLinkLocalUnicast() {
			return n.IP.String()
		}
	}
	return ""
}
