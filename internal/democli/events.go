package democli

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/seckill-lab/seckill/bench/adminclient"
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
	// Last prints only the last Last recorded events (the instances keep
	// up to 20000 each); 0 prints all of them.
	Last int
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
	if o.Last < 0 {
		return fmt.Errorf("%w: --last %d: want >= 1 (or 0 for every recorded event)", ErrInvalid, o.Last)
	}
	if len(f.Instances) == 0 {
		return fmt.Errorf("%w: the fleet has no instances", ErrInvalid)
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	items := make(chan streamItem, 1024)
	for i, base := range f.Instances {
		body, err := adminclient.New(f.Token).OpenEvents(ctx, base, true)
		if err != nil {
			return fmt.Errorf("events of %s: %w", f.name(i), err)
		}
		go adminclient.ReadEvents(body, func(it adminclient.Item) bool {
			select {
			case items <- streamItem{ev: it.Event, replayed: it.Replayed, err: it.Err, inst: i}:
				return true
			case <-ctx.Done():
				return false
			}
		})
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
			return fmt.Errorf("events: instances that did not send their recorded events within %s: %d (a seckill serve older than this command? restart the stack)", ReplayTimeout, pending)
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	// Every instance reads the machine's one monotonic clock: its events
	// compare directly.
	slices.SortStableFunc(past, func(a, b stock.Event) int {
		return cmp.Or(cmp.Compare(a.MonoNS, b.MonoNS), cmp.Compare(a.Instance, b.Instance), cmp.Compare(a.Seq, b.Seq))
	})
	if o.Last > 0 && len(past) > o.Last {
		past = past[len(past)-o.Last:]
	}
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
