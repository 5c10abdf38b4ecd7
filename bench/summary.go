package bench

import (
	"fmt"
	"slices"

	"github.com/seckill-lab/seckill/stock/catalog"
)

// Stat is the median and range of one figure over a strategy's repeats.
type Stat struct {
	Median float64 `json:"median"`
	Min    float64 `json:"min"`
	Max    float64 `json:"max"`
}

func statOf(vs []float64) Stat {
	if len(vs) == 0 {
		return Stat{}
	}
	s := slices.Clone(vs)
	slices.Sort(s)
	m := s[len(s)/2]
	if len(s)%2 == 0 {
		m = (s[len(s)/2-1] + s[len(s)/2]) / 2
	}
	return Stat{Median: m, Min: s[0], Max: s[len(s)-1]}
}

// Summary sums up one strategy over its repeats: one strategy, variant
// and concurrency.
type Summary struct {
	// Name is the row's name: the run label (RunResult.Label), followed
	// in a sweep by " @N" clients.
	Name            string `json:"name"`
	Strategy        string `json:"strategy"`
	Variant         string `json:"variant,omitempty"`
	Concurrency     int    `json:"concurrency"`
	Repeats         int    `json:"repeats"`
	ExpectedCorrect bool   `json:"expected_correct"`
	// ServiceURL is the service a row of Options.Services loaded through
	// the contract; "" for a strategy of the lab's fleet.
	ServiceURL string `json:"service_url,omitempty"`
	Oversold   Stat   `json:"oversold"`
	// OversoldRuns is how many of the Repeats oversold.
	OversoldRuns  int   `json:"oversold_runs"`
	LostUpdates   Stat  `json:"lost_updates"`
	OK            Stat  `json:"ok"`
	FinalStock    Stat  `json:"final_stock"`
	ThroughputRPS Stat  `json:"throughput_rps"`
	OKPerSec      Stat  `json:"ok_per_s"`
	P50MS         Stat  `json:"p50_ms"`
	P99MS         Stat  `json:"p99_ms"`
	LockWaitMS    *Stat `json:"lock_wait_ms"`
	// InvariantsPassed/Total add up every repeat's invariants.
	InvariantsPassed int `json:"invariants_passed"`
	InvariantsTotal  int `json:"invariants_total"`
	// ThroughputRatioSQLAtomic is the median throughput over sql-atomic's
	// at the same concurrency (nil when sql-atomic did not run).
	ThroughputRatioSQLAtomic *float64 `json:"throughput_ratio_sql_atomic"`
	// OfDBCeiling is the median sales per second over the database's own
	// limit for the purchase transaction (Report.DBCeiling; nil when it
	// was not measured).
	OfDBCeiling *float64 `json:"of_db_ceiling,omitempty"`
	// Limit is what bounded the row's throughput (limitOf): the lab's
	// CPU, the database or the lock's server; nil without CPU figures.
	Limit *Limit `json:"limited_by,omitempty"`
}

// runNamer returns the function that names a run's summary row: its
// label, and " @N" when the runs went at more than one concurrency.
func runNamer(runs []RunResult) func(RunResult) string {
	multi := false
	for _, r := range runs {
		multi = multi || r.Concurrency != runs[0].Concurrency
	}
	return func(r RunResult) string {
		if multi {
			return fmt.Sprintf("%s @%d", r.Label(), r.Concurrency)
		}
		return r.Label()
	}
}

// Summarize groups runs by strategy, variant and concurrency (in
// first-seen order).
func Summarize(runs []RunResult) []Summary {
	nameOf := runNamer(runs)
	var order []string
	by := map[string][]RunResult{}
	for _, r := range runs {
		k := nameOf(r)
		if _, ok := by[k]; !ok {
			order = append(order, k)
		}
		by[k] = append(by[k], r)
	}
	out := make([]Summary, 0, len(order))
	for _, name := range order {
		rs := by[name]
		get := func(f func(RunResult) float64) Stat {
			vs := make([]float64, len(rs))
			for i, r := range rs {
				vs[i] = f(r)
			}
			return statOf(vs)
		}
		sm := Summary{
			Name: name, Strategy: rs[0].Strategy, Variant: rs[0].Variant, Concurrency: rs[0].Concurrency,
			Repeats: len(rs), ExpectedCorrect: rs[0].ExpectedCorrect, ServiceURL: rs[0].ServiceURL,
			Oversold:      get(func(r RunResult) float64 { return float64(r.Oversold) }),
			LostUpdates:   get(func(r RunResult) float64 { return float64(r.LostUpdates) }),
			OK:            get(func(r RunResult) float64 { return float64(r.OK) }),
			FinalStock:    get(func(r RunResult) float64 { return float64(r.FinalStock) }),
			ThroughputRPS: get(func(r RunResult) float64 { return r.ThroughputRPS }),
			OKPerSec:      get(func(r RunResult) float64 { return r.OKPerSec }),
			P50MS:         get(func(r RunResult) float64 { return r.LatencyMS.P50 }),
			P99MS:         get(func(r RunResult) float64 { return r.LatencyMS.P99 }),
		}
		var waits []float64
		for _, r := range rs {
			if r.Oversold > 0 {
				sm.OversoldRuns++
			}
			sm.InvariantsPassed += r.InvariantsPassed
			sm.InvariantsTotal += r.InvariantsTotal
			if r.LockWaitMS != nil {
				waits = append(waits, *r.LockWaitMS)
			}
		}
		if len(waits) > 0 {
			st := statOf(waits)
			sm.LockWaitMS = &st
		}
		out = append(out, sm)
	}
	base := map[int]float64{}
	for _, s := range out {
		if s.Strategy == catalog.SQLAtomic && s.Variant == "" {
			base[s.Concurrency] = s.ThroughputRPS.Median
		}
	}
	for i := range out {
		if b := base[out[i].Concurrency]; b > 0 {
			v := out[i].ThroughputRPS.Median / b
			out[i].ThroughputRatioSQLAtomic = &v
		}
	}
	return out
}

// setDBCeiling fills every summary's OfDBCeiling.
func setDBCeiling(ss []Summary, c *DBCeiling) {
	if c == nil || c.TPS <= 0 {
		return
	}
	for i := range ss {
		v := ss[i].OKPerSec.Median / c.TPS
		ss[i].OfDBCeiling = &v
	}
}

// bestThroughput is the highest median throughput of the summaries.
func bestThroughput(ss []Summary) float64 {
	best := 0.0
	for _, s := range ss {
		best = max(best, s.ThroughputRPS.Median)
	}
	return best
}

// fmtStat prints a stat: the median alone for one repeat or when min ==
// max, else "median (min–max)".
func fmtStat(s Stat, repeats int, format string) string {
	m, lo, hi := fmt.Sprintf(format, s.Median), fmt.Sprintf(format, s.Min), fmt.Sprintf(format, s.Max)
	if repeats <= 1 || lo == hi {
		return m
	}
	return fmt.Sprintf("%s (%s–%s)", m, lo, hi)
}
