package bench

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/seckill-lab/seckill/bench/fleet"
	"github.com/seckill-lab/seckill/lockimpl"
)

// Faulter injects faults into the fleet. Inject starts f and returns the
// function that ends it (SIGCONT, a restart, a link healed; a no-op for a
// fault that is over at once). The local stack provides one;
// a fleet started elsewhere has none.
type Faulter interface {
	Inject(ctx context.Context, f fleet.Fault) (undo func(context.Context) error, err error)
}

// scheduleFaults injects faults at t0+Start and ends each at
// t0+Start+Duration. The returned wait ends every fault still on (also when
// ctx is done first) and returns the first error.
func scheduleFaults(ctx context.Context, fl Faulter, faults []fleet.Fault, t0 time.Time) (wait func() error) {
	ctx, cancel := context.WithCancel(ctx)
	errc := make(chan error, len(faults))
	for _, f := range faults {
		go func() { errc <- runFault(ctx, fl, f, t0) }()
	}
	return func() error {
		var errs []error
		for range faults {
			errs = append(errs, <-errc)
		}
		cancel()
		return errors.Join(errs...)
	}
}

// runFault waits for f's start, injects it, waits for its end (or ctx)
// and undoes it, under a context of its own so a cancelled run still heals.
func runFault(ctx context.Context, fl Faulter, f fleet.Fault, t0 time.Time) error {
	if !sleepUntil(ctx, t0.Add(f.Start)) {
		return nil
	}
	undo, err := fl.Inject(ctx, f)
	if err != nil {
		return fmt.Errorf("inject %s: %w", f, err)
	}
	sleepUntil(ctx, t0.Add(f.Start+f.Duration))
	uctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Minute)
	defer cancel()
	if err := undo(uctx); err != nil {
		return fmt.Errorf("end %s: %w", f, err)
	}
	return nil
}

// sleepUntil waits until t; false when ctx ended first.
func sleepUntil(ctx context.Context, t time.Time) bool {
	return lockimpl.Sleep(ctx, time.Until(t)) == nil
}

// Window is one span of a run with faults: before the first fault, during
// the faults, after the last. Answers count in the window they arrived in,
// so a rate is what the clients saw completed in that span.
type Window struct {
	Name     string  `json:"name"`
	FromS    float64 `json:"from_s"` // seconds since the run's first request
	ToS      float64 `json:"to_s"`
	Answered int     `json:"answered"`
	OK       int     `json:"ok"`
	// OKPerSec and AnswersPerSec are 0 and TooShort is set when the window
	// lasted under MinWindow: a rate over a few milliseconds means nothing.
	OKPerSec      float64        `json:"ok_per_s"`
	AnswersPerSec float64        `json:"answers_per_s"`
	TooShort      bool           `json:"too_short,omitempty"`
	Outcomes      map[string]int `json:"outcomes"`
}

// MinWindow is the shortest window a rate is given for.
const MinWindow = time.Second

// faultWindows splits responses by their answer time into before, during
// and after the faults; end is the run's length.
func faultWindows(responses []Response, t0 time.Time, faults []fleet.Fault, end time.Duration) []Window {
	if len(faults) == 0 {
		return nil
	}
	from, to := faults[0].Start, faults[0].Start+faults[0].Duration
	for _, f := range faults[1:] {
		from, to = min(from, f.Start), max(to, f.Start+f.Duration)
	}
	end = max(end, to)
	ws := []Window{
		{Name: "before", FromS: 0, ToS: from.Seconds(), Outcomes: map[string]int{}},
		{Name: "during", FromS: from.Seconds(), ToS: to.Seconds(), Outcomes: map[string]int{}},
		{Name: "after", FromS: to.Seconds(), ToS: end.Seconds(), Outcomes: map[string]int{}},
	}
	for _, r := range responses {
		at := r.Sent.Add(r.Latency).Sub(t0)
		i := 0
		switch {
		case at >= to:
			i = 2
		case at >= from:
			i = 1
		}
		ws[i].Answered++
		ws[i].Outcomes[r.Outcome()]++
		if r.Outcome() == OutcomeOK {
			ws[i].OK++
		}
	}
	for i := range ws {
		d := ws[i].ToS - ws[i].FromS
		if d < MinWindow.Seconds() {
			ws[i].TooShort = true
			continue
		}
		ws[i].OKPerSec = float64(ws[i].OK) / d
		ws[i].AnswersPerSec = float64(ws[i].Answered) / d
	}
	return ws
}

// Strike is one fault a Striker made during a run, for the report.
type Strike struct {
	What   string        `json:"what"`   // e.g. "pause inst-2 (holds goods:1, token 7)"
	AtS    float64       `json:"at_s"`   // seconds since the run's first request
	ForS   float64       `json:"for_s"`  // how long it lasted
	Reason string        `json:"reason"` // the event that triggered it
	start  time.Duration // AtS as a duration, for the windows
	length time.Duration

	// SalesGapS is how long sales stopped around it: the longest span
	// without a sale (or a sold out) that began before it healed (or
	// within GapSettle after) and ended after it began, counted from its
	// start at the earliest (setSalesGaps); GapOpen: no sale came after it.
	SalesGapS float64 `json:"sales_gap_s"`
	GapOpen   bool    `json:"sales_gap_open,omitempty"`
}

// NewStrike records a strike that began at since(t0) and lasted d.
func NewStrike(what, reason string, at, d time.Duration) Strike {
	return Strike{What: what, AtS: at.Seconds(), ForS: d.Seconds(), Reason: reason, start: at, length: d}
}

// Striker strikes during a run: Run starts with the run's first request and
// must return, with every fault it made undone, soon after ctx is done.
type Striker interface {
	Run(ctx context.Context, fleet fleet.Fleet, t0 time.Time) ([]Strike, error)
}

// strikeFaults turns strikes into the spans faultWindows splits a run by.
func strikeFaults(ss []Strike) []fleet.Fault {
	var out []fleet.Fault
	for _, s := range ss {
		out = append(out, fleet.Fault{Kind: "strike", Component: s.What, Start: s.start, Duration: s.length})
	}
	return out
}

// salesStopped is the longest time from a strike's start (since t0) to the
// next answer that sold or said sold out; with none, to the last answer
// after the strike, and resumed is false. 0 and true without strikes or
// without answers after them.
func salesStopped(responses []Response, t0 time.Time, strikes []Strike) (stopped time.Duration, resumed bool) {
	resumed = true
	for _, s := range strikes {
		at := t0.Add(s.start)
		var first, last time.Time
		for _, r := range responses {
			answered := r.Sent.Add(r.Latency)
			if !answered.After(at) {
				continue
			}
			if answered.After(last) {
				last = answered
			}
			if o := r.Outcome(); (o == OutcomeOK || o == OutcomeSoldOut) && (first.IsZero() || answered.Before(first)) {
				first = answered
			}
		}
		switch {
		case !first.IsZero():
			stopped = max(stopped, first.Sub(at))
		case !last.IsZero():
			stopped, resumed = max(stopped, last.Sub(at)), false
		}
	}
	return stopped, resumed
}

// longestGap is the longest time between two consecutive successful
// answers (by answer time); 0 with fewer than two.
func longestGap(responses []Response) time.Duration {
	var at []time.Time
	for _, r := range responses {
		if r.Outcome() == OutcomeOK {
			at = append(at, r.Sent.Add(r.Latency))
		}
	}
	slices.SortFunc(at, time.Time.Compare)
	var gap time.Duration
	for i := 1; i < len(at); i++ {
		gap = max(gap, at[i].Sub(at[i-1]))
	}
	return gap
}
