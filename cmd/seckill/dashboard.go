package main

import (
	"context"
	"errors"
	"os"

	"github.com/seckill-lab/seckill/internal/dashboard"
	"github.com/seckill-lab/seckill/internal/stack"
)

// runDashboard maps `seckill dashboard --dir RUN_DIR [--addr HOST:PORT]` to
// dashboard.Serve.
func runDashboard(ctx context.Context, args []string) error {
	fs, dir := stackFlags("dashboard")
	addr := fs.String("addr", "", "listen address (default 127.0.0.1:B+88, B the stack's base port)")
	goods := fs.Int64("goods", dashboard.DefaultGoodsID, "goods id the dashboard shows, resets and buys")
	poll := fs.Duration("poll", dashboard.DefaultPoll, "how often the dashboard polls /metrics, the strategy and the stock")
	var allow listFlag
	fs.Var(&allow, "allow-host", "a host name the dashboard answers besides loopback and --addr's (repeatable)")
	if err := parse(fs, args); err != nil {
		return err
	}
	if err := noArgs(fs); err != nil {
		return err
	}
	err := dashboard.Serve(ctx, dashboard.Options{Dir: *dir, Addr: *addr, GoodsID: *goods, Poll: *poll, Out: os.Stderr, AllowHosts: allow})
	if errors.Is(err, stack.ErrNotRunning) || errors.Is(err, dashboard.ErrInvalidOption) {
		return exitError{code: 2, msg: err.Error()}
	}
	return err
}
