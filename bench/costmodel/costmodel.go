// Package costmodel is the cost model of a purchase: the round trips and
// durable writes it makes at each server, by the phase of the purchase they
// belong to (Counts, Snapshot, as an instance's meter counts them: the lab's
// internal/cost), and what they predict of a strategy's serial limit
// (CriticalPath, Predict), priced at measured conditions (FsyncMS,
// LoopbackRTTMS, MeasureRTT and the servers' idle probes). It holds
// arithmetic and probes only: it imports nothing of the lab, so the bench
// reads it without linking a server's client.
//
// # Phases
//
// Each count is attributed to the phase of the purchase that made it, read
// from the request's context (stock/phase.With, set by stock.Service): Acquire
// (taking the lock, waiting included), Held (the deduction: the DB
// transaction, under the lock for a locker strategy, or the whole deduction
// of one that takes none), Release, and Other (no purchase: health checks,
// resets, session upkeep). Two more rows overlap those four and are not
// added to them:
//
//   - AcquireLast is the last round trip of each successful acquisition
//     (phase.Acquired): the one a waiter makes once the holder has released.
//   - RowLocked is what a MySQL transaction does after the statement that
//     took its row locks (the first write, or a SELECT ... FOR UPDATE) up
//     to and including its COMMIT or ROLLBACK: the row's own serial
//     section, from the locking statement's reply to the commit.
//
// A client that takes no context (catalog.ServerInfo.NoContext) cannot
// have its counts attributed through it: its meter attributes them by the
// request's kind, as a lock recipe uses them (internal/cost says how), and
// has no AcquireLast row; the model takes a waiter's last step there as
// one read.
//
// # The model
//
// One holder at a time, a strategy sells at most
//
//	limit = 1 / (round trips × RTT + fsyncs × fsync latency + server time)
//
// purchases per second, where round trips and fsyncs are those of its
// critical path per purchase (CriticalPath), and the server time is each
// step's reads and writes at the server's own idle time for the operation
// the step uses (OpsOf: a release is the delete a waiter watches),
// from probes made straight at the idle servers when the stack started
// (internal/idleprobe), less the probe's own round trip and fsync, which
// the first two terms price. The three terms are the prediction's wire,
// disk and server parts; nothing in the model is fitted to a measured
// throughput:
//
//   - a lock (catalog.KindLocker): what happens while the lock is held, plus
//     the release, plus the next holder's final acquire round trip
//     (AcquireLast), all servers together;
//   - no lock of its own (mysql-forupdate, mysql-optimistic, sql-atomic,
//     redis-atomic): the goods row's serial section (RowLocked).
//
// A write costs one fsync where its server fsyncs at the stack's durability
// level (internal/server's Spec.Fsyncs). RTT is the measured round trip of
// the stack's links; the fsync latency is the median of small write+fsync
// calls measured on the disk holding the servers' data. The model counts
// no server CPU beyond the idle probes' (none of a loaded server's
// queueing), nor the network's bandwidth, nor the peer round trip
// of a quorum write in the ha topology; nor the batching a server does
// under load (a group commit makes one fsync of several transactions'
// writes), which the serial path of one holder at a time does not get. A
// measured figure more than twice off the prediction is therefore a
// finding (something on the path is not serial, or something else limits)
// or a bug (in the counts or in the lock).
package costmodel

import (
	"github.com/seckill-lab/seckill/stock/catalog"
	"github.com/seckill-lab/seckill/stock/phase"
)

// Server is a kind of server the instances talk to: the catalogue's lock
// servers (catalog.Servers).
type Server = catalog.Server

// Servers lists every server, in report order (catalog.Servers).
func Servers() []Server {
	var out []Server
	for _, s := range catalog.Servers() {
		out = append(out, s.Name)
	}
	return out
}

// Phase is the part of a purchase a round trip belongs to: the service's
// tag (stock/phase).
type Phase = phase.Phase

// Phases of a purchase (see the package doc). AcquireLast and RowLocked
// overlap the others.
const (
	Acquire     = phase.Acquire
	Held        = phase.Held
	Release     = phase.Release
	Other       = phase.Other
	AcquireLast = phase.AcquireLast
	RowLocked   = phase.RowLocked
)

// Phases lists every phase, in report order.
func Phases() []Phase { return phase.All() }

// Counts are cumulative counts of one server in one phase.
type Counts struct {
	// RoundTrips are requests answered at once.
	RoundTrips int64 `json:"round_trips"`
	// Writes are the round trips the server makes durable before it
	// answers (one fsync each where it fsyncs).
	Writes int64 `json:"writes"`
	// Waits are requests whose answer waits for a change (a blocking
	// query, a watch): not round trips.
	Waits int64 `json:"waits,omitempty"`
	// Overlapped are the round trips sent while another request of the
	// same purchase and phase was in flight (a fan-out: Redlock asks
	// every master at once), and OverlappedWrites the writes among them:
	// counted in RoundTrips and Writes (the servers' load), taken out of
	// the critical path (they cost one round trip together).
	Overlapped       int64 `json:"overlapped,omitempty"`
	OverlappedWrites int64 `json:"overlapped_writes,omitempty"`
}

// Snapshot is a Meter's counts by server and phase; a server or phase
// with nothing counted is left out.
type Snapshot map[Server]map[Phase]Counts

// Add returns s plus o.
func (s Snapshot) Add(o Snapshot) Snapshot { return s.combine(o, 1) }

// Sub returns s minus o (the counts of an interval between two snapshots).
func (s Snapshot) Sub(o Snapshot) Snapshot { return s.combine(o, -1) }

func (s Snapshot) combine(o Snapshot, sign int64) Snapshot {
	out := Snapshot{}
	put := func(src Snapshot, k int64) {
		for srv, ps := range src {
			for p, c := range ps {
				if out[srv] == nil {
					out[srv] = map[Phase]Counts{}
				}
				t := out[srv][p]
				t.RoundTrips += k * c.RoundTrips
				t.Writes += k * c.Writes
				t.Waits += k * c.Waits
				t.Overlapped += k * c.Overlapped
				t.OverlappedWrites += k * c.OverlappedWrites
				out[srv][p] = t
			}
		}
	}
	put(s, 1)
	put(o, sign)
	for srv, ps := range out {
		for p, c := range ps {
			if c == (Counts{}) {
				delete(ps, p)
			}
		}
		if len(ps) == 0 {
			delete(out, srv)
		}
	}
	return out
}
