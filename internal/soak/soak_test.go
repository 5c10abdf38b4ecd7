package soak

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/seckill-lab/seckill/internal/testenv"
)

// TestGrowth: a series flat after the warm-up is no leak, whatever it did
// during the warm-up; one that keeps growing past 20% and its floor is.
func TestGrowth(t *testing.T) {
	mk := func(vals ...float64) []Sample {
		var out []Sample
		for i, v := range vals {
			out = append(out, Sample{AtS: float64(i * 10), RSSMiB: map[string]float64{"inst-1": v}, Goroutines: map[string]float64{}, OpenFDs: map[string]float64{}})
		}
		return out
	}
	tests := []struct {
		name    string
		samples []Sample
		leak    bool
	}{
		{"flat after a warm-up climb", mk(10, 30, 40, 41, 40, 41, 40, 41, 40, 41, 41, 40, 41), false},
		{"grows", mk(40, 40, 40, 45, 50, 55, 60, 65, 70, 75, 80, 85, 90), true},
		{"grows a little", mk(40, 40, 40, 41, 42, 43, 44, 45, 46, 47, 48, 49, 50), false},
		{"grows with its cache", cached(mk(100, 100, 100, 105, 110, 115, 120, 125, 130, 135, 140, 145, 150), 0, 50), false},
		{"grows past its cache", cached(mk(100, 100, 100, 105, 110, 115, 120, 125, 130, 135, 140, 145, 150), 0, 10), true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			g, leaks := growth(tc.samples, 20)
			if len(g) != 1 || g[0].Leak != tc.leak || (len(leaks) > 0) != tc.leak {
				t.Errorf("growth %+v, leaks %v, want leak %v", g, leaks, tc.leak)
			}
		})
	}
}

// TestSoakShort is the seeded short soak on the package's stack: samples of
// every instance, the event stream open to the end, mutual exclusion
// checked over every sale, nothing oversold, and the report written.
func TestSoakShort(t *testing.T) {
	dir := testenv.Get(t, testenv.StackDir)
	out := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	res, err := Run(ctx, Options{Dir: dir, For: 8 * time.Second, Rate: 10, Every: 2 * time.Second, GoodsID: 900_101, OutDir: out})
	if err != nil {
		t.Fatalf("soak: %v", err)
	}
	if len(res.Samples) < 3 {
		t.Errorf("%d samples, want at least 3 over 8 s at one per 2 s", len(res.Samples))
	}
	last := res.Samples[len(res.Samples)-1]
	for _, name := range []string{"inst-1", "inst-2", "inst-3"} {
		if last.RSSMiB[name] <= 0 || last.Goroutines[name] <= 0 || last.OpenFDs[name] <= 0 {
			t.Errorf("%s: RSS %.1f MiB, %v goroutines, %v fds: want each measured", name, last.RSSMiB[name], last.Goroutines[name], last.OpenFDs[name])
		}
	}
	if !res.Stream.OpenAtEnd || res.Stream.Events == 0 {
		t.Errorf("event stream: %+v, want open at the end with events read", res.Stream)
	}
	if !res.mutualExclusionMet || !strings.Contains(res.MutualExclusion, "every sale's among them") {
		t.Errorf("mutual exclusion: %q, want checked over every sale", res.MutualExclusion)
	}
	if res.Oversold != 0 || res.OK != 80 {
		t.Errorf("sold %d, oversold %d: want 80 sales of 80, none oversold", res.OK, res.Oversold)
	}
	for _, f := range []string{"soak.json", "soak.md", "soak-rss.svg", "soak-goroutines.svg", "soak-fds.svg", "bench/report.html"} {
		if _, err := os.Stat(filepath.Join(out, f)); err != nil {
			t.Errorf("report: %v", err)
		}
	}
}

// TestOptions: bad options are refused before anything runs.
func TestOptions(t *testing.T) {
	for _, o := range []Options{
		{Dir: "d", OutDir: "o", For: -time.Second},
		{Dir: "d", OutDir: "o", For: time.Minute, Rate: -1},
		{Dir: "d", OutDir: "o", For: time.Minute, Warmup: time.Hour},
		{OutDir: "o"},
	} {
		if _, err := Run(context.Background(), o); err == nil || !strings.Contains(err.Error(), "invalid soak options") {
			t.Errorf("%+v: err = %v, want invalid soak options", o, err)
		}
	}
}

// cached gives inst-1 a cache growing linearly from a to b over samples.
func cached(samples []Sample, a, b float64) []Sample {
	for i := range samples {
		samples[i].CacheMiB = map[string]float64{"inst-1": a + (b-a)*float64(i)/float64(len(samples)-1)}
	}
	return samples
}

// TestPortableCommand: the summary's repeat command names DIR and OUT, not
// the paths of the machine that ran the soak.
func TestPortableCommand(t *testing.T) {
	for _, tc := range []struct{ cmd, want string }{
		{"seckill soak --dir /work/soak-stack --for 1h0m0s --rate 40 --strategy redis --out /work/soak-1h",
			"seckill soak --dir DIR --for 1h0m0s --rate 40 --strategy redis --out OUT"},
		{"seckill soak --dir=.seckill-soak --out=results/soak-20261125-101010", "seckill soak --dir DIR --out OUT"},
		{"seckill soak --for 1m", "seckill soak --for 1m"},
	} {
		if got := PortableCommand(tc.cmd); got != tc.want {
			t.Errorf("PortableCommand(%q) = %q, want %q", tc.cmd, got, tc.want)
		}
	}
	md := Markdown(&Result{Command: "seckill soak --dir /work/soak-stack --for 1h0m0s --rate 40 --strategy redis --out /work/soak-1h",
		BenchReport: "bench/report.html"})
	if strings.Contains(md, "/work/") || !strings.Contains(md, "--dir DIR") {
		t.Errorf("the summary names the machine's paths:\n%s", md)
	}
}
