package bench

import (
	"math"
	"time"

	"github.com/seckill-lab/seckill/bench/fleet"
)

// Experiment is a fault applied to the fleet from outside the bench (a
// Chaos Mesh experiment on a cluster), as the command line named it. The
// bench does not know when it started: each run records the window in
// which its own answers went wrong (RunResult.ObservedFault).
type Experiment struct {
	Name string `json:"name"`
	// DurationS is the experiment's declared duration (0: a one-shot
	// fault, such as a pod kill).
	DurationS float64 `json:"declared_duration_s"`
	Note      string  `json:"note"`
}

// experimentNote says what the observed window is and what it is not.
const experimentNote = "applied outside the bench (kubectl apply): the bench does not see its start or end. " +
	"Each run's observed_fault_window is the first and last second of the run in which answers were errors, " +
	"lock timeouts, lease losses or stale holders refused; a stray error outside the fault widens it, a fault that broke nothing leaves none"

// faulty reports whether an answer with outcome o is one a fault makes:
// everything but a sale, sold out and the per-user limit.
func faulty(o string) bool {
	return o != OutcomeOK && o != OutcomeSoldOut && o != OutcomeUserLimit
}

// Second is one second of a run's timeline, by answer time.
type Second struct {
	At       int `json:"at_s"` // seconds since the run's first request
	Answered int `json:"answered"`
	OK       int `json:"ok"`
	Faulty   int `json:"faulty"`
}

// ObservedFault is the span of a run in which its answers went wrong, as
// the bench's own timeline shows it: from the start of the first second
// with a faulty answer (see faulty) to the end of the last one.
type ObservedFault struct {
	FromS float64 `json:"from_s"` // seconds since the run's first request
	ToS   float64 `json:"to_s"`
	// FaultySeconds counts the seconds in the span with a faulty answer;
	// Faulty the faulty answers, by outcome.
	FaultySeconds int            `json:"faulty_seconds"`
	Faulty        map[string]int `json:"faulty"`
	// Timeline is the run's answers per second, the span's source.
	Timeline []Second `json:"timeline"`
}

// timeline counts responses per second of answer time since t0.
func timeline(responses []Response, t0 time.Time) []Second {
	var out []Second
	for _, r := range responses {
		at := r.Sent.Add(r.Latency).Sub(t0)
		i := max(int(math.Floor(at.Seconds())), 0)
		for len(out) <= i {
			out = append(out, Second{At: len(out)})
		}
		out[i].Answered++
		switch o := r.Outcome(); {
		case o == OutcomeOK:
			out[i].OK++
		case faulty(o):
			out[i].Faulty++
		}
	}
	return out
}

// observeFault finds the observed fault window of a run; nil when no
// answer was faulty.
func observeFault(responses []Response, t0 time.Time) *ObservedFault {
	tl := timeline(responses, t0)
	first, last, n := -1, -1, 0
	for _, s := range tl {
		if s.Faulty == 0 {
			continue
		}
		if first < 0 {
			first = s.At
		}
		last = s.At
		n++
	}
	if first < 0 {
		return nil
	}
	of := &ObservedFault{FromS: float64(first), ToS: float64(last + 1), FaultySeconds: n, Faulty: map[string]int{}, Timeline: tl}
	for _, r := range responses {
		if o := r.Outcome(); faulty(o) {
			of.Faulty[o]++
		}
	}
	return of
}

// fault is the observed window as the span faultWindows splits a run by.
func (of *ObservedFault) fault() fleet.Fault {
	return fleet.Fault{Kind: "observed", Component: "fault window",
		Start: time.Duration(of.FromS * float64(time.Second)), Duration: time.Duration((of.ToS - of.FromS) * float64(time.Second))}
}
