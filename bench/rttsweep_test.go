package bench

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/seckill-lab/seckill/bench/fleet"
)

// TestRTTSweepPages: the conditions cross (modes, then batch sizes), and the
// sweep's page names each point's condition and charts over what varies.
func TestRTTSweepPages(t *testing.T) {
	pts := CrossBatches(CrossModes([]RTTPoint{{Profile: "loopback"}, {Profile: "cross-zone", RTT: 2 * time.Millisecond}}, []string{ModePurchase}), []int{1, 32})
	if len(pts) != 4 || pts[0].Batch != 1 || pts[3].Batch != 32 || pts[3].RTT != 2*time.Millisecond || pts[2].Mode != ModePurchase {
		t.Fatalf("crossed points %+v", pts)
	}
	st := func(v float64) *Stat { return &Stat{Median: v, Min: v, Max: v} }
	tests := []struct {
		name     string
		batches  []int
		header   string
		chartFor string
	}{
		{"over the round trip", []int{1, 1}, "cross-zone 2.10 ms", "by round trip"},
		{"over the batch size", []int{1, 32}, "cross-zone 2.10 ms, batch 32", "by batch size"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			sw := &RTTSweep{Runs: 1, Environment: Environment{Durability: "default"},
				Points: []fleet.RTT{{Profile: "loopback", MeasuredMS: 0.05}, {Profile: "cross-zone", RequestedMS: 2, MeasuredMS: 2.1}},
				Modes:  []string{ModePurchase, ModePurchase}, Batches: tc.batches, Dirs: []string{"rtt-1", "rtt-2"},
				Series: []RTTSeries{{Label: "redis", ExpectedCorrect: true, OKPerSec: []*Stat{st(400), st(44)}, P50MS: []*Stat{st(10), st(90)},
					P99MS: []*Stat{st(20), st(300)}, Oversold: []*Stat{st(0), st(0)}}}}
			dir := t.TempDir()
			if err := WriteRTTSweep(dir, sw); err != nil {
				t.Fatal(err)
			}
			md, _ := os.ReadFile(filepath.Join(dir, "rtt-sweep.md"))
			html, _ := os.ReadFile(filepath.Join(dir, "rtt-sweep.html"))
			for _, want := range []string{"| " + tc.header + " |", "p99 latency (ms)", "rtt-2"} {
				if !strings.Contains(string(md), want) {
					t.Errorf("rtt-sweep.md lacks %q:\n%s", want, md)
				}
			}
			if !strings.Contains(string(html), tc.chartFor) || !strings.Contains(string(html), `href="rtt-2/report.html"`) || strings.Contains(string(html), "http://") {
				t.Errorf("rtt-sweep.html: want a chart %s, a link to each point's report and no external reference", tc.chartFor)
			}
		})
	}
}
