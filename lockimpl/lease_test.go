package lockimpl

import (
	"context"
	"errors"
	"testing"
	"time"
)

// TestLeaseErr: a lease reports loss from the backend (MarkLost) and, for a
// lease with a deadline, from its own clock once the deadline passed.
func TestLeaseErr(t *testing.T) {
	cases := []struct {
		name     string
		setup    func(l *Lease)
		wantLost bool
	}{
		{"fresh, no deadline", func(*Lease) {}, false},
		{"deadline ahead", func(l *Lease) { l.SetValidUntil(time.Now().Add(time.Hour)) }, false},
		{"deadline passed (a pause outlived the TTL)", func(l *Lease) { l.SetValidUntil(time.Now().Add(-time.Millisecond)) }, true},
		{"marked lost by the backend", func(l *Lease) { l.MarkLost(errors.New("node deleted")) }, true},
		{"renewed past a deadline", func(l *Lease) {
			l.SetValidUntil(time.Now().Add(-time.Second))
			l.SetValidUntil(time.Now().Add(time.Hour))
		}, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			l := NewLease("k", 1, nil)
			tc.setup(l)
			err := l.Err()
			if got := errors.Is(err, ErrLeaseLost); got != tc.wantLost {
				t.Fatalf("Err() = %v, want lost %v", err, tc.wantLost)
			}
		})
	}
}

func TestExpireAfterAndDone(t *testing.T) {
	l := NewLease("k", 1, func(context.Context) error { return nil })
	stop := ExpireAfter(l, 20*time.Millisecond)
	defer stop()
	select {
	case <-l.Lost():
	case <-time.After(5 * time.Second):
		t.Fatal("not lost after its TTL")
	}
	select {
	case <-l.Done():
		t.Fatal("Done before Unlock")
	default:
	}
	if err := l.Unlock(context.Background()); err != nil {
		t.Fatal(err)
	}
	<-l.Done()
	if err := l.Unlock(context.Background()); !errors.Is(err, ErrNotHeld) {
		t.Fatalf("second Unlock: %v", err)
	}
}
