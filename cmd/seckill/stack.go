package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/seckill-lab/seckill/internal/config"
	"github.com/seckill-lab/seckill/internal/netfault"
	"github.com/seckill-lab/seckill/internal/server"
	"github.com/seckill-lab/seckill/internal/stack"
	"github.com/seckill-lab/seckill/stock"
)

// The local stack commands: flags map to internal/stack; the logic lives
// there.

func stackFlags(name string) (*flag.FlagSet, *string) {
	fs := newFlagSet(name)
	dir := fs.String("dir", stack.DefaultDir, "run directory of the stack")
	return fs, dir
}

func noArgs(fs *flag.FlagSet) error {
	if fs.NArg() > 0 {
		return exitError{code: 2, msg: fmt.Sprintf("%s: unexpected argument %q", fs.Name(), fs.Arg(0))}
	}
	return nil
}

func parse(fs *flag.FlagSet, args []string) error {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return exitError{code: 2, msg: err.Error()}
	}
	return nil
}

func runUp(ctx context.Context, args []string) error {
	fs, dir := stackFlags("up")
	instances := fs.Int("instances", stack.DefaultInstances, "number of 'seckill serve' instances behind nginx, 1.."+strconv.Itoa(stack.MaxInstances))
	strategy := newAliasFlag(fs, "strategy", "strategies", stack.DefaultStrategy, "starting strategy of the instances ($"+config.EnvStrategy+")")
	proxy := fs.Bool("proxy", false, "put the fault proxy (Toxiproxy) between the instances and the servers")
	rtt := fs.String("rtt", "loopback", "round trip on every link: a profile or a duration, e.g. 0.5ms")
	durability := fs.String("durability", server.DurabilityDefault, "durability of the servers' writes: default, fsync or none")
	priority := fs.String("priority", stack.PriorityServersFirst, "CPU priorities on this machine: servers-first or equal")
	topology := fs.String("topology", stack.DefaultTopology, "single (one node per server) or ha (replicated servers)")
	basePort := fs.Int("base-port", stack.DefaultBasePort, "base port B: every port is B plus an offset (seckill status lists them)")
	binary := fs.String("binary", "", "seckill binary the instances run (default: this one)")
	backendList := fs.String("backends", "", "servers to start, of "+stack.BackendNames()+" (default all)")
	dashboard := fs.Bool("dashboard", true, "start the live dashboard at http://127.0.0.1:B+88 (--dashboard=false: none)")
	etcd := fs.String("etcd", "", "the etcd server to run (default: the lab's bin/etcd, else the first on PATH)")
	if err := parse(fs, args); err != nil {
		return err
	}
	if err := noArgs(fs); err != nil {
		return err
	}
	backends, err := stack.ParseBackends(*backendList)
	if err != nil {
		return exitError{code: 2, msg: err.Error()}
	}
	if !slices.Contains(stack.Topologies(), *topology) {
		return exitError{code: 2, msg: fmt.Sprintf("up: --topology %q: want %s", *topology, strings.Join(stack.Topologies(), " or "))}
	}
	if _, err := server.ValidDurability(*durability); err != nil {
		return exitError{code: 2, msg: "up: " + err.Error()}
	}
	if _, err := stack.ValidPriority(*priority); err != nil {
		return exitError{code: 2, msg: "up: " + err.Error()}
	}
	rttProfile, rttDelay, err := netfault.ParseRTT(*rtt)
	if err != nil {
		return exitError{code: 2, msg: "up: --" + err.Error()}
	}
	if err := checkBounds(fs,
		bound{name: "instances", min: 1, max: stack.MaxInstances, omit: strconv.Itoa(stack.DefaultInstances)},
		bound{name: "base-port", min: stack.MinBasePort, max: stack.MaxBasePort, omit: strconv.Itoa(stack.DefaultBasePort)},
	); err != nil {
		return err
	}
	name, err := strategy.get(fs)
	if err != nil {
		return err
	}
	// Checked here too so a bad name stops before any server starts.
	if err := (stock.Config{Name: name}).Validate(); err != nil {
		return exitError{code: 2, msg: fmt.Sprintf("up: --strategy: %v", err)}
	}
	o := stack.Options{
		Dir: *dir, BasePort: *basePort, Topology: *topology, Durability: *durability, Priority: *priority, Proxy: *proxy, Strategy: name,
		RTT:    rttDelay,
		Binary: *binary, Dashboard: *dashboard, Out: os.Stdout, Backends: backends,
	}
	if setFlags(fs)["instances"] {
		o.Instances = *instances
	}
	if *etcd != "" {
		f := stack.SystemFinder()
		f.Pin = map[string]string{"etcd": *etcd}
		o.Finder = &f
	}
	if setFlags(fs)["rtt"] {
		o.RTTProfile = rttProfile // loopback too: the links through the proxy, its cost measured
	}
	st, err := stack.Ensure(ctx, o, os.Stderr)
	if errors.Is(err, stack.ErrAlreadyRunning) {
		fmt.Printf("the stack in %s is already running (topology %s, base port %d, %d instances); nothing changed\n",
			st.Dir, st.Topology, st.BasePort, len(st.Instances()))
	} else if err != nil {
		return fmt.Errorf("up: %w", err)
	}
	return printStatus(ctx, st.Dir, false)
}

func printStatus(ctx context.Context, dir string, asJSON bool) error {
	st, cs, err := stack.Status(ctx, dir)
	if err != nil {
		return err
	}
	if asJSON {
		err = stack.WriteJSON(os.Stdout, cs)
	} else {
		err = stack.WriteTable(os.Stdout, st, cs)
	}
	if err != nil {
		return err
	}
	if !stack.AllHealthy(cs) {
		return exitError{code: 1}
	}
	return nil
}

func runDown(ctx context.Context, args []string) error {
	fs, dir := stackFlags("down")
	if err := parse(fs, args); err != nil {
		return err
	}
	if err := noArgs(fs); err != nil {
		return err
	}
	return stack.Down(ctx, *dir, os.Stdout)
}

func runStatus(ctx context.Context, args []string) error {
	fs, dir := stackFlags("status")
	asJSON := fs.Bool("json", false, "print JSON (name, kind, address, pid, health, role, rss_bytes per component)")
	if err := parse(fs, args); err != nil {
		return err
	}
	if err := noArgs(fs); err != nil {
		return err
	}
	return printStatus(ctx, *dir, *asJSON)
}

func runLogs(ctx context.Context, args []string) error {
	fs, dir := stackFlags("logs")
	n := fs.Int("n", 100, "number of last lines to print (0: the whole log)")
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "usage: seckill logs [--dir DIR] [-n LINES] COMPONENT")
		fs.PrintDefaults()
	}
	if err := parse(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 1 { // flags after the component: `seckill logs nginx -n 5`
		name := fs.Arg(0)
		if err := parse(fs, fs.Args()[1:]); err != nil {
			return err
		}
		if fs.NArg() == 0 {
			return stack.Logs(os.Stdout, *dir, name, *n)
		}
	}
	if fs.NArg() != 1 {
		return exitError{code: 2, msg: "usage: seckill logs [--dir DIR] [-n LINES] COMPONENT (see `seckill status` for the names)"}
	}
	return stack.Logs(os.Stdout, *dir, fs.Arg(0), *n)
}

func runEnv(ctx context.Context, args []string) error {
	fs, dir := stackFlags("env")
	if err := parse(fs, args); err != nil {
		return err
	}
	if err := noArgs(fs); err != nil {
		return err
	}
	s, err := stack.Env(*dir)
	if err != nil {
		return err
	}
	fmt.Print(s)
	return nil
}

func runRestart(ctx context.Context, args []string) error {
	fs, dir := stackFlags("restart")
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "usage: seckill restart [--dir DIR] COMPONENT\n\nStops one component and starts it again (a Redis comes back empty).")
		fs.PrintDefaults()
	}
	pos, err := parseInterleaved(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return exitError{code: 2, msg: "usage: seckill restart [--dir DIR] COMPONENT (see `seckill status` for the names)"}
	}
	name := pos[0]
	t0 := time.Now()
	if err := stack.Restart(ctx, *dir, name); err != nil {
		if errors.Is(err, stack.ErrUnknownComponent) {
			return exitError{code: 2, msg: err.Error()}
		}
		return err
	}
	fmt.Printf("%s restarted, healthy in %.1fs\n", name, time.Since(t0).Seconds())
	return nil
}
