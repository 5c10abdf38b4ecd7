package bench

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/seckill-lab/seckill/bench/adminclient"
	"github.com/seckill-lab/seckill/stock"
)

// Errors a user can hit against the fleet; compare with errors.Is. The
// admin API's are internal/adminclient's.
var (
	ErrUnreachable    = adminclient.ErrUnreachable
	ErrUnauthorized   = adminclient.ErrUnauthorized
	ErrNoToken        = adminclient.ErrNoToken
	ErrAdminResponse  = adminclient.ErrAdminResponse
	ErrDisagree       = errors.New("instances disagree on the strategy")
	ErrUnknownOnFleet = errors.New("the fleet does not know the strategy")
)

// AdminError is an error answer of an instance's admin API (see
// adminclient.Error).
type AdminError = adminclient.Error

// AuditReply is the answer of GET /admin/audit.
type AuditReply struct {
	GoodsID      int64          `json:"goods_id"`
	InitialStock int            `json:"initial_stock"`
	Stock        int            `json:"stock"`
	Orders       int            `json:"orders"`
	SoldQty      int            `json:"sold_qty"`
	Oversold     int            `json:"oversold"`
	LostUpdates  int            `json:"lost_updates"`
	PerInstance  map[string]int `json:"per_instance"`
}

// Admin is a client of the instances' admin API for tools besides the
// bench (the CLI's demo commands), with the bench's errors: ErrUnreachable,
// ErrUnauthorized, ErrNoToken, an *AdminError for any other answer but 200.
type Admin struct{ a *admin }

// NewAdmin returns a client that sends token as the bearer token.
func NewAdmin(token string) *Admin { return &Admin{newAdmin(token)} }

// Do sends one request to base+path, in (when not nil) as the JSON body,
// and decodes a 200 answer into out (when not nil).
func (c *Admin) Do(ctx context.Context, method, base, path string, in, out any) error {
	return c.a.do(ctx, method, base, path, in, out)
}

// Reset sets the goods' stock and deletes its orders (POST /admin/reset).
// It returns the lock backends the reset skipped because they were down.
func (c *Admin) Reset(ctx context.Context, base string, goods int64, stock int) ([]ResetSkip, error) {
	return c.a.reset(ctx, base, goods, stock)
}

// Audit reads the goods' audit (GET /admin/audit).
func (c *Admin) Audit(ctx context.Context, base string, goods int64) (AuditReply, error) {
	return c.a.audit(ctx, base, goods)
}

// admin talks to the admin API of the instances.
type admin struct {
	c *adminclient.Client
}

func newAdmin(token string) *admin { return &admin{c: adminclient.New(token)} }

// do sends one admin request to base+path and decodes a 200 answer into out.
func (a *admin) do(ctx context.Context, method, base, path string, in, out any) error {
	return a.c.Do(ctx, method, base, path, in, out)
}

// getStrategy returns the strategy the instance at base runs.
func (a *admin) getStrategy(ctx context.Context, base string) (stock.InstanceConfig, error) {
	var c stock.InstanceConfig
	err := a.do(ctx, http.MethodGet, base, "/admin/strategy", nil, &c)
	return c, err
}

// setStrategy switches every instance to cfg, then reads every instance
// back and fails with ErrDisagree unless all report cfg.Name. It returns
// the configuration the first instance reports (the effective TTL and
// wait budget when cfg left them to the service's defaults).
func (a *admin) setStrategy(ctx context.Context, instances []string, cfg stock.Config) (stock.InstanceConfig, error) {
	var first stock.InstanceConfig
	for _, base := range instances {
		var got stock.InstanceConfig
		if err := a.do(ctx, http.MethodPut, base, "/admin/strategy", cfg, &got); err != nil {
			if ae := (*AdminError)(nil); errors.As(err, &ae) && ae.Code == "unknown_strategy" {
				return first, fmt.Errorf("instance %s: %w %q: %v", base, ErrUnknownOnFleet, cfg.Name, err)
			}
			return first, fmt.Errorf("switch to %s: %w", cfg.Name, err)
		}
	}
	return a.verifyStrategy(ctx, instances, cfg.Name)
}

// verifyStrategy asks every instance for its strategy and fails with
// ErrDisagree unless all report name. It returns the first instance's
// configuration.
func (a *admin) verifyStrategy(ctx context.Context, instances []string, name string) (stock.InstanceConfig, error) {
	var first stock.InstanceConfig
	var parts []string
	agree := true
	for i, base := range instances {
		got, err := a.getStrategy(ctx, base)
		if err != nil {
			return first, fmt.Errorf("verify strategy %s: %w", name, err)
		}
		if i == 0 {
			first = got
		}
		inst := got.Instance
		if inst == "" {
			inst = "inst-" + strconv.Itoa(i+1)
		}
		parts = append(parts, inst+"="+got.Name)
		if got.Name != name {
			agree = false
		}
	}
	if !agree {
		return first, fmt.Errorf("%w: %s", ErrDisagree, strings.Join(parts, " "))
	}
	return first, nil
}

// ResetSkip is a strategy whose lock state (or stock mirror) a reset could
// not clear because its server did not answer: the "skipped" entries of
// POST /admin/reset.
type ResetSkip struct {
	Strategy string `json:"strategy"`
	Server   string `json:"server"`
	Reason   string `json:"reason"`
}

func (s ResetSkip) String() string {
	return fmt.Sprintf("%s (on %s): %s", s.Strategy, s.Server, s.Reason)
}

// ErrResetSkipped: the reset before a run could not clear the lock state
// of the strategy the run is for.
var ErrResetSkipped = errors.New("the reset could not clear the lock state of the strategy to run")

// reset sets the goods' stock, deletes its orders and clears the lock
// state; it returns the strategies whose backend was down and skipped.
func (a *admin) reset(ctx context.Context, base string, goods int64, stock int) ([]ResetSkip, error) {
	in := map[string]any{"goods_id": goods, "stock": stock}
	var out struct {
		Skipped []ResetSkip `json:"skipped"`
	}
	if err := a.do(ctx, http.MethodPost, base, "/admin/reset", in, &out); err != nil {
		return nil, fmt.Errorf("reset goods %d: %w", goods, err)
	}
	return out.Skipped, nil
}

// checkReset fails with ErrResetSkipped when the reset skipped strategy's
// backend, and otherwise returns one warning per skipped backend (for the
// progress output and the run's record).
func checkReset(strategy string, skipped []ResetSkip) (warnings []string, err error) {
	for _, sk := range skipped {
		if sk.Strategy == strategy {
			return nil, fmt.Errorf("%w: %s; bring %s back (seckill status, seckill restart) and run again", ErrResetSkipped, sk, sk.Server)
		}
	}
	// One warning per server: its strategies and the first reason.
	var servers []string
	byServer := map[string][]ResetSkip{}
	for _, sk := range skipped {
		if _, ok := byServer[sk.Server]; !ok {
			servers = append(servers, sk.Server)
		}
		byServer[sk.Server] = append(byServer[sk.Server], sk)
	}
	for _, srv := range servers {
		sks := byServer[srv]
		names := make([]string, len(sks))
		for i, sk := range sks {
			names[i] = sk.Strategy
		}
		warnings = append(warnings, fmt.Sprintf("reset skipped %s (on %s: %s); %s does not use it, the run goes on",
			strings.Join(names, ", "), srv, sks[0].Reason, strategy))
	}
	return warnings, nil
}

// audit reads the goods' audit.
func (a *admin) audit(ctx context.Context, base string, goods int64) (AuditReply, error) {
	var r AuditReply
	if err := a.do(ctx, http.MethodGet, base, "/admin/audit?goods_id="+strconv.FormatInt(goods, 10), nil, &r); err != nil {
		return r, fmt.Errorf("audit goods %d: %w", goods, err)
	}
	return r, nil
}

// orders reads the request ids of the goods' orders.
func (a *admin) orders(ctx context.Context, base string, goods int64) ([]string, error) {
	var r struct {
		RequestIDs []string `json:"request_ids"`
	}
	if err := a.do(ctx, http.MethodGet, base, "/admin/orders?goods_id="+strconv.FormatInt(goods, 10), nil, &r); err != nil {
		return nil, fmt.Errorf("orders of goods %d: %w", goods, err)
	}
	return r.RequestIDs, nil
}

// lockStats are histogram sums and counts summed over the fleet.
type lockStats struct {
	WaitSum, WaitCount float64
	HoldSum, HoldCount float64
	// Backend is seckill_lock_backend_events_total by event (Redlock's
	// rounds).
	Backend map[string]float64
}

func (s lockStats) sub(o lockStats) lockStats {
	d := lockStats{s.WaitSum - o.WaitSum, s.WaitCount - o.WaitCount, s.HoldSum - o.HoldSum, s.HoldCount - o.HoldCount, nil}
	for k, v := range s.Backend {
		if v -= o.Backend[k]; v > 0 {
			if d.Backend == nil {
				d.Backend = map[string]float64{}
			}
			d.Backend[k] = v
		}
	}
	return d
}

// scrapeLocks sums seckill_lock_wait_seconds and seckill_lock_hold_seconds
// (label strategy=strategy) over every instance's /metrics.
func (a *admin) scrapeLocks(ctx context.Context, instances []string, strategy string) (lockStats, error) {
	var total lockStats
	for _, base := range instances {
		fams, err := a.metrics(ctx, base)
		if err != nil {
			return total, err
		}
		ws, wc := histogramFor(fams["seckill_lock_wait_seconds"], strategy)
		hs, hc := histogramFor(fams["seckill_lock_hold_seconds"], strategy)
		total.WaitSum += ws
		total.WaitCount += wc
		total.HoldSum += hs
		total.HoldCount += hc
		for event, v := range countersFor(fams["seckill_lock_backend_events_total"], strategy, "event") {
			if total.Backend == nil {
				total.Backend = map[string]float64{}
			}
			total.Backend[event] += v
		}
	}
	return total, nil
}

// metrics scrapes and parses one instance's /metrics.
func (a *admin) metrics(ctx context.Context, base string) (map[string]*dto.MetricFamily, error) {
	raw, err := a.c.Get(ctx, base, "/metrics")
	if err != nil {
		return nil, fmt.Errorf("scrape %s: %w", base, err)
	}
	return ParseMetrics(bytes.NewReader(raw))
}

// ParseMetrics parses Prometheus text exposition.
func ParseMetrics(r io.Reader) (map[string]*dto.MetricFamily, error) {
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(r)
	if err != nil {
		return nil, fmt.Errorf("parse metrics: %w", err)
	}
	return fams, nil
}

// countersFor sums the counter series of fam whose strategy label is
// strategy, by the value of label by.
func countersFor(fam *dto.MetricFamily, strategy, by string) map[string]float64 {
	out := map[string]float64{}
	for _, m := range fam.GetMetric() {
		var match bool
		var key string
		for _, l := range m.GetLabel() {
			switch l.GetName() {
			case "strategy":
				match = l.GetValue() == strategy
			case by:
				key = l.GetValue()
			}
		}
		if match && m.GetCounter() != nil {
			out[key] += m.GetCounter().GetValue()
		}
	}
	return out
}

// histogramFor sums the sample sum and count of the histogram series of
// fam whose strategy label is strategy.
func histogramFor(fam *dto.MetricFamily, strategy string) (sum, count float64) {
	if fam == nil {
		return 0, 0
	}
	for _, m := range fam.GetMetric() {
		match := false
		for _, l := range m.GetLabel() {
			if l.GetName() == "strategy" && l.GetValue() == strategy {
				match = true
			}
		}
		if !match || m.GetHistogram() == nil {
			continue
		}
		sum += m.GetHistogram().GetSampleSum()
		count += float64(m.GetHistogram().GetSampleCount())
	}
	return sum, count
}
