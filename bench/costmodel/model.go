package costmodel

import (
	"cmp"
	"math"
	"slices"

	"github.com/seckill-lab/seckill/stock/catalog"
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
// that the next one waits for, by server, and step by step.
type Path struct {
	RoundTrips map[Server]float64 `json:"round_trips"`
	Writes     map[Server]float64 `json:"writes"`
	// Steps are the same round trips and writes by server and phase (a
	// fan-out counted once), in Servers() then Phases() order: what the
	// server part of the prediction prices (OpsOf).
	Steps []Step `json:"steps,omitempty"`
}

// Step is the part of a critical path one server serves in one phase.
type Step struct {
	Server     Server  `json:"server"`
	Phase      Phase   `json:"phase"`
	RoundTrips float64 `json:"round_trips"`
	Writes     float64 `json:"writes"`
}

// noContext reports whether s's client takes no context, so that no
// acquisition's last request is known (see the package doc): a waiter's
// last step there is taken as one read.
func noContext(s Server) bool {
	info, _ := catalog.ServerOf(s)
	return info.NoContext
}

// CriticalPath returns the critical path of a strategy with counts p (the
// round trips and writes of a fan-out counted once, see Counts.Overlapped): for
// a lock (locker true), Held + Release + the final acquire (AcquireLast);
// for a strategy without one, the goods row's serial section (RowLocked).
func CriticalPath(p PerPurchase, locker bool) Path {
	path := Path{RoundTrips: map[Server]float64{}, Writes: map[Server]float64{}}
	add := func(s Server, ph Phase, r Rates) {
		r = r.serial()
		if r.RoundTrips == 0 && r.Writes == 0 {
			return
		}
		path.RoundTrips[s] += r.RoundTrips
		path.Writes[s] += r.Writes
		path.Steps = append(path.Steps, Step{Server: s, Phase: ph, RoundTrips: r.RoundTrips, Writes: r.Writes})
	}
	if !locker {
		for _, s := range Servers() {
			add(s, RowLocked, p[s][RowLocked])
		}
		return path
	}
	last := false
	for _, s := range Servers() {
		add(s, Held, p[s][Held])
		add(s, Release, p[s][Release])
		add(s, AcquireLast, p[s][AcquireLast])
		last = last || p[s][AcquireLast].RoundTrips > 0
	}
	if !last {
		for _, s := range Servers() {
			if noContext(s) && p[s][Acquire].RoundTrips > 0 {
				add(s, AcquireLast, Rates{RoundTrips: 1})
				break
			}
		}
	}
	return path
}

// Op is an operation of one server, as the idle probes measure it
// (internal/idleprobe) and the model prices a step with (OpsOf).
type Op string

// StepOps are the operations a step of one server is priced with: a read
// (a round trip that is not a write), a write, and a write of the Release
// phase (the one a waiter watches).
type StepOps struct{ Read, Write, Release Op }

// OpsOf are the operations the model prices s's steps with, as the lab's
// locks use them (catalog.ServerInfo: Read, Write, Release); known is
// false for a server the catalogue does not list.
func OpsOf(s Server) (ops StepOps, known bool) {
	info, ok := catalog.ServerOf(s)
	if !ok {
		return StepOps{}, false
	}
	return StepOps{Read: Op(info.Read), Write: Op(info.Write), Release: Op(info.Release)}, true
}

// ServerTimes are the idle probes' medians, in ms, by server and
// operation: the whole request as a client on the servers' machine sees
// it, its loopback round trip and (for a write where the server fsyncs)
// its fsync included.
type ServerTimes map[Server]map[Op]float64

// Conditions are what a critical path is priced at: the model's only
// inputs besides the counts (nothing in them comes from a measured
// throughput).
type Conditions struct {
	// RTTMS is one round trip to any server, in ms.
	RTTMS float64
	// FsyncMS is one fsync of the servers' disk, in ms.
	FsyncMS float64
	// Fsyncs are the servers whose writes cost an fsync.
	Fsyncs map[Server]bool
	// Probes are the servers' idle times by operation (nil: no server
	// time is priced), and ProbeRTTMS the loopback round trip they were
	// measured over.
	Probes     ServerTimes
	ProbeRTTMS float64
	// ProbeFsyncMS is the fsync latency measured with the probes, taken
	// off a write's probe where the server fsyncs; FsyncMS when 0.
	ProbeFsyncMS float64
}

// ServerMS is the server's own time for op in ms, of a read or (write) a
// write: its probe less the probe's round trip and, for a write where s
// fsyncs, one fsync (ProbeFsyncMS; those are priced as the wire and the disk), and
// never below 0. ok is false when op of s was not probed.
func (c Conditions) ServerMS(s Server, op Op, write bool) (ms float64, ok bool) {
	raw, ok := c.Probes[s][op]
	if !ok {
		return 0, false
	}
	ms = raw - c.ProbeRTTMS
	if write && c.Fsyncs[s] {
		ms -= cmp.Or(c.ProbeFsyncMS, c.FsyncMS)
	}
	return max(ms, 0), true
}

// Prediction is a strategy's serial limit under some Conditions.
type Prediction struct {
	RoundTrips float64 `json:"round_trips"`
	Fsyncs     float64 `json:"fsyncs"`
	// WireMS, DiskMS and ServerMS split SerialMS: the round trips at the
	// RTT, the fsyncs at the fsync latency, and each step's reads and
	// writes at the servers' own idle time for the operation they use
	// (Conditions.ServerMS; 0 for an operation not probed).
	WireMS   float64 `json:"wire_ms"`
	DiskMS   float64 `json:"disk_ms"`
	ServerMS float64 `json:"server_ms"`
	// ServerByServer is ServerMS by server.
	ServerByServer map[Server]float64 `json:"server_by_server,omitempty"`
	// Unprobed are the "server op" the path uses that had no probe.
	Unprobed []string `json:"unprobed,omitempty"`
	// ByPhase is SerialMS by the phase of the critical path (a lock's
	// Held, Release and AcquireLast; a row's RowLocked): wire, disk and
	// server time of that phase's steps. Empty for a path without steps.
	ByPhase map[Phase]float64 `json:"by_phase,omitempty"`
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
	pr.WireMS = pr.RoundTrips * c.RTTMS
	pr.DiskMS = pr.Fsyncs * c.FsyncMS
	for _, st := range path.Steps {
		phase := st.RoundTrips * c.RTTMS
		if c.Fsyncs[st.Server] {
			phase += st.Writes * c.FsyncMS
		}
		if c.Probes != nil {
			ms := stepServerMS(st, c, &pr.Unprobed)
			if ms > 0 {
				if pr.ServerByServer == nil {
					pr.ServerByServer = map[Server]float64{}
				}
				pr.ServerByServer[st.Server] += ms
				pr.ServerMS += ms
				phase += ms
			}
		}
		if pr.ByPhase == nil {
			pr.ByPhase = map[Phase]float64{}
		}
		pr.ByPhase[st.Phase] += phase
	}
	pr.SerialMS = pr.WireMS + pr.DiskMS + pr.ServerMS
	if pr.SerialMS > 0 && !math.IsInf(pr.SerialMS, 0) {
		pr.LimitPerS = 1000 / pr.SerialMS
	}
	return pr
}

// stepServerMS is the server time of step st: its reads at the server's
// read operation, its writes at its write operation (the Release one in
// the Release phase). An operation without a probe adds 0 and is noted in
// unprobed (once).
func stepServerMS(st Step, c Conditions, unprobed *[]string) float64 {
	ops, known := OpsOf(st.Server)
	price := func(op Op, write bool, n float64) float64 {
		if n <= 0 {
			return 0
		}
		ms, ok := c.ServerMS(st.Server, op, write)
		if !ok || !known {
			if name := string(st.Server) + " " + string(op); !slices.Contains(*unprobed, name) {
				*unprobed = append(*unprobed, name)
			}
			return 0
		}
		return n * ms
	}
	write := ops.Write
	if st.Phase == Release {
		write = ops.Release
	}
	return price(ops.Read, false, st.RoundTrips-st.Writes) + price(write, true, st.Writes)
}
