package dashboard

import (
	"context"
	"slices"
	"sync"
	"time"

	"github.com/seckill-lab/seckill/bench/adminclient"
	"github.com/seckill-lab/seckill/internal/stack"
	"github.com/seckill-lab/seckill/stock"
)

// Following the instances: one lock event stream per instance
// (internal/adminclient), kept in a bounded log for the timeline and the
// lock figures.

// eventLog keeps the lock events of the last keep (by MonoNS).
type eventLog struct {
	mu   sync.Mutex
	keep int64
	evs  []stock.Event
}

const maxEvents = 50_000

func newEventLog(keep time.Duration) *eventLog { return &eventLog{keep: int64(keep)} }

func (l *eventLog) add(ev stock.Event) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.evs) >= maxEvents {
		l.evs = slices.Delete(l.evs, 0, len(l.evs)/4)
	}
	l.evs = append(l.evs, ev)
}

// since prunes what is older than keep and returns a copy of the events
// at or after fromNS.
func (l *eventLog) since(now, fromNS int64) []stock.Event {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.evs = slices.DeleteFunc(l.evs, func(ev stock.Event) bool { return ev.MonoNS < now-l.keep })
	var out []stock.Event
	for _, ev := range l.evs {
		if ev.MonoNS >= fromNS {
			out = append(out, ev)
		}
	}
	return out
}

func (l *eventLog) clear() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.evs = nil
}

// syncSubs follows the event stream of every instance of st (none when
// st is nil) and stops following the others.
func (s *Server) syncSubs(ctx context.Context, st *stack.State) {
	want := map[string]bool{}
	token := ""
	if st != nil {
		token = st.AdminToken
		for _, u := range st.InstanceURLs() {
			want[u] = true
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for u, cancel := range s.subs {
		if !want[u] {
			cancel()
			delete(s.subs, u)
		}
	}
	for u := range want {
		if _, ok := s.subs[u]; ok {
			continue
		}
		sctx, cancel := context.WithCancel(ctx)
		s.subs[u] = cancel
		go s.follow(sctx, u, token)
	}
}

// follow adds the goods' lock events of the instance at base to the log,
// reconnecting (every second) while ctx lasts.
func (s *Server) follow(ctx context.Context, base, token string) {
	key := s.goodsKey()
	for ctx.Err() == nil {
		ch, err := adminclient.New(token).Events(ctx, base)
		if err == nil {
			for ev := range ch {
				if ev.Key == key {
					s.events.add(ev)
				}
			}
		}
		select {
		case <-ctx.Done():
		case <-time.After(time.Second):
		}
	}
}
