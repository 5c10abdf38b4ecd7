package lesson

// Lesson 26, what the ranking depends on: the source's ranking of the four
// lock services (course.go's rankingStrategies) beside ours under three
// conditions: this machine's loopback
// at the servers' default durability, a cross-zone round trip with every
// server fsyncing, and the lock alone (no database transaction in the
// critical section). The lesson starts two small stacks of its own (one
// per durability level, with the proxy), so the class's stack is left as
// it is.

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

// rankingCondition is one condition the ranking is measured under.
type rankingCondition struct {
	label, durability, profile string
	rtt                        time.Duration
	mode                       string
}

var rankingConditions = []rankingCondition{
	{"loopback, default durability, whole purchase", server.DurabilityDefault, "loopback", 0, bench.ModePurchase},
	{"cross-zone 2 ms, every server fsyncs, whole purchase", server.DurabilityFsync, "cross-zone", 2 * time.Millisecond, bench.ModePurchase},
	{"loopback, default durability, the lock alone", server.DurabilityDefault, "loopback", 0, bench.ModeLock},
}

// sourceOrderHolds reports whether a ranking (fastest first) has the source's
// ends: Redis first and the database last.
func sourceOrderHolds(order []string) bool {
	return len(order) > 1 && order[0] == catalog.Redis && order[len(order)-1] == catalog.MySQLUnique
}

// ranking is lesson 26's experiment: per condition, a bench of the four
// strategies on a stack of its own at that durability and round trip,
// ranked by ok/s.
func ranking(ctx context.Context, r *runner) (Outcome, error) {
	ld := r.pick(load{300, 1000, 20}, load{60, 200, 10})
	stacks := map[string]*stack.State{}
	defer func() {
		for _, st := range stacks {
			_ = stack.Down(context.WithoutCancel(ctx), st.Dir, io.Discard)
		}
	}()
	r.commands = append(r.commands, r.repeatable("seckill lesson 26"))
	root := r.o.OutDir
	if root == "" {
		root = filepath.Join(r.st.Dir, "lesson-26")
	}
	var lines []string
	var orders [][]string
	holds := 0
	for i, c := range rankingConditions {
		st := stacks[c.durability]
		if st == nil {
			var err error
			st, err = stack.Up(ctx, stack.Options{Dir: filepath.Join(root, "lesson-26-stack-"+c.durability), BasePort: stack.SideBase(r.st.BasePort, len(stacks)), Instances: 2,
				Durability: c.durability, RTTProfile: "loopback", Binary: r.st.Binary, Out: io.Discard,
				Backends: stack.BackendsFor(rankingStrategies...)})
			if err != nil {
				return Outcome{}, fmt.Errorf("a stack at durability %s: %w", c.durability, err)
			}
			stacks[c.durability] = st
		}
		if err := stack.SetRTT(ctx, st, c.profile, c.rtt); err != nil {
			return Outcome{}, err
		}
		o := bench.Options{Fleet: st.Fleet(), Strategies: rankingStrategies, Mode: c.mode, Requests: ld.requests, Stock: ld.stock,
			Concurrency: ld.concurrency, Seed: r.o.Seed, CalibrateRequests: -1, Warmup: -1}
		if r.o.OutDir != "" {
			o.OutDir = fmt.Sprintf("%s/lesson-26-ranking-%d", r.o.OutDir, i+1)
			r.reports = append(r.reports, o.OutDir)
		}
		// The report names the stack and the bench it ran (the lesson's
		// own stacks are gone afterwards: `seckill lesson 26` repeats it).
		var backends []string
		for _, b := range stack.BackendsFor(rankingStrategies...) {
			backends = append(backends, string(b))
		}
		o.CommandLine = strings.Fields(fmt.Sprintf("seckill up --durability %s --rtt %s --instances 2 --backends %s ; seckill bench --strategies %s --mode %s --requests %d --stock %d --concurrency %d",
			c.durability, c.profile, strings.Join(backends, ","), strings.Join(rankingStrategies, ","), c.mode, ld.requests, ld.stock, ld.concurrency))
		rep, err := bench.Run(ctx, o)
		if err != nil {
			return Outcome{}, fmt.Errorf("%s: %w", c.label, err)
		}
		r.last, r.lastDir = rep, o.OutDir
		ss := slices.Clone(rep.Summary)
		slices.SortStableFunc(ss, func(a, b bench.Summary) int { return cmp.Compare(b.OKPerSec.Median, a.OKPerSec.Median) })
		var order, parts []string
		fig := Figure{Title: c.label + ": successful purchases per second", Unit: "ok/s"}
		for _, s := range ss {
			fig.Bars = append(fig.Bars, FigureBar{Label: s.Strategy, Value: s.OKPerSec.Median})
			if s.Oversold.Max > 0 {
				return Outcome{}, fmt.Errorf("%s: %s oversold %.0f: a defect, see %s", c.label, s.Strategy, s.Oversold.Max, o.OutDir)
			}
			order = append(order, s.Strategy)
			parts = append(parts, fmt.Sprintf("%s %.0f", s.Strategy, s.OKPerSec.Median))
		}
		r.figure(fig)
		orders = append(orders, order)
		mark := "the source's order does not hold"
		if sourceOrderHolds(order) {
			mark, holds = "the source's order holds", holds+1
		}
		lines = append(lines, fmt.Sprintf("%s (measured %.2f ms): %s ok/s: %s", c.label, rep.Environment.RTT.MeasuredMS, strings.Join(parts, " > "), mark))
	}
	out := Outcome{Ours: strings.Join(lines, "; ")}
	last := sourceOrderHolds(orders[len(orders)-1]) // the lock alone
	switch {
	case holds == len(rankingConditions):
		out.Verdict = Reproduced
	case last:
		out.Verdict, out.Why = InKind, "the source's order (Redis first, the database last) holds for the lock alone, which is what the source ranks; with the database transaction in the critical section, the purchase ranks the database's own work"
	default:
		o := orders[len(orders)-1]
		out.Verdict, out.Why = NotReproduced, fmt.Sprintf("the source's order (Redis first, the database last) does not hold for the lock alone here: %s leads and %s trails. "+
			"A lock that writes its state to a log fsynced on every write pays that fsync several times per acquisition (take, renew, release), which the source's ranking leaves out; see the lock-alone report's lock wait", o[0], o[len(o)-1])
	}
	return out, nil
}
