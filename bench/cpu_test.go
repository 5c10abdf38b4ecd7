package bench

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/seckill-lab/seckill/bench/fleet"
)

// TestCPUSince: per request, by group, over the processes present at both
// samples; a process restarted between them (another incarnation) counts
// for neither; a sampler that failed gives no figure.
func TestCPUSince(t *testing.T) {
	ms := time.Millisecond
	m0 := cpuMark{procs: []fleet.CPUSample{
		{Group: "mysql", Process: "mariadb/10/1", CPU: 100 * ms},
		{Group: "instance", Process: "inst-1/20/1", CPU: 50 * ms},
		{Group: "instance", Process: "inst-2/21/1", CPU: 50 * ms},
	}, self: 10 * ms, busy: 10, idle: 10}
	m1 := cpuMark{procs: []fleet.CPUSample{
		{Group: "mysql", Process: "mariadb/10/1", CPU: 300 * ms},
		{Group: "instance", Process: "inst-1/20/1", CPU: 150 * ms},
		{Group: "instance", Process: "inst-2/22/9", CPU: 5 * ms}, // killed and restarted
	}, self: 60 * ms, busy: 13, idle: 11}
	u := cpuSince(m0, m1, 100)
	if u == nil {
		t.Fatal("no CPU use")
	}
	want := map[string]float64{"mysql": 2000, "instance": 1000, "bench": 500}
	for g, v := range want {
		if u.PerRequestUS[g] != v {
			t.Errorf("%s: %v µs per request, want %v (all: %v)", g, u.PerRequestUS[g], v, u.PerRequestUS)
		}
	}
	if u.TotalUS != 3500 || u.MachineBusy != 0.75 || u.SecondsCPU != 3 {
		t.Errorf("total %v µs, busy %v, %v CPU s; want 3500, 0.75, 3", u.TotalUS, u.MachineBusy, u.SecondsCPU)
	}
	// A machine busy the whole time is 1, never above: CI saw
	// 1.0000000000632692 when busy and idle were subtracted as sums.
	if u := cpuSince(cpuMark{busy: 0.1, idle: 0.2}, cpuMark{busy: 0.2, idle: 0.2}, 1); u == nil || u.MachineBusy != 1 {
		t.Errorf("fully busy: %+v, want machine busy 1", u)
	}
	// iowait, counted as idle, can step back; the share stays within 1.
	if u := cpuSince(cpuMark{busy: 1, idle: 2}, cpuMark{busy: 2, idle: 1.9}, 1); u == nil || u.MachineBusy != 1 {
		t.Errorf("idle stepping back: %+v, want machine busy 1", u)
	}
	m1.err = errTest
	if u := cpuSince(m0, m1, 100); u != nil {
		t.Errorf("a failed sample gave %+v", u)
	}
	if u := cpuSince(m0, cpuMark{busy: 13, idle: 11}, 0); u != nil {
		t.Errorf("no request gave %+v", u)
	}
}

var errTest = errors.New("sampler failed")

// TestCPUTable: one row per strategy with the medians of its repeats, the
// groups in the usual order and a group nobody used left out.
func TestCPUTable(t *testing.T) {
	use := func(db, inst, idle, busy float64) *CPUUse {
		return &CPUUse{PerRequestUS: map[string]float64{"instance": inst, "mysql": db, "dashboard": idle, "bench": 100},
			TotalUS: db + inst + idle + 100, MachineBusy: busy, CPUs: 2}
	}
	runs := []RunResult{
		{Strategy: "sql-atomic", Concurrency: 50, CPU: use(500, 400, 0, 0.9)},
		{Strategy: "sql-atomic", Concurrency: 50, CPU: use(700, 450, 0, 0.95)},
		{Strategy: "sql-atomic", Concurrency: 50, CPU: use(600, 420, 0, 0.97)},
		{Strategy: "redis-stream", Concurrency: 50, CPU: use(150, 300, 0.2, 0.99)},
		{Strategy: "none", Concurrency: 50}, // not measured
	}
	tb := cpuTable(runs)
	if got := strings.Join(tb.Header, ","); got != "strategy,mysql,instance,bench,total µs,machine busy" {
		t.Errorf("header %s", got)
	}
	if len(tb.Rows) != 2 {
		t.Fatalf("rows %v", tb.Rows)
	}
	if got := strings.Join(tb.Rows[0], ","); got != "sql-atomic,600,420,100,1120,95% of 2" {
		t.Errorf("sql-atomic row %s", got)
	}
	if got := strings.Join(tb.Rows[1], ","); got != "redis-stream,150,300,100,550,99% of 2" {
		t.Errorf("redis-stream row %s", got)
	}
}

// TestDBCeilingMedian: the ceiling over rounds is the median measurement,
// its latencies come with it, and the rounds stay in the order taken.
func TestDBCeilingMedian(t *testing.T) {
	m := func(tps, p50 float64) DBCeiling {
		return DBCeiling{Transactions: 100, Concurrency: 5, TPS: tps, P50MS: p50}
	}
	cases := []struct {
		name      string
		tps       []float64
		want, p50 float64
	}{
		{"one", []float64{2000}, 2000, 2},
		{"three", []float64{2500, 3000, 1000}, 2500, 2.5},
		{"four, mean of the middle two", []float64{1000, 4000, 2000, 3000}, 2500, 2},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := m(tc.tps[0], tc.tps[0]/1000)
			for _, v := range tc.tps[1:] {
				c.add(m(v, v/1000))
			}
			if c.TPS != tc.want || c.P50MS != tc.p50 {
				t.Errorf("TPS %.0f p50 %.1f, want %.0f and %.1f", c.TPS, c.P50MS, tc.want, tc.p50)
			}
			if len(tc.tps) > 1 && !slices.Equal(c.RoundsTPS, tc.tps) {
				t.Errorf("rounds %v, want %v", c.RoundsTPS, tc.tps)
			}
			if len(tc.tps) == 1 && c.RoundsTPS != nil {
				t.Errorf("one measurement lists rounds %v", c.RoundsTPS)
			}
		})
	}
}
