package dashboard

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/seckill-lab/seckill/bench"
	"github.com/seckill-lab/seckill/bench/adminclient"
	"github.com/seckill-lab/seckill/bench/lockcheck"
	"github.com/seckill-lab/seckill/stock"
)

// Polling the instances: their admin answers and /metrics, the fleet
// totals of one poll, and the rates and lock figures drawn from them.

// errGoodsNotFound: the instances do not know the dashboard's goods (no
// reset created it yet).
var errGoodsNotFound = errors.New("goods not found")

// rateSpan is how far back sales per second and the /metrics averages look.
const rateSpan = 3 * time.Second

// sample is one poll's fleet totals, for rates.
type sample struct {
	at                 time.Time
	sold               int64
	waitSum, waitCount float64
	holdSum, holdCount float64
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
