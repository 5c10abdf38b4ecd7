package stack

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/seckill-lab/seckill/internal/config"
	"github.com/seckill-lab/seckill/internal/server"
	"github.com/seckill-lab/seckill/internal/supervise"
	"github.com/seckill-lab/seckill/stock"
	"github.com/seckill-lab/seckill/stock/catalog"
)

// Options configure Up.
type Options struct {
	// Dir is the run directory (default DefaultDir).
	Dir string
	// BasePort places every port (default DefaultBasePort; see the package doc).
	BasePort int
	// Topology is TopologySingle (default) or TopologyHA.
	Topology string
	// Durability is what every server makes durable before it
	// acknowledges a write: server.DurabilityDefault (default),
	// DurabilityFsync or DurabilityNone (see internal/server).
	Durability string
	// Priority is PriorityServersFirst (default) or PriorityEqual: the
	// CPU priorities of the stateless tiers against the servers.
	Priority string
	// Instances is the number of `seckill serve` instances (default 3).
	Instances int
	// Strategy is SECKILL_STRATEGY for the instances (default "none"); Scale
	// starts new instances with the same one.
	Strategy string
	// Binary is the seckill binary the instances run (default os.Executable()).
	Binary string
	// AdminToken for the instances; default $SECKILL_ADMIN_TOKEN, else a
	// random token kept in DIR/admin-token.
	AdminToken string
	// Out receives progress lines (default: discarded).
	Out io.Writer
	// StartTimeout bounds each component's wait for health (default 60s).
	StartTimeout time.Duration
	// Proxy puts the fault proxy (component "proxy", Toxiproxy) between
	// the instances and the servers, for the partition and latency faults.
	// Off by default: the quick demo measures the locks, not a proxy.
	Proxy bool
	// RTT is a network round trip the proxy adds on every link: the
	// instances' links to the servers and, in ha, the members' links to
	// one another. RTTProfile names it when it came from a profile
	// (netfault.Profiles). Either turns Proxy on (profile loopback: the
	// links through the proxy, nothing added, the proxy's cost measured).
	RTT        time.Duration
	RTTProfile string
	// Backends are the server groups to start (default AllBackends; see
	// ParseBackends). The instances start without the others' addresses:
	// the strategies that need them answer 503 backend_unavailable.
	// BackendMySQL is always needed.
	Backends []Backend
	// Dashboard starts the live dashboard (component "dashboard", `seckill
	// dashboard`) on B+88 after nginx. `seckill up` turns it on; it is
	// idle (polls nothing) while no browser watches it.
	Dashboard bool
	// Finder is where the servers are looked for. Default nil: this
	// machine (SystemFinder: $PATH, then the packages' known places).
	Finder *Finder

	// missingOptional are the optional backends left out of the default
	// because their tools are missing (said at `up`).
	missingOptional []Backend
}

// rtt reports whether a round trip was asked for (loopback, 0, included:
// the links then go through the proxy, whose own cost is measured).
func (o Options) rtt() bool { return o.RTT > 0 || o.RTTProfile != "" }

// finder is o.Finder, or this machine's.
func (o Options) finder() Finder {
	if o.Finder != nil {
		return *o.Finder
	}
	return SystemFinder()
}

// defaultBackends are every backend, but an optional one only
// when its tools are found: a machine without it runs the lab without it.
func defaultBackends(f Finder) (use, missing []Backend) {
	for _, b := range AllBackends {
		if sp, ok := server.ByGroup(b); ok && sp.Optional {
			if _, err := f.Find([]Backend{b}); err != nil {
				missing = append(missing, b)
				continue
			}
		}
		use = append(use, b)
	}
	return use, missing
}

func (o Options) normalize() (Options, error) {
	d, err := absDir(o.Dir)
	if err != nil {
		return o, err
	}
	o.Dir = d
	if o.BasePort == 0 {
		o.BasePort = DefaultBasePort
	}
	if o.Topology, err = validTopology(o.Topology); err != nil {
		return o, err
	}
	if o.Durability, err = server.ValidDurability(o.Durability); err != nil {
		return o, err
	}
	if o.Priority, err = ValidPriority(o.Priority); err != nil {
		return o, err
	}
	if o.Instances == 0 {
		o.Instances = DefaultInstances
	}
	if o.RTT < 0 {
		return o, fmt.Errorf("--rtt %s: a round trip cannot be negative", o.RTT)
	}
	if o.rtt() {
		o.Proxy = true // the round trip is the proxy's
	}
	if o.Instances < 1 || o.Instances > MaxInstances {
		return o, fmt.Errorf("--instances %d: want 1..%d", o.Instances, MaxInstances)
	}
	if o.BasePort < MinBasePort || o.BasePort > MaxBasePort {
		return o, fmt.Errorf("--base-port %d: want %d..%d", o.BasePort, MinBasePort, MaxBasePort)
	}
	if o.Strategy == "" {
		o.Strategy = DefaultStrategy
	}
	if err := (stock.Config{Name: o.Strategy}).Validate(); err != nil {
		return o, fmt.Errorf("--strategy: %w", err)
	}
	if len(o.Backends) == 0 {
		o.Backends, o.missingOptional = defaultBackends(o.finder())
	}
	if o.Backends, err = ParseBackends(joinBackends(o.Backends)); err != nil {
		return o, err
	}
	if b := strategyBackend(o.Strategy); b != "" && !slices.Contains(o.Backends, b) {
		return o, fmt.Errorf("--strategy %s needs the %s backend, which --backends %s leaves out: add it or pick another strategy",
			o.Strategy, b, joinBackends(o.Backends))
	}
	if o.Binary == "" {
		exe, err := os.Executable()
		if err != nil {
			return o, fmt.Errorf("find the seckill binary: %w", err)
		}
		o.Binary = exe
	}
	if fi, err := os.Stat(o.Binary); err != nil || fi.IsDir() || fi.Mode()&0o111 == 0 {
		return o, fmt.Errorf("seckill binary %s is not an executable file", o.Binary)
	}
	if o.Out == nil {
		o.Out = io.Discard
	}
	if o.StartTimeout <= 0 {
		o.StartTimeout = 60 * time.Second
	}
	return o, nil
}

// ephemeralPorts reads Linux's range of local ports for client sockets.
func ephemeralPorts() (lo, hi int, ok bool) {
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		return 0, 0, false
	}
	f := strings.Fields(string(b))
	if len(f) != 2 {
		return 0, 0, false
	}
	lo, err1 := strconv.Atoi(f[0])
	hi, err2 := strconv.Atoi(f[1])
	return lo, hi, err1 == nil && err2 == nil
}

// portUse is one port the stack needs.
type portUse struct {
	port int
	name string
}

// stackPorts lists the ports of the stack of the given topology: the
// servers' of the given backends (every one when none is given), then the
// lab's own.
func stackPorts(topology string, base, instances int, proxy, dashboard bool, backends ...Backend) []portUse {
	var ps []portUse
	if proxy {
		ps = append(ps, portUse{base + offProxy, "proxy API"})
		ps = append(ps, rttPorts(topology, base, backends)...)
	}
	if dashboard {
		ps = append(ps, portUse{base + offDashboard, DashboardName})
	}
	for _, sp := range server.All {
		if sp.Ports == nil || len(backends) > 0 && !slices.Contains(backends, sp.Group) {
			continue
		}
		for _, p := range sp.Ports(base, topology == TopologyHA) {
			ps = append(ps, portUse{p.Port, p.Name})
		}
	}
	ps = append(ps, portUse{base + offNginx, "nginx"})
	for k := 1; k <= instances; k++ {
		ps = append(ps, portUse{base + offInstance + k, instName(k)})
	}
	if proxy {
		var servers []portUse
		for _, p := range ps {
			if p.port > base && p.port-base < proxySlot {
				servers = append(servers, p)
			}
		}
		for k := 1; k <= instances; k++ {
			for _, p := range servers {
				ps = append(ps, portUse{p.port + proxyShift(k), "proxy " + instName(k) + " to " + p.name})
			}
		}
	}
	return ps
}

// PortHelp describes the ports of a stack of topology as offsets from the
// base port B ("redis-1 B+1, ..."), for help texts.
func PortHelp(topology string) string {
	var parts []string
	for _, p := range stackPorts(topology, 0, 0, true, true) {
		parts = append(parts, fmt.Sprintf("%s B+%d", p.name, p.port))
	}
	return strings.Join(parts, ", ") + ", inst-K B+" + itoa(offInstance) + "+K"
}

// BackendsFor lists the backends strategies need, MySQL first (always
// needed), each once.
func BackendsFor(strategies ...string) []Backend {
	out := []Backend{BackendMySQL}
	for _, s := range strategies {
		if b := strategyBackend(s); b != "" && !slices.Contains(out, b) {
			out = append(out, b)
		}
	}
	return out
}

// strategyBackend is the backend strategy name needs besides MySQL ("" for
// none or an unknown name, which the instances reject themselves).
func strategyBackend(name string) Backend {
	s, _ := catalog.Lookup(name)
	return server.GroupOfServer(string(s.Server))
}

func instName(k int) string { return "inst-" + itoa(k) }

// checkPorts fails, naming every taken port, unless all are free.
func checkPorts(ps []portUse) error {
	var taken []string
	for _, p := range ps {
		if !portFree(p.port) {
			taken = append(taken, fmt.Sprintf("%d (%s)", p.port, p.name))
		}
	}
	switch len(taken) {
	case 0:
		return nil
	case 1:
		return fmt.Errorf("port %s is already in use on 127.0.0.1; stop that process or pass --base-port", taken[0])
	}
	return fmt.Errorf("ports %s are already in use on 127.0.0.1; stop those processes or pass --base-port", strings.Join(taken, ", "))
}

// adminToken returns the token for the instances and where it came from,
// and writes it to DIR/admin-token (0600).
func adminToken(dir, fromOpts string) (path, source, token string, err error) {
	path = filepath.Join(dir, tokenFile)
	token, source = fromOpts, "given by the caller"
	if token == "" {
		token, source = strings.TrimSpace(os.Getenv(config.EnvAdminToken)), "environment"
	}
	if token == "" {
		b := make([]byte, 24)
		if _, err := rand.Read(b); err != nil {
			return "", "", "", fmt.Errorf("generate admin token: %w", err)
		}
		token, source = hex.EncodeToString(b), "generated"
	}
	if err := writeFileAtomic(path, []byte(token+"\n"), 0o600); err != nil {
		return "", "", "", err
	}
	return path, source, token, nil
}

// runner starts components and records them in the state as they start.
type runner struct {
	mu    sync.Mutex
	st    *State
	out   io.Writer
	t0    time.Time
	procs map[string]*proc
}

func (r *runner) logf(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	fmt.Fprintf(r.out, format, args...)
}

// start starts c (its Cmdline, with env added to the environment) and
// saves the state with it.
func (r *runner) start(c Component, env []string) (*proc, Component, error) {
	c.Log = filepath.Join(r.st.Dir, "logs", c.Name+".log")
	p, err := startProc(r.st.NiceOf(c.Kind), c.Cmdline[0], c.Cmdline[1:], env, c.Log)
	if err != nil {
		return nil, Component{}, fmt.Errorf("%s: %w", c.Name, err)
	}
	c.Pid = p.Cmd.Process.Pid
	c.StartTime = supervise.StartTime(c.Pid)
	r.mu.Lock()
	defer r.mu.Unlock()
	r.st.Components = append(r.st.Components, c)
	r.procs[c.Name] = p
	sortComponents(r.st.Components)
	if err := r.st.save(); err != nil {
		return p, c, err
	}
	return p, c, nil
}

// launch starts c (its name, kind, address and Cmdline; env is added to
// its environment), waits (within o.StartTimeout) until check passes
// against it, and reports it healthy.
func (r *runner) launch(ctx context.Context, o Options, c Component, env []string, check func(ctx context.Context, c Component) error) error {
	p, c, err := r.start(c, env)
	if err != nil {
		return err
	}
	if err := waitHealthy(ctx, c.Name, p, c.Log, o.StartTimeout, func(ctx context.Context) error { return check(ctx, c) }); err != nil {
		return err
	}
	r.healthy(c.Name)
	return nil
}

func (r *runner) healthy(name string) {
	r.logf("  %-13s healthy at %5.1fs\n", name, time.Since(r.t0).Seconds())
}

// labRanks order the lab's own components after the servers.
var labRanks = map[Kind]int{KindProxy: 6, KindInstance: 7, KindNginx: 8, KindDashboard: 9}

// componentRank orders the components: by kind, in dependency order (a
// server's rank from its description, the instances after the servers,
// nginx last), then by number (a description's Order, else the number
// after the name's dash).
func componentRank(c Component) (int, int) {
	rank, ok := labRanks[c.Kind]
	if sp, ks, found := server.KindOf(c.Kind); found {
		rank = ks.Rank
		if n, ok := sp.Order[c.Name]; ok {
			return rank, n
		}
	} else if !ok {
		rank = len(labRanks) + 10
	}
	_, num, _ := strings.Cut(c.Name, "-")
	n, _ := strconv.Atoi(num)
	return rank, n
}

func sortComponents(cs []Component) {
	sort.SliceStable(cs, func(i, j int) bool {
		ki, ni := componentRank(cs[i])
		kj, nj := componentRank(cs[j])
		if ki != kj {
			return ki < kj
		}
		return ni < nj
	})
}

// Up starts the stack in opts.Dir and waits until every component is
// healthy. When the stack is already running it returns its state and
// ErrAlreadyRunning, changing nothing; when some of its components are
// down, it starts those and leaves the others alone. On failure (or ctx cancellation) it
// stops everything it started.
func Up(ctx context.Context, opts Options) (*State, error) {
	o, err := opts.normalize()
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(o.Dir, 0o755); err != nil {
		return nil, fmt.Errorf("create run directory: %w", err)
	}
	unlock, err := lockDir(ctx, o.Dir)
	if err != nil {
		return nil, err
	}
	defer unlock()

	prev, err := Load(o.Dir)
	switch {
	case err == nil:
		var running, stopped []string
		for _, c := range prev.Components {
			if alive(c) {
				running = append(running, c.Name)
			} else {
				stopped = append(stopped, c.Name)
			}
		}
		if len(stopped) == 0 && prev.Ready {
			return prev, ErrAlreadyRunning
		}
		if len(running) > 0 && len(stopped) > 0 && prev.Ready {
			// Bring back what is down; what runs keeps running (and
			// Redis keeps its data).
			fmt.Fprintf(o.Out, "stack in %s is partly running; starting what is down: %s\n", o.Dir, strings.Join(stopped, ", "))
			if _, err := startStopped(ctx, prev, o.Out); err != nil {
				return nil, fmt.Errorf("start what was down: %w", err)
			}
			return prev, nil
		}
		if len(running) > 0 {
			return nil, fmt.Errorf("stack in %s was left half-started by an interrupted `up`: run 'seckill down --dir %s' first", o.Dir, o.Dir)
		}
		// Stale state (e.g. after a reboot): start afresh.
		_ = os.Remove(filepath.Join(o.Dir, stateFile))
		_ = os.Remove(filepath.Join(o.Dir, envFile))
	case errors.Is(err, ErrNotRunning):
	default:
		return nil, err
	}

	for _, b := range o.missingOptional {
		fmt.Fprintf(o.Out, "%s not found: the stack runs without it (its strategies answer 503 backend_unavailable); `make deps` builds it, `seckill doctor` says more\n", b)
	}
	paths, err := o.finder().Find(o.Backends)
	if err != nil {
		return nil, err
	}
	if err := checkPorts(stackPorts(o.Topology, o.BasePort, o.Instances, o.Proxy, o.Dashboard, o.Backends...)); err != nil {
		return nil, err
	}
	tokPath, tokSource, tok, err := adminToken(o.Dir, o.AdminToken)
	if err != nil {
		return nil, err
	}
	st := &State{
		Dir: o.Dir, BasePort: o.BasePort, Topology: o.Topology, Durability: o.Durability, Strategy: o.Strategy, Binary: o.Binary,
		StartedAt: time.Now().UTC(), AdminTokenFile: tokPath, AdminTokenSource: tokSource, AdminToken: tok,
		NginxAccessLog: nginxPaths(&State{Dir: o.Dir}).accessLog, Proxy: o.Proxy, Backends: o.Backends,
		RTT: newRTT(o.RTTProfile, o.RTT), PeerLinks: o.rtt() && o.Topology == TopologyHA, Priority: o.Priority,
	}
	r := &runner{st: st, out: o.Out, t0: time.Now(), procs: map[string]*proc{}}
	if lo, hi, ok := ephemeralPorts(); ok && o.BasePort+offInstance+o.Instances >= lo && o.BasePort <= hi {
		fmt.Fprintf(o.Out, "warning: ports %d..%d overlap the ephemeral port range %d-%d: client connections may take them; prefer a --base-port below %d\n",
			o.BasePort, o.BasePort+offInstance+o.Instances, lo, hi, lo-offInstance-MaxInstances)
	}
	fmt.Fprintf(o.Out, "starting the stack in %s (topology %s, base port %d, %d instances, strategy %s, backends %s)\n",
		o.Dir, o.Topology, o.BasePort, o.Instances, o.Strategy, joinBackends(o.Backends))
	if err := r.up(ctx, o, paths); err != nil {
		r.mu.Lock()
		started := append([]Component(nil), st.Components...)
		r.mu.Unlock()
		stopErr := stopServers(started)
		if stopErr != nil { // keep state.json: `down` can retry
			return nil, fmt.Errorf("%w (and stopping what was started failed: %v)", err, stopErr)
		}
		_ = os.Remove(filepath.Join(o.Dir, stateFile))
		if ctx.Err() != nil {
			return nil, fmt.Errorf("up interrupted; stopped everything it had started: %w", ctx.Err())
		}
		return nil, fmt.Errorf("%w; stopped everything it had started", err)
	}
	st.Ready = true
	if err := st.save(); err != nil {
		return nil, err
	}
	if err := st.writeEnv(); err != nil {
		return nil, err
	}
	fmt.Fprintf(o.Out, "stack healthy in %.1fs\n", time.Since(r.t0).Seconds())
	return st, nil
}

func (r *runner) up(ctx context.Context, o Options, paths Tools) error {
	st := r.st
	// With a round trip on the links, the proxy starts first: the ha
	// members dial one another through it (its instances' proxies are
	// added once the servers run).
	if st.peered() {
		if err := r.startProxy(ctx, o); err != nil {
			return err
		}
	}
	// The servers start together; the first failure cancels the others.
	g, gctx := errgroup.WithContext(ctx)
	l := st.layout(paths)
	for _, sp := range server.All {
		if sp.Nodes == nil || !st.Has(sp.Group) {
			continue
		}
		for _, n := range sp.Nodes(l) {
			g.Go(func() error { return r.startNode(gctx, o, n) })
		}
	}
	if err := g.Wait(); err != nil {
		return err
	}
	switch {
	case st.peered():
		if err := syncProxies(st, o.Instances); err != nil {
			return err
		}
	case st.Proxy:
		if err := r.startProxy(ctx, o); err != nil {
			return err
		}
		if err := applyRTT(st); err != nil {
			return err
		}
	}
	if st.rttOn() {
		if err := measureRTT(ctx, st); err != nil {
			return err
		}
		r.logf("  %-13s %.3f ms measured (%.3f ms requested, %.3f ms direct)\n", "round trip", st.RTT.MeasuredMS, st.RTT.RequestedMS, st.RTT.DirectMS)
	}
	// The servers idle, before any instance talks to them.
	probeServers(ctx, st)
	for _, l := range st.ProbeLines() {
		r.logf("  %-13s %s\n", "idle probe", l)
	}

	var insts []Component
	for k := 1; k <= o.Instances; k++ {
		insts = append(insts, Component{Name: instName(k), Kind: KindInstance, Addr: addr(st.port(offInstance + k))})
	}
	// inst-1 first: each instance migrates the schema at start, and
	// concurrent migrations of a fresh database can collide.
	if err := r.startInstances(ctx, o, insts[:1]); err != nil {
		return err
	}
	if err := r.startInstances(ctx, o, insts[1:]); err != nil {
		return err
	}
	if err := r.startNginx(ctx, o, paths); err != nil {
		return err
	}
	if o.Dashboard {
		return r.startDashboard(ctx, o)
	}
	return nil
}

// startNode prepares and starts one server node of a description, and
// waits until its health check (after its Ready step) passes.
func (r *runner) startNode(ctx context.Context, o Options, n server.Node) error {
	if n.Prepare != nil {
		if err := n.Prepare(ctx); err != nil {
			return err
		}
	}
	_, ks, _ := server.KindOf(n.Kind)
	c := Component{Name: n.Name, Kind: n.Kind, Addr: addr(n.Port), Cmdline: append([]string{n.Bin}, n.Args...)}
	return r.launch(ctx, o, c, server.Env(n.Kind),
		func(ctx context.Context, c Component) error {
			if n.Ready != nil {
				if err := n.Ready(ctx, c.Addr); err != nil {
					return err
				}
			}
			return ks.Check(ctx, c.Addr)
		})
}

// instanceEnv is the environment of instance c, one of a fleet of
// instances: ours without any variable `seckill serve` reads
// (config.EnvVars) but the tuning ones (passThrough), plus the stack's.
// Other variables pass through. setting, when not "", is the fleet's
// setting it starts with (config.EnvSetting, fleetSetting).
//
// Unless our environment sets GOMAXPROCS, each instance gets its share of
// the machine's CPUs (instanceProcs), as a container with a CPU limit does
// (Go reads the cgroup's limit).
func instanceEnv(st *State, c Component, setting string, fleet int) []string {
	drop := map[string]bool{config.EnvSetting: true}
	for _, k := range config.EnvVars() {
		drop[k] = !slices.Contains(passThrough, k)
	}
	var env []string
	if _, ok := os.LookupEnv("GOMAXPROCS"); !ok {
		env = append(env, "GOMAXPROCS="+strconv.Itoa(instanceProcs(runtime.NumCPU(), fleet)))
	}
	for _, kv := range os.Environ() {
		if k, _, _ := strings.Cut(kv, "="); !drop[k] {
			env = append(env, kv)
		}
	}
	se := st.serveEnv()
	se[config.EnvListen] = c.Addr
	se[config.EnvInstance] = c.Name
	if setting != "" {
		se[config.EnvSetting] = setting
	}
	if st.Proxy {
		_, k := componentRank(c)
		proxiedEnv(se, k)
	}
	keys := make([]string, 0, len(se))
	for k := range se {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		env = append(env, k+"="+se[k])
	}
	return env
}

// passThrough are the config.EnvVars that reach the instances from the
// environment of `seckill up` (and of restart and scale), because they
// tune an instance rather than name a server: SECKILL_DB_INFLIGHT=0
// seckill up runs the lock-free purchases unbounded, SECKILL_STREAM_GATHER=0
// has redis-stream's consumers read again at once.
var passThrough = []string{config.EnvDBInflight, config.EnvStreamGather}

// instanceProcs is the GOMAXPROCS of each of fleet instances on a machine
// of cpus CPUs: its share, at least 1. Three instances on 2 CPUs get 1
// each. With more Ps than its share, an instance's idle Ps spin for work
// the other processes (the servers, nginx, the bench) need.
func instanceProcs(cpus, fleet int) int {
	return max(1, cpus/max(1, fleet))
}

// startInstances starts the instances concurrently and waits until each
// answers /healthz with its own name; o.Instances is the size of the fleet
// they join.
//
// The fleet's setting is read once, before any starts: every new instance
// takes it from the instances already running (none on a fresh stack),
// and the goroutines below add components to r.st as they go.
func (r *runner) startInstances(ctx context.Context, o Options, insts []Component) error {
	setting := fleetSetting(ctx, r.st, "")
	g, gctx := errgroup.WithContext(ctx)
	for _, ic := range insts {
		g.Go(func() error {
			c := Component{Name: ic.Name, Kind: KindInstance, Addr: ic.Addr, Cmdline: []string{o.Binary, "serve", "--listen", ic.Addr, "--name", ic.Name}}
			return r.launch(gctx, o, c, instanceEnv(r.st, ic, setting, o.Instances), checkInstance)
		})
	}
	return g.Wait()
}

func (r *runner) startNginx(ctx context.Context, o Options, paths Tools) error {
	const name = "nginx"
	f, err := writeNginxConf(r.st)
	if err != nil {
		return err
	}
	names := r.st.InstanceNames()
	c := Component{Name: name, Kind: KindNginx, Addr: addr(r.st.port(offNginx)), Cmdline: append([]string{paths.Bin["nginx"]}, nginxArgs(f)...)}
	return r.launch(ctx, o, c, nil,
		func(ctx context.Context, c Component) error { return checkNginx(ctx, c.URL(), names) })
}
