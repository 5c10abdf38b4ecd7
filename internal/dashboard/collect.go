package dashboard

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/seckill-lab/seckill/internal/server"
	"github.com/seckill-lab/seckill/internal/stack"
	"github.com/seckill-lab/seckill/stock"
	"github.com/seckill-lab/seckill/stock/catalog"
)

// The collector: what a snapshot holds (the views the page draws) and Run,
// which polls the fleet and broadcasts a snapshot while a browser watches.
// The instances' event streams are followed in follow.go, polled in
// metrics.go; the race timeline is timeline.go; the browsers' stream is
// hub.go.

// Snapshot is what the page draws, sent every poll.
type Snapshot struct {
	At      time.Time `json:"at"`
	GoodsID int64     `json:"goods_id"`
	Stack   string    `json:"stack"`
	Nginx   string    `json:"nginx"`
	Proxy   bool      `json:"proxy"`
	// Conditions are what the figures run under: the links' round trip
	// and the servers' durability (`seckill up --rtt --durability`).
	Conditions string       `json:"conditions"`
	Audit      *stock.Audit `json:"audit"` // nil when no instance answered
	// GoodsMissing: the instances answered that the goods does not exist.
	GoodsMissing bool           `json:"goods_missing"`
	SalesPerS    float64        `json:"sales_per_s"`
	Rates        []float64      `json:"rates"` // sales per second, one per poll, oldest first
	Instances    []InstanceView `json:"instances"`
	Strategy     *StrategyView  `json:"strategy"` // the first answering instance's
	Disagree     bool           `json:"disagree"`
	// Knobs are the knobs of Strategy that differ from its defaults
	// (stock.Config.Knobs): the header shows every one.
	Knobs    []stock.Knob `json:"knobs"`
	Lock     LockView     `json:"lock"`
	Timeline TimelineView `json:"timeline"`
	// LastBurst is the race timeline of the latest burst, from its first
	// purchase to its last: what the page keeps on screen after it (nil
	// before any burst, and after a reset).
	LastBurst  *TimelineView       `json:"last_burst"`
	Faults     []stack.ActiveFault `json:"faults"`
	Targets    []string            `json:"targets"` // components a pause can take
	Strategies []StrategyInfo      `json:"strategies"`
	Burst      *burstStatus        `json:"burst,omitempty"`
	Errors     []string            `json:"errors"`
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

// StrategyView is an instance's GET /admin/strategy answer: the setting
// it runs and its name.
type StrategyView = stock.InstanceConfig

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
func linkOf(s catalog.Strategy) string { return server.LinkOfServer(string(s.Server)) }

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
		// Nobody watches: follow nothing, unless a burst runs, whose lock
		// events make the last burst's timeline for the next page opened.
		watched := s.watchers() > 0
		if !watched && !s.bursting.Load() && !s.burstUncached() {
			s.syncSubs(ctx, nil)
			continue
		}
		st, _ := s.state()
		s.syncSubs(ctx, st)
		if !watched {
			s.lastBurst(st.InstanceNames(), stock.MonoNow()) // kept once settled
			continue
		}
		s.broadcast(s.snapshot(ctx))
	}
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
	describeStack(&snap, st)

	insts := st.Instances()
	polls := s.pollFleet(ctx, st, insts)
	total := sample{at: now}
	for i, c := range insts {
		snap.addInstance(c, polls[i])
		total.waitSum += polls[i].waitSum
		total.waitCount += polls[i].waitCount
		total.holdSum += polls[i].holdSum
		total.holdCount += polls[i].holdCount
	}
	if snap.Strategy != nil {
		snap.Knobs = snap.Strategy.Config.Knobs()
	}
	s.readAudit(ctx, &snap, st, insts, polls)

	// A new setting starts the cards afresh: the sales rate, its
	// sparkline and the lock figures count from the switch, so no figure
	// of the old strategy sits beside the new one's name.
	s.mu.Lock()
	if snap.Strategy != nil && snap.Strategy.Config.String() != s.setting {
		if s.setting != "" {
			s.hist, s.rate, s.settingNS, s.previous = nil, nil, nowNS, s.strategy
		}
		s.setting, s.strategy = snap.Strategy.Config.String(), string(snap.Strategy.Config.Name)
	}
	settingNS, strategy, previous := s.settingNS, s.strategy, s.previous
	s.mu.Unlock()
	if snap.Audit != nil {
		total.sold = snap.Audit.SoldQty
	}

	s.mu.Lock()
	snap.Burst = s.burst.clone()
	if b := snap.Burst; b != nil && b.Running {
		b.ElapsedMS = float64(time.Since(b.started).Microseconds()) / 1e3
	}
	if snap.Audit != nil {
		s.rates(&snap, total)
	}
	snap.Rates = slices.Clone(s.rate)
	s.mu.Unlock()

	evs := s.events.since(nowNS, nowNS-int64(Window))
	snap.Lock.fromEvents(s.events.since(nowNS, max(nowNS-int64(Window), settingNS)))
	snap.Timeline = timeline(evs, st.InstanceNames(), nowNS-int64(Window), nowNS)
	if settingNS > nowNS-int64(Window) {
		at := float64(settingNS-nowNS) / 1e6
		snap.Timeline.SwitchMS, snap.Timeline.SwitchFrom, snap.Timeline.SwitchTo = &at, previous, strategy
	}
	snap.LastBurst = s.lastBurst(st.InstanceNames(), nowNS)
	b, err := json.Marshal(snap)
	if err != nil { // cannot happen with these types
		s.log.Printf("encode snapshot: %v", err)
		return []byte(`{}`)
	}
	return b
}

// describeStack fills in what snap says of the stack itself: the
// strategies, the stack's directory, nginx and proxy, its conditions, the
// components a fault can target and the faults active now.
func describeStack(snap *Snapshot, st *stack.State) {
	for _, info := range catalog.Extended() { // the registry and the exercises' locks
		snap.Strategies = append(snap.Strategies, StrategyInfo{info.Name, info.Flawed, info.Tokens, info.Renews, info.Summary, linkOf(info)})
	}
	snap.Stack, snap.Nginx, snap.Proxy = st.Dir, st.NginxURL(), st.Proxy
	snap.Conditions = st.ConditionsLine()
	for _, c := range st.Components {
		if c.Kind != stack.KindDashboard {
			snap.Targets = append(snap.Targets, c.Name)
		}
	}
	if fs, err := stack.ActiveFaults(st.Dir); err == nil && fs != nil {
		snap.Faults = fs
	}
}

// pollFleet polls every instance at once, within a second.
func (s *Server) pollFleet(ctx context.Context, st *stack.State, insts []stack.Component) []poll {
	pctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	polls := make([]poll, len(insts))
	var wg sync.WaitGroup
	for i, c := range insts {
		wg.Go(func() { polls[i] = s.pollInstance(pctx, c.URL(), st.AdminToken) })
	}
	wg.Wait()
	return polls
}

// addInstance adds instance c as poll p found it, and notes when its
// strategy disagrees with the first one's.
func (snap *Snapshot) addInstance(c stack.Component, p poll) {
	iv := InstanceView{Name: c.Name, URL: c.URL(), Up: p.err == nil, Strategy: p.strategy}
	if p.err != nil {
		iv.Error = p.err.Error()
		snap.Errors = append(snap.Errors, c.Name+": "+p.err.Error())
	}
	if p.strategy != nil {
		if snap.Strategy == nil {
			snap.Strategy = p.strategy
		} else if !snap.Strategy.Equal(p.strategy.Config) {
			snap.Disagree = true
		}
	}
	snap.Instances = append(snap.Instances, iv)
}

// readAudit reads the goods' audit from the first instance that answered
// its poll, with each instance's sales; a missing goods or no answer is
// an error of snap's.
func (s *Server) readAudit(ctx context.Context, snap *Snapshot, st *stack.State, insts []stack.Component, polls []poll) {
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
		for j := range snap.Instances {
			snap.Instances[j].Sold = a.PerInstance[snap.Instances[j].Name]
		}
		break
	}
	if snap.Audit == nil && !snap.GoodsMissing && len(insts) > 0 {
		snap.Errors = append(snap.Errors, "no instance answered: the stock figures are not current")
	}
}

// burstSettle is how long after a burst's end its lock events may still
// arrive; the last burst's timeline is kept as it was then.
const burstSettle = time.Second

// lastBurst is the race timeline of the latest finished burst: its span
// padded by a twentieth on each side (the timeline's width fits the
// burst), from the event log until burstSettle after its end, then kept.
func (s *Server) lastBurst(lanes []string, nowNS int64) *TimelineView {
	// The burst's fields are read under s.mu: burstRun writes them
	// (Running, endNS) under it when the burst ends.
	s.mu.Lock()
	b, kept := s.burst, s.burstTL
	over := b != nil && !b.Running && b.endNS != 0
	var startNS, endNS int64
	if over {
		startNS, endNS = b.startNS, b.endNS
	}
	s.mu.Unlock()
	if !over {
		return nil
	}
	if kept != nil {
		return kept
	}
	pad := max((endNS-startNS)/20, int64(10*time.Millisecond))
	from, to := startNS-pad, endNS+pad
	tv := timeline(s.events.since(nowNS, from), lanes, from, to)
	if nowNS > endNS+int64(burstSettle) {
		s.mu.Lock()
		if s.burst == b {
			s.burstTL = &tv
		}
		s.mu.Unlock()
	}
	return &tv
}

// burstUncached reports whether the latest burst is over and its
// timeline not yet kept.
func (s *Server) burstUncached() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.burst != nil && !s.burst.Running && s.burstTL == nil
}
