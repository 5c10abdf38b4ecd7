package stack

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"
)

// Fault kinds of `seckill fault`.
const (
	FaultPause    = "pause"    // SIGSTOP; SIGCONT when it ends
	FaultKill     = "kill"     // SIGKILL; a start when it ends
	FaultRestart  = "restart"  // a clean stop, then a start (ends at once)
	FaultFailover = "failover" // SENTINEL FAILOVER of the Redis primary (ha; ends at once)
	FaultHeal     = "heal"     // undo every fault that is on
)

// FaultKinds lists the kinds Inject accepts.
func FaultKinds() []string {
	return []string{FaultPause, FaultKill, FaultRestart, FaultFailover, FaultHeal}
}

// ErrUnknownFault is returned for a fault kind Inject does not know.
var ErrUnknownFault = errors.New("unknown fault kind")

// ActiveFault is a fault that is on: made without --for, or whose command
// was stopped before its end. status shows them; heal and down undo them.
type ActiveFault struct {
	Kind      string    `json:"kind"`
	Component string    `json:"component"`
	Since     time.Time `json:"since"`
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

func record(dir string, f ActiveFault, on bool) error {
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

// Inject makes fault kind on component of the stack in dir. With d > 0 a
// pause or a kill lasts d and is undone before Inject returns (also when
// ctx is done first); with d == 0 it stays on, recorded for status, until
// `heal` or `down`. A fault that needs the ha topology says so on a single
// stack.
func Inject(ctx context.Context, dir, kind, component string, d time.Duration, out io.Writer) error {
	st, err := Load(dir)
	if err != nil {
		return err
	}
	switch kind {
	case FaultHeal:
		return Heal(ctx, dir, out)
	case FaultFailover:
		return Failover(ctx, st, out)
	}
	if !slices.Contains(FaultKinds(), kind) {
		return fmt.Errorf("%w %q; valid: %s", ErrUnknownFault, kind, strings.Join(FaultKinds(), ", "))
	}
	if _, err := st.find(component); err != nil {
		return err
	}
	f := ActiveFault{Kind: kind, Component: component, Since: time.Now().UTC()}
	switch kind {
	case FaultRestart:
		return Restart(ctx, dir, component)
	case FaultPause:
		err = Signal(dir, component, syscall.SIGSTOP)
	case FaultKill:
		err = Signal(dir, component, syscall.SIGKILL)
	}
	if err != nil {
		return err
	}
	if err := record(dir, f, true); err != nil {
		return err
	}
	if d <= 0 {
		fmt.Fprintf(out, "%s %s: on until `seckill fault heal` or `seckill down`\n", kind, component)
		return nil
	}
	t := time.NewTimer(d)
	select {
	case <-t.C:
	case <-ctx.Done():
		t.Stop()
	}
	if err := undo(context.WithoutCancel(ctx), dir, f); err != nil {
		return err
	}
	fmt.Fprintf(out, "%s %s for %s: done, healed\n", kind, component, d)
	return nil
}

// undo ends one fault.
func undo(ctx context.Context, dir string, f ActiveFault) error {
	var err error
	switch f.Kind {
	case FaultPause:
		err = Signal(dir, f.Component, syscall.SIGCONT)
	case FaultKill:
		err = Start(ctx, dir, f.Component)
	}
	if err != nil {
		return fmt.Errorf("heal %s %s: %w", f.Kind, f.Component, err)
	}
	return record(dir, f, false)
}

// Heal undoes every fault that is on (resumes what is paused, starts what
// was killed) and starts any component that is down.
func Heal(ctx context.Context, dir string, out io.Writer) error {
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
	unlock, err := lockDir(ctx, abs)
	if err != nil {
		return err
	}
	defer unlock()
	st, err := Load(abs)
	if err != nil {
		return err
	}
	return f(st)
}

// Failover asks the Sentinels of the ha stack st to fail the Redis primary
// over (again while they answer NOGOODSLAVE: a Sentinel learns of the
// replica within its 10 s INFO period) and waits until they name the new
// one.
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
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		now, err := sc.GetMasterAddrByName(ctx, "seckill").Result()
		if err == nil && !slices.Equal(now, before) {
			fmt.Fprintf(out, "failover: the primary moved from %s to %s\n", strings.Join(before, ":"), strings.Join(now, ":"))
			return nil
		}
	}
	return fmt.Errorf("failover: the Sentinels still name %s after 20s", strings.Join(before, ":"))
}
