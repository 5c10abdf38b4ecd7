package supervise

import (
	"path/filepath"
	"strings"
	"syscall"
	"testing"
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
