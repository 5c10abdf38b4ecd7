package dashboard

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/seckill-lab/seckill/internal/stack"
	"github.com/seckill-lab/seckill/stock"
	"github.com/seckill-lab/seckill/stock/catalog"
)

// deadStack writes the run directory of a stack whose every component
// listens nowhere (port 1 refuses at once): what the dashboard sees when
// the stack went down under it.
func deadStack(t *testing.T, proxy bool) string {
	t.Helper()
	dir := t.TempDir()
	st := map[string]any{
		// nothing listens on 20900+80 (its nginx) during the tests
		"base_port": 20900, "topology": stack.TopologySingle, "ready": true, "proxy": proxy,
		"components": []map[string]string{
			{"name": "inst-1", "kind": string(stack.KindInstance), "addr": "127.0.0.1:1"},
			{"name": "inst-2", "kind": string(stack.KindInstance), "addr": "127.0.0.1:1"},
			{"name": "nginx", "kind": string(stack.KindNginx), "addr": "127.0.0.1:1"},
			{"name": stack.DashboardName, "kind": string(stack.KindDashboard), "addr": "127.0.0.1:1"},
		},
	}
	b, err := json.Marshal(st)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "state.json"), b, 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

func newServer(t *testing.T, proxy bool) *Server {
	t.Helper()
	s, err := New(Options{Dir: deadStack(t, proxy), Out: io.Discard})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestHandlers: every button validates its input and answers a JSON
// error with the right status; a stack that does not answer is a readable
// 502, never a panic or a hang.
func TestHandlers(t *testing.T) {
	s := newServer(t, false)
	big := `{"stock":` + strings.Repeat(" ", maxBody) + `1}`
	tests := []struct {
		name        string
		method      string
		path        string
		contentType string
		origin      string
		body        string
		status      int
		code        string // the body's "error"; "" for a success
	}{
		{"health", "GET", "/healthz", "", "", "", 200, ""},
		{"unknown path", "GET", "/nope", "", "", "", 404, "not_found"},
		{"GET on a button", "GET", "/api/reset", "", "", "", 405, "method_not_allowed"},
		{"POST on the page", "POST", "/", "application/json", "", "{}", 405, "method_not_allowed"},
		{"no JSON content type", "POST", "/api/reset", "text/plain", "", `{"stock":1}`, 415, "unsupported_media_type"},
		{"body too large", "POST", "/api/reset", "application/json", "", big, 413, "body_too_large"},
		{"malformed JSON", "POST", "/api/reset", "application/json", "", `{"stock":`, 400, "invalid_json"},
		{"not an object", "POST", "/api/reset", "application/json", "", `[1]`, 400, "invalid_json"},
		{"unknown field", "POST", "/api/reset", "application/json", "", `{"stok":1}`, 400, "invalid_field"},
		{"missing stock", "POST", "/api/reset", "application/json", "", `{}`, 400, "missing_field"},
		{"negative stock", "POST", "/api/reset", "application/json", "", `{"stock":-1}`, 400, "invalid_field"},
		{"stock too large", "POST", "/api/reset", "application/json", "", `{"stock":1000001}`, 400, "invalid_field"},
		{"stock of wrong type", "POST", "/api/reset", "application/json", "", `{"stock":"9"}`, 400, "invalid_field"},
		{"another origin", "POST", "/api/reset", "application/json", "http://evil.example", `{"stock":1}`, 403, "cross_origin"},
		{"reset, stack down", "POST", "/api/reset", "application/json; charset=utf-8", "", `{"stock":5}`, 502, "reset_failed"},
		{"strategy without name", "POST", "/api/strategy", "application/json", "", `{"fencing":true}`, 400, "missing_field"},
		{"unknown strategy", "POST", "/api/strategy", "application/json", "", `{"name":"nope"}`, 400, "unknown_strategy"},
		{"fencing without tokens", "POST", "/api/strategy", "application/json", "", `{"name":"` + catalog.None + `","fencing":true}`, 400, "invalid_strategy_config"},
		{"bad duration", "POST", "/api/strategy", "application/json", "", `{"name":"` + catalog.Redis + `","work_delay":"soon"}`, 400, "invalid_field"},
		{"work delay out of range", "POST", "/api/strategy", "application/json", "", `{"name":"` + catalog.Redis + `","work_delay":"-1s"}`, 400, "invalid_strategy_config"},
		{"unknown knob", "POST", "/api/strategy", "application/json", "", `{"name":"` + catalog.Redis + `","speed":1}`, 400, "invalid_field"},
		{"strategy, stack down", "POST", "/api/strategy", "application/json", "", `{"name":"` + catalog.Redis + `","fencing":true}`, 502, "not_applied"},
		{"burst without requests", "POST", "/api/burst", "application/json", "", `{"concurrency":5}`, 400, "missing_field"},
		{"burst of zero", "POST", "/api/burst", "application/json", "", `{"requests":0}`, 400, "invalid_field"},
		{"burst too large", "POST", "/api/burst", "application/json", "", `{"requests":5001}`, 400, "invalid_field"},
		{"concurrency too high", "POST", "/api/burst", "application/json", "", `{"requests":5,"concurrency":201}`, 400, "invalid_field"},
		{"qty zero", "POST", "/api/burst", "application/json", "", `{"requests":5,"qty":0}`, 400, "invalid_field"},
		{"requests of wrong type", "POST", "/api/burst", "application/json", "", `{"requests":"many"}`, 400, "invalid_field"},
		{"burst, nginx down", "POST", "/api/burst", "application/json", "", `{"requests":3,"concurrency":2}`, 502, "nginx_unreachable"},
		{"fault without kind", "POST", "/api/fault", "application/json", "", `{"target":"inst-1"}`, 400, "missing_field"},
		{"unknown fault", "POST", "/api/fault", "application/json", "", `{"kind":"flood","target":"inst-1"}`, 400, "invalid_field"},
		{"pause without target", "POST", "/api/fault", "application/json", "", `{"kind":"pause"}`, 400, "missing_field"},
		{"pause an unknown component", "POST", "/api/fault", "application/json", "", `{"kind":"pause","target":"inst-9"}`, 400, "unknown_target"},
		{"pause the dashboard", "POST", "/api/fault", "application/json", "", `{"kind":"pause","target":"dashboard"}`, 400, "unknown_target"},
		{"pause too long", "POST", "/api/fault", "application/json", "", `{"kind":"pause","target":"inst-1","for":"1h"}`, 400, "invalid_field"},
		{"pause for nonsense", "POST", "/api/fault", "application/json", "", `{"kind":"pause","target":"inst-1","for":"a while"}`, 400, "invalid_field"},
		{"partition without proxy", "POST", "/api/fault", "application/json", "", `{"kind":"partition","target":"inst-1/redis"}`, 409, "needs_proxy"},
		{"pause a dead instance", "POST", "/api/fault", "application/json", "", `{"kind":"pause","target":"inst-1","for":"1s"}`, 502, "fault_failed"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req := localRequest(tt.method, tt.path, strings.NewReader(tt.body))
			if tt.contentType != "" {
				req.Header.Set("Content-Type", tt.contentType)
			}
			if tt.origin != "" {
				req.Header.Set("Origin", tt.origin)
			}
			w := httptest.NewRecorder()
			s.ServeHTTP(w, req)
			if w.Code != tt.status {
				t.Fatalf("status %d, want %d: %s", w.Code, tt.status, w.Body.String())
			}
			if ct := w.Header().Get("Content-Type"); ct != "application/json" {
				t.Fatalf("Content-Type %q, want application/json: %s", ct, w.Body.String())
			}
			var body struct {
				Error  string `json:"error"`
				Detail string `json:"detail"`
			}
			if err := json.Unmarshal(w.Body.Bytes(), &body); err != nil {
				t.Fatalf("body is not JSON: %v: %s", err, w.Body.String())
			}
			if body.Error != tt.code {
				t.Errorf("error %q, want %q (%s)", body.Error, tt.code, body.Detail)
			}
			if tt.code != "" && body.Detail == "" {
				t.Errorf("error %q without a detail", body.Error)
			}
		})
	}
}

// TestPartitionTarget: on a stack with the proxy, a partition's target is
// checked by internal/stack and named in the error.
func TestPartitionTarget(t *testing.T) {
	s := newServer(t, true)
	req := localRequest("POST", "/api/fault", strings.NewReader(`{"kind":"partition","target":"inst-7/redis"}`))
	req.Header.Set("Content-Type", "application/json")
	w := httptest.NewRecorder()
	s.ServeHTTP(w, req)
	if w.Code != http.StatusBadRequest || !strings.Contains(w.Body.String(), `"unknown_target"`) || !strings.Contains(w.Body.String(), "inst-7") {
		t.Errorf("%d %s, want 400 unknown_target naming inst-7", w.Code, w.Body.String())
	}
}

// TestPageIsSelfContained: the page loads nothing from elsewhere.
func TestPageIsSelfContained(t *testing.T) {
	s := newServer(t, false)
	w := httptest.NewRecorder()
	s.ServeHTTP(w, localRequest("GET", "/", nil))
	if w.Code != http.StatusOK || !strings.HasPrefix(w.Header().Get("Content-Type"), "text/html") {
		t.Fatalf("GET /: %d %s", w.Code, w.Header().Get("Content-Type"))
	}
	page := w.Body.Bytes()
	for _, re := range []string{`<script[^>]+src=`, `<link\b`, `<img\b`, `@import`, `url\(`} {
		if m := regexp.MustCompile(re).Find(page); m != nil {
			t.Errorf("the page loads an asset: %s", m)
		}
	}
	for _, u := range regexp.MustCompile(`https?://[^"' )]+`).FindAll(page, -1) {
		if !bytes.Equal(u, []byte("http://www.w3.org/2000/svg")) {
			t.Errorf("the page names an external URL: %s", u)
		}
	}
	for _, id := range []string{"stock", "sold", "rate", "oversold", "tl", "btn-reset", "btn-burst", "btn-strategy", "btn-pause", "btn-heal"} {
		if !bytes.Contains(page, []byte(`id="`+id+`"`)) {
			t.Errorf("the page has no #%s", id)
		}
	}
}

// TestSnapshotStackDown: a stack that does not answer gives a snapshot
// that says so.
func TestSnapshotStackDown(t *testing.T) {
	s := newServer(t, false)
	w := httptest.NewRecorder()
	s.ServeHTTP(w, localRequest("GET", "/api/snapshot", nil))
	var snap Snapshot
	if err := json.Unmarshal(w.Body.Bytes(), &snap); err != nil || w.Code != http.StatusOK {
		t.Fatalf("%d %v: %s", w.Code, err, w.Body.String())
	}
	if snap.Audit != nil || len(snap.Errors) == 0 || len(snap.Instances) != 2 || snap.Instances[0].Up {
		t.Errorf("snapshot of a dead stack: audit %v, errors %q, instances %+v", snap.Audit, snap.Errors, snap.Instances)
	}
	if len(snap.Strategies) != len(catalog.StrategyNames()) {
		t.Errorf("%d strategies, want the registry's %d", len(snap.Strategies), len(catalog.StrategyNames()))
	}
}

func TestNewOptions(t *testing.T) {
	tests := []struct {
		name string
		opts Options
		want error
	}{
		{"no stack", Options{Dir: t.TempDir()}, stack.ErrNotRunning},
		{"poll too short", Options{Dir: deadStack(t, false), Poll: 1}, ErrInvalidOption},
		{"negative goods", Options{Dir: deadStack(t, false), GoodsID: -1}, ErrInvalidOption},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := New(tt.opts); !errors.Is(err, tt.want) {
				t.Errorf("New: %v, want %v", err, tt.want)
			}
		})
	}
	s, err := New(Options{Dir: deadStack(t, false)})
	if err != nil {
		t.Fatal(err)
	}
	if s.Addr() != "127.0.0.1:20988" {
		t.Errorf("default address %s, want the base port + 88", s.Addr())
	}
}

// TestTimeline: sections from crafted events; the two that read before
// each other's commit are red, the one after them is not.
func TestTimeline(t *testing.T) {
	const ms = int64(1e6)
	now := 10_000 * ms
	ev := func(inst, p string, kind stock.EventKind, at int64) stock.Event {
		return stock.Event{Instance: inst, Purchase: p, Key: "goods:1", Kind: kind, MonoNS: at}
	}
	tests := []struct {
		name        string
		events      []stock.Event
		sections    int
		red         []bool // by section, in read order
		overlaps    int
		lanes       []string
		acquisition int
	}{
		{"empty", nil, 0, nil, 0, []string{"inst-1", "inst-2"}, 0},
		{"race", []stock.Event{
			ev("inst-1", "a", stock.EventRead, now-900*ms), ev("inst-1", "a", stock.EventCommitted, now-800*ms),
			ev("inst-2", "b", stock.EventRead, now-850*ms), ev("inst-2", "b", stock.EventCommitted, now-700*ms),
			ev("inst-1", "c", stock.EventRead, now-600*ms), ev("inst-1", "c", stock.EventCommitted, now-500*ms),
		}, 3, []bool{true, true, false}, 1, []string{"inst-1", "inst-2"}, 0},
		{"locked, one running, one too old, a new lane", []stock.Event{
			ev("inst-1", "old", stock.EventRead, now-9000*ms), ev("inst-1", "old", stock.EventCommitted, now-8000*ms),
			{Instance: "inst-3", Purchase: "d", Key: "goods:1", Kind: stock.EventAcquired, MonoNS: now - 300*ms, WaitedNS: 2 * ms},
			ev("inst-3", "d", stock.EventRead, now-290*ms),
		}, 1, []bool{false}, 0, []string{"inst-1", "inst-2", "inst-3"}, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tv := timeline(tt.events, []string{"inst-1", "inst-2"}, now-int64(Window), now)
			if len(tv.Sections) != tt.sections || len(tv.Overlaps) != tt.overlaps || strings.Join(tv.Lanes, ",") != strings.Join(tt.lanes, ",") {
				t.Fatalf("timeline %+v, want %d sections, %d overlaps, lanes %v", tv, tt.sections, tt.overlaps, tt.lanes)
			}
			for i, r := range tt.red {
				if tv.Sections[i].Red != r {
					t.Errorf("section %d red=%v, want %v", i, tv.Sections[i].Red, r)
				}
			}
			var l LockView
			l.fromEvents(tt.events)
			if l.Acquisitions != tt.acquisition || (tt.acquisition > 0 && (l.WaitP50 == nil || *l.WaitP50 != 2)) {
				t.Errorf("lock view %+v, want %d acquisitions waiting 2 ms", l, tt.acquisition)
			}
		})
	}
}

// localRequest is httptest.NewRequest for the dashboard's own host
// (httptest's default, example.com, is refused as a rebound name).
func localRequest(method, target string, body io.Reader) *http.Request {
	r := httptest.NewRequest(method, target, body)
	r.Host = "127.0.0.1"
	return r
}
