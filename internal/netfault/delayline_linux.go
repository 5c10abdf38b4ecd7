package netfault

import (
	"container/heap"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"
)

// delayLine wakes the rtt toxics' chunks at their due times from one OS
// thread that sleeps in ppoll(2) with a timer slack of 1 ns: a wait costs
// no CPU, and a wake-up comes about 10 µs after its due time (measured on
// the lab's 2-CPU VM: p50 9 µs, p99 26 µs late). Go's own timers are woken
// by a poller that counts whole milliseconds, a millisecond late on an idle
// runtime, too coarse for the zone profile's 0.1 ms each way; the toxic
// used to yield in a loop through the last 1.5 ms instead, which kept a CPU
// busy for every chunk in flight. What is left of the lateness, the
// goroutine's own wake-up, is learnt: a chunk is woken that much before its
// due time, so chunks leave at their due time on average, each within the
// wake-ups' jitter (tens of µs).
type delayLine struct {
	mu       sync.Mutex
	due      dueHeap
	sleeping bool      // the thread is in (or about to enter) ppoll
	until    time.Time // what it sleeps until; zero: until woken
	efd      int       // eventfd that wakes it early
	// lead is how much earlier than its due time a chunk is woken, in ns:
	// the mean lateness of the recent wake-ups (the thread's, then the
	// waiting goroutine's), at most maxLead.
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
		efd, err := unix.Eventfd(0, unix.EFD_CLOEXEC|unix.EFD_NONBLOCK)
		if err != nil {
			lineErr = fmt.Errorf("netfault: delay line eventfd: %w", err)
			return
		}
		line = &delayLine{efd: efd}
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
	if err != nil { // no eventfd: Go's timer, a millisecond coarse
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
	early := l.sleeping && (l.until.IsZero() || due.Before(l.until))
	if early {
		l.until = due // later pushes due after this one need no wake-up
	}
	l.mu.Unlock()
	if early {
		one := [8]byte{1}
		_, _ = unix.Write(l.efd, one[:]) // EAGAIN: the counter is already set
	}
	return wake
}

// run is the delay line's thread: it closes every entry that is due, then
// sleeps until the next one, or until after() wakes it for an earlier one.
func (l *delayLine) run() {
	runtime.LockOSThread() // never unlocked: the thread keeps its timer slack
	_ = unix.Prctl(unix.PR_SET_TIMERSLACK, 1, 0, 0, 0)
	fds := []unix.PollFd{{Fd: int32(l.efd), Events: unix.POLLIN}}
	var buf [8]byte
	for {
		l.mu.Lock()
		now := time.Now()
		for len(l.due) > 0 && !l.due[0].at.After(now) {
			close(heap.Pop(&l.due).(dueEntry).wake)
		}
		var timeout *unix.Timespec
		l.until = time.Time{}
		if len(l.due) > 0 {
			l.until = l.due[0].at
			ts := unix.NsecToTimespec(int64(l.until.Sub(now)))
			timeout = &ts
		}
		l.sleeping = true
		l.mu.Unlock()
		n, _ := unix.Ppoll(fds, timeout, nil) // EINTR: look again
		l.mu.Lock()
		l.sleeping = false
		l.mu.Unlock()
		if n > 0 {
			_, _ = unix.Read(l.efd, buf[:])
		}
	}
}
