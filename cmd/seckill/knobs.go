package main

import (
	"flag"
	"strings"

	"github.com/seckill-lab/seckill/bench"
	"github.com/seckill-lab/seckill/stock"
)

// knobFlags declares the strategy setting's flags (stock.Config's knobs)
// on fs, once for every command that sets a strategy (bench, strategy):
// the same names, usages and defaults everywhere, each 0 or false for
// the service's own default (TestKnobFlagsAgree). The returned Config
// holds what was given; its Name is left to the caller.
func knobFlags(fs *flag.FlagSet) *stock.Config {
	c := &stock.Config{}
	fs.DurationVar(&c.WorkDelay, "work-delay", 0, "simulated work inside the critical section, up to "+stock.MaxWorkDelay.String())
	fs.DurationVar(&c.LockTTL, "lock-ttl", 0, "lock TTL, "+stock.MinLockTTL.String()+".."+stock.MaxLockTTL.String()+" (default: the service's, "+stock.DefaultLockTTL.String()+")")
	fs.DurationVar(&c.LockWait, "lock-wait", 0, "lock wait budget, up to "+stock.MaxLockWait.String()+" (default: the service's, "+stock.DefaultLockWait.String()+")")
	fs.BoolVar(&c.Fencing, "fencing", false, "have the service check fencing tokens (locks with tokens only)")
	fs.BoolVar(&c.NoWatchdog, "no-watchdog", false, "have the locks that renew not renew: with --work-delay > --lock-ttl, holders go stale")
	fs.BoolVar(&c.NoLocalQueue, "no-local-queue", false, "every waiter contends at the lock server (no in-process queue in front of it)")
	fs.BoolVar(&c.NoLeaseCheck, "no-lease-check", false, "let a holder whose lease was reported lost commit anyway")
	fs.DurationVar(&c.ReleasePause, "release-pause", 0, "pause between the owner check and the DEL of "+strings.Join(bench.Pausing(), ", "))
	fs.IntVar(&c.Batch, "batch", 0, "a lock holder sells up to B queued purchases in one transaction (0 = off)")
	fs.IntVar(&c.PerUserLimit, "per-user-limit", 0, "at most N orders per user and goods, for every strategy (0 = no limit)")
	return c
}

// knobNames are the flags knobFlags declares, in its order.
func knobNames() []string {
	fs := flag.NewFlagSet("knobs", flag.ContinueOnError)
	knobFlags(fs)
	var names []string
	fs.VisitAll(func(f *flag.Flag) { names = append(names, f.Name) })
	return names
}
