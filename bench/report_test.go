package bench

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/seckill-lab/seckill/bench/fleet"
	"github.com/seckill-lab/seckill/stock"
)

func craftedReport() *Report {
	mk := func(s string, rep, oversold int, rps float64) RunResult {
		rs, st := fleetRun(300, 300+oversold, 200-oversold)
		a := Evaluate(rs, st, 1)
		r := RunResult{Strategy: s, Repeat: rep, Instances: 3, InitialStock: 300, Requests: 500, Concurrency: 50, Qty: 1,
			Seed: 1, ExpectedCorrect: oversold == 0}
		fillRun(&r, a, st, attackResult{Results: 500, Wall: time.Duration(500/rps*1e9) * time.Nanosecond})
		r.LatencyMS = Latency{P50: 10 + float64(rep), P99: 40}
		w := 1.5
		r.LockWaitMS = &w
		return r
	}
	runs := []RunResult{mk("none", 1, 20, 900), mk("none", 2, 35, 1000), mk("redis", 1, 0, 400), mk("sql-atomic", 1, 0, 1200)}
	rep := &Report{
		Date: time.Date(2026, 11, 22, 4, 0, 0, 0, time.UTC), CommandLine: "seckill bench --strategies none,redis,sql-atomic",
		Environment: Environment{GoVersion: "go1.26", OS: "linux", Arch: "amd64", CPUs: 2, Target: "http://127.0.0.1:1", Instances: 3},
		Calibration: &Calibration{Requests: 2000, CeilingRPS: 12000}, CeilingRPS: 12000, Runs: runs,
	}
	rep.Summary = Summarize(runs)
	rep.CeilingRatio = rep.CeilingRPS / bestThroughput(rep.Summary)
	return rep
}

func TestReportJSONRoundTrip(t *testing.T) {
	dir := t.TempDir()
	rep := craftedReport()
	if err := WriteReports(dir, rep); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(dir, "report.json"))
	if err != nil {
		t.Fatal(err)
	}
	var back Report
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if len(back.Runs) != 4 || back.Runs[1].Oversold != 35 || back.CeilingRPS != 12000 || len(back.Summary) != 3 {
		t.Errorf("round trip lost data: %+v", back)
	}
	var generic map[string]any
	if err := json.Unmarshal(b, &generic); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"date", "command_line", "environment", "calibration_ceiling_rps", "summary", "runs"} {
		if _, ok := generic[k]; !ok {
			t.Errorf("report.json lacks %q", k)
		}
	}
	run := generic["runs"].([]any)[0].(map[string]any)
	for _, k := range []string{"strategy", "instances", "initial_stock", "requests", "concurrency", "ok", "orders",
		"final_stock", "oversold", "lost_updates", "throughput_rps", "latency_ms", "invariants"} {
		if _, ok := run[k]; !ok {
			t.Errorf("run lacks %q", k)
		}
	}
	lat := run["latency_ms"].(map[string]any)
	for _, k := range []string{"p50", "p99"} {
		if _, ok := lat[k]; !ok {
			t.Errorf("latency_ms lacks %q", k)
		}
	}
	if invs := run["invariants"].([]any); len(invs) != 8 {
		t.Errorf("run has %d invariants, want 8 (Evaluate)", len(invs))
	}
	// none: median of 900 and 1000 req/s over sql-atomic's 1200.
	sum := generic["summary"].([]any)[0].(map[string]any)
	if sum["strategy"] != "none" || sum["throughput_ratio_sql_atomic"] == nil {
		t.Errorf("summary[0] = %v", sum)
	}
	if got := back.Summary[0].ThroughputRatioSQLAtomic; got == nil || *got < 0.79 || *got > 0.80 {
		t.Errorf("none/sql-atomic ratio = %v, want 950/1200", got)
	}
	if back.Summary[0].Oversold != (Stat{Median: 27.5, Min: 20, Max: 35}) {
		t.Errorf("oversold stat = %+v", back.Summary[0].Oversold)
	}
}

func TestReportHTMLOffline(t *testing.T) {
	html, err := HTML(craftedReport())
	if err != nil {
		t.Fatal(err)
	}
	if m := regexp.MustCompile(`(?i)https?://`).Find(html); m != nil {
		i := bytes.Index(html, m)
		t.Errorf("report.html references %q", html[max(0, i-60):min(len(html), i+60)])
	}
	// Vector charts, inline: oversold, lost updates, throughput, outcomes,
	// sales per instance (no latency CDF: the crafted runs have none).
	charts := regexp.MustCompile(`<div class="chart" data-chart="([^"]+)"><svg[^>]*viewBox`).FindAllSubmatch(html, -1)
	if len(charts) != 5 {
		t.Fatalf("report.html has %d inline SVG charts, want 5", len(charts))
	}
	if bytes.Contains(html, []byte("data:image/png")) {
		t.Error("report.html still embeds PNG charts")
	}
	for _, want := range []string{"sql-atomic 720/s", "✗ = not safe at this setting", "✗: not safe at this setting", "Invariants per strategy", "超卖", "脑裂", "看门狗", "羊群效应",
		`<td class="fail" title="failed in 2 of 2 runs, 95 % interval 16–100 %"><a href="#fail-none-1-`, "linearizable"} {
		if !bytes.Contains(html, []byte(want)) {
			t.Errorf("report.html lacks %q", want)
		}
	}
	for _, want := range []string{"<table>", "<td>redis</td>", "<td>sql-atomic</td>", "Oversold units"} {
		if !bytes.Contains(html, []byte(want)) {
			t.Errorf("report.html lacks %q", want)
		}
	}
	if bytes.Contains(html, []byte("<script")) || bytes.Contains(html, []byte("<link")) {
		t.Error("report.html has a script or a link")
	}
}

func TestReportMarkdownAndTable(t *testing.T) {
	rep := craftedReport()
	md := string(Markdown(rep))
	header := "| strategy | safe at this setting | oversold | lost | ok | final stock | req/s | ok/s | of DB | p50 ms | p99 ms | lock wait ms | invariants |"
	if !strings.Contains(md, header) {
		t.Errorf("report.md lacks the table header:\n%s", md)
	}
	for _, row := range []string{"| none | no | 28 (20–35) |", "| redis | yes | 0 | 0 | 300 | 0 |", "| sql-atomic |"} {
		if !strings.Contains(md, row) {
			t.Errorf("report.md lacks row %q:\n%s", row, md)
		}
	}
	if !strings.Contains(md, "12000 req/s") {
		t.Errorf("report.md lacks the calibration ceiling:\n%s", md)
	}
	var b strings.Builder
	if err := WriteTable(&b, rep); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(b.String()), "\n")
	if len(lines) < 4 || !strings.HasPrefix(lines[0], "strategy") || !strings.HasPrefix(lines[1], "none") {
		t.Errorf("table:\n%s", b.String())
	}
	// none: two repeats of 8 invariants, each oversold below zero: the stock and sell-out ones fail.
	if !strings.Contains(lines[1], "12/16") || !strings.Contains(lines[2], "8/8") {
		t.Errorf("invariant counts wrong:\n%s", b.String())
	}
}

// TestDurabilityStated: every report says the servers' durability as the
// fleet describes it, and "unknown" for a fleet that did not say.
func TestDurabilityStated(t *testing.T) {
	for _, tc := range []struct{ fleet, means, want string }{
		{"fsync", "every server fsyncs an acknowledged write", "fsync: every server fsyncs"},
		{"none", "no server fsyncs per write", "none: no server fsyncs per write"},
		{"", "", "unknown (the fleet did not say"},
	} {
		rep := craftedReport()
		rep.Environment = environment(fleet.Fleet{Target: "http://127.0.0.1:1", Durability: tc.fleet, DurabilityMeans: tc.means}, ModePurchase)
		found := false
		for _, f := range buildView(rep).Facts {
			found = found || f.Label == "durability" && strings.Contains(f.Value, tc.want)
		}
		if !found {
			t.Errorf("durability %q: no fact %q in %+v", tc.fleet, tc.want, buildView(rep).Facts)
		}
		if !strings.Contains(string(Markdown(rep)), tc.want) {
			t.Errorf("durability %q: report.md does not say it", tc.fleet)
		}
	}
}

// TestRunJSONKeepsItsKeys: report.json gives a run's setting at the top
// level (work_delay ... batch) as before, written from the one
// InstanceConfig the run keeps, and reads back to the same setting.
func TestRunJSONKeepsItsKeys(t *testing.T) {
	ttl, pause := 3*time.Second, 40*time.Millisecond
	r := RunResult{Strategy: "redis", Service: stock.InstanceConfig{Config: stock.Config{Name: "redis", WorkDelay: time.Millisecond, LockTTL: ttl, Fencing: true, ReleasePause: pause, Batch: 4}}}
	b, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	var keys map[string]json.RawMessage
	if err := json.Unmarshal(b, &keys); err != nil {
		t.Fatal(err)
	}
	for k, want := range map[string]string{"work_delay": `"1ms"`, "lock_ttl": `"3s"`, "fencing": "true", "no_watchdog": "false", "release_pause": `"40ms"`, "batch": "4", "strategy": `"redis"`} {
		if got := string(keys[k]); got != want {
			t.Errorf("%s: %s, want %s", k, got, want)
		}
	}
	if _, ok := keys["lock_wait"]; !ok {
		t.Error("no lock_wait")
	}
	var back RunResult
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if back.Setting() != r.Setting() {
		t.Errorf("read back %+v, want %+v", back.Setting(), r.Setting())
	}
}
