package bench

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/seckill-lab/seckill/bench/fleet"
	"github.com/seckill-lab/seckill/stock/catalog"
)

// summaryRow is a crafted summary row: its strategy, whether the run's
// settings leave it safe, its median oversold units and ok/s, over
// repeats; every invariant passes unless it oversold.
func summaryRow(name string, safe bool, oversold, okps float64, repeats int) Summary {
	s := Summary{Name: name, Strategy: name, Concurrency: 50, Repeats: repeats, ExpectedCorrect: safe,
		Oversold: Stat{Median: oversold, Min: oversold, Max: oversold}, OKPerSec: Stat{Median: okps, Min: okps, Max: okps},
		InvariantsPassed: 11 * repeats, InvariantsTotal: 11 * repeats}
	if oversold > 0 {
		s.InvariantsPassed -= 4 * repeats
	}
	return s
}

// conclusionReport is a crafted report of rows, on a fleet of insts
// instances behind rtt, at durability dur.
func conclusionReport(insts int, rtt fleet.RTT, dur string, rows ...Summary) *Report {
	return &Report{
		Environment: Environment{CPUs: 2, Instances: insts, Durability: dur, RTT: rtt, Mode: ModePurchase},
		Runs:        []RunResult{{Concurrency: 50, Requests: 500, InitialStock: 300}},
		Summary:     rows,
	}
}

// TestConclusion: the conclusion names who oversold (flawed by design, or
// only not safe at the run's setting), who did not, the fastest correct
// strategy against the fastest correct lock, and the run's conditions;
// reports with other winners and oversellers give other texts.
func TestConclusion(t *testing.T) {
	seen := map[string]string{} // text -> case
	for _, tc := range []struct {
		name    string
		rep     *Report
		want    []string
		notWant []string
	}{
		{
			name: "a service without a lock oversold in 3 of 3 repeats, beside a lock",
			rep: conclusionReport(2, fleet.RTT{}, "default",
				func() Summary {
					s := summaryRow("curator-no-lock", false, 200, 275, 3)
					s.ServiceURL, s.OversoldRuns = "http://127.0.0.1:21250", 3
					return s
				}(),
				summaryRow(catalog.ZooKeeper, true, 0, 112, 3)),
			want: []string{"Oversold (median units): curator-no-lock (200; in 3 of 3 repeats, 95 % interval 29–100 %), flawed by design."},
		},
		{
			name: "the demo: the flawed oversell, a lock-free strategy wins",
			rep: conclusionReport(3, fleet.RTT{}, "default",
				summaryRow(catalog.None, false, 200, 3517, 3),
				summaryRow(catalog.Mutex, false, 200, 1941, 3),
				summaryRow(catalog.RedisSpin, true, 0, 294, 3),
				summaryRow(catalog.Redis, true, 0, 544, 3),
				summaryRow(catalog.SQLAtomic, true, 0, 1591, 3),
				summaryRow(catalog.RedisStream, true, 0, 3828, 3)),
			want: []string{
				"Oversold (median units): none (200) and mutex (200), flawed by design.",
				"Did not oversell, in any of the 3 repeats (3 repeats rule out only rates above 71 %): the other 4 strategies.",
				"redis-spin is flawed by design, yet safe at this setting, and did not oversell.",
				"The fastest correct strategy is redis-stream, at 3828 ok/s (median): 7.0 times the fastest correct lock, redis, at 544 ok/s.",
				"Conditions: 3 instances, 50 clients, 500 requests on a stock of 300, round trip loopback (no round trip added), " +
					"durability default, mode purchase, 2 CPUs, 3 repeats.",
			},
			notWant: []string{"not safe at this setting", "No strategy oversold"},
		},
		{
			name: "a correct lock defeated by its setting, a database statement wins, one run",
			rep: conclusionReport(1, fleet.RTT{Profile: "cross-zone", RequestedMS: 2, MeasuredMS: 2.104}, "fsync",
				summaryRow(catalog.Redis, false, 12, 80, 1),
				summaryRow(catalog.RedisTTL, false, 0, 75, 1),
				summaryRow(catalog.Etcd, true, 0, 60, 1),
				summaryRow(catalog.SQLAtomic, true, 0, 420, 1)),
			want: []string{
				"Oversold (median units): redis (12), correct by design but not safe at this setting.",
				"Did not oversell, in the run (1 run rules out only rates above 98 %): the other 3 strategies.",
				"Not safe at this setting, yet no oversold unit this time: redis-ttl.",
				"The fastest correct strategy is sql-atomic, at 420 ok/s (median): 7.0 times the fastest correct lock, etcd, at 60 ok/s.",
				"1 instance, 50 clients", "round trip 2.104 ms measured (cross-zone), durability fsync", "1 run.",
			},
			notWant: []string{"redis-stream", ", flawed by design"},
		},
		{
			name: "nothing oversold, a lock wins",
			rep: conclusionReport(3, fleet.RTT{}, "default",
				summaryRow(catalog.Redis, true, 0, 544, 3),
				summaryRow(catalog.Etcd, true, 0, 232, 3)),
			want:    []string{"No strategy oversold, in any of the 3 repeats (3 repeats rule out only rates above 71 %).", "The fastest correct strategy is a lock, redis, at 544 ok/s (median)."},
			notWant: []string{"Did not oversell"},
		},
		{
			name: "no correct strategy",
			rep: conclusionReport(3, fleet.RTT{}, "default",
				summaryRow(catalog.None, false, 200, 3517, 1),
				summaryRow(catalog.RedisStream, true, 3, 3000, 1)),
			want: []string{"redis-stream (3), which the catalogue expects to hold at this setting: a failure to look into",
				"No strategy was correct in this run"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			text := Conclusion(tc.rep)
			if prev, ok := seen[text]; ok {
				t.Errorf("the same text as %q", prev)
			}
			seen[text] = tc.name
			flat := strings.Join(strings.Fields(text), " ")
			for _, w := range tc.want {
				if !strings.Contains(flat, w) {
					t.Errorf("conclusion lacks %q:\n%s", w, text)
				}
			}
			for _, w := range tc.notWant {
				if strings.Contains(flat, w) {
					t.Errorf("conclusion has %q:\n%s", w, text)
				}
			}
			for i, l := range strings.Split(text, "\n") {
				if n := utf8.RuneCountInString(l); n > ConclusionWidth {
					t.Errorf("line %d has %d runes, want <= %d: %q", i+1, n, ConclusionWidth, l)
				}
			}
		})
	}
	if Conclusion(&Report{}) != "" {
		t.Error("a report without rows has a conclusion")
	}
}

// TestConclusionPrinted: the bench prints the conclusion under its table,
// and report.md and report.html hold it too.
func TestConclusionPrinted(t *testing.T) {
	rep := craftedReport()
	c := Conclusion(rep)
	if c == "" {
		t.Fatal("the crafted report has no conclusion")
	}
	var b strings.Builder
	if err := WriteTable(&b, rep); err != nil {
		t.Fatal(err)
	}
	if !strings.HasSuffix(b.String(), "\nconclusion:\n"+c+"\n") {
		t.Errorf("the table does not end with the conclusion:\n%s", b.String())
	}
	if md := string(Markdown(rep)); !strings.Contains(md, "\n"+c+"\n") {
		t.Errorf("report.md lacks the conclusion:\n%s", md)
	}
	html, err := HTML(rep)
	if err != nil {
		t.Fatal(err)
	}
	if first, _, _ := strings.Cut(c, " ("); !strings.Contains(string(html), `<p class="conclusion">`+first) {
		t.Errorf("report.html lacks the conclusion %q", first)
	}
}

// TestCompactTableWidth: the compact table has its few columns and stays
// within CompactWidth runes, even with long names and wide ranges.
func TestCompactTableWidth(t *testing.T) {
	wide := func(name string, safe bool) Summary {
		s := summaryRow(name, safe, 4999, 99999, 5)
		s.Name = name + " (" + VariantNoQueue + ") @200"
		s.Oversold = Stat{Median: 4999, Min: 1000, Max: 99999}
		return s
	}
	rep := conclusionReport(3, fleet.RTT{}, "default", wide(catalog.ConsulNoDelay, false), wide(catalog.MySQLOptimistic, true),
		summaryRow("a-strategy-the-catalogue-lacks", true, 0, 12, 1))
	var b strings.Builder
	if err := WriteCompactTable(&b, rep); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(b.String(), "\n"), "\n")
	if len(lines) != 4 {
		t.Fatalf("compact table has %d lines, want a header and 3 rows:\n%s", len(lines), b.String())
	}
	for _, col := range compactHeader {
		if !strings.Contains(lines[0], col) {
			t.Errorf("header lacks %q: %q", col, lines[0])
		}
	}
	for _, want := range []string{"consul-nodelay (no queue) @200    yes", "4999 (1000–99999)", "99999", "35/55"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("compact table lacks %q:\n%s", want, b.String())
		}
	}
	if f := strings.Fields(lines[3]); f[1] != "-" {
		t.Errorf("a strategy the catalogue lacks: flawed %q, want -", f[1])
	}
	for i, l := range lines {
		if n := utf8.RuneCountInString(l); n > CompactWidth {
			t.Errorf("line %d has %d runes, want <= %d: %q", i+1, n, CompactWidth, l)
		}
	}
}
