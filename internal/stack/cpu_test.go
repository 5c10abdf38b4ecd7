package stack

import (
	"os/exec"
	"syscall"
	"testing"
	"time"

	"github.com/seckill-lab/seckill/internal/supervise"
)

// TestStateCPU: a component's CPU time includes its descendants' (as
// nginx's master and its workers), grows while they work, and a component
// whose pid was reused (another start time) is left out.
func TestStateCPU(t *testing.T) {
	// A parent that only waits, and a child that counts to 10 million
	// (seconds of CPU), both in one process group.
	cmd := exec.Command("sh", "-c", "sh -c 'i=0; while [ $i -lt 10000000 ]; do i=$((i+1)); done' & wait")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pid := cmd.Process.Pid
	t.Cleanup(func() { _ = syscall.Kill(-pid, syscall.SIGKILL); _ = cmd.Wait() })
	st := &State{Components: []Component{
		{Name: "nginx", Kind: KindNginx, Pid: pid, StartTime: supervise.StartTime(pid)},
		{Name: "reused", Kind: KindDashboard, Pid: pid, StartTime: supervise.StartTime(pid) + 1},
	}}
	deadline := time.Now().Add(15 * time.Second)
	for {
		samples, err := st.CPU()
		if err != nil {
			t.Fatal(err)
		}
		if len(samples) != 1 || samples[0].Group != string(KindNginx) {
			t.Fatalf("samples %+v; want the nginx component alone (the other's start time does not match)", samples)
		}
		if samples[0].CPU >= 200*time.Millisecond {
			return // the child's spinning counted for its parent's component
		}
		if time.Now().After(deadline) {
			t.Fatalf("the component's CPU stayed at %v while its child spun", samples[0].CPU)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
