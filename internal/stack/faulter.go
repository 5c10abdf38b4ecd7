package stack

import (
	"context"
	"fmt"
	"time"

	"github.com/seckill-lab/seckill/bench/fleet"
)

// Faulter injects a bench's faults (bench.Options.Faults) into the stack in
// Dir: `seckill bench --fault` and the lessons that kill a component
// mid-run use it.
type Faulter struct{ Dir string }

// Inject makes f with Begin and returns its end (a no-op for the kinds
// that are over at once: restart, clock, failover).
func (s Faulter) Inject(ctx context.Context, f fleet.Fault) (func(context.Context) error, error) {
	sf := Fault{Kind: f.Kind, Target: f.Component}
	if f.Param != "" {
		d, err := time.ParseDuration(f.Param)
		if err != nil {
			return nil, fmt.Errorf("fault %s: %w", f, err)
		}
		sf.Delay, sf.Offset = d, d
	}
	_, end, err := Begin(ctx, s.Dir, sf)
	if err != nil {
		return nil, err
	}
	if end == nil {
		return func(context.Context) error { return nil }, nil
	}
	return end, nil
}
