package bench

import (
	"fmt"
	"slices"
	"strings"

	"github.com/seckill-lab/seckill/stock"
	"github.com/seckill-lab/seckill/stock/catalog"
)

// Strategies lists, in report order, the strategies the service implements
// (the names of PUT /admin/strategy), from the stock package's registry: the
// one place that knows them.
func Strategies() []string { return catalog.StrategyNames() }

// Renewing lists the strategies whose lock renews itself while held and
// can be told not to (Options.Config.NoWatchdog).
func Renewing() []string { return catalog.Names(func(s catalog.Strategy) bool { return s.Renews }) }

// Pausing lists the strategies whose release is two commands with
// Options.Config.ReleasePause between them.
func Pausing() []string {
	return catalog.Names(func(s catalog.Strategy) bool { return s.ReleasePause })
}

// MaxBatch is the largest Options.Config.Batch.
const MaxBatch = stock.MaxBatch

// Batching lists the strategies a lock holder of which can sell a batch of
// purchases (Options.Config.Batch).
func Batching() []string { return catalog.Names(catalog.Strategy.Batches) }

// ExpectedCorrect reports whether strategy s is expected never to oversell
// on a fleet of instances under c, as its registry entry says
// (stock.ExpectedCorrect). An unknown name is not.
func ExpectedCorrect(s string, instances int, c stock.Config) bool {
	info, ok := catalog.Lookup(s)
	return ok && stock.ExpectedCorrect(info, instances, c)
}

// ParseStrategies turns a strategies list ("all" or a comma-separated
// list) into a list of known names, in the order given, without duplicates.
func ParseStrategies(v string) ([]string, error) { // groups: see strategyGroups
	v = strings.TrimSpace(v)
	if v == "" || v == "all" {
		return Strategies(), nil
	}
	if g, ok := strategyGroups[v]; ok {
		return g(), nil
	}
	var out []string
	for _, p := range strings.Split(v, ",") {
		p = strings.TrimSpace(p)
		if p == "" {
			continue
		}
		if p == "all" {
			return nil, fmt.Errorf("strategies: \"all\" cannot be combined with other names")
		}
		if _, ok := catalog.Lookup(p); !ok { // the registry's, or an exercise's (catalog.Extend)
			return nil, fmt.Errorf("unknown strategy %q; valid: all, correct, flawed, or %s", p, strings.Join(Strategies(), ", "))
		}
		if !slices.Contains(out, p) {
			out = append(out, p)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("strategies: no strategy given; valid: all, %s", strings.Join(Strategies(), ", "))
	}
	return out, nil
}

// Queued lists the strategies the service's local queue applies to
// (Options.CompareQueue): catalog.Strategy.Queued, the locks held at a
// server and mysql-optimistic.
func Queued() []string {
	return catalog.Names(catalog.Strategy.Queued)
}

// Locker reports whether s protects its read-modify-write with a lock
// (catalog.KindLocker), the strategies a sweep gives a scaling ratio.
func Locker(s string) bool {
	info, ok := catalog.Lookup(s)
	return ok && info.Kind == catalog.KindLocker
}

// strategyGroups are the names --strategies takes for a group: "correct"
// (every strategy that is not deliberately flawed) and "flawed".
var strategyGroups = map[string]func() []string{
	"correct": func() []string { return catalog.Names(func(s catalog.Strategy) bool { return !s.Flawed }) },
	"flawed":  func() []string { return catalog.Names(func(s catalog.Strategy) bool { return s.Flawed }) },
}
