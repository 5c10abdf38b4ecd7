package bench

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"errors"
	"maps"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/seckill-lab/seckill/stock"
	"github.com/seckill-lab/seckill/stock/catalog"
)

func TestRoundOrder(t *testing.T) {
	tests := []struct {
		name   string
		n      int
		seed   int64
		rounds int
	}{
		{"two strategies", 2, 3, 4},
		{"six strategies", 6, 3, 5},
		{"fourteen strategies", 14, 42, 10},
		{"another seed", 6, 7, 5},
	}
	for _, tt := range tests {
		var orders [][]int
		for r := 1; r <= tt.rounds; r++ {
			o := roundOrder(tt.n, tt.seed, r)
			if again := roundOrder(tt.n, tt.seed, r); !slices.Equal(o, again) {
				t.Errorf("%s: round %d is not deterministic: %v then %v", tt.name, r, o, again)
			}
			sorted := slices.Sorted(slices.Values(o))
			for i, v := range sorted {
				if v != i {
					t.Fatalf("%s: round %d order %v is not a permutation of 0..%d", tt.name, r, o, tt.n-1)
				}
			}
			if r == 1 && !slices.IsSorted(o) {
				t.Errorf("%s: round 1 = %v, want the given order", tt.name, o)
			}
			if r > 1 && slices.Equal(o, orders[r-2]) {
				t.Errorf("%s: round %d repeats round %d's order %v", tt.name, r, r-1, o)
			}
			orders = append(orders, o)
		}
		// Every strategy runs early and late: for n >= 2 the first slot is
		// not always the same strategy.
		firsts := map[int]bool{}
		for _, o := range orders {
			firsts[o[0]] = true
		}
		if len(firsts) < 2 {
			t.Errorf("%s: the same strategy went first in all %d rounds: %v", tt.name, tt.rounds, orders)
		}
	}
	if a, b := roundOrder(14, 1, 2), roundOrder(14, 2, 2); slices.Equal(a, b) {
		t.Errorf("seeds 1 and 2 give the same round-2 order %v", a)
	}
}

func TestUnits(t *testing.T) {
	tests := []struct {
		name    string
		o       Options
		want    []string
		noQueue int
	}{
		{"plain", Options{Strategies: []string{catalog.Redis, catalog.SQLAtomic}}, []string{catalog.Redis, catalog.SQLAtomic}, 0},
		{"compare queue", Options{Strategies: []string{catalog.Mutex, catalog.Redis, catalog.SQLAtomic, catalog.Etcd}, CompareQueue: true},
			[]string{catalog.Mutex, catalog.Redis, catalog.Redis + " (no queue)", catalog.SQLAtomic, catalog.Etcd, catalog.Etcd + " (no queue)"}, 2},
	}
	for _, tt := range tests {
		var got []string
		n := 0
		for _, u := range units(tt.o) {
			got = append(got, labelOf(u.Strategy, u.variant()))
			if u.NoQueue {
				n++
			}
		}
		if !slices.Equal(got, tt.want) || n != tt.noQueue {
			t.Errorf("%s: units %v (%d without queue), want %v (%d)", tt.name, got, n, tt.want, tt.noQueue)
		}
	}
	for _, s := range Queued() {
		info, _ := catalog.Lookup(s)
		if (info.Kind != catalog.KindLocker || info.Server == catalog.ServerProcess) && s != catalog.MySQLOptimistic {
			t.Errorf("Queued() holds %s (kind %s, server %q): the local queue does not apply to it", s, info.Kind, info.Server)
		}
	}
	if !slices.Contains(Queued(), catalog.MySQLOptimistic) || slices.Contains(Queued(), catalog.Mutex) || slices.Contains(Queued(), catalog.SQLAtomic) {
		t.Errorf("Queued() = %v: want mysql-optimistic in, the in-process and lock-free strategies out", Queued())
	}
}

func TestSweepOptions(t *testing.T) {
	tests := []struct {
		name      string
		mod       func(*Options)
		ok        bool
		sweep     []int
		conc      int
		errSubstr string
	}{
		{"sorted and deduplicated", func(o *Options) { o.Sweep = []int{200, 1, 50, 10, 10} }, true, []int{1, 10, 50, 200}, 200, ""},
		{"one point", func(o *Options) { o.Sweep = []int{4} }, true, []int{4}, 4, ""},
		{"no sweep keeps the concurrency", func(o *Options) { o.Concurrency = 7 }, true, nil, 7, ""},
		{"zero clients", func(o *Options) { o.Sweep = []int{0, 10} }, false, nil, 0, "between 1 and 10000"},
		{"negative clients", func(o *Options) { o.Sweep = []int{-5} }, false, nil, 0, "between 1 and 10000"},
		{"too many clients", func(o *Options) { o.Sweep = []int{10_001} }, false, nil, 0, "between 1 and 10000"},
		{"eleven points", func(o *Options) { o.Sweep = []int{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11} }, false, nil, 0, "at most 10"},
		{"ten points after dedup", func(o *Options) { o.Sweep = []int{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 10} }, true, []int{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}, 10, ""},
		{"with concurrency", func(o *Options) { o.Sweep, o.Concurrency = []int{1, 10}, 50 }, false, nil, 0, "drop Concurrency"},
		{"with a rate", func(o *Options) { o.Sweep, o.Rate = []int{1, 10}, 100 }, false, nil, 0, "drop Rate"},
	}
	for _, tt := range tests {
		o := Options{Strategies: []string{catalog.Redis}}
		tt.mod(&o)
		got, err := o.withDefaults()
		if (err == nil) != tt.ok {
			t.Errorf("%s: err = %v, want ok=%v", tt.name, err, tt.ok)
			continue
		}
		if err != nil {
			if !errors.Is(err, ErrInvalidOptions) || !strings.Contains(err.Error(), tt.errSubstr) {
				t.Errorf("%s: err %q, want ErrInvalidOptions saying %q", tt.name, err, tt.errSubstr)
			}
			continue
		}
		if !slices.Equal(got.Sweep, tt.sweep) || got.Concurrency != tt.conc {
			t.Errorf("%s: sweep %v concurrency %d, want %v and %d", tt.name, got.Sweep, got.Concurrency, tt.sweep, tt.conc)
		}
	}
}

func TestQueueAndWarmupOptions(t *testing.T) {
	tests := []struct {
		name       string
		o          Options
		ok         bool
		wantWarmup int
	}{
		{"warm-up default", Options{Strategies: []string{catalog.Redis}}, true, DefaultWarmup},
		{"no warm-up", Options{Strategies: []string{catalog.Redis}, Warmup: -1}, true, -1},
		{"compare queue", Options{Strategies: []string{catalog.Redis, catalog.SQLAtomic}, CompareQueue: true}, true, DefaultWarmup},
		{"compare queue and no local queue", Options{Strategies: []string{catalog.Redis}, CompareQueue: true, Config: stock.Config{NoLocalQueue: true}}, false, 0},
		{"compare queue without a queued strategy", Options{Strategies: []string{catalog.SQLAtomic, catalog.Mutex}, CompareQueue: true}, false, 0},
	}
	for _, tt := range tests {
		got, err := tt.o.withDefaults()
		if (err == nil) != tt.ok {
			t.Errorf("%s: err = %v, want ok=%v", tt.name, err, tt.ok)
			continue
		}
		if err != nil && !errors.Is(err, ErrInvalidOptions) {
			t.Errorf("%s: err %v does not wrap ErrInvalidOptions", tt.name, err)
		}
		if err == nil && got.Warmup != tt.wantWarmup {
			t.Errorf("%s: Warmup %d, want %d", tt.name, got.Warmup, tt.wantWarmup)
		}
	}
}

func TestParseSweep(t *testing.T) {
	tests := []struct {
		in   string
		want []int
		ok   bool
	}{
		{"1,10,50,200", []int{1, 10, 50, 200}, true},
		{" 1, 4 ,", []int{1, 4}, true},
		{"1,ten", nil, false},
		{"", nil, false},
		{",", nil, false},
	}
	for _, tt := range tests {
		got, err := ParseSweep(tt.in)
		if (err == nil) != tt.ok || !slices.Equal(got, tt.want) {
			t.Errorf("ParseSweep(%q) = %v, %v; want %v, ok=%v", tt.in, got, err, tt.want, tt.ok)
		}
		if err != nil && !strings.Contains(err.Error(), "1,10,50,200") {
			t.Errorf("ParseSweep(%q): %q does not show the form to use", tt.in, err)
		}
	}
}

// sweepReport is a crafted sweep over 1, 10 and 100 clients, two rounds:
// redis scales (ratio 0.9, met), redis without its queue does not (0.5),
// sql-atomic takes no lock (no ratio).
func sweepReport() *Report {
	okps := map[string][]float64{ // ok/s at 1, 10, 100 clients
		catalog.Redis: {200, 190, 180}, catalog.Redis + "/" + VariantNoQueue: {200, 150, 100}, catalog.SQLAtomic: {400, 600, 700},
	}
	var runs []RunResult
	var order [][]string
	for round := 1; round <= 2; round++ {
		var labels []string
		for _, u := range []unit{{Strategy: catalog.Redis}, {Strategy: catalog.Redis, NoQueue: true}, {Strategy: catalog.SQLAtomic}} {
			labels = append(labels, labelOf(u.Strategy, u.variant()))
			key := u.Strategy
			if u.NoQueue {
				key += "/" + VariantNoQueue
			}
			for i, c := range []int{1, 10, 100} {
				rs := runSpec{unit: u, Repeat: round, Concurrency: c, Sweep: true}
				v := okps[key][i] + float64(round-1)*10 // the rounds differ a little
				rsp, st := fleetRun(100, 100, 0)
				r := RunResult{Strategy: u.Strategy, Variant: u.variant(), Name: rs.name(), Repeat: round, Concurrency: c,
					Instances: 3, InitialStock: 100, Requests: 100, Qty: 1, Seed: 3, ExpectedCorrect: true}
				fillRun(&r, Evaluate(rsp, st, 1), st, attackResult{Results: 100, Wall: time.Duration(float64(time.Second) * 100 / v)})
				r.LatencyMS.P99 = float64(c) + float64(round)
				runs = append(runs, r)
			}
		}
		order = append(order, labels)
	}
	rep := &Report{Date: time.Date(2026, 11, 23, 4, 0, 0, 0, time.UTC), CommandLine: "seckill bench --sweep 1,10,100",
		Environment: Environment{GoVersion: "go1.26", OS: "linux", Arch: "amd64", CPUs: 2, Target: "http://127.0.0.1:1", Instances: 3},
		Runs:        runs, Order: order, Warmup: 50}
	rep.Summary = Summarize(runs)
	rep.Sweep = sweepOf(rep.Summary, []int{1, 10, 100})
	return rep
}

func TestSweepSummary(t *testing.T) {
	rep := sweepReport()
	if len(rep.Summary) != 9 {
		t.Fatalf("summary has %d rows, want 3 strategies x 3 clients", len(rep.Summary))
	}
	tests := []struct {
		label    string
		ratio    float64 // 0 = none
		met      bool
		okAt10   float64
		repeats  int
		p99At100 float64
	}{
		{catalog.Redis, 185.0 / 205.0, true, 195, 2, 101.5},
		{catalog.Redis + " (no queue)", 105.0 / 205.0, false, 155, 2, 101.5},
		{catalog.SQLAtomic, 0, false, 605, 2, 101.5},
	}
	if len(rep.Sweep.Series) != len(tests) {
		t.Fatalf("sweep has %d series, want %d", len(rep.Sweep.Series), len(tests))
	}
	for i, tt := range tests {
		s := rep.Sweep.Series[i]
		if s.Label != tt.label || s.Repeats != tt.repeats {
			t.Errorf("series %d = %s (%d repeats), want %s (%d)", i, s.Label, s.Repeats, tt.label, tt.repeats)
		}
		if got := s.OKPerSec[1].Median; math.Abs(got-tt.okAt10) > 0.5 {
			t.Errorf("%s: ok/s at 10 clients %.1f, want %.0f", tt.label, got, tt.okAt10)
		}
		if got := s.P99MS[2].Median; got != tt.p99At100 {
			t.Errorf("%s: p99 at 100 clients %.1f, want %.1f", tt.label, got, tt.p99At100)
		}
		switch {
		case tt.ratio == 0 && s.ScalingRatio != nil:
			t.Errorf("%s takes no lock but has a scaling ratio %.2f", tt.label, *s.ScalingRatio)
		case tt.ratio != 0 && (s.ScalingRatio == nil || math.Abs(*s.ScalingRatio-tt.ratio) > 0.01 || *s.ScalingMet != tt.met):
			t.Errorf("%s: scaling %v met %v, want %.2f met %v", tt.label, s.ScalingRatio, s.ScalingMet, tt.ratio, tt.met)
		}
	}
	// The ratio to sql-atomic compares the same concurrency.
	for _, s := range rep.Summary {
		if s.Strategy == catalog.SQLAtomic && (s.ThroughputRatioSQLAtomic == nil || *s.ThroughputRatioSQLAtomic != 1) {
			t.Errorf("%s: ratio to sql-atomic %v, want 1 at its own concurrency", s.Name, s.ThroughputRatioSQLAtomic)
		}
	}
}

func TestReportSweepSection(t *testing.T) {
	rep := sweepReport()
	md := string(Markdown(rep))
	for _, want := range []string{
		"- order: round 1: redis, redis (no queue), sql-atomic; round 2: ",
		"- warm-up: 50 purchases",
		"concurrency swept over 1, 10, 100 clients",
		"## Sweep: successful purchases per second by clients",
		"| strategy | 1 client | 10 clients | 100 clients |",
		"| redis | 205 (200–210) | 195 (190–200) | 185 (180–190) |",
		"## Sweep: p99 latency (ms) by clients",
		"| sql-atomic | 2.5 (2.0–3.0) | 11.5 (11.0–12.0) | 101.5 (101.0–102.0) |",
		"| strategy | ok/s @1 | ok/s @100 | ratio @100 / @1 | target >= 0.8 |",
		"| redis | 205 (200–210) | 185 (180–190) | 0.90 | met |",
		"| redis (no queue) | 205 (200–210) | 105 (100–110) | 0.51 | not met |",
		"## Local queue on and off",
		"| redis | 10 | 195 (190–200) | 155 (150–160) | 0.79 |",
		"| redis (no queue) @10 | yes |",
		"| redis (no queue) @100 #2 |",
		"median of the 2 rounds with min–max",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("report.md lacks %q:\n%s", want, md)
		}
	}
	if strings.Contains(md, "| sql-atomic | 400") {
		t.Errorf("sql-atomic takes no lock, yet it is in the scaling table:\n%s", md)
	}

	html, err := HTML(rep)
	if err != nil {
		t.Fatal(err)
	}
	if m := regexp.MustCompile(`(?i)https?://`).Find(html); m != nil {
		t.Errorf("report.html references %q", m)
	}
	for _, want := range []string{"<th>10 clients</th>", "<td>not met</td>", `<tr class="bad"><td>redis (no queue)</td>`,
		`id="strategy-redis--no-queue---10"`, `href="#strategy-redis--no-queue---10"`} {
		if !bytes.Contains(html, []byte(want)) {
			t.Errorf("report.html lacks %q", want)
		}
	}
	charts := map[string][]byte{}
	for _, m := range regexp.MustCompile(`(?s)<div class="chart" data-chart="([^"]+)">(.*?)</div>`).FindAllSubmatch(html, -1) {
		charts[string(m[1])] = m[2]
	}
	for _, name := range []string{"Sweep throughput", "Sweep p99"} {
		svg, ok := charts[name]
		if !ok {
			t.Errorf("report.html has no %q chart; charts: %v", name, slices.Sorted(maps.Keys(charts)))
			continue
		}
		checkSweepSVG(t, name, svg, 3, []int{1, 10, 100})
	}
}

// checkSweepSVG parses a sweep chart: well-formed XML, one line per
// series, a dot per point, every client count a tick, and a log x axis
// (1→10 as wide as 10→100).
func checkSweepSVG(t *testing.T, name string, svg []byte, series int, clients []int) {
	t.Helper()
	type node struct {
		XMLName xml.Name
		Class   string `xml:"class,attr"`
		CX      string `xml:"cx,attr"`
		Text    string `xml:",chardata"`
		Kids    []node `xml:",any"`
	}
	var root node
	if err := xml.Unmarshal(svg, &root); err != nil {
		t.Fatalf("%s: not well-formed XML: %v", name, err)
	}
	var lines int
	var dots []float64
	ticks := map[string]bool{}
	var walk func(n node)
	walk = func(n node) {
		switch {
		case n.XMLName.Local == "path" && n.Class == "line":
			lines++
		case n.XMLName.Local == "circle" && n.Class == "dot":
			x, err := strconv.ParseFloat(n.CX, 64)
			if err != nil {
				t.Errorf("%s: dot cx %q", name, n.CX)
			}
			dots = append(dots, x)
		case n.XMLName.Local == "text" && n.Class == "tick":
			ticks[strings.TrimSpace(n.Text)] = true
		}
		for _, k := range n.Kids {
			walk(k)
		}
	}
	walk(root)
	if lines != series || len(dots) != series*len(clients) {
		t.Errorf("%s: %d lines and %d dots, want %d and %d", name, lines, len(dots), series, series*len(clients))
	}
	for _, c := range clients {
		if !ticks[strconv.Itoa(c)] {
			t.Errorf("%s: no x tick %d (ticks %v)", name, c, ticks)
		}
	}
	if len(dots) >= 3 {
		if d1, d2 := dots[1]-dots[0], dots[2]-dots[1]; d1 <= 0 || math.Abs(d1-d2) > 0.5 {
			t.Errorf("%s: x of 1, 10, 100 clients at %v: not a log scale", name, dots[:3])
		}
	}
}

func TestReportSweepJSON(t *testing.T) {
	b, err := json.Marshal(sweepReport())
	if err != nil {
		t.Fatal(err)
	}
	var back struct {
		Order [][]string `json:"order"`
		Sweep *Sweep     `json:"sweep"`
		Runs  []struct {
			Name        string `json:"name"`
			Variant     string `json:"variant"`
			Concurrency int    `json:"concurrency"`
		} `json:"runs"`
	}
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if len(back.Order) != 2 || back.Sweep == nil || !slices.Equal(back.Sweep.Clients, []int{1, 10, 100}) || len(back.Runs) != 18 {
		t.Fatalf("report.json lacks the order, the sweep or the runs: %s", b[:min(len(b), 400)])
	}
	names := map[string]bool{}
	for _, r := range back.Runs {
		if names[r.Name] {
			t.Errorf("run name %q twice: raw files would collide", r.Name)
		}
		names[r.Name] = true
	}
	if !names["redis-noqueue-c10-2"] {
		t.Errorf("run names %v lack redis-noqueue-c10-2", names)
	}
}
