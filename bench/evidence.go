package bench

import (
	"bufio"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/seckill-lab/seckill/bench/chart"
	"github.com/seckill-lab/seckill/bench/history"
	"github.com/seckill-lab/seckill/bench/lockcheck"
	"github.com/seckill-lab/seckill/stock"
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
	held   int
	last   time.Time
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

// collectEvents subscribes to every instance's /admin/events and keeps the
// events of key until stop.
func collectEvents(ctx context.Context, fleet Fleet, key string) (*eventCollector, error) {
	ctx, cancel := context.WithCancel(ctx)
	c := &eventCollector{cancel: cancel}
	for _, base := range fleet.Instances {
		ch, err := SubscribeEvents(ctx, base, fleet.AdminToken)
		if err != nil {
			cancel()
			c.wg.Wait()
			return nil, err
		}
		c.wg.Go(func() {
			for ev := range ch {
				if ev.Key == key {
					c.mu.Lock()
					c.events = append(c.events, ev)
					c.last = time.Now()
					switch ev.Kind {
					case stock.EventAcquired:
						c.held++
					case stock.EventReleased:
						c.held--
					}
					c.mu.Unlock()
				}
			}
		})
	}
	return c, nil
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
// order.
func (c *eventCollector) stop() []stock.Event {
	for deadline := time.Now().Add(eventTailMax); !c.settled() && time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond)
	}
	c.cancel()
	c.wg.Wait()
	c.mu.Lock()
	defer c.mu.Unlock()
	slices.SortStableFunc(c.events, func(a, b stock.Event) int { return cmp.Compare(a.MonoNS, b.MonoNS) })
	return c.events
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

// historyOps turns the responses of a run into the history the
// linearizability check reads: a 2xx sold qty (with the remaining stock it
// reported), 409 sold_out sold nothing, another 4xx took no effect, and
// anything else (5xx, a transport error) may or may not have.
func historyOps(responses []Response, qty int) []history.Op {
	ops := make([]history.Op, 0, len(responses))
	for _, r := range responses {
		op := history.Op{ID: r.RequestID, Qty: int64(qty), Call: r.Sent, Return: r.Sent.Add(r.Latency)}
		switch o := r.Outcome(); {
		case o == OutcomeOK && r.Remaining != nil:
			op.Result, op.Remaining = history.Sold, *r.Remaining
		case o == OutcomeOK: // a sale whose remaining is unknown: it may sit anywhere
			op.Result = history.Unknown
		case o == OutcomeSoldOut:
			op.Result = history.SoldOut
		case r.Definite():
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
	inv := Invariant{Name: InvLinearizable, Applicable: rep.Verdict != history.VerdictUnknown,
		Pass:   rep.Verdict == history.Linearizable,
		Detail: fmt.Sprintf("%s: %d operations checked in %.1f ms", rep.Verdict, rep.Ops, float64(rep.Elapsed.Microseconds())/1000)}
	if rep.Reason != "" {
		inv.Detail += " (" + rep.Reason + ")"
	}
	if rep.Verdict == history.VerdictUnknown {
		inv.Pass = true
		inv.Detail = fmt.Sprintf("unknown: the check ran out of its %s", LinearizabilityTimeout)
	}
	if !inv.Pass {
		inv.Count = 1
		if view != "" && len(rep.Visualization) > 0 {
			if err := os.WriteFile(view, rep.Visualization, 0o644); err != nil {
				return inv, rep, fmt.Errorf("write the history view: %w", err)
			}
			inv.Detail += "; see " + filepath.Base(view)
		}
	}
	return inv, rep, nil
}

// lockEvidence checks a run's lock events: mutual exclusion of the
// critical sections and no release before COMMIT. It writes the events
// (and, when sections overlapped, a timeline of the first overlaps) under
// rawDir, and records their paths in run.
func lockEvidence(run *RunResult, events []stock.Event, evErr error, rawDir, name string) ([]Invariant, error) {
	na := func(why string) []Invariant {
		return []Invariant{
			{Name: InvMutualExclusion, Pass: true, Detail: "not applicable: " + why},
			{Name: InvReleaseAfterCommit, Pass: true, Detail: "not applicable: " + why},
		}
	}
	switch {
	case evErr != nil:
		return na(fmt.Sprintf("no lock events (%v)", evErr)), nil
	case len(events) == 0:
		return na("the strategy records no lock events"), nil
	}
	if rawDir != "" {
		run.Events = filepath.Join("raw", name+".events.jsonl")
		if err := writeEvents(filepath.Join(rawDir, name+".events.jsonl"), events); err != nil {
			return nil, err
		}
	}
	secs := lockcheck.Sections(events)
	overlaps := lockcheck.Overlaps(secs)
	early := lockcheck.ReleasedBeforeCommit(secs)
	mx := Invariant{Name: InvMutualExclusion, Applicable: true, Pass: len(overlaps) == 0, Count: len(overlaps),
		Detail: fmt.Sprintf("%d critical sections (stock read to commit), none overlapping; the instances share this machine's monotonic clock", len(secs))}
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
	rc := Invariant{Name: InvReleaseAfterCommit, Applicable: true, Pass: len(early) == 0, Count: len(early),
		Detail: "no lock released before its holder's COMMIT"}
	locked := false
	for _, s := range secs {
		locked = locked || s.AcquiredNS > 0
	}
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
