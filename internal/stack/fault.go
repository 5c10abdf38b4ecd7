package stack

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
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/seckill-lab/seckill/internal/fault"
	"github.com/seckill-lab/seckill/internal/server"
)

// Defaults of Fault.
const (
	DefaultDelay  = fault.DefaultDelay
	DefaultOffset = fault.DefaultOffset
)

// FaultKinds lists the kinds Inject accepts.
func FaultKinds() []string { return fault.Names(false) }

// ErrUnknownFault is returned for a fault kind Inject does not know.
var ErrUnknownFault = errors.New("unknown fault kind")

// Fault is one fault: Kind on Target. Target is a component for pause,
// kill and restart, a Redis node for clock, [INSTANCE/]SERVER for
// partition and latency (SERVER a server component or a link group of
// the server descriptions; without INSTANCE, every instance), and nothing
// for failover and heal.
type Fault struct {
	Kind   string
	Target string
	// Delay is a latency fault's added delay per answer (default
	// DefaultDelay).
	Delay time.Duration
	// Offset is a clock fault's forward jump (default DefaultOffset).
	Offset time.Duration
}

// ActiveFault is a fault that is on: made without --for, or whose command
// was stopped before its end. status shows them; heal and down undo them.
type ActiveFault struct {
	Kind      string        `json:"kind"`
	Component string        `json:"component"` // the fault's target
	Delay     time.Duration `json:"delay,omitempty"`
	Since     time.Time     `json:"since"`
}

const faultsFile = "faults.json"

// ActiveFaults returns the faults on in the stack in dir.
func ActiveFaults(dir string) ([]ActiveFault, error) {
	b, err := os.ReadFile(filepath.Join(dir, faultsFile))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read faults: %w", err)
	}
	var fs []ActiveFault
	if err := json.Unmarshal(b, &fs); err != nil {
		return nil, fmt.Errorf("read faults: %w", err)
	}
	return fs, nil
}

func setFaults(dir string, fs []ActiveFault) error {
	if len(fs) == 0 {
		if err := os.Remove(filepath.Join(dir, faultsFile)); err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
		return nil
	}
	b, err := json.MarshalIndent(fs, "", "  ")
	if err != nil {
		return err
	}
	return writeFileAtomic(filepath.Join(dir, faultsFile), b, 0o644)
}

// recordMu makes record's read-modify-write of faults.json one at a time
// within the process: the nemesis begins and ends faults concurrently.
var recordMu sync.Mutex

func record(dir string, f ActiveFault, on bool) error {
	recordMu.Lock()
	defer recordMu.Unlock()
	fs, err := ActiveFaults(dir)
	if err != nil {
		return err
	}
	fs = slices.DeleteFunc(fs, func(x ActiveFault) bool { return x.Kind == f.Kind && x.Component == f.Component })
	if on {
		fs = append(fs, f)
	}
	return setFaults(dir, fs)
}

// Begin makes fault f on the stack in dir and returns what it did and, for
// a fault that lasts (pause, kill, partition, latency), the function that
// ends it; restart, clock and failover are over when Begin returns (end is
// nil). A lasting fault is recorded for status until it ends, or until
// `heal` or `down`. A fault that needs the ha topology or the proxy says
// so.
func Begin(ctx context.Context, dir string, f Fault) (did string, end func(context.Context) error, err error) {
	st, err := Load(dir)
	if err != nil {
		return "", nil, err
	}
	if !slices.Contains(FaultKinds(), f.Kind) || f.Kind == fault.Heal {
		return "", nil, fmt.Errorf("%w %q; valid: %s", ErrUnknownFault, f.Kind, strings.Join(FaultKinds(), ", "))
	}
	if f.Delay < 0 || f.Offset < 0 {
		return "", nil, fmt.Errorf("%s: a negative delay or offset (%s, %s) means nothing", f.Kind, f.Delay, f.Offset)
	}
	if f.Kind == fault.Latency && f.Delay == 0 {
		f.Delay = DefaultDelay
	}
	if f.Kind == fault.Clock && f.Offset == 0 {
		f.Offset = DefaultOffset
	}
	switch f.Kind {
	case fault.Failover:
		var b strings.Builder
		if err := Failover(ctx, st, &b); err != nil {
			return "", nil, err
		}
		return strings.TrimSpace(b.String()), nil, nil
	case fault.Partition, fault.Latency:
		proxies, err := linkTargets(st, f.Target)
		if err != nil {
			return "", nil, err
		}
		if err := setLinkFault(st, f.Kind, proxies, f.Delay, true); err != nil {
			return "", nil, errors.Join(err, setLinkFault(st, f.Kind, proxies, 0, false))
		}
		did = fmt.Sprintf("partition %s (both ways, %d links)", f.Target, len(proxies))
		if f.Kind == fault.Latency {
			did = fmt.Sprintf("latency +%s on every answer of %s (%d links)", f.Delay, f.Target, len(proxies))
		}
	case fault.Clock:
		cut, gone, err := ClockJump(ctx, st, f.Target, f.Offset)
		if err != nil {
			return "", nil, err
		}
		return fmt.Sprintf("clock jump +%s on %s, EMULATED (no clock changed): %d keys' TTL shortened, %d expired", f.Offset, f.Target, cut, gone), nil, nil
	case fault.Restart:
		if err := Restart(ctx, dir, f.Target); err != nil {
			return "", nil, err
		}
		return "restart " + f.Target, nil, nil
	case fault.Pause, fault.Kill:
		sig := syscall.SIGSTOP
		if f.Kind == fault.Kill {
			sig = syscall.SIGKILL
		}
		if err := Signal(dir, f.Target, sig); err != nil {
			return "", nil, err
		}
		did = f.Kind + " " + f.Target
	}
	af := ActiveFault{Kind: f.Kind, Component: f.Target, Delay: f.Delay, Since: time.Now().UTC()}
	end = func(ctx context.Context) error { return undo(ctx, dir, af) }
	if err := record(dir, af, true); err != nil {
		return "", nil, errors.Join(err, end(ctx))
	}
	return did, end, nil
}

// Inject makes fault f on the stack in dir and reports it to out. With
// d > 0 a lasting fault lasts d and is undone before Inject returns (also
// when ctx is done first); with d == 0 it stays on, recorded for status,
// until `heal` or `down`. Heal undoes every fault.
func Inject(ctx context.Context, dir string, f Fault, d time.Duration, out io.Writer) error {
	if f.Kind == fault.Heal {
		return Heal(ctx, dir, out)
	}
	did, end, err := Begin(ctx, dir, f)
	if err != nil {
		return err
	}
	if end == nil {
		fmt.Fprintln(out, did)
		return nil
	}
	if d <= 0 {
		fmt.Fprintf(out, "%s: on until `seckill fault heal` or `seckill down`\n", did)
		return nil
	}
	fmt.Fprintf(out, "%s for %s\n", did, d)
	t := time.NewTimer(d)
	select {
	case <-t.C:
	case <-ctx.Done():
		t.Stop()
	}
	if err := end(context.WithoutCancel(ctx)); err != nil {
		return err
	}
	fmt.Fprintf(out, "%s %s: healed\n", f.Kind, f.Target)
	return nil
}

// undo ends one fault.
func undo(ctx context.Context, dir string, f ActiveFault) error {
	var err error
	switch f.Kind {
	case fault.Pause:
		err = Signal(dir, f.Component, syscall.SIGCONT)
	case fault.Kill:
		err = Start(ctx, dir, f.Component)
	case fault.Partition, fault.Latency:
		var st *State
		if st, err = Load(dir); err == nil {
			var proxies []string
			if proxies, err = linkTargets(st, f.Component); err == nil {
				err = setLinkFault(st, f.Kind, proxies, 0, false)
			}
		}
	}
	if err != nil {
		return fmt.Errorf("heal %s %s: %w", f.Kind, f.Component, err)
	}
	return record(dir, f, false)
}

// Heal undoes every fault that is on (resumes what is paused, starts what
// was killed) and starts any component that is down.
func Heal(ctx context.Context, dir string, out io.Writer) error {
	if _, err := Load(dir); err != nil { // no stack: say so, not "open lock file"
		return err
	}
	fs, err := ActiveFaults(dir)
	if err != nil {
		return err
	}
	var errs []error
	for _, f := range fs {
		if err := undo(ctx, dir, f); err != nil {
			errs = append(errs, err)
			continue
		}
		fmt.Fprintf(out, "healed: %s %s\n", f.Kind, f.Component)
	}
	if st, err := Load(dir); err == nil {
		errs = append(errs, resetProxy(st))
	}
	if err := withDirLock(ctx, dir, func(st *State) error {
		_, err := startStopped(ctx, st, out)
		return err
	}); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// withDirLock runs f on the stack's state under the run directory's lock.
func withDirLock(ctx context.Context, dir string, f func(st *State) error) error {
	abs, err := absDir(dir)
	if err != nil {
		return err
	}
	if _, err := Load(abs); err != nil { // no stack: say so, not that the lock file is missing
		return err
	}
	unlock, err := lockDir(ctx, abs)
	if err != nil {
		return err
	}
	defer unlock()
	st, err := Load(abs) // again, under the lock
	if err != nil {
		return err
	}
	return f(st)
}

// Failover asks the Sentinels of the ha stack st to fail the Redis primary
// over (again while they answer NOGOODSLAVE: a Sentinel learns of the
// replica within its 10 s INFO period), waits until they name the new
// one, then until the demoted primary replicates it (awaitReplicas): the
// failover is over when the pair is whole again.
func Failover(ctx context.Context, st *State, out io.Writer) error {
	if !st.HA() {
		return fmt.Errorf("failover needs the ha topology (Sentinels): seckill down, then seckill up --topology ha")
	}
	sc := redis.NewSentinelClient(&redis.Options{Addr: st.SentinelAddrs()[0]})
	defer sc.Close()
	before, err := sc.GetMasterAddrByName(ctx, "seckill").Result()
	if err != nil {
		return fmt.Errorf("ask the Sentinels for the primary: %w", err)
	}
	var ferr error
	for try := time.Now(); time.Since(try) < 15*time.Second; time.Sleep(250 * time.Millisecond) {
		if ferr = sc.Failover(ctx, "seckill").Err(); ferr == nil || !strings.Contains(ferr.Error(), "NOGOODSLAVE") {
			break
		}
	}
	if ferr != nil {
		return fmt.Errorf("SENTINEL FAILOVER: %w", ferr)
	}
	var now []string
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		if time.Now().After(deadline) {
			return fmt.Errorf("failover: the Sentinels still name %s after 20s", strings.Join(before, ":"))
		}
		now, err = sc.GetMasterAddrByName(ctx, "seckill").Result()
		if err == nil && !slices.Equal(now, before) {
			break
		}
	}
	moved := fmt.Sprintf("the primary moved from %s to %s", strings.Join(before, ":"), strings.Join(now, ":"))
	if err := awaitReplicas(ctx, st, strings.Join(now, ":")); err != nil {
		return fmt.Errorf("failover: %s, but %w", moved, err)
	}
	fmt.Fprintf(out, "failover: %s\n", moved)
	return nil
}

// ReplicaSettle bounds the wait after a failover for every other member of
// the replicated pair to replicate the new primary: a Sentinel turns the
// demoted primary into a replica within its 10 s INFO period, and until
// then it still takes writes that the new primary never sees (a second
// failover meanwhile would promote a node that missed them).
const ReplicaSettle = 30 * time.Second

// awaitReplicas waits until every member of st's replicated Redis pair
// other than primary reports itself a replica of primary with its link up.
func awaitReplicas(ctx context.Context, st *State, primary string) error {
	var last string
	for deadline := time.Now().Add(ReplicaSettle); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		last = ""
		for _, c := range st.Components {
			if c.Kind != server.KindRedisHA || c.Addr == primary {
				continue
			}
			info, err := server.RedisInfo(ctx, c.Addr, "replication")
			switch {
			case err != nil:
				last = fmt.Sprintf("%s: %v", c.Name, err)
			case info["role"] != "slave" || net.JoinHostPort(info["master_host"], info["master_port"]) != primary:
				last = fmt.Sprintf("%s is a %s, not a replica of %s", c.Name, info["role"], primary)
			case info["master_link_status"] != "up":
				last = fmt.Sprintf("%s's link to %s is %s", c.Name, primary, info["master_link_status"])
			}
		}
		if last == "" {
			return nil
		}
	}
	return fmt.Errorf("not settled within %s: %s", ReplicaSettle, last)
}
