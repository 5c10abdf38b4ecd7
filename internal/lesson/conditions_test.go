package lesson

import (
	"testing"

	"github.com/seckill-lab/seckill/bench"
	"github.com/seckill-lab/seckill/bench/fleet"
)

// TestConditionsLine: a lesson's conditions line describes the benches
// its figures come from: one line when they share it; for lesson 28
// (throughput and a kill -9 at the default durability, Redis killed at the
// default and on an fsync stack of its own) the durability of each; a
// figure from a scenario adds nothing; a bench the lesson runs itself
// (bench.Run, then r.last) counts as well.
func TestConditionsLine(t *testing.T) {
	env := func(durability string, mod ...func(*bench.Environment)) *bench.Report {
		e := bench.Environment{CPUs: 2, Hostname: "vm", Instances: 3, Durability: durability, Mode: bench.ModePurchase, Priority: "servers-first"}
		for _, m := range mod {
			m(&e)
		}
		return &bench.Report{Environment: e}
	}
	lockAlone := func(e *bench.Environment) { e.Mode = bench.ModeLock }
	crossZone := func(e *bench.Environment) { e.RTT = fleet.RTT{Profile: "cross-zone", MeasuredMS: 2.05} }
	otherHost := func(e *bench.Environment) { e.Hostname = "other" }
	const base = "round trip loopback (no round trip added), durability default, mode purchase, 3 instances, CPU priority servers-first, 2 CPUs (vm)"
	// step is what a lesson does: a bench through the runner (bench), one
	// it runs itself (own), a scenario, or a figure.
	type step struct {
		bench, own *bench.Report
		scenario   bool
		figure     string
	}
	tests := []struct {
		name  string
		steps []step
		want  string
	}{
		{"no bench", []step{{scenario: true}, {figure: "story"}}, ""},
		{"one bench, two figures", []step{{bench: env("default")}, {figure: "ok/s"}, {figure: "ratio"}}, base},
		{"lesson 28: throughput and kill -9 at default, Redis killed at default and fsync", []step{
			{bench: env("default")}, {figure: "Successful purchases per second (median)"}, {figure: "redis-stream over sql-atomic: ok/s"},
			{bench: env("default")}, {figure: "kill -9 of inst-2 mid-run: the orders once drained"},
			{bench: env("default")}, {bench: env("fsync")}, {figure: "Redis killed mid-run: 2xx answers whose order was lost"},
		}, "round trip loopback (no round trip added), mode purchase, 3 instances, CPU priority servers-first, 2 CPUs (vm); " +
			`durability default for "Successful purchases per second (median)" and "kill -9 of inst-2 mid-run"; durability default and fsync for "Redis killed mid-run"`},
		{"a scenario's figure between benches adds nothing", []step{
			{bench: env("default")}, {figure: "ok/s"}, {scenario: true}, {figure: "story"}, {bench: env("default")}, {figure: "again"},
		}, base},
		{"lesson 26's own benches: round trip, durability and mode differ", []step{
			{own: env("default")}, {figure: "loopback, purchase: ok/s"},
			{own: env("fsync", crossZone)}, {figure: "cross-zone, fsync: ok/s"},
			{own: env("default", lockAlone)}, {figure: "the lock alone: ok/s"},
		}, "3 instances, CPU priority servers-first, 2 CPUs (vm); " +
			`round trip loopback (no round trip added) for "loopback, purchase" and "the lock alone"; round trip 2.050 ms measured (cross-zone) for "cross-zone, fsync"; ` +
			`durability default for "loopback, purchase" and "the lock alone"; durability fsync for "cross-zone, fsync"; ` +
			`mode purchase for "loopback, purchase" and "cross-zone, fsync"; mode lock alone for "the lock alone"`},
		{"a bench after the last figure is no figure's", []step{{bench: env("default")}, {figure: "ok/s"}, {bench: env("fsync")}}, base},
		{"another machine: each figure's own line", []step{{bench: env("default")}, {figure: "here: ok/s"}, {bench: env("default", otherHost)}, {figure: "there: ok/s"}},
			`"here": ` + base + `; "there": ` + env("default", otherHost).Environment.Conditions()},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := &runner{}
			for _, s := range tt.steps {
				switch {
				case s.bench != nil:
					r.last = s.bench
					r.noteBench(s.bench)
				case s.own != nil:
					r.last = s.own
				case s.scenario:
					r.ran = true
				default:
					r.figure(Figure{Title: s.figure})
				}
			}
			if got := conditionsLine(r.exps); got != tt.want {
				t.Errorf("conditions:\n got %s\nwant %s", got, tt.want)
			}
		})
	}
}
