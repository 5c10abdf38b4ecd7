package bench

import (
	"math"
	"reflect"
	"strings"
	"testing"
)

func TestHistogramFromMetrics(t *testing.T) {
	text := `# HELP seckill_lock_wait_seconds Lock wait.
# TYPE seckill_lock_wait_seconds histogram
seckill_lock_wait_seconds_bucket{strategy="redis",le="0.01"} 3
seckill_lock_wait_seconds_bucket{strategy="redis",le="+Inf"} 4
seckill_lock_wait_seconds_sum{strategy="redis"} 0.5
seckill_lock_wait_seconds_count{strategy="redis"} 4
seckill_lock_wait_seconds_bucket{strategy="etcd",le="+Inf"} 2
seckill_lock_wait_seconds_sum{strategy="etcd"} 9
seckill_lock_wait_seconds_count{strategy="etcd"} 2
# TYPE seckill_purchases_total counter
seckill_purchases_total{outcome="ok",strategy="redis"} 4
`
	fams, err := ParseMetrics(strings.NewReader(text))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		strategy   string
		sum, count float64
	}{
		{"redis", 0.5, 4},
		{"etcd", 9, 2},
		{"none", 0, 0},
	}
	for _, tt := range tests {
		sum, count := histogramFor(fams["seckill_lock_wait_seconds"], tt.strategy)
		if math.Abs(sum-tt.sum) > 1e-9 || count != tt.count {
			t.Errorf("%s: sum, count = %v, %v; want %v, %v", tt.strategy, sum, count, tt.sum, tt.count)
		}
	}
	if s, c := histogramFor(fams["seckill_lock_hold_seconds"], "redis"); s != 0 || c != 0 {
		t.Errorf("missing family: %v %v", s, c)
	}
	before := lockStats{WaitSum: 1, WaitCount: 2, HoldSum: 3, HoldCount: 4, Backend: map[string]float64{"round_split": 5, "round_taken": 1}}
	after := lockStats{WaitSum: 2, WaitCount: 5, HoldSum: 3.5, HoldCount: 7, Backend: map[string]float64{"round_split": 9, "round_taken": 1, "round_acquired": 2}}
	want := lockStats{1, 3, 0.5, 3, map[string]float64{"round_split": 4, "round_acquired": 2}}
	if d := after.sub(before); !reflect.DeepEqual(d, want) {
		t.Errorf("delta = %+v, want %+v", d, want)
	}
	counters := "# TYPE seckill_lock_backend_events_total counter\n" +
		`seckill_lock_backend_events_total{event="round_split",strategy="redlock"} 7` + "\n" +
		`seckill_lock_backend_events_total{event="round_taken",strategy="redlock"} 3` + "\n" +
		`seckill_lock_backend_events_total{event="round_split",strategy="other"} 100` + "\n"
	cf, err := ParseMetrics(strings.NewReader(counters))
	if err != nil {
		t.Fatal(err)
	}
	if got := countersFor(cf["seckill_lock_backend_events_total"], "redlock", "event"); !reflect.DeepEqual(got, map[string]float64{"round_split": 7, "round_taken": 3}) {
		t.Errorf("countersFor = %v", got)
	}
	if _, err := ParseMetrics(strings.NewReader("not metrics {{{")); err == nil {
		t.Error("garbage parsed without error")
	}
}

func TestStatOf(t *testing.T) {
	tests := []struct {
		in   []float64
		want Stat
	}{
		{nil, Stat{}},
		{[]float64{5}, Stat{5, 5, 5}},
		{[]float64{3, 1, 2}, Stat{2, 1, 3}},
		{[]float64{4, 1, 2, 10}, Stat{3, 1, 10}},
	}
	for _, tt := range tests {
		if got := statOf(tt.in); got != tt.want {
			t.Errorf("statOf(%v) = %+v, want %+v", tt.in, got, tt.want)
		}
	}
	if got := fmtStat(Stat{2, 1, 3}, 3, "%.0f"); got != "2 (1–3)" {
		t.Errorf("fmtStat = %q", got)
	}
	if got := fmtStat(Stat{2, 2, 2}, 3, "%.0f"); got != "2" {
		t.Errorf("fmtStat = %q", got)
	}
}
