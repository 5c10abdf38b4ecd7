package lesson

// Lesson 26, what the ranking depends on: the source's ranking of the lock
// services beside ours, for every lock service of the lab (Consul too when
// the class's stack runs it), under three conditions: the whole purchase
// on this machine's loopback at the servers' default durability, the whole
// purchase over a cross-zone round trip with every server fsyncing, and
// the lock alone (no database transaction in the critical section) under
// that same round trip and durability. Each condition is a bench of its own
// repeated rankingRepeats times: the lesson gives each lock's median ok/s
// and its range, and judges the source's order pair by pair, overlapping
// ranges counting as within noise. The whole purchase also runs two
// strategies without a lock service (sql-atomic, one conditional UPDATE,
// and mysql-forupdate, the row lock), which the lock-alone bench skips. The
// lesson starts two small stacks of its own (one per durability, with the
// proxy), so the class's stack is left as it is.

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/seckill-lab/seckill/bench"
	"github.com/seckill-lab/seckill/internal/server"
	"github.com/seckill-lab/seckill/internal/stack"
	"github.com/seckill-lab/seckill/stock/catalog"
)

// rankingLocks are the lab's lock services (every correct lock strategy):
// the source's four (the database, Redis, ZooKeeper, etcd) and Redlock,
// ZooKeeper's herd recipe and Consul, which the source does not rank.
var rankingLocks = []string{catalog.MySQLUnique, catalog.Redis, catalog.Redlock, catalog.ZooKeeper, catalog.ZooKeeperHerd, catalog.Etcd, catalog.Consul}

// rankingLockFree are the whole purchase's strategies without a lock
// service: in the lock-alone bench they are skipped (bench.NotALock).
var rankingLockFree = []string{catalog.SQLAtomic, catalog.MySQLForUpdate}

// rankingRepeats is how many times the lesson runs each condition (the
// short load: once).
const rankingRepeats = 3

// rankingCondition is one condition the ranking is measured under, and
// its load.
type rankingCondition struct {
	label, durability, profile string
	rtt                        time.Duration
	mode                       string
	full, short                load
}

// rankingConditions are the lesson's three conditions; the last, the lock
// alone at 2 ms with every server fsyncing, is the one the verdict rests
// on (the source ranks the lock services, not the purchase), and gets the
// most requests: a run of a few seconds per lock, so one moment of the
// machine's load does not decide a pair. Consul's 15 to 30 sales a second
// bound the whole purchase's loads.
var rankingConditions = []rankingCondition{
	{"loopback, default durability, whole purchase", server.DurabilityDefault, "loopback", 0, bench.ModePurchase,
		load{300, 300, 20}, load{40, 40, 10}},
	{"cross-zone 2 ms, every server fsyncs, whole purchase", server.DurabilityFsync, "cross-zone", 2 * time.Millisecond, bench.ModePurchase,
		load{150, 150, 20}, load{30, 30, 10}},
	{"cross-zone 2 ms, every server fsyncs, the lock alone", server.DurabilityFsync, "cross-zone", 2 * time.Millisecond, bench.ModeLock,
		load{400, 400, 20}, load{30, 30, 10}},
}

// rankPair is one pair of the source's order: above ranks above below.
type rankPair struct{ above, below string }

// sourceOrder is the source's ranking as pairs: Redis high, ZooKeeper a
// little below it, etcd good (below Redis, above the database), the
// database low. ZooKeeper and etcd are not ordered against each other.
var sourceOrder = []rankPair{
	{catalog.Redis, catalog.ZooKeeper},
	{catalog.Redis, catalog.Etcd},
	{catalog.Redis, catalog.MySQLUnique},
	{catalog.ZooKeeper, catalog.MySQLUnique},
	{catalog.Etcd, catalog.MySQLUnique},
}

// pairJudgement is what one condition's figures say of one pair.
type pairJudgement int

const (
	pairHolds  pairJudgement = iota // above's range lies wholly above below's
	pairNoise                       // the ranges overlap
	pairBroken                      // below's range lies wholly above above's
)

// judgePair judges p on ranges (ok/s by strategy): overlapping ranges are
// within noise.
func judgePair(p rankPair, ranges map[string]bench.Stat) pairJudgement {
	a, b := ranges[p.above], ranges[p.below]
	switch {
	case a.Min > b.Max:
		return pairHolds
	case a.Max < b.Min:
		return pairBroken
	}
	return pairNoise
}

// orderJudgement is the source's order under one condition: the pairs
// within noise and the pairs broken (each "above ≈ below" or "above <
// below" with their figures); the order holds when both are empty.
type orderJudgement struct {
	noise, broken []string
}

// String says what the condition shows of the source's order.
func (j orderJudgement) String() string {
	switch {
	case len(j.broken) > 0:
		s := "the source's order breaks: " + strings.Join(j.broken, ", ")
		if len(j.noise) > 0 {
			s += "; within noise: " + strings.Join(j.noise, ", ")
		}
		return s
	case len(j.noise) > 0:
		return "the source's order holds within noise: " + strings.Join(j.noise, ", ") + " overlap"
	}
	return "the source's order holds"
}

// judgeOrder judges every pair of the source's order that ranges has both
// ends of.
func judgeOrder(ranges map[string]bench.Stat) orderJudgement {
	var j orderJudgement
	for _, p := range sourceOrder {
		a, okA := ranges[p.above]
		b, okB := ranges[p.below]
		if !okA || !okB {
			continue
		}
		switch judgePair(p, ranges) {
		case pairNoise:
			j.noise = append(j.noise, fmt.Sprintf("%s %s ≈ %s %s", p.above, statText(a), p.below, statText(b)))
		case pairBroken:
			j.broken = append(j.broken, fmt.Sprintf("%s %s below %s %s", p.above, statText(a), p.below, statText(b)))
		}
	}
	return j
}

// statText is a median and its range: "71 (69–73)", or "71" for one run.
func statText(s bench.Stat) string {
	if s.Min == s.Max {
		return fmt.Sprintf("%.0f", s.Median)
	}
	return fmt.Sprintf("%.0f (%.0f–%.0f)", s.Median, s.Min, s.Max)
}

// rankingLine is a condition's ranking, fastest first: "redis 71 (69–73) >
// zookeeper 54 (52–55) ≈ etcd 52 (49–55)", ">" where the two ranges are
// apart and "≈" where they overlap.
func rankingLine(ranges map[string]bench.Stat) string {
	names := make([]string, 0, len(ranges))
	for n := range ranges {
		names = append(names, n)
	}
	slices.SortFunc(names, func(a, b string) int {
		return cmp.Or(cmp.Compare(ranges[b].Median, ranges[a].Median), cmp.Compare(a, b))
	})
	var b strings.Builder
	for i, n := range names {
		if i > 0 {
			sep := " > "
			if prev := ranges[names[i-1]]; prev.Min <= ranges[n].Max {
				sep = " ≈ "
			}
			b.WriteString(sep)
		}
		b.WriteString(n + " " + statText(ranges[n]))
	}
	return b.String()
}

// limitsLine says what bounded a condition's rows (bench's limited_by),
// grouped: "limited by the lock server: etcd, redis; the lab's CPU:
// sql-atomic". "" when the bench had no CPU figures.
func limitsLine(sum []bench.Summary) string {
	words := map[string]string{bench.LimitLab: "the lab's CPU", bench.LimitDatabase: "the database", bench.LimitServer: "the lock server"}
	by := map[string][]string{}
	for _, s := range sum {
		if s.Limit != nil {
			by[s.Limit.By] = append(by[s.Limit.By], s.Strategy)
		}
	}
	var parts []string
	for _, k := range []string{bench.LimitServer, bench.LimitDatabase, bench.LimitLab} {
		if len(by[k]) > 0 {
			slices.Sort(by[k])
			parts = append(parts, words[k]+": "+strings.Join(by[k], ", "))
		}
	}
	if len(parts) == 0 {
		return ""
	}
	return "limited by " + strings.Join(parts, "; ")
}

// rankingVerdict is the lesson's verdict from each condition's judgement
// (the last is the lock alone at 2 ms with fsync, what the source ranks):
// reproduced when the order holds there, in kind when no pair breaks
// there but some are within noise, and not reproduced naming the pair
// that breaks.
func rankingVerdict(labels []string, js []orderJudgement) (Verdict, string) {
	last := js[len(js)-1]
	var where []string
	for i, j := range js[:len(js)-1] {
		where = append(where, labels[i]+": "+j.String())
	}
	others := "; the other conditions: " + strings.Join(where, "; ")
	switch {
	case len(last.broken) > 0:
		return NotReproduced, "for the lock alone (" + labels[len(labels)-1] + ") " + last.String() + others
	case len(last.noise) > 0:
		return InKind, "for the lock alone (" + labels[len(labels)-1] + ") no pair breaks the source's order, but " +
			strings.Join(last.noise, ", ") + " overlap over the repeats" + others
	}
	return Reproduced, "the source's order holds for the lock alone (" + labels[len(labels)-1] + "), what the source ranks" + others
}

// lockFreeLead says how far the best strategy without a lock service
// leads the best lock service in one whole-purchase condition ("" when
// either did not run).
func lockFreeLead(ranges map[string]bench.Stat) string {
	best := func(names []string) (string, bench.Stat) {
		var bn string
		var bs bench.Stat
		for _, n := range names {
			if s, ok := ranges[n]; ok && (bn == "" || s.Median > bs.Median) {
				bn, bs = n, s
			}
		}
		return bn, bs
	}
	fn, fs := best(rankingLockFree)
	ln, ls := best(rankingLocks)
	if fn == "" || ln == "" || ls.Median <= 0 {
		return ""
	}
	return fmt.Sprintf("%s %s is %.1fx the best lock, %s %s", fn, statText(fs), fs.Median/ls.Median, ln, statText(ls))
}

// rankingRun is one condition's bench on the stack st.
func rankingRun(ctx context.Context, r *runner, st *stack.State, i int, c rankingCondition, strategies []string) (*bench.Report, error) {
	if err := stack.SetRTT(ctx, st, c.profile, c.rtt); err != nil {
		return nil, err
	}
	ld, repeat := c.full, rankingRepeats
	if r.o.Short {
		ld, repeat = c.short, 1
	}
	o := bench.Options{Fleet: st.Fleet(), Strategies: strategies, Mode: c.mode, Requests: ld.requests, Stock: ld.stock,
		Concurrency: ld.concurrency, Repeat: repeat, Seed: r.o.Seed, CalibrateRequests: -1, Warmup: 10}
	if r.o.OutDir != "" {
		o.OutDir = fmt.Sprintf("%s/lesson-26-ranking-%d", r.o.OutDir, i+1)
		r.reports = append(r.reports, o.OutDir)
	}
	// The report names the stack and the bench it ran (the lesson's own
	// stacks are gone afterwards: `seckill lesson 26` repeats it).
	var backends []string
	for _, b := range st.Backends {
		backends = append(backends, string(b))
	}
	o.CommandLine = strings.Fields(fmt.Sprintf("seckill up --durability %s --rtt %s --instances 2 --backends %s ; seckill bench --strategies %s --mode %s --requests %d --stock %d --concurrency %d --repeat %d --warmup 10",
		c.durability, c.profile, strings.Join(backends, ","), strings.Join(strategies, ","), c.mode, ld.requests, ld.stock, ld.concurrency, repeat))
	if r.o.Progress != nil {
		fmt.Fprintf(r.o.Progress, "  condition %d/%d: %s, %d requests per run, %d repeats\n", i+1, len(rankingConditions), c.label, ld.requests, repeat)
	}
	rep, err := bench.Run(ctx, o)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", c.label, err)
	}
	r.last, r.lastDir = rep, o.OutDir
	return rep, nil
}

// ranking is lesson 26's experiment: per condition, a bench of the lock
// services (and, for the whole purchase, the two without one) on a stack
// of its own at that durability and round trip, repeated; each lock's
// median ok/s and range, and the source's order judged pair by pair.
func ranking(ctx context.Context, r *runner) (Outcome, error) {
	// A lock whose server the class's stack runs without (an optional
	// one: Consul) is left out, and the lesson says so.
	var locks, notes []string
	for _, s := range rankingLocks {
		if b := stack.BackendsFor(s); slices.ContainsFunc(b, func(b stack.Backend) bool { return !r.st.Has(b) }) {
			notes = append(notes, fmt.Sprintf("%s not measured: the class's stack runs without %s (`make deps` builds it, then `seckill down` and `seckill up`)", s, b[len(b)-1]))
			continue
		}
		locks = append(locks, s)
	}
	strategies := append(slices.Clone(locks), rankingLockFree...)
	stacks := map[string]*stack.State{}
	var stops []func()
	defer func() {
		for _, stop := range stops {
			stop()
		}
	}()
	r.commands = append(r.commands, r.repeatable("seckill lesson 26"))
	root := r.o.OutDir
	if root == "" {
		root = filepath.Join(r.st.Dir, "lesson-26")
	}
	var lines, labels []string
	var js []orderJudgement
	for i, c := range rankingConditions {
		st := stacks[c.durability]
		if st == nil {
			var stop func()
			var err error
			st, stop, err = sideStack(ctx, r, len(stacks), stack.Options{Dir: filepath.Join(root, "lesson-26-stack-"+c.durability), Instances: 2,
				Durability: c.durability, RTTProfile: "loopback", Binary: r.st.Binary, Out: io.Discard,
				Backends: stack.BackendsFor(strategies...)})
			if err != nil {
				return Outcome{}, fmt.Errorf("a stack at durability %s: %w", c.durability, err)
			}
			stacks[c.durability], stops = st, append(stops, stop)
		}
		rep, err := rankingRun(ctx, r, st, i, c, strategies)
		if err != nil {
			return Outcome{}, err
		}
		ranges := map[string]bench.Stat{}
		fig := Figure{Title: c.label + ": successful purchases per second (median of the repeats)", Unit: "ok/s"}
		for _, s := range rep.Summary {
			if s.Oversold.Max > 0 {
				return Outcome{}, fmt.Errorf("%s: %s oversold %.0f: a defect, see %s", c.label, s.Strategy, s.Oversold.Max, r.lastDir)
			}
			ranges[s.Strategy] = s.OKPerSec
			fig.Bars = append(fig.Bars, FigureBar{Label: s.Strategy, Value: s.OKPerSec.Median})
		}
		slices.SortStableFunc(fig.Bars, func(a, b FigureBar) int { return cmp.Compare(b.Value, a.Value) })
		r.figure(fig)
		j := judgeOrder(ranges)
		line := fmt.Sprintf("%s (measured %.2f ms, runs: %d) ok/s, median (range): %s: %s", c.label, rep.Environment.RTT.MeasuredMS, rep.Summary[0].Repeats, rankingLine(ranges), j)
		if lead := lockFreeLead(ranges); lead != "" {
			line += "; without a lock service " + lead
		}
		if len(rep.Skipped) > 0 {
			line += "; skipped (not a lock): " + strings.Join(rep.Skipped, ", ")
		}
		if l := limitsLine(rep.Summary); l != "" {
			line += " (" + l + ")"
		}
		lines, labels, js = append(lines, line), append(labels, c.label), append(js, j)
	}
	out := Outcome{Ours: strings.Join(append(lines, notes...), "; ")}
	out.Verdict, out.Why = rankingVerdict(labels, js)
	return out, nil
}
