package main

import (
	"context"
	"flag"
	"os"

	"github.com/seckill-lab/seckill/internal/netfault"
)

// runProxy maps `seckill proxy --listen ADDR --config FILE` to
// netfault.Serve: the stack's fault proxy (`seckill up --proxy` starts it).
func runProxy(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("seckill proxy", flag.ContinueOnError)
	listen := fs.String("listen", "127.0.0.1:17090", "address of the Toxiproxy HTTP API")
	config := fs.String("config", "", "JSON file of the proxies, in Toxiproxy's format (required)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *config == "" {
		return exitError{code: 2, msg: "seckill proxy: --config FILE is required (seckill up --proxy writes RUNDIR/proxy/proxies.json)"}
	}
	return netfault.Serve(ctx, *listen, *config, os.Stderr)
}
