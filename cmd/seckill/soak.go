package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/seckill-lab/seckill/internal/soak"
	"github.com/seckill-lab/seckill/internal/stack"
)

// runSoak maps `seckill soak` to package soak.
func runSoak(ctx context.Context, args []string) error {
	fs := newFlagSet("soak")
	dir := fs.String("dir", stack.DefaultDir, "run directory of the local stack (the soak samples its processes)")
	dur := fs.Duration("for", time.Hour, "how long the load runs (5s to 24h)")
	rate := fs.Int("rate", 40, "purchases per second (1 to 5000)")
	strategy := fs.String("strategy", "redis", "the lock the purchases run under")
	every := fs.Duration("every", 0, "sampling interval (default 10s, or --for/20 when shorter)")
	warmup := fs.Duration("warmup", 0, "growth counts after this (default --for/6)")
	out := fs.String("out", "", "report directory (default results/soak-<timestamp>/)")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return exitError{code: 2, msg: err.Error()}
	}
	if fs.NArg() > 0 {
		return exitError{code: 2, msg: fmt.Sprintf("unexpected argument %q; usage: seckill soak [--dir D] [--for 1h] [--rate 40] [--strategy redis] [--out DIR]", fs.Arg(0))}
	}
	if *out == "" {
		*out = filepath.Join("results", "soak-"+time.Now().Format("20060102-150405"))
	}
	res, err := soak.Run(ctx, soak.Options{Dir: *dir, For: *dur, Rate: *rate, Strategy: *strategy, Every: *every, Warmup: *warmup,
		OutDir: *out, Progress: os.Stderr})
	if errors.Is(err, soak.ErrInvalid) {
		return exitError{code: 2, msg: err.Error()}
	}
	if err != nil {
		return err
	}
	fmt.Print(soak.Markdown(res))
	if fs := res.Failures(); len(fs) > 0 {
		return fmt.Errorf("soak failed: %s", strings.Join(fs, "; "))
	}
	return nil
}
