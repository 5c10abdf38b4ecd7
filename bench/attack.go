package bench

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	vegeta "github.com/tsenart/vegeta/v12/lib"
)

// vegetaResult is vegeta's Result.
type vegetaResult = vegeta.Result

// attackSpec is one bounded attack.
type attackSpec struct {
	Name        string        // vegeta attack name
	Requests    int           // exactly this many requests are sent
	Concurrency int           // worker count (closed model) or cap (open model)
	Rate        int           // per second; 0 = closed model
	Timeout     time.Duration // per request
	Targeter    vegeta.Targeter
	OnResult    func(r *vegeta.Result, requestID string)
	Progress    func(done int)
}

// countPacer paces like inner (nil = as fast as the workers go) and stops
// after exactly n hits, so an attack sends exactly n requests.
type countPacer struct {
	n     uint64
	inner vegeta.Pacer
}

func (p countPacer) Pace(elapsed time.Duration, hits uint64) (time.Duration, bool) {
	if hits >= p.n {
		return 0, true
	}
	if p.inner == nil {
		return 0, false
	}
	return p.inner.Pace(elapsed, hits)
}

// Rate is the pacer's nominal rate (0 = unbounded).
func (p countPacer) Rate(elapsed time.Duration) float64 {
	if p.inner == nil {
		return 0
	}
	return p.inner.Rate(elapsed)
}

// seqRecorder wraps the attacker's transport and remembers, per vegeta
// sequence number (X-Vegeta-Seq), the Idempotency-Key the request carried:
// vegeta's Result has no field for it, and the order in which workers call
// the Targeter need not match the sequence numbers.
type seqRecorder struct {
	base http.RoundTripper
	mu   sync.Mutex
	keys map[uint64]string
}

func (t *seqRecorder) RoundTrip(r *http.Request) (*http.Response, error) {
	if s := r.Header.Get("X-Vegeta-Seq"); s != "" {
		if seq, err := strconv.ParseUint(s, 10, 64); err == nil {
			t.mu.Lock()
			t.keys[seq] = r.Header.Get("Idempotency-Key")
			t.mu.Unlock()
		}
	}
	return t.base.RoundTrip(r)
}

func (t *seqRecorder) key(seq uint64) string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.keys[seq]
}

// attackResult summarises one attack.
type attackResult struct {
	Metrics vegeta.Metrics
	Results int // results received (== requests unless cancelled)
	Wall    time.Duration
}

// attack runs spec until exactly spec.Requests results are in or ctx ends.
func attack(ctx context.Context, spec attackSpec) (attackResult, error) {
	const maxBody = 64 << 10
	tr := newConnTransport(spec.Timeout, maxBody, &http.Transport{
		Proxy:               nil, // traffic stays on this machine: never through a proxy
		DialContext:         (&net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		MaxIdleConns:        spec.Concurrency * 2,
		MaxIdleConnsPerHost: spec.Concurrency * 2,
		IdleConnTimeout:     30 * time.Second,
	})
	defer tr.CloseIdleConnections()
	rec := &seqRecorder{base: tr, keys: make(map[uint64]string, spec.Requests)}
	// No Client.Timeout: the transport bounds each request (a deadline on
	// its connection) without net/http's timer goroutine per request.
	client := &http.Client{Transport: rec,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}

	c := uint64(spec.Concurrency)
	atk := vegeta.NewAttacker(
		vegeta.Client(client),
		vegeta.Workers(c),
		vegeta.MaxWorkers(c),
		vegeta.MaxBody(maxBody),
	)
	pacer := countPacer{n: uint64(spec.Requests)}
	if spec.Rate > 0 {
		pacer.inner = vegeta.ConstantPacer{Freq: spec.Rate, Per: time.Second}
	}

	stopWatch := make(chan struct{})
	defer close(stopWatch)
	go func() {
		select {
		case <-ctx.Done():
			atk.Stop()
		case <-stopWatch:
		}
	}()

	var out attackResult
	start := time.Now()
	for res := range atk.Attack(spec.Targeter, pacer, 0, spec.Name) {
		out.Results++
		out.Metrics.Add(res)
		if spec.OnResult != nil {
			spec.OnResult(res, rec.key(res.Seq))
		}
		if spec.Progress != nil {
			spec.Progress(out.Results)
		}
	}
	out.Wall = time.Since(start)
	out.Metrics.Close()
	if err := ctx.Err(); err != nil {
		return out, fmt.Errorf("attack %s stopped after %d of %d requests: %w", spec.Name, out.Results, spec.Requests, err)
	}
	if out.Results != spec.Requests {
		return out, fmt.Errorf("attack %s: got %d results, want exactly %d", spec.Name, out.Results, spec.Requests)
	}
	return out, nil
}

// purchaseTargeter returns a Targeter of POST {target}/api/v1/purchase
// whose every request carries a unique Idempotency-Key and user id,
// derived from seed, run and goods (the same seed on other goods must not
// replay, or collide with, the first goods' orders). It hands out at most n targets, then
// vegeta.ErrNoTargets.
func purchaseTargeter(target string, goods int64, qty, n int, seed int64, run string) vegeta.Targeter {
	return purchases{Target: target, Goods: goods, Qty: qty, N: n, Seed: seed, Run: run}.targeter()
}

// purchases are the requests of a purchaseTargeter.
type purchases struct {
	Target string // the load balancer's base URL
	Goods  int64
	Qty    int
	N      int    // at most this many targets
	Seed   int64  // with Run, derives the ids
	Run    string // the run's name
	// Users draws the user ids from this many users (userOf); 0 = one
	// user per request.
	Users int
}

// targeter returns p's Targeter (see purchaseTargeter).
func (p purchases) targeter() vegeta.Targeter {
	rng := rand.New(rand.NewPCG(uint64(p.Seed), hashString(p.Run)))
	prefix := fmt.Sprintf("%s-g%d-%08x", p.Run, p.Goods, rng.Uint32())
	url := strings.TrimRight(p.Target, "/") + "/api/v1/purchase"
	var next atomic.Int64
	return func(t *vegeta.Target) error {
		if t == nil {
			return vegeta.ErrNilTarget
		}
		i := next.Add(1)
		if i > int64(p.N) {
			return vegeta.ErrNoTargets
		}
		id := fmt.Sprintf("%s-%d", prefix, i)
		body, err := json.Marshal(purchase{GoodsID: p.Goods, Qty: p.Qty, UserID: userOf(id, p.Users)})
		if err != nil {
			return fmt.Errorf("encode purchase: %w", err)
		}
		t.Method = http.MethodPost
		t.URL = url
		t.Body = body
		t.Header = http.Header{
			"Content-Type":    []string{"application/json"},
			"Idempotency-Key": []string{id},
		}
		return nil
	}
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
