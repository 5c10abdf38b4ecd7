package bench

import (
	"fmt"
	"slices"

	"github.com/seckill-lab/seckill/bench/lockcheck"
)

// LockCycle is where a run's lock time went, from the instances' lock
// events (bench/lockcheck Cycles), in ms: the cost model prices a lock's
// cycle, and this is the cycle measured, split in two. Held runs from the
// acquire returning to the release returning (the purchase's work under
// the lock and the release round trip); Handoff from the release returning
// to the next holder's acquire returning (the wake-up and the next
// holder's last acquire round trip; negative when the next holder got in
// before the release's answer came back). Held is split in the steps a
// holder takes (lockcheck.Cycle): ReadMS, the acquire returning to the
// stock read's answer; WriteMS, the read to the commit returning (the
// write, the order and COMMIT); ReleaseMS, the commit to the release
// returning. Absent when no hold's read and commit were seen.
type LockCycle struct {
	Holds     int      `json:"holds"`
	CycleMS   Latency  `json:"cycle_ms"`
	HeldMS    Latency  `json:"held_ms"`
	HandoffMS Latency  `json:"handoff_ms"`
	ReadMS    *Latency `json:"read_ms,omitempty"`
	WriteMS   *Latency `json:"write_ms,omitempty"`
	ReleaseMS *Latency `json:"release_ms,omitempty"`
}

// newLockCycle summarises c; nil without two holds in a row.
func newLockCycle(c lockcheck.Cycle) *LockCycle {
	if len(c.Cycle) == 0 {
		return nil
	}
	lc := &LockCycle{Holds: len(c.Held), CycleMS: summarizeNS(c.Cycle), HeldMS: summarizeNS(c.Held), HandoffMS: summarizeNS(c.Handoff)}
	if len(c.Read) > 0 {
		r, w, rel := summarizeNS(c.Read), summarizeNS(c.Write), summarizeNS(c.Release)
		lc.ReadMS, lc.WriteMS, lc.ReleaseMS = &r, &w, &rel
	}
	return lc
}

// summarizeNS is the Latency of durations in ns (nearest-rank quantiles).
func summarizeNS(ns []int64) Latency {
	s := slices.Clone(ns)
	slices.Sort(s)
	at := func(q float64) float64 {
		i := min(int(q*float64(len(s))), len(s)-1)
		return float64(s[i]) / 1e6
	}
	var sum float64
	for _, v := range s {
		sum += float64(v)
	}
	return Latency{Min: float64(s[0]) / 1e6, Mean: sum / float64(len(s)) / 1e6, P50: at(0.5), P90: at(0.9), P99: at(0.99), Max: float64(s[len(s)-1]) / 1e6}
}

// lockCycleTable lists the runs' lock cycles.
func lockCycleTable(runs []RunResult) table {
	t := table{Title: "Lock cycle", Header: []string{"run", "holds", "cycle p50 ms", "held p50 ms", "read p50 ms", "write p50 ms", "release p50 ms",
		"handoff p50 ms", "handoff p90 ms", "handoff max ms"}}
	ms := func(v float64) string { return fmt.Sprintf("%.2f", v) }
	p50 := func(l *Latency) string { // a step not measured is "-"
		if l == nil {
			return "-"
		}
		return ms(l.P50)
	}
	nameOf := runNamer(runs)
	for _, r := range runs {
		c := r.LockCycle
		if c == nil {
			continue
		}
		t.Rows = append(t.Rows, []string{fmt.Sprintf("%s #%d", nameOf(r), r.Repeat), fmt.Sprint(c.Holds),
			p50(&c.CycleMS), p50(&c.HeldMS), p50(c.ReadMS), p50(c.WriteMS), p50(c.ReleaseMS),
			p50(&c.HandoffMS), ms(c.HandoffMS.P90), ms(c.HandoffMS.Max)})
		t.Bad = append(t.Bad, false)
	}
	return t
}

// lockCycleNote explains the lock cycle table.
const lockCycleNote = "Lock cycle: from the instances' lock events, the holds of each goods one after the other (a batch is one hold). " +
	"cycle: from one hold's acquire to the next one's, what the cost model's critical path prices. held: from the acquire returning to the release returning, the work under the lock and the release round trip, " +
	"in three steps: read (the acquire returning to the stock read's answer), write (the read to the commit returning: the write, the order, COMMIT) and release (the commit to the release returning); " +
	"each step is at least its round trips times the RTT, and what it takes beyond that is the servers' own time and the machine's (scheduling, the proxy). " +
	"handoff: from the release returning to the next holder's acquire returning, the wake-up and the last acquire round trip (negative when the next holder got in before the release's answer came back). " +
	"A handoff p90 far above its p50 is a wake-up that waited: a missed notification, a poll, a server's batching."
