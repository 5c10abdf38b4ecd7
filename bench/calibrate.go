package bench

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"
)

// Calibration is the load generator's ceiling: the throughput the same
// attacker settings reach against an in-process server that does nothing.
type Calibration struct {
	Requests     int     `json:"requests"`
	Concurrency  int     `json:"concurrency"`
	OK           int     `json:"ok"`
	CeilingRPS   float64 `json:"ceiling_rps"`
	DurationSecs float64 `json:"duration_s"`
	P50MS        float64 `json:"p50_ms"`
	P99MS        float64 `json:"p99_ms"`
}

// Calibrate fires requests purchases (closed model, concurrency workers, or
// rate per second when rate > 0) with the bench's own attacker, the one
// every run uses, at a null server on 127.0.0.1 that answers like a
// successful purchase, and reports the generator's ceiling.
//
// The null server (nullServer) reads each request's head and body and
// writes one pre-built answer on the same keep-alive connection: it does
// the least a server can, so the ceiling is the generator's, not a
// server's (net/http's server, in this process and on the same CPUs, took
// as much CPU per request as the generator).
func Calibrate(ctx context.Context, requests, concurrency, rate int) (Calibration, error) {
	return calibrateVia(ctx, requests, concurrency, rate, nil)
}

// calibrateVia is Calibrate, its workers sending through the senders
// via(the null server's host:port) makes when via is set (a benchmark
// compares a client library with the lean path).
func calibrateVia(ctx context.Context, requests, concurrency, rate int, via func(addr string) func() sender) (Calibration, error) {
	if requests <= 0 || concurrency <= 0 || rate < 0 {
		return Calibration{}, fmt.Errorf("%w: calibrate needs requests > 0, concurrency > 0 and rate >= 0", ErrInvalidOptions)
	}
	srv, err := startNullServer()
	if err != nil {
		return Calibration{}, fmt.Errorf("calibrate: %w", err)
	}
	defer srv.close()

	ok := 0
	spec := attackSpec{
		Name:        "calibrate",
		Requests:    requests,
		Concurrency: concurrency,
		Rate:        rate,
		Timeout:     DefaultRequestTimeout,
		Purchases:   purchases{Target: "http://" + srv.addr(), Goods: DefaultGoodsID, Qty: 1, Seed: 1, Run: "calibrate"},
		OnResult: func(r *vegetaResult, _ string) {
			if r.Code == http.StatusOK {
				ok++
			}
		},
	}
	if via != nil {
		spec.via = via(srv.addr())
	}
	res, err := attack(ctx, spec)
	if err != nil {
		return Calibration{}, fmt.Errorf("calibrate: %w", err)
	}
	c := Calibration{
		Requests:     res.Results,
		Concurrency:  concurrency,
		OK:           ok,
		DurationSecs: res.Wall.Seconds(),
		P50MS:        ms(res.Metrics.Latencies.P50),
		P99MS:        ms(res.Metrics.Latencies.P99),
	}
	if res.Wall > 0 {
		c.CeilingRPS = float64(res.Results) / res.Wall.Seconds()
	}
	return c, nil
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// nullReply is the null server's answer: a successful purchase's.
var nullReply = func() []byte {
	body := `{"order_id":1,"goods_id":1,"qty":1,"remaining":0,"instance":"null","strategy":"null","request_id":"x","fence":0}`
	return []byte("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nX-Instance: null\r\nContent-Length: " +
		strconv.Itoa(len(body)) + "\r\n\r\n" + body)
}()

// nullServer is the calibration's server: on each keep-alive connection
// it reads a request's head (up to its empty line) and the Content-Length
// bytes of its body, and writes nullReply. Requests are HTTP/1.1 with a
// Content-Length, as the attacker sends them; anything else closes the
// connection.
type nullServer struct {
	ln    net.Listener
	mu    sync.Mutex
	conns map[net.Conn]struct{}
	wg    sync.WaitGroup
}

func startNullServer() (*nullServer, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("null server: %w", err)
	}
	s := &nullServer{ln: ln, conns: map[net.Conn]struct{}{}}
	s.wg.Go(s.accept)
	return s, nil
}

func (s *nullServer) addr() string { return s.ln.Addr().String() }

func (s *nullServer) accept() {
	for {
		c, err := s.ln.Accept()
		if err != nil {
			return
		}
		s.mu.Lock()
		if s.conns == nil { // closed
			s.mu.Unlock()
			c.Close()
			return
		}
		s.conns[c] = struct{}{}
		s.mu.Unlock()
		s.wg.Go(func() {
			defer func() {
				s.mu.Lock()
				delete(s.conns, c)
				s.mu.Unlock()
				c.Close()
			}()
			_ = serveNull(c)
		})
	}
}

// serveNull answers c's requests until it closes or sends a request it
// cannot frame.
func serveNull(c net.Conn) error {
	br := bufio.NewReaderSize(c, leanBuffer)
	for {
		length := int64(-1)
		for first := true; ; first = false {
			line, _, err := readLine(br)
			if err != nil {
				return err
			}
			if len(line) == 0 {
				break
			}
			if first {
				continue // the request line
			}
			k, v, _ := bytes.Cut(line, []byte(":"))
			if bytes.EqualFold(k, []byte("Content-Length")) {
				if length, err = strconv.ParseInt(string(bytes.TrimSpace(v)), 10, 64); err != nil || length < 0 {
					return fmt.Errorf("bad Content-Length %q", v)
				}
			}
		}
		if length < 0 {
			return errors.New("a request without Content-Length")
		}
		if _, err := br.Discard(int(length)); err != nil {
			return err
		}
		if _, err := c.Write(nullReply); err != nil {
			return err
		}
	}
}

// close stops accepting, closes every connection and waits for the
// server's goroutines.
func (s *nullServer) close() {
	s.ln.Close()
	s.mu.Lock()
	for c := range s.conns {
		c.Close()
	}
	s.conns = nil
	s.mu.Unlock()
	s.wg.Wait()
}
