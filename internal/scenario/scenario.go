// Package scenario runs the sources' failure stories as one-command
// experiments: each scenario brings the load, strikes at the moment its
// story needs (pausing the instance that just took the lock, killing it,
// restarting a Redlock node that granted it), heals, audits, and compares
// the strategies under three protections: none, the lease check, and
// fencing tokens. The load, the audit and the invariants are the bench's
// (package bench); a scenario adds the strike and the verdict.
package scenario

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/seckill-lab/seckill/bench"
	"github.com/seckill-lab/seckill/internal/stack"
	"github.com/seckill-lab/seckill/stock/catalog"
)

// Protection is what stands between a stale holder and the stock.
type Protection string

// Protections, in the order of the lesson.
const (
	// ProtectNone: no lease check, no fencing.
	ProtectNone Protection = "unprotected"
	// ProtectLeaseCheck: the holder checks its lease right before COMMIT
	// (on unless stock.Config.NoLeaseCheck); a pause after the check still wins.
	ProtectLeaseCheck Protection = "lease-check"
	// ProtectFencing: the store refuses a token older than the newest it
	// accepted (stock.Config.Fencing); the lease check is off, to show
	// fencing alone.
	ProtectFencing Protection = "fencing"
)

// Protections lists them in the lesson's order.
// Meaning says in one line what a protection does and what it does not.
var Meaning = map[Protection]string{
	ProtectNone:       "unprotected: the lock alone; a holder whose lock was lost (expired, failed over, restarted) still writes",
	ProtectLeaseCheck: "lease-check: the holder checks its lease right before COMMIT; it narrows the window but is not a guarantee, since a holder paused after the check, or whose client has not yet noticed the loss, still commits",
	ProtectFencing:    "fencing: the store refuses a token older than the newest it has seen, so a stale holder's write is rolled back whatever its timing (needs a lock with increasing tokens)",
}

func Protections() []Protection {
	return []Protection{ProtectNone, ProtectLeaseCheck, ProtectFencing}
}

// Load is a scenario's seeded load.
type Load struct {
	Stock, Requests, Concurrency int
	WorkDelay, LockTTL, LockWait time.Duration
	// NoWatchdog runs the lock without renewal (bench.Options.Config.NoWatchdog).
	NoWatchdog bool
}

// Striker builds the strike of one run. dir is the stack's run directory.
type Striker func(dir string, s catalog.Strategy, goods int64) bench.Striker

// Scenario is one failure story.
type Scenario struct {
	Name string
	// Seed names the source passage; Story says what happens; Predicts what
	// the source predicts.
	Seed, Story, Predicts string
	// Topology is what it needs: "single" (the default stack) or "ha".
	Topology string
	// ExactTopology: the scenario proves nothing on another topology, so
	// it refuses one (NotOn says why): it strikes a component that serves
	// the lock on Topology only.
	ExactTopology bool
	NotOn         string
	// Proxy: it needs the fault proxy (`seckill up --proxy`).
	Proxy bool
	// Strategies it runs by default.
	Strategies []string
	Load       Load
	// Short is the load of the seeded version the tests run.
	Short  Load
	Strike Striker
	// Prepare, when set, runs before each run's load, on the stack in dir
	// (e.g. wait until the previous run's failover has settled).
	Prepare func(ctx context.Context, dir string) error
}

// ErrUnknown is returned for a scenario name that does not exist.
var ErrUnknown = errors.New("unknown scenario")

// Find returns the scenario named name, or ErrUnknown listing the valid ones.
func Find(name string) (Scenario, error) {
	for _, s := range All() {
		if s.Name == name {
			return s, nil
		}
	}
	var names []string
	for _, s := range All() {
		names = append(names, s.Name)
	}
	return Scenario{}, fmt.Errorf("%w %q; the scenarios are %s", ErrUnknown, name, strings.Join(names, ", "))
}

// Fits returns why the stack st cannot run sc (the topology or the proxy
// it needs, and how to get them), or nil.
func (sc Scenario) Fits(st *stack.State) error {
	var need []string
	flags := ""
	if sc.Topology == stack.TopologyHA && !st.HA() {
		need, flags = append(need, "the ha topology"), flags+" --topology ha"
	}
	if sc.ExactTopology && sc.Topology != stack.TopologyHA && st.HA() {
		return fmt.Errorf("scenario %s proves nothing on the ha topology (%s): seckill down --dir %s, then seckill up --dir %s",
			sc.Name, sc.NotOn, st.Dir, st.Dir)
	}
	if sc.Proxy && !st.Proxy {
		need, flags = append(need, "the fault proxy"), flags+" --proxy"
	}
	if len(need) == 0 {
		return nil
	}
	return fmt.Errorf("scenario %s needs %s: seckill down --dir %s, then seckill up --dir %s%s",
		sc.Name, strings.Join(need, " and "), st.Dir, st.Dir, flags)
}

// goodsBase is the first goods id of sc's runs: each scenario sells goods
// of its own, so no lock or fence of one scenario's run is left on the
// goods of another's.
func goodsBase(name string) int64 {
	for i, s := range All() {
		if s.Name == name {
			return 1_000 * int64(i+2)
		}
	}
	return 1_000
}

// ParseProtections reads "unprotected,lease-check,fencing" (or "all").
func ParseProtections(v string) ([]Protection, error) {
	if v == "" || v == "all" {
		return Protections(), nil
	}
	var out []Protection
	for _, p := range strings.Split(v, ",") {
		p = strings.TrimSpace(p)
		if !slices.Contains(Protections(), Protection(p)) {
			return nil, fmt.Errorf("unknown protection %q; valid: all, unprotected, lease-check, fencing", p)
		}
		out = append(out, Protection(p))
	}
	return out, nil
}
