package bench

import (
	"fmt"
	"slices"

	"github.com/seckill-lab/seckill/stock/catalog"
)

// Limit says what bounded a summary's throughput, from the CPU table and
// the ceilings: the lab's own CPU (the load generator, nginx, the
// instances), the database, or the lock's server.
type Limit struct {
	// By is "lab", "database" or "lock server".
	By string `json:"by"`
	// Why is the evidence, one sentence.
	Why string `json:"why"`
}

// The limits a row can name.
const (
	LimitLab      = "lab"
	LimitDatabase = "database"
	LimitServer   = "lock server"
)

// busyBound is the machine's busy share above which the CPUs, not a wait,
// bound a run (the CPU table's "machine busy").
const busyBound = 0.85

// labGroups are the CPU groups that are the lab, not the servers under
// test.
var labGroups = []string{"bench", "nginx", "instance", "proxy", "dashboard"}

// limitOf decides what bounded a summary's runs, in this order:
//  1. the generator: its ceiling is below MinCeilingRatio times the
//     summary's throughput ("lab");
//  2. the machine's CPUs, when they were busy (busyBound, median over the
//     runs): the lab when its processes took at least half of the CPU per
//     purchase, else the server that took the most (mysql: "database");
//  3. otherwise a wait on a server, not the CPU: the lock's server for a
//     strategy that needs one (catalog.Strategy.Server), the database for
//     the others.
//
// ok is false when the runs have no CPU figures (not Linux, no sampler).
func limitOf(runs []RunResult, s Summary, ceilingRPS float64) (Limit, bool) {
	var us []*CPUUse
	for _, r := range runs {
		if r.CPU != nil {
			us = append(us, r.CPU)
		}
	}
	if len(us) == 0 || s.ServiceURL != "" { // a service's processes are not the lab's to read
		return Limit{}, false
	}
	med := func(f func(*CPUUse) float64) float64 {
		vs := make([]float64, len(us))
		for i, u := range us {
			vs[i] = f(u)
		}
		return statOf(vs).Median
	}
	rps := s.ThroughputRPS.Median
	if ceilingRPS > 0 && rps > 0 && ceilingRPS < MinCeilingRatio*rps {
		return Limit{By: LimitLab, Why: fmt.Sprintf("the generator: its ceiling %.0f req/s is %.1fx this row's %.0f (below %.0fx)",
			ceilingRPS, ceilingRPS/rps, rps, MinCeilingRatio)}, true
	}
	busy := med(func(u *CPUUse) float64 { return u.MachineBusy })
	total := med(func(u *CPUUse) float64 { return u.TotalUS })
	groups := map[string]float64{}
	for _, u := range us {
		for g := range u.PerRequestUS {
			groups[g] = 0
		}
	}
	for g := range groups {
		groups[g] = med(func(u *CPUUse) float64 { return u.PerRequestUS[g] })
	}
	lab := 0.0
	top, topUS := "", 0.0
	for g, v := range groups {
		if slices.Contains(labGroups, g) {
			lab += v
			continue
		}
		if v > topUS || v == topUS && g < top {
			top, topUS = g, v
		}
	}
	info, _ := catalog.Lookup(s.Strategy)
	if busy >= busyBound && total > 0 {
		if lab >= total/2 || top == "" {
			return Limit{By: LimitLab, Why: fmt.Sprintf("the CPUs (%.0f%% busy), %.0f of %.0f µs per purchase in the lab's processes", 100*busy, lab, total)}, true
		}
		by := LimitServer
		if top == "mysql" {
			by = LimitDatabase
		}
		return Limit{By: by, Why: fmt.Sprintf("the CPUs (%.0f%% busy), most of them in %s (%.0f of %.0f µs per purchase)", 100*busy, top, topUS, total)}, true
	}
	switch info.Server {
	case catalog.ServerNone, catalog.ServerMySQL, catalog.ServerProcess:
		return Limit{By: LimitDatabase, Why: fmt.Sprintf("a wait in the database (CPUs %.0f%% busy)", 100*busy)}, true
	}
	return Limit{By: LimitServer, Why: fmt.Sprintf("a wait on %s (CPUs %.0f%% busy)", info.Server, 100*busy)}, true
}

// setLimits fills every summary's Limit from the runs it summarises.
func setLimits(ss []Summary, runs []RunResult, ceilingRPS float64) {
	nameOf := runNamer(runs)
	for i := range ss {
		var mine []RunResult
		for _, r := range runs {
			if nameOf(r) == ss[i].Name {
				mine = append(mine, r)
			}
		}
		if l, ok := limitOf(mine, ss[i], ceilingRPS); ok {
			ss[i].Limit = &l
		}
	}
}

// limitCell is a summary's "limited by" cell.
func limitCell(s Summary) string {
	if s.Limit == nil {
		return "-"
	}
	return s.Limit.By
}
