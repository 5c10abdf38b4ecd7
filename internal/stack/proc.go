package stack

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/prometheus/procfs"
	"github.com/seckill-lab/seckill/internal/server"
	"golang.org/x/sync/errgroup"
)

// proc is a process started by this process: done is closed when it exits
// (it is reaped by the goroutine that waits on it).
type proc struct {
	cmd  *exec.Cmd
	done chan struct{}
	err  error // exit status, valid after done
}

func (p *proc) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// startProc starts bin with args in its own process group, with stdin from
// /dev/null and stdout/stderr appended to logPath. env (if not nil) replaces
// the environment.
func startProc(bin string, args, env []string, logPath string) (*proc, error) {
	if err := os.MkdirAll(filepath.Dir(logPath), 0o755); err != nil {
		return nil, fmt.Errorf("create log directory: %w", err)
	}
	lf, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("open log: %w", err)
	}
	defer lf.Close()
	fmt.Fprintf(lf, "---- %s seckill started: %s %s\n", time.Now().UTC().Format(time.RFC3339), bin, strings.Join(args, " "))
	cmd := exec.Command(bin, args...)
	cmd.Stdout = lf
	cmd.Stderr = lf
	cmd.Env = env
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", filepath.Base(bin), err)
	}
	p := &proc{cmd: cmd, done: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		close(p.done)
	}()
	return p, nil
}

// procStat is what the stack needs of /proc/PID/stat.
type procStat struct {
	state     string
	pgrp      int
	startTime uint64
}

func readStat(pid int) (procStat, bool) {
	p, err := procfs.NewProc(pid)
	if err != nil {
		return procStat{}, false
	}
	st, err := p.Stat()
	if err != nil {
		return procStat{}, false
	}
	return procStat{state: st.State, pgrp: st.PGRP, startTime: st.Starttime}, true
}

func isDead(state string) bool { return state == "Z" || state == "X" || state == "x" }

// processStartTime returns the start time of pid (0 if unknown).
func processStartTime(pid int) uint64 {
	s, ok := readStat(pid)
	if !ok {
		return 0
	}
	return s.startTime
}

// alive reports whether the component's process still runs (a zombie or a
// process with another start time, i.e. a reused pid, does not count).
func alive(c Component) bool {
	if c.Pid <= 0 {
		return false
	}
	s, ok := readStat(c.Pid)
	if !ok || isDead(s.state) {
		return false
	}
	return c.StartTime == 0 || s.startTime == c.StartTime
}

// groupMembers lists the live (non-zombie) processes of process group pgid.
func groupMembers(pgid int) []int {
	procs, err := procfs.AllProcs()
	if err != nil {
		return nil
	}
	var out []int
	for _, p := range procs {
		if s, ok := readStat(p.PID); ok && s.pgrp == pgid && !isDead(s.state) {
			out = append(out, p.PID)
		}
	}
	return out
}

// groupOf returns the process group to signal for c: its pid when c leads
// its own group (started with Setpgid), else 0 (signal the pid only).
func groupOf(c Component) int {
	if s, ok := readStat(c.Pid); ok && s.pgrp == c.Pid {
		return c.Pid
	}
	return 0
}

// gone reports whether c and its process group are gone.
func gone(c Component, pgid int) bool {
	if alive(c) {
		return false
	}
	return pgid == 0 || len(groupMembers(pgid)) == 0
}

// Stop timeouts.
const (
	termGrace = 15 * time.Second
	killGrace = 5 * time.Second
)

// stopComponent stops c and its process group: SIGTERM, wait up to
// termGrace, then SIGKILL and wait up to killGrace. A component already
// gone is not an error.
func stopComponent(c Component) error {
	if !alive(c) {
		return nil
	}
	pgid := groupOf(c)
	signal := func(sig syscall.Signal) {
		if pgid != 0 {
			_ = syscall.Kill(-pgid, sig)
		}
		if alive(c) {
			_ = syscall.Kill(c.Pid, sig)
		}
	}
	wait := func(d time.Duration) bool {
		deadline := time.Now().Add(d)
		for {
			if gone(c, pgid) {
				return true
			}
			if time.Now().After(deadline) {
				return false
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	signal(syscall.SIGTERM)
	signal(syscall.SIGCONT) // a paused (SIGSTOPped) component acts on SIGTERM only once resumed
	if wait(termGrace) {
		return nil
	}
	signal(syscall.SIGKILL)
	if wait(killGrace) {
		return nil
	}
	return fmt.Errorf("%s (pid %d) did not stop after SIGKILL", c.Name, c.Pid)
}

// stopAll stops the components concurrently (each group bounded by
// termGrace+killGrace) and joins the errors.
func stopAll(cs []Component) error {
	errs := make([]error, len(cs))
	var g errgroup.Group
	for i, c := range cs {
		g.Go(func() error { errs[i] = stopComponent(c); return nil })
	}
	_ = g.Wait()
	return errors.Join(errs...)
}

// stopServers is stopAll, except that the members of a kind whose
// description says StopInTurn stop one after the other (alongside the
// rest): a stopping leader first hands its leadership over to a connected
// peer, and when every member stops at once that handover waits for its
// timeout instead.
func stopServers(cs []Component) error {
	var members, rest []Component
	for _, c := range cs {
		if _, ks, ok := server.KindOf(c.Kind); ok && ks.StopInTurn {
			members = append(members, c)
		} else {
			rest = append(rest, c)
		}
	}
	var errM, errR error
	var g errgroup.Group
	g.Go(func() error {
		for _, c := range members {
			errM = errors.Join(errM, stopComponent(c))
		}
		return nil
	})
	g.Go(func() error { errR = stopAll(rest); return nil })
	_ = g.Wait()
	return errors.Join(errM, errR)
}

// rssBytes returns the resident set size of pid, 0 if unknown.
func rssBytes(pid int) int64 {
	p, err := procfs.NewProc(pid)
	if err != nil {
		return 0
	}
	st, err := p.Stat()
	if err != nil {
		return 0
	}
	return int64(st.ResidentMemory())
}

// tailFile returns the last n lines of path (all of it when n <= 0).
func tailFile(path string, n int) (string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return "", err
	}
	if n <= 0 {
		return string(b), nil
	}
	s := strings.TrimRight(string(b), "\n")
	lines := strings.Split(s, "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n") + "\n", nil
}

// lockDir takes an exclusive flock on DIR/lock, failing at once when
// another seckill command holds it. The returned func releases it.
func lockDir(ctx context.Context, dir string) (func(), error) {
	f, err := os.OpenFile(filepath.Join(dir, lockFile), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, fmt.Errorf("open lock file: %w", err)
	}
	deadline := time.Now().Add(2 * time.Second)
	for {
		err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			return func() { _ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN); f.Close() }, nil
		}
		if !errors.Is(err, syscall.EWOULDBLOCK) || time.Now().After(deadline) || ctx.Err() != nil {
			f.Close()
			return nil, fmt.Errorf("another seckill command (up/down/scale) is working on %s; wait for it to finish", dir)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// portFree reports whether 127.0.0.1:port can be listened on.
func portFree(port int) bool {
	ln, err := netListen(port)
	if err != nil {
		return false
	}
	ln.Close()
	return true
}
