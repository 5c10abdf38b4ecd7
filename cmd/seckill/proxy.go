package main

import (
	"context"
	"errors"
	"github.com/seckill-lab/seckill/bench/costmodel"
	"os"
	"runtime"

	"github.com/seckill-lab/seckill/internal/netfault"
)

// runProxy maps `seckill proxy --listen ADDR --config FILE [--echo ADDR]`
// to netfault.Serve (and ServeEcho): the stack's fault proxy (`seckill up --proxy` starts it).
func runProxy(ctx context.Context, args []string) error {
	fs := newFlagSet("proxy")
	listen := fs.String("listen", "127.0.0.1:17090", "address of the Toxiproxy HTTP API")
	config := fs.String("config", "", "JSON file of the proxies, in Toxiproxy's format (required)")
	echo := fs.String("echo", "", "also answer a round-trip probe (an echo server) on this address")
	procs := fs.Int("procs", 1, "GOMAXPROCS of the proxy (1: the lowest added latency per round trip)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *config == "" {
		return exitError{code: 2, msg: "seckill proxy: --config FILE is required (seckill up --proxy writes RUNDIR/proxy/proxies.json)"}
	}
	// Each byte crosses Toxiproxy's pipeline as goroutine hand-offs; on
	// one P (the default, --procs 1) they need no thread wake-up, so the
	// proxy adds the least latency to a round trip.
	runtime.GOMAXPROCS(*procs)
	if *echo != "" {
		ctx, cancel := context.WithCancel(ctx)
		defer cancel()
		errc := make(chan error, 1)
		go func() { errc <- costmodel.ServeEcho(ctx, *echo) }()
		err := netfault.Serve(ctx, *listen, *config, os.Stderr)
		cancel()
		return errors.Join(err, <-errc)
	}
	return netfault.Serve(ctx, *listen, *config, os.Stderr)
}
