// Package stacktest gives a test package a lab stack of its own, for tests
// that change the fleet (its strategy, its instance count) and so cannot
// share the `make test` stack with the packages testing beside them: go
// test runs packages at the same time, and a strategy switched under a
// running bench would change that bench's result.
package stacktest

import (
	"context"
	"fmt"
	"io"
	"os"
	"testing"
	"time"

	"github.com/seckill-lab/seckill/internal/stack"
	"github.com/seckill-lab/seckill/internal/testenv"
)

// Main builds seckill, starts a stack with o in a temporary run directory
// (o.Dir and o.Binary are set here; give o.BasePort a range no other test
// uses), exports the stack's SECKILL_* variables for internal/testenv, runs
// the tests and stops the stack. It returns the exit code for os.Exit.
//
// A stack that cannot start fails the package under CI=true. Elsewhere the
// tests run with the SECKILL_* variables unset, so the tests that need the
// stack skip and say how to run them.
func Main(m *testing.M, o stack.Options) int {
	bin, cleanup, err := testenv.BuildSeckill()
	if err != nil {
		fmt.Fprintln(os.Stderr, "stacktest: build seckill:", err)
		return 1
	}
	defer cleanup()
	dir, err := os.MkdirTemp("", "seckill-stacktest-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "stacktest:", err)
		return 1
	}
	defer os.RemoveAll(dir)
	o.Dir, o.Binary = dir, bin
	o.BasePort = testenv.Port(o.BasePort)
	if o.Out == nil {
		o.Out = io.Discard
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	st, err := stack.Up(ctx, o)
	cancel()
	if err != nil {
		_ = stack.Down(context.Background(), dir, io.Discard)
		if testenv.InCI() {
			fmt.Fprintf(os.Stderr, "stacktest: start a stack on base port %d: %v (CI=true: a missing server is a failure)\n", o.BasePort, err)
			return 1
		}
		fmt.Fprintf(os.Stderr, "stacktest: no stack (%v); the tests that need one skip\n", err)
		for _, v := range testenv.Variables() {
			os.Unsetenv(v)
		}
		return m.Run()
	}
	defer func() { _ = stack.Down(context.Background(), dir, io.Discard) }()
	for _, kv := range st.Env() {
		os.Setenv(kv[0], kv[1])
	}
	return m.Run()
}
