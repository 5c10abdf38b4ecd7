package stack

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/seckill-lab/seckill/bench/adminclient"
	"github.com/seckill-lab/seckill/internal/server"
	"github.com/seckill-lab/seckill/internal/supervise"
	"github.com/seckill-lab/seckill/stock"
)

// ErrUnknownComponent is returned for a component name the stack does not
// have; the error lists the valid ones.
var ErrUnknownComponent = errors.New("unknown component")

// componentStartTimeout bounds a single component's start.
const componentStartTimeout = 60 * time.Second

// find returns the component named name, or ErrUnknownComponent listing
// the valid names.
func (s *State) find(name string) (Component, error) {
	if c, ok := s.Component(name); ok {
		return c, nil
	}
	names := make([]string, 0, len(s.Components))
	for _, c := range s.Components {
		names = append(names, c.Name)
	}
	return Component{}, fmt.Errorf("%w %q; the stack in %s has %s", ErrUnknownComponent, name, s.Dir, strings.Join(names, ", "))
}

// componentEnv is the environment a component is started with: the same
// as `up` gives it.
func componentEnv(ctx context.Context, st *State, c Component) []string {
	if c.Kind == KindInstance {
		return instanceEnv(st, c, fleetSetting(ctx, st, c.Name), len(st.Instances()))
	}
	return server.Env(c.Kind)
}

// startComponent starts c again with its recorded command line, waits
// until it is healthy and records its new pid in st (the caller saves).
func startComponent(ctx context.Context, st *State, c Component) (Component, error) {
	if len(c.Cmdline) == 0 {
		return c, fmt.Errorf("%s: no recorded command line to start it with", c.Name)
	}
	if c.Kind == KindNginx {
		// The includes follow the instances as they are now.
		if _, err := writeNginxConf(st); err != nil {
			return c, err
		}
	}
	if c.Kind == KindProxy {
		// The proxies follow the instances as they are now.
		if _, err := writeProxyConfig(st, len(st.Instances())); err != nil {
			return c, err
		}
	}
	p, err := startProc(st.NiceOf(c.Kind), c.Cmdline[0], c.Cmdline[1:], componentEnv(ctx, st, c), c.Log)
	if err != nil {
		return c, fmt.Errorf("%s: %w", c.Name, err)
	}
	c.Pid = p.Cmd.Process.Pid
	c.StartTime = supervise.StartTime(c.Pid)
	for i := range st.Components {
		if st.Components[i].Name == c.Name {
			st.Components[i] = c
		}
	}
	if err := waitHealthy(ctx, c.Name, p, c.Log, componentStartTimeout, func(ctx context.Context) error { return checkComponent(ctx, st, c) }); err != nil {
		return c, err
	}
	if c.Kind == KindProxy {
		if err := applyRTT(st); err != nil {
			return c, err
		}
	}
	if c.Kind == KindInstance {
		if err := rejoinStrategy(ctx, st, c); err != nil {
			return c, err
		}
	}
	return c, nil
}

// rejoinStrategy gives a restarted instance the strategy setting its
// running peers have now: it starts with the stack's starting strategy,
// and the fleet may have been switched since (a bench, a scenario). Found
// in the instance-crash scenario: a restarted instance sold under `none`
// in the middle of a redis run, and the run oversold. The process already
// starts with a peer's setting (fleetSetting, SECKILL_SETTING), so nginx
// never sends it a purchase under another one; this covers a switch made
// while it started.
func rejoinStrategy(ctx context.Context, st *State, c Component) error {
	cfg, peer, ok := peerSetting(ctx, st, c.Name)
	if !ok {
		return nil // no running peer: the starting strategy stands
	}
	if err := st.adminJSON(ctx, http.MethodPut, c.URL(), "/admin/strategy", cfg, nil); err != nil {
		return fmt.Errorf("%s: take the fleet's strategy %v from %s: %w", c.Name, cfg.Name, peer, err)
	}
	return nil
}

// peerSetting is the setting of the first running instance other than
// name that answers (its name too); ok is false when none does.
func peerSetting(ctx context.Context, st *State, name string) (cfg stock.Config, peer string, ok bool) {
	for _, p := range st.Instances() {
		if p.Name == name || !alive(p) {
			continue
		}
		var w stock.Config // the answer's "instance" is not part of the setting
		if err := st.adminJSON(ctx, http.MethodGet, p.URL(), "/admin/strategy", nil, &w); err != nil {
			continue // try another peer
		}
		return w, p.Name, true
	}
	return stock.Config{}, "", false
}

// fleetSetting is peerSetting as the JSON an instance starts with
// (SECKILL_SETTING), or "" when no peer runs (the stack is starting): an
// instance started beside running ones (a kill fault's restart, `seckill
// restart`, a scale-up) serves under the fleet's setting from its first
// request. Before, it served under the stack's starting strategy until
// rejoinStrategy switched it, and nginx sent it purchases meanwhile
// (lesson 28's kill run: a sale under "none", two sales with the same
// stock left).
func fleetSetting(ctx context.Context, st *State, name string) string {
	cfg, _, ok := peerSetting(ctx, st, name)
	if !ok {
		return ""
	}
	b, err := json.Marshal(cfg)
	if err != nil {
		return ""
	}
	return string(b)
}

// adminJSON calls an instance's admin API with the stack's token, within
// 10 s.
func (st *State) adminJSON(ctx context.Context, method, base, path string, in, out any) error {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	return adminclient.New(st.AdminToken).Do(ctx, method, base, path, in, out)
}

// Start starts the component name of the stack in dir if it is down, and
// waits until it is healthy. A running component is left alone. A Redis
// comes back empty (the lab's Redis has no persistence); the other servers
// keep their data.
func Start(ctx context.Context, dir, name string) error {
	return withComponent(ctx, dir, name, func(st *State, c Component) error {
		if alive(c) {
			return nil
		}
		_, err := startComponent(ctx, st, c)
		return err
	})
}

// Restart stops the component name (SIGTERM, then SIGKILL after a grace
// period) and starts it again, waiting until it is healthy.
func Restart(ctx context.Context, dir, name string) error {
	return withComponent(ctx, dir, name, func(st *State, c Component) error {
		if err := stopComponent(c); err != nil {
			return err
		}
		_, err := startComponent(ctx, st, c)
		return err
	})
}

// Signal sends sig to the component's process group (SIGSTOP pauses it,
// SIGCONT resumes it, SIGKILL kills it). The recorded start time guards
// against signalling a pid that was reused.
func Signal(dir, name string, sig syscall.Signal) error {
	st, err := Load(dir)
	if err != nil {
		return err
	}
	c, err := st.find(name)
	if err != nil {
		return err
	}
	if !alive(c) {
		return fmt.Errorf("%s is not running (start it with `seckill up` or `seckill restart %s`)", name, name)
	}
	target := c.Pid
	if pg := supervise.GroupOf(c.id()); pg != 0 {
		target = -pg
	}
	if err := syscall.Kill(target, sig); err != nil {
		return fmt.Errorf("signal %s (pid %d): %w", name, c.Pid, err)
	}
	// Return once the effect is visible, so a fault's timing is the
	// fault's: killed means gone, stopped means stopped.
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		switch {
		case sig == syscall.SIGKILL && supervise.Dead(c.Pid):
			return nil
		case sig == syscall.SIGSTOP && supervise.Stopped(c.Pid):
			return nil
		case sig != syscall.SIGKILL && sig != syscall.SIGSTOP:
			return nil
		}
		time.Sleep(5 * time.Millisecond)
	}
	return fmt.Errorf("signal %s (pid %d): no effect after 5s", name, c.Pid)
}

// withComponent runs f on the component name under the run directory's
// lock and saves the state after it, whatever f did.
func withComponent(ctx context.Context, dir, name string, f func(st *State, c Component) error) error {
	return withDirLock(ctx, dir, func(st *State) error {
		c, err := st.find(name)
		if err != nil {
			return err
		}
		ferr := f(st, c)
		if err := st.save(); err != nil {
			return errors.Join(ferr, err)
		}
		return ferr
	})
}

// startStopped starts, in dependency order (servers, instances, nginx),
// the components of st that are down, and reports each one to out.
func startStopped(ctx context.Context, st *State, out io.Writer) ([]string, error) {
	var down []Component
	for _, c := range st.Components {
		if !alive(c) {
			down = append(down, c)
		}
	}
	slices.SortStableFunc(down, func(a, b Component) int {
		ka, _ := componentRank(a)
		kb, _ := componentRank(b)
		return ka - kb
	})
	var started []string
	for _, c := range down {
		t0 := time.Now()
		if _, err := startComponent(ctx, st, c); err != nil {
			return started, err
		}
		started = append(started, c.Name)
		fmt.Fprintf(out, "  %-13s was down: started, healthy in %.1fs\n", c.Name, time.Since(t0).Seconds())
	}
	return started, st.save()
}
