package lesson

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/seckill-lab/seckill/bench"
	"github.com/seckill-lab/seckill/bench/confidence"
	"github.com/seckill-lab/seckill/internal/scenario"
	"github.com/seckill-lab/seckill/internal/stack"
	"github.com/seckill-lab/seckill/lockimpl"
	"github.com/seckill-lab/seckill/stock"
	"github.com/seckill-lab/seckill/stock/catalog"
)

// The sources' short names (docs/sources.md), for the passages.
const (
	srcOverview       = "Overview"
	srcQA             = "Q&A"
	srcEtcdArticle    = "the etcd article"
	srcChapter1       = "Chapter 1"
	srcSchedulerNotes = "the Scheduler notes"
)

// small is the default load of a correctness lesson; tiny its short form.
var (
	small = load{requests: 200, stock: 100, concurrency: 50}
	tiny  = load{requests: 60, stock: 30, concurrency: 20}
)

// chapter1Load is Chapter 1's JMeter load (bench preset chapter1): 5000
// requests, 50 at a time, on a stock of 5000.
var chapter1Load = load{requests: 5000, stock: 5000, concurrency: 50}

// oversells is the usual experiment of a flawed strategy: strategy on n
// instances (0: as the stack is) with the knobs set. The flaw shows as
// oversold units or lost updates. With left > 0 the source gave a figure,
// the share of the stock still "in stock" after every request sold, and
// the lesson runs the source's own load (full mode): reproduced when ours is
// at least that share; otherwise any flaw reproduces the source's story.
func oversells(strategy string, instances int, set func(*bench.Options), sourceFigure string, left ...float64) func(context.Context, *runner) (Outcome, error) {
	return func(ctx context.Context, r *runner) (Outcome, error) {
		l := r.pick(small, tiny)
		if len(left) > 0 {
			l = r.pick(chapter1Load, tiny)
		}
		o := bench.Options{Strategies: []string{strategy}, Requests: l.requests, Stock: l.stock, Concurrency: l.concurrency, Instances: instances}
		if set != nil {
			set(&o)
		}
		rep, err := r.bench(ctx, o, benchCmd(o))
		if err != nil {
			return Outcome{}, err
		}
		s, err := summary(rep, strategy)
		if err != nil {
			return Outcome{}, err
		}
		out := Outcome{Ours: fmt.Sprintf("%s on %s, %d requests: %.0f sold of a stock of %d, oversold %.0f, lost updates %.0f, %.0f still in stock",
			strategy, instanceCount(rep.Runs[0].Instances), o.Requests, s.OK.Median, o.Stock, s.Oversold.Median, s.LostUpdates.Median, s.FinalStock.Median)}
		share := s.FinalStock.Median / float64(o.Stock)
		r.figure(Figure{Title: strategy + ": oversold and lost updates (median)", Unit: "units", Bars: []FigureBar{
			{Label: "oversold", Value: s.Oversold.Median}, {Label: "lost updates", Value: s.LostUpdates.Median}}})
		if len(left) > 0 {
			r.figure(Figure{Title: "Stock still there after every request sold", Unit: "% of the stock",
				Bars: []FigureBar{{Label: strategy, Value: 100 * share, Flawed: flawed(strategy)}}, Ref: 100 * left[0], RefLabel: "the source: " + sourceFigure})
		}
		switch {
		case s.Oversold.Median <= 0 && s.LostUpdates.Median <= 0:
			out.Verdict = NotReproduced
			out.Why = "no oversell and no lost update on this run: the race needs contention; rerun with more requests"
		case len(left) == 0:
			out.Verdict = Reproduced
		case !r.o.Short && s.OK.Median >= float64(o.Requests) && share >= left[0]:
			out.Verdict = Reproduced
			out.Why = fmt.Sprintf("%.0f%% of the stock still there after every request sold (the source: %s)", 100*share, sourceFigure)
		default:
			out.Verdict = InKind
			out.Why = fmt.Sprintf("the same flaw; %.0f%% of the stock still there, the source saw %s", 100*share, sourceFigure)
		}
		return out, nil
	}
}

// spins is lesson 7: redis-spin sells exactly the stock, and its waiters
// spin: the SETNX attempts per acquisition (lockimpl.Attempt), each a
// command to Redis, are the figure.
func spins(ctx context.Context, r *runner) (Outcome, error) {
	out, err := holds([]string{catalog.RedisSpin}, 3, nil)(ctx, r)
	if err != nil || out.Verdict != Reproduced {
		return out, err
	}
	attempts, acquired := 0.0, 0.0
	for _, run := range r.last.Runs {
		attempts += run.BackendEvents[lockimpl.Attempt]
		acquired += run.LockAcquisitions
	}
	if acquired == 0 {
		out.Verdict, out.Why = NotReproduced, "no acquisition was counted: the instances' /metrics did not answer"
		return out, nil
	}
	per := attempts / acquired
	r.figure(Figure{Title: "redis-spin: SETNX commands per acquisition", Unit: "commands", Bars: []FigureBar{{Label: catalog.RedisSpin, Value: per}},
		Ref: 1, RefLabel: "1: a lock that waits without retrying"})
	out.Ours += fmt.Sprintf("; %.0f SETNX attempts for %.0f acquisitions: %.1f commands to Redis per acquisition", attempts, acquired, per)
	if per < 2 {
		out.Verdict, out.Why = NotReproduced, "the waiters hardly retried on this run: the spin needs contention; rerun"
	}
	return out, nil
}

// fairness is lesson 15: zookeeper beside redis, both correct; the figure
// is the share of purchases that got the lock before one that asked for
// it earlier and was still waiting (out of order: 0 for a FIFO lock),
// from the lock events of each run. The instances' local queue is off:
// every waiter queues at the lock server itself, as in the source's
// recipe. With it on, one waiter per instance reaches the server and the
// figure measures the instances' queues more than the lock: on a loaded
// machine the two strategies' shares overlap.
func fairness(ctx context.Context, r *runner) (Outcome, error) {
	names := []string{catalog.ZooKeeper, catalog.Redis}
	out, err := holds(names, 3, func(o *bench.Options) { o.Config.NoLocalQueue = true })(ctx, r)
	if err != nil || out.Verdict != Reproduced {
		return out, err
	}
	share := map[string]float64{}
	for _, name := range names {
		for _, run := range r.last.Runs {
			if run.Strategy != name || run.Events == "" || r.lastDir == "" {
				continue
			}
			sh, err := outOfOrder(filepath.Join(r.lastDir, run.Events))
			if err != nil {
				return Outcome{}, err
			}
			share[name] = sh
		}
	}
	if len(share) < len(names) {
		out.Verdict, out.Why = NotReproduced, "the order of acquisition needs the runs' lock events: run the lesson with a report directory (--out)"
		return out, nil
	}
	r.figure(Figure{Title: "Acquired before an earlier waiter (out of order)", Unit: "% of waiting pairs", Bars: []FigureBar{
		{Label: catalog.ZooKeeper, Value: 100 * share[catalog.ZooKeeper]}, {Label: catalog.Redis, Value: 100 * share[catalog.Redis]}}})
	out.Ours += fmt.Sprintf("; acquired out of order (before an earlier waiter): zookeeper %.1f%%, redis %.1f%%", 100*share[catalog.ZooKeeper], 100*share[catalog.Redis])
	if share[catalog.ZooKeeper] >= share[catalog.Redis] {
		out.Verdict, out.Why = NotReproduced, "zookeeper was no fairer than redis on this run"
	}
	return out, nil
}

// outOfOrder reads a run's lock events and returns the share of waiting
// pairs served out of arrival order: of two purchases that both waited,
// the later request acquired first.
func outOfOrder(path string) (float64, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, fmt.Errorf("lock events: %w", err)
	}
	defer f.Close()
	type span struct{ requested, acquired int64 }
	spans := map[string]*span{}
	dec := json.NewDecoder(f)
	for {
		var ev stock.Event
		if err := dec.Decode(&ev); err == io.EOF {
			break
		} else if err != nil {
			return 0, fmt.Errorf("lock events %s: %w", path, err)
		}
		id := ev.Instance + "/" + ev.Purchase
		sp := spans[id]
		if sp == nil {
			sp = &span{}
			spans[id] = sp
		}
		switch ev.Kind {
		case stock.EventRequested:
			sp.requested = ev.MonoNS
		case stock.EventAcquired:
			if sp.acquired == 0 {
				sp.acquired = ev.MonoNS
			}
		}
	}
	var list []span
	for _, sp := range spans {
		if sp.requested > 0 && sp.acquired > 0 {
			list = append(list, *sp)
		}
	}
	slices.SortFunc(list, func(a, b span) int { return cmp.Compare(a.requested, b.requested) })
	pairs, inverted := 0, 0
	for i := range list {
		for j := i + 1; j < len(list) && list[j].requested < list[i].acquired; j++ {
			// j asked while i still waited: both waited together.
			pairs++
			if list[j].acquired < list[i].acquired {
				inverted++
			}
		}
	}
	if pairs == 0 {
		return 0, nil
	}
	return float64(inverted) / float64(pairs), nil
}

// herd is lesson 16: zookeeper and zookeeper-herd at two numbers of
// waiters (clients, no local queue, so every client waits at the server):
// the watch events per acquisition stay near 1 for the recipe and grow
// with the waiters for the herd, which is the claim.
func herd(ctx context.Context, r *runner) (Outcome, error) {
	names := []string{catalog.ZooKeeper, catalog.ZooKeeperHerd}
	l := r.pick(small, tiny)
	waiters := []int{l.concurrency / 5, l.concurrency}
	per := map[string][]float64{}
	for _, c := range waiters {
		before, err := watchCounts(ctx, r.st, names)
		if err != nil {
			return Outcome{}, err
		}
		o := bench.Options{Strategies: names, Requests: l.requests, Stock: l.stock, Concurrency: c, Config: stock.Config{NoLocalQueue: true}}
		if _, err := r.bench(ctx, o, benchCmd(o)); err != nil {
			return Outcome{}, err
		}
		after, err := watchCounts(ctx, r.st, names)
		if err != nil {
			return Outcome{}, err
		}
		for _, n := range names {
			v := 0.0
			if acq := after[n].acquisitions - before[n].acquisitions; acq > 0 {
				v = (after[n].watch - before[n].watch) / acq
			}
			per[n] = append(per[n], v)
		}
	}
	rec, hd := per[catalog.ZooKeeper], per[catalog.ZooKeeperHerd]
	f := Figure{Title: "Watch events per acquisition, by waiters", Unit: "events", Ref: 1, RefLabel: "1: one wake-up per acquisition"}
	for _, n := range names {
		for i, c := range waiters {
			f.Bars = append(f.Bars, FigureBar{Label: fmt.Sprintf("%s, %d waiters", n, c), Value: per[n][i]})
		}
	}
	r.figure(f)
	out := Outcome{Ours: fmt.Sprintf("watch events per acquisition with %d and %d waiters (no local queue): zookeeper %.2f and %.2f, zookeeper-herd %.2f and %.2f",
		waiters[0], waiters[1], rec[0], rec[1], hd[0], hd[1]), Verdict: Reproduced}
	switch {
	case hd[1] <= rec[1]:
		out.Verdict, out.Why = NotReproduced, "the herd got no more events than the recipe on this run"
	case hd[1] <= hd[0]:
		out.Verdict, out.Why = NotReproduced, "the herd's events did not grow with the waiters on this run"
	}
	return out, nil
}

// deletesAnother is lesson 8: redis-ttl and redis-owner under the same
// expiry (300 ms of work, a 100 ms TTL). Both lose the lock to the expiry
// and oversell; only redis-ttl's release then deletes the next holder's
// lock, which the lab counts (lockimpl.DeletedAnother). The verdict rests
// on that count.
func deletesAnother(ctx context.Context, r *runner) (Outcome, error) {
	names := []string{catalog.RedisTTL, catalog.RedisOwner}
	o := bench.Options{Strategies: names, Config: stock.Config{WorkDelay: 300 * time.Millisecond, LockTTL: 100 * time.Millisecond}, Stock: 20, Requests: 60, Concurrency: 20, Instances: 3}
	rep, err := r.bench(ctx, o, benchCmd(o))
	if err != nil {
		return Outcome{}, err
	}
	deleted := map[string]float64{}
	var ours []string
	for _, name := range names {
		s, err := summary(rep, name)
		if err != nil {
			return Outcome{}, err
		}
		for _, run := range rep.Runs {
			if run.Strategy == name {
				deleted[name] += run.BackendEvents[lockimpl.DeletedAnother]
			}
		}
		ours = append(ours, fmt.Sprintf("%s: releases that deleted another's lock %.0f, oversold %.0f", name, deleted[name], s.Oversold.Median))
	}
	r.figure(Figure{Title: "Releases that deleted another holder's lock", Unit: "releases", Bars: []FigureBar{
		{Label: catalog.RedisTTL, Value: deleted[catalog.RedisTTL], Flawed: true}, {Label: catalog.RedisOwner, Value: deleted[catalog.RedisOwner], Flawed: true}}})
	out := Outcome{Ours: strings.Join(ours, "; "), Verdict: Reproduced}
	switch {
	case deleted[catalog.RedisTTL] == 0:
		out.Verdict, out.Why = NotReproduced, "redis-ttl's releases deleted no other holder's lock on this run: the race needs contention; rerun"
	case deleted[catalog.RedisOwner] > 0:
		out.Why = "redis-owner deleted another's lock too: its check and its DEL are two commands (lesson 9)"
	default:
		out.Why = "the late holder's DEL removed the next one's lock; the owner check stops exactly that"
	}
	return out, nil
}

// noLock is lesson 1: first the source's run (every request sold, most of
// the stock still there: lost updates), then what follows when the shop
// keeps selling the stock it believes it has: a small stock sold until it
// reads 0, and more sold than there was (the oversell the title names).
func noLock(ctx context.Context, r *runner) (Outcome, error) {
	first, err := oversells(catalog.None, 3, nil, "4000+ of 5000 left", 0.8)(ctx, r)
	if err != nil {
		return Outcome{}, err
	}
	// Enough requests to sell a stock whose every sale barely lowers it
	// down to 0: the surplus are answered sold_out.
	l := r.pick(load{requests: 3000, stock: 100, concurrency: 50}, load{requests: 600, stock: 30, concurrency: 20})
	o := bench.Options{Strategies: []string{catalog.None}, Requests: l.requests, Stock: l.stock, Concurrency: l.concurrency, Instances: 3}
	rep, err := r.bench(ctx, o, benchCmd(o))
	if err != nil {
		return Outcome{}, err
	}
	s, err := summary(rep, catalog.None)
	if err != nil {
		return Outcome{}, err
	}
	r.figure(Figure{Title: "Selling on until the stock reads 0: sold against the stock", Unit: "units", Bars: []FigureBar{
		{Label: "stock", Value: float64(l.stock)}, {Label: "sold", Value: s.OK.Median}}})
	out := first
	out.Ours += fmt.Sprintf("; then, selling on until the stock reads 0: %.0f sold of a stock of %d, oversold %.0f, stock %.0f", s.OK.Median, l.stock, s.Oversold.Median, s.FinalStock.Median)
	switch {
	case s.Oversold.Median > 0 && out.Verdict != NotReproduced:
		out.Verdict, out.Why = Reproduced, fmt.Sprintf("more sold than there was: %.0f of %d (the source stopped before: %s)", s.OK.Median, l.stock, "4000+ of 5000 left")
	case s.Oversold.Median <= 0:
		out.Verdict, out.Why = NotReproduced, "the shop sold the stock out without overselling on this run: the race needs contention; rerun"
	}
	return out, nil
}

// holds is the usual experiment of a correct strategy: it sells exactly
// the stock.
func holds(strategies []string, instances int, set func(*bench.Options)) func(context.Context, *runner) (Outcome, error) {
	return func(ctx context.Context, r *runner) (Outcome, error) {
		l := r.pick(small, tiny)
		o := bench.Options{Strategies: strategies, Requests: l.requests, Stock: l.stock, Concurrency: l.concurrency, Instances: instances}
		if set != nil {
			set(&o)
		}
		rep, err := r.bench(ctx, o, benchCmd(o))
		if err != nil {
			return Outcome{}, err
		}
		out := Outcome{Verdict: Reproduced}
		f := Figure{Title: "Oversold units (median): a correct lock sells the stock exactly", Unit: "units"}
		for _, name := range strategies {
			s, err := summary(rep, name)
			if err != nil {
				return Outcome{}, err
			}
			f.Bars = append(f.Bars, FigureBar{Label: name, Value: s.Oversold.Median, Flawed: flawed(name)})
			out.Ours += fmt.Sprintf("%s: %.0f sold of %d, oversold %.0f, %.0f ok/s, invariants %d/%d; ", name, s.OK.Median, o.Stock, s.Oversold.Median, s.OKPerSec.Median, s.InvariantsPassed, s.InvariantsTotal)
			if s.Oversold.Max > 0 || s.InvariantsPassed < s.InvariantsTotal {
				out.Verdict, out.Why = NotReproduced, name+" broke an invariant: see its report"
			}
		}
		out.Ours = out.Ours[:len(out.Ours)-2]
		r.figure(f)
		return out, nil
	}
}

// fenced runs a failure story unprotected and fenced (or under prots),
// Options.Repeat times, and gives storyVerdict's verdict.
func fenced(name string, prots ...scenario.Protection) func(context.Context, *runner) (Outcome, error) {
	return func(ctx context.Context, r *runner) (Outcome, error) {
		res, err := r.scenario(ctx, name, prots...)
		if err != nil {
			return Outcome{}, err
		}
		if len(prots) == 0 {
			prots = []scenario.Protection{scenario.ProtectNone, scenario.ProtectFencing}
		}
		var rows []scenario.Row
		for _, p := range prots {
			rw, err := row(res, p)
			if err != nil {
				return Outcome{}, err
			}
			rows = append(rows, rw)
		}
		r.figure(storyFigure(rows))
		return storyVerdict(name, rows), nil
	}
}

// storyFigure charts a failure story: per protection, the runs in which
// two holders showed (an oversell or a lost update), out of the runs.
func storyFigure(rows []scenario.Row) Figure {
	f := Figure{Title: "Runs with two holders (oversold or a lost update)", Unit: "runs"}
	for _, rw := range rows {
		f.Bars = append(f.Bars, FigureBar{Label: fmt.Sprintf("%s %s", rw.Strategy, rw.Protection), Value: float64(rw.RunsTwoHolders)})
		f.Ref, f.RefLabel = float64(rw.Runs), fmt.Sprintf("runs: %d", rw.Runs)
	}
	return f
}

// flawed reports whether strategy is flawed by design.
func flawed(strategy string) bool {
	info, _ := catalog.Lookup(strategy)
	return info.Flawed
}

// storyVerdict is a failure story's verdict over its repeats: reproduced
// when the unprotected runs oversold in most of them and the fenced ones in
// none. A lease check that oversold is said, not a defect: it narrows the
// window, it does not close it.
func storyVerdict(name string, rows []scenario.Row) Outcome {
	out := Outcome{Verdict: Reproduced}
	var ours []string
	for _, rw := range rows {
		ours = append(ours, fmt.Sprintf("%s %s: oversold in %d of %d runs (%s; %d units; %d lost updates; %d stale refused, %d lease lost)",
			rw.Strategy, rw.Protection, rw.RunsOversold, rw.Runs, confidence.Note(rw.RunsOversold, rw.Runs, "run"), rw.Oversold, rw.LostUpdates, rw.StaleRefused, rw.LeaseLost))
		switch p := rw.Protection; {
		case p == scenario.ProtectNone && 2*rw.RunsTwoHolders <= rw.Runs:
			out.Verdict, out.Why = NotReproduced, fmt.Sprintf("the unprotected runs showed two holders (an oversell or a lost update) in %d of %d (%s), not most (the story needs its strike to land; run `seckill scenario run %s --repeat 10` for the rate)",
				rw.RunsTwoHolders, rw.Runs, confidence.Note(rw.RunsTwoHolders, rw.Runs, "run"), name)
		case p == scenario.ProtectFencing && rw.RunsTwoHolders > 0:
			out.Verdict, out.Why = NotReproduced, fmt.Sprintf("fencing let two holders write in %d of %d runs (%s): a defect, see the scenario report",
				rw.RunsTwoHolders, rw.Runs, confidence.Interval(rw.RunsTwoHolders, rw.Runs))
		case p == scenario.ProtectLeaseCheck && rw.Oversold > 0 && out.Why == "":
			out.Why = fmt.Sprintf("the lease check oversold in %d of %d runs (%s): %s", rw.RunsOversold, rw.Runs, confidence.Interval(rw.RunsOversold, rw.Runs), scenario.Meaning[p])
		}
	}
	out.Ours = strings.Join(ours, "; ")
	return out
}

func benchCmd(o bench.Options) string {
	cmd := fmt.Sprintf("seckill bench --strategies %s --requests %d --stock %d --concurrency %d", join(o.Strategies), o.Requests, o.Stock, o.Concurrency)
	if o.Instances > 0 {
		cmd += fmt.Sprintf(" --instances %d", o.Instances)
	}
	if o.Config.WorkDelay > 0 {
		cmd += " --work-delay " + o.Config.WorkDelay.String()
	}
	if o.Config.LockTTL > 0 {
		cmd += " --lock-ttl " + o.Config.LockTTL.String()
	}
	if o.Config.ReleasePause > 0 {
		cmd += " --release-pause " + o.Config.ReleasePause.String()
	}
	if o.Config.NoWatchdog {
		cmd += " --no-watchdog"
	}
	if o.Config.NoLeaseCheck {
		cmd += " --no-lease-check"
	}
	if o.Config.NoLocalQueue {
		cmd += " --no-local-queue"
	}
	if o.Config.Fencing {
		cmd += " --fencing"
	}
	if o.Config.PerUserLimit > 0 {
		cmd += fmt.Sprintf(" --per-user-limit %d --users %d", o.Config.PerUserLimit, o.Users)
	}
	return cmd
}

func join(ss []string) string {
	out := ""
	for i, s := range ss {
		if i > 0 {
			out += ","
		}
		out += s
	}
	return out
}

// ratioBench is the bench of a ratio lesson: strategies a and b on
// instances under load l (short under --short); set, when not nil,
// adjusts the options.
type ratioBench struct {
	a, b      string
	instances int
	l, short  load
	set       func(*bench.Options)
}

// ratioLesson compares two strategies' sales per second in one bench.
// sourceRatio is the source's b/a ratio (0: the source gave none).
func ratioLesson(rb ratioBench, sourceRatio float64, judge func(ratio float64) (Verdict, string)) func(context.Context, *runner) (Outcome, error) {
	a, b := rb.a, rb.b
	return func(ctx context.Context, r *runner) (Outcome, error) {
		ld := r.pick(rb.l, rb.short)
		o := bench.Options{Strategies: []string{a, b}, Requests: ld.requests, Stock: ld.stock, Concurrency: ld.concurrency, Instances: rb.instances}
		if rb.set != nil {
			rb.set(&o)
		}
		rep, err := r.bench(ctx, o, benchCmd(o))
		if err != nil {
			return Outcome{}, err
		}
		sa, err := summary(rep, a)
		if err != nil {
			return Outcome{}, err
		}
		sb, err := summary(rep, b)
		if err != nil {
			return Outcome{}, err
		}
		ratio := 0.0
		if sa.ThroughputRPS.Median > 0 {
			ratio = sb.ThroughputRPS.Median / sa.ThroughputRPS.Median
		}
		r.figure(Figure{Title: "Requests per second (median)", Unit: "req/s", Bars: []FigureBar{
			{Label: a, Value: sa.ThroughputRPS.Median, Flawed: flawed(a)}, {Label: b, Value: sb.ThroughputRPS.Median, Flawed: flawed(b)}}})
		if sourceRatio > 0 {
			r.figure(Figure{Title: b + " over " + a + ": the throughput ratio", Unit: "ratio", Bars: []FigureBar{{Label: b + "/" + a, Value: ratio}},
				Ref: sourceRatio, RefLabel: fmt.Sprintf("the source: ×%.2f", sourceRatio)})
		}
		v, why := judge(ratio)
		for _, s := range []bench.Summary{sa, sb} {
			if info, _ := catalog.Lookup(s.Strategy); !info.Flawed && s.Oversold.Max > 0 {
				v, why = NotReproduced, s.Strategy+" oversold: a defect, see its report"
			}
		}
		return Outcome{Ours: fmt.Sprintf("%s %.0f req/s (oversold %.0f), %s %.0f req/s (oversold %.0f): %s/%s = %.2f",
			a, sa.ThroughputRPS.Median, sa.Oversold.Median, b, sb.ThroughputRPS.Median, sb.Oversold.Median, b, a, ratio), Verdict: v, Why: why}, nil
	}
}

var course = []Lesson{
	{N: 1, Slug: "no-lock", TitleZH: "无锁：超卖", TitleEN: "No lock: oversold",
		ShowsZH: "读库存、判断、写回，三步之间没有任何保护。并发请求读到同一个库存，都卖出，都写回：库存却没少多少（原文的数字）。店铺接着卖它以为还有的库存，直到库存读到 0：卖出的比库存多，这就是超卖。",
		ShowsEN: "Read the stock, check it, write it back, with nothing around the three steps. Concurrent requests read the same stock, all sell, all write back, and the stock barely drops (the source's figure). The shop keeps selling the stock it believes it has until the stock reads 0: more is sold than there was. That is the oversell.",
		Seed:    srcChapter1 + ": “5000次请求都执行成功……发现还有4000多个库存” (reductStock, JMeter 50 threads × 100)", SeedFigure: "5000 requests on a stock of 5000: all succeeded, 4000+ still in stock",
		Look: inBench(2, "Comparison",
			"Report 2 (selling on until the stock reads 0), the Comparison table: ok, the units sold, is above the stock and oversold is above 0. Under “The race: none” red bars on different instances' lanes overlap: purchases that read the same stock. Report 1 is the source's run: every request sold, and final stock still holds most of the stock.",
			"第 2 份报告（一直卖到库存读数为 0）的 Comparison 表：ok（卖出的件数）比库存多，oversold 大于 0。“The race: none” 里不同实例那几行的红条互相重叠：这些请求读到的是同一个库存。第 1 份报告是原文的实验：每个请求都卖出了，final stock 却还剩大半库存。"),
		Estimate: 25 * time.Second, run: noLock},
	{N: 2, Slug: "synchronized", TitleZH: "synchronized：单机有效", TitleEN: "synchronized: correct on one instance",
		ShowsZH: "在一个进程里，一把互斥锁包住整个扣减（含提交），库存就扣对了。",
		ShowsEN: "In one process, a mutex around the whole deduction (commit included) makes the stock right.",
		Seed:    srcChapter1 + ": “这次的库存就被扣减完了，这个没有问题了” (synchronized on reductStock)", SeedFigure: "stock deducted exactly",
		Look: inBench(1, "Invariants per strategy",
			"mutex's row says pass in every cell, and the Comparison table has oversold 0 and ok equal to the stock: one process, one lock around the whole deduction, and the stock is right.",
			"mutex 那一行每一格都是 pass；Comparison 表里 oversold 为 0，ok 正好等于库存：一个进程、一把锁包住整个扣减，库存就对了。"),
		Estimate: 10 * time.Second, run: holds([]string{catalog.Mutex}, 1, nil)},
	{N: 3, Slug: "lock-cost", TitleZH: "加锁的代价：吞吐量下降", TitleEN: "What the lock costs: throughput",
		ShowsZH: "同一台机器、同样的负载，加锁前后的吞吐量。原文里 JMeter 的吞吐量从三千多降到一千多。",
		ShowsEN: "The same machine and load, with and without the lock. The source's JMeter throughput fell from 3000+ to 1000+ req/s.",
		Seed:    srcChapter1 + ": “吞吐量，从三千多到现在的一千多”", SeedFigure: "3000+ → 1000+ req/s (×0.33)",
		Look: inBench(1, "Charts: Successful purchases per second",
			"mutex's bar beside none's: the gap is what the lock costs on this machine (the source's fell to a third). The Comparison table gives the same in req/s and p99 ms.",
			"图表 Successful purchases per second：mutex 的柱子和 none 的并排，差出来的就是这台机器上锁的代价（原文里降到三分之一）。Comparison 表的 req/s 和 p99 ms 是同样的对比。"),
		Estimate: 20 * time.Second, Speed: true, run: ratioLesson(ratioBench{a: catalog.None, b: catalog.Mutex, instances: 1, l: chapter1Load, short: load{300, 300, 20}}, 1.0/3,
			func(r float64) (Verdict, string) {
				switch {
				case r < 0.5:
					return Reproduced, ""
				case r < 0.95:
					return InKind, "slower with the lock, by less than the source's ×0.33: our critical section is a few database round trips, the source's Java service did more"
				}
				return NotReproduced, "no slowdown here: with one instance the database, not the lock, limits both"
			})},
	{N: 4, Slug: "prototype", TitleZH: "锁失效一：多例模式", TitleEN: "Lock failure 1: a new lock per request (prototype scope)",
		ShowsZH: "每个请求 new 一把新锁（prototype 作用域的 bean），谁也不排斥谁：单实例也超卖。",
		ShowsEN: "Each request builds its own lock (a prototype-scoped bean), so nothing is excluded: it oversells on one instance.",
		Seed:    srcChapter1 + ": “多例模式……结果查询库存还剩3800多”", SeedFigure: "3800+ of 5000 left after 5000 sales",
		Look: inBench(1, "Comparison",
			"mutex-prototype sold every request, yet final stock keeps most of the stock and lost is large; the chart Lost updates shows the same bar. A new lock per request excludes nobody.",
			"mutex-prototype 每个请求都卖出了，final stock 却还剩大半，lost 很大；图表 Lost updates 是同一个数。每个请求一把新锁，谁也挡不住谁。"),
		Estimate: 15 * time.Second, run: oversells(catalog.MutexPrototype, 1, nil, "3800+ of 5000 left", 0.76)},
	{N: 5, Slug: "transaction", TitleZH: "锁失效二：事务", TitleEN: "Lock failure 2: unlocked before COMMIT",
		ShowsZH: "锁在事务里面：方法返回就解锁，事务还没提交，下一个人读到旧库存。",
		ShowsEN: "The lock lives inside the transaction: it is released when the method returns, before COMMIT, so the next holder reads the old stock.",
		Seed:    srcChapter1 + ": 事务模式 (@Transactional + synchronized)", SeedFigure: "oversold on one instance",
		Look: inBench(1, "Invariants per strategy",
			"release after commit says FAIL for mutex-tx: the lock was released before its COMMIT. Under “The race: mutex-tx” the next purchase's bar starts before the previous one's commit tick, in red.",
			"mutex-tx 的 release after commit 一格是 FAIL：锁在 COMMIT 之前就放了。“The race: mutex-tx” 里，下一个请求的红条在上一个请求的提交刻度之前就开始了。"),
		Estimate: 10 * time.Second, run: oversells(catalog.MutexTx, 1, nil, "oversold on one instance")},
	{N: 6, Slug: "cluster", TitleZH: "锁失效三：集群", TitleEN: "Lock failure 3: several instances",
		ShowsZH: "三个实例在 nginx 后面，每个进程一把自己的锁：跨进程没有互斥，超卖。",
		ShowsEN: "Three instances behind nginx, each with its own in-process lock: nothing excludes across processes, and it oversells.",
		Seed:    srcChapter1 + ": 集群模式 (synchronized across JVMs)", SeedFigure: "oversold with a cluster",
		Look: inBench(1, "The race: mutex",
			"Red bars on the lanes of different instances overlap: each instance's lock excludes only its own purchases. mutual exclusion says FAIL in Invariants per strategy, and the Comparison table has oversold or lost above 0.",
			"不同实例那几行的红条互相重叠：每个实例的锁只挡住自己进程里的请求。Invariants per strategy 里 mutual exclusion 是 FAIL，Comparison 表里 oversold 或 lost 大于 0。"),
		Estimate: 10 * time.Second, run: oversells(catalog.Mutex, 3, nil, "oversold with a cluster")},
	{N: 7, Slug: "setnx", TitleZH: "Redis SETNX：能用但空转", TitleEN: "Redis SETNX: correct, but it spins",
		ShowsZH: "SETNX 抢锁、DEL 放锁，失败就重试：不超卖，但等锁的请求一直在空转重试。",
		ShowsEN: "SETNX to take, DEL to release, retry on failure: no oversell, but the waiters spin.",
		Seed:    srcChapter1 + ": “在高并发场景下就变成了低效重试”", SeedFigure: "correct, inefficient retries",
		Look: inBench(1, "Invariants per strategy",
			"redis-spin passes every check: no oversell. The spinning itself is the lesson's figure, SETNX commands per acquisition, printed as ours and in the course report's chart; the report keeps the count in report.json (runs, backend_events, attempt).",
			"redis-spin 每一项检查都通过：不超卖。空转本身是这一课的数字：每次加锁发了几次 SETNX，打印在 ours 里，也画在课程报告的图里；测试报告把次数记在 report.json（runs 的 backend_events 里的 attempt）。"),
		Estimate: 10 * time.Second, run: spins},
	{N: 8, Slug: "ttl", TitleZH: "加过期时间：锁超时后误删", TitleEN: "A TTL: the lock expires, the late holder deletes another's",
		ShowsZH: "给锁加过期时间防死锁。业务比 TTL 长时，锁自己过期，别人拿到锁，前一个人再用 DEL 把别人的锁删了。",
		ShowsEN: "A TTL keeps a dead holder from blocking forever. When the work outlasts it, the lock expires, another takes it, and the late holder's DEL removes that one's lock.",
		Seed:    srcChapter1 + ": “锁误删，即某个线程持有的锁被别的线程删了”", SeedFigure: "two holders: oversold",
		Look: inBench(1, "Invariants per strategy",
			"mutual exclusion says FAIL for both redis-ttl and redis-owner: the expiry made two holders in both. What differs is the deletion of another's lock: counted for redis-ttl only (ours, the course report's chart, report.json's backend_events deleted_another). “The race: redis-ttl” shows the overlapping holders in red.",
			"redis-ttl 和 redis-owner 的 mutual exclusion 都是 FAIL：锁过期让两者都出现了两个持有者。区别在于误删别人的锁：只有 redis-ttl 有（见 ours、课程报告的图、report.json 里 backend_events 的 deleted_another）。“The race: redis-ttl” 用红色画出重叠的持有者。"),
		Estimate: 20 * time.Second, run: deletesAnother},
	{N: 9, Slug: "owner-check", TitleZH: "判断归属再删除：不是原子的", TitleEN: "Check the owner, then delete: not atomic",
		ShowsZH: "先 GET 比较是不是自己的锁，再 DEL。两条命令之间锁过期、被别人拿到，DEL 删掉的就是别人的锁。",
		ShowsEN: "GET to compare the owner, then DEL. If the lock expires and is taken between the two commands, the DEL deletes the new holder's lock.",
		Seed:    srcChapter1 + ": 锁误删, before the Lua step (判断和删除不是原子操作)", SeedFigure: "the next holder's lock deleted: oversold",
		Look: inBench(1, "The race: redis-owner",
			"Red bars overlap: between the GET that said “mine” and the DEL, the lock expired and went to another holder, whose lock the DEL then removed. mutual exclusion says FAIL and oversold is above 0 in the Comparison table.",
			"红条互相重叠：GET 说“是我的”之后、DEL 之前，锁过期并给了别人，DEL 删掉的就是别人的锁。mutual exclusion 是 FAIL，Comparison 表里 oversold 大于 0。"),
		Estimate: 15 * time.Second, run: oversells(catalog.RedisOwner, 3, func(o *bench.Options) {
			o.Config.WorkDelay, o.Config.LockTTL, o.Config.ReleasePause, o.Stock, o.Requests, o.Concurrency = 80*time.Millisecond, 100*time.Millisecond, 300*time.Millisecond, 20, 60, 20
		}, "the next holder's lock deleted")},
	{N: 10, Slug: "lua-watchdog", TitleZH: "Lua 原子释放 + 看门狗续期", TitleEN: "Lua release and the watchdog",
		ShowsZH: "Lua 脚本比较并删除，一步完成；看门狗每 TTL/3 续期。业务比 TTL 长也不会有两个持有者。",
		ShowsEN: "A Lua script compares and deletes in one step; the watchdog renews at TTL/3. Work longer than the TTL no longer makes two holders.",
		Seed:    srcChapter1 + " (Lua scripts) and " + srcQA + ": “启动一个watch dog看门狗……不断的延长锁key的生存时间”", SeedFigure: "correct with work > TTL",
		Look: inBench(1, "Invariants per strategy",
			"redis passes every check although each purchase works 600 ms under a 400 ms TTL: the watchdog renewed the lock. The Comparison table has oversold 0 and a long lock wait.",
			"每个请求在锁里干 600 毫秒，TTL 只有 400 毫秒，redis 仍然通过每一项检查：看门狗一直在续期。Comparison 表里 oversold 为 0，lock wait 很长。"),
		Estimate: 20 * time.Second, run: holds([]string{catalog.Redis}, 3, func(o *bench.Options) {
			// A 400 ms TTL, renewed every 133 ms: a renewal is lost only
			// when the holder's instance gets no CPU for most of the TTL.
			// Shorter ones lost renewals to a starved CPU (100 ms at a load
			// average of 5, 200 ms in CI's -race suite).
			o.Config.WorkDelay, o.Config.LockTTL, o.Stock, o.Requests, o.Concurrency = 600*time.Millisecond, 400*time.Millisecond, 20, 60, 20
		})},
	{N: 11, Slug: "no-watchdog", TitleZH: "没有续期：停顿超过 TTL", TitleEN: "No renewal: a pause past the TTL",
		ShowsZH: "关掉看门狗和租约检查：持有者在锁里停顿超过 TTL（这里是临界区里 250 毫秒的等待，代替 GC 停顿；TTL 100 毫秒），锁给了下一个人，两个人同时在临界区。",
		ShowsEN: "With the watchdog and the lease check off, a holder that stalls past its TTL (here a 250 ms wait inside the lock, standing in for a GC pause, against a 100 ms TTL) loses the lock to the next while it still works: two holders.",
		Seed:    srcChapter1 + ": 锁超时 (Kleppmann's GC pause, quoted in Chapter 1)", SeedFigure: "two holders: oversold",
		Look: inBench(1, "The race: redis",
			"Bars about 250 ms long, longer than the 100 ms TTL, overlap in red on different lanes: the lock expired under its holder and the next one took it. mutual exclusion says FAIL.",
			"大约 250 毫秒长的条，比 100 毫秒的 TTL 长，在不同的行上红色重叠：锁在持有者手里过期，下一个人拿到了锁。mutual exclusion 是 FAIL。"),
		Estimate: 15 * time.Second, run: oversells(catalog.Redis, 3, func(o *bench.Options) {
			o.Config.NoWatchdog, o.Config.NoLeaseCheck = true, true
			o.Config.WorkDelay, o.Config.LockTTL, o.Stock, o.Requests, o.Concurrency = 250*time.Millisecond, 100*time.Millisecond, 20, 60, 20
		}, "two holders")},
	{N: 12, Slug: "pubsub", TitleZH: "发布订阅代替轮询", TitleEN: "Pub/sub instead of polling",
		ShowsZH: "等锁的请求订阅解锁消息，被唤醒再抢，不再空转（Redisson 的做法）。",
		ShowsEN: "Waiters subscribe to the unlock message and retry when woken, instead of spinning (Redisson's way).",
		Seed:    srcQA + ": “获取失败: 订阅了解锁消息，然后再尝试获取锁”", SeedFigure: "woken waiters instead of retries",
		Look: inBench(1, "Charts: Successful purchases per second",
			"redis (pub/sub) beside redis-spin: the sales per second, and in the Latency CDF chart how long the waiters waited. Both sell exactly the stock (Invariants per strategy).",
			"图表 Successful purchases per second：redis（发布订阅）和 redis-spin 并排；Latency CDF 图里看等锁的请求等了多久。两者都正好卖完库存（Invariants per strategy）。"),
		Estimate: 20 * time.Second, Speed: true, run: ratioLesson(ratioBench{a: catalog.RedisSpin, b: catalog.Redis, instances: 3, l: load{600, 600, 50}, short: load{120, 120, 20}}, 0,
			func(r float64) (Verdict, string) {
				if r >= 1 {
					return Reproduced, "the pub/sub lock sells at least as fast as the spinning one"
				}
				return InKind, "the lock server does less work, but on one 2-core box the spinning lock's retries are cheap enough to keep up"
			})},
	{N: 13, Slug: "redlock-votes", TitleZH: "Redlock：多数派与分票", TitleEN: "Redlock: a majority, and split votes",
		ShowsZH: "五个独立的 Redis 主节点，拿到过半才算加锁成功。高并发下各人各拿到几票，谁也不过半：分票（Chapter 1 称之为“脑裂”）。数一数失败的多数派轮次。",
		ShowsEN: "Five independent Redis masters; the lock is held with a majority. Under contention each contender wins a few votes and nobody a majority: split votes. We count the failed quorum rounds.",
		Seed:    srcChapter1 + " and " + srcSchedulerNotes + ": RedLock (N/2+1, 脑裂)", SeedFigure: "correct, split votes under contention",
		Look: inBench(1, "Redlock rounds",
			"failed quorum (split) is above 0: rounds in which the contenders each won some of the 5 masters and nobody 3; split per sale is how many such rounds a sale cost. Invariants per strategy: every check passes.",
			"failed quorum (split) 大于 0：这些轮次里几个竞争者各拿到 5 个主节点中的几票，谁也没拿到 3 票，这就是分票；split per sale 是每卖出一件平均分票几轮。Invariants per strategy 里每项检查都通过。"),
		Estimate: 20 * time.Second, run: func(ctx context.Context, r *runner) (Outcome, error) {
			l := r.pick(small, tiny)
			o := bench.Options{Strategies: []string{catalog.Redlock}, Requests: l.requests, Stock: l.stock, Concurrency: l.concurrency, Config: stock.Config{NoLocalQueue: true}}
			rep, err := r.bench(ctx, o, benchCmd(o))
			if err != nil {
				return Outcome{}, err
			}
			s, err := summary(rep, catalog.Redlock)
			if err != nil {
				return Outcome{}, err
			}
			ev := rep.Runs[0].BackendEvents
			r.figure(Figure{Title: "Redlock's quorum rounds", Unit: "rounds", Bars: []FigureBar{
				{Label: "acquired", Value: ev["round_acquired"]}, {Label: "failed quorum (split)", Value: ev["round_split"]}, {Label: "taken", Value: ev["round_taken"]}}})
			out := Outcome{Ours: fmt.Sprintf("redlock (no local queue): oversold %.0f, %.0f acquisitions, %.0f failed quorum rounds (split votes), %.0f rounds taken",
				s.Oversold.Median, ev["round_acquired"], ev["round_split"], ev["round_taken"]), Verdict: Reproduced}
			switch {
			case s.Oversold.Max > 0:
				out.Verdict, out.Why = NotReproduced, "redlock oversold in a calm run: a defect"
			case ev["round_split"] == 0:
				out.Verdict, out.Why = InKind, "correct, but no split vote on this run"
			}
			return out, nil
		}},
	{N: 14, Slug: "redlock-restart", TitleZH: "Redlock 崩溃恢复：节点重启丢锁", TitleEN: "Redlock: a node restarts without its keys",
		ShowsZH: "拿锁的多数派里有一个节点重启且没有持久化，锁键丢了；另一个客户端又凑齐了多数派：两个持有者。",
		ShowsEN: "A node of the granting majority restarts without persistence and forgets the key; another client gathers a majority again: two holders.",
		Seed:    srcChapter1 + ": 崩溃恢复 (fsync=always 才安全)", SeedFigure: "two holders after a restart",
		Look: inStory(1,
			"The unprotected row is red: oversold in most runs, after the node restarted without its keys. Its run reports (the numbers at the row's end) show the two holders under “The race”.",
			"unprotected 那一行是红的：节点不带数据重启之后，多数运行都超卖了。行末的数字链接到每次运行的报告，“The race” 里能看到两个持有者。"),
		Estimate: 55 * time.Second, run: fenced("redlock-restart", scenario.ProtectNone)},
	{N: 15, Slug: "zookeeper-recipe", TitleZH: "ZooKeeper：临时顺序节点", TitleEN: "ZooKeeper: ephemeral sequential nodes",
		ShowsZH: "每个等待者创建临时顺序节点，只监听前一个节点：最小号拿锁，公平、不超卖。",
		ShowsEN: "Each waiter creates an ephemeral sequential node and watches only its predecessor: the lowest number holds the lock, fair, no oversell.",
		Seed:    srcQA + ": “获得最小号得锁……节点监听机制”", SeedFigure: "correct, fair",
		Look: inBench(1, "Invariants per strategy",
			"zookeeper and redis both pass every check: both are correct. The fairness is the lesson's figure (the share of acquisitions ahead of an earlier waiter), from each run's lock events: the “#1 events” links under the table; the course report charts it.",
			"zookeeper 和 redis 都通过每一项检查：两者都正确。公平与否是这一课的数字（比先来的等待者更早拿到锁的比例），从每次运行的锁事件算出：表下面的“#1 events”链接；课程报告里有它的图。"),
		Estimate: 20 * time.Second, run: fairness},
	{N: 16, Slug: "herd", TitleZH: "羊群效应", TitleEN: "The herd effect",
		ShowsZH: "每个等待者都监听父节点：一次释放唤醒所有人，每次加锁收到的事件随等待者增多而增多。",
		ShowsEN: "Every waiter watches the parent: each release wakes them all, and the watch events per acquisition grow with the waiters.",
		Seed:    srcQA + " and " + srcChapter1 + ": 羊群效应 (watch the predecessor, not the parent)", SeedFigure: "many wake-ups per acquisition",
		Look: inBench(2, "Comparison",
			"Report 1 (fewer waiters) and report 2 (more): zookeeper and zookeeper-herd both sell exactly the stock. The wake-ups are the lesson's figure, read from the instances' /metrics (seckill_lock_watch_events_total) and charted in the course report: the herd's grow with the waiters.",
			"第 1 份报告（等待者少）和第 2 份（等待者多）：zookeeper 和 zookeeper-herd 都正好卖完库存。唤醒次数是这一课的数字，从各实例的 /metrics（seckill_lock_watch_events_total）读出，画在课程报告里：羊群的唤醒次数随等待者增多而增多。"),
		Estimate: 40 * time.Second, run: herd},
	{N: 17, Slug: "zk-session", TitleZH: "ZooKeeper 会话过期", TitleEN: "ZooKeeper: the session expires in a pause",
		ShowsZH: "持有者停顿超过会话超时，临时节点被删，下一个人拿到锁；停顿结束后前一个人继续写。用 czxid 做 fencing token 挡住它。",
		ShowsEN: "The holder pauses past its session timeout, its ephemeral node goes, the next takes the lock, and the first writes when it wakes. The czxid as a fencing token stops it.",
		Seed:    srcChapter1 + ": “zk 真正存在的问题”", SeedFigure: "two holders; fencing saves the data",
		Look: inStory(1,
			"The unprotected row is red: oversold in most runs after the session expired in the pause. The fencing row has oversold 0 and stale refused above 0: the czxid refused the woken holder's write.",
			"unprotected 那一行是红的：停顿中会话过期后，多数运行都超卖了。fencing 那一行 oversold 为 0，stale refused 大于 0：czxid 拒绝了醒来的旧持有者的写入。"),
		Estimate: 2 * time.Minute, run: fenced("zk-session"),
		Longer: "ZooKeeper's shortest session is 4 s (2 x tickTime), so the pause is 8 s, struck up to twice a run; three runs unprotected and three fenced take about 2 minutes"},
	{N: 18, Slug: "etcd-revisions", TitleZH: "etcd：租约与 revision", TitleEN: "etcd: leases and revisions",
		ShowsZH: "租约 + 续约，按 revision 排队，监听前一个键的删除：正确、公平。",
		ShowsEN: "A lease kept alive, waiters ordered by revision, each watching the key before its own: correct and fair.",
		Seed:    srcOverview + ", " + srcEtcdArticle + ": etcd 分布式锁 (lease, revision, watch)", SeedFigure: "correct",
		Look: inBench(1, "Invariants per strategy",
			"etcd passes every check, and the Comparison table has oversold 0 and ok equal to the stock.",
			"etcd 通过每一项检查；Comparison 表里 oversold 为 0，ok 正好等于库存。"),
		Estimate: 15 * time.Second, run: holds([]string{catalog.Etcd}, 3, nil)},
	{N: 19, Slug: "etcd-lease", TitleZH: "etcd 租约过期", TitleEN: "etcd: the lease expires in a pause",
		ShowsZH: "持有者停顿超过租约，锁给了下一个人。revision 是天然的 fencing token。",
		ShowsEN: "The holder pauses past its lease and the lock goes to the next. The revision is a natural fencing token.",
		Seed:    srcChapter1 + ": lease expiry (etcd's version of the pause)", SeedFigure: "two holders; fencing saves the data",
		Look: inStory(1,
			"The unprotected row is red: oversold in most runs after the lease expired in the pause. The fencing row has oversold 0 and stale refused above 0: the revision refused the woken holder's write.",
			"unprotected 那一行是红的：停顿中租约过期后，多数运行都超卖了。fencing 那一行 oversold 为 0，stale refused 大于 0：revision 拒绝了醒来的旧持有者的写入。"),
		Estimate: 90 * time.Second, run: fenced("etcd-lease"),
		Longer: "the pause (5 s, past the 2 s lease) is struck up to twice a run; three runs unprotected and three fenced take 75 to 90 s"},
	{N: 20, Slug: "mysql", TitleZH: "MySQL：悲观锁、乐观锁、唯一索引", TitleEN: "MySQL: for update, version, unique index",
		ShowsZH: "SELECT ... FOR UPDATE 行锁；version 乐观锁比较并交换；唯一索引插入一行当锁。都不超卖，快慢不同。",
		ShowsEN: "A row lock (SELECT ... FOR UPDATE), a version compare-and-swap, a lock row under a UNIQUE index: none oversells, at different speeds.",
		Seed:    srcQA + " and " + srcChapter1 + ": 数据库实现 (悲观锁、乐观锁、唯一索引)", SeedFigure: "correct",
		Look: inBench(1, "Charts: Successful purchases per second",
			"Three bars, three speeds; Invariants per strategy: all three pass every check.",
			"三根柱子，三种速度；Invariants per strategy 里三者每一项检查都通过。"),
		Estimate: 20 * time.Second, run: holds([]string{catalog.MySQLForUpdate, catalog.MySQLOptimistic, catalog.MySQLUnique}, 3, nil)},
	{N: 21, Slug: "lock-free", TitleZH: "不用锁：一条原子 SQL / 一段 Lua", TitleEN: "No lock at all: one atomic statement",
		ShowsZH: "UPDATE ... SET stock = stock - 1 WHERE stock >= 1，或 Redis 里一段 Lua 检查并扣减：不需要分布式锁，也最快。",
		ShowsEN: "UPDATE ... SET stock = stock - 1 WHERE stock >= 1, or one Lua check-and-decrement in Redis: no distributed lock, and the fastest.",
		Seed:    srcChapter1 + ": the conditional update behind every lock's write", SeedFigure: "correct, fastest",
		Look: inBench(1, "Charts: Successful purchases per second",
			"sql-atomic and redis-atomic, the tallest bars of the course; Invariants per strategy: every check passes, and release after commit is n/a: there is no lock.",
			"sql-atomic 和 redis-atomic，整个课程里最高的柱子；Invariants per strategy 里每项检查都通过，release after commit 是 n/a：根本没有锁。"),
		Estimate: 15 * time.Second, run: holds([]string{catalog.SQLAtomic, catalog.RedisAtomic}, 3, nil)},
	{N: 22, Slug: "fencing", TitleZH: "Fencing token：挡住过期的持有者", TitleEN: "Fencing tokens: the stale holder is refused",
		ShowsZH: "锁发一个单调递增的号码，资源只接受不比见过的号码小的写：停顿醒来的旧持有者被拒绝，库存正确。",
		ShowsEN: "The lock hands out an increasing number and the resource accepts no write with a smaller one than it has seen: the holder that wakes from a pause is refused, and the stock stays right.",
		Seed:    srcChapter1 + ": Fencing token (Kleppmann, quoted in Chapter 1)", SeedFigure: "stale writes refused",
		Look: inStory(1,
			"The unprotected row is red: the holder that woke from its pause wrote, oversold in most runs. The fencing row has oversold 0 and stale refused above 0: those are the refused writes.",
			"unprotected 那一行是红的：从停顿中醒来的持有者照样写入，多数运行都超卖了。fencing 那一行 oversold 为 0，stale refused 大于 0：这些就是被拒绝的写入。"),
		Estimate: 75 * time.Second, run: fenced("pause-holder"),
		Longer: "the lock serialises each run (40 sales of 200 ms work, a 1.6 s pause: about 12 s); three runs unprotected and three fenced take about 70 s"},
	{N: 23, Slug: "failover", TitleZH: "Redis 主从切换丢锁", TitleEN: "Redis failover loses the lock",
		ShowsZH: "锁写到主节点，还没复制到从节点，主节点就挂了；从节点升主，锁不见了：两个持有者。复制延迟是模拟的（先删掉从节点上的那份：本机回环的复制远不到一毫秒），主从切换是真的。",
		ShowsEN: "The lock is written to the primary, which fails before replicating it; the replica is promoted without it: two holders. The replication lag is emulated (the replica's copy is deleted first: loopback replicates in well under a millisecond); the failover is real.",
		Seed:    srcQA + " and " + srcChapter1 + ": 主从切换 (Redis 主从异步复制)", SeedFigure: "two holders; fencing saves the data",
		Topology: stack.TopologyHA, Look: inStory(1,
			"The unprotected row is red: after the failover (real) of a primary whose lock never reached the replica (the lag emulated), two holders oversold. The fencing row has oversold 0 and stale refused above 0.",
			"unprotected 那一行是红的：主节点的锁没复制到从节点（复制延迟是模拟的），主从切换（真的）之后，两个持有者超卖了。fencing 那一行 oversold 为 0，stale refused 大于 0。"),
		Estimate: 2 * time.Minute, run: fenced("redis-failover"),
		Longer: "the lock serialises each run (10 sales of 1 s work around a real Sentinel failover: about 20 s); three runs unprotected and three fenced take about 2 minutes"},
	{N: 24, Slug: "consul-session", TitleZH: "Consul：会话失效与 lock-delay", TitleEN: "Consul: the session is invalidated in a pause; lock-delay",
		ShowsZH:    "持有者停顿超过会话 TTL（Consul 最少 10 秒，失效可能要到 2 倍 TTL），会话失效、键被释放。lock-delay 为 0 时下一个人立刻拿到锁：两个持有者；Consul 默认 15 秒的 lock-delay 在这段时间里谁也拿不到；键的 ModifyIndex 做 fencing token 挡住旧持有者。",
		ShowsEN:    "The holder pauses past its session TTL (Consul's minimum is 10 s, and invalidation may take twice that); the session goes and the key is released. With lock-delay 0 the next waiter takes it at once: two holders. Consul's default 15 s lock-delay keeps everyone out meanwhile; the key's ModifyIndex as a fencing token refuses the stale holder.",
		Seed:       srcQA + ": 基于 Consul 做分布式锁 (the sources give no figure; Consul's documentation promises: no acquisition of an invalidated session's locks for its lock-delay, 15 s by default)",
		SeedFigure: "none given; Consul: lock-delay holds the key back 15 s",
		Backend:    "consul", Look: inStory(1,
			"Report 1, lock-delay 0: the unprotected row is red (two holders after the session was invalidated), the fencing row has oversold 0 and stale refused above 0. Report 2 is Consul's default 15 s lock-delay, unprotected: its longest gap s is the time nobody could take the lock.",
			"第 1 份报告，lock-delay 为 0：unprotected 那一行是红的（会话失效后出现两个持有者），fencing 那一行 oversold 为 0，stale refused 大于 0。第 2 份报告是 Consul 默认 15 秒的 lock-delay、不加保护：longest gap s 就是谁也拿不到锁的那段时间。"),
		Estimate: 280 * time.Second, run: consulStory("consul-session"),
		Longer: "Consul's sessions last at least 10 s and may take 20 s to be invalidated, so the pause is 24 s; nine runs of it (lock-delay 0 unprotected and fenced, and Consul's default lock-delay, three each) take about 4.5 minutes"},
	{N: 25, Slug: "consul-leader", TitleZH: "Consul 集群换主", TitleEN: "Consul: the cluster loses its leader",
		ShowsZH:    "3 个 Consul 服务器里 leader 被杀掉、3 秒后再启动；另外两个重新选主。选主期间获取锁要等（或 503），之后恢复；不超卖，每个 2xx 都有订单。",
		ShowsEN:    "The leader of 3 Consul servers is killed and started 3 s later; the other two elect a new one. Acquisitions wait (or get 503) during the election and resume; nothing oversells and every 2xx has its order.",
		Seed:       srcQA + ": Consul (raft: a lock service is as available as its quorum)",
		SeedFigure: "none given; raft: a new leader within an election timeout",
		Topology:   stack.TopologyHA, Backend: "consul", Look: inStory(1,
			"oversold 0 and 2xx without order 0; ok/s before, during and after: the sales drop while the servers elect a new leader and come back after it. longest gap s is the longest wait.",
			"oversold 为 0，2xx without order 为 0；ok/s before、during、after 三列：选主期间销量下降，选出新 leader 之后恢复。longest gap s 是最长的一段等待。"),
		Estimate: 60 * time.Second, run: fenced("consul-leader", scenario.ProtectNone)},
	{N: 26, Slug: "ranking", TitleZH: "排名取决于什么：网络、持久化、只测锁", TitleEN: "What the ranking depends on: network, durability, the lock alone",
		ShowsZH:    "原文给锁服务排了名：数据库慢，Redis 快，ZooKeeper 稍慢于 Redis，etcd 不错。我们测实验室里全部的锁服务（原文那四种，加上 Redlock、ZooKeeper 的羊群写法和 Consul），三种条件各跑 3 遍：本机回环 + 默认持久化下的整笔购买、跨可用区 2 ms + 全部 fsync 下的整笔购买、同样 2 ms + fsync 下只测锁（临界区不做数据库事务）。结论按原文排名里的每一对锁来判，看的是 3 遍的范围（范围重叠算噪声内），以只测锁为准：原文排的是锁服务本身。整笔购买里还跑了不用锁服务的 sql-atomic（一条带条件的 UPDATE）和 mysql-forupdate：原文给锁服务排名没错，但整笔购买里，一条不加锁的语句比任何一把锁都快。",
		ShowsEN:    "The source ranks the lock services: the database slow, Redis fast, ZooKeeper a little below Redis, etcd good. We measure every lock service of the lab (the source's four, and Redlock, ZooKeeper's herd recipe and Consul) under three conditions, three runs each: the whole purchase on this machine's loopback at the default durability (Redis writes nothing to disk), the whole purchase over a cross-zone 2 ms round trip with every server fsyncing, and the lock alone (no database transaction in the critical section) at that same 2 ms with fsync. The verdict judges the source's order pair by pair on the ranges of the three runs (ranges that overlap are within noise) and rests on the lock alone, which is what the source ranks. The whole purchase also runs two strategies without a lock service, sql-atomic (one conditional UPDATE) and mysql-forupdate: the source ranks the lock services rightly, but on the whole purchase a statement without a lock beats every lock.",
		Seed:       srcChapter1 + ": “基于数据库的分布式锁……性能较低；基于Redis……性能⾼；基于Zookeeper……性能稍弱于Redis；基于Etcd……性能不错”",
		SeedFigure: "database low < etcd good, ZooKeeper slightly below Redis < Redis high",
		Look: inBench(3, "Cost model",
			"report 3 (the lock alone at 2 ms with fsync): the Comparison table's ok/s per lock, the median and the min–max of three runs; then in the cost model each lock's round trips and fsyncs per purchase: Consul, which writes its session and its key to a raft log fsynced at every step, trails. Reports 1 and 2 are the whole purchase at loopback and at 2 ms with fsync: sql-atomic's row is above every lock's in both.",
			"第 3 份报告（2 ms + fsync 下只测锁）：Comparison 表里每把锁的 ok/s，三遍的中位数和最小–最大值；再看 cost model 里每次购买的往返次数和 fsync 次数：Consul 每一步都把会话和键写进每次 fsync 的 raft 日志，排在最后。报告 1、2 是整笔购买：本机回环，以及 2 ms 往返 + 全部 fsync；两份里 sql-atomic 那一行都高过每一把锁。"),
		Speed: true, Estimate: 300 * time.Second, run: ranking,
		Longer: "it starts two stacks of its own (default and fsync durability, with the proxy) and runs every lock service three times under each of three conditions, two of them at a 2 ms round trip where Consul sells 15 to 30 a second: about 5 minutes"},
	{N: 27, Slug: "one-order-per-user", TitleZH: "一人一单：先查再插入的竞态", TitleEN: "One order per user: check, then insert, is a race",
		ShowsZH: "库存对了以后，秒杀还要限制每人只能买一单。朴素写法先查这个用户有没有订单、没有再下单：查和插入之间没有保护，同一用户的并发请求都查到 0，都下单了。" +
			"正确的做法把规则放到一个原子步骤里：MySQL 里用 (商品, 用户, 序号) 的唯一键，或者在扣库存的同一段 Lua 里检查并记下这个用户。来源文章没有讲这一课，它来自实践：黑马点评 Redis 课程的“一人一单”。",
		ShowsEN: "Once the stock is safe, a flash sale also limits each user to one order. The naive code asks whether the user has an order and inserts one when not: nothing guards the two steps, so a user's concurrent requests all find 0 and all buy. " +
			"The fix puts the rule in one atomic step: a unique key (goods, user, slot) in MySQL, or a check of the user in the same Lua script that takes the stock. The sources do not cover this lesson; it comes from practice: the hm-dianping (黑马点评) Redis course's 一人一单.",
		Seed:       "none of the sources covers a per-user limit; the practice is the hm-dianping (黑马点评) Redis course, 一人一单: “查询订单……判断是否存在……扣减库存……创建订单” (query, check, deduct, create: the race), then a lock per user and the Lua check in Redis",
		SeedFigure: "none given (not in the sources); practice: the check-then-insert lets one user buy several times under concurrency, a key or the Lua check makes it one",
		Look: inBench(1, "Invariants per strategy",
			"the column orders per user within limit: none FAILs (the link gives how many orders past the limit, held by how many users), sql-atomic and redis-atomic pass. In the Comparison table ok is at most the number of users for them, above it for none.",
			"orders per user within limit 这一列：none 是 FAIL（链接里有超出限制的订单数、涉及多少个用户），sql-atomic 和 redis-atomic 都通过。Comparison 表里这两者的 ok 不超过用户数，none 超过了。"),
		Estimate: 15 * time.Second, run: onePerUser},
	{N: 28, Slug: "async-orders", TitleZH: "异步下单：Redis 预扣减 + Stream 消息队列", TitleEN: "Asynchronous orders: Redis pre-deduction and a stream",
		ShowsZH: "生产上的秒杀答案：一段 Lua 在 Redis 里检查库存和一人一单、扣减、把订单 XADD 进 Stream，立刻回 202“已受理”；每个实例里的消费者组把订单写进 MySQL（请求号唯一，重复投递只写一次），提交之后才 XACK；实例被 kill -9，它没确认的消息由别的消费者 XAUTOCLAIM 接手。" +
			"这一课比较它和 sql-atomic、redis-atomic 的吞吐量，给出订单延迟（受理到提交），再在压测中途 kill -9 一个实例：排空之后订单数等于卖出的件数，不丢也不重。最后在压测中途杀掉 Redis：默认不落盘时，已经回了 202 的订单会丢（数出来是多少），MySQL 的条件扣减仍然不让超卖；Redis 每次写都 fsync（--durability fsync）时一单不丢。原文只讲到 Redis 预扣减（003），Stream 和消费者组来自实践：黑马点评 Redis 课程的“异步秒杀”。",
		ShowsEN: "The answer production flash sales give: one Lua script checks the stock and the per-user limit in Redis, deducts, and XADDs the order to a stream, and the purchase is answered 202 \"accepted\" at once; a consumer group inside each instance writes the orders to MySQL (the request id is unique, so an entry delivered twice is written once) and XACKs only after the COMMIT; when an instance is killed with kill -9, another consumer takes over its unacknowledged entries with XAUTOCLAIM. " +
			"The lesson sets its throughput beside sql-atomic's and redis-atomic's, gives the order lag (accept to COMMIT), and kills an instance mid-run: once the queue drained, the orders equal the units sold, none lost and none doubled. Last it kills Redis mid-run: at the default durability (Redis writes nothing to disk) orders already answered 202 are lost, and counted, while MySQL's conditional deduction still refuses to oversell; with Redis fsyncing every write (--durability fsync) none is lost. The sources stop at Redis pre-deduction (Chapter 1); the stream and its consumer group come from practice: the hm-dianping (黑马点评) Redis course's 异步秒杀.",
		Seed:       srcChapter1 + ": Redis 预扣减 (pre-deduction, redis-atomic); the asynchronous order (Redis Stream, consumer group, XACK after the write, pending entries taken over) is not in the sources: the practice is the hm-dianping (黑马点评) Redis course, 异步秒杀",
		SeedFigure: "none given (not in the sources); the practice's claim: answering before the order is written is faster than writing it in the purchase (redis-stream's ok/s above sql-atomic's and redis-atomic's), oversold 0, orders = units sold after a consumer's kill -9",
		Look: inBench(1, "Order queue",
			"report 1: in the Comparison table redis-stream's ok/s beside sql-atomic's and redis-atomic's; the Order queue table gives the drain time, the orders per batch (one MySQL transaction each: a consumer waits 20 ms after a short batch, --stream-gather, so that the next one gathers) and the order lag (p50, p99). Report 2 is the kill -9: its Order queue row has orders equal to accepted, reclaimed above 0 (the killed consumer's entries, taken over or read again) and duplicates skipped; the fault windows show the sales going on through the kill. Reports 3 and 4 kill Redis: at the default durability ok_has_order fails by the orders lost, at fsync every check passes.",
			"第 1 份报告：Comparison 表里 redis-stream 的 ok/s 和 sql-atomic、redis-atomic 并排；Order queue 表给出排空时间、每批订单数（每批一个 MySQL 事务：消费者读到不满的一批之后等 20 ms，--stream-gather，让下一批攒满一些）和订单延迟（p50、p99）。第 2 份报告是 kill -9：Order queue 那一行 orders 等于 accepted，reclaimed 大于 0（被杀实例没确认的消息，被接手或重读），duplicates 被跳过；故障窗口表显示杀掉实例期间照样在卖。第 3、4 份报告杀掉 Redis：默认持久化下 ok_has_order 失败，失败数就是丢掉的订单；fsync 下每项检查都通过。"),
		Speed: true, Estimate: 45 * time.Second, run: asyncOrders},
}

// consulStory runs a Consul story three ways: lock-delay 0 unprotected
// (the story: two holders) and fenced (oversold 0), and Consul's default
// lock-delay unprotected, which is measured and said, not judged: it
// covers a loss that ends within it.
func consulStory(name string) func(context.Context, *runner) (Outcome, error) {
	return func(ctx context.Context, r *runner) (Outcome, error) { return lockDelayStory(ctx, r, name) }
}

func lockDelayStory(ctx context.Context, r *runner, name string) (Outcome, error) {
	sc, err := scenario.Find(name)
	if err != nil {
		return Outcome{}, err
	}
	noDelay, withDelay := sc.Strategies[0], sc.Strategies[1]
	res, err := r.scenarioOf(ctx, sc, []string{noDelay}, scenario.ProtectNone, scenario.ProtectFencing)
	if err != nil {
		return Outcome{}, err
	}
	var rows []scenario.Row
	for _, p := range []scenario.Protection{scenario.ProtectNone, scenario.ProtectFencing} {
		rw, err := row(res, p)
		if err != nil {
			return Outcome{}, err
		}
		rows = append(rows, rw)
	}
	out := storyVerdict(sc.Name, rows)
	res, err = r.scenarioOf(ctx, sc, []string{withDelay}, scenario.ProtectNone)
	if err != nil {
		return Outcome{}, err
	}
	rw, err := row(res, scenario.ProtectNone)
	if err != nil {
		return Outcome{}, err
	}
	r.figure(storyFigure(append(rows, rw)))
	out.Ours += fmt.Sprintf("; %s (lock-delay 15 s) unprotected: oversold in %d of %d runs (%s; %d units, %d lease lost)",
		rw.Strategy, rw.RunsOversold, rw.Runs, confidence.Note(rw.RunsOversold, rw.Runs, "run"), rw.Oversold, rw.LeaseLost)
	return out, nil
}

// instanceCount says "1 instance" or "N instances".
func instanceCount(n int) string {
	if n == 1 {
		return "1 instance"
	}
	return fmt.Sprintf("%d instances", n)
}
