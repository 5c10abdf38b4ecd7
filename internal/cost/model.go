package cost

import (
	"math"
)

// Rates are counts per purchase.
type Rates struct {
	RoundTrips float64 `json:"round_trips"`
	Writes     float64 `json:"writes"`
	Waits      float64 `json:"waits,omitempty"`
	// Overlapped and OverlappedWrites are the round trips and writes sent
	// alongside another of the same purchase and phase (Counts).
	Overlapped       float64 `json:"overlapped,omitempty"`
	OverlappedWrites float64 `json:"overlapped_writes,omitempty"`
}

// serial is r as the critical path takes it: the overlapped round trips
// and writes out, since a fan-out costs the time of one.
func (r Rates) serial() Rates {
	return Rates{RoundTrips: r.RoundTrips - r.Overlapped, Writes: r.Writes - r.OverlappedWrites}
}

// PerPurchase are a run's counts divided by its successful purchases.
type PerPurchase map[Server]map[Phase]Rates

// Per divides s by n purchases (nil when n is not positive).
func (s Snapshot) Per(n int) PerPurchase {
	if n <= 0 {
		return nil
	}
	out := PerPurchase{}
	for srv, ps := range s {
		for p, c := range ps {
			if out[srv] == nil {
				out[srv] = map[Phase]Rates{}
			}
			f := float64(n)
			out[srv][p] = Rates{RoundTrips: float64(c.RoundTrips) / f, Writes: float64(c.Writes) / f, Waits: float64(c.Waits) / f,
				Overlapped: float64(c.Overlapped) / f, OverlappedWrites: float64(c.OverlappedWrites) / f}
		}
	}
	return out
}

// Total sums the purchase phases of server s (Acquire, Held, Release,
// Other; not the overlapping rows).
func (p PerPurchase) Total(s Server) Rates {
	var t Rates
	for _, ph := range []Phase{Acquire, Held, Release, Other} {
		r := p[s][ph]
		t.RoundTrips += r.RoundTrips
		t.Writes += r.Writes
		t.Waits += r.Waits
		t.Overlapped += r.Overlapped
		t.OverlappedWrites += r.OverlappedWrites
	}
	return t
}

// Path is a strategy's critical path per purchase: what one holder does
// that the next one waits for, by server.
type Path struct {
	RoundTrips map[Server]float64 `json:"round_trips"`
	Writes     map[Server]float64 `json:"writes"`
}

// noContext are the servers whose client takes no context, so that no
// acquisition's last request is known (see the package doc): a waiter's
// last step there is taken as one read.
var noContext = map[Server]bool{ZooKeeper: true}

// CriticalPath returns the critical path of a strategy with counts p (the
// round trips and writes of a fan-out counted once, see Counts.Overlapped): for
// a lock (locker true), Held + Release + the final acquire (AcquireLast);
// for a strategy without one, the goods row's serial section (RowLocked).
func CriticalPath(p PerPurchase, locker bool) Path {
	path := Path{RoundTrips: map[Server]float64{}, Writes: map[Server]float64{}}
	add := func(s Server, r Rates) {
		r = r.serial()
		if r.RoundTrips == 0 && r.Writes == 0 {
			return
		}
		path.RoundTrips[s] += r.RoundTrips
		path.Writes[s] += r.Writes
	}
	if !locker {
		for _, s := range Servers() {
			add(s, p[s][RowLocked])
		}
		return path
	}
	last := false
	for _, s := range Servers() {
		add(s, p[s][Held])
		add(s, p[s][Release])
		add(s, p[s][AcquireLast])
		last = last || p[s][AcquireLast].RoundTrips > 0
	}
	if !last {
		for _, s := range Servers() {
			if noContext[s] && p[s][Acquire].RoundTrips > 0 {
				add(s, Rates{RoundTrips: 1})
				break
			}
		}
	}
	return path
}

// Conditions are what a critical path is priced at.
type Conditions struct {
	// RTTMS is one round trip to any server, in ms.
	RTTMS float64
	// FsyncMS is one fsync of the servers' disk, in ms.
	FsyncMS float64
	// Fsyncs are the servers whose writes cost an fsync.
	Fsyncs map[Server]bool
}

// Prediction is a strategy's serial limit under some Conditions.
type Prediction struct {
	RoundTrips float64 `json:"round_trips"`
	Fsyncs     float64 `json:"fsyncs"`
	// SerialMS is the critical path's time per purchase.
	SerialMS float64 `json:"serial_ms"`
	// LimitPerS is 1000 / SerialMS: purchases per second with one holder
	// at a time; 0 when the path is empty (no serial section: nothing in
	// the model bounds the strategy).
	LimitPerS float64 `json:"limit_per_s"`
}

// Predict prices path at c.
func Predict(path Path, c Conditions) Prediction {
	var pr Prediction
	for _, s := range Servers() { // one order: the same sum every time (a missing server adds 0)
		pr.RoundTrips += path.RoundTrips[s]
		if c.Fsyncs[s] {
			pr.Fsyncs += path.Writes[s]
		}
	}
	pr.SerialMS = pr.RoundTrips*c.RTTMS + pr.Fsyncs*c.FsyncMS
	if pr.SerialMS > 0 && !math.IsInf(pr.SerialMS, 0) {
		pr.LimitPerS = 1000 / pr.SerialMS
	}
	return pr
}
