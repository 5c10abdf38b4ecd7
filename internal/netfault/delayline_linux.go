package netfault

import (
	"container/heap"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"
)

// delayLine wakes the rtt toxics' chunks at their due times from one
// goroutine that waits on a timerfd(2) through Go's network poller: a wait
// costs no CPU, the kernel's high-resolution timer fires on time (a
// timerfd has no timer slack), and the poller wakes the goroutine on the
// event at once. Go's own timers are woken by a poller that counts whole
// milliseconds, a millisecond late on an idle runtime, too coarse for the
// zone profile's 0.1 ms each way; the toxic used to yield in a loop
// through the last 1.5 ms instead, which kept a CPU busy for every chunk
// in flight. What is left of the lateness, the goroutines' wake-ups, is
// learnt: a chunk is woken that much before its due time, so chunks leave
// at their due time on average, each within the wake-ups' jitter (tens of
// µs).
type delayLine struct {
	mu    sync.Mutex
	due   dueHeap
	armed time.Time // when the timer fires; zero: disarmed
	tfd   int
	timer *os.File // tfd, read through the poller
	// lead is how much earlier than its due time a chunk is woken, in ns:
	// the mean lateness of the recent wake-ups, at most maxLead.
	lead atomic.Int64
}

// maxLead bounds the lead.
const maxLead = 200 * time.Microsecond

type dueEntry struct {
	at   time.Time
	wake chan struct{}
}

type dueHeap []dueEntry

func (h dueHeap) Len() int           { return len(h) }
func (h dueHeap) Less(i, j int) bool { return h[i].at.Before(h[j].at) }
func (h dueHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *dueHeap) Push(x any)        { *h = append(*h, x.(dueEntry)) }
func (h *dueHeap) Pop() any {
	old := *h
	e := old[len(old)-1]
	*h = old[:len(old)-1]
	return e
}

var (
	lineOnce sync.Once
	line     *delayLine
	lineErr  error
)

// theLine starts the process's delay line once.
func theLine() (*delayLine, error) {
	lineOnce.Do(func() {
		tfd, err := unix.TimerfdCreate(unix.CLOCK_MONOTONIC, unix.TFD_NONBLOCK|unix.TFD_CLOEXEC)
		if err != nil {
			lineErr = fmt.Errorf("netfault: delay line timerfd: %w", err)
			return
		}
		line = &delayLine{tfd: tfd, timer: os.NewFile(uintptr(tfd), "netfault-delay-line")}
		go line.run()
	})
	return line, lineErr
}

// waitUntil returns true at due (on average: see delayLine), false when
// interrupt closes first.
func waitUntil(due time.Time, interrupt <-chan struct{}) bool {
	if time.Until(due) <= 0 {
		return true
	}
	l, err := theLine()
	if err != nil { // no timerfd: Go's timer, a millisecond coarse
		return timerWait(due, interrupt)
	}
	lead := time.Duration(l.lead.Load())
	at := due.Add(-lead)
	select {
	case <-l.after(at):
	case <-interrupt:
		return false // the entry closes its channel at its time, unread
	}
	// Learn how late a wake-up comes: the next chunk is woken that much
	// before its due time, so that on average it leaves at due.
	late := min(max(time.Since(at), 0), maxLead)
	l.lead.Store(int64(lead + (late-lead)/8))
	return true
}

// after returns a channel closed at due.
func (l *delayLine) after(due time.Time) <-chan struct{} {
	wake := make(chan struct{})
	l.mu.Lock()
	heap.Push(&l.due, dueEntry{due, wake})
	if l.armed.IsZero() || due.Before(l.armed) {
		l.arm(due)
	}
	l.mu.Unlock()
	return wake
}

// arm sets the timer to fire at at. l.mu is held.
func (l *delayLine) arm(at time.Time) {
	d := max(time.Until(at), time.Nanosecond) // 0 would disarm it
	spec := unix.ItimerSpec{Value: unix.NsecToTimespec(int64(d))}
	_ = unix.TimerfdSettime(l.tfd, 0, &spec, nil)
	l.armed = at
}

// run is the delay line's goroutine: it waits for the timer, closes every
// entry that is due, and arms the timer for the next one.
func (l *delayLine) run() {
	var buf [8]byte
	for {
		_, _ = l.timer.Read(buf[:]) // parks in the poller until the timer fires
		l.mu.Lock()
		now := time.Now()
		for len(l.due) > 0 && !l.due[0].at.After(now) {
			close(heap.Pop(&l.due).(dueEntry).wake)
		}
		l.armed = time.Time{}
		if len(l.due) > 0 {
			l.arm(l.due[0].at)
		}
		l.mu.Unlock()
	}
}
