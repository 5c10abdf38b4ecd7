package stack

// The ports a stack takes above its base, for those who place several
// stacks on one machine (internal/lab).

// Span is the highest offset from the base port a stack of topology with
// n instances takes, every backend and the dashboard counted, the fault
// proxy's links too when proxy: its ports lie in B..B+Span.
func Span(topology string, instances int, proxy bool) int {
	m := 0
	for _, p := range stackPorts(topology, 0, instances, proxy, true) {
		m = max(m, p.port)
	}
	return m
}

// SideStacks is the most stacks of its own a lesson starts beside the
// class's stack at once (lesson 26: one per durability), at SideBase(B, 0)
// .. SideBase(B, SideStacks-1), each of at most SideInstances instances,
// single topology, with the proxy. A lesson that starts more, or larger
// ones, raises these: internal/lab keeps their ranges free for each lab.
const (
	SideStacks    = 2
	SideInstances = 3
)

// SideBase is the base port of a lesson's k-th side stack (k from 0) beside
// the stack on base: 2000 below it, then 1000 further down each; above it
// when that would go below MinBasePort.
func SideBase(base, k int) int {
	if b := base - 2000 - 1000*k; b >= MinBasePort {
		return b
	}
	return base + 3000 + 1000*k
}
