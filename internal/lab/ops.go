package lab

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/prometheus/procfs"

	"github.com/seckill-lab/seckill/exercises"
	"github.com/seckill-lab/seckill/internal/ports"
	"github.com/seckill-lab/seckill/internal/server"
	"github.com/seckill-lab/seckill/internal/stack"
	"github.com/seckill-lab/seckill/internal/supervise"
)

// Options configure New.
type Options struct {
	// Name is the lab's name (ValidName).
	Name string
	// Registry is the registry directory (default Registry("")).
	Registry string
	// Topology and Instances are the stack's (default single, 3).
	Topology  string
	Instances int
	// Dir is the run directory (default DefaultDir).
	Dir string
	// Window is where the port range is picked (default DefaultWindow).
	Window ports.Range
	// Binary is the seckill binary the instances run (default this one).
	Binary string
	// Owner is recorded as the lab's owner (default Owner()).
	Owner string
	// Out receives the stack's progress lines (default: discarded).
	Out io.Writer
	// Finder is where the servers are looked for (default: this machine).
	Finder *stack.Finder
	// For sizes the lab to an exercise (exercises.Names, or
	// exercises.ForAll): its stack runs only the servers that exercise's
	// grade needs, and MySQL. Default "": every server (as `seckill up`).
	For string

	// inSuite: the test suite's own test of labs, whose window is one of
	// the suite's ranges; other labs keep off them.
	inSuite bool
}

func (o Options) normalize() (Options, error) {
	if err := ValidName(o.Name); err != nil {
		return o, err
	}
	o.Registry = Registry(o.Registry)
	if o.Topology == "" {
		o.Topology = stack.DefaultTopology
	}
	if !slices.Contains(stack.Topologies(), o.Topology) {
		return o, fmt.Errorf("--topology %q: want %s", o.Topology, strings.Join(stack.Topologies(), " or "))
	}
	if o.Instances == 0 {
		o.Instances = stack.DefaultInstances
	}
	if o.Instances < 1 || o.Instances > stack.MaxInstances {
		return o, fmt.Errorf("--instances %d: want 1..%d", o.Instances, stack.MaxInstances)
	}
	if o.Window == (ports.Range{}) {
		o.Window = DefaultWindow
	}
	if !o.Window.Within(ports.Usable) || o.Window.Lo >= o.Window.Hi {
		return o, fmt.Errorf("ports %s: want --port-min < --port-max, both in %s (below the ephemeral ports)", o.Window, ports.Usable)
	}
	if o.Dir == "" {
		o.Dir = DefaultDir(o.Registry, o.Name)
	}
	d, err := filepath.Abs(o.Dir)
	if err != nil {
		return o, fmt.Errorf("--dir %q: %w", o.Dir, err)
	}
	o.Dir = d
	if o.Owner == "" {
		o.Owner = Owner()
	}
	if o.Out == nil {
		o.Out = io.Discard
	}
	if _, err := BackendsFor(o.For); err != nil {
		return o, err
	}
	return o, nil
}

// BackendsFor is the backends a lab sized to exercise name starts: MySQL
// and the servers its grade needs (exercises.Servers). nil for "": every
// server.
func BackendsFor(name string) ([]stack.Backend, error) {
	if name == "" {
		return nil, nil
	}
	servers, err := exercises.Servers(name)
	if err != nil {
		return nil, fmt.Errorf("--for %q: want %s or %s: %w", name, strings.Join(exercises.Names(), ", "), exercises.ForAll, err)
	}
	out := []stack.Backend{stack.BackendMySQL}
	for _, s := range servers {
		if g := server.GroupOfServer(string(s)); g != "" && !slices.Contains(out, g) {
			out = append(out, g)
		}
	}
	return out, nil
}

// New creates the lab o.Name: it picks a free port range and records the
// lab in the registry (under the registry's lock, so two at once never
// pick the same range), then starts its stack and waits until it is
// healthy. When the stack cannot start, the record goes again.
func New(ctx context.Context, o Options) (Record, *stack.State, error) {
	o, err := o.normalize()
	if err != nil {
		return Record{}, nil, err
	}
	rec, err := reserve(o)
	if err != nil {
		return Record{}, nil, err
	}
	backends, err := BackendsFor(o.For)
	if err != nil {
		return Record{}, nil, err
	}
	st, err := stack.Up(ctx, stack.Options{Dir: rec.Dir, BasePort: rec.BasePort, Topology: rec.Topology, Instances: rec.Instances,
		Binary: o.Binary, Dashboard: true, Out: o.Out, Finder: o.Finder, Backends: backends})
	if err != nil {
		_ = os.Remove(recordPath(o.Registry, o.Name))
		return Record{}, nil, fmt.Errorf("lab %s: start its stack on base port %d in %s: %w", o.Name, rec.BasePort, rec.Dir, err)
	}
	return rec, st, nil
}

// reserve picks the lab's ports and records it, under the registry's lock.
func reserve(o Options) (Record, error) {
	if err := ensureRegistry(o.Registry); err != nil {
		return Record{}, err
	}
	unlock, err := lockRegistry(o.Registry)
	if err != nil {
		return Record{}, err
	}
	defer unlock()
	labs, err := Records(o.Registry)
	if err != nil {
		return Record{}, err
	}
	for _, r := range labs {
		if r.Name == o.Name {
			return Record{}, fmt.Errorf("lab %s already exists (owner %s, dir %s, base port %d): pick another name, or remove it first with `seckill lab rm %s`",
				r.Name, r.Owner, r.Dir, r.BasePort, r.Name)
		}
		if r.Dir == o.Dir {
			return Record{}, fmt.Errorf("--dir %s is lab %s's: give another --dir", o.Dir, r.Name)
		}
	}
	if st, err := stack.Load(o.Dir); err == nil {
		for _, c := range st.Components {
			if stack.Alive(c) {
				return Record{}, fmt.Errorf("a stack already runs in %s (base port %d): stop it with `seckill down --dir %s`, or give another --dir", o.Dir, st.BasePort, o.Dir)
			}
		}
	}
	as := slices.Concat(labRanges(labs, ""), testRunRanges(liveTestRuns(o.Registry), 0), sideRanges(liveSides(o.Registry)))
	if !o.inSuite {
		as = append(as, suiteRanges(0, "the test suite (make test, CI)")...)
		as = append(as, avoid{ports.FreeRange, "the tests' free ports"})
	}
	base, err := pickBase(o.Window, as, ports.Taken)
	if err != nil {
		return Record{}, err
	}
	rec := Record{Name: o.Name, Owner: o.Owner, Dir: o.Dir, BasePort: base, Topology: o.Topology, Instances: o.Instances, Created: time.Now().UTC().Truncate(time.Second)}
	if err := writeJSON(recordPath(o.Registry, o.Name), rec); err != nil {
		return Record{}, err
	}
	return rec, nil
}

// Remove stops lab name's stack and removes its record; with purge, its
// run directory too.
func Remove(ctx context.Context, reg, name string, purge bool, out io.Writer) error {
	reg = Registry(reg)
	r, err := Load(reg, name)
	if err != nil {
		return err
	}
	if err := stack.Down(ctx, r.Dir, out); err != nil {
		return fmt.Errorf("lab %s: %w", name, err)
	}
	if err := os.Remove(recordPath(reg, name)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("lab %s: remove its record: %w (the registry is sticky: its owner %s or root removes it)", name, err, r.Owner)
	}
	if purge {
		if h, _ := os.UserHomeDir(); r.Dir == "/" || r.Dir == h || r.Dir == filepath.Clean(reg) {
			return fmt.Errorf("lab %s: --purge: refusing to delete %s", name, r.Dir)
		}
		if err := os.RemoveAll(r.Dir); err != nil {
			return fmt.Errorf("lab %s: --purge: %w", name, err)
		}
	}
	return nil
}

// Lab states (Status.State).
const (
	Running = "running" // every component healthy
	Stopped = "stopped" // nothing runs
	Partial = "partial" // some components down or unhealthy
)

// Status is a lab as `lab list` shows it.
type Status struct {
	Record
	// State is Running, Stopped or Partial; Health says what is wrong
	// when partial ("inst-2: not running").
	State  string `json:"state"`
	Health string `json:"health,omitempty"`
	// RSSBytes is the resident memory of every process of the lab's
	// components (each one's process group: nginx's workers too).
	RSSBytes int64 `json:"rss_bytes"`
	// Grade is the last grade (nil: never graded).
	Grade *Grade `json:"grade,omitempty"`
}

// List checks every lab in the registry (concurrently).
func List(ctx context.Context, reg string) ([]Status, error) {
	labs, err := Records(Registry(reg))
	if err != nil {
		return nil, err
	}
	rss := groupRSS()
	out := make([]Status, len(labs))
	var wg sync.WaitGroup
	for i, r := range labs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			out[i] = status(ctx, r, rss)
		}()
	}
	wg.Wait()
	return out, nil
}

func status(ctx context.Context, r Record, rss map[int]int64) Status {
	s := Status{Record: r, State: Stopped}
	if g, ok, err := ReadGrade(r.Dir); err == nil && ok {
		s.Grade = &g
	}
	_, cs, err := stack.Status(ctx, r.Dir)
	if errors.Is(err, stack.ErrNotRunning) {
		return s
	}
	if err != nil {
		// Another user's lab: its admin token is theirs (mode 0600), but
		// state.json tells which processes run.
		return aliveOnly(s, rss, err)
	}
	var running int
	var bad []string
	for _, c := range cs {
		if c.Running {
			running++
			s.RSSBytes += rss[c.Pid]
		}
		if !c.Healthy {
			bad = append(bad, c.Name+": "+c.Health)
		}
	}
	switch {
	case running > 0 && len(bad) == 0:
		s.State = Running
	case running > 0:
		s.State, s.Health = Partial, strings.Join(bad, "; ")
	}
	return s
}

// aliveOnly fills s from the lab's state.json alone: which components
// run, not whether they answer (why not: err).
func aliveOnly(s Status, rss map[int]int64, err error) Status {
	s.Health = "health not checked: " + err.Error()
	b, rerr := os.ReadFile(filepath.Join(s.Dir, "state.json"))
	var st stack.State
	if rerr != nil || json.Unmarshal(b, &st) != nil {
		return s
	}
	running := 0
	for _, c := range st.Components {
		if stack.Alive(c) {
			running++
			s.RSSBytes += rss[c.Pid]
		}
	}
	switch {
	case running == len(st.Components) && running > 0:
		s.State = Running
	case running > 0:
		s.State = Partial
	}
	return s
}

// groupRSS sums the resident memory of every process by process group
// (a component leads its own group: its pid is the group's id).
func groupRSS() map[int]int64 {
	return supervise.GroupSums(func(st procfs.ProcStat) int64 { return int64(st.ResidentMemory()) })
}

// WriteTable prints the labs for the instructor: name, owner, run
// directory, base port, state, memory, last grade.
func WriteTable(w io.Writer, ss []Status) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tOWNER\tDIR\tBASE\tSTATE\tRSS\tGRADE")
	var total int64
	for _, s := range ss {
		g := "-"
		if s.Grade != nil {
			g = s.Grade.String()
		}
		rss := "-"
		if s.RSSBytes > 0 {
			rss = fmt.Sprintf("%d MiB", s.RSSBytes>>20)
		}
		total += s.RSSBytes
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s\t%s\t%s\n", s.Name, s.Owner, s.Dir, s.BasePort, s.State, rss, g)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if len(ss) == 0 {
		_, err := fmt.Fprintln(w, "no labs: create one with `seckill lab new NAME`")
		return err
	}
	for _, s := range ss {
		if s.Health != "" {
			fmt.Fprintf(w, "%s: %s\n", s.Name, s.Health)
		}
	}
	_, err := fmt.Fprintf(w, "%d labs, %d MiB resident in all\n", len(ss), total>>20)
	return err
}

// WriteJSON prints the labs as a JSON array.
func WriteJSON(w io.Writer, ss []Status) error {
	if ss == nil {
		ss = []Status{}
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(ss)
}

// WriteWelcome prints what the student needs: the URLs, the lessons, the
// environment line, how to stop.
func WriteWelcome(w io.Writer, r Record, st *stack.State) error {
	_, dashPort, _ := net.SplitHostPort(st.DashboardAddr())
	_, err := fmt.Fprintf(w, `
lab %[1]s is running (owner %[2]s): %[3]s topology, %[4]d instance(s), ports %[5]s (lessons 26 and 28 take free ports for their own stacks while they run)
  shop (nginx):   %[6]s/api/v1/purchase   (health: %[6]s/healthz)
  dashboard:      http://%[7]s/
  lessons:        seckill lesson list --dir %[8]s   then   seckill lesson 1 --dir %[8]s
  in your shell:  source %[8]s/env.sh
  they listen on 127.0.0.1: from your laptop, ssh -L %[9]s:127.0.0.1:%[9]s this-server, then http://127.0.0.1:%[9]s/
  stop it:        seckill lab rm %[1]s   (every lab: seckill lab list)
`, r.Name, r.Owner, r.Topology, r.Instances, r.Footprint(), st.NginxURL(), st.DashboardAddr(), r.Dir, dashPort)
	return err
}
