package stock

import (
	"errors"
	"testing"
)

// TestEventsKept: the ring keeps the last size events; Kept reads them a
// piece at a time by Seq, and Subscribe's upTo splits the replay from the
// live events with none in both.
func TestEventsKept(t *testing.T) {
	e := NewEvents(5)
	for range 7 {
		e.emit(Event{Key: "k"})
	}
	upTo, live, cancel, err := e.Subscribe(4)
	if err != nil {
		t.Fatal(err)
	}
	defer cancel()
	e.emit(Event{Key: "k"}) // Seq 8: live only
	seqs := func(evs []Event) []uint64 {
		var out []uint64
		for _, ev := range evs {
			out = append(out, ev.Seq)
		}
		return out
	}
	tests := []struct {
		after, upTo uint64
		n           int
		want        []uint64
	}{
		{0, upTo, 100, []uint64{4, 5, 6, 7}}, // 1 to 3 fell off the ring
		{0, upTo, 2, []uint64{4, 5}},
		{4, upTo, 2, []uint64{5, 6}},
		{6, upTo, 2, []uint64{7}},
		{7, upTo, 2, nil},
		{0, 100, 100, []uint64{4, 5, 6, 7, 8}},
	}
	for _, tc := range tests {
		if got := seqs(e.Kept(tc.after, tc.upTo, tc.n)); !equal(got, tc.want) {
			t.Errorf("Kept(%d, %d, %d) = %v, want %v", tc.after, tc.upTo, tc.n, got, tc.want)
		}
	}
	if ev := <-live; ev.Seq != 8 || upTo != 7 {
		t.Errorf("live starts at %d after upTo %d, want 8 after 7", ev.Seq, upTo)
	}
}

func equal(a, b []uint64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// TestSubscriberCap: MaxSubscribers at most; a cancel frees a place.
func TestSubscriberCap(t *testing.T) {
	e := NewEvents(10)
	var cancels []func()
	for i := range MaxSubscribers {
		_, _, cancel, err := e.Subscribe(1)
		if err != nil {
			t.Fatalf("subscriber %d: %v", i+1, err)
		}
		cancels = append(cancels, cancel)
	}
	if _, _, _, err := e.Subscribe(1); !errors.Is(err, ErrTooManySubscribers) {
		t.Fatalf("subscriber %d: err = %v, want ErrTooManySubscribers", MaxSubscribers+1, err)
	}
	cancels[0]()
	cancels[0]() // twice is once
	if _, _, cancel, err := e.Subscribe(1); err != nil {
		t.Fatalf("after a cancel: %v", err)
	} else {
		cancel()
	}
	for _, c := range cancels[1:] {
		c()
	}
	if n := e.Subscribers(); n != 0 {
		t.Errorf("%d subscribers left", n)
	}
}
