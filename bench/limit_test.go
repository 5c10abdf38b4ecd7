package bench

import "testing"

// TestLimitOf checks each rule of limitOf on one run's CPU figures.
func TestLimitOf(t *testing.T) {
	cpu := func(busy float64, us map[string]float64) []RunResult {
		total := 0.0
		for _, v := range us {
			total += v
		}
		return []RunResult{{CPU: &CPUUse{PerRequestUS: us, TotalUS: total, MachineBusy: busy, CPUs: 2}}}
	}
	sum := func(strategy string, rps float64) Summary {
		return Summary{Name: strategy, Strategy: strategy, ThroughputRPS: Stat{Median: rps}}
	}
	for _, tc := range []struct {
		name    string
		runs    []RunResult
		s       Summary
		ceiling float64
		want    string
	}{
		{"no CPU figures", []RunResult{{}}, sum("sql-atomic", 2000), 30000, ""},
		{"generator below 5x", cpu(0.5, map[string]float64{"mysql": 300}), sum("redis-stream", 8000), 30000, LimitLab},
		{"busy, lab heavy", cpu(0.95, map[string]float64{"mysql": 30, "redis": 40, "instance": 100, "nginx": 30, "bench": 50}), sum("redis-stream", 5000), 40000, LimitLab},
		{"busy, database heavy", cpu(0.9, map[string]float64{"mysql": 290, "instance": 150, "nginx": 40, "bench": 70}), sum("sql-atomic", 2400), 40000, LimitDatabase},
		{"busy, lock server heavy", cpu(0.9, map[string]float64{"mysql": 400, "etcd": 2000, "instance": 1600, "nginx": 100, "bench": 400}), sum("etcd", 300), 40000, LimitServer},
		{"idle, lock strategy", cpu(0.3, map[string]float64{"mysql": 600, "consul": 4000, "instance": 2000}), sum("consul", 40), 40000, LimitServer},
		{"idle, store strategy", cpu(0.5, map[string]float64{"mysql": 1300, "instance": 800}), sum("mysql-unique", 230), 40000, LimitDatabase},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l, ok := limitOf(tc.runs, tc.s, tc.ceiling)
			if got := map[bool]string{true: l.By}[ok]; got != tc.want {
				t.Errorf("limitOf = %q (%s), want %q", got, l.Why, tc.want)
			}
			if ok && l.Why == "" {
				t.Errorf("limitOf gave no reason")
			}
		})
	}
}
