package dashboard

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/seckill-lab/seckill/bench/adminclient"
	"github.com/seckill-lab/seckill/internal/fault"
	"github.com/seckill-lab/seckill/internal/stack"
	"github.com/seckill-lab/seckill/stock"
	"github.com/seckill-lab/seckill/stock/catalog"
)

// adminTimeout bounds one admin call a button makes.
const adminTimeout = 10 * time.Second

// Fault kinds the dashboard offers.
var faultKinds = []string{fault.Pause, fault.Partition, fault.Heal}

// kick makes the collector send a snapshot now.
func (s *Server) kick() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// base is the context of work that outlives a request (a fault's end).
func (s *Server) base() context.Context {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.baseCtx
}

// adminSend sends in as JSON to an instance's admin path.
func (s *Server) adminSend(ctx context.Context, method, base, path, token string, in any) error {
	ctx, cancel := context.WithTimeout(ctx, adminTimeout)
	defer cancel()
	return adminclient.New(token).Do(ctx, method, base, path, in, nil)
}

// loadState answers 503 when the run directory has no stack.
func (s *Server) loadState(w http.ResponseWriter) (*stack.State, bool) {
	st, err := s.state()
	if err != nil {
		fail(w, http.StatusServiceUnavailable, "no_stack", err.Error())
		return nil, false
	}
	if len(st.Instances()) == 0 {
		fail(w, http.StatusServiceUnavailable, "no_instances", "the stack in "+st.Dir+" has no instances")
		return nil, false
	}
	return st, true
}

// InstanceResult is one instance's part in a button's action.
type InstanceResult struct {
	Name  string `json:"name"`
	OK    bool   `json:"ok"`
	Error string `json:"error,omitempty"`
}

// handleStrategy is POST /api/strategy: PUT the setting to every
// instance, then read every instance's setting back and compare.
func (s *Server) handleStrategy(w http.ResponseWriter, r *http.Request, body []byte) {
	var probe struct {
		Name *string `json:"name"`
	}
	if !decode(w, body, &probe, stock.ConfigFields()...) {
		return
	}
	if probe.Name == nil {
		fail(w, http.StatusBadRequest, "missing_field", `field "name" is required`)
		return
	}
	var cfg stock.Config
	if err := json.Unmarshal(body, &cfg); err != nil {
		fail(w, http.StatusBadRequest, "invalid_field", err.Error())
		return
	}
	if err := cfg.Validate(); err != nil {
		if errors.Is(err, catalog.ErrUnknownStrategy) {
			writeJSON(w, http.StatusBadRequest, map[string]any{"error": "unknown_strategy", "detail": err.Error(), "valid": catalog.StrategyNames()})
			return
		}
		fail(w, http.StatusBadRequest, "invalid_strategy_config", err.Error())
		return
	}
	st, ok := s.loadState(w)
	if !ok {
		return
	}
	s.apply(w, r.Context(), st, cfg)
}

// apply PUTs cfg to every instance of st, reads every instance's setting
// back and answers what each runs.
func (s *Server) apply(w http.ResponseWriter, ctx context.Context, st *stack.State, cfg stock.Config) {
	insts := st.Instances()
	res := make([]InstanceResult, len(insts))
	var wg sync.WaitGroup
	for i, c := range insts {
		wg.Go(func() {
			res[i] = InstanceResult{Name: c.Name}
			if err := s.adminSend(ctx, http.MethodPut, c.URL(), "/admin/strategy", st.AdminToken, cfg); err != nil {
				res[i].Error = err.Error()
				return
			}
			ctx, cancel := context.WithTimeout(ctx, adminTimeout)
			defer cancel()
			var got StrategyView
			if _, err := s.adminGet(ctx, c.URL(), "/admin/strategy", st.AdminToken, &got); err != nil {
				res[i].Error = "verify: " + err.Error()
				return
			}
			if !got.Equal(cfg) {
				res[i].Error = "verify: the instance reports " + got.String()
				return
			}
			res[i].OK = true
		})
	}
	wg.Wait()
	s.kick()
	var bad []string
	for _, x := range res {
		if !x.OK {
			bad = append(bad, x.Name+": "+x.Error)
		}
	}
	if len(bad) > 0 {
		writeJSON(w, http.StatusBadGateway, map[string]any{"error": "not_applied",
			"detail": "the fleet does not run the setting: " + strings.Join(bad, "; "), "instances": res})
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"strategy": cfg, "instances": res})
}

// handleDefaults is POST /api/defaults {strategy}: every instance back to
// the default setting of strategy (a stock.Config with only its name: no work delay, the
// default TTL and wait, watchdog on, no fencing), by default of the
// strategy the first answering instance runs; what a lesson or an earlier
// class left on the fleet (a 300 ms work delay, a 100 ms TTL) goes.
func (s *Server) handleDefaults(w http.ResponseWriter, r *http.Request, body []byte) {
	var b struct {
		Strategy *string `json:"strategy"`
	}
	if !decode(w, body, &b, "strategy") {
		return
	}
	st, ok := s.loadState(w)
	if !ok {
		return
	}
	name := ""
	if b.Strategy != nil {
		name = *b.Strategy
	} else {
		for _, c := range st.Instances() {
			ctx, cancel := context.WithTimeout(r.Context(), adminTimeout)
			var got StrategyView
			_, err := s.adminGet(ctx, c.URL(), "/admin/strategy", st.AdminToken, &got)
			cancel()
			if err == nil {
				name = got.Name
				break
			}
		}
		if name == "" {
			fail(w, http.StatusBadGateway, "no_instance", "no instance said which strategy it runs; name one: {\"strategy\": \"redis\"}")
			return
		}
	}
	if _, ok := catalog.Lookup(name); !ok {
		writeJSON(w, http.StatusBadRequest, map[string]any{"error": "unknown_strategy", "detail": fmt.Sprintf("no strategy %q", name), "valid": catalog.StrategyNames()})
		return
	}
	s.apply(w, r.Context(), st, stock.Config{Name: name})
}

// handleReset is POST /api/reset {stock}: the goods' stock set, its
// orders deleted and its locks cleared, through the first instance that
// answers.
func (s *Server) handleReset(w http.ResponseWriter, r *http.Request, body []byte) {
	var b struct {
		Stock *int64 `json:"stock"`
	}
	if !decode(w, body, &b, "stock") {
		return
	}
	if b.Stock == nil {
		fail(w, http.StatusBadRequest, "missing_field", `field "stock" is required`)
		return
	}
	if *b.Stock < 0 || *b.Stock > MaxStock {
		fail(w, http.StatusBadRequest, "invalid_field", fmt.Sprintf("stock must be 0..%d, not %d", MaxStock, *b.Stock))
		return
	}
	if s.bursting.Load() {
		fail(w, http.StatusConflict, "burst_running", "a burst is running; reset when it is over")
		return
	}
	st, ok := s.loadState(w)
	if !ok {
		return
	}
	var errs []string
	for _, c := range st.Instances() {
		err := s.adminSend(r.Context(), http.MethodPost, c.URL(), "/admin/reset", st.AdminToken,
			map[string]int64{"goods_id": s.opts.GoodsID, "stock": *b.Stock})
		if err != nil {
			errs = append(errs, c.Name+": "+err.Error())
			continue
		}
		s.events.clear()
		s.mu.Lock()
		s.hist, s.rate, s.burst, s.burstTL = nil, nil, nil, nil
		s.mu.Unlock()
		s.kick()
		writeJSON(w, http.StatusOK, map[string]any{"goods_id": s.opts.GoodsID, "stock": *b.Stock, "instance": c.Name})
		return
	}
	fail(w, http.StatusBadGateway, "reset_failed", "no instance reset the goods: "+strings.Join(errs, "; "))
}

// burstStatus is a burst's progress, shown on the page.
type burstStatus struct {
	Running    bool           `json:"running"`
	Requests   int            `json:"requests"`
	Answered   int            `json:"answered"`
	Outcomes   map[string]int `json:"outcomes"`
	DurationMS float64        `json:"duration_ms"`
	// ElapsedMS is how long a running burst has run, at the snapshot.
	ElapsedMS float64 `json:"elapsed_ms,omitempty"`
	TimedOut  bool    `json:"timed_out"`
	// Strategy is the fleet's strategy when the burst began: the last
	// burst's timeline names it after a switch too.
	Strategy string `json:"strategy,omitempty"`
	// ID numbers the dashboard's bursts from 1: the page tells a new
	// burst's end from the one it has shown.
	ID      int `json:"id"`
	started time.Time
	// startNS and endNS are its span on the lock events' clock.
	startNS, endNS int64
}

func (b *burstStatus) clone() *burstStatus {
	if b == nil {
		return nil
	}
	c := *b
	c.Outcomes = maps.Clone(b.Outcomes)
	return &c
}

// handleBurst is POST /api/burst {requests, concurrency, qty}: that many
// purchases fired at nginx by concurrency workers, each with a fresh
// Idempotency-Key, within BurstTimeout. One burst at a time.
func (s *Server) handleBurst(w http.ResponseWriter, r *http.Request, body []byte) {
	var b struct {
		Requests    *int `json:"requests"`
		Concurrency *int `json:"concurrency"`
		Qty         *int `json:"qty"`
	}
	if !decode(w, body, &b, "requests", "concurrency", "qty") {
		return
	}
	if b.Requests == nil {
		fail(w, http.StatusBadRequest, "missing_field", `field "requests" is required`)
		return
	}
	conc, qty := 20, 1
	if b.Concurrency != nil {
		conc = *b.Concurrency
	}
	if b.Qty != nil {
		qty = *b.Qty
	}
	for _, c := range []struct {
		name     string
		v, lo, h int
	}{{"requests", *b.Requests, 1, MaxBurst}, {"concurrency", conc, 1, MaxConcurrency}, {"qty", qty, 1, MaxQty}} {
		if c.v < c.lo || c.v > c.h {
			fail(w, http.StatusBadRequest, "invalid_field", fmt.Sprintf("%s must be %d..%d, not %d", c.name, c.lo, c.h, c.v))
			return
		}
	}
	st, ok := s.loadState(w)
	if !ok {
		return
	}
	if !s.bursting.CompareAndSwap(false, true) {
		fail(w, http.StatusConflict, "burst_running", "a burst is already running; wait for it to finish")
		return
	}
	// The burst runs on the server's context, not the request's: a page
	// closed or reloaded mid-burst leaves it running (the next page
	// follows it in the snapshots); only the dashboard's end stops it.
	done := make(chan *burstStatus, 1)
	s.ending.Add(1)
	go func() {
		defer s.ending.Done()
		defer s.bursting.Store(false)
		bs := s.burstRun(s.base(), st.NginxURL(), *b.Requests, conc, qty)
		s.kick()
		done <- bs
	}()
	var bs *burstStatus
	select {
	case bs = <-done:
	case <-r.Context().Done():
		return // the page went; the burst goes on
	}
	if bs.Answered == 0 {
		writeJSON(w, http.StatusBadGateway, map[string]any{"error": "nginx_unreachable",
			"detail": "no purchase got an answer from nginx at " + st.NginxURL() + " (is the stack up? `seckill status`)", "burst": bs})
		return
	}
	writeJSON(w, http.StatusOK, bs)
}

// burstRun fires n purchases at nginx with conc workers and returns the
// outcome counts; s.burst follows its progress.
func (s *Server) burstRun(ctx context.Context, nginx string, n, conc, qty int) *burstStatus {
	ctx, cancel := context.WithTimeout(ctx, BurstTimeout)
	defer cancel()
	t0 := time.Now()
	s.mu.Lock()
	s.bursts++
	s.burst = &burstStatus{Running: true, Requests: n, Outcomes: map[string]int{}, started: t0, ID: s.bursts, startNS: stock.MonoNow(), Strategy: s.strategy}
	s.burstTL = nil
	s.mu.Unlock()
	jobs := make(chan struct{})
	var wg sync.WaitGroup
	for range min(conc, n) {
		wg.Go(func() {
			for range jobs {
				out, answered := s.buy(ctx, nginx, qty)
				s.mu.Lock()
				s.burst.Outcomes[out]++
				if answered {
					s.burst.Answered++
				}
				s.mu.Unlock()
			}
		})
	}
feed:
	for range n {
		select {
		case jobs <- struct{}{}:
		case <-ctx.Done():
			break feed
		}
	}
	close(jobs)
	wg.Wait()
	s.mu.Lock()
	defer s.mu.Unlock()
	b := s.burst
	b.Running = false
	b.DurationMS = float64(time.Since(t0).Microseconds()) / 1e3
	b.endNS = stock.MonoNow()
	if ctx.Err() != nil {
		b.TimedOut = true
		done := 0
		for _, v := range b.Outcomes {
			done += v
		}
		if n > done {
			b.Outcomes["not_sent"] = n - done
		}
	}
	return b.clone()
}

// buy makes one purchase through nginx and names its outcome: "ok", the
// error code of the answer, "timeout" or "unreachable".
func (s *Server) buy(ctx context.Context, nginx string, qty int) (outcome string, answered bool) {
	key := uuid.NewString()
	body := fmt.Sprintf(`{"goods_id":%d,"qty":%d,"user_id":"dash-%s"}`, s.opts.GoodsID, qty, key[:8])
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, nginx+"/api/v1/purchase", strings.NewReader(body))
	if err != nil {
		return "unreachable", false
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Idempotency-Key", "dash-"+key)
	resp, err := s.buyer.Do(req)
	if err != nil {
		if ctx.Err() != nil || errors.Is(err, context.DeadlineExceeded) {
			return "timeout", false
		}
		return "unreachable", false
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	if resp.StatusCode == http.StatusOK || resp.StatusCode == http.StatusAccepted { // 202: redis-stream queued it
		return "ok", true
	}
	var e struct {
		Error string `json:"error"`
	}
	if json.Unmarshal(b, &e) == nil && e.Error != "" {
		return e.Error, true
	}
	return fmt.Sprintf("http_%d", resp.StatusCode), true
}

// handleFault is POST /api/fault {kind, target, for}: pause a component
// or partition a link (up --proxy) for a while, or heal everything.
func (s *Server) handleFault(w http.ResponseWriter, r *http.Request, body []byte) {
	var b struct {
		Kind   *string `json:"kind"`
		Target *string `json:"target"`
		For    *string `json:"for"`
	}
	if !decode(w, body, &b, "kind", "target", "for") {
		return
	}
	if b.Kind == nil {
		fail(w, http.StatusBadRequest, "missing_field", `field "kind" is required (`+strings.Join(faultKinds, ", ")+")")
		return
	}
	if !contains(faultKinds, *b.Kind) {
		fail(w, http.StatusBadRequest, "invalid_field", fmt.Sprintf("kind %q: the dashboard offers %s", *b.Kind, strings.Join(faultKinds, ", ")))
		return
	}
	st, err := s.state()
	if err != nil {
		fail(w, http.StatusServiceUnavailable, "no_stack", err.Error())
		return
	}
	if *b.Kind == fault.Heal {
		var out bytes.Buffer
		ctx, cancel := context.WithTimeout(r.Context(), time.Minute)
		defer cancel()
		err := stack.Heal(ctx, st.Dir, &out)
		s.kick()
		if err != nil {
			fail(w, http.StatusBadGateway, "heal_failed", err.Error())
			return
		}
		did := strings.TrimSpace(out.String())
		if did == "" {
			did = "nothing to heal"
		}
		writeJSON(w, http.StatusOK, map[string]any{"did": did})
		return
	}
	if b.Target == nil || *b.Target == "" {
		fail(w, http.StatusBadRequest, "missing_field", `field "target" is required`)
		return
	}
	d := 2 * time.Second
	if b.For != nil {
		if d, err = time.ParseDuration(*b.For); err != nil || d < 100*time.Millisecond || d > MaxFaultFor {
			fail(w, http.StatusBadRequest, "invalid_field", fmt.Sprintf("for %q: want a Go duration from 100ms to %s, such as \"2s\"", *b.For, MaxFaultFor))
			return
		}
	}
	target := *b.Target
	if *b.Kind == fault.Pause {
		if c, ok := st.Component(target); !ok || c.Kind == stack.KindDashboard {
			var valid []string
			for _, c := range st.Components {
				if c.Kind != stack.KindDashboard {
					valid = append(valid, c.Name)
				}
			}
			fail(w, http.StatusBadRequest, "unknown_target", fmt.Sprintf("no component %q to pause; the stack has %s", target, strings.Join(valid, ", ")))
			return
		}
	}
	if *b.Kind == fault.Partition && !st.Proxy {
		fail(w, http.StatusConflict, "needs_proxy", "a partition needs the fault proxy: restart the stack with `seckill down` then `seckill up --proxy`")
		return
	}
	key := *b.Kind + " " + target
	s.mu.Lock()
	_, busy := s.faults[key]
	if !busy {
		s.faults[key] = time.Now().Add(d)
	}
	s.mu.Unlock()
	if busy {
		fail(w, http.StatusConflict, "fault_active", key+" is already on; wait for it to end or heal")
		return
	}
	did, end, err := stack.Begin(r.Context(), st.Dir, stack.Fault{Kind: *b.Kind, Target: target})
	if err != nil {
		s.mu.Lock()
		delete(s.faults, key)
		s.mu.Unlock()
		switch {
		case errors.Is(err, stack.ErrUnknownComponent):
			fail(w, http.StatusBadRequest, "unknown_target", err.Error())
		case errors.Is(err, stack.ErrNoProxy):
			fail(w, http.StatusConflict, "needs_proxy", err.Error())
		default:
			fail(w, http.StatusBadGateway, "fault_failed", err.Error())
		}
		return
	}
	s.ending.Add(1)
	go s.endFault(key, d, end)
	s.kick()
	writeJSON(w, http.StatusOK, map[string]any{"did": did, "for": d.String(), "until": time.Now().Add(d)})
}

// endFault ends a fault after d (or at once when the dashboard stops).
func (s *Server) endFault(key string, d time.Duration, end func(context.Context) error) {
	defer s.ending.Done()
	base := s.base()
	t := time.NewTimer(d)
	select {
	case <-t.C:
	case <-base.Done():
		t.Stop()
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(base), time.Minute)
	defer cancel()
	if end != nil {
		if err := end(ctx); err != nil {
			s.log.Printf("end %s: %v (seckill fault heal undoes it)", key, err)
		}
	}
	s.mu.Lock()
	delete(s.faults, key)
	s.mu.Unlock()
	s.kick()
}
