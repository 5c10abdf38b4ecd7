package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/seckill-lab/seckill/internal/fault"
	"github.com/seckill-lab/seckill/internal/server"
	"github.com/seckill-lab/seckill/internal/stack"
)

// runFault maps `seckill fault KIND [TARGET] [--for D] [--delay D]
// [--offset D]` to stack.Inject.
func runFault(ctx context.Context, args []string) error {
	fs, dir := stackFlags("fault")
	d := fs.Duration("for", 0, "undo the fault after this long (0: leave it on until 'seckill fault heal' or 'seckill down')")
	delay := fs.Duration("delay", stack.DefaultDelay, "latency: the delay added to every answer")
	offset := fs.Duration("offset", stack.DefaultOffset, "clock: how far the node's clock jumps forward")
	usage := "usage: seckill fault [--dir DIR] [--for D] [--delay D] [--offset D] KIND TARGET\n" +
		"  KIND: " + kindHelp() +
		"  TARGET: a component for pause, kill, restart (inst-2, redis-3, mariadb, ...);\n" +
		"          a Redis node for clock (redis-3: its keys' TTLs cut by --offset, an emulated jump);\n" +
		"          [INSTANCE/]SERVER for partition and latency (inst-2/redis, mysql;\n" +
		"          needs `seckill up --proxy`),\n" +
		"          SERVER a server or one of " + strings.Join(server.LinkNames(false), ", ") + ";\n" +
		"          failover (ha) and heal take no TARGET"
	fs.Usage = func() { fmt.Fprintln(fs.Output(), usage); fs.PrintDefaults() }
	if err := parse(fs, args); err != nil {
		return err
	}
	rest := fs.Args()
	// Flags after the arguments: `seckill fault pause inst-2 --for 5s`.
	n := min(len(rest), 2)
	if len(rest) > 1 && strings.HasPrefix(rest[1], "-") {
		n = 1
	}
	if tail := rest[n:]; len(tail) > 0 {
		rest = rest[:n]
		if err := parse(fs, tail); err != nil {
			return err
		}
		if fs.NArg() > 0 {
			return exitError{code: 2, msg: fmt.Sprintf("unexpected argument %q\n%s", fs.Arg(0), usage)}
		}
	}
	if len(rest) == 0 {
		return exitError{code: 2, msg: usage}
	}
	// A negative duration would make a pause permanent, a latency
	// meaningless: refused before anything is done.
	for _, v := range []struct {
		name string
		d    time.Duration
	}{{"for", *d}, {"delay", *delay}, {"offset", *offset}} {
		if v.d < 0 {
			return exitError{code: 2, msg: fmt.Sprintf("--%s %s: a negative duration means nothing; want a duration >= 0 such as 5s (0: the default)\n%s", v.name, v.d, usage)}
		}
	}
	f := stack.Fault{Kind: rest[0], Delay: *delay, Offset: *offset}
	if len(rest) > 1 {
		f.Target = rest[1]
	}
	if k, ok := fault.Lookup(f.Kind); ok && k.Target == "" && f.Target != "" {
		return exitError{code: 2, msg: fmt.Sprintf("fault %s takes no TARGET (it acts on what the stack has), not %q\n%s", f.Kind, f.Target, usage)}
	}
	if k, ok := fault.Lookup(f.Kind); ok && k.Target != "" && f.Target == "" {
		return exitError{code: 2, msg: fmt.Sprintf("fault %s needs a TARGET\n%s", f.Kind, usage)}
	}
	err := stack.Inject(ctx, *dir, f, *d, os.Stdout)
	if errors.Is(err, stack.ErrUnknownFault) || errors.Is(err, stack.ErrUnknownComponent) || errors.Is(err, stack.ErrNoProxy) {
		return exitError{code: 2, msg: err.Error()}
	}
	return err
}

// kindHelp lists the fault kinds, one a line, with what each does.
func kindHelp() string {
	var b strings.Builder
	for i, k := range fault.Kinds {
		if i > 0 {
			b.WriteString("        ")
		}
		fmt.Fprintf(&b, "%-10s %s\n", k.Name, k.Does)
	}
	return b.String()
}
