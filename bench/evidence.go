package bench

import (
	"bufio"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/seckill-lab/seckill/bench/adminclient"
	"github.com/seckill-lab/seckill/bench/chart"
	"github.com/seckill-lab/seckill/bench/contract"
	"github.com/seckill-lab/seckill/bench/fleet"
	"github.com/seckill-lab/seckill/bench/history"
	"github.com/seckill-lab/seckill/bench/lockcheck"
	"github.com/seckill-lab/seckill/stock"
	vegeta "github.com/tsenart/vegeta/v12/lib"
)

// Invariant names of the evidence checks (after the six of Evaluate).
const (
	// InvNoLostUpdate: every unit sold left the stock column (lost
	// updates = 0).
	InvNoLostUpdate = "no_lost_update"
	// InvNotAllFailed: some request got a business answer (sold or sold
	// out); a run in which every request failed proves nothing.
	InvNotAllFailed = "not_all_failed"
	// InvLinearizable: the clients' history (call and return times,
	// answers, the remaining stock each sale reported) fits a sequential
	// stock counter (package history, porcupine).
	InvLinearizable = "linearizable"
	// InvMutualExclusion: no two purchases of the goods were between
	// their stock read and their commit at once (the lock events).
	InvMutualExclusion = "mutual_exclusion"
	// InvReleaseAfterCommit: no lock was released before its holder's
	// COMMIT (the mutex-tx flaw).
	InvReleaseAfterCommit = "release_after_commit"
)

// LinearizabilityTimeout bounds the history check of one run; a check
// that runs out gives the verdict "unknown".
const LinearizabilityTimeout = 10 * time.Second

// A lock is released after the answer went out, so the events of a run are
// still collected after its last answer: until every acquisition seen has
// its release and no event came for eventQuiet, at most eventTailMax.
const (
	eventQuiet   = 50 * time.Millisecond
	eventTailMax = 5 * time.Second
)

// eventCollector gathers the lock events of one goods from every instance
// during a run.
type eventCollector struct {
	mu     sync.Mutex
	events []stock.Event
	// held counts acquisitions without their release yet; last is when
	// the last event came.
	held int
	last time.Time
	// gaps says what the collection may have missed: a stream that ended
	// and came back without the events in between, events a slow
	// subscriber lost, a stream that ended and did not come back.
	gaps []string
	// down are the instances whose stream is ended and not yet back.
	down map[string]time.Time
	// start is when the collection began: events from before (a replay
	// keeps older runs' events) are not the run's.
	start  int64
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

// eventReconnect is the wait between two attempts to reopen an event
// stream that ended during a run.
const eventReconnect = 100 * time.Millisecond

// collectEvents subscribes to every instance's /admin/events and keeps the
// events of key until stop. A stream that ends before stop is opened again
// (see follow).
func collectEvents(ctx context.Context, fleet fleet.Fleet, key string) (*eventCollector, error) {
	ctx, cancel := context.WithCancel(ctx)
	c := &eventCollector{cancel: cancel, start: stock.MonoNow(), down: map[string]time.Time{}}
	cl := adminclient.New(fleet.AdminToken)
	for _, base := range fleet.Instances {
		body, err := cl.OpenEvents(ctx, base, false)
		if err != nil {
			cancel()
			c.wg.Wait()
			return nil, err
		}
		c.wg.Go(func() { c.follow(ctx, cl, base, key, body) })
	}
	return c, nil
}

// follow reads the stream of the instance at base into c until ctx is
// done. An instance numbers its events (Seq), so a jump in the numbers is
// events lost to a slow subscriber. A stream that ends early is reopened
// with the replay of the events the instance kept: the events up to the
// last one seen are skipped; when the replay does not hold that one (the
// ring moved on, or the instance restarted), all of it is taken and the
// gap recorded.
func (c *eventCollector) follow(ctx context.Context, cl *adminclient.Client, base, key string, body io.ReadCloser) {
	var last stock.Event // the last event seen from base (Seq 0: none yet)
	for {
		var replay []stock.Event
		replaying := body != nil && last.Seq != 0
		adminclient.ReadEvents(body, func(it adminclient.Item) bool {
			switch {
			case it.Err != nil:
				return false
			case it.Replayed:
				replaying = false
				c.resync(base, key, &last, replay)
				return true
			case replaying:
				replay = append(replay, it.Event)
				return true
			}
			ev := it.Event
			switch {
			case last.Seq == 0 || ev.Seq == last.Seq+1:
			case ev.Seq <= last.Seq:
				// Numbered from 1 again: the instance restarted (its
				// reopened stream recorded what the restart lost).
				if ev.Seq > 1 {
					c.gap(fmt.Sprintf("%s: events 1 to %d after its restart missed", base, ev.Seq-1))
				}
			default:
				c.gap(fmt.Sprintf("%s: events %d to %d dropped (the subscriber fell behind)", base, last.Seq+1, ev.Seq-1))
			}
			last = ev
			c.add(key, ev)
			return true
		})
		if ctx.Err() != nil {
			return
		}
		c.mu.Lock()
		if _, ok := c.down[base]; !ok {
			c.down[base] = time.Now()
		}
		c.mu.Unlock()
		body = nil
		for body == nil {
			select {
			case <-ctx.Done():
				return
			case <-time.After(eventReconnect):
			}
			b, err := cl.OpenEvents(ctx, base, true)
			if err == nil {
				body = b
			}
		}
		if last.Seq == 0 {
			// Nothing seen yet: the replay is all new (before-run events
			// are filtered in add).
			c.resync(base, key, &last, nil)
		}
	}
}

// resync takes the replay of a reopened stream: the events after last, or
// all of them (the kept ones from before the run aside) and a gap when the
// replay does not hold last.
func (c *eventCollector) resync(base, key string, last *stock.Event, replay []stock.Event) {
	c.mu.Lock()
	since, wasDown := c.down[base]
	delete(c.down, base)
	c.mu.Unlock()
	from := 0
	if last.Seq != 0 {
		from = -1
		for i, ev := range replay {
			if ev.Seq == last.Seq && ev.MonoNS == last.MonoNS {
				from = i + 1
				break
			}
		}
		if from < 0 {
			from = 0
			if wasDown {
				c.gap(fmt.Sprintf("%s: events missing from %s (its stream ended and the replay no longer held the last event seen: the ring moved on or the instance restarted)",
					base, since.Format("15:04:05.000")))
			}
		}
	}
	for _, ev := range replay[from:] {
		*last = ev
		c.add(key, ev)
	}
}

// add keeps ev if it is of key and of this run.
func (c *eventCollector) add(key string, ev stock.Event) {
	if ev.Key != key || ev.MonoNS < c.start {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.events = append(c.events, ev)
	c.last = time.Now()
	switch ev.Kind {
	case stock.EventAcquired:
		c.held++
	case stock.EventReleased:
		c.held--
	}
}

// gap records something the collection missed.
func (c *eventCollector) gap(what string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.gaps = append(c.gaps, what)
}

// settled reports whether every acquisition seen has been released and
// no event came for eventQuiet.
func (c *eventCollector) settled() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.held <= 0 && time.Since(c.last) >= eventQuiet
}

// stop awaits the tail (every lock released, the streams quiet; at most
// eventTailMax), ends the subscriptions and returns the events in time
// order, and what the collection missed (a stream still down at the end
// included).
func (c *eventCollector) stop() ([]stock.Event, []string) {
	for deadline := time.Now().Add(eventTailMax); !c.settled() && time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond)
	}
	c.cancel()
	c.wg.Wait()
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, base := range slices.Sorted(maps.Keys(c.down)) {
		c.gaps = append(c.gaps, fmt.Sprintf("%s: its stream ended at %s and did not come back before the run's end", base, c.down[base].Format("15:04:05.000")))
	}
	slices.SortStableFunc(c.events, func(a, b stock.Event) int { return cmp.Compare(a.MonoNS, b.MonoNS) })
	return c.events, c.gaps
}

// writeEvents writes events as JSON lines.
func writeEvents(path string, events []stock.Event) error {
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("write events: %w", err)
	}
	w := bufio.NewWriter(f)
	enc := json.NewEncoder(w)
	for _, ev := range events {
		if err := enc.Encode(ev); err != nil {
			f.Close()
			return fmt.Errorf("write events: %w", err)
		}
	}
	return errors.Join(w.Flush(), f.Close())
}

// ReadHistory reads a run's raw results (RunResult.Raw, in vegeta's
// format) back into the history its linearizability check was given; qty
// is the run's purchase quantity. Each operation is named by its attack
// and its request's number ("none-1#17"): the raw results do not keep the
// Idempotency-Keys.
func ReadHistory(r io.Reader, qty int) ([]history.Op, error) {
	dec := vegeta.NewDecoder(bufio.NewReader(r))
	var responses []Response
	for {
		var res vegeta.Result
		err := dec.Decode(&res)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("read raw result %d: %w", len(responses)+1, err)
		}
		responses = append(responses, toResponse(&res, fmt.Sprintf("%s#%d", res.Attack, res.Seq+1)))
	}
	return historyOps(responses, qty), nil
}

// historyOps turns the responses of a run into the history the
// linearizability check reads, by the outcome table (Response.Effect): a
// sale sold qty (with the remaining stock it reported), sold_out sold
// nothing because the stock was short, another answer that sold nothing
// (a 4xx, 503 lock_timeout) took no effect, and anything else (a 5xx, a
// transport error) may or may not have.
func historyOps(responses []Response, qty int) []history.Op {
	ops := make([]history.Op, 0, len(responses))
	for _, r := range responses {
		op := history.Op{ID: r.RequestID, Qty: int64(qty), Call: r.Sent, Return: r.Sent.Add(r.Latency)}
		switch e := r.Effect(); {
		case e == contract.Sold && r.Remaining != nil:
			op.Result, op.Remaining = history.Sold, *r.Remaining
		case e == contract.Sold: // a sale whose remaining is unknown: it may sit anywhere
			op.Result = history.Unknown
		case e == contract.NothingSold && r.Outcome() == OutcomeSoldOut:
			op.Result = history.SoldOut
		case e == contract.NothingSold:
			op.Result = history.Refused
		default:
			op.Result = history.Unknown
		}
		ops = append(ops, op)
	}
	return ops
}

// checkHistory checks the run's history and records the verdict as an
// invariant; a failing history's porcupine view is written to view (a
// path; "" writes none) and its name returned.
func checkHistory(ctx context.Context, responses []Response, qty, initial int, view string) (Invariant, history.Report, error) {
	rep, err := history.Check(ctx, historyOps(responses, qty), int64(initial), LinearizabilityTimeout)
	if err != nil {
		return Invariant{}, rep, err
	}
	inv := linearizability(rep)
	if inv.Failed() && view != "" && len(rep.Visualization) > 0 {
		if err := os.WriteFile(view, rep.Visualization, 0o644); err != nil {
			return inv, rep, fmt.Errorf("write the history view: %w", err)
		}
		inv.Detail += "; see " + filepath.Base(view)
	}
	return inv, rep, nil
}

// linearizability is the invariant of a history check's report. A check
// that ran out of time decided nothing: it is undecided, neither passed
// nor failed.
func linearizability(rep history.Report) Invariant {
	ms := float64(rep.Elapsed.Microseconds()) / 1000
	by := checkerOf(rep)
	if rep.Verdict == history.VerdictUnknown {
		return Invariant{Name: InvLinearizable, Undecided: true, CheckMS: ms,
			Detail: fmt.Sprintf("undecided: the check of %d operations %s ran out of its %s", rep.Ops, by, LinearizabilityTimeout)}
	}
	inv := Invariant{Name: InvLinearizable, Applicable: true, Pass: rep.Verdict == history.Linearizable, CheckMS: ms,
		Detail: fmt.Sprintf("%s: %d operations checked in %.1f ms %s", rep.Verdict, rep.Ops, ms, by)}
	if rep.Reason != "" {
		inv.Detail += " (" + rep.Reason + ")"
	}
	if !inv.Pass {
		inv.Count = 1
	}
	return inv
}

// checkerOf says which checker decided rep: "by the counter checker", or
// "by porcupine" with why the counter checker could not.
func checkerOf(rep history.Report) string {
	switch {
	case rep.Checker == "":
		return ""
	case rep.Fallback != "":
		return "by " + rep.Checker + " (" + rep.Fallback + ")"
	}
	return "by the " + rep.Checker + " checker"
}

// evidenceInput is what the lock evidence is checked against: the sales
// (the request ids of the goods' persisted orders) and what the event
// collection missed (gaps) or why it had none (err).
type evidenceInput struct {
	sales []string
	gaps  []string
	err   error
}

// coverage compares the committed critical sections seen with the sales:
// every sale must have its section, complete from the stock read (and the
// lock, for a strategy that takes one) to the commit, and every committed
// section its sale. It returns what does not match, in words ("" when all
// does).
func coverage(secs []lockcheck.Section, sales []string, locked bool) string {
	sold := make(map[string]bool, len(sales))
	for _, id := range sales {
		sold[id] = true
	}
	seen := map[string]bool{}
	var extra, partial int
	for _, sec := range secs {
		if !sec.Committed {
			continue
		}
		seen[sec.Purchase] = true
		if !sold[sec.Purchase] {
			extra++
		}
		if sec.ReadNS == 0 || locked && sec.AcquiredNS == 0 {
			partial++
		}
	}
	missing := 0
	for id := range sold {
		if !seen[id] {
			missing++
		}
	}
	var out []string
	if missing > 0 {
		out = append(out, fmt.Sprintf("%d sales without a committed critical section seen", missing))
	}
	if extra > 0 {
		out = append(out, fmt.Sprintf("%d committed critical sections without a sale", extra))
	}
	if partial > 0 {
		out = append(out, fmt.Sprintf("%d committed sections seen without their stock read or lock", partial))
	}
	if len(out) == 0 {
		return ""
	}
	return fmt.Sprintf("the evidence is incomplete (%d sales, %d committed sections seen): %s", len(sales), len(seen), strings.Join(out, ", "))
}

// lockEvidence checks a run's lock events: mutual exclusion of the
// critical sections and no release before COMMIT. It writes the events
// (and, when sections overlapped, a timeline of the first overlaps) under
// rawDir, and records their paths in run.
//
// Mutual exclusion is checked over every sale or fails: the sections seen
// are compared with in.sales first (coverage), so a stream that ended
// early, or events lost on the way, cannot pass for a clean run.
func lockEvidence(run *RunResult, events []stock.Event, in evidenceInput, rawDir, name string) ([]Invariant, error) {
	na := func(why string) []Invariant {
		return []Invariant{
			{Name: InvMutualExclusion, Pass: true, Detail: "not applicable: " + why},
			{Name: InvReleaseAfterCommit, Pass: true, Detail: "not applicable: " + why},
		}
	}
	switch {
	case in.err != nil:
		return na(fmt.Sprintf("no lock events (%v)", in.err)), nil
	case len(events) == 0:
		return na("the strategy records no lock events"), nil
	}
	if rawDir != "" {
		run.Events = filepath.Join("raw", name+".events.jsonl")
		if err := writeEvents(filepath.Join(rawDir, name+".events.jsonl"), events); err != nil {
			return nil, err
		}
	}
	t0 := time.Now()
	secs := lockcheck.Sections(events)
	tSections := time.Since(t0)
	run.LockCycle = newLockCycle(lockcheck.Cycles(lockcheck.Holds(secs)))
	t1 := time.Now()
	overlaps := lockcheck.Overlaps(secs)
	tOverlaps := time.Since(t1)
	t2 := time.Now()
	early := lockcheck.ReleasedBeforeCommit(secs)
	tEarly := time.Since(t2)
	msOf := func(d time.Duration) float64 { return float64((tSections + d).Microseconds()) / 1000 }
	locked := false
	for _, s := range secs {
		locked = locked || s.AcquiredNS > 0
	}
	mx := Invariant{Name: InvMutualExclusion, Applicable: true, Pass: len(overlaps) == 0, Count: len(overlaps), CheckMS: msOf(tOverlaps),
		Detail: fmt.Sprintf("%d critical sections (stock read to commit), none overlapping, every sale's among them; the instances share this machine's monotonic clock", len(secs))}
	if len(in.gaps) > 0 {
		mx.Detail += "; the event streams missed events, none of a sale: " + strings.Join(in.gaps, "; ")
	}
	if missed := coverage(secs, in.sales, locked); missed != "" && len(overlaps) == 0 {
		mx.Pass, mx.Count, mx.Incomplete = false, 1, true
		mx.Detail = missed
		if len(in.gaps) > 0 {
			mx.Detail += "; the event streams: " + strings.Join(in.gaps, "; ")
		}
	}
	if len(overlaps) > 0 {
		var longest time.Duration
		for _, o := range overlaps {
			longest = max(longest, o.Duration())
		}
		first := overlaps[0]
		mx.Detail = fmt.Sprintf("%d pairs of purchases were inside the critical section at once (longest %s); first: %s on %s and %s on %s, for %s",
			len(overlaps), longest.Round(time.Microsecond), first.A.Purchase, first.A.Instance, first.B.Purchase, first.B.Instance, first.Duration().Round(time.Microsecond))
		if rawDir != "" {
			shown := overlaps[:min(len(overlaps), 5)]
			from, to := shown[0].A.ReadNS, shown[0].B.EndNS
			for _, o := range shown {
				from = min(from, o.A.ReadNS, o.B.ReadNS, nonZero(o.A.AcquiredNS, o.A.ReadNS), nonZero(o.B.AcquiredNS, o.B.ReadNS))
				to = max(to, o.A.EndNS, o.B.EndNS, o.A.ReleasedNS, o.B.ReleasedNS)
			}
			pad := (to - from) / 10
			// Only the purchases of the first overlaps: with 50 clients a
			// flawed run overlaps everywhere, and a wall of red shows nothing.
			in := map[string]bool{}
			for _, o := range shown {
				in[o.A.Instance+"/"+o.A.Purchase], in[o.B.Instance+"/"+o.B.Purchase] = true, true
			}
			var drawn []lockcheck.Section
			for _, sec := range secs {
				if in[sec.Instance+"/"+sec.Purchase] {
					drawn = append(drawn, sec)
				}
			}
			svg := lockcheck.TimelineSVG(fmt.Sprintf("%s: the first %d overlapping pairs of critical sections", name, len(shown)), drawn, shown, from-pad, to+pad)
			run.Timeline = filepath.Join("raw", name+".timeline.svg")
			run.timelineSVG = svg
			if err := os.WriteFile(filepath.Join(rawDir, name+".timeline.svg"), svg, 0o644); err != nil {
				return nil, fmt.Errorf("write the timeline: %w", err)
			}
			mx.Detail += "; timeline " + filepath.Base(run.Timeline)
		}
	}
	rc := Invariant{Name: InvReleaseAfterCommit, Applicable: true, Pass: len(early) == 0, Count: len(early), CheckMS: msOf(tEarly),
		Detail: "no lock released before its holder's COMMIT"}
	if !locked {
		rc = Invariant{Name: InvReleaseAfterCommit, Pass: true, Detail: "not applicable: the strategy takes no lock"}
	} else if len(early) > 0 {
		var worst int64
		for _, e := range early {
			worst = max(worst, e.ByNS)
		}
		rc.Detail = fmt.Sprintf("%d locks released before their holder's COMMIT (up to %s before it): the next holder can read uncommitted stock",
			len(early), time.Duration(worst).Round(time.Microsecond))
	}
	return []Invariant{mx, rc}, nil
}

func nonZero(v, alt int64) int64 {
	if v == 0 {
		return alt
	}
	return v
}

// Failures lists what makes the bench fail (a non-zero exit): a run in
// which every request failed, and a strategy expected correct under the
// run's setting that broke an invariant. Flawed strategies breaking theirs
// is the lesson, not a failure.
func (r *Report) Failures() []string {
	var out []string
	for _, run := range r.Runs {
		for _, inv := range run.Invariants {
			if inv.Pass || !inv.Applicable {
				continue
			}
			if inv.Name == InvNotAllFailed || run.ExpectedCorrect {
				out = append(out, fmt.Sprintf("%s #%d: %s: %s", run.Strategy, run.Repeat, inv.Name, inv.Detail))
			}
		}
	}
	return out
}

// latencyCDF is the run's latency distribution in milliseconds, for the
// report's CDF chart.
func latencyCDF(responses []Response) [][2]float64 {
	ms := make([]float64, 0, len(responses))
	for _, r := range responses {
		ms = append(ms, float64(r.Latency.Microseconds())/1000)
	}
	x, y := chart.CDF(ms, 60)
	out := make([][2]float64, len(x))
	for i := range x {
		out[i] = [2]float64{x[i], y[i]}
	}
	return out
}
