// Package supervise runs the lab's processes: it starts each in its own
// process group with its output appended to its log, knows a process by
// its pid and start time (so a reused pid is never signalled), tells
// whether it still runs, stops it with its whole group (SIGTERM, then
// SIGKILL) and reads its memory. It knows nothing of what a process is:
// internal/stack gives it the command lines the server descriptions hold.
package supervise

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/prometheus/procfs"
)

// ID identifies a process: its pid and its start time (clock ticks since
// boot, field 22 of /proc/PID/stat; 0 when unknown).
type ID struct {
	Pid       int
	StartTime uint64
}

// Process is a process started by this process: Done is closed when it
// exits (it is reaped by the goroutine that waits on it).
type Process struct {
	Cmd  *exec.Cmd
	Done chan struct{}
	Err  error // exit status, valid after Done
}

// ID is the process's identity.
func (p *Process) ID() ID { return ID{Pid: p.Cmd.Process.Pid, StartTime: StartTime(p.Cmd.Process.Pid)} }

// Exited reports whether the process has exited.
func (p *Process) Exited() bool {
	select {
	case <-p.Done:
		return true
	default:
		return false
	}
}

// Start starts bin with args in its own process group, with stdin from
// /dev/null and stdout/stderr appended to logPath. env (if not nil) replaces
// the environment.
func Start(bin string, args, env []string, logPath string) (*Process, error) {
	return StartNice(0, bin, args, env, logPath)
}

// StartNice is Start at CPU niceness nice (0..19: a process above 0 yields
// the CPU to those at 0). The process starts through nice(1), so every
// thread it ever creates has the niceness; its pid is the started one.
func StartNice(nice int, bin string, args, env []string, logPath string) (*Process, error) {
	if nice < 0 || nice > 19 {
		return nil, fmt.Errorf("start %s: niceness %d: want 0..19", filepath.Base(bin), nice)
	}
	path, argv := bin, args
	if nice > 0 {
		n, err := exec.LookPath("nice")
		if err != nil {
			return nil, fmt.Errorf("start %s at niceness %d: %w (nice(1) is in coreutils)", filepath.Base(bin), nice, err)
		}
		path, argv = n, append([]string{"-n", strconv.Itoa(nice), "--", bin}, args...)
	}
	if err := os.MkdirAll(filepath.Dir(logPath), 0o755); err != nil {
		return nil, fmt.Errorf("create log directory: %w", err)
	}
	lf, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("open log: %w", err)
	}
	defer lf.Close()
	fmt.Fprintf(lf, "---- %s seckill started: %s %s\n", time.Now().UTC().Format(time.RFC3339), bin, strings.Join(args, " "))
	cmd := exec.Command(path, argv...)
	cmd.Stdout = lf
	cmd.Stderr = lf
	cmd.Env = env
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", filepath.Base(bin), err)
	}
	p := &Process{Cmd: cmd, Done: make(chan struct{})}
	go func() {
		p.Err = cmd.Wait()
		close(p.Done)
	}()
	return p, nil
}

// procStat is what the supervisor needs of /proc/PID/stat.
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

// Dead reports whether pid is gone or a zombie.
func Dead(pid int) bool {
	s, ok := readStat(pid)
	return !ok || isDead(s.state)
}

// State is pid's state letter in /proc (R, S, T: stopped, Z: zombie...),
// "gone" when it has no entry.
func State(pid int) string {
	s, ok := readStat(pid)
	if !ok {
		return "gone"
	}
	return s.state
}

// Stopped reports whether pid is stopped (SIGSTOP).
func Stopped(pid int) bool {
	s, ok := readStat(pid)
	return ok && s.state == "T"
}

func isDead(state string) bool { return state == "Z" || state == "X" || state == "x" }

// StartTime returns the start time of pid (0 if unknown).
func StartTime(pid int) uint64 {
	s, ok := readStat(pid)
	if !ok {
		return 0
	}
	return s.startTime
}

// Nice returns the CPU niceness of pid's main thread.
func Nice(pid int) (int, error) {
	p, err := procfs.NewProc(pid)
	if err != nil {
		return 0, fmt.Errorf("process %d: %w", pid, err)
	}
	st, err := p.Stat()
	if err != nil {
		return 0, fmt.Errorf("process %d: %w", pid, err)
	}
	return st.Nice, nil
}

// Alive reports whether the process still runs (a zombie or a process
// with another start time, i.e. a reused pid, does not count).
func Alive(c ID) bool {
	if c.Pid <= 0 {
		return false
	}
	s, ok := readStat(c.Pid)
	if !ok || isDead(s.state) {
		return false
	}
	return c.StartTime == 0 || s.startTime == c.StartTime
}

// GroupMembers lists the live (non-zombie) processes of process group pgid.
func GroupMembers(pgid int) []int {
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

// GroupSums adds f up over the live (non-zombie) processes of each process
// group, by group id. A component leads its own group (Start sets
// Setpgid), so its pid is the id and the sum takes in its helpers (nginx's
// workers, a shell's children). Empty when /proc cannot be read.
func GroupSums[T ~int64 | ~float64](f func(procfs.ProcStat) T) map[int]T {
	out := map[int]T{}
	procs, err := procfs.AllProcs()
	if err != nil {
		return out
	}
	for _, p := range procs {
		st, err := p.Stat()
		if err != nil || isDead(st.State) {
			continue // exited meanwhile, or a zombie
		}
		out[st.PGRP] += f(st)
	}
	return out
}

// GroupOf returns the process group to signal for c: its pid when c leads
// its own group (started with Setpgid), else 0 (signal the pid only).
func GroupOf(c ID) int {
	if s, ok := readStat(c.Pid); ok && s.pgrp == c.Pid {
		return c.Pid
	}
	return 0
}

// gone reports whether c and its process group are gone.
func gone(c ID, pgid int) bool {
	if Alive(c) {
		return false
	}
	return pgid == 0 || len(GroupMembers(pgid)) == 0
}

// Stop timeouts.
const (
	termGrace = 15 * time.Second
	killGrace = 5 * time.Second
)

// Stop stops process c (called name in errors) and its process group: SIGTERM, wait up to
// termGrace, then SIGKILL and wait up to killGrace. A component already
// gone is not an error.
func Stop(name string, c ID) error {
	if !Alive(c) {
		return nil
	}
	pgid := GroupOf(c)
	signal := func(sig syscall.Signal) {
		if pgid != 0 {
			_ = syscall.Kill(-pgid, sig)
		}
		if Alive(c) {
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
	return fmt.Errorf("%s (pid %d) did not stop after SIGKILL", name, c.Pid)
}

// RSS returns the resident set size of pid, 0 if unknown.
func RSS(pid int) int64 {
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

// Tail returns the last n lines of path (all of it when n <= 0).
func Tail(path string, n int) (string, error) {
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
