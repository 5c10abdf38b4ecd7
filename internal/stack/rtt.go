package stack

// The links' round trip (`seckill up --rtt`): every proxy of the fault
// proxy (inst-K to each server, and in ha the members' links to one
// another) carries a toxic of the embedded Toxiproxy that delays each
// direction by half the round trip, to the microsecond
// (netfault.RTTToxic). The round trip the figures then run under is
// measured, not assumed: a one-byte echo through a proxy with the same
// toxics ("probe", B+92, to the proxy process's echo server on B+91),
// beside the same echo reached directly.

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"github.com/seckill-lab/seckill/bench/costmodel"
	"slices"
	"strings"
	"time"

	toxiproxy "github.com/Shopify/toxiproxy/v2/client"

	"github.com/seckill-lab/seckill/bench/fleet"
	"github.com/seckill-lab/seckill/internal/netfault"
	"github.com/seckill-lab/seckill/internal/server"
)

const (
	// offEcho is the proxy process's echo server; offProbe the proxy in
	// front of it.
	offEcho  = 91
	offProbe = 92
	// peerShift: a member's peer port P is dialled by the others at
	// P+peerShift (B+151..B+199, between the instances and their
	// proxies), where the proxy forwards it to P.
	peerShift = 150
	// probeName is the probe's proxy.
	probeName = "probe"
	// rttProbes is how many one-byte round trips a measure takes.
	rttProbes = 400
)

// rttToxics are the toxics of the links' round trip, half on each stream.
var rttToxics = []struct{ name, stream string }{{"rtt-up", "upstream"}, {"rtt-down", "downstream"}}

// rttOn reports whether the links carry a round trip (`up --rtt`, SetRTT).
func (s *State) rttOn() bool { return s.Proxy && s.RTT != nil }

// peered reports whether the members of the ha clusters reach one another
// through the proxy (decided at `up`: ha with --rtt).
func (s *State) peered() bool { return s.Proxy && s.PeerLinks }

// layout is the servers' layout of the stack.
func (s *State) layout(tools Tools) server.Layout {
	l := server.Layout{Dir: s.Dir, Base: s.BasePort, HA: s.HA(), Durability: s.Durability, Tools: tools}
	if s.peered() {
		l.PeerShift = peerShift
	}
	return l
}

// rttProxies are the proxies beyond the instances': the round-trip probe,
// and the members' peer links when they cross the proxy.
func rttProxies(st *State) []toxiproxy.Proxy {
	if !st.Proxy {
		return nil
	}
	out := []toxiproxy.Proxy{{Name: probeName, Listen: addr(st.port(offProbe)), Upstream: addr(st.port(offEcho)), Enabled: true}}
	if !st.peered() {
		return out
	}
	for _, p := range peerPorts(st.BasePort, st.Has) {
		out = append(out, toxiproxy.Proxy{Name: "peer." + strings.ReplaceAll(p.Name, " ", "-"),
			Listen: addr(p.Port + peerShift), Upstream: addr(p.Port), Enabled: true})
	}
	return out
}

// peerPorts are the members' peer ports (server.Spec.Peers) of the ha
// servers the stack runs (has).
func peerPorts(base int, has func(Backend) bool) []server.PortUse {
	var out []server.PortUse
	for _, sp := range server.All {
		if sp.Peers != nil && has(sp.Group) {
			out = append(out, sp.Peers(base)...)
		}
	}
	return out
}

// rttPorts are the ports rttProxies may take, for the port check of `up`.
func rttPorts(topology string, base int, backends []Backend) []portUse {
	ps := []portUse{{base + offEcho, "round-trip probe echo"}, {base + offProbe, "round-trip probe"}}
	if topology != TopologyHA {
		return ps
	}
	runs := func(b Backend) bool { return len(backends) == 0 || slices.Contains(backends, b) }
	for _, p := range peerPorts(base, runs) {
		ps = append(ps, portUse{p.Port + peerShift, "proxy to " + p.Name})
	}
	return ps
}

// applyRTT puts the round trip's toxics on every proxy that lacks them
// (after the proxy started, a scale added proxies, or a heal removed
// every toxic).
func applyRTT(st *State) error {
	if !st.rttOn() || st.RTT.RequestedMS == 0 {
		return nil
	}
	half := time.Duration(st.RTT.RequestedMS*float64(time.Millisecond)) / 2
	return eachRTTToxic(st, "add", "already exists", func(p *toxiproxy.Proxy, name, stream string) error {
		_, err := p.AddToxic(name, netfault.RTTToxic, stream, 1, toxiproxy.Attributes{"delay_us": half.Microseconds()})
		return err
	})
}

// eachRTTToxic runs do on every proxy for each of the round trip's
// toxics, an error containing benign (the toxic is there already, or is
// not) counting as done.
func eachRTTToxic(st *State, verb, benign string, do func(p *toxiproxy.Proxy, name, stream string) error) error {
	have, err := toxiproxy.NewClient(st.ProxyAddr()).Proxies()
	if err != nil {
		return fmt.Errorf("proxy: round trip: %w", err)
	}
	var errs []error
	for name, p := range have {
		for _, t := range rttToxics {
			if err := do(p, t.name, t.stream); err != nil && !strings.Contains(err.Error(), benign) {
				errs = append(errs, fmt.Errorf("proxy %s: %s %s: %w", name, verb, t.name, err))
			}
		}
	}
	return errors.Join(errs...)
}

// measureRTT measures the round trip through the links (the probe) and
// directly, into st.RTT.
func measureRTT(ctx context.Context, st *State) error {
	if !st.rttOn() {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second+time.Duration(rttProbes)*time.Duration(st.RTT.RequestedMS*float64(time.Millisecond)))
	defer cancel()
	through, err := costmodel.MeasureRTT(ctx, addr(st.port(offProbe)), rttProbes)
	if err != nil {
		return err
	}
	direct, err := costmodel.MeasureRTT(ctx, addr(st.port(offEcho)), rttProbes)
	if err != nil {
		return err
	}
	st.RTT.MeasuredMS = ms(through)
	st.RTT.DirectMS = ms(direct)
	return nil
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// SetRTT changes the round trip on a running stack's links (the proxy's
// toxics), measures it and saves it in the state: what a sweep over round
// trips runs between its points. The members' peer links follow only when
// the stack started with --rtt in ha (they are dialled through the proxy
// from the start or never).
func SetRTT(ctx context.Context, st *State, profile string, d time.Duration) error {
	if !st.Proxy {
		return errors.New("the round trip is added by the fault proxy, and this stack runs without it: seckill down, then seckill up --rtt PROFILE (or --proxy)")
	}
	if d < 0 {
		return fmt.Errorf("rtt %s: a round trip cannot be negative", d)
	}
	if err := eachRTTToxic(st, "remove", "not found", func(p *toxiproxy.Proxy, name, _ string) error { return p.RemoveToxic(name) }); err != nil {
		return err
	}
	st.RTT = &fleet.RTT{Profile: profile, RequestedMS: ms(d)}
	if err := applyRTT(st); err != nil {
		return err
	}
	if err := measureRTT(ctx, st); err != nil {
		return err
	}
	return st.save()
}

// newRTT is the state's round trip for `up --rtt`: nil for none.
func newRTT(profile string, d time.Duration) *fleet.RTT {
	if d <= 0 && profile == "" {
		return nil
	}
	return &fleet.RTT{Profile: profile, RequestedMS: ms(d)}
}

// RTTLine says the links' round trip, for status: "none" without one.
func (s *State) RTTLine() string {
	if s.RTT == nil {
		return "none (loopback: the links add nothing; seckill up --rtt " + strings.Join(netfault.ProfileNames(), "|") + "|DURATION)"
	}
	name := cmp.Or(s.RTT.Profile, "custom")
	peers := "instances to servers"
	if s.peered() {
		var with []string
		for _, p := range peerPorts(s.BasePort, s.Has) {
			with = append(with, p.Name)
		}
		peers += ", and the members' links to one another: " + strings.Join(with, ", ") + " (no other)"
	}
	return fmt.Sprintf("%s: %.3f ms requested, %.3f ms measured through the proxy (%.3f ms direct) on every link: %s", name, s.RTT.RequestedMS, s.RTT.MeasuredMS, s.RTT.DirectMS, peers)
}

// ConditionsLine says in a few words what the stack's figures run under:
// the links' round trip (as measured) and the servers' durability.
func (s *State) ConditionsLine() string {
	rtt := "round trip: loopback"
	if s.rttOn() {
		rtt = fmt.Sprintf("round trip %.2f ms (%s)", s.RTT.MeasuredMS, cmp.Or(s.RTT.Profile, "custom"))
	}
	return rtt + ", durability " + s.DurabilityLevel()
}
