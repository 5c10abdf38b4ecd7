package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/seckill-lab/seckill/internal/stack"
)

// runFault maps `seckill fault KIND [COMPONENT] [--for D]` to stack.Inject.
func runFault(ctx context.Context, args []string) error {
	fs, dir := stackFlags("fault")
	d := fs.Duration("for", 0, "undo the fault after this long (0: leave it on until `seckill fault heal` or `seckill down`)")
	usage := "usage: seckill fault [--dir DIR] [--for DURATION] KIND COMPONENT (KIND: " + strings.Join(stack.FaultKinds(), ", ") + "; failover and heal take no COMPONENT)"
	fs.Usage = func() { fmt.Fprintln(fs.Output(), usage); fs.PrintDefaults() }
	if err := parse(fs, args); err != nil {
		return err
	}
	rest := fs.Args()
	if len(rest) > 1 { // flags after the arguments: `seckill fault pause inst-2 --for 5s`
		if err := parse(fs, rest[2:]); err != nil {
			return err
		}
		rest = rest[:2]
	}
	if len(rest) == 0 {
		return exitError{code: 2, msg: usage}
	}
	kind, component := rest[0], ""
	if len(rest) > 1 {
		component = rest[1]
	}
	needs := kind != stack.FaultHeal && kind != stack.FaultFailover
	if needs && component == "" {
		return exitError{code: 2, msg: usage}
	}
	err := stack.Inject(ctx, *dir, kind, component, *d, os.Stdout)
	if errors.Is(err, stack.ErrUnknownFault) || errors.Is(err, stack.ErrUnknownComponent) {
		return exitError{code: 2, msg: err.Error()}
	}
	return err
}
