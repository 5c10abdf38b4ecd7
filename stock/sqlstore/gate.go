package sqlstore

import (
	"context"
	"fmt"
	"math"
	"time"
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

// inflightService is the time the database spends on one lock-free
// purchase transaction, for ScaledInflight: MariaDB spent 300–450 µs of
// CPU on each on the 2-CPU machine the default was measured on.
const inflightService = 500 * time.Microsecond

// ScaledInflight is the bound of a bounded store (NewBounded) whose
// database is rtt away: base purchases at the database at once, and as
// many more places as the round trip keeps busy (Little's law: a place
// is held for rtt + the service time, not the service time alone),
// base × (1 + rtt / 500 µs), rounded. base <= 0 is no bound. On loopback
// it is base or one more (a ping there takes 0.03–0.1 ms); at 2 ms it is
// about 5 × base, so a far database is not
// starved by a bound chosen for a near one.
func ScaledInflight(base int, rtt time.Duration) int {
	if base <= 0 {
		return 0
	}
	return int(math.Round(float64(base) * (1 + float64(max(rtt, 0))/float64(inflightService))))
}
