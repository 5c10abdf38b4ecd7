package bench

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync"
	"syscall"
	"time"
)

// connTransport is the load generator's HTTP/1.1 transport for plain http
// targets: a pool of keep-alive connections, each carrying one request at
// a time on the goroutine that sent it. RoundTrip writes the request, reads
// the whole response and puts the connection back.
//
// net/http's Transport runs a reader and a writer goroutine for every
// connection and hands each request and response between them and the
// caller; with Client.Timeout it adds a timer goroutine per request. On the
// lab's 2-CPU machine the generator shares the CPUs with the system it
// measures, and that handoff was most of the bench's CPU per purchase (the
// report's "per-purchase CPU" table). Targets other than http:// (a
// cluster's https) go to fallback.
type connTransport struct {
	dialer   net.Dialer
	timeout  time.Duration // one request, from writing it to its last body byte; 0 = none
	maxBody  int64         // bytes of a body kept; the rest is read and dropped
	fallback http.RoundTripper

	mu     sync.Mutex
	idle   map[string][]*clientConn // by host:port
	closed bool
}

// clientConn is one keep-alive connection of connTransport.
type clientConn struct {
	net.Conn
	br *bufio.Reader
	bw *bufio.Writer
}

// errNothingRead: the connection ended before the first byte of an answer.
// On a reused connection that is the server closing it while idle, and a
// request that can be replayed is sent again on a new one (as net/http
// does).
var errNothingRead = errors.New("the connection closed before any answer")

// aLongTimeAgo is a deadline in the past: it interrupts a blocked read or
// write at once.
var aLongTimeAgo = time.Unix(1, 0)

func newConnTransport(timeout time.Duration, maxBody int64, fallback http.RoundTripper) *connTransport {
	return &connTransport{
		dialer:   net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second},
		timeout:  timeout,
		maxBody:  maxBody,
		fallback: fallback,
		idle:     map[string][]*clientConn{},
	}
}

// RoundTrip implements http.RoundTripper.
func (t *connTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.URL.Scheme != "http" {
		return t.viaFallback(req)
	}
	addr := req.URL.Host
	if req.URL.Port() == "" {
		addr = net.JoinHostPort(req.URL.Hostname(), "80")
	}
	for attempt := 0; ; attempt++ {
		c, reused, err := t.get(req.Context(), addr)
		if err != nil {
			closeBody(req)
			return nil, err
		}
		resp, err := t.exchange(c, req)
		if err == nil {
			if resp.Close {
				c.Close()
			} else {
				t.put(addr, c)
			}
			return resp, nil
		}
		c.Close()
		if reused && attempt == 0 && errors.Is(err, errNothingRead) && replayable(req) {
			if req.GetBody != nil {
				if req.Body, err = req.GetBody(); err != nil {
					return nil, fmt.Errorf("resend on a new connection: %w", err)
				}
			}
			continue
		}
		closeBody(req)
		return nil, err
	}
}

// replayable says whether req may be sent again after a connection closed
// before any answer: net/http's rule (an idempotent method, or a request
// with an idempotency key, and a body it can read again).
func replayable(req *http.Request) bool {
	if req.Body != nil && req.Body != http.NoBody && req.GetBody == nil {
		return false
	}
	switch req.Method {
	case "", http.MethodGet, http.MethodHead, http.MethodOptions, http.MethodTrace:
		return true
	}
	_, key := req.Header["Idempotency-Key"]
	_, xkey := req.Header["X-Idempotency-Key"]
	return key || xkey
}

func closeBody(req *http.Request) {
	if req.Body != nil {
		_ = req.Body.Close()
	}
}

// get takes an idle connection to addr, or dials one.
func (t *connTransport) get(ctx context.Context, addr string) (*clientConn, bool, error) {
	t.mu.Lock()
	if t.closed {
		t.mu.Unlock()
		return nil, false, errors.New("the bench's HTTP transport is closed")
	}
	if cs := t.idle[addr]; len(cs) > 0 {
		c := cs[len(cs)-1]
		t.idle[addr] = cs[:len(cs)-1]
		t.mu.Unlock()
		return c, true, nil
	}
	t.mu.Unlock()
	nc, err := t.dialer.DialContext(ctx, "tcp", addr)
	if err != nil {
		if cerr := ctx.Err(); cerr != nil {
			return nil, false, cerr
		}
		return nil, false, err
	}
	return &clientConn{Conn: nc, br: bufio.NewReaderSize(nc, 4096), bw: bufio.NewWriterSize(nc, 4096)}, false, nil
}

// put returns c to the idle pool (closed when the transport is).
func (t *connTransport) put(addr string, c *clientConn) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		c.Close()
		return
	}
	t.idle[addr] = append(t.idle[addr], c)
}

// CloseIdleConnections closes every idle connection; connections in use
// are closed when their request ends.
func (t *connTransport) CloseIdleConnections() {
	t.mu.Lock()
	idle := t.idle
	t.idle, t.closed = map[string][]*clientConn{}, true
	t.mu.Unlock()
	for _, cs := range idle {
		for _, c := range cs {
			c.Close()
		}
	}
	if f, ok := t.fallback.(interface{ CloseIdleConnections() }); ok {
		f.CloseIdleConnections()
	}
}

// exchange writes req on c and reads its whole response. The body is read
// into memory (up to maxBody kept), so c can carry the next request.
func (t *connTransport) exchange(c *clientConn, req *http.Request) (*http.Response, error) {
	ctx := req.Context()
	deadline, ok := ctx.Deadline()
	if t.timeout > 0 {
		if d := time.Now().Add(t.timeout); !ok || d.Before(deadline) {
			deadline, ok = d, true
		}
	}
	if !ok {
		deadline = time.Time{}
	}
	if err := c.SetDeadline(deadline); err != nil {
		return nil, err
	}
	if ctx.Done() != nil {
		stop := context.AfterFunc(ctx, func() { _ = c.SetDeadline(aLongTimeAgo) })
		defer stop()
	}
	fail := func(err error) (*http.Response, error) {
		if cerr := ctx.Err(); cerr != nil {
			return nil, cerr
		}
		return nil, err
	}
	if err := req.Write(c.bw); err != nil {
		return fail(err)
	}
	if err := c.bw.Flush(); err != nil {
		return fail(err)
	}
	if _, err := c.br.Peek(1); err != nil {
		if errors.Is(err, io.EOF) || errors.Is(err, net.ErrClosed) || isReset(err) {
			return fail(fmt.Errorf("%w: %w", errNothingRead, err))
		}
		return fail(err)
	}
	resp, err := http.ReadResponse(c.br, req)
	if err != nil {
		return fail(err)
	}
	var buf bytes.Buffer
	if _, err := io.Copy(&buf, io.LimitReader(resp.Body, t.maxBody)); err != nil {
		resp.Body.Close()
		return fail(err)
	}
	if _, err := io.Copy(io.Discard, resp.Body); err != nil {
		resp.Body.Close()
		return fail(err)
	}
	resp.Body.Close()
	resp.Body = io.NopCloser(bytes.NewReader(buf.Bytes()))
	return resp, nil
}

// isReset reports a connection reset by the peer.
func isReset(err error) bool { return errors.Is(err, syscall.ECONNRESET) }

// viaFallback sends req through the fallback transport, within the
// transport's timeout.
func (t *connTransport) viaFallback(req *http.Request) (*http.Response, error) {
	if t.timeout <= 0 {
		return t.fallback.RoundTrip(req)
	}
	ctx, cancel := context.WithTimeout(req.Context(), t.timeout)
	resp, err := t.fallback.RoundTrip(req.WithContext(ctx))
	if err != nil {
		cancel()
		return nil, err
	}
	resp.Body = cancelOnClose{resp.Body, cancel}
	return resp, nil
}

// cancelOnClose ends a request's context when its body is closed.
type cancelOnClose struct {
	io.ReadCloser
	cancel context.CancelFunc
}

func (b cancelOnClose) Close() error {
	err := b.ReadCloser.Close()
	b.cancel()
	return err
}
