package bench

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

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

func post(t *testing.T, tr http.RoundTripper, url, body string, key string) (*http.Response, string, error) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if key != "" {
		req.Header.Set("Idempotency-Key", key)
	}
	resp, err := tr.RoundTrip(req)
	if err != nil {
		return nil, "", err
	}
	b, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		t.Fatal(err)
	}
	return resp, string(b), nil
}

// TestConnTransport checks the generator's transport against a real
// net/http server: it keeps connections alive, reads every body framing,
// honours Connection: close, keeps at most maxBody bytes of a body and
// still reuses the connection.
func TestConnTransport(t *testing.T) {
	cases := []struct {
		name     string
		handler  http.HandlerFunc
		maxBody  int64
		want     string
		wantConn int64 // connections for 5 requests
	}{
		{"content-length, kept alive", func(w http.ResponseWriter, r *http.Request) {
			b, _ := io.ReadAll(r.Body)
			_, _ = w.Write([]byte("echo:" + string(b)))
		}, 1 << 10, "echo:hello", 1},
		{"chunked, kept alive", func(w http.ResponseWriter, r *http.Request) {
			_, _ = w.Write([]byte("part1,"))
			w.(http.Flusher).Flush()
			_, _ = w.Write([]byte("part2"))
		}, 1 << 10, "part1,part2", 1},
		{"body beyond maxBody is dropped, connection reused", func(w http.ResponseWriter, r *http.Request) {
			_, _ = w.Write([]byte(strings.Repeat("x", 10000)))
		}, 4, "xxxx", 1},
		{"connection: close", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Connection", "close")
			_, _ = w.Write([]byte("bye"))
		}, 1 << 10, "bye", 5},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			srv := httptest.NewUnstartedServer(tc.handler)
			conns := countConns(srv)
			srv.Start()
			defer srv.Close()
			tr := newConnTransport(5*time.Second, tc.maxBody, http.DefaultTransport)
			defer tr.CloseIdleConnections()
			for i := range 5 {
				resp, body, err := post(t, tr, srv.URL+"/p", "hello", "")
				if err != nil {
					t.Fatalf("request %d: %v", i, err)
				}
				if resp.StatusCode != http.StatusOK || body != tc.want {
					t.Fatalf("request %d: %d %q, want 200 %q", i, resp.StatusCode, body, tc.want)
				}
			}
			if got := conns.Load(); got != tc.wantConn {
				t.Errorf("connections = %d, want %d", got, tc.wantConn)
			}
		})
	}
}

// TestConnTransportTimeout: a server that does not answer within the
// timeout gives the caller an error, and a cancelled request context ends
// the request at once.
func TestConnTransportTimeout(t *testing.T) {
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	defer srv.Close()
	defer close(release)

	tr := newConnTransport(200*time.Millisecond, 1<<10, http.DefaultTransport)
	defer tr.CloseIdleConnections()
	_, _, err := post(t, tr, srv.URL, "x", "")
	if ne, ok := err.(net.Error); !ok || !ne.Timeout() {
		t.Fatalf("err = %v, want a timeout", err)
	}

	tr2 := newConnTransport(0, 1<<10, http.DefaultTransport)
	defer tr2.CloseIdleConnections()
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL, nil)
	done := make(chan error, 1)
	go func() {
		_, err := tr2.RoundTrip(req)
		done <- err
	}()
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
}

// TestConnTransportIdleClosed: a server that closes a kept-alive
// connection between requests (nginx's keepalive_timeout) costs a keyed
// purchase nothing, it is sent again on a new connection; a key-less POST
// is not resent, the caller gets the error.
func TestConnTransportIdleClosed(t *testing.T) {
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
				if err != nil {
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
	url := "http://" + ln.Addr().String() + "/p"
	for _, tc := range []struct {
		key     string
		wantErr bool
	}{{"k-1", false}, {"", true}} {
		tr := newConnTransport(5*time.Second, 1<<10, http.DefaultTransport)
		if _, body, err := post(t, tr, url, "a", tc.key); err != nil || body != "ok" {
			t.Fatalf("first request: %q %v", body, err)
		}
		_, body, err := post(t, tr, url, "b", tc.key)
		if tc.wantErr != (err != nil) {
			t.Errorf("key %q: second request on the closed connection: %q %v, want error %v", tc.key, body, err, tc.wantErr)
		}
		tr.CloseIdleConnections()
	}
}

// TestConnTransportHTTPS: a target other than http:// goes through the
// fallback transport.
func TestConnTransportHTTPS(t *testing.T) {
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = w.Write([]byte("tls"))
	}))
	defer srv.Close()
	tr := newConnTransport(5*time.Second, 1<<10, srv.Client().Transport)
	defer tr.CloseIdleConnections()
	if _, body, err := post(t, tr, srv.URL, "x", ""); err != nil || body != "tls" {
		t.Fatalf("https: %q %v", body, err)
	}
}
