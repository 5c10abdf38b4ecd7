package lockimpl

import (
	"context"
	"errors"
	"math/rand/v2"
	"time"
)

// Backoff is the pause between two attempts of a polling lock. The n-th
// pause (n from 0) is drawn uniformly from [d/2, d], where
// d = min(Base*2^n, Max): jittered, so waiters that failed together do not
// retry together. The zero value does not pause at all (a busy loop).
type Backoff struct {
	// Base is the first pause's upper bound. Default 0: no pause.
	Base time.Duration
	// Max caps the upper bound. Default 0: Base, a fixed range.
	Max time.Duration
}

// pause returns the n-th pause.
func (b Backoff) pause(n int) time.Duration {
	if b.Base <= 0 {
		return 0
	}
	hi := max(b.Max, b.Base)
	d := b.Base
	for i := 0; i < n && d < hi; i++ {
		d *= 2
	}
	d = min(d, hi)
	return d/2 + rand.N(d/2+1)
}

// Poll is the loop of the polling locks: it calls try until try returns a
// lease, or an error that does not wrap ErrLocked, or ctx is done, pausing
// between attempts as b says. On ctx it returns ctx.Err() unwrapped, so the
// caller names the lock in its own error.
func Poll(ctx context.Context, b Backoff, try func(ctx context.Context) (*Lease, error)) (*Lease, error) {
	for n := 0; ; n++ {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		lease, err := try(ctx)
		if err == nil {
			return lease, nil
		}
		if ctxErr := ctx.Err(); ctxErr != nil {
			return nil, ctxErr
		}
		if !errors.Is(err, ErrLocked) {
			return nil, err
		}
		d := b.pause(n)
		if d <= 0 {
			continue
		}
		if err := Sleep(ctx, d); err != nil {
			return nil, err
		}
	}
}

// Sleep waits d, or until ctx is done (then it returns ctx.Err()).
func Sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
