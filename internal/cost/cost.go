// Package cost counts, from the clients themselves, the round trips an
// instance makes to each server and how many of them are writes the server
// makes durable, by the phase of the purchase they belong to, which the
// service marks on each request's context (stock/phase: With, Acquired). The counts'
// vocabulary (Server, Phase, Counts, Snapshot) and the model that turns
// them into a prediction of each strategy's serial limit are
// bench/costmodel's.
//
// # What is counted, and where
//
// A Meter is one instance's set of counters. It hooks into every client the
// instance has, so nothing is hand-written per strategy:
//
//   - each server's client by a hook of its own: that server's file here
//     says what one round trip and one write are there (MySQL's is
//     sql.go).
//
// Requests of one purchase and phase sent at once, a fan-out (Redlock asks
// every master in parallel), are each counted, and all but the first are
// marked overlapped: the servers' load is every request, but the critical
// path takes the fan-out as one round trip (Counts.Overlapped). Only the
// Redis hook tracks what is in flight: the other clients' requests within
// one phase go one after the other.
//
// Phases and the model: see bench/costmodel.
package cost

import (
	"context"
	"sync/atomic"

	"github.com/seckill-lab/seckill/bench/costmodel"
	"github.com/seckill-lab/seckill/stock/phase"
)

// The counts' vocabulary is bench/costmodel's.
type (
	Server   = costmodel.Server
	Phase    = costmodel.Phase
	Counts   = costmodel.Counts
	Snapshot = costmodel.Snapshot
)

// Phases (bench/costmodel).
const (
	Acquire     = costmodel.Acquire
	Held        = costmodel.Held
	Release     = costmodel.Release
	Other       = costmodel.Other
	AcquireLast = costmodel.AcquireLast
	RowLocked   = costmodel.RowLocked
)

// Meter is one instance's counters. Its methods are safe for concurrent
// use; the zero value is not: build it with NewMeter.
type Meter struct {
	servers []Server       // costmodel.Servers() when the meter was made
	pos     map[Server]int // index in servers
	c       [][]counter    // by index in servers, then in costmodel.Phases()
}

type counter struct{ rt, w, wait, ort, ow atomic.Int64 }

// NewMeter returns a Meter with every count at zero.
func NewMeter() *Meter {
	servers := costmodel.Servers()
	m := &Meter{servers: servers, pos: positions(servers), c: make([][]counter, len(servers))}
	for i := range m.c {
		m.c[i] = make([]counter, len(costmodel.Phases()))
	}
	return m
}

// positions maps each value of all to its index, for the counters'
// lookup on every request.
func positions[T comparable](all []T) map[T]int {
	out := make(map[T]int, len(all))
	for i, v := range all {
		out[v] = i
	}
	return out
}

var phasePos = positions(costmodel.Phases())

// add counts one request of s in phase p.
func (m *Meter) add(s Server, p Phase, op op) {
	if m == nil {
		return
	}
	i, iok := m.pos[s]
	j, jok := phasePos[p]
	if !iok || !jok {
		return
	}
	c := &m.c[i][j]
	switch {
	case op.wait:
		c.wait.Add(1)
	default:
		c.rt.Add(1)
		if op.write {
			c.w.Add(1)
		}
		if op.overlapped {
			c.ort.Add(1)
			if op.write {
				c.ow.Add(1)
			}
		}
	}
}

// op is one request as a client sent it. overlapped: sent while another
// request under the same mark was in flight (see begin).
type op struct{ write, wait, overlapped bool }

// Record counts one request a client of server s made under ctx, in
// ctx's phase (a write when the server makes it durable before it
// answers): the hook a lock server's client calls when it has no hook of
// its own here. A server the meter was not made with is not counted.
func (m *Meter) Record(ctx context.Context, s Server, write bool) {
	m.record(ctx, s, op{write: write})
}

// record counts one request of s made under ctx: in ctx's phase, and, in
// the Acquire phase, as the acquisition's last request so far.
func (m *Meter) record(ctx context.Context, s Server, o op) {
	m.recordIn(s, phase.Of(ctx), o)
}

// recordIn is record with the context's mark already read (a MySQL COMMIT
// has no context: it uses its transaction's).
func (m *Meter) recordIn(s Server, mk phase.Mark, o op) {
	m.add(s, mk.Phase, o)
	if l := mk.Last(); l != nil && !o.wait && m != nil {
		// The last request is a round trip on the critical path even
		// when it overlapped others (the last round of a fan-out costs
		// one).
		o.overlapped = false
		l.Note(func() { m.add(s, AcquireLast, o) })
	}
}

// Snapshot returns the counts so far.
func (m *Meter) Snapshot() Snapshot {
	out := Snapshot{}
	for i, s := range m.servers {
		for j, p := range costmodel.Phases() {
			c := &m.c[i][j]
			v := Counts{RoundTrips: c.rt.Load(), Writes: c.w.Load(), Waits: c.wait.Load(), Overlapped: c.ort.Load(), OverlappedWrites: c.ow.Load()}
			if v == (Counts{}) {
				continue
			}
			if out[s] == nil {
				out[s] = map[Phase]Counts{}
			}
			out[s][p] = v
		}
	}
	return out
}
