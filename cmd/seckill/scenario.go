package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	seckill "github.com/seckill-lab/seckill"
	"github.com/seckill-lab/seckill/bench"
	"github.com/seckill-lab/seckill/internal/scenario"
	"github.com/seckill-lab/seckill/internal/stack"
)

// runScenario maps `seckill scenario list|run NAME` to package scenario.
func runScenario(ctx context.Context, args []string) error {
	usage := "usage: seckill scenario list | seckill scenario chaos [NAME] | seckill scenario run NAME [--strategies a,b] [--protections unprotected,lease-check,fencing] [--fencing off,on] [--repeat N] [--out DIR]"
	if len(args) == 0 {
		return exitError{code: 2, msg: usage}
	}
	switch args[0] {
	case "list":
		tw := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "SCENARIO\tSTACK\tSTRATEGIES\tSTORY")
		for _, s := range scenario.All() {
			needs := s.Topology
			if s.Proxy {
				needs += " --proxy"
			}
			fmt.Fprintf(tw, "%s\t%s\t%v\t%s\n", s.Name, needs, s.Strategies, s.Story)
		}
		return tw.Flush()
	case "chaos":
		return printChaos(args[1:])
	case "run":
	default:
		return exitError{code: 2, msg: fmt.Sprintf("unknown scenario command %q; %s", args[0], usage)}
	}
	fs := newFlagSet("scenario run")
	strategies := fs.String("strategies", "", "strategies to run (default: the scenario's)")
	protections := fs.String("protections", "all", "unprotected, lease-check, fencing, or all")
	fencing := fs.String("fencing", "", "off, on, or off,on: shorthand for --protections unprotected / fencing")
	repeat := fs.Int("repeat", 1, "runs of each strategy under each protection")
	seed := fs.Int64("seed", 1, "seed of the load (repeat r uses seed+r)")
	short := fs.Bool("short", false, "the short load the tests run")
	dir := fs.String("dir", stack.DefaultDir, "run directory of the local stack")
	out := fs.String("out", "", "report directory (default results/scenario-NAME-<timestamp>/)")
	// Flags may come before or after the name.
	parse := func(a []string) error {
		if err := fs.Parse(a); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return err
			}
			return exitError{code: 2, msg: err.Error()}
		}
		return nil
	}
	if err := parse(args[1:]); err != nil {
		return err
	}
	if fs.NArg() == 0 {
		return exitError{code: 2, msg: usage}
	}
	name := fs.Arg(0)
	if err := parse(fs.Args()[1:]); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return exitError{code: 2, msg: fmt.Sprintf("unexpected argument %q; %s", fs.Arg(0), usage)}
	}
	if err := checkBounds(fs, bound{name: "repeat", min: 1, max: 100, omit: "1"}); err != nil {
		return err
	}
	sc, err := scenario.Find(name)
	if err != nil {
		return exitError{code: 2, msg: err.Error()}
	}
	o := scenario.Options{Repeat: *repeat, Seed: *seed, Short: *short, Progress: os.Stderr}
	if o.Protections, err = scenario.ParseProtections(*protections); err != nil {
		return exitError{code: 2, msg: err.Error()}
	}
	switch *fencing {
	case "":
	case "off":
		o.Protections = []scenario.Protection{scenario.ProtectNone}
	case "on":
		o.Protections = []scenario.Protection{scenario.ProtectFencing}
	case "off,on", "on,off":
		o.Protections = []scenario.Protection{scenario.ProtectNone, scenario.ProtectFencing}
	default:
		return exitError{code: 2, msg: fmt.Sprintf("--fencing %q: want off, on or off,on", *fencing)}
	}
	if *strategies != "" {
		if o.Strategies, err = bench.ParseStrategies(*strategies); err != nil {
			return exitError{code: 2, msg: err.Error()}
		}
	}
	st, err := stack.Load(*dir)
	if errors.Is(err, stack.ErrNotRunning) {
		return fmt.Errorf("no stack in %s: run `seckill up` first (scenario %s needs the %s topology)", *dir, sc.Name, sc.Topology)
	}
	if err != nil {
		return err
	}
	if err := sc.Fits(st); err != nil {
		return exitError{code: 2, msg: err.Error()}
	}
	o.Dir, o.Fleet = st.Dir, st.Fleet()
	o.OutDir = *out
	if o.OutDir == "" {
		if o.OutDir, err = bench.NewOutDir("results", "scenario-"+sc.Name+"-", time.Now()); err != nil {
			return err
		}
	}
	res, err := scenario.Run(ctx, sc, o)
	if res != nil {
		fmt.Fprintln(os.Stderr)
		if werr := scenario.WriteTable(os.Stdout, res); werr != nil {
			return werr
		}
		fmt.Fprintf(os.Stderr, "reports in %s (scenario.json, scenario.md, scenario.html, one bench report per run)\n", o.OutDir)
	}
	if errors.Is(err, scenario.ErrFailed) {
		return exitError{code: 1}
	}
	return err
}

// printChaos prints the Chaos Mesh experiment of a scenario (deploy/chaos,
// embedded), or with no name lists the scenarios that have one.
func printChaos(args []string) error {
	if len(args) == 0 {
		for _, name := range seckill.ChaosExperiments() {
			fmt.Println(name)
		}
		return nil
	}
	if len(args) > 1 {
		return exitError{code: 2, msg: fmt.Sprintf("unexpected argument %q; usage: seckill scenario chaos [NAME]", args[1])}
	}
	if _, err := scenario.Find(args[0]); err != nil {
		return exitError{code: 2, msg: err.Error()}
	}
	b, ok := seckill.ChaosExperiment(args[0])
	if !ok {
		return exitError{code: 2, msg: fmt.Sprintf("scenario %s has no cluster form; these do: %s", args[0], strings.Join(seckill.ChaosExperiments(), ", "))}
	}
	_, err := os.Stdout.Write(b)
	return err
}
