package stack

import (
	"fmt"
	"time"

	"github.com/prometheus/procfs"

	"github.com/seckill-lab/seckill/bench"
)

// CPU is the CPU time (user and system) each of the stack's processes has
// used so far, grouped by component kind, each process with its
// descendants (nginx's workers, a server's helpers); the bench samples it
// around each run (bench.CPUSampler). A component whose process is gone,
// or whose pid was reused since it started, is left out.
func (st *State) CPU() ([]bench.CPUSample, error) {
	procs, err := procfs.AllProcs()
	if err != nil {
		return nil, fmt.Errorf("stack CPU: list processes: %w", err)
	}
	type proc struct {
		ppid  int
		start uint64
		cpu   time.Duration
	}
	all := make(map[int]proc, len(procs))
	children := map[int][]int{}
	for _, p := range procs {
		s, err := p.Stat()
		if err != nil {
			continue // exited meanwhile
		}
		all[p.PID] = proc{ppid: s.PPID, start: s.Starttime, cpu: time.Duration(s.CPUTime() * float64(time.Second))}
		children[s.PPID] = append(children[s.PPID], p.PID)
	}
	var tree func(pid int) time.Duration
	tree = func(pid int) time.Duration {
		t := all[pid].cpu
		for _, c := range children[pid] {
			t += tree(c)
		}
		return t
	}
	var out []bench.CPUSample
	for _, c := range st.Components {
		p, ok := all[c.Pid]
		if !ok || c.StartTime != 0 && p.start != c.StartTime {
			continue
		}
		out = append(out, bench.CPUSample{Group: string(c.Kind), Process: fmt.Sprintf("%s/%d/%d", c.Name, c.Pid, p.start), CPU: tree(c.Pid)})
	}
	return out, nil
}
