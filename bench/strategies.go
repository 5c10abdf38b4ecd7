package bench

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/seckill-lab/seckill/stock"
)

// Strategies lists, in report order, the lock strategies the service
// implements (the names of PUT /admin/strategy), taken from the stock
// package's catalogue: the one place that knows them.
var Strategies = stock.StrategyNames()

// ExpectedCorrect reports whether strategy s is expected to never oversell
// on a fleet of n instances with the given work delay and lock TTL (a zero
// TTL means the service default, assumed to outlast the work). The
// deliberately flawed ones: none and mutex-tx always, mutex with more than
// one instance, redis-ttl when the work outlasts the TTL.
func ExpectedCorrect(s string, instances int, work, ttl time.Duration) bool {
	switch s {
	case "none", "mutex-tx":
		return false
	case "mutex":
		return instances <= 1
	case "redis-ttl":
		return ttl == 0 || work < ttl
	}
	return slices.Contains(Strategies, s)
}

// ParseStrategies turns the --strategies value ("all" or a comma-separated
// list) into a list of known names, in the order given, without duplicates.
func ParseStrategies(v string) ([]string, error) {
	v = strings.TrimSpace(v)
	if v == "" || v == "all" {
		return slices.Clone(Strategies), nil
	}
	var out []string
	for _, p := range strings.Split(v, ",") {
		p = strings.TrimSpace(p)
		if p == "" {
			continue
		}
		if p == "all" {
			return nil, fmt.Errorf("--strategies: \"all\" cannot be combined with other names")
		}
		if !slices.Contains(Strategies, p) {
			return nil, fmt.Errorf("unknown strategy %q; valid: all, %s", p, strings.Join(Strategies, ", "))
		}
		if !slices.Contains(out, p) {
			out = append(out, p)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("--strategies: no strategy given; valid: all, %s", strings.Join(Strategies, ", "))
	}
	return out, nil
}
