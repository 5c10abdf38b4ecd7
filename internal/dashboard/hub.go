package dashboard

import (
	"fmt"
	"net/http"
	"time"
)

// The hub: the browsers watching the dashboard, each sent every
// snapshot as a server-sent event (GET /events).

// eventsKeepAlive is how often an idle /events stream sends a comment.
const eventsKeepAlive = 15 * time.Second

func (s *Server) watchers() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.clients)
}

// broadcast sends b to every watcher; a slow one gets the latest only.
func (s *Server) broadcast(b []byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.last = b
	for ch := range s.clients {
		select {
		case ch <- b:
		default:
			select { // drop the stale one it has not read
			case <-ch:
			default:
			}
			select {
			case ch <- b:
			default:
			}
		}
	}
}

// serveEvents is GET /events: the snapshots as server-sent events
// (`event: snapshot`), the latest one first.
func (s *Server) serveEvents(w http.ResponseWriter, r *http.Request) {
	fl, ok := w.(http.Flusher)
	if !ok {
		fail(w, http.StatusInternalServerError, "no_streaming", "this server cannot stream")
		return
	}
	ch := make(chan []byte, 2)
	s.mu.Lock()
	s.clients[ch] = struct{}{}
	last := s.last
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		delete(s.clients, ch)
		s.mu.Unlock()
	}()
	select { // a first snapshot now, not at the next tick
	case s.wake <- struct{}{}:
	default:
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.Header().Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	send := func(b []byte) bool {
		_, err := fmt.Fprintf(w, "event: snapshot\ndata: %s\n\n", b)
		fl.Flush()
		return err == nil
	}
	if last != nil && !send(last) {
		return
	}
	fl.Flush()
	tick := time.NewTicker(eventsKeepAlive)
	defer tick.Stop()
	for {
		select {
		case <-r.Context().Done():
			return
		case b := <-ch:
			if !send(b) {
				return
			}
		case <-tick.C:
			if _, err := fmt.Fprint(w, ": keep-alive\n\n"); err != nil {
				return
			}
			fl.Flush()
		}
	}
}
