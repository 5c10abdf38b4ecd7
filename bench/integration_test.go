package bench_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/seckill-lab/seckill/bench"
	"github.com/seckill-lab/seckill/bench/fleet"
	"github.com/seckill-lab/seckill/internal/stack"
	"github.com/seckill-lab/seckill/internal/testenv"
	"github.com/seckill-lab/seckill/stock"
	"github.com/seckill-lab/seckill/stock/catalog"
	vegeta "github.com/tsenart/vegeta/v12/lib"
)

// Small load that still makes the flawed strategies oversell: real
// concurrency, some work inside the critical section, more requests than
// stock.
const (
	itStock       = 30
	itRequests    = 75
	itConcurrency = 24
	itWork        = 8 * time.Millisecond
)

// fleetFromEnv is the stack `make test` started.
func fleetFromEnv(t *testing.T) (fleet.Fleet, string) {
	t.Helper()
	f := fleet.Fleet{
		Target:     testenv.Get(t, testenv.NginxURL),
		Instances:  testenv.List(t, testenv.InstanceURLs),
		AdminToken: testenv.Get(t, testenv.AdminToken),
	}
	return f, testenv.Get(t, testenv.StackDir)
}

// localStack is the test stack's fleet and state, with a context bounded
// to 3 minutes (a bench of a few runs).
func localStack(t *testing.T) (fleet.Fleet, *stack.State, context.Context) {
	t.Helper()
	fl, dir := fleetFromEnv(t)
	st, err := stack.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	t.Cleanup(cancel)
	return fl, st, ctx
}

func scaler(dir string, token string) bench.Scaler {
	return bench.ScalerFunc(func(ctx context.Context, n int) (fleet.Fleet, error) {
		st, err := stack.Scale(ctx, dir, n)
		if err != nil {
			return fleet.Fleet{}, err
		}
		return fleet.Fleet{Target: st.NginxURL(), Instances: st.InstanceURLs(), AdminToken: token}, nil
	})
}

func runOne(t *testing.T, o bench.Options) bench.RunResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	o.Stock, o.Requests, o.Concurrency, o.Config.WorkDelay = itStock, itRequests, itConcurrency, itWork
	o.CalibrateRequests = -1
	o.RunTimeout = time.Minute
	rep, err := bench.Run(ctx, o)
	if err != nil {
		t.Fatalf("bench %v: %v", o.Strategies, err)
	}
	if len(rep.Runs) != 1 {
		t.Fatalf("got %d runs, want 1", len(rep.Runs))
	}
	r := rep.Runs[0]
	if got := r.OK + r.Outcomes[bench.OutcomeSoldOut] + r.Outcomes[bench.OutcomeLockTimeout] +
		r.Outcomes[bench.OutcomeStaleLock] + r.Outcomes[bench.OutcomeError]; got != itRequests {
		t.Errorf("%s: outcomes add up to %d, want exactly %d requests: %v", r.Strategy, got, itRequests, r.Outcomes)
	}
	return r
}

// checkOutputs checks the reports of a real run and that its raw results
// hold one vegeta result per request.
func checkOutputs(t *testing.T, dir string, r bench.RunResult) {
	t.Helper()
	for _, name := range []string{"report.json", "report.md", "report.html"} {
		if fi, err := os.Stat(filepath.Join(dir, name)); err != nil || fi.Size() == 0 {
			t.Errorf("%s: %v", name, err)
		}
	}
	f, err := os.Open(filepath.Join(dir, r.Raw))
	if err != nil {
		t.Fatalf("raw results: %v", err)
	}
	defer f.Close()
	dec := vegeta.NewDecoder(f)
	n := 0
	for {
		var res vegeta.Result
		if err := dec.Decode(&res); err != nil {
			break
		}
		n++
	}
	if n != r.Requests {
		t.Errorf("%s holds %d results, want %d", r.Raw, n, r.Requests)
	}
}

func describe(r bench.RunResult) string {
	s := fmt.Sprintf("%s on %d instances: oversold %d, lost %d, ok %d, final stock %d, outcomes %v, errors %v, sales %v",
		r.Strategy, r.Instances, r.Oversold, r.LostUpdates, r.OK, r.FinalStock, r.Outcomes, r.ErrorKinds, r.SalesPerInstance)
	for _, inv := range r.Invariants {
		if !inv.Pass {
			s += fmt.Sprintf("; %s FAILED (count %d: %s)", inv.Name, inv.Count, inv.Detail)
		}
	}
	return s
}

// oversells runs a flawed strategy up to 3 seeded times and reports
// whether any run oversold (overselling is probabilistic).
// invariant returns the run's invariant called name.
func invariant(t *testing.T, r bench.RunResult, name string) bench.Invariant {
	t.Helper()
	for _, inv := range r.Invariants {
		if inv.Name == name {
			return inv
		}
	}
	t.Fatalf("%s #%d has no invariant %s", r.Strategy, r.Repeat, name)
	return bench.Invariant{}
}

// failsEvidence asserts the evidence checks name the flaw of a flawed run:
// the history is not linearizable and the critical sections overlapped
// (or, want release, a lock was released before COMMIT).
func failsEvidence(t *testing.T, r bench.RunResult, wantEarlyRelease bool) {
	t.Helper()
	if inv := invariant(t, r, bench.InvLinearizable); inv.Pass || !inv.Applicable {
		t.Errorf("%s: linearizable %+v, want a failure", r.Strategy, inv)
	}
	if inv := invariant(t, r, bench.InvMutualExclusion); inv.Pass || !inv.Applicable {
		t.Errorf("%s: mutual exclusion %+v, want overlapping critical sections", r.Strategy, inv)
	}
	if inv := invariant(t, r, bench.InvReleaseAfterCommit); inv.Pass == wantEarlyRelease {
		t.Errorf("%s: release after commit %+v, want pass=%v", r.Strategy, inv, !wantEarlyRelease)
	}
	if inv := invariant(t, r, bench.InvNoLostUpdate); inv.Pass {
		t.Errorf("%s: no lost update passed: %+v", r.Strategy, inv)
	}
}

func oversells(t *testing.T, o bench.Options) bool {
	t.Helper()
	for try := int64(1); try <= 3; try++ {
		o.Seed = 1000 + try
		r := runOne(t, o)
		t.Log(describe(r))
		if r.Oversold > 0 {
			failsEvidence(t, r, o.Strategies[0] == "mutex-tx")
			return true
		}
	}
	return false
}

// TestIntegrationUserErrors checks the one-line errors a user can hit.
func TestIntegrationUserErrors(t *testing.T) {
	fl, _ := fleetFromEnv(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	o := bench.Options{Strategies: []string{"none"}, Stock: 1, Requests: 1, Concurrency: 1, CalibrateRequests: -1}

	o.Fleet = fl
	o.Fleet.AdminToken = "wrong-token"
	if _, err := bench.Run(ctx, o); !errors.Is(err, bench.ErrUnauthorized) {
		t.Errorf("wrong admin token: err = %v, want ErrUnauthorized", err)
	}

	o.Fleet = fl
	o.Fleet.Target = "http://127.0.0.1:1"
	if _, err := bench.Run(ctx, o); !errors.Is(err, bench.ErrUnreachable) || !strings.Contains(err.Error(), "target") {
		t.Errorf("unreachable target: err = %v, want ErrUnreachable naming the target", err)
	}

	o.Fleet = fl
	o.Instances = 2 // no Scaler: a fleet that cannot be re-scaled
	if _, err := bench.Run(ctx, o); !errors.Is(err, bench.ErrInvalidOptions) {
		t.Errorf("--instances without a scaler: err = %v, want ErrInvalidOptions", err)
	}
}

func TestIntegrationFlawedAndCorrect(t *testing.T) {
	fl, dir := fleetFromEnv(t)
	if len(fl.Instances) != 3 {
		t.Fatalf("the test stack has %d instances, want 3", len(fl.Instances))
	}
	base := bench.Options{Fleet: fl}

	t.Run("none oversells with 3 instances", func(t *testing.T) {
		o := base
		o.Strategies = []string{"none"}
		if !oversells(t, o) {
			t.Error("none did not oversell in 3 seeded runs on 3 instances")
		}
	})

	t.Run("mutex-tx oversells and releases before COMMIT", func(t *testing.T) {
		o := base
		o.Strategies = []string{"mutex-tx"}
		if !oversells(t, o) {
			t.Error("mutex-tx did not oversell in 3 seeded runs on 3 instances")
		}
	})

	t.Run("mutex oversells with 3 instances", func(t *testing.T) {
		o := base
		o.Strategies = []string{"mutex"}
		if !oversells(t, o) {
			t.Error("mutex did not oversell in 3 seeded runs on 3 instances")
		}
	})

	t.Run("mutex is correct with 1 instance", func(t *testing.T) {
		sc := scaler(dir, fl.AdminToken)
		t.Cleanup(func() {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			if _, err := sc.Scale(ctx, 3); err != nil {
				t.Errorf("restore 3 instances: %v", err)
			}
		})
		o := base
		o.Strategies, o.Instances, o.Scaler, o.Seed = []string{"mutex"}, 1, sc, 7
		r := runOne(t, o)
		t.Log(describe(r))
		if r.Instances != 1 || r.Oversold != 0 || r.FinalStock != 0 || r.InvariantsPassed != r.InvariantsTotal {
			t.Errorf("want 1 instance, oversold 0, final stock 0, all invariants; got %s", describe(r))
		}
		for _, name := range []string{bench.InvLinearizable, bench.InvMutualExclusion, bench.InvReleaseAfterCommit} {
			if inv := invariant(t, r, name); !inv.Pass || !inv.Applicable {
				t.Errorf("mutex on 1 instance: %s %+v, want an applicable pass", name, inv)
			}
		}
	})

	correct := []string{"redis-spin", "redis-ttl", "redis", "redlock", "zookeeper", "etcd", "mysql-unique",
		"mysql-forupdate", "mysql-optimistic", "sql-atomic", "redis-atomic"}
	for _, s := range correct {
		t.Run(s+" is correct", func(t *testing.T) {
			o := base
			o.Strategies, o.Seed = []string{s}, 11
			o.OutDir = filepath.Join(t.TempDir(), "out")
			r := runOne(t, o)
			t.Log(describe(r))
			if !r.ExpectedCorrect {
				t.Errorf("%s is not expected correct with these settings", s)
			}
			if r.Oversold != 0 || r.LostUpdates != 0 || r.FinalStock != 0 || r.InvariantsPassed != r.InvariantsTotal || r.InvariantsTotal != 11 {
				t.Errorf("want oversold 0, lost 0, final stock 0, 11/11 invariants; got %s", describe(r))
			}
			if inv := invariant(t, r, bench.InvLinearizable); !inv.Pass || !inv.Applicable {
				t.Errorf("%s: %+v, want a linearizable history", s, inv)
			}
			checkOutputs(t, o.OutDir, r)
			// Every sale runs a MySQL transaction, counted by the
			// instances' clients.
			if r.Cost == nil || r.Cost.Purchases != r.OK || r.Cost.RoundTrips["mysql"] < 2 {
				t.Errorf("%s: request counts %+v, want the MySQL round trips of %d sales", s, r.Cost, r.OK)
			}
		})
	}
}

// TestIntegrationSweep sweeps two strategies over 1 and 4 clients on the
// test stack's fleet, redis with and without its local queue: every
// series has both points, with sales.
func TestIntegrationSweep(t *testing.T) {
	fl, st, ctx := localStack(t)
	o := bench.Options{Fleet: fl, Strategies: []string{catalog.Redis, catalog.SQLAtomic}, Sweep: []int{4, 1},
		CompareQueue: true, Stock: 20, Requests: 20, Warmup: 5, Seed: 5, CalibrateRequests: -1, RunTimeout: time.Minute,
		OutDir: filepath.Join(t.TempDir(), "out"), CPU: st}
	rep, err := bench.Run(ctx, o)
	if err != nil {
		t.Fatalf("bench --sweep: %v", err)
	}
	if rep.Sweep == nil || !slices.Equal(rep.Sweep.Clients, []int{1, 4}) {
		t.Fatalf("sweep %+v, want clients 1 and 4", rep.Sweep)
	}
	if len(rep.Runs) != 6 || len(rep.Order) != 1 || rep.Warmup != 5 {
		t.Errorf("%d runs, order %v, warm-up %d; want 6 runs (3 series x 2 points), one round, warm-up 5", len(rep.Runs), rep.Order, rep.Warmup)
	}
	tests := []struct {
		label   string
		scaling bool // an expected-correct locker gets a scaling ratio
	}{
		{catalog.Redis, true},
		{catalog.Redis + " (" + bench.VariantNoQueue + ")", true},
		{catalog.SQLAtomic, false},
	}
	if len(rep.Sweep.Series) != len(tests) {
		t.Fatalf("%d series, want %d", len(rep.Sweep.Series), len(tests))
	}
	for i, tt := range tests {
		s := rep.Sweep.Series[i]
		if s.Label != tt.label {
			t.Errorf("series %d is %q, want %q", i, s.Label, tt.label)
		}
		for j, c := range rep.Sweep.Clients {
			if s.OKPerSec[j] == nil || s.OKPerSec[j].Median <= 0 {
				t.Errorf("%s at %d clients: ok/s %v, want > 0", s.Label, c, s.OKPerSec[j])
			}
		}
		if (s.ScalingRatio != nil) != tt.scaling {
			t.Errorf("%s: scaling ratio %v, want one: %v", s.Label, s.ScalingRatio, tt.scaling)
		}
	}
	for _, r := range rep.Runs {
		if r.Oversold != 0 || r.InvariantsPassed != r.InvariantsTotal {
			t.Errorf("%s", describe(r))
		}
		// Where the CPU went: every kind of the stack's processes is
		// sampled (20 requests are a tick or two of /proc's 10 ms
		// resolution, so a group may show 0), and the run used some.
		if r.CPU == nil {
			t.Errorf("%s at %d clients: no CPU use recorded", r.Label(), r.Concurrency)
		} else {
			for _, g := range []string{"mysql", "redis", "instance", "nginx", "bench"} {
				if _, ok := r.CPU.PerRequestUS[g]; !ok {
					t.Errorf("%s at %d clients: CPU per request %v: no %s", r.Label(), r.Concurrency, r.CPU.PerRequestUS, g)
				}
			}
			if r.CPU.TotalUS <= 0 {
				t.Errorf("%s at %d clients: CPU per request %v: none used", r.Label(), r.Concurrency, r.CPU.PerRequestUS)
			}
			if r.CPU.MachineBusy <= 0 || r.CPU.MachineBusy > 1 || r.CPU.CPUs < 1 {
				t.Errorf("%s at %d clients: machine busy %v of %d CPUs", r.Label(), r.Concurrency, r.CPU.MachineBusy, r.CPU.CPUs)
			}
		}
		if want := r.Concurrency == 1; (r.Warmup == 5) != want {
			t.Errorf("%s at %d clients: warm-up %d; want it before the first point only", r.Label(), r.Concurrency, r.Warmup)
		}
	}
	md, err := os.ReadFile(filepath.Join(o.OutDir, "report.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"## Sweep: successful purchases per second by clients", "## Local queue on and off", "## Per-purchase CPU", "- order: round 1: redis, redis (no queue), sql-atomic"} {
		if !strings.Contains(string(md), want) {
			t.Errorf("report.md lacks %q", want)
		}
	}
}

// TestIntegrationLockAlone: in Mode lock the purchases sell a lock-alone
// goods (a Redis counter, no database transaction) with every invariant
// checked as in a purchase: a correct lock passes them all, none on the
// fleet loses updates; a sold-out answer costs no round trip to MySQL; the
// report says the mode and names the strategies of a mixed list it
// skipped (they deduct in the database); a list of those alone is refused
// with the fix.
func TestIntegrationLockAlone(t *testing.T) {
	fl, _ := fleetFromEnv(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	o := bench.Options{Fleet: fl, Mode: bench.ModeLock, Strategies: []string{catalog.Redis, catalog.SQLAtomic, catalog.None, catalog.MySQLForUpdate}, Stock: 30, Requests: 60,
		Concurrency: 10, Config: stock.Config{WorkDelay: 2 * time.Millisecond}, Warmup: -1, Seed: 7, CalibrateRequests: -1, RunTimeout: time.Minute,
		OutDir: filepath.Join(t.TempDir(), "out")}
	rep, err := bench.Run(ctx, o)
	if err != nil {
		t.Fatalf("bench --mode lock: %v", err)
	}
	if rep.Environment.Mode != bench.ModeLock {
		t.Errorf("environment.mode %q, want lock", rep.Environment.Mode)
	}
	if want := []string{catalog.SQLAtomic, catalog.MySQLForUpdate}; !slices.Equal(rep.Skipped, want) {
		t.Errorf("skipped %v, want %v", rep.Skipped, want)
	}
	var ran []string
	for _, r := range rep.Runs {
		ran = append(ran, r.Strategy)
		switch r.Strategy {
		case catalog.Redis:
			if r.Oversold != 0 || r.LostUpdates != 0 || r.OK != 30 || r.InvariantsPassed != r.InvariantsTotal {
				t.Errorf("redis, lock alone: %s", describe(r))
			}
			// 30 of the 60 answers are sold out: none of them (nor a
			// sale) asks MySQL anything.
			if r.Outcomes[bench.OutcomeSoldOut] != 30 || r.Cost == nil {
				t.Errorf("redis, lock alone: outcomes %v, cost %+v: want 30 sold out, counted", r.Outcomes, r.Cost)
			} else if mysql := r.Cost.Counts[catalog.ServerMySQL]; len(mysql) > 0 {
				t.Errorf("redis, lock alone: MySQL requests %+v, want none (the lock-alone goods is a Redis counter)", mysql)
			}
		case catalog.None:
			if r.LostUpdates == 0 {
				t.Errorf("none, lock alone, lost no update: %s", describe(r))
			}
		}
	}
	if !slices.Equal(ran, []string{catalog.Redis, catalog.None}) {
		t.Errorf("ran %v, want the locks of the list and none", ran)
	}
	md, err := os.ReadFile(filepath.Join(o.OutDir, "report.md"))
	if err != nil || !strings.Contains(string(md), "- mode: lock alone") || !strings.Contains(string(md), "- skipped: sql-atomic, mysql-forupdate: not a lock") {
		t.Errorf("report.md (%v) does not state the mode and the strategies skipped", err)
	}
	o.Strategies = []string{catalog.SQLAtomic}
	if _, err := bench.Run(ctx, o); !errors.Is(err, bench.ErrInvalidOptions) || !strings.Contains(err.Error(), "drop --mode lock") {
		t.Errorf("sql-atomic alone in Mode lock: %v, want ErrInvalidOptions with the fix", err)
	}
}

// TestIntegrationDBCeiling runs a two-round bench with the database's
// ceiling: it is measured before each round, "of DB" divides the median
// ok/s by the median of those, the report says so, and the ceiling's goods
// is left with no stock and no orders.
func TestIntegrationDBCeiling(t *testing.T) {
	fl, st, ctx := localStack(t)
	out := filepath.Join(t.TempDir(), "out")
	o := bench.Options{Fleet: fl, Strategies: []string{catalog.SQLAtomic}, Stock: 40, Requests: 40, Concurrency: 8,
		Repeat: 2, Seed: 3, CalibrateRequests: 200, DatabaseDSN: st.MySQLDSN(), RunTimeout: time.Minute, OutDir: out}
	rep, err := bench.Run(ctx, o)
	if err != nil {
		t.Fatalf("bench: %v", err)
	}
	c := rep.DBCeiling
	if c == nil || len(c.RoundsTPS) != 2 || c.Transactions != 200 || c.Concurrency != 8 {
		t.Fatalf("database ceiling %+v, want 2 measurements of 200 transactions by 8 clients", c)
	}
	lo, hi := min(c.RoundsTPS[0], c.RoundsTPS[1]), max(c.RoundsTPS[0], c.RoundsTPS[1])
	if c.TPS != (lo+hi)/2 || lo <= 0 {
		t.Errorf("ceiling %.1f/s, want the median of %v", c.TPS, c.RoundsTPS)
	}
	s := rep.Summary[0]
	if s.OfDBCeiling == nil || *s.OfDBCeiling != s.OKPerSec.Median/c.TPS {
		t.Errorf("of DB = %v, want %.1f / %.1f", s.OfDBCeiling, s.OKPerSec.Median, c.TPS)
	}
	md, err := os.ReadFile(filepath.Join(out, "report.md"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(md), "the median of 2 measurements, one before each round") {
		t.Errorf("report.md does not say how the ceiling was measured:\n%s", md)
	}
	a, err := bench.NewAdmin(fl.AdminToken).Audit(ctx, fl.Instances[0], bench.DBCeilingGoodsID)
	if err != nil {
		t.Fatal(err)
	}
	if a.Stock != 0 || a.Orders != 0 {
		t.Errorf("the ceiling's goods after the bench: stock %d, orders %d; want 0 and 0", a.Stock, a.Orders)
	}
}
