package main

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/redis/go-redis/v9"

	"github.com/seckill-lab/seckill/internal/app"
	"github.com/seckill-lab/seckill/internal/config"
)

// serveEnv is what runServe reads the SECKILL_* variables with: the
// defaults of its flags. docs/cli.md reads none (helpSections).
var serveEnv = os.Getenv

// runServe maps the flags and variables of `seckill serve` to one
// instance of the stock service, and runs it until ctx is done.
func runServe(ctx context.Context, args []string) error {
	cfg, err := config.FromEnv(serveEnv)
	if err != nil {
		return err
	}
	fs := newFlagSet("serve")
	cfg.BindFlags(fs)
	wait := fs.Duration("start-timeout", 20*time.Second, "how long to wait for MySQL at start-up")
	if err := fs.Parse(args); err != nil {
		return err
	}
	// Process-wide settings belong here, not in constructors: go-redis's
	// own pool log lines are dropped (failures reach the user as errors and
	// /healthz), and Gin runs in release mode.
	redis.SetLogger(voidLogger{})
	gin.SetMode(gin.ReleaseMode)
	in, err := app.New(ctx, cfg, *wait)
	if err != nil {
		return err
	}
	defer in.Close()
	return in.Serve(ctx, func(addr string) {
		fmt.Fprintf(os.Stderr, "seckill serve: instance %s listening on %s, strategy %s, %s, %s\n", cfg.Instance, addr, in.Service.Config().Name, inflightNote(in), gatherNote(in.Config.StreamGather))
	})
}

// inflightNote says how many lock-free purchases the instance runs at
// MySQL at once, and why that many.
func inflightNote(in *app.Instance) string {
	n := in.DBInflight()
	if n == 0 {
		return "lock-free purchases at MySQL unbounded (--db-inflight 0)"
	}
	return fmt.Sprintf("at most %d lock-free purchases at MySQL at once (--db-inflight %d scaled by the %.2f ms round trip)",
		n, in.Config.DBInflight, float64(in.MySQLRTT.Microseconds())/1000)
}

// gatherNote says how long redis-stream's order consumer lets a batch
// gather.
func gatherNote(d time.Duration) string {
	if d == 0 {
		return "redis-stream's consumer reads again at once (--stream-gather 0)"
	}
	return fmt.Sprintf("redis-stream's consumer waits %s after a short batch (--stream-gather)", d)
}

// voidLogger drops go-redis's internal log lines.
type voidLogger struct{}

func (voidLogger) Printf(context.Context, string, ...any) {}
