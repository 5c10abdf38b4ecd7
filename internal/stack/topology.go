package stack

import (
	"context"
	"fmt"
	"strings"

	"github.com/seckill-lab/seckill/bench/fleet"
	"github.com/seckill-lab/seckill/internal/server"
)

// Topologies of the stack (Options.Topology, `seckill up --topology`).
const (
	// TopologySingle is one node per server (and the five independent Redis
	// servers of the Redlock set).
	TopologySingle = "single"
	// TopologyHA runs each description's ha members instead: a
	// Sentinel-monitored Redis primary and replica, three-member quorum
	// groups.
	TopologyHA = "ha"
	// DefaultTopology is the topology of Options.Topology's zero value.
	DefaultTopology = TopologySingle
)

// Topologies lists the valid topologies.
func Topologies() []string { return []string{TopologySingle, TopologyHA} }

// HA sizes and settings (see internal/server).
const (
	// HAMembers is the number of members of each replicated group.
	HAMembers = server.HAMembers
	// SentinelMaster is the master name the Sentinels monitor.
	SentinelMaster = server.SentinelMaster
)

// HA reports whether the stack runs the ha topology.
func (s *State) HA() bool { return s.Topology == TopologyHA }

// componentRole is the role c plays in its replication group, as its
// description looks it up; "" for the kinds that play none.
func componentRole(ctx context.Context, c Component) (string, error) {
	_, ks, ok := server.KindOf(c.Kind)
	if !ok || ks.Role == nil {
		return "", nil
	}
	return ks.Role(ctx, c.Addr)
}

// validTopology checks t (empty means DefaultTopology).
func validTopology(t string) (string, error) {
	if t == "" {
		return DefaultTopology, nil
	}
	for _, v := range Topologies() {
		if t == v {
			return t, nil
		}
	}
	return "", fmt.Errorf("--topology %q: want %s", t, strings.Join(Topologies(), " or "))
}

// DurabilityLevel is the stack's durability level (the default for a state
// written before there was one).
func (s *State) DurabilityLevel() string {
	if s.Durability == "" {
		return server.DurabilityDefault
	}
	return s.Durability
}

// Fleet is the stack as a bench sees it: nginx, the instances, the admin
// token and the conditions the servers run under.
func (s *State) Fleet() fleet.Fleet {
	f := fleet.Fleet{Target: s.NginxURL(), Instances: s.InstanceURLs(), AdminToken: s.AdminToken, Durability: s.DurabilityLevel(), DataDir: s.Dir,
		Priority: s.PriorityName(), Probes: s.Probes}
	if s.RTT != nil {
		f.RTT = *s.RTT
	}
	server.DescribeDurability(&f)
	return f
}

// DurabilityLines say, server by server, what its level means for the
// servers this stack runs: "redis: ...", in server.All order.
func (s *State) DurabilityLines() []string {
	var out []string
	for _, sp := range server.All {
		if d := sp.Durability[s.DurabilityLevel()]; d != "" && s.Has(sp.Group) {
			out = append(out, string(sp.Group)+": "+d)
		}
	}
	return out
}
