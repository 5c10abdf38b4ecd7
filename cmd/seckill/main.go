// Command seckill is the flash-sale oversell lab: it serves the stock API
// (serve), runs the local stack (up, down, status, logs, env) and one
// per student on a shared server (lab), drives the benchmark harness
// (bench) and the fleet by hand (buy, strategy, reset, events), and says
// which build it is (version). Each subcommand only maps flags to the
// options of a package that holds the logic.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"runtime"
	"runtime/pprof"
	"sort"
	"syscall"

	"github.com/seckill-lab/seckill/exercises"
)

// command is one subcommand: it parses args and runs until ctx is done.
type command struct {
	summary string
	run     func(ctx context.Context, args []string) error
}

var commands = map[string]command{
	"serve":      {"run one stock service instance (Gin HTTP API)", runServe},
	"up":         {"start the local lab stack (servers, instances, nginx)", runUp},
	"down":       {"stop everything `up` started", runDown},
	"doctor":     {"check that the servers `up` runs are installed, and say how to install the rest", runDoctor},
	"status":     {"show the stack's components and their health", runStatus},
	"logs":       {"show a component's log", runLogs},
	"env":        {"print the stack's addresses as shell exports", runEnv},
	"fault":      {"inject a fault into the stack (pause, kill, restart, partition, latency, clock, failover, heal)", runFault},
	"proxy":      {"run the stack's fault proxy (Toxiproxy; started by `up --proxy`)", runProxy},
	"scenario":   {"run a failure story (list, run NAME) and compare protections", runScenario},
	"restart":    {"stop one component of the stack and start it again", runRestart},
	"dashboard":  {"serve the live workshop dashboard of a stack (started by `up`)", runDashboard},
	"grade":      {"score your lock of a workshop exercise (exercises/) on your stack: conformance, bench, faults", runGrade},
	"lesson":     {"the workshop: the source articles' story as lessons (list, N, all), each run against the stack", runLesson},
	"bench":      {"fire purchases at the fleet, strategy by strategy, and report", runBench},
	"report":     {"print a saved bench or course report again (its table, a compact one, its conclusion)", runReport},
	"strategies": {"list the strategies from the registry (--markdown: docs/strategies.md's table)", runStrategies},
	"buy":        {"one purchase through nginx; prints the order or the error", runBuy},
	"strategy":   {"show every instance's strategy, or switch them all (strategy NAME [knobs])", runStrategy},
	"reset":      {"reset a goods' stock and orders, then print its audit", runReset},
	"events":     {"the instances' lock events as text, merged (-f: follow)", runEvents},
	"lab":        {"one lab per student on one server: lab new NAME (free ports, its stack, its URLs), lab list, lab rm NAME", runLab},
	"soak":       {"a steady load for a long time (--for 1h): RSS, goroutines and fds sampled, leaks flagged", runSoak},
	"nemesis":    {"a steady load on the ha stack while seeded faults kill, pause, cut and fail over its servers", runNemesis},
	"version":    {"print the module version, the commit it was built from and the Go that built it", runVersion},
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:])
	stop()
	if err != nil {
		var ee exitError
		if errors.As(err, &ee) {
			if ee.msg != "" {
				fmt.Fprintln(os.Stderr, "seckill:", ee.msg)
			}
			os.Exit(ee.code)
		}
		fmt.Fprintln(os.Stderr, "seckill:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string) error {
	// The workshop's exercises join the lab under names of their own
	// (catalog.Extend): every instance and every command knows them.
	if err := exercises.Register(); err != nil {
		return fmt.Errorf("register the workshop exercises: %w", err)
	}
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		usage()
		if len(args) == 0 {
			return exitError{code: 2}
		}
		return nil
	}
	cmd, ok := commands[args[0]]
	if !ok {
		cmd, ok = hidden[args[0]]
	}
	if !ok {
		usage()
		return exitError{code: 2, msg: fmt.Sprintf("unknown command %q", args[0])}
	}
	stopProfile, err := cpuProfile(os.Getenv(EnvCPUProfile))
	if err != nil {
		return err
	}
	err = cmd.run(ctx, args[1:])
	stopProfile()
	if perr := heapProfile(os.Getenv(EnvHeapProfile)); perr != nil {
		err = errors.Join(err, perr)
	}
	if errors.Is(err, flag.ErrHelp) {
		return nil
	}
	return err
}

func usage() {
	fmt.Fprintln(os.Stderr, "usage: seckill COMMAND [flags]\n\ncommands:")
	names := make([]string, 0, len(commands))
	for n := range commands {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(os.Stderr, "  %-10s %s\n", n, commands[n].summary)
	}
	fmt.Fprintln(os.Stderr, "\nRun `seckill COMMAND -h` for a command's flags.")
}

// exitError ends the process with code after printing msg (if any).
type exitError struct {
	code int
	msg  string
}

func (e exitError) Error() string { return e.msg }

// EnvCPUProfile names a file to which any command writes a CPU profile of
// itself (runtime/pprof; read it with `go tool pprof bin/seckill FILE`).
// The instances serve theirs at /admin/debug/pprof/profile.
const EnvCPUProfile = "SECKILL_CPU_PROFILE"

// EnvHeapProfile names a file to which any command writes a heap profile
// of itself when it ends: every allocation it made, by where it was made
// (`go tool pprof -sample_index=alloc_space bin/seckill FILE`), and what
// it still held.
const EnvHeapProfile = "SECKILL_HEAP_PROFILE"

// heapProfile writes the heap profile to path ("" writes none).
func heapProfile(path string) error {
	if path == "" {
		return nil
	}
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("%s: %w", EnvHeapProfile, err)
	}
	runtime.GC() // the profile's in-use figures are as of the last GC
	if err := pprof.Lookup("heap").WriteTo(f, 0); err != nil {
		f.Close()
		return fmt.Errorf("%s: write the profile: %w", EnvHeapProfile, err)
	}
	return f.Close()
}

// cpuProfile starts a CPU profile to path ("" profiles nothing) and
// returns the function that ends it.
func cpuProfile(path string) (func(), error) {
	if path == "" {
		return func() {}, nil
	}
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", EnvCPUProfile, err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("%s: start the profile: %w", EnvCPUProfile, err)
	}
	return func() {
		pprof.StopCPUProfile()
		f.Close()
	}, nil
}
