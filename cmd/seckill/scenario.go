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

// scenarioUsage is the usage of `seckill scenario`.
const scenarioUsage = "usage: seckill scenario list\n" +
	"       seckill scenario chaos [NAME]\n" +
	"       seckill scenario run NAME [--strategies a,b] [--protections unprotected,lease-check,fencing]\n" +
	"                                 [--fencing off,on] [--repeat N] [--out DIR]"

// runScenario maps `seckill scenario list|chaos|run NAME` to package
// scenario.
func runScenario(ctx context.Context, args []string) error {
	if len(args) == 0 {
		return exitError{code: 2, msg: scenarioUsage}
	}
	switch args[0] {
	case "list":
		return listScenarios()
	case "chaos":
		return printChaos(args[1:])
	case "run":
		return runScenarioRun(ctx, args[1:])
	case "-h", "-help", "--help":
		fmt.Println(scenarioUsage)
		return nil
	}
	return exitError{code: 2, msg: fmt.Sprintf("unknown scenario command %q\n%s", args[0], scenarioUsage)}
}

// listScenarios prints the catalogue: each scenario's stack, strategies
// and story.
func listScenarios() error {
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
}

// scenarioFlags are the flags of `seckill scenario run NAME`, and the name.
type scenarioFlags struct {
	fs                               *flag.FlagSet
	strategies, protections, fencing string
	repeat                           int
	seed                             int64
	short                            bool
	dir, out                         string
	name                             string
}

// newScenarioFlags declares the flags of `seckill scenario run`.
func newScenarioFlags() *scenarioFlags {
	f := &scenarioFlags{fs: newFlagSet("scenario run")}
	fs := f.fs
	fs.StringVar(&f.strategies, "strategies", "", "strategies to run (default: the scenario's)")
	fs.StringVar(&f.protections, "protections", "all", "unprotected, lease-check, fencing, or all")
	fs.StringVar(&f.fencing, "fencing", "", "off, on, or off,on: shorthand for --protections unprotected / fencing")
	fs.IntVar(&f.repeat, "repeat", 1, "runs of each strategy under each protection")
	fs.Int64Var(&f.seed, "seed", 1, "seed of the load (repeat r uses seed+r)")
	fs.BoolVar(&f.short, "short", false, "the short load the tests run")
	fs.StringVar(&f.dir, "dir", stack.DefaultDir, "run directory of the local stack")
	fs.StringVar(&f.out, "out", "", "report directory (default results/scenario-NAME-<timestamp>/)")
	return f
}

// parse reads the scenario's name and the flags, which may come before or
// after it.
func (f *scenarioFlags) parse(args []string) error {
	parse := func(a []string) error {
		if err := f.fs.Parse(a); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return err
			}
			return exitError{code: 2, msg: err.Error()}
		}
		return nil
	}
	if err := parse(args); err != nil {
		return err
	}
	if f.fs.NArg() == 0 {
		return exitError{code: 2, msg: scenarioUsage}
	}
	f.name = f.fs.Arg(0)
	if err := parse(f.fs.Args()[1:]); err != nil {
		return err
	}
	if f.fs.NArg() > 0 {
		return exitError{code: 2, msg: fmt.Sprintf("unexpected argument %q\n%s", f.fs.Arg(0), scenarioUsage)}
	}
	return checkBounds(f.fs, bound{name: "repeat", min: 1, max: 100, omit: "1"})
}

// options maps the flags to scenario.Options, without the fleet and the
// report directory.
func (f *scenarioFlags) options() (scenario.Options, error) {
	o := scenario.Options{Repeat: f.repeat, Seed: f.seed, Short: f.short, Progress: os.Stderr}
	var err error
	if o.Protections, err = scenario.ParseProtections(f.protections); err != nil {
		return o, exitError{code: 2, msg: err.Error()}
	}
	switch f.fencing {
	case "":
	case "off":
		o.Protections = []scenario.Protection{scenario.ProtectNone}
	case "on":
		o.Protections = []scenario.Protection{scenario.ProtectFencing}
	case "off,on", "on,off":
		o.Protections = []scenario.Protection{scenario.ProtectNone, scenario.ProtectFencing}
	default:
		return o, exitError{code: 2, msg: fmt.Sprintf("--fencing %q: want off, on or off,on", f.fencing)}
	}
	if f.strategies != "" {
		if o.Strategies, err = bench.ParseStrategies(f.strategies); err != nil {
			return o, exitError{code: 2, msg: err.Error()}
		}
	}
	return o, nil
}

// runScenarioRun runs `seckill scenario run NAME` on the local stack and
// prints its table.
func runScenarioRun(ctx context.Context, args []string) error {
	f := newScenarioFlags()
	if err := f.parse(args); err != nil {
		return err
	}
	sc, err := scenario.Find(f.name)
	if err != nil {
		return exitError{code: 2, msg: err.Error()}
	}
	o, err := f.options()
	if err != nil {
		return err
	}
	st, err := stack.Load(f.dir)
	if errors.Is(err, stack.ErrNotRunning) {
		return fmt.Errorf("no stack in %s: run `seckill up` first (scenario %s needs the %s topology)", f.dir, sc.Name, sc.Topology)
	}
	if err != nil {
		return err
	}
	if err := sc.Fits(st); err != nil {
		return exitError{code: 2, msg: err.Error()}
	}
	o.Dir, o.Fleet = st.Dir, st.Fleet()
	o.OutDir = f.out
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
// embedded) followed, as YAML comments (the output still applies), by the
// runbook of its bench Jobs unfenced and fenced (scenario.ClusterCommands,
// namespace lab-1); with no name it lists the scenarios that have one.
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
	sc, err := scenario.Find(args[0])
	if err != nil {
		return exitError{code: 2, msg: err.Error()}
	}
	b, ok := seckill.ChaosExperiment(args[0])
	if !ok {
		return exitError{code: 2, msg: fmt.Sprintf("scenario %s has no cluster form; these do: %s", args[0], strings.Join(seckill.ChaosExperiments(), ", "))}
	}
	cmds, err := sc.ClusterCommands(chaosNamespace)
	if err != nil {
		return fmt.Errorf("scenario chaos %s: %w", sc.Name, err)
	}
	var out strings.Builder
	out.Write(b)
	fmt.Fprintf(&out, "# The bench Jobs of %s, unfenced then fenced, on a lab of the %s topology (deploy/k8s/%s) in namespace %s:\n",
		sc.Name, sc.Topology, sc.Topology, chaosNamespace)
	for _, c := range cmds {
		out.WriteString("#   " + c + "\n")
	}
	_, err = os.Stdout.WriteString(out.String())
	return err
}

// chaosNamespace is the namespace the printed runbook uses (docs/kubernetes.md's).
const chaosNamespace = "lab-1"
