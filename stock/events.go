package stock

import (
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// ReplayedComment is the comment line of an instance's event stream (the
// admin API's GET /admin/events?replay=true) that ends the replayed
// events: what follows is live.
const ReplayedComment = ": replayed"

// EventKind is what happened to one purchase's lock or stock.
type EventKind string

// The lock events of a purchase, in the order they happen.
const (
	EventRequested  EventKind = "requested"   // the purchase asks for the lock
	EventAcquired   EventKind = "acquired"    // the lock is held (Token, WaitedNS)
	EventRead       EventKind = "read"        // the stock was read (Value)
	EventWritten    EventKind = "written"     // the stock was written (Value: the new stock)
	EventCommitted  EventKind = "committed"   // the transaction committed
	EventRolledBack EventKind = "rolled_back" // the transaction rolled back (Detail: why)
	EventReleased   EventKind = "released"    // the lock was released
	EventLeaseLost  EventKind = "lease_lost"  // the backend reported the lease lost while held
)

// Event is one step of one purchase on one instance. MonoNS is the
// machine's CLOCK_MONOTONIC in nanoseconds: every instance on one machine
// reads the same clock, so events of different instances compare directly,
// and no wall-clock jump moves them.
type Event struct {
	Seq      uint64    `json:"seq"` // per instance, from 1
	MonoNS   int64     `json:"mono_ns"`
	Wall     time.Time `json:"wall"`
	Instance string    `json:"instance"`
	Strategy string    `json:"strategy"`
	Purchase string    `json:"purchase"` // the request id
	Key      string    `json:"key"`      // the lock key (goods:N)
	Kind     EventKind `json:"kind"`
	Token    uint64    `json:"token,omitempty"`
	WaitedNS int64     `json:"waited_ns,omitempty"`
	Value    *int64    `json:"value,omitempty"`
	Detail   string    `json:"detail,omitempty"`
	// Batch is, for a purchase sold in a batch (Config.Batch), the request
	// id of the batch's leader: the purchases of one instance with the same
	// Batch share one critical section and one transaction.
	Batch string `json:"batch,omitempty"`
}

// MonoNow reads CLOCK_MONOTONIC in nanoseconds.
func MonoNow() int64 {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts); err != nil {
		return 0
	}
	return ts.Nano()
}

// Events is an instance's lock event stream: a bounded ring of the latest
// events and any number of live subscribers. A subscriber that does not
// keep up loses events (counted), it never slows purchases down. Safe for
// concurrent use; the zero value is not usable, build it with NewEvents.
type Events struct {
	mu      sync.Mutex
	seq     uint64
	ring    []Event
	next    int
	full    bool
	subs    map[chan Event]struct{}
	dropped uint64
}

// NewEvents keeps the last size events.
func NewEvents(size int) *Events {
	return &Events{ring: make([]Event, max(size, 1)), subs: map[chan Event]struct{}{}}
}

func (e *Events) emit(ev Event) {
	if e == nil {
		return
	}
	ev.MonoNS, ev.Wall = MonoNow(), time.Now()
	e.mu.Lock()
	defer e.mu.Unlock()
	e.seq++
	ev.Seq = e.seq
	e.ring[e.next] = ev
	e.next = (e.next + 1) % len(e.ring)
	if e.next == 0 {
		e.full = true
	}
	for ch := range e.subs {
		select {
		case ch <- ev:
		default:
			e.dropped++
		}
	}
}

// MaxSubscribers bounds the live subscribers of one Events: past it,
// Subscribe answers ErrTooManySubscribers (the admin API: 503). Each holds
// a buffer of its own (about 200 bytes an event), so the bound is the
// memory a crowd of subscribers can take.
const MaxSubscribers = 64

// ErrTooManySubscribers: MaxSubscribers are already subscribed.
var ErrTooManySubscribers = errors.New("too many event subscribers")

// Subscribe registers a live subscriber with buffer room for buf events.
// upTo is the Seq of the last event before the live ones: the replay of
// the events kept so far is Kept(0, upTo, n), read in pieces. Call cancel
// to stop.
func (e *Events) Subscribe(buf int) (upTo uint64, live <-chan Event, cancel func(), err error) {
	ch := make(chan Event, max(buf, 1))
	e.mu.Lock()
	if len(e.subs) >= MaxSubscribers {
		e.mu.Unlock()
		return 0, nil, nil, fmt.Errorf("%w: %d already", ErrTooManySubscribers, MaxSubscribers)
	}
	upTo = e.seq
	e.subs[ch] = struct{}{}
	e.mu.Unlock()
	var once sync.Once
	return upTo, ch, func() {
		once.Do(func() {
			e.mu.Lock()
			delete(e.subs, ch)
			e.mu.Unlock()
		})
	}, nil
}

// Kept returns, oldest first, at most n of the kept events whose Seq is in
// (after, upTo]. A replay reads the ring a piece at a time this way, so it
// copies no more than n events at once.
func (e *Events) Kept(after, upTo uint64, n int) []Event {
	e.mu.Lock()
	defer e.mu.Unlock()
	size := uint64(len(e.ring))
	oldest := uint64(1)
	if e.seq > size {
		oldest = e.seq - size + 1
	}
	from := max(after+1, oldest)
	to := min(upTo, e.seq)
	var out []Event
	for s := from; s <= to && len(out) < n; s++ {
		out = append(out, e.ring[(s-1)%size])
	}
	return out
}

// Subscribers counts the live subscribers.
func (e *Events) Subscribers() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return len(e.subs)
}

// Dropped counts events that a slow subscriber missed.
func (e *Events) Dropped() uint64 {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.dropped
}

// trace records the steps of one purchase.
type trace struct {
	events   *Events
	instance string
	strategy string
	purchase string
	key      string
	batch    string // the batch leader's request id, if batched
	// group, when set, makes this the trace of a whole batch: every event
	// goes to each member's trace instead.
	group *traceGroup
}

// traceGroup is the members of a batch; members join after the lock is
// taken, while a lease-loss watcher may already emit.
type traceGroup struct {
	mu      sync.Mutex
	members []trace
}

func (g *traceGroup) add(t trace) {
	g.mu.Lock()
	g.members = append(g.members, t)
	g.mu.Unlock()
}

func (t trace) emit(kind EventKind, f func(*Event)) {
	if t.group != nil {
		t.group.mu.Lock()
		members := slices.Clone(t.group.members)
		t.group.mu.Unlock()
		for _, m := range members {
			m.emit(kind, f)
		}
		return
	}
	if t.events == nil {
		return
	}
	ev := Event{Instance: t.instance, Strategy: t.strategy, Purchase: t.purchase, Key: t.key, Kind: kind, Batch: t.batch}
	if f != nil {
		f(&ev)
	}
	t.events.emit(ev)
}

// value records a stock figure (read or written).
func (t trace) value(kind EventKind, v int64) {
	t.emit(kind, func(ev *Event) { ev.Value = &v })
}

// outcome records how the transaction ended, when it ran: a lock wait that
// ran out or a dead backend never got to one.
func (tr trace) outcome(err error) {
	switch {
	case err == nil:
		tr.emit(EventCommitted, nil)
	case !errors.Is(err, ErrLockTimeout) && !errors.Is(err, ErrBackendUnavailable) || errors.Is(err, ErrLeaseLost):
		tr.emit(EventRolledBack, func(ev *Event) { ev.Detail = err.Error() })
	}
}
