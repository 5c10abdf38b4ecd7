package nemesis

import (
	"fmt"
	"slices"
	"strings"

	"github.com/seckill-lab/seckill/internal/server"
	"github.com/seckill-lab/seckill/internal/stack"
	"github.com/seckill-lab/seckill/stock/catalog"
)

// ErrNotHA is returned for a stack the nemesis cannot run on.
var ErrNotHA = fmt.Errorf("nemesis needs the ha topology with the fault proxy: seckill down, then seckill up --topology ha --proxy")

// LayoutOf reads the stack st into the schedule's layout for strategy:
// the needed group is the link group of the server the catalogue says the
// strategy needs (catalog.Strategy.Server, server.LinkOfServer); the
// others are every other link group the stack runs but MariaDB's, which
// every strategy writes its orders to (it is faulted only as the needed
// group of a strategy that needs nothing else).
func LayoutOf(st *stack.State, strategy string) (Layout, error) {
	if !st.HA() || !st.Proxy {
		return Layout{}, fmt.Errorf("%w (the stack in %s runs the %s topology, proxy %v)", ErrNotHA, st.Dir, st.Topology, st.Proxy)
	}
	info, ok := catalog.Lookup(strategy)
	if !ok {
		return Layout{}, fmt.Errorf("nemesis: unknown strategy %q; valid: %s", strategy, strings.Join(catalog.StrategyNames(), ", "))
	}
	needed := server.LinkOfServer(string(info.Server))
	mysql := server.LinkOfServer(string(catalog.ServerMySQL))
	l := Layout{Instances: st.InstanceNames()}
	for _, name := range server.LinkNames(true) {
		g, ok := groupOf(st, name)
		switch {
		case !ok:
		case name == needed:
			l.Needed = g
		case name != mysql:
			l.Others = append(l.Others, g)
		}
	}
	if len(l.Needed.Members) == 0 {
		return l, fmt.Errorf("nemesis: %s needs %s (link %s), which the stack in %s does not run: seckill up --topology ha --proxy with it",
			strategy, info.Server, needed, st.Dir)
	}
	return l, nil
}

// groupOf is the link group name with its members in st; false when st
// runs none of them.
func groupOf(st *stack.State, name string) (Group, bool) {
	link, ok := server.FindLink(name, true)
	if !ok {
		return Group{}, false
	}
	g := Group{Link: name}
	for _, c := range st.Components {
		if !slices.Contains(link.Names, c.Name) && !slices.Contains(link.Kinds, c.Kind) {
			continue
		}
		g.Members = append(g.Members, c.Name)
		if _, ks, ok := server.KindOf(c.Kind); ok && ks.Role != nil {
			g.Leads = true
		}
		if c.Kind == server.KindSentinel {
			g.Failover = true
		}
	}
	return g, len(g.Members) > 0
}
