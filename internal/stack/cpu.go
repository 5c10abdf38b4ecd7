package stack

import (
	"fmt"
	"time"

	"github.com/prometheus/procfs"

	"github.com/seckill-lab/seckill/bench/fleet"
	"github.com/seckill-lab/seckill/internal/supervise"
)

// CPU is the CPU time (user and system) each of the stack's processes has
// used so far, with its process group's (nginx's workers, a server's
// helpers), grouped by component kind; the bench samples it around each
// run (bench.CPUSampler). A component whose process is gone, or whose pid
// was reused since it started, is left out.
func (st *State) CPU() ([]fleet.CPUSample, error) {
	cpu := supervise.GroupSums(func(s procfs.ProcStat) time.Duration {
		return time.Duration(s.CPUTime() * float64(time.Second))
	})
	var out []fleet.CPUSample
	for _, c := range st.Components {
		if !supervise.Alive(supervise.ID{Pid: c.Pid, StartTime: c.StartTime}) {
			continue
		}
		out = append(out, fleet.CPUSample{Group: string(c.Kind), Process: fmt.Sprintf("%s/%d/%d", c.Name, c.Pid, c.StartTime), CPU: cpu[c.Pid]})
	}
	return out, nil
}
