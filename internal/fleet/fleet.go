// Package fleet describes the fleet a bench fires at, in the terms both
// the process supervisor (internal/stack) and the bench use: where it is
// (Fleet, ResolveInstances), the conditions it runs under (RTT, Cluster),
// its processes' CPU time (CPUSample) and a fault injected into it (Fault,
// ParseFault). It holds data and parsing only: it imports no lock backend,
// no server and no HTTP framework.
package fleet

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
