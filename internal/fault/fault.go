// Package fault defines, once, the faults the lab injects: each kind's
// name, what it does, what it targets, its parameter and whether it lasts
// until it is ended. The stack (internal/stack) carries them out; `seckill
// fault`, the dashboard, the scenarios and the bench's --fault name them
// from this table.
package fault

import (
	"slices"
	"time"
)

// Fault kinds.
const (
	Pause     = "pause"
	Kill      = "kill"
	Restart   = "restart"
	Partition = "partition"
	Latency   = "latency"
	Clock     = "clock"
	Failover  = "failover"
	Heal      = "heal"
)

// Defaults of the kinds' parameters.
const (
	DefaultDelay  = 300 * time.Millisecond // a latency fault's delay
	DefaultOffset = 2 * time.Second        // a clock fault's jump
)

// Kind describes one fault kind.
type Kind struct {
	Name string
	// Does says what it does, for help texts.
	Does string
	// Target is what it applies to: "component", "link" ([INSTANCE/]SERVER
	// through the fault proxy), "redis" (a Redis node) or "" (nothing).
	Target string
	// Param names its parameter ("" for none) and Default is its value
	// when not given.
	Param   string
	Default time.Duration
	// Lasting: it stays on until it is ended (healed, or at the end of
	// its duration); the others are over at once.
	Lasting bool
}

// Kinds are the fault kinds, in the order help texts list them.
var Kinds = []Kind{
	{Name: Pause, Does: "SIGSTOP the component; SIGCONT when it ends", Target: "component", Lasting: true},
	{Name: Kill, Does: "SIGKILL the component; start it again when it ends", Target: "component", Lasting: true},
	{Name: Restart, Does: "stop the component cleanly, then start it (over at once)", Target: "component"},
	{Name: Partition, Does: "cut [INSTANCE/]SERVER's links, both ways (needs the fault proxy)", Target: "link", Lasting: true},
	{Name: Latency, Does: "delay every answer on [INSTANCE/]SERVER's links (needs the fault proxy)", Target: "link", Param: "delay", Default: DefaultDelay, Lasting: true},
	{Name: Clock, Does: "jump a Redis node's clock forward, emulated: its keys' TTLs cut (over at once)", Target: "redis", Param: "offset", Default: DefaultOffset},
	{Name: Failover, Does: "SENTINEL FAILOVER of the Redis primary (ha; over when the old one replicates)"},
	{Name: Heal, Does: "undo every fault that is on"},
}

// Names lists the kinds' names; without heal when injectable is true (the
// bench schedules faults, it does not heal them).
func Names(injectable bool) []string {
	var out []string
	for _, k := range Kinds {
		if injectable && k.Name == Heal {
			continue
		}
		out = append(out, k.Name)
	}
	return out
}

// Lookup returns the kind called name.
func Lookup(name string) (Kind, bool) {
	i := slices.IndexFunc(Kinds, func(k Kind) bool { return k.Name == name })
	if i < 0 {
		return Kind{}, false
	}
	return Kinds[i], true
}
