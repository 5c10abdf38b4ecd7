// Package fleet describes the fleet a bench fires at, in the terms both
// the process supervisor (internal/stack) and the bench use: where it is
// (Fleet, ResolveInstances), the conditions it runs under (RTT, Cluster),
// its processes' CPU time (CPUSample), the servers' idle latencies
// (ServerProbes) and a fault injected into it (Fault; the lab's
// internal/fault parses a spec into one). It holds data only: it imports
// nothing of the lab, no lock backend, no server and no HTTP framework,
// so a bench of any service can fill it in.
package fleet

import "time"

// Fleet is where a bench fires: Target is the load balancer (nginx) every
// purchase goes through; Instances are the base URLs of every service
// instance (the admin API is called on each of them); AdminToken is the
// bearer token the instances accept.
type Fleet struct {
	Target     string
	Instances  []string
	AdminToken string
	// Durability is what the fleet's servers make durable before they
	// acknowledge a write (`seckill up --durability`); "" when the fleet
	// was started elsewhere and nobody said. Reports state it.
	Durability string
	// DurabilityMeans says in one sentence what Durability means for the
	// fleet's servers, for the report; "" when nobody said.
	DurabilityMeans string
	// Fsyncs are the servers, by name (catalog.Server: the cost model's
	// names), whose acknowledged writes cost an
	// fsync of the disk at Durability; none when nobody said (the cost
	// model then prices no fsync).
	Fsyncs []string
	// Cluster, when the bench runs on Kubernetes, says where (ClusterFromEnv).
	Cluster *Cluster
	// RTT is the network round trip the fleet's links add (`seckill up
	// --rtt`); the zero value when none was asked for or nobody said.
	RTT RTT
	// Priority is the CPU priorities of the fleet's processes on a shared
	// machine (`seckill up --priority`: servers-first or equal); "" when
	// nobody said. Reports state it.
	Priority string
	// DataDir is a directory on the file system of the servers' data
	// (the stack's directory), where the cost model measures the fsync
	// latency; "" when unknown (the temporary directory is measured).
	DataDir string
	// Probes are the servers' idle latencies measured when the stack
	// started; nil when nobody measured them (no server time is priced).
	Probes *ServerProbes
}

// RTT is a network round-trip time added on the fleet's links: the one
// asked for (a profile's or a duration) and the one measured through the
// links (what the figures ran under). Reports state both.
type RTT struct {
	// Profile is the named profile asked for (loopback, zone,
	// cross-zone, region), "" for a bare duration.
	Profile string `json:"profile,omitempty"`
	// RequestedMS is the added round trip asked for, in ms.
	RequestedMS float64 `json:"requested_ms"`
	// MeasuredMS is the median round trip measured through the links
	// (the proxy's own cost included); 0 when not measured.
	MeasuredMS float64 `json:"measured_ms"`
	// DirectMS is the same measure without the links (plain loopback),
	// so MeasuredMS - DirectMS is what the links add.
	DirectMS float64 `json:"direct_ms,omitempty"`
}

// ServerProbes are the servers' idle latencies, measured straight at each
// server (never through the links' proxy) when the stack started, for the
// operations a lock uses: what the cost model prices a server's own time
// with (internal/idleprobe).
type ServerProbes struct {
	// At is when the probes ran.
	At time.Time `json:"at"`
	// Samples is how many requests of each operation were asked for, and
	// BudgetMS the time each server was given for all of its operations.
	Samples  int     `json:"samples"`
	BudgetMS float64 `json:"budget_ms"`
	// LoopbackRTTMS is the median one-byte round trip on 127.0.0.1
	// measured with them: the wire inside each probe's figure.
	LoopbackRTTMS float64 `json:"loopback_rtt_ms"`
	// FsyncMS is the median write+fsync of a small block on the servers'
	// data directory's file system measured with them: the disk inside a
	// write's probe where the server fsyncs; 0 when not measured.
	FsyncMS float64 `json:"fsync_ms,omitempty"`
	// Servers are the probes by server group (catalog.Server).
	Servers map[string]ServerProbe `json:"servers"`
}

// ServerProbe is one server's idle probes.
type ServerProbe struct {
	// Component is the node probed (redis-1, ...), Addr its address.
	Component string `json:"component"`
	Addr      string `json:"addr"`
	// Ops are the operations by name (cost.Op), in ms.
	Ops map[string]OpProbe `json:"ops,omitempty"`
	// Error says why the server could not be probed at all (down, refused).
	Error string `json:"error,omitempty"`
}

// OpProbe is one operation's idle latency.
type OpProbe struct {
	// MS is the median of N requests, in ms (the warm-ups before them
	// not counted); 0 when none succeeded.
	MS float64 `json:"ms"`
	N  int     `json:"n"`
	// Error says why the operation got no sample, or fewer than asked.
	Error string `json:"error,omitempty"`
}

// Median returns the probe of op on server, and whether it has a figure.
func (p *ServerProbes) Median(server, op string) (float64, bool) {
	if p == nil {
		return 0, false
	}
	o, ok := p.Servers[server].Ops[op]
	return o.MS, ok && o.N > 0
}
