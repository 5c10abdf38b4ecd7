// Package dashboard is the lab's live dashboard for workshops (`seckill
// dashboard`, started by `seckill up` as the stack component "dashboard").
//
// It serves one HTML page, every asset embedded (plain JS, inline SVG and
// CSS, no external URL), fed by server-sent events from GET /events. While
// at least one browser watches, the server subscribes to every instance's
// lock events (GET /admin/events) and every Poll it reads each instance's
// /metrics and GET /admin/strategy and the goods' audit, and sends one
// snapshot: stock left, sold, sales per second, the oversold counter, sales
// per instance, lock wait and hold, a race timeline of the last few seconds
// of critical sections (bench/lockcheck's sections and overlaps), the
// latest burst's race timeline from its first purchase to its last (the
// page shows it when the burst ends, so the race stays on screen) and the
// strategy of each instance. Without a watcher it polls nothing (it
// follows the event streams while a burst runs, for its timeline).
//
// The page is made for a projector: every text at least 18 px at
// 1280x720, a palette that passes WCAG AA (TestPaletteContrast), in
// English or Chinese (a button; ?lang=zh).
//
// The instructor's buttons are POST endpoints taking JSON; each validates
// its input and answers errors as a status and {"error", "detail"}:
//
//	POST /api/strategy {name, work_delay, lock_ttl, lock_wait, fencing, watchdog, local_queue, lease_check}
//	                   PUT to every instance, then read back and compared
//	POST /api/reset    {stock}: resets the goods (orders deleted, locks cleared)
//	POST /api/burst    {requests, concurrency, qty}: purchases fired at nginx,
//	                   each with a fresh Idempotency-Key, bounded in time; the
//	                   burst runs on the server (a page closed or reloaded
//	                   does not stop it) and the answer waits for its end
//	POST /api/defaults {strategy}: every instance back to the default setting
//	                   of strategy (default: the one the fleet runs), verified
//	POST /api/fault    {kind: pause|partition|heal, target, for}: internal/stack's faults
//
// The instances, nginx and the admin token come from the run directory
// (internal/stack's Load), read again at every poll so a re-scaled fleet is
// followed.
package dashboard

import (
	"context"
	"crypto/subtle"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/seckill-lab/seckill/internal/stack"
	"github.com/seckill-lab/seckill/stock"
)

// Defaults of Options.
const (
	DefaultGoodsID = 1
	DefaultPoll    = 500 * time.Millisecond
	// Window is how far back the race timeline and the lock figures look.
	Window = 5 * time.Second
)

// Limits of the buttons' input.
const (
	MaxStock       = 1_000_000
	MaxBurst       = 5000
	MaxConcurrency = 200
	MaxQty         = 100
	MaxFaultFor    = 30 * time.Second
	// BurstTimeout bounds a whole burst; the purchases still in flight
	// then are cancelled and counted as "timeout".
	BurstTimeout = 30 * time.Second
	maxBody      = 4 << 10
)

// ErrInvalidOption is returned by New for options that cannot work.
var ErrInvalidOption = errors.New("invalid dashboard option")

//go:embed page.html
var page []byte

// Options configure the dashboard.
type Options struct {
	// Dir is the stack's run directory (default stack.DefaultDir).
	Dir string
	// Addr is the listen address of Serve (default 127.0.0.1:B+88).
	Addr string
	// GoodsID is the goods shown, reset and bought (default 1).
	GoodsID int64
	// Poll is the polling period while a browser watches (default 500 ms).
	Poll time.Duration
	// Out receives the server's log lines (default stderr).
	Out io.Writer
	// AllowHosts are host names the dashboard answers besides the
	// loopback names and addresses and the host of Addr (a projector's
	// LAN name). Any other Host is refused (403 forbidden_host): a page
	// that rebinds its own name to this machine gets nothing.
	AllowHosts []string
}

// Server is the dashboard: an http.Handler plus the collector that Run
// drives.
type Server struct {
	opts   Options
	log    *log.Logger
	client *http.Client // polls and admin calls: bounded
	buyer  *http.Client // the burst's purchases

	mu      sync.Mutex
	st      *stack.State
	clients map[chan []byte]struct{}
	last    []byte // the latest snapshot, sent to a new client first
	wake    chan struct{}
	events  *eventLog
	subs    map[string]context.CancelFunc // instance URL -> its event stream
	hist    []sample                      // recent polls, for the rates
	rate    []float64                     // sales per second, one per poll (sparkline)
	// setting is the fleet's setting the last snapshot showed, settingNS
	// when it changed (0: never seen to change); the cards count from it.
	// strategy is that setting's strategy name, previous the one before
	// the change.
	setting   string
	settingNS int64
	strategy  string
	previous  string
	burst     *burstStatus
	burstTL   *TimelineView        // the latest burst's timeline, once settled
	bursts    int                  // bursts fired so far
	faults    map[string]time.Time // dashboard faults on: "kind target" -> end

	bursting atomic.Bool
	baseCtx  context.Context
	ending   sync.WaitGroup // faults waiting to be ended
}

// New checks opts and loads the stack's state from opts.Dir.
func New(opts Options) (*Server, error) {
	if opts.Dir == "" {
		opts.Dir = stack.DefaultDir
	}
	if opts.GoodsID == 0 {
		opts.GoodsID = DefaultGoodsID
	}
	if opts.GoodsID < 0 {
		return nil, fmt.Errorf("%w: --goods %d: want a positive goods id", ErrInvalidOption, opts.GoodsID)
	}
	if opts.Poll == 0 {
		opts.Poll = DefaultPoll
	}
	if opts.Poll < 50*time.Millisecond || opts.Poll > 10*time.Second {
		return nil, fmt.Errorf("%w: --poll %s: want 50ms..10s", ErrInvalidOption, opts.Poll)
	}
	if opts.Out == nil {
		opts.Out = os.Stderr
	}
	for _, h := range opts.AllowHosts {
		if h = strings.TrimSpace(h); h == "" || strings.ContainsAny(h, "/:@ ") && net.ParseIP(strings.Trim(h, "[]")) == nil {
			return nil, fmt.Errorf("%w: --allow-host %q: want a host name or address, without scheme or port (e.g. --allow-host projector.lan)", ErrInvalidOption, h)
		}
	}
	st, err := stack.Load(opts.Dir)
	if err != nil {
		return nil, fmt.Errorf("dashboard: %w", err)
	}
	opts.Dir = st.Dir
	if opts.Addr == "" {
		opts.Addr = st.DashboardAddr()
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConnsPerHost = MaxConcurrency
	return &Server{
		opts:    opts,
		log:     log.New(opts.Out, "dashboard: ", log.LstdFlags),
		client:  &http.Client{Timeout: 2 * time.Second},
		buyer:   &http.Client{Transport: tr, Timeout: 15 * time.Second},
		st:      st,
		clients: map[chan []byte]struct{}{},
		wake:    make(chan struct{}, 1),
		events:  newEventLog(BurstTimeout + 2*Window), // a whole burst, for its timeline
		subs:    map[string]context.CancelFunc{},
		faults:  map[string]time.Time{},
		baseCtx: context.Background(),
	}, nil
}

// tokenOK reports whether r carries the stack's admin token.
func (s *Server) tokenOK(r *http.Request) bool {
	s.mu.Lock()
	want := s.st.AdminToken
	s.mu.Unlock()
	got, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	return ok && want != "" && subtle.ConstantTimeCompare([]byte(got), []byte(want)) == 1
}

// Addr is the address Serve listens on.
func (s *Server) Addr() string { return s.opts.Addr }

// Serve runs the dashboard of the stack in opts.Dir on opts.Addr until ctx
// is done.
func Serve(ctx context.Context, opts Options) error {
	s, err := New(opts)
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", s.opts.Addr)
	if err != nil {
		return fmt.Errorf("dashboard: listen on %s (pass --addr to move it): %w", s.opts.Addr, err)
	}
	srv := &http.Server{Handler: s, ReadHeaderTimeout: 5 * time.Second}
	s.mu.Lock()
	s.baseCtx = ctx
	s.mu.Unlock()
	go s.Run(ctx)
	go func() {
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
	}()
	s.log.Printf("serving the stack in %s on http://%s/ (goods %d)", s.opts.Dir, ln.Addr(), s.opts.GoodsID)
	if s.Public() {
		s.log.Printf("listening beyond loopback: the buttons need the admin token; open http://HOST:%s/#token=%s (HOST: this machine's name, allowed with --allow-host HOST, or its address)",
			portOf(ln.Addr().String()), s.st.AdminToken)
	}
	err = srv.Serve(ln)
	s.ending.Wait() // a fault it made ends before it exits
	if err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("dashboard: serve: %w", err)
	}
	return nil
}

// hostOf is the host of a host[:port], lower case, without brackets.
func hostOf(hostport string) string {
	h := hostport
	if hh, _, err := net.SplitHostPort(hostport); err == nil {
		h = hh
	}
	return strings.ToLower(strings.Trim(h, "[]"))
}

// loopback reports whether host names this machine's loopback.
func loopback(host string) bool {
	if host == "localhost" || strings.HasSuffix(host, ".localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// allowedHost reports whether the dashboard answers requests for host
// (a Host header or an Origin's host): loopback, the listen address's
// host, or one of Options.AllowHosts.
func (s *Server) allowedHost(hostport string) bool {
	h := hostOf(hostport)
	if h == "" {
		return false
	}
	if loopback(h) {
		return true
	}
	if lh := hostOf(s.opts.Addr); lh != "" && h == lh {
		if ip := net.ParseIP(lh); ip == nil || !ip.IsUnspecified() {
			return true
		}
	}
	// Listening on every interface, it answers by any of this machine's
	// addresses (an address is no name a page can rebind).
	if ip := net.ParseIP(hostOf(s.opts.Addr)); (hostOf(s.opts.Addr) == "" || ip != nil && ip.IsUnspecified()) && localAddr(h) {
		return true
	}
	for _, a := range s.opts.AllowHosts {
		if strings.EqualFold(strings.TrimSpace(a), h) {
			return true
		}
	}
	return false
}

// localAddr reports whether h is an address of one of this machine's
// interfaces (read at each call: a laptop's LAN address changes).
func localAddr(h string) bool {
	ip := net.ParseIP(h)
	if ip == nil {
		return false
	}
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return false
	}
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok && n.IP.Equal(ip) {
			return true
		}
	}
	return false
}

// Public reports whether the dashboard listens beyond loopback (a
// projector on a LAN): its buttons then need the admin token.
func (s *Server) Public() bool { return !loopback(hostOf(s.opts.Addr)) }

// ServeHTTP routes the dashboard's endpoints, for the hosts it answers.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if !s.allowedHost(r.Host) {
		h := hostOf(r.Host)
		fail(w, http.StatusForbidden, "forbidden_host", fmt.Sprintf(
			"the dashboard answers only its own host (loopback, %s); a request for %q may come from a page that rebound its name to this machine (DNS rebinding). To open it by that name: seckill dashboard --allow-host %s",
			s.opts.Addr, h, h))
		return
	}
	switch r.URL.Path {
	case "/":
		if s.method(w, r, http.MethodGet) {
			w.Header().Set("Content-Type", "text/html; charset=utf-8")
			w.Header().Set("Cache-Control", "no-store")
			_, _ = w.Write(page)
		}
	case "/healthz":
		if s.method(w, r, http.MethodGet) {
			writeJSON(w, http.StatusOK, map[string]any{"status": "ok", "stack": s.opts.Dir, "goods_id": s.opts.GoodsID})
		}
	case "/favicon.ico":
		w.WriteHeader(http.StatusNoContent)
	case "/events":
		if s.method(w, r, http.MethodGet) {
			s.serveEvents(w, r)
		}
	case "/api/snapshot":
		if s.method(w, r, http.MethodGet) {
			s.mu.Lock()
			b := s.last
			s.mu.Unlock()
			if b == nil {
				b = s.snapshot(r.Context())
			}
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write(b)
		}
	case "/api/strategy":
		s.post(w, r, s.handleStrategy)
	case "/api/reset":
		s.post(w, r, s.handleReset)
	case "/api/burst":
		s.post(w, r, s.handleBurst)
	case "/api/defaults":
		s.post(w, r, s.handleDefaults)
	case "/api/fault":
		s.post(w, r, s.handleFault)
	default:
		fail(w, http.StatusNotFound, "not_found", "no route "+r.Method+" "+r.URL.Path)
	}
}

// method answers 405 unless r uses want.
func (s *Server) method(w http.ResponseWriter, r *http.Request, want string) bool {
	if r.Method == want || (want == http.MethodGet && r.Method == http.MethodHead) {
		return true
	}
	w.Header().Set("Allow", want)
	fail(w, http.StatusMethodNotAllowed, "method_not_allowed", r.Method+" is not allowed here; use "+want)
	return false
}

// post checks what every button's request has in common (POST, same
// origin, a JSON body of at most 4 KiB) and calls h with the body.
func (s *Server) post(w http.ResponseWriter, r *http.Request, h func(w http.ResponseWriter, r *http.Request, body []byte)) {
	if !s.method(w, r, http.MethodPost) {
		return
	}
	if o := r.Header.Get("Origin"); o != "" {
		if u, err := url.Parse(o); err != nil || u.Host != r.Host || !s.allowedHost(u.Host) {
			fail(w, http.StatusForbidden, "cross_origin", "the dashboard's buttons only answer its own page")
			return
		}
	}
	if s.Public() && !s.tokenOK(r) {
		fail(w, http.StatusUnauthorized, "unauthorized", fmt.Sprintf(
			"this dashboard listens beyond loopback (%s): its buttons need the admin token. Open the page as http://HOST:PORT/#token=TOKEN (seckill dashboard prints it; the token is in the stack's admin-token file), or send Authorization: Bearer TOKEN",
			s.opts.Addr))
		return
	}
	ct := r.Header.Get("Content-Type")
	if mt, _, _ := strings.Cut(ct, ";"); strings.TrimSpace(strings.ToLower(mt)) != "application/json" {
		fail(w, http.StatusUnsupportedMediaType, "unsupported_media_type", "send Content-Type: application/json")
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBody))
	var tooBig *http.MaxBytesError
	if errors.As(err, &tooBig) {
		fail(w, http.StatusRequestEntityTooLarge, "body_too_large", fmt.Sprintf("the body must be at most %d bytes", maxBody))
		return
	}
	if err != nil {
		fail(w, http.StatusBadRequest, "invalid_json", "reading the body: "+err.Error())
		return
	}
	h(w, r, body)
}

// decode reads body, a JSON object whose keys are all among fields, into
// dst (a struct of pointer fields), and answers 400 otherwise.
func decode(w http.ResponseWriter, body []byte, dst any, fields ...string) bool {
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(body, &raw); err != nil || raw == nil {
		fail(w, http.StatusBadRequest, "invalid_json", "the body must be a JSON object")
		return false
	}
	for k := range raw {
		if !contains(fields, k) {
			fail(w, http.StatusBadRequest, "invalid_field", fmt.Sprintf("unknown field %q; the fields are %s", k, strings.Join(fields, ", ")))
			return false
		}
	}
	if err := json.Unmarshal(body, dst); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			fail(w, http.StatusBadRequest, "invalid_field", fmt.Sprintf("field %q must be a %s", te.Field, te.Type))
			return false
		}
		fail(w, http.StatusBadRequest, "invalid_json", strings.TrimPrefix(err.Error(), "json: "))
		return false
	}
	return true
}

func contains(xs []string, x string) bool {
	for _, v := range xs {
		if v == x {
			return true
		}
	}
	return false
}

// fail writes a JSON error.
func fail(w http.ResponseWriter, status int, code, detail string) {
	body := map[string]any{"error": code}
	if detail != "" {
		body["detail"] = detail
	}
	writeJSON(w, status, body)
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// state returns the stack's state, read again from the run directory (the
// fleet may have been re-scaled); on a read error the last good one.
func (s *Server) state() (*stack.State, error) {
	st, err := stack.Load(s.opts.Dir)
	s.mu.Lock()
	defer s.mu.Unlock()
	if err != nil {
		return s.st, err
	}
	s.st = st
	return st, nil
}

// goodsKey is the lock key of the dashboard's goods.
func (s *Server) goodsKey() string { return stock.LockKey(s.opts.GoodsID) }

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

// portOf is the port of a host:port.
func portOf(hostport string) string {
	_, p, _ := net.SplitHostPort(hostport)
	return p
}
