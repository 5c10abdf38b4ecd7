package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"

	"github.com/seckill-lab/seckill/bench"
	"github.com/seckill-lab/seckill/internal/democli"
	"github.com/seckill-lab/seckill/stock"
	"github.com/seckill-lab/seckill/stock/catalog"
)

// The demo commands (buy, strategy, reset, events): flags map to package
// democli, against the stack in --dir.

// demoFleet reads the fleet of the stack in dir.
func demoFleet(dir string) (democli.Fleet, error) {
	f, err := democli.FromStack(dir)
	if err != nil {
		return f, fmt.Errorf("%w (the demo commands need a running stack: seckill up --dir %s)", err, dir)
	}
	return f, nil
}

// demoErr maps a democli error to the exit code: 2 for bad input.
func demoErr(cmd string, err error) error {
	if errors.Is(err, democli.ErrInvalid) {
		return exitError{code: 2, msg: cmd + ": " + err.Error()}
	}
	return fmt.Errorf("%s: %w", cmd, err)
}

// parseInterleaved parses flags before and after the positional
// arguments (`seckill strategy redis --fencing`) and returns those.
func parseInterleaved(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := parse(fs, args); err != nil {
			return nil, err
		}
		if fs.NArg() == 0 {
			return pos, nil
		}
		pos = append(pos, fs.Arg(0))
		args = fs.Args()[1:]
	}
}

func runBuy(ctx context.Context, args []string) error {
	fs, dir := stackFlags("buy")
	goods := fs.Int64("goods", bench.DefaultGoodsID, "goods id")
	qty := fs.Int64("qty", 1, "units to buy")
	user := fs.String("user", "demo-user", "user id of the buyer")
	key := fs.String("key", "", "Idempotency-Key: the same key again replays the first answer (default: none)")
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "usage: seckill buy [--goods ID] [--qty N] [--user U] [--key K]\n\nOne purchase through nginx; exits 1 when it is refused.")
		fs.PrintDefaults()
	}
	if err := parse(fs, args); err != nil {
		return err
	}
	if err := noArgs(fs); err != nil {
		return err
	}
	if err := checkBounds(fs, bound{name: "goods", min: int64(1)}, bound{name: "qty", min: int64(1), omit: "1"}); err != nil {
		return err
	}
	f, err := demoFleet(*dir)
	if err != nil {
		return err
	}
	r, err := f.Buy(ctx, democli.BuyOptions{GoodsID: *goods, Qty: *qty, User: *user, Key: *key})
	var refused *democli.RefusedError
	if errors.As(err, &refused) {
		return exitError{code: 1, msg: refused.Error()}
	}
	if err != nil {
		return demoErr("buy", err)
	}
	return democli.WriteReceipt(os.Stdout, r)
}

func runStrategy(ctx context.Context, args []string) error {
	fs, dir := stackFlags("strategy")
	knobs := stock.BindKnobFlags(fs)
	usage := "usage: seckill strategy [NAME [--work-delay D] [--lock-ttl D] [--fencing] ... (flags below)]\n\n" +
		"Without NAME: each instance's current setting. With NAME: switch every instance to it, then\n" +
		"check they all run it.\n" +
		wrapList("NAME: ", catalog.StrategyNames(), maxHelpWidth)
	fs.Usage = func() { fmt.Fprintln(fs.Output(), usage); fs.PrintDefaults() }
	pos, err := parseInterleaved(fs, args)
	if err != nil {
		return err
	}
	if len(pos) > 1 {
		return exitError{code: 2, msg: fmt.Sprintf("strategy: unexpected argument %q\n%s", pos[1], usage)}
	}
	f, err := demoFleet(*dir)
	if err != nil {
		return err
	}
	var got []democli.InstanceSetting
	if len(pos) == 0 {
		set := setFlags(fs)
		delete(set, "dir")
		if len(set) > 0 {
			return exitError{code: 2, msg: "strategy: the setting flags need a strategy NAME\n" + usage}
		}
		got, err = f.Strategies(ctx)
	} else {
		cfg := *knobs
		cfg.Name = pos[0]
		got, err = f.SetStrategy(ctx, cfg)
	}
	for _, s := range got {
		fmt.Println(s)
	}
	if err != nil {
		return demoErr("strategy", err)
	}
	return nil
}

func runReset(ctx context.Context, args []string) error {
	fs, dir := stackFlags("reset")
	goods := fs.Int64("goods", bench.DefaultGoodsID, "goods id")
	stockN := fs.Int("stock", bench.DefaultStock, "stock to set (its orders are deleted)")
	if err := parse(fs, args); err != nil {
		return err
	}
	if err := noArgs(fs); err != nil {
		return err
	}
	if err := checkBounds(fs, bound{name: "goods", min: int64(1)}, bound{name: "stock", min: 0}); err != nil {
		return err
	}
	f, err := demoFleet(*dir)
	if err != nil {
		return err
	}
	a, skipped, err := f.Reset(ctx, *goods, *stockN)
	if err != nil {
		return demoErr("reset", err)
	}
	for _, s := range skipped {
		fmt.Fprintf(os.Stderr, "reset skipped %s: that strategy cannot run until its server is back\n", s)
	}
	return democli.WriteAudit(os.Stdout, a)
}

func runEvents(ctx context.Context, args []string) error {
	fs, dir := stackFlags("events")
	follow := fs.Bool("f", false, "follow: print live events as they come, until Ctrl-C")
	goods := fs.Int64("goods", 0, "only the events of this goods' lock (default: every goods)")
	last := fs.Int("last", 0, "only the last N recorded events (default: all the instances kept, up to 20000 each)")
	if err := parse(fs, args); err != nil {
		return err
	}
	if err := noArgs(fs); err != nil {
		return err
	}
	if err := checkBounds(fs, bound{name: "goods", min: int64(1), omit: "every goods"}, bound{name: "last", min: 1, omit: "every recorded event"}); err != nil {
		return err
	}
	f, err := demoFleet(*dir)
	if err != nil {
		return err
	}
	if err := f.Events(ctx, os.Stdout, democli.EventsOptions{GoodsID: *goods, Follow: *follow, Last: *last}); err != nil {
		return demoErr("events", err)
	}
	return nil
}
