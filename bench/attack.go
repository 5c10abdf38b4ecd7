package bench

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	vegeta "github.com/tsenart/vegeta/v12/lib"
)

// vegetaResult is vegeta's Result: the bench's record of one request (its
// raw results files are vegeta's format).
type vegetaResult = vegeta.Result

// attackSpec is one bounded attack.
type attackSpec struct {
	Name        string        // the results' Attack
	Requests    int           // exactly this many requests are sent
	Concurrency int           // worker count (closed model) or cap (open model)
	Rate        int           // per second; 0 = closed model
	Timeout     time.Duration // per request, from its first byte sent to its last byte read; 0 = none
	Resend      int           // a purchase not answered definitely is sent again up to this many times (Options.Resend)
	Purchases   purchases     // what is sent: purchases 1 to Requests
	// Loaded, when set, is called once the last answer is in, before the
	// results are handed out: the load's end (for its CPU time).
	Loaded func()
	// OnResult receives every result with its request's Idempotency-Key,
	// after the load (in the order the answers came): the generator
	// spends no CPU on them while the system it measures runs.
	OnResult func(r *vegeta.Result, requestID string)
	Progress func(done int) // called at most every 100ms during the load, and at its end
	// client, when set, sends every request (through net/http, even to an
	// http:// target: tests compare that with the lean path). Default:
	// the lean path for http://, a net/http client of the attack's own
	// for https://.
	client *http.Client
	// via, when set, gives each worker a sender that sends every request
	// of an http:// target instead of the lean path (a benchmark compares
	// a client library with it, behind the same workers).
	via func() sender
}

// sender sends one purchase some other way than the lean path: its
// Idempotency-Key and JSON body, within deadline (zero = none). It
// returns what readResponse would, the body's first maxBody bytes
// appended to (*body)[:0]. A worker's sender serves that worker only.
type sender func(deadline time.Time, id string, reqBody []byte, maxBody int, body *[]byte) (leanResponse, error)

// attackResult summarises one attack.
type attackResult struct {
	Metrics vegeta.Metrics
	Results int // results received (== requests unless cancelled)
	Wall    time.Duration
	Began   time.Time // the load's start: request k (Seq k-1) is sent no earlier than Began + (k-1)/Rate
	Resent  int       // purchases sent again (attackSpec.Resend)
}

// attackMaxBody is the bytes of an answer's body a result keeps.
const attackMaxBody = 64 << 10

// hit is one result and the Idempotency-Key its request carried.
type hit struct {
	vegeta.Result
	id string
}

// attack runs spec until exactly spec.Requests results are in or ctx ends.
//
// It is the bench's own attacker: spec.Concurrency workers, each with one
// keep-alive connection of its own (leanConn), take the next request
// number from a shared counter, write that purchase's pre-encoded bytes
// and read the answer. No goroutine hands a request or a result to
// another, no *http.Request or *http.Response is built, and the results
// stay with their worker until the load ends. The open model (Rate > 0)
// sends request k at k/Rate seconds after the start, or as soon as a
// worker is free when all Concurrency are busy (vegeta's constant pacer
// with a worker cap). A target other than http:// (a cluster's https)
// goes through net/http's client, in the same workers.
func attack(ctx context.Context, spec attackSpec) (attackResult, error) {
	src, err := spec.Purchases.prepare()
	if err != nil {
		return attackResult{}, fmt.Errorf("attack %s: %w", spec.Name, err)
	}
	a := &attacker{spec: spec, src: src, n: int64(spec.Requests), workers: make([]*worker, max(spec.Concurrency, 1))}
	a.client = spec.client
	if a.client == nil && src.scheme != "http" {
		a.client = netHTTPClient(len(a.workers))
		defer a.client.CloseIdleConnections()
	}
	if spec.Rate > 0 {
		a.period = time.Second / time.Duration(spec.Rate)
	}

	stopProgress := a.progress()
	a.began = time.Now()
	var wg sync.WaitGroup
	for i := range a.workers {
		w := &worker{a: a, hits: make([]hit, 0, spec.Requests/len(a.workers)+1)}
		if spec.via != nil && a.client == nil {
			w.via = spec.via()
		}
		a.workers[i] = w
		wg.Go(func() { w.run(ctx) })
	}
	wg.Wait()
	out := attackResult{Began: a.began, Wall: time.Since(a.began)}
	stopProgress()
	if spec.Loaded != nil {
		spec.Loaded()
	}

	hits := make([]hit, 0, spec.Requests)
	for _, w := range a.workers {
		hits = append(hits, w.hits...)
		out.Resent += w.resent
	}
	slices.SortStableFunc(hits, func(x, y hit) int {
		return x.Timestamp.Add(x.Latency).Compare(y.Timestamp.Add(y.Latency))
	})
	for i := range hits {
		out.Results++
		out.Metrics.Add(&hits[i].Result)
		if spec.OnResult != nil {
			spec.OnResult(&hits[i].Result, hits[i].id)
		}
	}
	out.Metrics.Close()
	if err := ctx.Err(); err != nil {
		return out, fmt.Errorf("attack %s stopped after %d of %d requests: %w", spec.Name, out.Results, spec.Requests, err)
	}
	if out.Results != spec.Requests {
		return out, fmt.Errorf("attack %s: got %d results, want exactly %d", spec.Name, out.Results, spec.Requests)
	}
	return out, nil
}

// netHTTPClient is the attack's client for an https target: keep-alive
// connections for workers, no proxy, no redirects followed.
func netHTTPClient(workers int) *http.Client {
	tr := &http.Transport{
		Proxy:               nil, // traffic stays on this machine: never through a proxy
		DialContext:         (&net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		MaxIdleConns:        workers * 2,
		MaxIdleConnsPerHost: workers * 2,
		IdleConnTimeout:     30 * time.Second,
	}
	return &http.Client{Transport: tr,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
}

// attacker is what an attack's workers share.
type attacker struct {
	spec    attackSpec
	src     purchaseSource
	n       int64
	next    atomic.Int64 // the last request number taken
	done    atomic.Int64 // results in
	began   time.Time
	period  time.Duration // open model: between two requests' send times
	client  *http.Client  // non-nil: requests go through net/http
	workers []*worker
}

// progress calls spec.Progress every 100ms until the returned stop, which
// calls it a last time.
func (a *attacker) progress() (stop func()) {
	if a.spec.Progress == nil {
		return func() {}
	}
	quit, exited := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(exited)
		t := time.NewTicker(100 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-t.C:
				a.spec.Progress(int(a.done.Load()))
			case <-quit:
				return
			}
		}
	}()
	return func() {
		close(quit)
		<-exited
		a.spec.Progress(int(a.done.Load()))
	}
}

// worker sends requests one at a time on its own connection.
type worker struct {
	a       *attacker
	conn    *leanConn
	stop    func() bool // ends conn's watch of the attack's context
	via     sender      // non-nil: requests go through it, not conn
	req     []byte      // the request being sent
	scratch []byte      // its body, being built
	bodyLen int         // its body's length (its last bytes)
	body    []byte      // its answer's body, up to attackMaxBody
	hdrs    map[string]http.Header
	timer   *time.Timer
	hits    []hit
	resent  int
}

// run takes request numbers until there are none left or ctx ends.
func (w *worker) run(ctx context.Context) {
	defer w.closeConn()
	a := w.a
	for ctx.Err() == nil {
		i := a.next.Add(1)
		if i > a.n {
			return
		}
		if a.period > 0 && !w.waitUntil(ctx, a.began.Add(time.Duration(i-1)*a.period)) {
			return
		}
		var id string
		w.req, id, w.bodyLen = a.src.appendRequest(w.req[:0], &w.scratch, i)
		h := hit{id: id, Result: vegeta.Result{Attack: a.spec.Name, Seq: uint64(i - 1), Method: http.MethodPost, URL: a.src.url}}
		h.Timestamp = time.Now()
		err := w.try(ctx, &h.Result, id, h.Timestamp)
		for k := 0; k < a.spec.Resend && indeterminate(&h.Result, err) && w.waitUntil(ctx, time.Now().Add(resendWait(k))); k++ {
			h.Result = vegeta.Result{Attack: h.Attack, Seq: h.Seq, Method: h.Method, URL: h.URL, Timestamp: h.Timestamp}
			w.resent++
			err = w.try(ctx, &h.Result, id, time.Now())
		}
		h.Latency = time.Since(h.Timestamp)
		if err != nil {
			if cerr := ctx.Err(); cerr != nil {
				err = cerr
			}
			h.Error = fmt.Sprintf("Post %q: %v", a.src.url, err)
		}
		w.hits = append(w.hits, h)
		a.done.Add(1)
	}
}

// try sends w.req once, begun at began, and fills r in.
func (w *worker) try(ctx context.Context, r *vegeta.Result, id string, began time.Time) error {
	switch {
	case w.a.client != nil:
		return w.viaNetHTTP(ctx, r, id)
	case w.via != nil:
		return w.viaSender(r, id, began)
	}
	return w.send(ctx, r, began)
}

// waitUntil sleeps until t; false if ctx ended first.
func (w *worker) waitUntil(ctx context.Context, t time.Time) bool {
	d := time.Until(t)
	if d <= 0 {
		return true
	}
	if w.timer == nil {
		w.timer = time.NewTimer(d)
	} else {
		w.timer.Reset(d)
	}
	select {
	case <-w.timer.C:
		return true
	case <-ctx.Done():
		w.timer.Stop()
		return false
	}
}

// send sends w.req on w's connection (dialled if it has none; sent again
// on a new one if a kept-alive connection turns out closed by the server
// before any answer) and fills r in.
func (w *worker) send(ctx context.Context, r *vegeta.Result, began time.Time) error {
	a := w.a
	deadline := w.deadline(began)
	for attempt := 0; ; attempt++ {
		if w.conn == nil {
			d := net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second, Deadline: deadline}
			nc, err := d.DialContext(ctx, "tcp", a.src.addr)
			if err != nil {
				return err
			}
			w.conn, w.stop = newLeanConn(nc), watchConn(ctx, nc)
		}
		reused := w.conn.used
		resp, err := w.conn.roundTrip(w.req, deadline, attackMaxBody, &w.body)
		if err == nil && ctx.Err() != nil {
			err = ctx.Err() // the watch may have fired before the deadline was set
		}
		if err != nil {
			w.closeConn()
			if reused && attempt == 0 && errors.Is(err, errNothingRead) && ctx.Err() == nil {
				continue // a purchase carries its Idempotency-Key: safe to send again
			}
			return err
		}
		if resp.close {
			w.closeConn()
		}
		w.record(r, resp)
		return nil
	}
}

// deadline is the end of the request sent at began (zero = none).
func (w *worker) deadline(began time.Time) time.Time {
	if w.a.spec.Timeout <= 0 {
		return time.Time{}
	}
	return began.Add(w.a.spec.Timeout)
}

// record fills r in from resp and the body in w.body.
func (w *worker) record(r *vegeta.Result, resp leanResponse) {
	r.Code = uint16(resp.code)
	r.Error = resp.status
	r.BytesIn = uint64(resp.bytesIn)
	r.BytesOut = uint64(w.bodyLen)
	r.Body = bytes.Clone(w.body)
	r.Headers = w.headers(resp.instance)
}

// viaSender sends w.req's purchase through w.via and fills r in.
func (w *worker) viaSender(r *vegeta.Result, id string, began time.Time) error {
	resp, err := w.via(w.deadline(began), id, w.req[len(w.req)-w.bodyLen:], attackMaxBody, &w.body)
	if err != nil {
		return err
	}
	w.record(r, resp)
	return nil
}

// headers is the results' Headers for an answer from instance: only its
// X-Instance, one map per instance shared by its results ("" = none).
func (w *worker) headers(instance string) http.Header {
	if instance == "" {
		return nil
	}
	h, ok := w.hdrs[instance]
	if !ok {
		h = http.Header{"X-Instance": {instance}}
		if w.hdrs == nil {
			w.hdrs = map[string]http.Header{}
		}
		w.hdrs[instance] = h
	}
	return h
}

func (w *worker) closeConn() {
	if w.conn == nil {
		return
	}
	w.stop()
	w.conn.nc.Close()
	w.conn, w.stop = nil, nil
}

// viaNetHTTP sends w.req's purchase through net/http's client (an https
// target) and fills r in as vegeta did.
func (w *worker) viaNetHTTP(ctx context.Context, r *vegeta.Result, id string) error {
	a := w.a
	if a.spec.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, a.spec.Timeout)
		defer cancel()
	}
	body := w.req[len(w.req)-w.bodyLen:]
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, a.src.url, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header = http.Header{"Content-Type": {"application/json"}, "Idempotency-Key": {id}}
	resp, err := a.client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if r.Body, err = io.ReadAll(io.LimitReader(resp.Body, attackMaxBody)); err != nil {
		return err
	}
	if _, err := io.Copy(io.Discard, resp.Body); err != nil {
		return err
	}
	r.Code = uint16(resp.StatusCode)
	if r.Code < 200 || r.Code >= 400 {
		r.Error = resp.Status
	}
	r.BytesIn = uint64(len(r.Body))
	r.BytesOut = uint64(len(body))
	r.Headers = w.headers(resp.Header.Get("X-Instance"))
	return nil
}

// purchases are the requests of an attack: POST {Target}/api/v1/purchase,
// each with a unique Idempotency-Key and user id derived from Seed, Run
// and Goods (the same seed on other goods must not replay, or collide
// with, the first goods' orders).
type purchases struct {
	Target string // the load balancer's base URL
	Goods  int64
	Qty    int
	Seed   int64  // with Run, derives the ids
	Run    string // the run's name
	// Users draws the user ids from this many users (userOf); 0 = one
	// user per request.
	Users int
}

// purchaseSource builds the requests of purchases.
type purchaseSource struct {
	p      purchases
	url    string // the purchase URL
	scheme string
	addr   string // host:port to dial
	head   []byte // the request line and the headers up to the key's value
	prefix string // of every Idempotency-Key
}

// prepare checks p's target and encodes what all its requests share.
func (p purchases) prepare() (purchaseSource, error) {
	rng := rand.New(rand.NewPCG(uint64(p.Seed), hashString(p.Run)))
	s := purchaseSource{p: p, prefix: fmt.Sprintf("%s-g%d-%08x", p.Run, p.Goods, rng.Uint32())}
	s.url = strings.TrimRight(p.Target, "/") + "/api/v1/purchase"
	u, err := url.Parse(s.url)
	if err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https") {
		return s, fmt.Errorf("%w: target %q is not an http(s) URL", ErrInvalidOptions, p.Target)
	}
	if !safeID(s.prefix) {
		return s, fmt.Errorf("%w: run name %q: control characters, '\"' and '\\' cannot go into a request id", ErrInvalidOptions, p.Run)
	}
	s.scheme, s.addr = u.Scheme, u.Host
	if u.Port() == "" {
		s.addr = net.JoinHostPort(u.Hostname(), map[string]string{"http": "80", "https": "443"}[u.Scheme])
	}
	s.head = fmt.Appendf(nil, "POST %s HTTP/1.1\r\nHost: %s\r\nUser-Agent: seckill-bench\r\nContent-Type: application/json\r\nIdempotency-Key: ",
		u.RequestURI(), u.Host)
	return s, nil
}

// id is the Idempotency-Key of request i (from 1).
func (s *purchaseSource) id(i int64) string {
	return s.prefix + "-" + strconv.FormatInt(i, 10)
}

// appendRequest appends request i's bytes to dst, its body (a purchase's
// JSON, as encoding/json writes it) built in *scratch first; it returns
// them, the request's Idempotency-Key and its body's length.
func (s *purchaseSource) appendRequest(dst []byte, scratch *[]byte, i int64) ([]byte, string, int) {
	id := s.id(i)
	b := append((*scratch)[:0], `{"goods_id":`...)
	b = strconv.AppendInt(b, s.p.Goods, 10)
	b = append(b, `,"qty":`...)
	b = strconv.AppendInt(b, int64(s.p.Qty), 10)
	b = append(b, `,"user_id":"`...)
	b = append(b, userOf(id, s.p.Users)...) // safeID: no escaping
	b = append(b, `"}`...)
	*scratch = b
	dst = append(dst, s.head...)
	dst = append(dst, id...)
	dst = append(dst, "\r\nContent-Length: "...)
	dst = strconv.AppendInt(dst, int64(len(b)), 10)
	dst = append(dst, "\r\n\r\n"...)
	return append(dst, b...), id, len(b)
}

// safeID reports whether s can go into a header value and a JSON string
// as it is: valid UTF-8 without control characters, '"' or '\\'.
func safeID(s string) bool {
	for _, c := range s {
		if c < 0x20 || c == 0x7f || c == '"' || c == '\\' || c == utf8.RuneError {
			return false
		}
	}
	return true
}

type purchase struct {
	GoodsID int64  `json:"goods_id"`
	Qty     int    `json:"qty"`
	UserID  string `json:"user_id"`
}

// hashString is FNV-1a, to mix a run name into the seed.
func hashString(s string) uint64 {
	h := fnv.New64a()
	h.Write([]byte(s))
	return h.Sum64()
}

// toResponse extracts what the audit needs from a vegeta result.
func toResponse(r *vegeta.Result, requestID string) Response {
	resp := Response{RequestID: requestID, Code: int(r.Code), Sent: r.Timestamp, Latency: r.Latency}
	if r.Headers != nil {
		resp.Instance = r.Headers.Get("X-Instance")
	}
	var body struct {
		Error     string `json:"error"`
		Remaining *int64 `json:"remaining"`
		Replayed  bool   `json:"replayed"`
	}
	if len(r.Body) > 0 && json.Unmarshal(r.Body, &body) == nil {
		resp.Error = body.Error
		if r.Code >= 200 && r.Code < 300 {
			resp.Replayed = body.Replayed
			if !body.Replayed {
				resp.Remaining = body.Remaining
			}
		}
	}
	if resp.Error == "" && (r.Code == 0 || r.Code >= 400) {
		resp.Error = r.Error // transport error, or "502 Bad Gateway" from nginx
	}
	return resp
}

// progressLine prints a throttled "\r" progress line to w when w is a
// terminal; to a file or pipe it writes only the final state of each run.
type progressLine struct {
	w     io.Writer
	live  bool
	mu    sync.Mutex
	last  time.Time
	label string
	total int
	width int
}

func newProgress(w io.Writer, label string, total int) *progressLine {
	live := false
	if f, ok := w.(*os.File); ok {
		if fi, err := f.Stat(); err == nil && fi.Mode()&os.ModeCharDevice != 0 {
			live = true
		}
	}
	return &progressLine{w: w, live: live, label: label, total: total}
}

// update redraws the line at most every 100ms, and always at the end.
func (p *progressLine) update(done int) {
	if p == nil || p.w == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	now := time.Now()
	if done < p.total && (!p.live || now.Sub(p.last) < 100*time.Millisecond) {
		return
	}
	p.last = now
	const bar = 30
	filled := bar * done / max(p.total, 1)
	line := fmt.Sprintf("%s [%s%s] %d/%d", p.label, strings.Repeat("#", filled), strings.Repeat(".", bar-filled), done, p.total)
	pad := ""
	if n := p.width - len(line); n > 0 {
		pad = strings.Repeat(" ", n)
	}
	p.width = len(line)
	fmt.Fprintf(p.w, "\r%s%s", line, pad)
}

// done ends the line.
func (p *progressLine) done() {
	if p == nil || p.w == nil {
		return
	}
	fmt.Fprintln(p.w)
}

// writeRaw writes results to f in vegeta's own format (gob), readable by
// `vegeta report`.
func writeRaw(f *os.File, results []*vegeta.Result) error {
	bw := bufio.NewWriterSize(f, 256<<10)
	enc := vegeta.NewEncoder(bw)
	for _, r := range results {
		if err := enc.Encode(r); err != nil {
			return fmt.Errorf("write raw results to %s: %w", f.Name(), err)
		}
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("write raw results to %s: %w", f.Name(), err)
	}
	return nil
}
