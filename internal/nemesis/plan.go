// Package nemesis owns `seckill nemesis`: a steady purchase load on the
// ha topology under one strategy while a nemesis draws faults from a
// seeded schedule (Plan) - kill -9 and restart a server member or an
// instance, pause and resume one, stall or cut an instance's link to a
// server through the fault proxy, fail the Redis primary over - each for a
// drawn time, some overlapping, most of them on the servers and links the
// strategy needs. The clients are careful (bench.Options.Resend): a
// purchase without a definite answer is sent again with its key. At the
// end it checks the bench's invariants (oversold 0, every 2xx has its
// order, every order's request got a 2xx, the history linearizable where
// it can be decided) and, for each fault, when it began, when it healed
// and how long sales stopped around it; it writes nemesis.json,
// nemesis.md and nemesis.svg (the faults drawn on the sales timeline).
package nemesis

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"time"

	"github.com/seckill-lab/seckill/internal/fault"
)

// Group is one link group of the stack's servers as the nemesis faults it.
type Group struct {
	// Link names the group as link faults do (redis, etcd, mysql).
	Link string
	// Members are its components (redis-primary, sentinel-1, etcd-2...).
	Members []string
	// Leads: one member leads the others (a Redis primary, a quorum
	// leader), so a fault may aim at whichever leads when it begins.
	Leads bool
	// Failover: Sentinels watch it, so a failover is one of its faults.
	Failover bool
}

// Layout is what the schedule draws targets from: the instances, the
// group the strategy needs and the other groups of the stack.
type Layout struct {
	Instances []string
	Needed    Group
	Others    []Group
}

// LeaderPrefix begins a target that names no member but the group's
// leader when the fault begins ("leader:redis").
const LeaderPrefix = "leader:"

// Fault is one fault of the schedule.
type Fault struct {
	// Kind is a kind of internal/fault (kill, pause, partition, latency,
	// failover).
	Kind string `json:"kind"`
	// Target is a component, LeaderPrefix+LINK, INSTANCE/LINK for a link
	// fault, or "" for a failover.
	Target string `json:"target"`
	// Needed: it hits the servers or links the strategy needs.
	Needed bool `json:"needed"`
	// Start is since the load's start; For how long it lasts (a failover
	// lasts as long as it takes).
	Start time.Duration `json:"planned_start_ns"`
	For   time.Duration `json:"planned_for_ns"`
	// Delay is a latency fault's added round trip.
	Delay time.Duration `json:"delay_ns,omitempty"`
	// scope is what two overlapping faults must not share.
	scope string
}

// String is "kill leader:redis at 12.3s for 4.1s".
func (f Fault) String() string {
	what := f.Kind
	if f.Target != "" {
		what += " " + f.Target
	}
	if f.Delay > 0 {
		what += " +" + f.Delay.String()
	}
	return fmt.Sprintf("%s at %s for %s", what, f.Start.Round(100*time.Millisecond), f.For.Round(100*time.Millisecond))
}

// Delays are the latency faults' round trips, drawn from.
var Delays = []time.Duration{200 * time.Millisecond, 500 * time.Millisecond, time.Second}

// MaxOn is the most faults on at once.
const MaxOn = 2

// lead and tail are the quiet spans at the start (sales settle) and at
// the end (sales resume, so every fault's gap is seen) of a run of d.
func lead(d time.Duration) time.Duration { return min(d/10, 10*time.Second) }
func tail(d time.Duration) time.Duration { return min(d/5, 30*time.Second) }

// Plan draws the schedule of a run of d from seed: one fault every
// `every` on average (spacing drawn from every/3 to 5/3 every), each
// lasting from every/4 to 2/3 every, after a quiet lead and before a
// quiet tail. Three faults of five hit the needed group (its members, its
// leader, an instance's link to it, a failover), so at least half do; the
// others kill or pause an instance, or hit another group. At most MaxOn
// are on at once, and overlapping faults never share a scope (one
// component, one group's members, one link). It is a pure function of its
// arguments.
func Plan(seed int64, d, every time.Duration, l Layout) ([]Fault, error) {
	switch {
	case every < time.Second:
		return nil, fmt.Errorf("nemesis: --every %s: at least 1s between faults", every)
	case d < 3*every:
		return nil, fmt.Errorf("nemesis: --for %s is too short for a fault every %s: give at least %s", d, every, 3*every)
	case len(l.Instances) == 0:
		return nil, fmt.Errorf("nemesis: the stack has no instances")
	case len(l.Needed.Members) == 0:
		return nil, fmt.Errorf("nemesis: the stack runs none of the servers of link %q the strategy needs", l.Needed.Link)
	}
	rng := rand.New(rand.NewPCG(uint64(seed), 0x6e656d65736973))
	draw := func(lo, hi time.Duration) time.Duration { return lo + time.Duration(rng.Int64N(int64(hi-lo)+1)) }
	var out []Fault
	end := d - tail(d)
	for t, i := lead(d), 0; ; i++ {
		t += draw(every/3, every*5/3)
		f := Fault{Start: t, For: draw(every/4, every*2/3)}
		if f.Start+f.For > end {
			return out, nil
		}
		needed := i%5 == 0 || i%5 == 2 || i%5 == 4
		for try := 0; try < 10; try++ {
			g := pick(rng, l, needed)
			g.Start, g.For = f.Start, f.For
			if g.Kind == fault.Failover {
				g.For = 0 // over when the demoted primary replicates the new one
			}
			if fits(out, g) {
				out = append(out, g)
				break
			}
		}
	}
}

// pick draws a fault's kind and target: on the needed group, or not.
func pick(rng *rand.Rand, l Layout, needed bool) Fault {
	inst := l.Instances[rng.IntN(len(l.Instances))]
	if needed {
		g := l.Needed
		member := g.Members[rng.IntN(len(g.Members))]
		aim := member
		if g.Leads && rng.IntN(3) > 0 { // the leader, two times in three
			aim = LeaderPrefix + g.Link
		}
		menu := []Fault{
			{Kind: fault.Kill, Target: aim, scope: g.Link},
			{Kind: fault.Pause, Target: aim, scope: g.Link},
			{Kind: fault.Partition, Target: inst + "/" + g.Link, scope: inst + "/" + g.Link},
			{Kind: fault.Latency, Target: inst + "/" + g.Link, scope: inst + "/" + g.Link, Delay: Delays[rng.IntN(len(Delays))]},
		}
		if g.Failover {
			menu = append(menu, Fault{Kind: fault.Failover, scope: g.Link})
		}
		f := menu[rng.IntN(len(menu))]
		f.Needed = true
		return f
	}
	menu := []Fault{{Kind: fault.Kill, Target: inst, scope: inst}, {Kind: fault.Pause, Target: inst, scope: inst}}
	if len(l.Others) > 0 {
		g := l.Others[rng.IntN(len(l.Others))]
		member := g.Members[rng.IntN(len(g.Members))]
		menu = append(menu,
			Fault{Kind: fault.Kill, Target: member, scope: g.Link},
			Fault{Kind: fault.Pause, Target: member, scope: g.Link},
			Fault{Kind: fault.Latency, Target: inst + "/" + g.Link, scope: inst + "/" + g.Link, Delay: Delays[rng.IntN(len(Delays))]})
	}
	return menu[rng.IntN(len(menu))]
}

// fits reports whether f may join the schedule: fewer than MaxOn faults
// on during it, none of them of its scope.
func fits(plan []Fault, f Fault) bool {
	on := 0
	for _, g := range plan {
		if g.Start < f.Start+span(f) && f.Start < g.Start+span(g) {
			if on++; on >= MaxOn || g.scope == f.scope {
				return false
			}
		}
	}
	return true
}

// FailoverSpan is how long a failover is taken to last in the schedule:
// Sentinels promote the replica within seconds, and the demoted primary
// resyncs after.
const FailoverSpan = 10 * time.Second

// span is how long f is taken to last in the schedule.
func span(f Fault) time.Duration {
	if f.Kind == fault.Failover {
		return FailoverSpan
	}
	return f.For
}

// Kinds counts a schedule's faults by kind.
func Kinds(fs []Fault) map[string]int {
	out := map[string]int{}
	for _, f := range fs {
		out[f.Kind]++
	}
	return out
}

// Overlaps counts the faults that begin while another is on.
func Overlaps(fs []Fault) int {
	n := 0
	for i, f := range fs {
		if slices.ContainsFunc(fs[:i], func(g Fault) bool { return f.Start < g.Start+span(g) }) {
			n++
		}
	}
	return n
}

// kindList is "kill 12, pause 9, ..." in internal/fault's order.
func kindList(m map[string]int) string {
	var parts []string
	for _, k := range fault.Kinds {
		if m[k.Name] > 0 {
			parts = append(parts, fmt.Sprintf("%s %d", k.Name, m[k.Name]))
		}
	}
	return strings.Join(parts, ", ")
}
