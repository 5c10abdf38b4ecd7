package stock

import (
	"context"
	"fmt"
)

// gate bounds how many callers are between enter and leave at once. The
// zero gate (a nil channel) bounds nothing.
type gate chan struct{}

// newGate returns a gate of n places; n <= 0 is no bound.
func newGate(n int) gate {
	if n <= 0 {
		return nil
	}
	return make(gate, n)
}

// enter waits for a place, or for ctx (its error, wrapped). Every nil
// return must be followed by one leave.
func (g gate) enter(ctx context.Context) error {
	if g == nil {
		return nil
	}
	select {
	case g <- struct{}{}:
		return nil
	default:
	}
	select {
	case g <- struct{}{}:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("waiting for one of the instance's %d places at MySQL: %w", cap(g), ctx.Err())
	}
}

// leave gives a place back.
func (g gate) leave() {
	if g != nil {
		<-g
	}
}
