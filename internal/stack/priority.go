package stack

import (
	"fmt"
	"slices"
	"strings"
)

// The stack's CPU priorities (`up --priority`).
//
// On the lab's one machine every tier shares the same few CPUs, and on a
// hot goods the database's row lock is held by a thread that needs a CPU
// to finish and let the next purchase in. When an instance or nginx
// preempts it, every purchase waits: on 2 CPUs, sql-atomic through nginx
// sold 1300–1440/s with every process at the same priority and
// 1710–1780/s with the stateless tiers at nice 10 (wrk, 50 connections,
// 3 instances, default durability). A deployment puts its database and
// lock servers on hosts of their own; PriorityServersFirst is that on one
// machine, and the default.
const (
	// PriorityServersFirst runs the stateless tiers (YieldingKinds) at
	// YieldNice, the servers at 0.
	PriorityServersFirst = "servers-first"
	// PriorityEqual runs every process at niceness 0 (a stack started
	// before priorities existed runs like this).
	PriorityEqual = "equal"
	// YieldNice is the niceness of a yielding kind under
	// PriorityServersFirst: a CFS weight of 110 against a server's 1024.
	YieldNice = 10
)

// YieldingKinds are the components that yield the CPU to the servers:
// the stateless tiers. The fault proxy is the servers' network and does
// not yield; neither do the servers (internal/server).
var YieldingKinds = []Kind{KindInstance, KindNginx, KindDashboard}

// Priorities lists the values of `up --priority`.
func Priorities() []string { return []string{PriorityServersFirst, PriorityEqual} }

// ValidPriority returns p, or the default for "", or an error naming the
// values.
func ValidPriority(p string) (string, error) {
	if p == "" {
		return PriorityServersFirst, nil
	}
	if !slices.Contains(Priorities(), p) {
		return "", fmt.Errorf("--priority %q: want %s", p, strings.Join(Priorities(), " or "))
	}
	return p, nil
}

// NiceOf is the niceness the stack starts a component of kind k at.
func (s *State) NiceOf(k Kind) int {
	if s.Priority == PriorityServersFirst && slices.Contains(YieldingKinds, k) {
		return YieldNice
	}
	return 0
}

// PriorityName is the stack's priority, PriorityEqual for a state written
// before there were priorities.
func (s *State) PriorityName() string {
	if s.Priority == "" {
		return PriorityEqual
	}
	return s.Priority
}

// PriorityLine says the CPU priorities, for status and the reports'
// conditions.
func (s *State) PriorityLine() string {
	if s.PriorityName() == PriorityEqual {
		return "equal (every process at niceness 0; seckill up --priority " + PriorityServersFirst + ": the servers first)"
	}
	names := make([]string, len(YieldingKinds))
	for i, k := range YieldingKinds {
		names[i] = string(k)
	}
	return fmt.Sprintf("servers first (%s at niceness %d, the servers at 0, as on hosts of their own; seckill up --priority %s: all at 0)",
		strings.Join(names, ", "), YieldNice, PriorityEqual)
}
