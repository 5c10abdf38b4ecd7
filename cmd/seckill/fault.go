package main

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/seckill-lab/seckill/bench"
	"github.com/seckill-lab/seckill/internal/stack"
)

// faultFlags collects repeated --fault specs.
type faultFlags []bench.Fault

func (f *faultFlags) String() string {
	var s []string
	for _, x := range *f {
		s = append(s, x.String())
	}
	return strings.Join(s, ",")
}

func (f *faultFlags) Set(v string) error {
	x, err := bench.ParseFault(v)
	if err != nil {
		return err
	}
	*f = append(*f, x)
	return nil
}

// stackFaulter injects bench faults into the local stack in dir.
type stackFaulter struct{ dir string }

// Inject makes f with stack.Begin and returns its end (a no-op for the
// kinds that are over at once: restart, clock, failover).
func (s stackFaulter) Inject(ctx context.Context, f bench.Fault) (func(context.Context) error, error) {
	sf := stack.Fault{Kind: f.Kind, Target: f.Component}
	if f.Param != "" {
		d, err := time.ParseDuration(f.Param)
		if err != nil {
			return nil, fmt.Errorf("fault %s: %w", f, err)
		}
		sf.Delay, sf.Offset = d, d
	}
	_, end, err := stack.Begin(ctx, s.dir, sf)
	if err != nil {
		return nil, err
	}
	if end == nil {
		return func(context.Context) error { return nil }, nil
	}
	return end, nil
}
