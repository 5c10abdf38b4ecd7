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

// Renewing lists the strategies whose lock renews itself while held and
// can be told not to (--no-watchdog).
var Renewing = []string{"redis", "redlock", "mysql-unique"}

// Setting is what decides whether a strategy is expected to be correct.
type Setting struct {
	Instances int           // instances of the fleet
	Work      time.Duration // work inside the critical section
	TTL       time.Duration // lock TTL; 0 = the service default, assumed to outlast the work
	// NoWatchdog: the lock is not renewed while held (--no-watchdog).
	NoWatchdog bool
	Fencing    bool
}

// ExpectedCorrect reports whether strategy s is expected never to oversell
// under st. The deliberately flawed ones are none and mutex-tx always,
// mutex with more than one instance, and redis-ttl when the work outlasts
// the TTL. redis, redlock and mysql-unique without their watchdog are
// flawed too when the work outlasts the TTL, unless fencing rejects the
// stale holder (redlock has no tokens to fence with).
func ExpectedCorrect(s string, st Setting) bool {
	outlasts := st.TTL > 0 && st.Work >= st.TTL
	switch s {
	case "none", "mutex-tx":
		return false
	case "mutex":
		return st.Instances <= 1
	case "redis-ttl":
		return !outlasts
	case "redis", "redlock", "mysql-unique": // Renewing
		if st.NoWatchdog && outlasts {
			return st.Fencing && s != "redlock"
		}
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
