package stack

// The servers' idle probes (internal/idleprobe): once every server is
// healthy and before any instance starts, each server the stack runs is
// probed straight at its address (never through the fault proxy) for the
// operations a lock uses. The figures go into state.json and `status`;
// the bench's cost model prices a server's own time with them.

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/go-sql-driver/mysql"

	"github.com/seckill-lab/seckill/internal/idleprobe"
	"github.com/seckill-lab/seckill/internal/server"
	"github.com/seckill-lab/seckill/stock/catalog"
)

// probeTargets are the idle probes' targets of the servers st runs: each
// lock server's (server.IdleProbes) first address in the variable that
// holds its client addresses (catalog.ServerInfo.Env): the Redis primary,
// the first member of a quorum group.
func (s *State) probeTargets() []idleprobe.Target {
	var out []idleprobe.Target
	for _, p := range server.IdleProbes() {
		info, ok := catalog.ServerOf(p.Server)
		if !ok {
			continue
		}
		addrs := s.Addrs(info.Env)
		if len(addrs) == 0 {
			continue
		}
		t := idleprobe.Target{Probes: p, Addr: addrs[0]}
		hostport := t.Addr
		if cfg, err := mysql.ParseDSN(t.Addr); err == nil { // a DSN, not host:port
			hostport = cfg.Addr
		}
		if i := slices.IndexFunc(s.Components, func(c Component) bool { return c.Addr == hostport }); i >= 0 {
			t.Component = s.Components[i].Name
		}
		out = append(out, t)
	}
	return out
}

// probeServers measures the idle probes of st's servers into st.Probes.
func probeServers(ctx context.Context, st *State) {
	st.Probes = idleprobe.Run(ctx, st.probeTargets(), idleprobe.Options{FsyncDir: st.Dir})
}

// ProbeLines say the idle probes, one line per server: "redis (redis-1):
// get 0.041, set 0.045, eval 0.052 ms" or the server's error; none when
// the stack was not probed.
func (s *State) ProbeLines() []string {
	if s.Probes == nil {
		return nil
	}
	var out []string
	for _, p := range server.IdleProbes() {
		sp, ok := s.Probes.Servers[string(p.Server)]
		if !ok {
			continue
		}
		line := fmt.Sprintf("%s (%s):", p.Server, sp.Component)
		if sp.Error != "" {
			out = append(out, line+" error: "+sp.Error)
			continue
		}
		var ops []string
		for _, op := range p.Ops {
			o := sp.Ops[string(op)]
			switch {
			case o.N == 0:
				ops = append(ops, fmt.Sprintf("%s error: %s", op, o.Error))
			default:
				ops = append(ops, fmt.Sprintf("%s %.3f", op, o.MS))
			}
		}
		out = append(out, line+" "+strings.Join(ops, ", ")+" ms")
	}
	return out
}

// writeProbes prints the probes for status: a heading with how they were
// taken, then ProbeLines.
func writeProbes(w io.Writer, s *State) {
	if s.Probes == nil {
		fmt.Fprintf(w, "probes:      none (the stack started before seckill measured its servers idle)\n")
		return
	}
	fmt.Fprintf(w, "probes:      idle, straight at each server, median of %d per operation (included: the loopback round trip, %.3f ms, and where a server fsyncs a write's fsync, %.3f ms), %s\n",
		s.Probes.Samples, s.Probes.LoopbackRTTMS, s.Probes.FsyncMS, s.Probes.At.Format("2006-01-02 15:04:05 UTC"))
	for _, l := range s.ProbeLines() {
		fmt.Fprintf(w, "             %s\n", l)
	}
}
