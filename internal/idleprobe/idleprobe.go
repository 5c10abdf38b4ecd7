// Package idleprobe measures each server's own idle latency for the
// operations a lock uses (a lock server's acquire and release, a MySQL
// UPDATE and its COMMIT): the
// median of a few dozen requests made straight at the server, one at a
// time, on keys and a table the lab does not use. The cost model
// (internal/cost) prices a critical step's server time with them.
//
// The probes are data: each lock server's descriptor (internal/server's
// Spec.Idle) says how to connect and, per operation, one sample's request
// (its setup and cleanup untimed), built with For. Every
// server gets a time budget (Options.Budget, 2 s by default) for all of
// its operations, within which a server that is down or stops answering
// ends in an error entry, never a hang.
package idleprobe

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/seckill-lab/seckill/bench/costmodel"
	"github.com/seckill-lab/seckill/bench/fleet"
	"github.com/seckill-lab/seckill/internal/cost"
)

// Prefix starts every key, znode and table name the probes use.
const Prefix = "seckill-idleprobe"

// Defaults of Options.
const (
	DefaultSamples = 100
	DefaultBudget  = 2 * time.Second
	// cleanupBudget bounds the removal of what the probes wrote, beyond
	// the server's budget.
	cleanupBudget = time.Second
	// rttSamples is how many one-byte round trips the loopback echo
	// takes, fsyncSamples how many write+fsync the disk's probe.
	rttSamples   = 200
	fsyncSamples = 50
)

// Options say how long the probes may take.
type Options struct {
	// Samples is how many requests of each operation are timed (their
	// median is kept), beside one warm-up; DefaultSamples when 0.
	Samples int
	// Budget is the time each server gets for all of its operations,
	// shared equally between them (an operation stops early when its
	// share is spent and keeps what it got); DefaultBudget when 0.
	Budget time.Duration
	// FsyncDir, when set, is where the fsync inside the probes' writes is
	// measured (the servers' data directory's file system); not measured
	// when "".
	FsyncDir string
}

func (o Options) withDefaults() Options {
	o.Samples = cmp.Or(o.Samples, DefaultSamples)
	o.Budget = cmp.Or(o.Budget, DefaultBudget)
	return o
}

// Target is one server to probe: its probes, the node probed and its
// address (host:port; for MySQL a go-sql-driver DSN).
type Target struct {
	Probes    ServerProbes
	Component string
	Addr      string
}

// Run probes every target, one server after the other (so that none
// competes with another for the CPU), and measures the loopback round
// trip the figures include. A target without probes, or whose server is
// down, gets an error entry.
func Run(ctx context.Context, targets []Target, o Options) *fleet.ServerProbes {
	o = o.withDefaults()
	out := &fleet.ServerProbes{At: time.Now().UTC(), Samples: o.Samples, BudgetMS: float64(o.Budget.Microseconds()) / 1000,
		Servers: map[string]fleet.ServerProbe{}}
	rctx, cancel := context.WithTimeout(ctx, o.Budget)
	out.LoopbackRTTMS, _ = costmodel.LoopbackRTTMS(rctx, rttSamples) // 0 when it failed: nothing is taken off the probes
	if o.FsyncDir != "" {
		out.FsyncMS, _ = costmodel.FsyncMS(rctx, o.FsyncDir, fsyncSamples) // likewise
	}
	cancel()
	for _, t := range targets {
		sp := fleet.ServerProbe{Component: t.Component, Addr: t.Addr}
		if t.Probes.Probe == nil {
			sp.Error = fmt.Sprintf("no probes for server %q", t.Probes.Server)
		} else {
			sp.Ops, sp.Error = t.Probes.Probe(ctx, t.Addr, o)
		}
		out.Servers[string(t.Probes.Server)] = sp
	}
	return out
}

// ServerProbes are one server's probes: Probe connects to an address and
// times each of its operations.
type ServerProbes struct {
	Server cost.Server
	Ops    []costmodel.Op
	Probe  func(ctx context.Context, addr string, o Options) (map[string]fleet.OpProbe, string)
}

// Op is one operation of a server with client C, named as the cost model
// prices it (catalog.ServerInfo's Read, Write, Release). Sample makes one
// request of it on key (unique to the sample) and returns the time of the
// request alone: whatever it sets up first or cleans up after is untimed.
type Op[C any] struct {
	Op     costmodel.Op
	Sample func(ctx context.Context, c C, key string) (time.Duration, error)
}

// Timed is the sample of an operation that needs no setup: req, timed.
func Timed[C any](req func(ctx context.Context, c C, key string) error) func(context.Context, C, string) (time.Duration, error) {
	return func(ctx context.Context, c C, key string) (time.Duration, error) {
		t0 := time.Now()
		err := req(ctx, c, key)
		return time.Since(t0), err
	}
}

// Dialer connects to addr within ctx, and returns the client and what
// removes the probes' keys and closes it (within its own ctx).
type Dialer[C any] func(ctx context.Context, addr string) (C, func(ctx context.Context) error, error)

// For makes server s's probes from its dialer and operations.
func For[C any](s cost.Server, dial Dialer[C], ops []Op[C]) ServerProbes {
	names := make([]costmodel.Op, len(ops))
	for i, o := range ops {
		names[i] = o.Op
	}
	return ServerProbes{Server: s, Ops: names, Probe: func(ctx context.Context, addr string, o Options) (map[string]fleet.OpProbe, string) {
		o = o.withDefaults()
		ctx, cancel := context.WithTimeout(ctx, o.Budget)
		defer cancel()
		t0 := time.Now()
		c, done, err := dial(ctx, addr)
		if err != nil {
			return nil, fmt.Sprintf("%s %s: connect: %v", s, addr, err)
		}
		defer func() {
			cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupBudget)
			defer cancel()
			_ = done(cctx) // what is left is under Prefix, harmless
		}()
		out := map[string]fleet.OpProbe{}
		for i, p := range ops {
			// Each operation gets an equal share of what the connection left.
			share := (o.Budget - time.Since(t0)) / time.Duration(len(ops)-i)
			octx, cancel := context.WithTimeout(ctx, share)
			out[string(p.Op)] = sampleOp(octx, c, p, o.Samples, fmt.Sprintf("%s-%s-", Prefix, p.Op))
			cancel()
		}
		return out, ""
	}}
}

// warmups is how many samples of n an operation discards first: a server
// just started (a JVM's first requests) answers slower.
func warmups(n int) int { return max(5, n/10) }

// sampleOp times n samples of p after its warm-ups, until ctx is done.
func sampleOp[C any](ctx context.Context, c C, p Op[C], n int, key string) fleet.OpProbe {
	var ds, warm []time.Duration
	var errs []error
	w := warmups(n)
	for i := 0; i < n+w && ctx.Err() == nil; i++ {
		d, err := p.Sample(ctx, c, key+strconv.Itoa(i))
		switch {
		case err != nil:
			if ctx.Err() == nil {
				errs = append(errs, err)
			}
			if len(errs) >= 3 { // a server that refuses keeps refusing
				i = n + w
			}
		case i >= w:
			ds = append(ds, d)
		default:
			warm = append(warm, d)
		}
	}
	// A server so slow that the share ends within the warm-ups (a loaded
	// machine, a cold JVM) is priced by the warm-ups rather than not at
	// all; the error says so.
	warmOnly := len(ds) == 0 && len(warm) > 0
	if warmOnly {
		ds = warm
	}
	res := fleet.OpProbe{N: len(ds)}
	if len(ds) > 0 {
		slices.Sort(ds)
		res.MS = float64(ds[len(ds)/2].Nanoseconds()) / 1e6
	}
	switch {
	case len(errs) > 0:
		res.Error = fmt.Sprintf("%d failed, the first: %v", len(errs), errs[0])
	case warmOnly:
		res.Error = fmt.Sprintf("0 of %d samples within the budget: the median of %d warm-ups", n, len(ds))
	case len(ds) < n:
		res.Error = fmt.Sprintf("%d of %d samples within the budget", len(ds), n)
	}
	return res
}
