package main

import (
	"context"
	"fmt"
	"strings"
	"syscall"

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

// Inject pauses (SIGSTOP, then SIGCONT) or kills (SIGKILL, then a start)
// the component.
func (s stackFaulter) Inject(ctx context.Context, f bench.Fault) (func(context.Context) error, error) {
	switch f.Kind {
	case bench.FaultPause:
		if err := stack.Signal(s.dir, f.Component, syscall.SIGSTOP); err != nil {
			return nil, err
		}
		return func(context.Context) error { return stack.Signal(s.dir, f.Component, syscall.SIGCONT) }, nil
	case bench.FaultKill:
		if err := stack.Signal(s.dir, f.Component, syscall.SIGKILL); err != nil {
			return nil, err
		}
		return func(ctx context.Context) error { return stack.Start(ctx, s.dir, f.Component) }, nil
	}
	return nil, fmt.Errorf("fault kind %q: valid: %s", f.Kind, strings.Join(bench.FaultKinds(), ", "))
}
