package stack

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/seckill-lab/seckill/bench/adminclient"
	"github.com/seckill-lab/seckill/bench/fleet"
	"github.com/seckill-lab/seckill/internal/server"
	"github.com/seckill-lab/seckill/internal/supervise"
	"github.com/seckill-lab/seckill/stock"
)

// ComponentStatus is a component with its health and memory.
type ComponentStatus struct {
	Component
	Running bool
	Healthy bool
	Health  string // "ok", or why not
	// Role is the component's role in its replication group (master or
	// slave for the Redis primary and replica, leader or follower for a
	// member of a quorum group, standalone for a standalone server), as
	// its server description looks it up; empty for the others and when
	// it could not be read.
	Role     string
	RSSBytes int64
	// Strategy is, for a running instance, the strategy it runs now (GET
	// /admin/strategy; it may have been switched since it started), as
	// DescribeStrategy writes it, or why it could not be read.
	Strategy string
	// IdleProbe is, for the server node the stack probed at `up`, its
	// idle latencies (State.Probes); nil for the others.
	IdleProbe *fleet.ServerProbe
}

// Status loads the stack in dir and checks every component (concurrently,
// each check bounded by a few seconds).
func Status(ctx context.Context, dir string) (*State, []ComponentStatus, error) {
	st, err := Load(dir)
	if err != nil {
		return nil, nil, err
	}
	out := make([]ComponentStatus, len(st.Components))
	var wg sync.WaitGroup
	for i, c := range st.Components {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cs := ComponentStatus{Component: c, Running: alive(c), IdleProbe: st.idleProbe(c.Name)}
			switch {
			case !cs.Running:
				cs.Health = "not running"
			default:
				cs.RSSBytes = supervise.RSS(c.Pid)
				cctx, cancel := context.WithTimeout(ctx, 3*time.Second)
				err := checkComponent(cctx, st, c)
				cancel()
				if err != nil {
					cs.Health = "unhealthy: " + err.Error()
				} else {
					cs.Healthy, cs.Health = true, "ok"
				}
				rctx, cancel := context.WithTimeout(ctx, 3*time.Second)
				cs.Role, _ = componentRole(rctx, c) // unknown role: empty
				cancel()
				if c.Kind == KindInstance {
					sctx, cancel := context.WithTimeout(ctx, 3*time.Second)
					cfg, err := InstanceStrategy(sctx, c.URL(), st.AdminToken)
					cancel()
					cs.Strategy = DescribeStrategy(cfg)
					if err != nil {
						cs.Strategy = "unknown: " + err.Error()
					}
				}
			}
			out[i] = cs
		}()
	}
	wg.Wait()
	return st, out, nil
}

// AllHealthy reports whether every component is healthy.
func AllHealthy(cs []ComponentStatus) bool {
	for _, c := range cs {
		if !c.Healthy {
			return false
		}
	}
	return len(cs) > 0
}

// WriteTable prints the components as a table with health and RSS, a
// total, and where the logs and the admin token are.
func WriteTable(w io.Writer, st *State, cs []ComponentStatus) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "COMPONENT\tKIND\tADDRESS\tPID\tHEALTH\tROLE\tSTRATEGY\tRSS\tLOG")
	var total int64
	for _, c := range cs {
		total += c.RSSBytes
		health := c.Health
		if len(health) > 60 {
			health = health[:60] + "..."
		}
		strategy := c.Strategy
		if len(strategy) > 60 {
			strategy = strategy[:60] + "..."
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s\t%s\t%s\t%s\t%s\n", c.Name, c.Kind, c.Addr, c.Pid, health, c.Role, strategy, fmtBytes(c.RSSBytes), relPath(c.Log))
	}
	for _, b := range st.Absent() {
		fmt.Fprintf(tw, "%s\t%s\t-\t-\tnot started (up --backends)\t\t\t-\t\n", b, b)
	}
	fmt.Fprintf(tw, "total\t\t\t\t\t\t\t%s\t\n", fmtBytes(total))
	if err := tw.Flush(); err != nil {
		return fmt.Errorf("write table: %w", err)
	}
	fmt.Fprintf(w, "\ntopology:    %s\n", st.Topology)
	fmt.Fprintf(w, "durability:  %s (%s)\n", st.DurabilityLevel(), strings.Join(st.DurabilityLines(), "; "))
	fmt.Fprintf(w, "rtt:         %s\n", st.RTTLine())
	writeProbes(w, st)
	fmt.Fprintf(w, "priority:    %s\n", st.PriorityLine())
	fmt.Fprintf(w, "nginx:       %s (access log %s)\n", st.NginxURL(), relPath(st.NginxAccessLog))
	if d, ok := st.Component(DashboardName); ok {
		fmt.Fprintf(w, "dashboard:   http://%s (open it in a browser; seckill dashboard --dir %s serves another)\n", d.Addr, relPath(st.Dir))
	}
	fmt.Fprintf(w, "strategy:    %s (the stack started with it; an instance started later takes a running one's setting; STRATEGY is what each instance runs now)\n", st.Strategy)
	fmt.Fprintf(w, "admin token: %s, in %s\n", st.AdminTokenSource, relPath(st.AdminTokenFile))
	fmt.Fprintf(w, "environment: source %s   (or: seckill env --dir %s)\n", relPath(filepath.Join(st.Dir, envFile)), relPath(st.Dir))
	if fs, _ := ActiveFaults(st.Dir); len(fs) > 0 {
		for _, f := range fs {
			fmt.Fprintf(w, "fault on:    %s %s since %s (undo: seckill fault heal)\n", f.Kind, f.Component, f.Since.Format(time.TimeOnly))
		}
	}
	for _, c := range cs {
		if !c.Healthy {
			fmt.Fprintf(w, "%s: %s\n", c.Name, c.Health)
		}
	}
	return nil
}

// statusJSON is one component in `status --json`.
type statusJSON struct {
	Name     string `json:"name"`
	Kind     Kind   `json:"kind"`
	Address  string `json:"address"`
	Pid      int    `json:"pid"`
	Health   string `json:"health"`
	Healthy  bool   `json:"healthy"`
	Role     string `json:"role"`
	RSSBytes int64  `json:"rss_bytes"`
	Log      string `json:"log"`
	Strategy string `json:"strategy,omitempty"`
	// IdleProbe is the server node's idle latencies measured at `up`.
	IdleProbe *fleet.ServerProbe `json:"idle_probe,omitempty"`
}

// idleProbe returns the probes of the component named name, nil when it
// was not probed.
func (s *State) idleProbe(name string) *fleet.ServerProbe {
	if s.Probes == nil {
		return nil
	}
	for _, sp := range s.Probes.Servers {
		if sp.Component == name {
			return &sp
		}
	}
	return nil
}

// WriteJSON prints the statuses as a JSON array.
func WriteJSON(w io.Writer, cs []ComponentStatus) error {
	out := make([]statusJSON, 0, len(cs))
	for _, c := range cs {
		out = append(out, statusJSON{Name: c.Name, Kind: c.Kind, Address: c.Addr, Pid: c.Pid,
			Health: c.Health, Healthy: c.Healthy, Role: c.Role, RSSBytes: c.RSSBytes, Log: c.Log, Strategy: c.Strategy, IdleProbe: c.IdleProbe})
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	if err := enc.Encode(out); err != nil {
		return fmt.Errorf("write json: %w", err)
	}
	return nil
}

// InstanceStrategy reads the strategy setting the instance at base runs
// now (GET /admin/strategy with the admin token).
func InstanceStrategy(ctx context.Context, base, token string) (stock.Config, error) {
	var cfg stock.Config
	ctx, cancel := context.WithTimeout(ctx, httpClient.Timeout)
	defer cancel()
	err := adminclient.New(token).Do(ctx, http.MethodGet, base, "/admin/strategy", nil, &cfg)
	return cfg, err
}

// DescribeStrategy writes a setting as its name and every knob that
// differs from the name's defaults (stock.Config.Knobs): "redis (work
// 250ms, ttl 100ms, no watchdog, no lease check)".
func DescribeStrategy(c stock.Config) string {
	if c.Name == "" {
		return ""
	}
	var knobs []string
	for _, k := range c.Knobs() {
		knobs = append(knobs, k.String())
	}
	if len(knobs) == 0 {
		return c.Name
	}
	return c.Name + " (" + strings.Join(knobs, ", ") + ")"
}

func fmtBytes(b int64) string {
	if b <= 0 {
		return "-"
	}
	return fmt.Sprintf("%.1f MiB", float64(b)/(1<<20))
}

// relPath shortens path relative to the working directory when it is
// inside it.
func relPath(p string) string {
	wd, err := os.Getwd()
	if err != nil || p == "" {
		return p
	}
	if r, err := filepath.Rel(wd, p); err == nil && !strings.HasPrefix(r, "..") {
		return r
	}
	return p
}

// Logs writes the last n lines (all when n <= 0) of the named component's
// log to w; "nginx-access" is nginx's access log.
func Logs(w io.Writer, dir, name string, n int) error {
	st, err := Load(dir)
	if err != nil {
		return err
	}
	path := ""
	if c, ok := st.Component(name); ok {
		path = c.Log
	} else if name == "nginx-access" {
		path = st.NginxAccessLog
	} else {
		names := []string{}
		for _, c := range st.Components {
			names = append(names, c.Name)
		}
		names = append(names, "nginx-access")
		sort.Strings(names)
		return fmt.Errorf("unknown component %q; components: %s", name, strings.Join(names, ", "))
	}
	s, err := supervise.Tail(path, n)
	if errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("%s has no log yet (%s)", name, path)
	}
	if err != nil {
		return fmt.Errorf("read %s log: %w", name, err)
	}
	_, err = io.WriteString(w, s)
	return err
}

// Down stops every component of the stack in dir (the dashboard, nginx
// and the instances, then the servers), by process group, and removes state.json and
// env.sh. A stack that is not running is not an error: it says so on out.
func Down(ctx context.Context, dir string, out io.Writer) error {
	if out == nil {
		out = io.Discard
	}
	d, err := absDir(dir)
	if err != nil {
		return err
	}
	if _, err := os.Stat(filepath.Join(d, stateFile)); errors.Is(err, fs.ErrNotExist) {
		fmt.Fprintf(out, "stack in %s is not running\n", d)
		return nil
	}
	unlock, err := lockDir(ctx, d)
	if err != nil {
		return err
	}
	defer unlock()
	st, err := Load(d)
	if errors.Is(err, ErrNotRunning) {
		fmt.Fprintf(out, "stack in %s is not running\n", d)
		return nil
	}
	if err != nil {
		return err
	}
	var running int
	var front, back []Component
	for _, c := range st.Components {
		if alive(c) {
			running++
		}
		if c.Kind == KindNginx || c.Kind == KindInstance || c.Kind == KindDashboard {
			front = append(front, c)
		} else {
			back = append(back, c)
		}
	}
	t0 := time.Now()
	if err := stopAll(front); err != nil {
		return fmt.Errorf("down: %w", err)
	}
	if err := stopServers(back); err != nil {
		return fmt.Errorf("down: %w", err)
	}
	_ = os.Remove(filepath.Join(d, stateFile))
	_ = os.Remove(filepath.Join(d, envFile))
	_ = os.Remove(filepath.Join(d, faultsFile)) // stopping undid every fault
	if st.Durability == server.DurabilityNone {
		// The data put on tmpfs (RAM) goes with the stack.
		_ = os.RemoveAll(filepath.Dir(server.Layout{Base: st.BasePort, Durability: st.Durability}.DataDir("x")))
	}
	if running == 0 {
		fmt.Fprintf(out, "stack in %s is not running (removed its stale state)\n", d)
		return nil
	}
	fmt.Fprintf(out, "stopped %d components in %.1fs (logs kept in %s)\n", running, time.Since(t0).Seconds(), filepath.Join(d, "logs"))
	return nil
}
