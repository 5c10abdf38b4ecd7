package bench

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	vegeta "github.com/tsenart/vegeta/v12/lib"
)

func TestCalibrateExactCount(t *testing.T) {
	for _, tc := range []struct{ requests, concurrency, rate int }{
		{500, 8, 0},
		{137, 3, 0},
		{60, 4, 2000}, // open model: paced, still exactly the count
	} {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		c, err := Calibrate(ctx, tc.requests, tc.concurrency, tc.rate)
		cancel()
		if err != nil {
			t.Fatalf("Calibrate(%+v): %v", tc, err)
		}
		if c.Requests != tc.requests || c.OK != tc.requests {
			t.Errorf("Calibrate(%+v): %d requests, %d ok; want exactly %d of each", tc, c.Requests, c.OK, tc.requests)
		}
		if c.CeilingRPS <= 0 {
			t.Errorf("Calibrate(%+v): ceiling %v, want > 0", tc, c.CeilingRPS)
		}
	}
	if _, err := Calibrate(context.Background(), 0, 1, 0); err == nil {
		t.Error("Calibrate with 0 requests: want an error")
	}
}

// TestAttackMapsRequestIDs checks that every result is mapped to the
// Idempotency-Key its request carried (the server echoes it), that keys
// are unique, and that the raw results decode with vegeta's decoder.
func TestAttackMapsRequestIDs(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var p purchase
		body, _ := io.ReadAll(r.Body)
		if err := json.Unmarshal(body, &p); err != nil || p.GoodsID != 7 || p.Qty != 2 || p.UserID == "" {
			w.WriteHeader(http.StatusBadRequest)
			_, _ = w.Write([]byte(`{"error":"invalid_request"}`))
			return
		}
		w.Header().Set("X-Instance", "inst-9")
		key := r.Header.Get("Idempotency-Key")
		if key == "" {
			w.WriteHeader(http.StatusBadRequest)
			_, _ = w.Write([]byte(`{"error":"no key"}`))
			return
		}
		if len(key)%2 == 0 {
			w.WriteHeader(http.StatusConflict)
			_ = json.NewEncoder(w).Encode(map[string]string{"error": "sold_out", "request_id": key})
			return
		}
		_ = json.NewEncoder(w).Encode(map[string]string{"request_id": key})
	}))
	defer srv.Close()

	const n = 300
	var kept []*vegeta.Result
	seen := map[string]bool{}
	mismatch := 0
	var resps []Response
	res, err := attack(context.Background(), attackSpec{
		Name: "t", Requests: n, Concurrency: 16, Timeout: 10 * time.Second,
		Purchases: purchases{Target: srv.URL, Goods: 7, Qty: 2, Seed: 42, Run: "t"},
		OnResult: func(r *vegeta.Result, id string) {
			kept = append(kept, r)
			var body struct {
				RequestID string `json:"request_id"`
			}
			_ = json.Unmarshal(r.Body, &body)
			if body.RequestID != id || id == "" {
				mismatch++
			}
			seen[id] = true
			resps = append(resps, toResponse(r, id))
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	if res.Results != n || len(seen) != n || mismatch != 0 {
		t.Fatalf("results %d, unique ids %d, mismatched ids %d; want %d, %d, 0", res.Results, len(seen), mismatch, n, n)
	}
	for _, r := range resps {
		if r.Instance != "inst-9" || (r.Code == 409) != (r.Error == "sold_out") {
			t.Fatalf("bad response record %+v", r)
		}
	}
	f, err := os.Create(filepath.Join(t.TempDir(), "raw.bin"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := writeRaw(f, kept); err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(f.Name())
	if err != nil {
		t.Fatal(err)
	}
	dec := vegeta.NewDecoder(bytes.NewReader(raw))
	decoded := 0
	for {
		var r vegeta.Result
		if err := dec.Decode(&r); err != nil {
			break
		}
		decoded++
	}
	if decoded != n {
		t.Errorf("decoded %d raw results, want %d", decoded, n)
	}

	// The same seed, run name and goods give the same ids; another seed,
	// or other goods, others (a scenario's runs on other goods with the
	// same seed were answered 422 idempotency_key_reused).
	first := func(seed, goods int64) string {
		src, err := purchases{Target: srv.URL, Goods: goods, Qty: 2, Seed: seed, Run: "t"}.prepare()
		if err != nil {
			t.Fatal(err)
		}
		return src.id(1)
	}
	if a, b := first(42, 7), first(42, 7); a != b || a == first(43, 7) || first(42, 7) == first(42, 8) {
		t.Errorf("ids not seeded per goods: %s %s %s %s", first(42, 7), first(42, 7), first(43, 7), first(42, 8))
	}
}

// countConns counts the connections srv accepted.
func countConns(srv *httptest.Server) *atomic.Int64 {
	var n atomic.Int64
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			n.Add(1)
		}
	}
	return &n
}

// TestAttackConnections checks the lean path against a real net/http
// server: each worker keeps its connection alive, reads every body
// framing, honours Connection: close, and sends every purchase's body.
func TestAttackConnections(t *testing.T) {
	const n, workers = 20, 2
	cases := []struct {
		name     string
		handler  http.HandlerFunc
		want     string
		wantConn int64
	}{
		{"content-length, kept alive", func(w http.ResponseWriter, r *http.Request) {
			b, _ := io.ReadAll(r.Body)
			_, _ = w.Write([]byte("echo:" + string(b)))
		}, "echo:{", workers},
		{"chunked, kept alive", func(w http.ResponseWriter, r *http.Request) {
			_, _ = w.Write([]byte("part1,"))
			w.(http.Flusher).Flush()
			_, _ = w.Write([]byte("part2"))
		}, "part1,part2", workers},
		{"connection: close", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Connection", "close")
			_, _ = w.Write([]byte("bye"))
		}, "bye", n},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			srv := httptest.NewUnstartedServer(tc.handler)
			conns := countConns(srv)
			srv.Start()
			defer srv.Close()
			bad := 0
			_, err := attack(context.Background(), attackSpec{
				Name: "c", Requests: n, Concurrency: workers, Timeout: 10 * time.Second,
				Purchases: purchases{Target: srv.URL, Goods: 1, Qty: 1, Seed: 1, Run: "c"},
				OnResult: func(r *vegeta.Result, _ string) {
					if r.Code != 200 || !strings.HasPrefix(string(r.Body), tc.want) || r.Error != "" {
						bad++
					}
				},
			})
			if err != nil || bad != 0 {
				t.Fatalf("attack: %v; %d of %d results not 200 %q", err, bad, n, tc.want)
			}
			if got := conns.Load(); got != tc.wantConn {
				t.Errorf("connections = %d, want %d", got, tc.wantConn)
			}
		})
	}
}

// TestAttackTimeoutAndCancel: a request the server does not answer
// within the timeout is a result with a timeout error (the attack goes
// on); a cancelled context ends the attack at once, with its error.
func TestAttackTimeoutAndCancel(t *testing.T) {
	release, arrived := make(chan struct{}), make(chan struct{}, 16)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasPrefix(r.Header.Get("Idempotency-Key"), "cancel-") {
			arrived <- struct{}{}
		}
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	defer srv.Close()
	defer close(release)
	p := purchases{Target: srv.URL, Goods: 1, Qty: 1, Seed: 1, Run: "slow"}

	var errs []string
	res, err := attack(context.Background(), attackSpec{Name: "slow", Requests: 2, Concurrency: 2, Timeout: 100 * time.Millisecond,
		Purchases: p, OnResult: func(r *vegeta.Result, _ string) { errs = append(errs, r.Error) }})
	if err != nil || res.Results != 2 {
		t.Fatalf("attack: %v, %d results; want no error, 2 results", err, res.Results)
	}
	for _, e := range errs {
		if !strings.Contains(e, "timeout") {
			t.Errorf("result error %q, want a timeout", e)
		}
	}

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		p := p
		p.Run = "cancel"
		_, err := attack(ctx, attackSpec{Name: "cancel", Requests: 3, Concurrency: 3, Purchases: p})
		done <- err
	}()
	<-arrived // a request is in flight, with no timeout
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
}

// TestAttackIdleClosed: a server that closes a kept-alive connection
// between requests (nginx's keepalive_timeout) costs a purchase nothing:
// it carries its Idempotency-Key and is sent again on a new connection.
func TestAttackIdleClosed(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	var accepted atomic.Int64
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			accepted.Add(1)
			go func() {
				defer c.Close()
				br := bufio.NewReader(c)
				req, err := http.ReadRequest(br)
				if err != nil || req.Header.Get("Idempotency-Key") == "" {
					return
				}
				_, _ = io.Copy(io.Discard, req.Body)
				// Answer, keep the connection "alive", then close it
				// once the client sent the next request: no answer.
				_, _ = io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
				_, _ = br.Peek(1)
			}()
		}
	}()
	const n = 4
	ok := 0
	_, err = attack(context.Background(), attackSpec{Name: "idle", Requests: n, Concurrency: 1, Timeout: 10 * time.Second,
		Purchases: purchases{Target: "http://" + ln.Addr().String(), Goods: 1, Qty: 1, Seed: 1, Run: "idle"},
		OnResult: func(r *vegeta.Result, _ string) {
			if r.Code == 200 && string(r.Body) == "ok" {
				ok++
			}
		}})
	if err != nil || ok != n || accepted.Load() != n {
		t.Fatalf("attack: %v; %d ok on %d connections, want %d on %d", err, ok, accepted.Load(), n, n)
	}
}

// TestAttackHTTPS: an https target goes through net/http's client.
func TestAttackHTTPS(t *testing.T) {
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Instance", "tls-1")
		_, _ = w.Write([]byte(`{"request_id":"` + r.Header.Get("Idempotency-Key") + `"}`))
	}))
	defer srv.Close()
	mismatch := 0
	_, err := attack(context.Background(), attackSpec{Name: "tls", Requests: 10, Concurrency: 2, Timeout: 10 * time.Second,
		Purchases: purchases{Target: srv.URL, Goods: 1, Qty: 1, Seed: 1, Run: "tls"}, client: srv.Client(),
		OnResult: func(r *vegeta.Result, id string) {
			if resp := toResponse(r, id); resp.Code != 200 || resp.Instance != "tls-1" || !strings.Contains(string(r.Body), id) {
				mismatch++
			}
		}})
	if err != nil || mismatch != 0 {
		t.Fatalf("https: %v, %d results not mapped", err, mismatch)
	}
	// Without a client of its own, an https target gets net/http's (here:
	// a certificate it does not trust, an error in every result).
	failed := 0
	_, err = attack(context.Background(), attackSpec{Name: "tls", Requests: 2, Concurrency: 1, Timeout: 10 * time.Second,
		Purchases: purchases{Target: srv.URL, Goods: 1, Qty: 1, Seed: 1, Run: "tls"},
		OnResult: func(r *vegeta.Result, _ string) {
			if r.Code == 0 && strings.Contains(r.Error, "certificate") {
				failed++
			}
		}})
	if err != nil || failed != 2 {
		t.Fatalf("https without a trusted certificate: %v, %d of 2 results failed on the certificate", err, failed)
	}
}

// TestAttackOpenModel: request k is sent no earlier than its time k/rate.
func TestAttackOpenModel(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	defer srv.Close()
	const rate = 500
	var sent []time.Time
	res, err := attack(context.Background(), attackSpec{Name: "open", Requests: 40, Concurrency: 4, Rate: rate, Timeout: 10 * time.Second,
		Purchases: purchases{Target: srv.URL, Goods: 1, Qty: 1, Seed: 1, Run: "open"},
		OnResult: func(r *vegeta.Result, _ string) {
			for len(sent) <= int(r.Seq) {
				sent = append(sent, time.Time{})
			}
			sent[r.Seq] = r.Timestamp
		}})
	if err != nil || len(sent) != 40 {
		t.Fatalf("open model: %v, %d results", err, len(sent))
	}
	for k, at := range sent {
		if due := res.Began.Add(time.Duration(k) * time.Second / rate); at.Before(due) {
			t.Errorf("request %d sent %v before its time", k, due.Sub(at))
		}
	}
}

// TestPurchaseRequestBytes: the lean path's request is one net/http reads
// as the purchase the targeter used to send (encoding/json's body, the
// key and the content type), for any run name a request id can carry.
func TestPurchaseRequestBytes(t *testing.T) {
	for _, tc := range []struct {
		run   string
		users int
		err   bool
	}{
		{"redis-stream-1", 0, false},
		{"sql-atomic-c50-2", 100, false},
		{"a<b>&c ü-1", 0, false},
		{`quote"-1`, 0, true},
		{"new\nline", 0, true},
	} {
		src, err := purchases{Target: "http://127.0.0.1:9/base/", Goods: 42, Qty: 3, Seed: 7, Run: tc.run, Users: tc.users}.prepare()
		if tc.err != (err != nil) {
			t.Fatalf("run %q: err = %v, want an error: %v", tc.run, err, tc.err)
		}
		if err != nil {
			if !errors.Is(err, ErrInvalidOptions) {
				t.Errorf("run %q: err = %v, want ErrInvalidOptions", tc.run, err)
			}
			continue
		}
		var scratch []byte
		for i := int64(1); i <= 12; i += 11 {
			raw, id, n := src.appendRequest(nil, &scratch, i)
			req, err := http.ReadRequest(bufio.NewReader(bytes.NewReader(raw)))
			if err != nil {
				t.Fatalf("run %q request %d: %v\n%s", tc.run, i, err, raw)
			}
			body, _ := io.ReadAll(req.Body)
			var got purchase
			if err := json.Unmarshal(body, &got); err != nil {
				t.Fatal(err)
			}
			want := purchase{GoodsID: 42, Qty: 3, UserID: userOf(id, tc.users)}
			if got != want || req.Method != http.MethodPost || req.URL.Path != "/base/api/v1/purchase" || req.Host != "127.0.0.1:9" ||
				req.Header.Get("Idempotency-Key") != id || id != src.id(i) || req.Header.Get("Content-Type") != "application/json" ||
				n != len(body) || int(req.ContentLength) != n {
				t.Errorf("run %q request %d: %s %s host %s key %q body %s, want %+v under key %q", tc.run, i, req.Method, req.URL, req.Host,
					req.Header.Get("Idempotency-Key"), body, want, id)
			}
			if enc, _ := json.Marshal(want); safeJSON(id) && string(enc) != string(body) {
				t.Errorf("run %q request %d: body %s, encoding/json gives %s", tc.run, i, body, enc)
			}
		}
	}
}

// safeJSON: encoding/json writes s as it is (it escapes <, > and &).
func safeJSON(s string) bool { return !strings.ContainsAny(s, "<>&") }
