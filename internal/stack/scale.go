package stack

import (
	"context"
	"errors"
	"fmt"
	"io"
	"syscall"
	"time"

	"github.com/seckill-lab/seckill/internal/supervise"
)

// reloadTimeout bounds the wait for nginx to route to the new upstreams.
const reloadTimeout = 20 * time.Second

// Scale sets the number of instances of the running stack in dir to n:
// it starts the missing instances (with the stack's strategy) or stops the
// extra ones (highest numbers first), regenerates nginx's upstream, reloads
// nginx and waits until nginx routes to exactly the n instances. It
// returns the new state.
func Scale(ctx context.Context, dir string, n int) (*State, error) {
	st, _, err := scale(ctx, dir, n)
	return st, err
}

// Rescale is Scale that, when the number of instances changed, says so
// on notice: a bench's --instances or `up` leaves the stack re-scaled for
// every later command, and the user should know.
func Rescale(ctx context.Context, dir string, n int, notice io.Writer) (*State, error) {
	st, was, err := scale(ctx, dir, n)
	if err != nil {
		return nil, err
	}
	if notice != nil && was != n {
		hint := ""
		if n != DefaultInstances {
			hint = fmt.Sprintf(" (it stays so; 'seckill up --dir %s' restores %d)", st.Dir, DefaultInstances)
		}
		fmt.Fprintf(notice, "seckill: re-scaled the stack in %s from %d to %d instances%s\n", st.Dir, was, n, hint)
	}
	return st, nil
}

// Ensure is Up, except that a stack already running with another number
// of instances than opts asks (opts.Instances, DefaultInstances when 0) is
// re-scaled to it (Rescale, which says so on notice) instead of left as
// it is, and one asked for a round trip (opts.RTT, opts.RTTProfile) gets
// it on its links (SetRTT; an error without the proxy). It returns
// ErrAlreadyRunning, with the state, only when nothing changed.
func Ensure(ctx context.Context, opts Options, notice io.Writer) (*State, error) {
	st, err := Up(ctx, opts)
	if !errors.Is(err, ErrAlreadyRunning) {
		return st, err
	}
	if opts.rtt() {
		// `up --rtt` on a running stack changes its links' round trip
		// (the proxy's), or says why it cannot.
		if err := SetRTT(ctx, st, opts.RTTProfile, opts.RTT); err != nil {
			return st, fmt.Errorf("the stack in %s is running: --rtt: %w", st.Dir, err)
		}
		fmt.Fprintf(notice, "round trip now %s\n", st.RTTLine())
		err = nil // something changed
	}
	want := opts.Instances
	if want == 0 {
		want = DefaultInstances
	}
	if len(st.Instances()) == want {
		return st, err
	}
	return Rescale(ctx, st.Dir, want, notice)
}

// scale does Scale and also returns the number of instances before.
func scale(ctx context.Context, dir string, n int) (*State, int, error) {
	if n < 1 || n > MaxInstances {
		return nil, 0, fmt.Errorf("scale to %d instances: want 1..%d", n, MaxInstances)
	}
	st, unlock, err := lockRunning(ctx, dir)
	if err != nil {
		return nil, 0, err
	}
	defer unlock()
	cur := st.Instances()
	if n == len(cur) {
		return st, n, nil
	}
	nginx, ok := st.Component("nginx")
	if !ok {
		return nil, 0, fmt.Errorf("scale: the stack has no nginx")
	}

	var removed []Component
	if n > len(cur) {
		if err := addInstances(ctx, st, len(cur), n); err != nil {
			return nil, 0, err
		}
	} else {
		removed = append(removed, cur[n:]...)
		st.Components = withoutInstancesAbove(st.Components, n)
	}
	sortComponents(st.Components)

	if err := reloadNginx(ctx, st, nginx); err != nil {
		return nil, 0, err
	}
	if err := stopAll(removed); err != nil {
		return nil, 0, fmt.Errorf("scale: stop instances: %w", err)
	}
	if len(removed) > 0 {
		if err := syncProxies(st, n); err != nil {
			return nil, 0, err
		}
	}
	if err := st.save(); err != nil {
		return nil, 0, err
	}
	if err := st.writeEnv(); err != nil {
		return nil, 0, err
	}
	return st, len(cur), nil
}

// lockRunning loads the stack in dir under the directory's lock, and
// checks that it is ready and every component runs. The caller calls
// unlock.
func lockRunning(ctx context.Context, dir string) (*State, func(), error) {
	d, err := absDir(dir)
	if err != nil {
		return nil, nil, err
	}
	if _, err := Load(d); err != nil {
		return nil, nil, err
	}
	unlock, err := lockDir(ctx, d)
	if err != nil {
		return nil, nil, err
	}
	st, err := runningState(d)
	if err != nil {
		unlock()
		return nil, nil, err
	}
	return st, unlock, nil
}

// runningState loads the stack in d (its lock held) and checks that it is
// ready and every component runs.
func runningState(d string) (*State, error) {
	st, err := Load(d) // again, under the lock
	if err != nil {
		return nil, err
	}
	if !st.Ready {
		return nil, fmt.Errorf("stack in %s is not ready (run `seckill status --dir %s`)", d, d)
	}
	for _, c := range st.Components {
		if !alive(c) {
			return nil, fmt.Errorf("scale: %s is not running; restart the stack (`seckill down` then `seckill up`)", c.Name)
		}
	}
	return st, nil
}

// addInstances starts the instances numbered have+1..n and adds them to
// st; when one fails to start, those started are stopped and dropped.
func addInstances(ctx context.Context, st *State, have, n int) error {
	var ps []portUse
	var add []Component
	for k := have + 1; k <= n; k++ {
		c := Component{Name: instName(k), Kind: KindInstance, Addr: addr(st.port(offInstance + k))}
		add = append(add, c)
		ps = append(ps, portUse{st.port(offInstance + k), c.Name})
	}
	if err := checkPorts(ps); err != nil {
		return err
	}
	if err := syncProxies(st, n); err != nil {
		return err
	}
	r := &runner{st: st, out: io.Discard, t0: time.Now(), procs: map[string]*proc{}}
	if err := r.startInstances(ctx, Options{Binary: st.Binary, StartTimeout: 60 * time.Second, Instances: n}, add); err != nil {
		r.mu.Lock()
		var started []Component
		for _, c := range st.Components {
			if _, k := componentRank(c); c.Kind == KindInstance && k > have {
				started = append(started, c)
			}
		}
		st.Components = withoutInstancesAbove(st.Components, have)
		r.mu.Unlock()
		_ = stopAll(started)
		_ = st.save()
		return fmt.Errorf("scale to %d: %w", n, err)
	}
	return nil
}

// reloadNginx points nginx at st's instances (SIGHUP) and waits until it
// balances over them and its old workers are gone.
func reloadNginx(ctx context.Context, st *State, nginx Component) error {
	if _, err := writeNginxConf(st); err != nil {
		return err
	}
	oldWorkers := supervise.GroupMembers(nginx.Pid)
	if err := syscall.Kill(nginx.Pid, syscall.SIGHUP); err != nil {
		return fmt.Errorf("reload nginx (pid %d): %w", nginx.Pid, err)
	}
	names := st.InstanceNames()
	if err := waitHealthy(ctx, "nginx after reload", nil, nginx.Log, reloadTimeout, func(ctx context.Context) error {
		return checkNginx(ctx, nginx.URL(), names)
	}); err != nil {
		return err
	}
	// Old workers keep serving their open client connections with the old
	// upstream list; stopping removed instances before they exit would
	// answer those requests with 502.
	waitWorkersGone(ctx, nginx.Pid, oldWorkers, reloadTimeout)
	return nil
}

// withoutInstancesAbove drops the instances numbered above n.
func withoutInstancesAbove(cs []Component, n int) []Component {
	var out []Component
	for _, c := range cs {
		if c.Kind == KindInstance {
			if _, k := componentRank(c); k > n {
				continue
			}
		}
		out = append(out, c)
	}
	return out
}

// waitWorkersGone waits (bounded) until the nginx workers that ran before a
// reload have exited. master is skipped.
func waitWorkersGone(ctx context.Context, master int, old []int, limit time.Duration) {
	deadline := time.Now().Add(limit)
	for time.Now().Before(deadline) && ctx.Err() == nil {
		left := 0
		for _, pid := range old {
			if pid == master {
				continue
			}
			if !supervise.Dead(pid) {
				left++
			}
		}
		if left == 0 {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
}
