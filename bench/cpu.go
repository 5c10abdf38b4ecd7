package bench

import (
	"cmp"
	"fmt"
	"maps"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/prometheus/procfs"

	"github.com/seckill-lab/seckill/bench/fleet"
	"github.com/seckill-lab/seckill/stock/catalog"
)

// CPUSampler reads how much CPU time the fleet's processes have used so
// far, by group (the local stack's: one group per server kind, the
// instances and nginx; stack.State implements it). The bench samples it
// around each run's load, so a report says where the machine's CPU went:
// on a machine that runs the fleet, its servers and the bench, the CPU is
// what most often bounds throughput.
type CPUSampler interface {
	CPU() ([]fleet.CPUSample, error)
}

// CPUUse is where a run's CPU went while its load ran (an asynchronous
// strategy: until its queue drained).
type CPUUse struct {
	// PerRequestUS is the CPU time per request sent, in µs, by group: the
	// CPUSampler's groups and "bench" (this process: the load generator,
	// the event stream, the checks that run during the load).
	PerRequestUS map[string]float64 `json:"per_request_us"`
	// TotalUS adds PerRequestUS up.
	TotalUS float64 `json:"total_us"`
	// MachineBusy is the share of all the machine's CPUs in use during
	// the load (/proc/stat: not idle, not waiting for I/O), 0 to 1.
	MachineBusy float64 `json:"machine_busy"`
	// SecondsCPU is the machine's busy CPU time over the load, seconds.
	SecondsCPU float64 `json:"busy_cpu_s"`
	CPUs       int     `json:"cpus"`
}

// cpuMark is one sample: the groups', this process's and the machine's
// CPU time.
type cpuMark struct {
	procs      []fleet.CPUSample
	self       time.Duration
	busy, idle float64 // machine, seconds
	err        error
}

// markCPU samples s (nil: the bench and the machine alone).
func markCPU(s CPUSampler) cpuMark {
	var m cpuMark
	if s != nil {
		m.procs, m.err = s.CPU()
	}
	if p, err := procfs.Self(); err == nil {
		if st, err := p.Stat(); err == nil {
			m.self = time.Duration(st.CPUTime() * float64(time.Second))
		}
	}
	if fs, err := procfs.NewDefaultFS(); err == nil {
		if st, err := fs.Stat(); err == nil {
			c := st.CPUTotal
			m.busy = c.User + c.Nice + c.System + c.IRQ + c.SoftIRQ + c.Steal
			m.idle = c.Idle + c.Iowait
		}
	}
	return m
}

// cpuSince is the use from m0 to m1 over requests; nil when nothing
// could be read (not Linux) or no request was sent.
func cpuSince(m0, m1 cpuMark, requests int) *CPUUse {
	// The busy share is busy / (busy + idle) of the deltas, so that a
	// machine busy throughout is exactly 1; idle includes iowait, which
	// the kernel can step back, so its delta is taken as no less than 0.
	busy := m1.busy - m0.busy
	wall := busy + max(m1.idle-m0.idle, 0)
	if requests <= 0 || wall <= 0 || m0.err != nil || m1.err != nil {
		return nil
	}
	u := &CPUUse{PerRequestUS: map[string]float64{}, CPUs: runtime.NumCPU()}
	per := func(d time.Duration) float64 { return float64(d.Microseconds()) / float64(requests) }
	before := map[string]time.Duration{}
	for _, p := range m0.procs {
		before[p.Process] = p.CPU
	}
	groups := map[string]time.Duration{}
	for _, p := range m1.procs {
		if t0, ok := before[p.Process]; ok && p.CPU >= t0 {
			groups[p.Group] += p.CPU - t0
		}
	}
	for g, d := range groups {
		u.PerRequestUS[g] = per(d)
	}
	u.PerRequestUS["bench"] = per(m1.self - m0.self)
	for _, v := range u.PerRequestUS {
		u.TotalUS += v
	}
	u.SecondsCPU = busy
	u.MachineBusy = busy / wall
	return u
}

// cpuGroupOrder puts the usual groups first: the lock servers' and the
// database's (catalog.ServerInfo.Groups, in report order), then the
// fleet's own processes, then the bench.
func cpuGroupOrder() []string {
	var out []string
	for _, s := range catalog.Servers() {
		out = append(out, s.Groups...)
	}
	return append(out, "instance", "nginx", "proxy", "dashboard", "bench")
}

// cpuTable is the CPU per purchase, one row per summary (medians over
// its repeats).
func cpuTable(runs []RunResult) table {
	nameOf := runNamer(runs)
	var order []string
	by := map[string][]*CPUUse{}
	used := map[string]bool{} // a group shown: at least 1 µs in some run
	for _, r := range runs {
		if r.CPU == nil {
			continue
		}
		k := nameOf(r)
		if _, ok := by[k]; !ok {
			order = append(order, k)
		}
		by[k] = append(by[k], r.CPU)
		for g, v := range r.CPU.PerRequestUS {
			if v >= 1 {
				used[g] = true
			}
		}
	}
	if len(order) == 0 {
		return table{}
	}
	groupOrder := cpuGroupOrder()
	rank := func(g string) int {
		if i := slices.Index(groupOrder, g); i >= 0 {
			return i
		}
		return len(groupOrder)
	}
	groups := slices.SortedFunc(maps.Keys(used), func(a, b string) int {
		return cmp.Or(cmp.Compare(rank(a), rank(b)), strings.Compare(a, b))
	})
	t := table{Title: "Per-purchase CPU", Header: append(append([]string{"strategy"}, groups...), "total µs", "machine busy")}
	for _, name := range order {
		us := by[name]
		med := func(f func(*CPUUse) float64) float64 {
			vs := make([]float64, len(us))
			for i, u := range us {
				vs[i] = f(u)
			}
			return statOf(vs).Median
		}
		row := []string{name}
		for _, g := range groups {
			row = append(row, fmt.Sprintf("%.0f", med(func(u *CPUUse) float64 { return u.PerRequestUS[g] })))
		}
		busy := med(func(u *CPUUse) float64 { return u.MachineBusy })
		row = append(row, fmt.Sprintf("%.0f", med(func(u *CPUUse) float64 { return u.TotalUS })), fmt.Sprintf("%.0f%% of %d", 100*busy, us[0].CPUs))
		t.Rows = append(t.Rows, row)
		t.Bad = append(t.Bad, false)
	}
	return t
}

// cpuNote explains the CPU table.
var cpuNote = strings.Join([]string{
	"Per-purchase CPU: µs of CPU time per request sent, by process group (read from /proc over the load alone; for an asynchronous strategy until its queue drained): the stack's servers by kind (mysql is MariaDB), the instances, nginx, and bench, the load generator itself.",
	"machine busy: the share of all the machine's CPUs in use meanwhile. Near 100%, the run was bound by the machine's CPU, not by the strategy: ok/s is then about the CPUs over the total, and the columns say which process to make cheaper.",
}, " ")
