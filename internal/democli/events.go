package democli

import (
	"bufio"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/seckill-lab/seckill/bench"
	"github.com/seckill-lab/seckill/internal/api"
	"github.com/seckill-lab/seckill/stock"
)

// ReplayTimeout bounds the wait for an instance's replayed events when
// not following: an instance that never ends its replay (a seckill from
// before api.ReplayedComment) is an error, not a hang.
const ReplayTimeout = 10 * time.Second

// EventsOptions configure Events.
type EventsOptions struct {
	// GoodsID keeps the events of this goods' lock only; 0 keeps all.
	GoodsID int64
	// Follow keeps printing live events after the recorded ones, until
	// ctx is done (Ctrl-C); that end is not an error.
	Follow bool
}

// streamItem is one event of one instance, or the end of its replay, or
// the end of its stream (err).
type streamItem struct {
	ev       stock.Event
	replayed bool
	err      error
	inst     int
}

// Events writes the lock events the instances kept (GET
// /admin/events?replay=true), merged in time order, one line each
// (FormatEvent); with Follow it then writes the live events as they come
// until ctx is done. An instance that cannot be reached, or whose stream
// ends while following, is an error naming it.
func (f Fleet) Events(ctx context.Context, w io.Writer, o EventsOptions) error {
	if o.GoodsID < 0 {
		return fmt.Errorf("%w: goods id %d: want >= 1 (or 0 for every goods)", ErrInvalid, o.GoodsID)
	}
	if len(f.Instances) == 0 {
		return fmt.Errorf("%w: the fleet has no instances", ErrInvalid)
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	items := make(chan streamItem, 1024)
	for i, base := range f.Instances {
		body, err := f.openEvents(ctx, base)
		if err != nil {
			return fmt.Errorf("events of %s: %w", f.name(i), err)
		}
		go readEvents(ctx, body, i, items)
	}
	keep := func(ev stock.Event) bool { return o.GoodsID == 0 || ev.Key == stock.LockKey(o.GoodsID) }

	// The recorded events: until every instance ended its replay.
	var past []stock.Event
	pending := len(f.Instances)
	timeout := time.NewTimer(ReplayTimeout)
	defer timeout.Stop()
	for pending > 0 {
		select {
		case it := <-items:
			switch {
			case it.err != nil:
				return fmt.Errorf("events of %s: %w", f.name(it.inst), it.err)
			case it.replayed:
				pending--
			case keep(it.ev):
				past = append(past, it.ev)
			}
		case <-timeout.C:
			return fmt.Errorf("events: %d instance(s) did not send their recorded events within %s (a seckill serve older than this command? restart the stack)", pending, ReplayTimeout)
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	// Every instance reads the machine's one monotonic clock: its events
	// compare directly.
	slices.SortStableFunc(past, func(a, b stock.Event) int {
		return cmp.Or(cmp.Compare(a.MonoNS, b.MonoNS), cmp.Compare(a.Instance, b.Instance), cmp.Compare(a.Seq, b.Seq))
	})
	for _, ev := range past {
		if _, err := fmt.Fprintln(w, FormatEvent(ev)); err != nil {
			return fmt.Errorf("write events: %w", err)
		}
	}
	if !o.Follow {
		return nil
	}
	for {
		select {
		case it := <-items:
			if it.err != nil {
				if ctx.Err() != nil {
					return nil
				}
				return fmt.Errorf("events of %s: %w (is it running? seckill status)", f.name(it.inst), it.err)
			}
			if it.replayed || !keep(it.ev) {
				continue
			}
			if _, err := fmt.Fprintln(w, FormatEvent(it.ev)); err != nil {
				return fmt.Errorf("write events: %w", err)
			}
		case <-ctx.Done():
			return nil // Ctrl-C: the normal end of following
		}
	}
}

// openEvents opens base's event stream with the recorded events first.
func (f Fleet) openEvents(ctx context.Context, base string) (io.ReadCloser, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimRight(base, "/")+"/admin/events?replay=true", nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Authorization", "Bearer "+f.Token)
	// No client timeout: the stream lasts until ctx ends.
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, fmt.Errorf("%s is %w: %v", base, ErrUnreachable, rootCause(err))
	}
	if resp.StatusCode != http.StatusOK {
		raw, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		resp.Body.Close()
		return nil, fmt.Errorf("%w: GET %s/admin/events: %s: %s", bench.ErrAdminResponse, base, resp.Status, strings.TrimSpace(string(raw)))
	}
	return resp.Body, nil
}

// errStreamEnded: an event stream ended while it was read.
var errStreamEnded = errors.New("the event stream ended")

// readEvents sends the events of one stream (instance i) to out, with an
// item marking the end of the replay, until the stream or ctx ends; the
// last item carries the error.
func readEvents(ctx context.Context, body io.ReadCloser, i int, out chan<- streamItem) {
	defer body.Close()
	send := func(it streamItem) bool {
		it.inst = i
		select {
		case out <- it:
			return true
		case <-ctx.Done():
			return false
		}
	}
	sc := bufio.NewScanner(body)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if line == api.ReplayedComment {
			if !send(streamItem{replayed: true}) {
				return
			}
			continue
		}
		data, ok := strings.CutPrefix(line, "data: ")
		if !ok {
			continue
		}
		var ev stock.Event
		if err := json.Unmarshal([]byte(data), &ev); err != nil {
			send(streamItem{err: fmt.Errorf("decode event %q: %w", data, err)})
			return
		}
		if !send(streamItem{ev: ev}) {
			return
		}
	}
	err := sc.Err()
	if err == nil {
		err = errStreamEnded
	}
	send(streamItem{err: err})
}

// FormatEvent writes an event as one text line: wall time, instance,
// purchase, kind, then the token, the value and the detail when it has
// them.
func FormatEvent(ev stock.Event) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s  %-8s %-36s %-11s", ev.Wall.Local().Format("15:04:05.000000"), ev.Instance, ev.Purchase, ev.Kind)
	if ev.Token != 0 {
		b.WriteString(" token=" + itoa(int64(ev.Token)))
	}
	if ev.Value != nil {
		b.WriteString(" value=" + itoa(*ev.Value))
	}
	if ev.WaitedNS != 0 {
		b.WriteString(" waited=" + time.Duration(ev.WaitedNS).Round(time.Microsecond).String())
	}
	if ev.Detail != "" {
		b.WriteString(" detail=" + ev.Detail)
	}
	return strings.TrimRight(b.String(), " ")
}
