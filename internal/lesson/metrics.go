package lesson

import (
	"bytes"
	"context"
	"fmt"

	dto "github.com/prometheus/client_model/go"

	"github.com/seckill-lab/seckill/bench"
	"github.com/seckill-lab/seckill/bench/adminclient"
	"github.com/seckill-lab/seckill/internal/stack"
)

// watch is one strategy's watch events and lock acquisitions, summed over
// the fleet.
type watch struct{ watch, acquisitions float64 }

// watchCounts scrapes every instance's /metrics for the watch events
// (seckill_lock_watch_events_total) and the lock waits
// (seckill_lock_wait_seconds_count) of names.
func watchCounts(ctx context.Context, st *stack.State, names []string) (map[string]watch, error) {
	out := map[string]watch{}
	client := adminclient.New(st.AdminToken)
	for _, base := range st.InstanceURLs() {
		raw, err := client.Get(ctx, base, "/metrics")
		if err != nil {
			return nil, fmt.Errorf("scrape %s: %w", base, err)
		}
		fams, err := bench.ParseMetrics(bytes.NewReader(raw))
		if err != nil {
			return nil, err
		}
		for _, n := range names {
			w := out[n]
			w.watch += sum(fams["seckill_lock_watch_events_total"], n, func(m *dto.Metric) float64 { return m.GetCounter().GetValue() })
			w.acquisitions += sum(fams["seckill_lock_wait_seconds"], n, func(m *dto.Metric) float64 { return float64(m.GetHistogram().GetSampleCount()) })
			out[n] = w
		}
	}
	return out, nil
}

func sum(fam *dto.MetricFamily, strategy string, v func(*dto.Metric) float64) float64 {
	total := 0.0
	for _, m := range fam.GetMetric() {
		for _, l := range m.GetLabel() {
			if l.GetName() == "strategy" && l.GetValue() == strategy {
				total += v(m)
			}
		}
	}
	return total
}
