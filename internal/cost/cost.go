// Package cost counts, from the clients themselves, the round trips an
// instance makes to each server and how many of them are writes the server
// makes durable, by the phase of the purchase they belong to; and it turns
// those counts into a prediction of each strategy's serial limit.
//
// # What is counted, and where
//
// A Meter is one instance's set of counters. It hooks into every client the
// instance has, so nothing is hand-written per strategy:
//
//   - Redis: a go-redis hook (RedisHook). A command is one round trip, a
//     pipeline (or MULTI/EXEC) one round trip for all its commands. A write
//     is a command of the writes table (SET, DEL, PEXPIRE, EVAL, ...); a
//     pipeline with any write counts one write, since Redis appends the
//     whole batch to its AOF before one fsync. A failed command (NOSCRIPT,
//     for one) writes nothing. A script (EVAL, EVALSHA, FCALL) is counted
//     as a write: the lab's scripts are lock steps that write when they
//     succeed; a failed try that changed nothing is an over-count, off the
//     critical path. Pub/sub runs on go-redis's own connections and is not
//     seen.
//   - etcd: gRPC interceptors added to clientv3.Config.DialOptions
//     (EtcdDialOptions). A unary call is one round trip; its write is a
//     raft entry: Put, DeleteRange, Compact, LeaseGrant, LeaseRevoke, and a
//     Txn with a put or a delete in either branch (etcd sends such a Txn
//     through raft whichever branch runs). A message sent on a Watch stream
//     is a wait, on another stream (lease keep-alive) a round trip.
//   - MySQL/MariaDB: a wrapping driver.Connector (Connector). Exec, Query,
//     Begin, Commit, Rollback and Prepare are one round trip each; the
//     Commit of a transaction that wrote (an INSERT, UPDATE, DELETE or
//     REPLACE ran in it), or a write outside a transaction, is one write:
//     with innodb_flush_log_at_trx_commit=1 one redo-log fsync.
//   - Consul: an http.RoundTripper (ConsulTransport). A request is one
//     round trip, a blocking query (a GET with ?index=) a wait; a PUT or
//     DELETE to /v1/kv/, /v1/txn and a session create or destroy is a raft
//     write (a session renew is not: the leader resets a timer).
//   - ZooKeeper: a wrapping dialer (ZooKeeperDialer) that reads the opcode
//     of every request packet the client writes: create, delete, setData,
//     multi and close are transactions (writes), ping is session upkeep.
//
// Requests of one purchase and phase sent at once, a fan-out (Redlock asks
// every master in parallel), are each counted, and all but the first are
// marked overlapped: the servers' load is every request, but the critical
// path takes the fan-out as one round trip (Counts.Overlapped). Only the
// Redis hook tracks what is in flight: the other clients' requests within
// one phase go one after the other.
//
// # Phases
//
// Each count is attributed to the phase of the purchase that made it, read
// from the request's context (WithPhase, set by stock.Service): Acquire
// (taking the lock, waiting included), Held (the deduction: the DB
// transaction, under the lock for a locker strategy, or the whole deduction
// of one that takes none), Release, and Other (no purchase: health checks,
// resets, session upkeep). Two more rows overlap those four and are not
// added to them:
//
//   - AcquireLast is the last round trip of each successful acquisition
//     (Acquired): the one a waiter makes once the holder has released.
//   - RowLocked is what a MySQL transaction does after the statement that
//     took its row locks (the first write, or a SELECT ... FOR UPDATE) up
//     to and including its COMMIT or ROLLBACK: the row's own serial
//     section, from the locking statement's reply to the commit.
//
// go-zookeeper takes no context, so its counts cannot be attributed through
// it. They are attributed by opcode, as a lock recipe uses them: create,
// exists, getData, getChildren, sync and check are Acquire, delete is
// Release, ping, setWatches, auth and close are Other. ZooKeeper has no
// AcquireLast row; the model takes a waiter's last step as one read (the
// getChildren after its watch fired).
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
// the step uses (ServerOps: a release is the delete a waiter watches),
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
package cost

import (
	"context"
	"sync"
	"sync/atomic"
)

// Server is a kind of server the instances talk to; the names are
// internal/server's groups.
type Server string

// Servers.
const (
	Redis     Server = "redis"
	Etcd      Server = "etcd"
	ZooKeeper Server = "zookeeper"
	MySQL     Server = "mysql"
	Consul    Server = "consul"
)

// Servers lists every server, in report order.
func Servers() []Server { return []Server{Redis, Etcd, ZooKeeper, MySQL, Consul} }

// Phase is the part of a purchase a round trip belongs to.
type Phase string

// Phases of a purchase (see the package doc). AcquireLast and RowLocked
// overlap the others.
const (
	Acquire     Phase = "acquire"
	Held        Phase = "held"
	Release     Phase = "release"
	Other       Phase = "other"
	AcquireLast Phase = "acquire_last"
	RowLocked   Phase = "row_locked"
)

// Phases lists every phase, in report order.
func Phases() []Phase { return []Phase{Acquire, Held, Release, Other, AcquireLast, RowLocked} }

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

// Meter is one instance's counters. Its methods are safe for concurrent
// use; the zero value is not: build it with NewMeter.
type Meter struct {
	c [][]counter // by index in Servers(), then in Phases()
}

type counter struct{ rt, w, wait, ort, ow atomic.Int64 }

// NewMeter returns a Meter with every count at zero.
func NewMeter() *Meter {
	m := &Meter{c: make([][]counter, len(Servers()))}
	for i := range m.c {
		m.c[i] = make([]counter, len(Phases()))
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

var serverPos, phasePos = positions(Servers()), positions(Phases())

// add counts one request of s in phase p.
func (m *Meter) add(s Server, p Phase, op op) {
	if m == nil {
		return
	}
	i, iok := serverPos[s]
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

// record counts one request of s made under ctx: in ctx's phase, and, in
// the Acquire phase, as the acquisition's last request so far.
func (m *Meter) record(ctx context.Context, s Server, o op) {
	mk := markOf(ctx)
	m.recordIn(s, mk, o)
}

// recordIn is record with the context's mark already read (a MySQL COMMIT
// has no context: it uses its transaction's).
func (m *Meter) recordIn(s Server, mk mark, o op) {
	m.add(s, mk.phase, o)
	if mk.last != nil && !o.wait {
		mk.last.note(m, s, o)
	}
}

// Snapshot returns the counts so far.
func (m *Meter) Snapshot() Snapshot {
	out := Snapshot{}
	for i, s := range Servers() {
		for j, p := range Phases() {
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

// mark is what a context says about the purchase: its phase, the requests
// of that phase in flight and, while acquiring, where the acquisition's
// last request is noted.
type mark struct {
	phase  Phase
	flight *flight
	last   *last
}

// flight counts the requests in flight under one mark.
type flight struct{ n atomic.Int32 }

// begin is called as a request under mk is sent: overlapped says another
// one under mk was in flight (a fan-out, sent at once). end is called when
// its answer came. Unmarked requests never overlap.
func (mk mark) begin() (overlapped bool) {
	return mk.flight != nil && mk.flight.n.Add(1) > 1
}

// end is begin's pair.
func (mk mark) end() {
	if mk.flight != nil {
		mk.flight.n.Add(-1)
	}
}

type markKey struct{}

// WithPhase returns ctx marked as being in phase p of a purchase: the
// requests made under it are counted there. Marking Acquire also starts
// noting the acquisition's last request (see Acquired).
func WithPhase(ctx context.Context, p Phase) context.Context {
	mk := mark{phase: p, flight: &flight{}}
	if p == Acquire {
		mk.last = &last{}
	}
	return context.WithValue(ctx, markKey{}, mk)
}

// PhaseOf returns ctx's phase (Other when unmarked).
func PhaseOf(ctx context.Context) Phase { return markOf(ctx).phase }

func markOf(ctx context.Context) mark {
	if mk, ok := ctx.Value(markKey{}).(mark); ok {
		return mk
	}
	return mark{phase: Other}
}

// Acquired records, once the lock is taken under actx (a context
// WithPhase(ctx, Acquire) returned), the acquisition's last request in the
// AcquireLast row of the meter that counted it. It does nothing when no
// request was counted (an in-process lock).
func Acquired(actx context.Context) {
	if l := markOf(actx).last; l != nil {
		l.flush()
	}
}

// last notes the last request of one acquisition.
type last struct {
	mu sync.Mutex
	m  *Meter
	s  Server
	op op
}

// note keeps o as the acquisition's last request so far. The last request
// is a round trip on the critical path even when it overlapped others (the
// last round of a fan-out costs one).
func (l *last) note(m *Meter, s Server, o op) {
	o.overlapped = false
	l.mu.Lock()
	l.m, l.s, l.op = m, s, o
	l.mu.Unlock()
}

func (l *last) flush() {
	l.mu.Lock()
	m, s, o := l.m, l.s, l.op
	l.m = nil
	l.mu.Unlock()
	if m != nil {
		m.add(s, AcquireLast, o)
	}
}
