package bench

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/seckill-lab/seckill/bench/costmodel"
	"github.com/seckill-lab/seckill/stock/catalog"

	"github.com/seckill-lab/seckill/bench/fleet"
)

// costedReport is craftedReport with the counts of two strategies: redis
// (a lock: 4 acquire round trips, release and last acquire on Redis, the
// transaction on MySQL) and sql-atomic (the row's serial section).
func costedReport() *Report {
	rep := craftedReport()
	tx := map[costmodel.Phase]costmodel.Counts{costmodel.Held: {RoundTrips: 1500, Writes: 300}, costmodel.RowLocked: {RoundTrips: 600, Writes: 300}}
	counts := map[string]costmodel.Snapshot{
		"redis": {
			catalog.ServerRedis: {costmodel.Acquire: {RoundTrips: 1200, Writes: 1200}, costmodel.AcquireLast: {RoundTrips: 300, Writes: 300}, costmodel.Release: {RoundTrips: 300, Writes: 300}},
			catalog.ServerMySQL: tx,
		},
		"sql-atomic": {catalog.ServerMySQL: {costmodel.Held: {RoundTrips: 1200, Writes: 300}, costmodel.RowLocked: {RoundTrips: 600, Writes: 300}}},
	}
	fs := fsyncServers(fleet.Fleet{Fsyncs: []string{"etcd", "zookeeper", "mysql", "consul"}})
	for i, r := range rep.Runs {
		if c, ok := counts[r.Strategy]; ok {
			rep.Runs[i].Cost = newRunCost(c, r.OK, fs)
		}
	}
	// RTT 0.5 ms, fsync 3 ms: redis 7 round trips and 1 fsync = 6.5 ms,
	// 154/s against 240 measured (agrees within 2x); sql-atomic 2 round
	// trips and 1 fsync = 4 ms, 250/s against 720 measured (disagrees).
	cond := CostConditions{Durability: "default", RTTMS: 0.5, RTTSource: "test", FsyncMS: 3, FsyncDir: "/tmp",
		FsyncServers: []costmodel.Server{catalog.ServerEtcd, catalog.ServerZooKeeper, catalog.ServerMySQL, catalog.ServerConsul}}
	rep.CostModel = costModel(cond, rep.Runs, rep.Summary)
	return rep
}

func TestCostModelRows(t *testing.T) {
	rep := costedReport()
	rows := map[string]CostRow{}
	for _, r := range rep.CostModel.Rows {
		rows[r.Name] = r
	}
	if len(rows) != 2 {
		t.Fatalf("cost rows %v, want redis and sql-atomic", rows)
	}
	cases := []struct {
		name                string
		path                string
		rts, fsyncs, limit  float64
		disagrees           bool
		roundTrips, perFsyn float64 // every phase, per purchase
	}{
		{"redis", "lock", 7, 1, 1000 / 6.5, false, 10, 1},
		{"sql-atomic", "row", 2, 1, 250, true, 4, 1},
	}
	for _, tc := range cases {
		r := rows[tc.name]
		p := r.Prediction
		if r.Path != tc.path || p.RoundTrips != tc.rts || p.Fsyncs != tc.fsyncs || r.Disagrees != tc.disagrees || r.Ratio == nil {
			t.Errorf("%s: %+v", tc.name, r)
			continue
		}
		if d := p.LimitPerS - tc.limit; d > 1e-9 || d < -1e-9 {
			t.Errorf("%s: limit %v, want %v", tc.name, p.LimitPerS, tc.limit)
		}
		if got := *r.Ratio; got != r.MeasuredOKPerS/p.LimitPerS {
			t.Errorf("%s: ratio %v, want measured/predicted", tc.name, got)
		}
		total := 0.0
		for _, v := range r.RoundTrips {
			total += v
		}
		if total != tc.roundTrips || r.Fsyncs != tc.perFsyn {
			t.Errorf("%s: %v round trips and %v fsyncs per purchase, want %v and %v", tc.name, total, r.Fsyncs, tc.roundTrips, tc.perFsyn)
		}
	}
}

// TestCostTableInReports: report.md and report.html carry the cost model
// table and say where prediction and measure disagree; report.json its
// rows and each run's counts.
func TestCostTableInReports(t *testing.T) {
	dir := t.TempDir()
	if err := WriteReports(dir, costedReport()); err != nil {
		t.Fatal(err)
	}
	read := func(name string) string {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	md, html := read("report.md"), read("report.html")
	for _, want := range []string{"## Cost model", "| strategy | round trips per purchase | fsyncs | critical path | predicted serial limit /s | predicted ms: wire + disk + server | measured ms | unexplained ms | measured ok/s | measured/predicted | model |",
		"| redis | redis 5.00 + mysql 5.00 | 1.00 | lock: 7.00 round trips (redis 2.00 + mysql 5.00), 1.00 fsyncs | 154 | 6.50 = 3.50 + 3.00 + 0.00 | 4.17 | -2.33 | 240.0 | 1.56 | agrees within 2x |",
		"| sql-atomic | mysql 4.00 | 1.00 | row: 2.00 round trips (mysql 2.00), 1.00 fsyncs | 250 | 4.00 = 1.00 + 3.00 + 0.00 | 1.39 | -2.61 | 720.0 | 2.88 | disagrees by more than 2x: a finding or a bug |",
		"sql-atomic sold 2.9× the predicted serial limit (720.0 ok/s against 250)", "No server time is priced"} {
		if !strings.Contains(md, want) {
			t.Errorf("report.md lacks %q", want)
		}
	}
	for _, want := range []string{"Cost model", "predicted serial limit /s", "disagrees by more than 2x: a finding or a bug", "sql-atomic sold 2.9× the predicted serial limit"} {
		if !strings.Contains(html, want) {
			t.Errorf("report.html lacks %q", want)
		}
	}
	var back Report
	if err := json.Unmarshal([]byte(read("report.json")), &back); err != nil {
		t.Fatal(err)
	}
	if back.CostModel == nil || len(back.CostModel.Rows) != 2 || back.CostModel.FsyncMS != 3 {
		t.Errorf("report.json cost_model: %+v", back.CostModel)
	}
	for _, r := range back.CostModel.Rows {
		if sp := r.Split; sp == nil || sp.PredictedMS != sp.WireMS+sp.DiskMS+sp.ServerMS || sp.UnexplainedMS != sp.MeasuredMS-sp.PredictedMS {
			t.Errorf("report.json cost_model row %s split: %+v", r.Name, sp)
		}
	}
	for _, r := range back.Runs {
		if r.Strategy == "redis" && (r.Cost == nil || r.Cost.PerPurchase[catalog.ServerMySQL][costmodel.Held].RoundTrips != 5) {
			t.Errorf("report.json redis run cost: %+v", r.Cost)
		}
	}
}

// TestCostModelServerTime: with the stack's idle probes, the prediction
// adds the servers' own time, the split says it, and the notes say what
// it was priced with.
func TestCostModelServerTime(t *testing.T) {
	rep := costedReport()
	cond := rep.CostModel.CostConditions
	cond.ServerProbes, cond.ProbeRTTMS = costmodel.ServerTimes{
		catalog.ServerRedis: {costmodel.Op("get"): 0.05, costmodel.Op("set"): 0.15, costmodel.Op("eval"): 0.25},
		catalog.ServerMySQL: {costmodel.Op("update"): 0.15, costmodel.Op("commit"): 3.5},
	}, 0.05
	m := costModel(cond, rep.Runs, rep.Summary)
	for _, r := range m.Rows {
		if r.Prediction.ServerMS <= 0 || r.Split == nil || r.Split.ServerMS != r.Prediction.ServerMS {
			t.Errorf("%s: server %v ms, split %+v", r.Name, r.Prediction.ServerMS, r.Split)
		}
	}
	_, notes := costTable(m)
	if !strings.Contains(notes[0], "redis get 0.050, set 0.150, eval 0.250; mysql update 0.150, commit 3.500") {
		t.Errorf("the note does not say the probes: %s", notes[0])
	}
}
