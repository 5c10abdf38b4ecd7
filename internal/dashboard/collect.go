package dashboard

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/seckill-lab/seckill/bench"
	"github.com/seckill-lab/seckill/bench/lockcheck"
	"github.com/seckill-lab/seckill/internal/adminclient"
	"github.com/seckill-lab/seckill/internal/server"
	"github.com/seckill-lab/seckill/internal/stack"
	"github.com/seckill-lab/seckill/stock"
)

// errGoodsNotFound: the instances do not know the dashboard's goods (no
// reset created it yet).
var errGoodsNotFound = errors.New("goods not found")

// eventsKeepAlive is how often an idle /events stream sends a comment.
const eventsKeepAlive = 15 * time.Second

// rateSpan is how far back sales per second and the /metrics averages look.
const rateSpan = 3 * time.Second

// eventLog keeps the lock events of the last keep (by MonoNS).
type eventLog struct {
	mu   sync.Mutex
	keep int64
	evs  []stock.Event
}

const maxEvents = 50_000

func newEventLog(keep time.Duration) *eventLog { return &eventLog{keep: int64(keep)} }

func (l *eventLog) add(ev stock.Event) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.evs) >= maxEvents {
		l.evs = slices.Delete(l.evs, 0, len(l.evs)/4)
	}
	l.evs = append(l.evs, ev)
}

// since prunes what is older than keep and returns a copy of the events
// at or after fromNS.
func (l *eventLog) since(now, fromNS int64) []stock.Event {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.evs = slices.DeleteFunc(l.evs, func(ev stock.Event) bool { return ev.MonoNS < now-l.keep })
	var out []stock.Event
	for _, ev := range l.evs {
		if ev.MonoNS >= fromNS {
			out = append(out, ev)
		}
	}
	return out
}

func (l *eventLog) clear() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.evs = nil
}

// sample is one poll's fleet totals, for rates.
type sample struct {
	at                 time.Time
	sold               int64
	waitSum, waitCount float64
	holdSum, holdCount float64
}

// Snapshot is what the page draws, sent every poll.
type Snapshot struct {
	At      time.Time    `json:"at"`
	GoodsID int64        `json:"goods_id"`
	Stack   string       `json:"stack"`
	Nginx   string       `json:"nginx"`
	Proxy   bool         `json:"proxy"`
	Audit   *stock.Audit `json:"audit"` // nil when no instance answered
	// GoodsMissing: the instances answered that the goods does not exist.
	GoodsMissing bool                `json:"goods_missing"`
	SalesPerS    float64             `json:"sales_per_s"`
	Rates        []float64           `json:"rates"` // sales per second, one per poll, oldest first
	Instances    []InstanceView      `json:"instances"`
	Strategy     *StrategyView       `json:"strategy"` // the first answering instance's
	Disagree     bool                `json:"disagree"`
	Lock         LockView            `json:"lock"`
	Timeline     TimelineView        `json:"timeline"`
	Faults       []stack.ActiveFault `json:"faults"`
	Targets      []string            `json:"targets"` // components a pause can take
	Strategies   []StrategyInfo      `json:"strategies"`
	Burst        *burstStatus        `json:"burst,omitempty"`
	Errors       []string            `json:"errors"`
}

// InstanceView is one instance as the dashboard saw it this poll.
type InstanceView struct {
	Name     string        `json:"name"`
	URL      string        `json:"url"`
	Up       bool          `json:"up"`
	Sold     int64         `json:"sold"`
	Strategy *StrategyView `json:"strategy"`
	Error    string        `json:"error,omitempty"`
}

// StrategyView is an instance's GET /admin/strategy answer.
type StrategyView struct {
	Name       string `json:"name"`
	WorkDelay  string `json:"work_delay"`
	LockTTL    string `json:"lock_ttl"`
	LockWait   string `json:"lock_wait"`
	Fencing    bool   `json:"fencing"`
	Watchdog   bool   `json:"watchdog"`
	LocalQueue bool   `json:"local_queue"`
	LeaseCheck bool   `json:"lease_check"`
	Instance   string `json:"instance,omitempty"`
}

// same compares two settings, not the instance names.
func (v StrategyView) same(o StrategyView) bool {
	v.Instance, o.Instance = "", ""
	return v == o
}

// StrategyInfo is a registry entry for the page's select.
type StrategyInfo struct {
	Name    string `json:"name"`
	Flawed  bool   `json:"flawed"`
	Tokens  bool   `json:"tokens"`
	Renews  bool   `json:"renews"`
	Summary string `json:"summary"`
	// Link is the server group a partition of an instance cuts it off
	// from under this strategy (`seckill fault partition INST/LINK`).
	Link string `json:"link"`
}

// linkOf names the server group of a strategy's lock for a link fault.
func linkOf(s stock.Strategy) string { return server.LinkOfServer(string(s.Server)) }

// LockView are lock wait and hold figures in milliseconds: percentiles
// from the lock events of the last Window, averages from the /metrics
// histograms over the last rateSpan (nil when nothing was observed).
type LockView struct {
	Acquisitions int      `json:"acquisitions"`
	WaitP50      *float64 `json:"wait_p50_ms"`
	WaitP99      *float64 `json:"wait_p99_ms"`
	HoldP50      *float64 `json:"hold_p50_ms"`
	HoldP99      *float64 `json:"hold_p99_ms"`
	MetricsWait  *float64 `json:"metrics_wait_avg_ms"`
	MetricsHold  *float64 `json:"metrics_hold_avg_ms"`
}

// TimelineView is the race timeline: sections of the last Window, times
// in ms relative to the snapshot (negative: in the past).
type TimelineView struct {
	WindowMS float64       `json:"window_ms"`
	Lanes    []string      `json:"lanes"`
	Sections []SectionView `json:"sections"`
	Overlaps [][2]float64  `json:"overlaps"` // overlapping intervals
	// Overlapping counts the sections of the window that overlap another;
	// Overlaps are the merged intervals where they do.
	Overlapping int `json:"overlapping"`
}

// SectionView is one purchase's critical section: lock acquired (A),
// stock read (R), committed or rolled back (E), lock released (L); a
// missing step is null (E and L of a section still running).
type SectionView struct {
	Lane int      `json:"lane"`
	A    *float64 `json:"a"`
	R    *float64 `json:"r"`
	E    *float64 `json:"e"`
	L    *float64 `json:"l"`
	OK   bool     `json:"ok"`
	Red  bool     `json:"red"`
}

// Run drives the collector until ctx is done: while a browser watches,
// it follows the instances' event streams and sends a snapshot every
// Poll.
func (s *Server) Run(ctx context.Context) {
	s.mu.Lock()
	s.baseCtx = ctx
	s.mu.Unlock()
	t := time.NewTicker(s.opts.Poll)
	defer t.Stop()
	defer s.syncSubs(ctx, nil)
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-s.wake:
		}
		if s.watchers() == 0 {
			s.syncSubs(ctx, nil)
			continue
		}
		st, _ := s.state()
		s.syncSubs(ctx, st)
		s.broadcast(s.snapshot(ctx))
	}
}

func (s *Server) watchers() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.clients)
}

// syncSubs follows the event stream of every instance of st (none when
// st is nil) and stops following the others.
func (s *Server) syncSubs(ctx context.Context, st *stack.State) {
	want := map[string]bool{}
	token := ""
	if st != nil {
		token = st.AdminToken
		for _, u := range st.InstanceURLs() {
			want[u] = true
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for u, cancel := range s.subs {
		if !want[u] {
			cancel()
			delete(s.subs, u)
		}
	}
	for u := range want {
		if _, ok := s.subs[u]; ok {
			continue
		}
		sctx, cancel := context.WithCancel(ctx)
		s.subs[u] = cancel
		go s.follow(sctx, u, token)
	}
}

// follow adds the goods' lock events of the instance at base to the log,
// reconnecting (every second) while ctx lasts.
func (s *Server) follow(ctx context.Context, base, token string) {
	key := s.goodsKey()
	for ctx.Err() == nil {
		ch, err := adminclient.New(token).Events(ctx, base)
		if err == nil {
			for ev := range ch {
				if ev.Key == key {
					s.events.add(ev)
				}
			}
		}
		select {
		case <-ctx.Done():
		case <-time.After(time.Second):
		}
	}
}

// broadcast sends b to every watcher; a slow one gets the latest only.
func (s *Server) broadcast(b []byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.last = b
	for ch := range s.clients {
		select {
		case ch <- b:
		default:
			select { // drop the stale one it has not read
			case <-ch:
			default:
			}
			select {
			case ch <- b:
			default:
			}
		}
	}
}

// serveEvents is GET /events: the snapshots as server-sent events
// (`event: snapshot`), the latest one first.
func (s *Server) serveEvents(w http.ResponseWriter, r *http.Request) {
	fl, ok := w.(http.Flusher)
	if !ok {
		fail(w, http.StatusInternalServerError, "no_streaming", "this server cannot stream")
		return
	}
	ch := make(chan []byte, 2)
	s.mu.Lock()
	s.clients[ch] = struct{}{}
	last := s.last
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		delete(s.clients, ch)
		s.mu.Unlock()
	}()
	select { // a first snapshot now, not at the next tick
	case s.wake <- struct{}{}:
	default:
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.Header().Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	send := func(b []byte) bool {
		_, err := fmt.Fprintf(w, "event: snapshot\ndata: %s\n\n", b)
		fl.Flush()
		return err == nil
	}
	if last != nil && !send(last) {
		return
	}
	fl.Flush()
	tick := time.NewTicker(eventsKeepAlive)
	defer tick.Stop()
	for {
		select {
		case <-r.Context().Done():
			return
		case b := <-ch:
			if !send(b) {
				return
			}
		case <-tick.C:
			if _, err := fmt.Fprint(w, ": keep-alive\n\n"); err != nil {
				return
			}
			fl.Flush()
		}
	}
}

// adminGet GETs an instance's admin or metrics path into out (JSON) or
// returns the body (out nil).
func (s *Server) adminGet(ctx context.Context, base, path, token string, out any) ([]byte, error) {
	c := &adminclient.Client{HTTP: s.client, Token: token}
	b, err := c.Get(ctx, base, path)
	if ae := (*adminclient.Error)(nil); errors.As(err, &ae) && ae.Status == http.StatusNotFound && ae.Code == "goods_not_found" {
		return nil, errGoodsNotFound
	}
	if err != nil {
		return nil, err
	}
	if out != nil {
		if err := json.Unmarshal(b, out); err != nil {
			return nil, fmt.Errorf("GET %s%s: %w", base, path, err)
		}
	}
	return b, nil
}

// poll is one instance's answers of one poll.
type poll struct {
	strategy           *StrategyView
	waitSum, waitCount float64
	holdSum, holdCount float64
	err                error
}

func (s *Server) pollInstance(ctx context.Context, base, token string) poll {
	var p poll
	var sv StrategyView
	if _, err := s.adminGet(ctx, base, "/admin/strategy", token, &sv); err != nil {
		p.err = err
		return p
	}
	p.strategy = &sv
	b, err := s.adminGet(ctx, base, "/metrics", token, nil)
	if err != nil {
		p.err = err
		return p
	}
	fams, err := bench.ParseMetrics(strings.NewReader(string(b)))
	if err != nil {
		p.err = err
		return p
	}
	for name, dst := range map[string][2]*float64{
		"seckill_lock_wait_seconds": {&p.waitSum, &p.waitCount},
		"seckill_lock_hold_seconds": {&p.holdSum, &p.holdCount},
	} {
		for _, m := range fams[name].GetMetric() {
			if h := m.GetHistogram(); h != nil {
				*dst[0] += h.GetSampleSum()
				*dst[1] += float64(h.GetSampleCount())
			}
		}
	}
	return p
}

// snapshot polls the fleet once and renders the snapshot as JSON.
func (s *Server) snapshot(ctx context.Context) []byte {
	now := time.Now()
	nowNS := stock.MonoNow()
	snap := Snapshot{At: now, GoodsID: s.opts.GoodsID, Errors: []string{}, Faults: []stack.ActiveFault{}}
	st, err := s.state()
	if err != nil {
		snap.Errors = append(snap.Errors, err.Error())
	}
	for _, info := range stock.Strategies() {
		snap.Strategies = append(snap.Strategies, StrategyInfo{info.Name, info.Flawed, info.Tokens, info.Renews, info.Summary, linkOf(info)})
	}
	snap.Stack, snap.Nginx, snap.Proxy = st.Dir, st.NginxURL(), st.Proxy
	for _, c := range st.Components {
		if c.Kind != stack.KindDashboard {
			snap.Targets = append(snap.Targets, c.Name)
		}
	}
	if fs, err := stack.ActiveFaults(st.Dir); err == nil && fs != nil {
		snap.Faults = fs
	}

	insts := st.Instances()
	pctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	polls := make([]poll, len(insts))
	var wg sync.WaitGroup
	for i, c := range insts {
		wg.Go(func() { polls[i] = s.pollInstance(pctx, c.URL(), st.AdminToken) })
	}
	wg.Wait()
	var total sample
	total.at = now
	for i, c := range insts {
		p := polls[i]
		iv := InstanceView{Name: c.Name, URL: c.URL(), Up: p.err == nil, Strategy: p.strategy}
		if p.err != nil {
			iv.Error = p.err.Error()
			snap.Errors = append(snap.Errors, c.Name+": "+p.err.Error())
		}
		if p.strategy != nil {
			if snap.Strategy == nil {
				snap.Strategy = p.strategy
			} else if !snap.Strategy.same(*p.strategy) {
				snap.Disagree = true
			}
		}
		total.waitSum += p.waitSum
		total.waitCount += p.waitCount
		total.holdSum += p.holdSum
		total.holdCount += p.holdCount
		snap.Instances = append(snap.Instances, iv)
	}
	// The audit from the first instance that answered.
	actx, acancel := context.WithTimeout(ctx, time.Second)
	defer acancel()
	for i, c := range insts {
		if polls[i].err != nil {
			continue
		}
		var a stock.Audit
		_, err := s.adminGet(actx, c.URL(), "/admin/audit?goods_id="+itoa(s.opts.GoodsID), st.AdminToken, &a)
		if errors.Is(err, errGoodsNotFound) {
			snap.GoodsMissing = true
			snap.Errors = append(snap.Errors, fmt.Sprintf("goods %d does not exist yet: press Reset to create it", s.opts.GoodsID))
			break
		}
		if err != nil {
			snap.Errors = append(snap.Errors, "audit: "+err.Error())
			continue
		}
		snap.Audit = &a
		total.sold = a.SoldQty
		for j := range snap.Instances {
			snap.Instances[j].Sold = a.PerInstance[snap.Instances[j].Name]
		}
		break
	}
	if snap.Audit == nil && !snap.GoodsMissing && len(insts) > 0 {
		snap.Errors = append(snap.Errors, "no instance answered: the stock figures are not current")
	}

	s.mu.Lock()
	snap.Burst = s.burst.clone()
	if snap.Audit != nil {
		s.rates(&snap, total)
	}
	snap.Rates = slices.Clone(s.rate)
	s.mu.Unlock()

	evs := s.events.since(nowNS, nowNS-int64(Window))
	snap.Lock.fromEvents(evs)
	snap.Timeline = timeline(evs, st.InstanceNames(), nowNS)
	b, err := json.Marshal(snap)
	if err != nil { // cannot happen with these types
		s.log.Printf("encode snapshot: %v", err)
		return []byte(`{}`)
	}
	return b
}

// rates derives sales per second and the /metrics averages from the
// polls of the last rateSpan (s.mu held).
func (s *Server) rates(snap *Snapshot, cur sample) {
	if n := len(s.hist); n > 0 && (cur.sold < s.hist[n-1].sold || cur.waitCount < s.hist[n-1].waitCount) {
		s.hist = nil // a reset or a restarted instance: start over
	}
	s.hist = append(s.hist, cur)
	for len(s.hist) > 1 && cur.at.Sub(s.hist[0].at) > rateSpan {
		s.hist = s.hist[1:]
	}
	old := s.hist[0]
	if dt := cur.at.Sub(old.at).Seconds(); dt > 0.2 {
		snap.SalesPerS = float64(cur.sold-old.sold) / dt
	}
	if dc := cur.waitCount - old.waitCount; dc > 0 {
		snap.Lock.MetricsWait = ms((cur.waitSum - old.waitSum) / dc * 1e3)
	}
	if dc := cur.holdCount - old.holdCount; dc > 0 {
		snap.Lock.MetricsHold = ms((cur.holdSum - old.holdSum) / dc * 1e3)
	}
	s.rate = append(s.rate, math.Round(snap.SalesPerS*10)/10)
	if len(s.rate) > 120 {
		s.rate = s.rate[len(s.rate)-120:]
	}
}

// fromEvents fills the percentiles from the lock events.
func (l *LockView) fromEvents(evs []stock.Event) {
	var waits, holds []float64
	for _, ev := range evs {
		if ev.Kind == stock.EventAcquired {
			waits = append(waits, float64(ev.WaitedNS)/1e6)
		}
	}
	for _, sec := range lockcheck.Sections(evs) {
		if sec.AcquiredNS > 0 && sec.ReleasedNS >= sec.AcquiredNS {
			holds = append(holds, float64(sec.ReleasedNS-sec.AcquiredNS)/1e6)
		}
	}
	l.Acquisitions = len(waits)
	l.WaitP50, l.WaitP99 = quantile(waits, 0.5), quantile(waits, 0.99)
	l.HoldP50, l.HoldP99 = quantile(holds, 0.5), quantile(holds, 0.99)
}

// quantile is the nearest-rank q-quantile of xs (nil when empty).
func quantile(xs []float64, q float64) *float64 {
	if len(xs) == 0 {
		return nil
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	i := int(math.Ceil(q*float64(len(s)))) - 1
	return ms(s[min(max(i, 0), len(s)-1)])
}

func ms(v float64) *float64 {
	r := math.Round(v*1000) / 1000
	return &r
}

// timeline builds the race timeline of evs: one lane per instance (the
// stack's, then any other seen), every section whose span meets the
// window, red when it overlaps another (lockcheck.Overlaps: both read the
// stock before the other's commit).
func timeline(evs []stock.Event, lanes []string, nowNS int64) TimelineView {
	tv := TimelineView{WindowMS: float64(Window.Milliseconds()), Lanes: slices.Clone(lanes), Sections: []SectionView{}, Overlaps: [][2]float64{}}
	secs := lockcheck.Sections(evs)
	red := map[[2]string]bool{}
	var spans [][2]int64
	for _, o := range lockcheck.Overlaps(secs) {
		red[[2]string{o.A.Instance, o.A.Purchase}] = true
		red[[2]string{o.B.Instance, o.B.Purchase}] = true
		spans = append(spans, [2]int64{o.FromNS, o.ToNS})
	}
	// The overlapping intervals merged (n racing purchases make up to
	// n² pairs).
	slices.SortFunc(spans, func(a, b [2]int64) int { return cmp.Compare(a[0], b[0]) })
	for _, sp := range spans {
		if n := len(tv.Overlaps); n > 0 && rel(sp[0], nowNS) <= tv.Overlaps[n-1][1] {
			tv.Overlaps[n-1][1] = max(tv.Overlaps[n-1][1], rel(sp[1], nowNS))
			continue
		}
		tv.Overlaps = append(tv.Overlaps, [2]float64{rel(sp[0], nowNS), rel(sp[1], nowNS)})
	}
	lane := map[string]int{}
	for i, n := range tv.Lanes {
		lane[n] = i
	}
	from := nowNS - int64(Window)
	for _, sec := range secs {
		start := cmp.Or(sec.AcquiredNS, sec.ReadNS)
		end := max(sec.ReleasedNS, sec.EndNS)
		if start == 0 || (end != 0 && end < from) {
			continue
		}
		l, ok := lane[sec.Instance]
		if !ok {
			l = len(tv.Lanes)
			lane[sec.Instance] = l
			tv.Lanes = append(tv.Lanes, sec.Instance)
		}
		r := red[[2]string{sec.Instance, sec.Purchase}]
		if r {
			tv.Overlapping++
		}
		tv.Sections = append(tv.Sections, SectionView{Lane: l, A: relp(sec.AcquiredNS, nowNS), R: relp(sec.ReadNS, nowNS),
			E: relp(sec.EndNS, nowNS), L: relp(sec.ReleasedNS, nowNS), OK: sec.Committed, Red: r})
	}
	if n := len(tv.Sections); n > maxSections { // the latest ones
		tv.Sections = tv.Sections[n-maxSections:]
	}
	return tv
}

// maxSections bounds the sections a snapshot carries.
const maxSections = 2000

// rel is t relative to now in ms, rounded to 10 µs.
func rel(t, now int64) float64 { return math.Round(float64(t-now)/1e4) / 100 }

func relp(t, now int64) *float64 {
	if t == 0 {
		return nil
	}
	v := rel(t, now)
	return &v
}
