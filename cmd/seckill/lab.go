package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"strconv"

	"github.com/seckill-lab/seckill/internal/lab"
	"github.com/seckill-lab/seckill/internal/ports"
	"github.com/seckill-lab/seckill/internal/stack"
)

// runLab maps `seckill lab new|list|rm|test-shift` to package lab.
func runLab(ctx context.Context, args []string) error {
	usage := "usage: seckill lab new NAME [--for EXERCISE] [--topology single|ha] [--instances N]\n" +
		"                       [--dir DIR] [--port-min P] [--port-max P]\n" +
		"       seckill lab list [--json]\n" +
		"       seckill lab rm NAME [--purge]\n" +
		"       seckill lab test-shift [--pid PID]   (scripts/test.sh: the test suite's port shift)\n\n" +
		"One lab (a stack on ports of its own) per student on one server, recorded in a machine-wide registry\n" +
		"(--registry, default $" + lab.EnvRegistry + " or " + lab.DefaultRegistry + ")."
	fs := newFlagSet("lab")
	reg := fs.String("registry", "", "registry directory of the labs (default $"+lab.EnvRegistry+", else "+lab.DefaultRegistry+")")
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), usage)
		fs.PrintDefaults()
	}
	if len(args) == 0 {
		fs.Usage()
		return exitError{code: 2, msg: "lab: say new NAME, list, rm NAME or test-shift"}
	}
	what, rest := args[0], args[1:]
	switch what {
	case "-h", "--help", "help":
		fs.Usage()
		return flag.ErrHelp
	case "new":
		return labNew(ctx, fs, reg, rest)
	case "list", "ls":
		return labList(ctx, fs, reg, rest)
	case "rm":
		return labRm(ctx, fs, reg, rest)
	case "test-shift":
		return labTestShift(fs, reg, rest)
	}
	fs.Usage()
	return exitError{code: 2, msg: fmt.Sprintf("lab: unknown subcommand %q: say new NAME, list, rm NAME or test-shift", what)}
}

// oneName parses args (flags before or after the name) and returns the
// one name.
func oneName(fs *flag.FlagSet, args []string, sub string) (string, error) {
	pos, err := parseInterleaved(fs, args)
	if err != nil {
		return "", err
	}
	if len(pos) != 1 {
		return "", exitError{code: 2, msg: fmt.Sprintf("usage: seckill lab %s NAME [flags] (seckill lab -h)", sub)}
	}
	name, note, err := lab.NormalizeName(pos[0])
	if err != nil {
		return "", exitError{code: 2, msg: "lab " + sub + ": " + err.Error()}
	}
	if note != "" {
		fmt.Fprintln(os.Stderr, "lab "+sub+": "+note)
	}
	return name, nil
}

func labNew(ctx context.Context, fs *flag.FlagSet, reg *string, args []string) error {
	topology := fs.String("topology", stack.DefaultTopology, "single or ha (as seckill up)")
	instances := fs.Int("instances", stack.DefaultInstances, "number of 'seckill serve' instances, 1.."+strconv.Itoa(stack.MaxInstances))
	dir := fs.String("dir", "", "run directory of the lab's stack (default $HOME/"+lab.DirsRoot+"/NAME)")
	portMin := fs.Int("port-min", lab.DefaultWindow.Lo, "lowest port the lab's stack may take")
	portMax := fs.Int("port-max", lab.DefaultWindow.Hi, "highest port the lab may take")
	binary := fs.String("binary", "", "seckill binary the instances run (default: this one)")
	forEx := fs.String("for", "", "size the lab to an exercise: only the servers its grade needs (default: every one)")
	name, err := oneName(fs, args, "new")
	if err != nil {
		return err
	}
	if err := checkBounds(fs,
		bound{name: "instances", min: 1, max: stack.MaxInstances, omit: strconv.Itoa(stack.DefaultInstances)},
		bound{name: "port-min", min: ports.Usable.Lo, max: ports.Usable.Hi, omit: strconv.Itoa(lab.DefaultWindow.Lo)},
		bound{name: "port-max", min: ports.Usable.Lo, max: ports.Usable.Hi, omit: strconv.Itoa(lab.DefaultWindow.Hi)},
	); err != nil {
		return err
	}
	if *portMin >= *portMax {
		return exitError{code: 2, msg: fmt.Sprintf("lab new: --port-min %d must be below --port-max %d", *portMin, *portMax)}
	}
	if *topology != stack.TopologySingle && *topology != stack.TopologyHA {
		return exitError{code: 2, msg: fmt.Sprintf("lab new: --topology %q: want single or ha", *topology)}
	}
	if _, err := lab.BackendsFor(*forEx); err != nil {
		return exitError{code: 2, msg: "lab new: " + err.Error()}
	}
	o := lab.Options{Name: name, Registry: *reg, Topology: *topology, Instances: *instances, Dir: *dir,
		Window: ports.Range{Lo: *portMin, Hi: *portMax}, Binary: *binary, Out: os.Stdout, For: *forEx}
	rec, st, err := lab.New(ctx, o)
	if err != nil {
		return err
	}
	return lab.WriteWelcome(os.Stdout, rec, st)
}

func labList(ctx context.Context, fs *flag.FlagSet, reg *string, args []string) error {
	asJSON := fs.Bool("json", false, "print JSON (each lab's record, state, rss_bytes and grade)")
	if err := parse(fs, args); err != nil {
		return err
	}
	if err := noArgs(fs); err != nil {
		return err
	}
	ss, err := lab.List(ctx, *reg)
	if err != nil {
		return err
	}
	if *asJSON {
		return lab.WriteJSON(os.Stdout, ss)
	}
	return lab.WriteTable(os.Stdout, ss)
}

func labRm(ctx context.Context, fs *flag.FlagSet, reg *string, args []string) error {
	purge := fs.Bool("purge", false, "also delete the lab's run directory (its data and logs)")
	name, err := oneName(fs, args, "rm")
	if err != nil {
		return err
	}
	if err := lab.Remove(ctx, *reg, name, *purge, os.Stdout); err != nil {
		return err
	}
	fmt.Printf("lab %s removed\n", name)
	return nil
}

func labTestShift(fs *flag.FlagSet, reg *string, args []string) error {
	pid := fs.Int("pid", 0, "process of the make test run to record the shift for, while it lives (0: pick only)")
	if err := parse(fs, args); err != nil {
		return err
	}
	if err := noArgs(fs); err != nil {
		return err
	}
	s, err := lab.TestShift(lab.Registry(*reg), *pid)
	if err != nil {
		return err
	}
	fmt.Fprintln(os.Stderr, s)
	fmt.Println(s.Shift)
	return nil
}
