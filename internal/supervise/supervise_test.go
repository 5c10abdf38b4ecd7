package supervise

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestStartStop: a started process (a shell that leaves a child in its
// group) is alive, known by pid and start time, logs to its file, and Stop
// takes its whole group down; a wrong start time (a reused pid) is not it.
func TestStartStop(t *testing.T) {
	log := filepath.Join(t.TempDir(), "logs", "p.log")
	p, err := Start("/bin/sh", []string{"-c", "echo started; sleep 60 & wait"}, nil, log)
	if err != nil {
		t.Fatal(err)
	}
	id := p.ID()
	if !Alive(id) || p.Exited() || GroupOf(id) != id.Pid {
		t.Fatalf("after Start: alive %v, exited %v, group %d (pid %d)", Alive(id), p.Exited(), GroupOf(id), id.Pid)
	}
	if Alive(ID{Pid: id.Pid, StartTime: id.StartTime + 1}) {
		t.Error("a process with another start time counts as this one")
	}
	if err := syscall.Kill(id.Pid, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	for !Stopped(id.Pid) {
		syscall.Kill(id.Pid, 0)
	}
	// Stop resumes a paused group so that it acts on SIGTERM.
	if err := Stop("p", id); err != nil {
		t.Fatal(err)
	}
	<-p.Done
	if Alive(id) || !Dead(id.Pid) || len(GroupMembers(id.Pid)) != 0 {
		t.Errorf("after Stop: alive %v, group %v", Alive(id), GroupMembers(id.Pid))
	}
	if out, err := Tail(log, 1); err != nil || !strings.Contains(out, "started") {
		t.Errorf("log tail %q, %v", out, err)
	}
	if err := Stop("p", id); err != nil {
		t.Errorf("Stop of a stopped process: %v", err)
	}
}

// TestStartNice: a process started at a niceness has it, and so do its
// threads and children (they inherit it from the start); the started pid
// is the program's own, not nice(1)'s; a niceness out of range is refused.
func TestStartNice(t *testing.T) {
	for _, n := range []int{0, 7} {
		log := filepath.Join(t.TempDir(), "p.log")
		p, err := StartNice(n, "/bin/sh", []string{"-c", "sleep 60 & wait"}, nil, log)
		if err != nil {
			t.Fatal(err)
		}
		id := p.ID()
		var group []int
		for range 500 { // until the shell (after nice(1)'s exec) forked its sleep
			if group = GroupMembers(id.Pid); len(group) > 1 {
				break
			}
			time.Sleep(10 * time.Millisecond)
		}
		if len(group) < 2 {
			t.Fatalf("nice %d: the shell forked no child in 5 s", n)
		}
		got, err := Nice(id.Pid)
		if err != nil || got != n {
			t.Errorf("nice %d: the process has %d (%v)", n, got, err)
		}
		for _, k := range group {
			if got, err := Nice(k); err != nil || got != n {
				t.Errorf("nice %d: group member %d has %d (%v)", n, k, got, err)
			}
		}
		if exe, _ := os.Readlink(fmt.Sprintf("/proc/%d/exe", id.Pid)); strings.Contains(exe, "nice") {
			t.Errorf("nice %d: pid %d is %s, want the program itself", n, id.Pid, exe)
		}
		if err := Stop("p", id); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := StartNice(20, "/bin/true", nil, nil, filepath.Join(t.TempDir(), "x.log")); err == nil || !strings.Contains(err.Error(), "0..19") {
		t.Errorf("nice 20: err = %v, want a range error", err)
	}
}
