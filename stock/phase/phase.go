// Package phase tags a request's context with the phase of the purchase
// it belongs to (taking the lock, holding it, releasing it, or none), so
// that whatever counts the requests below (the lab's cost meter,
// internal/cost) can attribute each one without the service naming it.
// It is a leaf: it imports only the standard library, and the service
// (stock) sets the tags.
package phase

import (
	"context"
	"sync"
	"sync/atomic"
)

// Phase is the part of a purchase a request belongs to.
type Phase string

// Phases of a purchase. AcquireLast and RowLocked overlap the others:
// AcquireLast is the last request of each successful acquisition
// (Acquired), RowLocked what a MySQL transaction does from the statement
// that took its row locks to its commit.
const (
	Acquire     Phase = "acquire"
	Held        Phase = "held"
	Release     Phase = "release"
	Other       Phase = "other"
	AcquireLast Phase = "acquire_last"
	RowLocked   Phase = "row_locked"
)

// All lists every phase, in report order.
func All() []Phase { return []Phase{Acquire, Held, Release, Other, AcquireLast, RowLocked} }

// Mark is what a context says about the purchase: its phase, the requests
// of that phase in flight and, while acquiring, where the acquisition's
// last request is noted.
type Mark struct {
	Phase  Phase
	flight *atomic.Int32
	last   *Last
}

// Begin is called as a request under m is sent: overlapped says another
// one under m was in flight (a fan-out, sent at once). End is called when
// its answer came. Unmarked requests never overlap.
func (m Mark) Begin() (overlapped bool) {
	return m.flight != nil && m.flight.Add(1) > 1
}

// End is Begin's pair.
func (m Mark) End() {
	if m.flight != nil {
		m.flight.Add(-1)
	}
}

// Last is where an acquisition's last request so far is noted; nil
// outside the Acquire phase.
func (m Mark) Last() *Last { return m.last }

type markKey struct{}

// With returns ctx marked as being in phase p of a purchase. Marking
// Acquire also starts noting the acquisition's last request (Acquired).
func With(ctx context.Context, p Phase) context.Context {
	m := Mark{Phase: p, flight: new(atomic.Int32)}
	if p == Acquire {
		m.last = &Last{}
	}
	return context.WithValue(ctx, markKey{}, m)
}

// Of returns ctx's mark (phase Other when unmarked).
func Of(ctx context.Context) Mark {
	if m, ok := ctx.Value(markKey{}).(Mark); ok {
		return m
	}
	return Mark{Phase: Other}
}

// Acquired tells, once the lock is taken under actx (a context With(ctx,
// Acquire) returned), that the acquisition's last noted request was its
// last: the function noted with it runs, once. Nothing happens when no
// request was noted (an in-process lock).
func Acquired(actx context.Context) {
	if l := Of(actx).last; l != nil {
		l.flush()
	}
}

// Last notes the last request of one acquisition.
type Last struct {
	mu    sync.Mutex
	count func()
}

// Note keeps count as what to run if the request it stands for turns out
// to be the acquisition's last (Acquired); a later Note replaces it.
func (l *Last) Note(count func()) {
	l.mu.Lock()
	l.count = count
	l.mu.Unlock()
}

func (l *Last) flush() {
	l.mu.Lock()
	count := l.count
	l.count = nil
	l.mu.Unlock()
	if count != nil {
		count()
	}
}
