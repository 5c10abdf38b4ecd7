package api

import (
	"encoding/json"
	"fmt"
	"net/http"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/seckill-lab/seckill/stock"
)

// eventsKeepAlive is how often an idle event stream sends a comment line,
// so proxies and clients see it alive.
const eventsKeepAlive = 15 * time.Second

// eventsWriteWindow is how long one write of an event stream may take. The
// server's WriteTimeout bounds a whole response, which would cut a stream
// when it runs out (3 minutes by default): each write here moves the
// connection's deadline instead, so a stream lives as long as its client
// reads, and a client that stops reading is cut after this window.
const eventsWriteWindow = 2 * eventsKeepAlive

// eventsBuffer is a live subscriber's room for events not yet written:
// about 0.2 MB; a subscriber that falls further behind loses events (the
// instance counts them, and the gap in Seq shows the reader).
const eventsBuffer = 1024

// replayPiece is how many kept events a replay copies at once.
const replayPiece = 256

// events streams the instance's lock events as server-sent events
// (GET /admin/events): one `event: lock` with the Event as JSON per step,
// oldest first. With ?replay=true the events the instance kept are sent
// first, then the line stock.ReplayedComment. The stream ends when the client
// goes away.
func (h *handler) events(c *gin.Context) {
	if h.Events == nil {
		fail(c, http.StatusNotFound, "not_found", "this instance records no events")
		return
	}
	upTo, live, cancel, err := h.Events.Subscribe(eventsBuffer)
	if err != nil {
		c.Header("Retry-After", "5")
		fail(c, http.StatusServiceUnavailable, "too_many_subscribers",
			fmt.Sprintf("this instance streams its events to at most %d subscribers at once (seckill events -f, dashboards, benches); close one and retry", stock.MaxSubscribers))
		return
	}
	defer cancel()
	replay := c.Query("replay") == "true"
	w := c.Writer
	rc := http.NewResponseController(w)
	// extend moves the write deadline past the next write; a server
	// without deadlines (ErrNotSupported) has no timeout to outlive.
	extend := func() { _ = rc.SetWriteDeadline(time.Now().Add(eventsWriteWindow)) }
	extend()
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.Header().Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	send := func(v any) bool {
		b, err := json.Marshal(v)
		if err != nil {
			return false
		}
		_, err = fmt.Fprintf(w, "event: lock\ndata: %s\n\n", b)
		return err == nil
	}
	// The replay is read from the ring a piece at a time: a subscriber
	// holds replayPiece events at once, not the whole ring.
	for after := uint64(0); replay; {
		piece := h.Events.Kept(after, upTo, replayPiece)
		if len(piece) == 0 {
			break
		}
		for _, ev := range piece {
			if !send(ev) {
				return
			}
		}
		after = piece[len(piece)-1].Seq
	}
	if replay {
		// A comment line (clients skip it): what follows is live. A
		// reader that wants only the past stops here.
		if _, err := fmt.Fprint(w, stock.ReplayedComment+"\n\n"); err != nil {
			return
		}
	}
	w.Flush()
	tick := time.NewTicker(eventsKeepAlive)
	defer tick.Stop()
	for {
		select {
		case <-c.Request.Context().Done():
			return
		case ev := <-live:
			extend()
			if !send(ev) {
				return
			}
			// Send what is queued at once, then flush once.
			for n := len(live); n > 0; n-- {
				if !send(<-live) {
					return
				}
			}
			w.Flush()
		case <-tick.C:
			extend()
			if _, err := fmt.Fprint(w, ": keep-alive\n\n"); err != nil {
				return
			}
			w.Flush()
		}
	}
}
