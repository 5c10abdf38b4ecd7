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
// single topology, with the proxy (at most SideOffset-7 ports above its
// base). A lesson that starts more, or larger ones, raises these:
// internal/lab keeps their ports free for each lab.
const (
	SideStacks    = 2
	SideInstances = 3
	// SideOffset is how far apart the class's stack and its side stacks
	// are: room for the class's stack with the proxy and 3 instances, or
	// 50 instances without it.
	SideOffset = 350
)

// SideBase is the base port of a lesson's k-th side stack (k from 0) beside
// the stack on base: SideOffset above it, then SideOffset further up each
// (below it when that would pass MaxBasePort). A stack and its side stacks
// take one block of ports, B..B+SideOffset*SideStacks+343, so stacks placed
// that far apart never meet.
func SideBase(base, k int) int {
	if base+SideOffset*SideStacks <= MaxBasePort {
		return base + SideOffset*(k+1)
	}
	return base - SideOffset*(k+1)
}
