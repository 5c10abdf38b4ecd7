package lesson

import (
	"context"
	"fmt"
	"io"

	"github.com/seckill-lab/seckill/internal/lab"
	"github.com/seckill-lab/seckill/internal/stack"
)

// sideStack starts the lesson's k-th stack of its own beside the class's
// (o without BasePort) on ports the lab registry gives it for as long as
// it runs (lab.ReserveSide: stack.SideBase when free, so labs side by side
// do not meet). stop takes it down and gives the ports back.
func sideStack(ctx context.Context, r *runner, k int, o stack.Options) (st *stack.State, stop func(), err error) {
	base, release, err := lab.ReserveSide(lab.Registry(""), r.st.Dir, r.st.BasePort, k)
	if err != nil {
		return nil, nil, err
	}
	o.BasePort = base
	st, err = stack.Up(ctx, o) // a failed Up stops what it started
	if err != nil {
		release()
		return nil, nil, fmt.Errorf("on ports from %d: %w", base, err)
	}
	return st, func() {
		_ = stack.Down(context.WithoutCancel(ctx), st.Dir, io.Discard)
		release()
	}, nil
}
