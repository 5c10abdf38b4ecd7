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

	"github.com/seckill-lab/seckill/internal/nemesis"
	"github.com/seckill-lab/seckill/internal/stack"
)

// runNemesis maps `seckill nemesis` to package nemesis.
func runNemesis(ctx context.Context, args []string) error {
	fs := newFlagSet("nemesis")
	dir := fs.String("dir", stack.DefaultDir, "run directory of the ha stack (seckill up --topology ha --proxy)")
	strategy := fs.String("strategy", "redis", "the lock the purchases run under")
	fencing := fs.Bool("fencing", false, "turn the strategy's fencing tokens on")
	holder := fs.Bool("pause-holder", false, "each pause of an instance pauses the lock's holder past the lock's TTL")
	dur := fs.Duration("for", 10*time.Minute, "how long the load runs (10s to 24h)")
	seed := fs.Int64("seed", 1, "seeds the fault schedule: the same seed, the same faults")
	every := fs.Duration("every", 15*time.Second, "mean time between two faults' starts")
	rate := fs.Int("rate", 40, "purchases per second (1 to 2000)")
	resend := fs.Int("resend", nemesis.DefaultResend, "resends of a purchase without a definite answer before it counts unanswered")
	out := fs.String("out", "", "report directory (default results/nemesis-<timestamp>/)")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return exitError{code: 2, msg: err.Error()}
	}
	if fs.NArg() > 0 {
		return exitError{code: 2, msg: fmt.Sprintf("unexpected argument %q; usage: seckill nemesis [--dir D] [--strategy redis] [--fencing] [--pause-holder] [--for 10m] [--seed 1] [--out DIR]", fs.Arg(0))}
	}
	if *out == "" {
		*out = filepath.Join("results", "nemesis-"+time.Now().Format("20060102-150405"))
	}
	res, err := nemesis.Run(ctx, nemesis.Options{Dir: *dir, Strategy: *strategy, Fencing: *fencing, PauseHolder: *holder, For: *dur, Seed: *seed,
		Every: *every, Rate: *rate, Resend: *resend, OutDir: *out, Progress: os.Stderr})
	if errors.Is(err, nemesis.ErrInvalid) || errors.Is(err, nemesis.ErrNotHA) {
		return exitError{code: 2, msg: err.Error()}
	}
	if err != nil {
		return err
	}
	fmt.Print(nemesis.Markdown(res))
	if fs := res.Failures(); len(fs) > 0 {
		return fmt.Errorf("nemesis failed: %s", strings.Join(fs, "; "))
	}
	return nil
}
