package stack

// The fault proxy (`seckill up --proxy`): one Toxiproxy server, run as the
// stack's component "proxy" (`seckill proxy`, Toxiproxy used as a library),
// stands between every instance and every server it talks to, so a fault
// can cut or slow the link between one instance and one server without
// touching either process.
//
// Instance inst-K reaches the server that listens on 127.0.0.1:PORT at
// 127.0.0.1:PORT+proxyShift(K), ports of its own on the one loopback
// address every platform has. The proxy there is named "inst-K.SERVER"
// (inst-2.redis-1). Its HTTP API listens on 127.0.0.1:B+90.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	toxiproxy "github.com/Shopify/toxiproxy/v2/client"

	"github.com/seckill-lab/seckill/internal/config"
	"github.com/seckill-lab/seckill/internal/fault"
	"github.com/seckill-lab/seckill/internal/netfault"
	"github.com/seckill-lab/seckill/internal/server"
)

// proxiedVars are the instance variables that hold server addresses: the
// server descriptions' (the Sentinels' too: the addresses they name are
// dialled through the proxy host as well), but for their Direct ones.
func proxiedVars() []string {
	var out []string
	for _, sp := range server.All {
		if sp.Env == nil {
			continue
		}
		for _, kv := range sp.Env(0, true, true) {
			if !slices.Contains(sp.Direct, kv[0]) {
				out = append(out, kv[0])
			}
		}
	}
	return out
}

// KindProxy is the fault proxy's kind; ProxyName its component name.
const KindProxy Kind = "proxy"

// ProxyName is the fault proxy's component name.
const ProxyName = string(KindProxy)

// offProxy is the fault proxy's API port offset.
const offProxy = 90

// ErrNoProxy: a partition or latency fault on a stack started without the
// proxy.
var ErrNoProxy = errors.New("this fault needs the fault proxy between the instances and the servers")

// Instance k reaches the server on port P at 127.0.0.1:P+proxyShift(k):
// its own proxy ports, B+200+50(k-1)+offset, one loopback address (macOS
// has only 127.0.0.1 on its loopback by default). The servers' offsets
// are below proxySlot.
const (
	offProxies = 200
	proxySlot  = 50
)

// proxyShift is how far above a server's port instance k's proxy for it
// listens.
func proxyShift(k int) int { return offProxies + proxySlot*(k-1) }

// ProxyAddr is the address of the proxy's Toxiproxy API.
func (s *State) ProxyAddr() string { return addr(s.port(offProxy)) }

// proxied reports whether instances talk to components of kind k (through
// the proxy when there is one): the servers' kinds.
func proxied(k Kind) bool {
	_, _, ok := server.KindOf(k)
	return ok
}

// proxyID names the proxy between instance inst and server.
func proxyID(inst, srv string) string { return inst + "." + srv }

// proxyConfig lists the proxies of instances 1..n: one per instance and
// server (and those of the links' round trip, rttProxies).
func proxyConfig(st *State, n int) []toxiproxy.Proxy {
	out := rttProxies(st)
	for k := 1; k <= n; k++ {
		for _, c := range st.Components {
			if !proxied(c.Kind) {
				continue
			}
			_, port, _ := net.SplitHostPort(c.Addr)
			p, _ := strconv.Atoi(port)
			out = append(out, toxiproxy.Proxy{Name: proxyID(instName(k), c.Name),
				Listen: addr(p + proxyShift(k)), Upstream: c.Addr, Enabled: true})
		}
	}
	return out
}

// proxyConfigFile is where up writes the proxies the proxy starts with.
func proxyConfigFile(st *State) string { return filepath.Join(st.Dir, "proxy", "proxies.json") }

// writeProxyConfig writes the proxies of instances 1..n for the proxy's
// next start.
func writeProxyConfig(st *State, n int) (string, error) {
	b, err := json.MarshalIndent(proxyConfig(st, n), "", "  ")
	if err != nil {
		return "", err
	}
	f := proxyConfigFile(st)
	if err := os.MkdirAll(filepath.Dir(f), 0o755); err != nil {
		return "", err
	}
	return f, writeFileAtomic(f, b, 0o644)
}

// startProxy starts the fault proxy after the servers, before the
// instances.
func (r *runner) startProxy(ctx context.Context, o Options) error {
	f, err := writeProxyConfig(r.st, o.Instances)
	if err != nil {
		return err
	}
	want := len(proxyConfig(r.st, o.Instances))
	c := Component{Name: ProxyName, Kind: KindProxy, Addr: r.st.ProxyAddr(),
		Cmdline: []string{o.Binary, "proxy", "--listen", r.st.ProxyAddr(), "--config", f, "--echo", addr(r.st.port(offEcho))}}
	return r.launch(ctx, o, c, nil,
		func(ctx context.Context, c Component) error { return checkProxy(c.Addr, want) })
}

// checkProxy passes when the proxy's API answers with want proxies.
func checkProxy(hostport string, want int) error {
	ps, err := toxiproxy.NewClient(hostport).Proxies()
	if err != nil {
		return fmt.Errorf("proxy API on %s: %w", hostport, err)
	}
	if len(ps) != want {
		return fmt.Errorf("proxy on %s has %d proxies, want %d", hostport, len(ps), want)
	}
	return nil
}

// syncProxies makes the running proxy serve instances 1..n (a scale adds
// them before it starts new instances, removes them after it stopped
// some), and rewrites its config file for its next start.
func syncProxies(st *State, n int) error {
	if !st.Proxy {
		return nil
	}
	if _, err := writeProxyConfig(st, n); err != nil {
		return err
	}
	cl := toxiproxy.NewClient(st.ProxyAddr())
	want := proxyConfig(st, n)
	if _, err := cl.Populate(want); err != nil {
		return fmt.Errorf("proxy: add the instances' proxies: %w", err)
	}
	have, err := cl.Proxies()
	if err != nil {
		return fmt.Errorf("proxy: %w", err)
	}
	var errs []error
	for name, p := range have {
		if !slices.ContainsFunc(want, func(w toxiproxy.Proxy) bool { return w.Name == name }) {
			errs = append(errs, p.Delete())
		}
	}
	return errors.Join(append(errs, applyRTT(st))...)
}

// proxiedEnv rewrites the server addresses of instance k's environment to
// its proxy ports.
func proxiedEnv(env map[string]string, k int) {
	shift := proxyShift(k)
	for _, key := range proxiedVars() {
		if key == config.EnvSentinels {
			// The failover client dials the Sentinels, and the Redis
			// addresses they name, through its shifting dialer
			// (config.ProxyShift): shifted here too, they would be
			// shifted twice.
			continue
		}
		if v, ok := env[key]; ok {
			env[key] = loopbackPort.ReplaceAllStringFunc(v, func(m string) string {
				p, _ := strconv.Atoi(strings.TrimPrefix(m, "127.0.0.1:"))
				return addr(p + shift)
			})
		}
	}
	env[config.EnvProxyShift] = strconv.Itoa(shift)
}

// loopbackPort matches a 127.0.0.1:PORT address.
var loopbackPort = regexp.MustCompile(`127\.0\.0\.1:[0-9]+`)

// linkGroup lists the components of the link group name (the servers
// behind one kind of lock, from their descriptions), nil when no group has
// that name.
func linkGroup(st *State, name string) []string {
	l, ok := server.FindLink(name, st.HA())
	if !ok {
		return nil
	}
	if l.Names != nil {
		return l.Names
	}
	var out []string
	for _, c := range st.Components {
		if slices.Contains(l.Kinds, c.Kind) {
			out = append(out, c.Name)
		}
	}
	return out
}

// linkTargets reads a link fault's target, [INSTANCE/]SERVER (SERVER a
// proxied component or a link group of the server descriptions),
// into the names of the proxies it covers.
func linkTargets(st *State, target string) ([]string, error) {
	if !st.Proxy {
		return nil, fmt.Errorf("%w: restart the stack with it (seckill down, then seckill up --proxy)", ErrNoProxy)
	}
	inst, srv, ok := strings.Cut(target, "/")
	if !ok {
		inst, srv = "", target
	}
	insts := st.InstanceNames()
	if inst != "" {
		if !slices.Contains(insts, inst) {
			return nil, fmt.Errorf("%w %q in %q; the instances are %s", ErrUnknownComponent, inst, target, strings.Join(insts, ", "))
		}
		insts = []string{inst}
	}
	servers := linkGroup(st, srv)
	if servers == nil {
		if c, ok := st.Component(srv); ok && proxied(c.Kind) {
			servers = []string{srv}
		}
	}
	if len(servers) == 0 {
		var valid []string
		for _, c := range st.Components {
			if proxied(c.Kind) {
				valid = append(valid, c.Name)
			}
		}
		return nil, fmt.Errorf("%w %q: a link fault takes [INSTANCE/]SERVER, SERVER one of %s, %s",
			ErrUnknownComponent, srv, strings.Join(server.LinkNames(st.HA()), ", "), strings.Join(valid, ", "))
	}
	var out []string
	for _, i := range insts {
		for _, s := range servers {
			out = append(out, proxyID(i, s))
		}
	}
	return out, nil
}

// Toxics a link fault adds.
var linkToxics = map[string][]struct{ name, typ, stream string }{
	// A partition drops every byte both ways, on open and new connections,
	// and closes nothing: what a client sees of a silent network.
	fault.Partition: {{"partition-up", "timeout", "upstream"}, {"partition-down", "timeout", "downstream"}},
	// Latency delays every answer: each round trip takes Delay longer,
	// half on the way there, half on the way back, to the microsecond.
	fault.Latency: {{"latency-up", netfault.RTTToxic, "upstream"}, {"latency-down", netfault.RTTToxic, "downstream"}},
}

// setLinkFault adds (on) or removes the toxics of kind on the proxies.
func setLinkFault(st *State, kind string, proxies []string, delay time.Duration, on bool) error {
	cl := toxiproxy.NewClient(st.ProxyAddr())
	var errs []error
	for _, name := range proxies {
		p, err := cl.Proxy(name)
		if err != nil {
			errs = append(errs, fmt.Errorf("proxy %s: %w", name, err))
			continue
		}
		for _, t := range linkToxics[kind] {
			if !on {
				if err := p.RemoveToxic(t.name); err != nil && !strings.Contains(err.Error(), "not found") {
					errs = append(errs, fmt.Errorf("proxy %s: remove %s: %w", name, t.name, err))
				}
				continue
			}
			attrs := toxiproxy.Attributes{"timeout": 0}
			if t.typ == netfault.RTTToxic {
				attrs = toxiproxy.Attributes{"delay_us": delay.Microseconds() / 2}
			}
			if _, err := p.AddToxic(t.name, t.typ, t.stream, 1, attrs); err != nil {
				errs = append(errs, fmt.Errorf("proxy %s: add %s: %w", name, t.name, err))
			}
		}
	}
	return errors.Join(errs...)
}

// resetProxy removes every toxic (heal).
func resetProxy(st *State) error {
	if !st.Proxy {
		return nil
	}
	if c, ok := st.Component(ProxyName); !ok || !alive(c) {
		return nil
	}
	if err := toxiproxy.NewClient(st.ProxyAddr()).ResetState(); err != nil {
		return fmt.Errorf("proxy: reset: %w", err)
	}
	// A heal ends the faults, not the network: the round trip stays.
	return applyRTT(st)
}
