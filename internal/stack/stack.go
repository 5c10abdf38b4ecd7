// Package stack runs the lab's local stack on loopback: the servers that
// internal/server describes (each one a row of server.All: its programs,
// ports, command lines, health check, role and durability), N `seckill
// serve` instances, nginx in front of them, and optionally the fault proxy
// and the live dashboard. It backs the `seckill up/down/status/logs/env`
// commands and gives other packages (the bench harness, the scenarios, the
// dashboard) the stack's addresses through Load and a way to re-scale the
// instances through Scale. It reads the server descriptions and switches
// over no server kind.
//
// # Topologies
//
// Options.Topology (`seckill up --topology`) picks the servers: single
// (the default: one node per server, and five independent Redis servers
// for Redlock) or ha (each description's ha members: a Sentinel-watched
// Redis pair and three-member quorum groups). state.json records the
// topology, so status, restart, Start, Signal and down handle every
// component of either. `status` shows each member's role (ROLE), as its
// description looks it up.
//
// # Ports
//
// Every port is derived from a base port B (DefaultBasePort = 17000, moved
// with Options.BasePort / `--base-port`), away from the servers' defaults.
// The servers' offsets are in their descriptions (B+1 .. B+40); the lab's
// own components are at:
//
//	nginx              B+80
//	dashboard          B+88   (Options.Dashboard; `seckill up` starts it)
//	fault proxy API    B+90   (Options.Proxy)
//	inst-1..inst-N     B+101 .. B+100+N   (N <= MaxInstances)
//
// All listen on 127.0.0.1 only. `up` checks every port before starting
// anything. Keep the range below Linux's ephemeral ports (32768-60999 by
// default, /proc/sys/net/ipv4/ip_local_port_range): there, client sockets
// of unrelated programs may hold a port at any time (up warns).
//
// # Run directory
//
// Everything lives in the run directory (DefaultDir = ".seckill", git-ignored):
//
//	state.json        the components (name, kind, address, pid, log, command line)
//	env.sh            `export SECKILL_...` lines for the stack (mode 0600)
//	admin-token       the admin token the instances accept (mode 0600)
//	lock              flock'ed by up/down/scale so two of them never overlap
//	logs/NAME.log     one log per component (nginx: nginx.log = error log,
//	                  nginx-access.log = access log with $upstream_addr)
//	NAME/             each server's data and configuration
//
// What each server keeps between runs is its description's (Durability,
// and what its Prepare wipes at each `up`).
//
// # nginx configuration
//
// nginx runs the top-level nginx.conf verbatim (embedded by the root package
// seckill), the same file docker compose mounts. What differs per
// deployment is in the two files it includes from seckill.d/: the stack
// writes RUNDIR/nginx/seckill.d/http.conf (upstream servers, access log,
// temp paths) and listen.conf, and passes pid and user with -g; compose
// mounts nginx/compose/ there. See nginx.conf for the choices: only /api/
// and /healthz are exposed, round robin, keepalive, a failed request retried
// on the next instance (a key-less purchase only when it never reached
// one), an instance out for 1 s after 3 failures (upstreamServerParams),
// short client timeouts.
//
// # Processes
//
// Every component is started in its own process group (Setpgid) with its
// output appended to its log file; `down` sends SIGTERM to the group, waits,
// then SIGKILLs it, so nothing (a database, a JVM) is left behind. The pid and
// the process start time are recorded so a reused pid is never signalled.
package stack

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/seckill-lab/seckill/bench/fleet"
	"github.com/seckill-lab/seckill/internal/config"
	"github.com/seckill-lab/seckill/internal/server"
	"github.com/seckill-lab/seckill/stock/catalog"
)

// Defaults of Options.
const (
	DefaultDir       = ".seckill"
	DefaultBasePort  = 17000
	DefaultInstances = 3
	DefaultStrategy  = catalog.None
	// MaxInstances bounds --instances (their ports are B+101..B+100+N).
	MaxInstances = 50
	// MinBasePort and MaxBasePort bound --base-port (every port must fit
	// below 65536).
	MinBasePort = 1024
	MaxBasePort = 65535 - offInstance - MaxInstances
	// RedisCount is the number of redis-server processes (the Redlock set).
	RedisCount = server.RedisCount
)

// Port offsets from the base port.
const (
	offNginx     = 80
	offDashboard = 88  // the live dashboard (`seckill dashboard`)
	offInstance  = 100 // inst-K listens on B+100+K
)

// DatabaseName is the MariaDB database the stack creates.
const DatabaseName = server.DatabaseName

// Kind is the kind of a component: a server's (internal/server) or one of
// the lab's own below.
type Kind = server.Kind

// The lab's own component kinds.
const (
	KindInstance  Kind = "instance"
	KindNginx     Kind = "nginx"
	KindDashboard Kind = "dashboard"
)

// Sentinel errors.
var (
	// ErrNotRunning: the run directory has no stack state (never started,
	// or stopped by `down`).
	ErrNotRunning = errors.New("stack is not running")
	// ErrAlreadyRunning is returned by Up, with the running stack's state,
	// when the stack is already up; nothing was changed.
	ErrAlreadyRunning = errors.New("stack is already running")
)

// Component is one process of the stack.
type Component struct {
	Name string `json:"name"`
	Kind Kind   `json:"kind"`
	// Addr is host:port on 127.0.0.1.
	Addr string `json:"addr"`
	Pid  int    `json:"pid"`
	// StartTime is the process start time (clock ticks since boot, field 22
	// of /proc/PID/stat); it guards against signalling a reused pid.
	StartTime uint64   `json:"start_time"`
	Log       string   `json:"log"`
	Cmdline   []string `json:"cmdline"`
}

// URL is the component's base URL (http://addr) for instances and nginx.
func (c Component) URL() string { return "http://" + c.Addr }

// State is the content of the run directory's state.json, plus the admin
// token read from its file.
type State struct {
	// Dir is the absolute run directory.
	Dir      string `json:"dir"`
	BasePort int    `json:"base_port"`
	// Topology is TopologySingle or TopologyHA (Load reads a state
	// without one, written by an older seckill, as single).
	Topology string `json:"topology"`
	// Durability is the servers' level (server.Durabilities; a state
	// without one, written by an older seckill, ran at the default).
	Durability string `json:"durability,omitempty"`
	// RTT is the round trip added on every link through the proxy (`up
	// --rtt`), as asked and as measured; nil for none.
	RTT *fleet.RTT `json:"rtt,omitempty"`
	// Probes are the servers' idle latencies measured at `up`
	// (internal/idleprobe); nil for a stack started before there were.
	Probes *fleet.ServerProbes `json:"server_probes,omitempty"`
	// PeerLinks is set when the ha members dial one another through the
	// proxy (`up --rtt` in ha), so the round trip is on their links too.
	PeerLinks bool `json:"peer_links,omitempty"`
	// Priority is the CPU priorities (`up --priority`, PriorityName).
	Priority  string    `json:"priority,omitempty"`
	Strategy  string    `json:"strategy"`
	Binary    string    `json:"binary"`
	StartedAt time.Time `json:"started_at"`
	// Ready is set once every component passed its health check.
	Ready bool `json:"ready"`
	// AdminTokenFile holds the token; AdminTokenSource tells where it came
	// from: "environment" (SECKILL_ADMIN_TOKEN), "generated" or "given by
	// the caller" (Options.AdminToken).
	AdminTokenFile   string `json:"admin_token_file"`
	AdminTokenSource string `json:"admin_token_source"`
	// AdminToken is read from AdminTokenFile by Load (never stored in
	// state.json).
	AdminToken     string `json:"-"`
	NginxAccessLog string `json:"nginx_access_log"`
	// Proxy is set when the instances reach the servers through the fault
	// proxy (Options.Proxy).
	Proxy bool `json:"proxy,omitempty"`
	// Backends are the server groups `up --backends` started; empty (a
	// state written by an older seckill) means all. The addresses of the
	// others are empty in env.sh and in the instances' environment.
	Backends   []Backend   `json:"backends,omitempty"`
	Components []Component `json:"components"`
}

// Has reports whether the stack runs backend b.
func (s *State) Has(b Backend) bool { return len(s.Backends) == 0 || slices.Contains(s.Backends, b) }

// Absent returns the backends `up --backends` left out, in AllBackends
// order.
func (s *State) Absent() []Backend {
	var out []Backend
	for _, b := range AllBackends {
		if !s.Has(b) {
			out = append(out, b)
		}
	}
	return out
}

// Port returns the port of the given offset from the base port.
func (s *State) port(off int) int { return s.BasePort + off }

func addr(port int) string { return "127.0.0.1:" + strconv.Itoa(port) }

// serverEnv lists the SECKILL_* variables of every server description
// (empty addresses for a server the stack left out).
func (s *State) serverEnv() [][2]string {
	var out [][2]string
	for _, sp := range server.All {
		if sp.Env != nil {
			out = append(out, sp.Env(s.BasePort, s.HA(), s.Has(sp.Group))...)
		}
	}
	return out
}

// Addrs returns the addresses the stack's variable name holds (such as
// config.EnvRedisAddrs), none when it is empty.
func (s *State) Addrs(name string) []string {
	for _, kv := range s.serverEnv() {
		if kv[0] == name && kv[1] != "" {
			return strings.Split(kv[1], ",")
		}
	}
	return nil
}

// RedisAddrs returns the five redis addresses; the first is the primary.
func (s *State) RedisAddrs() []string { return s.Addrs(config.EnvRedisAddrs) }

// SentinelAddrs returns the Sentinels' addresses (none in the single
// topology).
func (s *State) SentinelAddrs() []string { return s.Addrs(config.EnvSentinels) }

// MySQLDSN returns the go-sql-driver DSN of the stack's database.
func (s *State) MySQLDSN() string {
	return server.MySQLDSN(addr(server.MySQLPort(s.BasePort)), DatabaseName)
}

// NginxURL returns http://127.0.0.1:PORT of nginx.
func (s *State) NginxURL() string { return "http://" + addr(s.port(offNginx)) }

// Instances returns the instance components, in order inst-1..inst-N.
func (s *State) Instances() []Component {
	var out []Component
	for _, c := range s.Components {
		if c.Kind == KindInstance {
			out = append(out, c)
		}
	}
	return out
}

// InstanceURLs returns the base URLs of the instances.
func (s *State) InstanceURLs() []string {
	var out []string
	for _, c := range s.Instances() {
		out = append(out, c.URL())
	}
	return out
}

// InstanceNames returns the X-Instance names of the instances.
func (s *State) InstanceNames() []string {
	var out []string
	for _, c := range s.Instances() {
		out = append(out, c.Name)
	}
	return out
}

// Component returns the component called name.
func (s *State) Component(name string) (Component, bool) {
	for _, c := range s.Components {
		if c.Name == name {
			return c, true
		}
	}
	return Component{}, false
}

// Env returns the stack's variables (the ones env.sh exports), in a fixed
// order. The Sentinel variables are exported in every topology (empty
// sentinels in the single one), so sourcing env.sh of a single stack
// after an ha one leaves no stale sentinel behind.
func (s *State) Env() [][2]string {
	return append(s.serverEnv(),
		[2]string{config.EnvNginxURL, s.NginxURL()},
		[2]string{config.EnvInstanceURLs, strings.Join(s.InstanceURLs(), ",")},
		[2]string{config.EnvStackDir, s.Dir},
		[2]string{config.EnvAdminToken, s.AdminToken},
	)
}

// serveEnv returns the variables every instance gets (besides
// SECKILL_LISTEN and SECKILL_INSTANCE, set per instance): the servers'
// addresses (a description's ServeOnly variables only in the ha topology
// and when set), the token and the starting strategy; in the ha topology
// at fsync durability, the replicas redis-stream's sales wait for.
func (s *State) serveEnv() map[string]string {
	env := map[string]string{
		config.EnvAdminToken: s.AdminToken,
		config.EnvStrategy:   s.Strategy,
	}
	for _, sp := range server.All {
		if sp.Env == nil {
			continue
		}
		for _, kv := range sp.Env(s.BasePort, s.HA(), s.Has(sp.Group)) {
			if slices.Contains(sp.ServeOnly, kv[0]) && (!s.HA() || !s.Has(sp.Group)) {
				continue
			}
			env[kv[0]] = kv[1]
		}
	}
	if s.HA() && s.Has(BackendRedis) && s.DurabilityLevel() == server.DurabilityFsync {
		// An acknowledged sale survives a failover too: the replica has it.
		env[config.EnvStreamReplicas] = "1"
	}
	return env
}

// EnvScript renders env.sh.
func (s *State) EnvScript() string {
	var b strings.Builder
	fmt.Fprintf(&b, "# seckill stack in %s (generated by `seckill up`; source it)\n", s.Dir)
	for _, kv := range s.Env() {
		fmt.Fprintf(&b, "export %s=%s\n", kv[0], shellQuote(kv[1]))
	}
	return b.String()
}

func shellQuote(v string) string {
	if v != "" && strings.IndexFunc(v, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-_./:,=@", r))
	}) < 0 {
		return v
	}
	return "'" + strings.ReplaceAll(v, "'", `'\''`) + "'"
}

// File names in the run directory.
const (
	stateFile = "state.json"
	envFile   = "env.sh"
	tokenFile = "admin-token"
	lockFile  = "lock"
)

// absDir resolves dir (default DefaultDir) to an absolute path.
func absDir(dir string) (string, error) {
	if dir == "" {
		dir = DefaultDir
	}
	a, err := filepath.Abs(dir)
	if err != nil {
		return "", fmt.Errorf("run directory %q: %w", dir, err)
	}
	return a, nil
}

// Load reads the state of the stack in dir (default DefaultDir). It returns
// ErrNotRunning when the directory holds no stack. It does not check that
// the processes are alive: use Status for that.
func Load(dir string) (*State, error) {
	d, err := absDir(dir)
	if err != nil {
		return nil, err
	}
	b, err := os.ReadFile(filepath.Join(d, stateFile))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("%w in %s (start it with `seckill up --dir %s`)", ErrNotRunning, d, d)
	}
	if err != nil {
		return nil, fmt.Errorf("read stack state: %w", err)
	}
	var st State
	if err := json.Unmarshal(b, &st); err != nil {
		return nil, fmt.Errorf("parse %s: %w", filepath.Join(d, stateFile), err)
	}
	st.Dir = d
	if st.Topology == "" { // written by an older seckill
		st.Topology = TopologySingle
	}
	if st.AdminTokenFile != "" {
		tok, err := os.ReadFile(st.AdminTokenFile)
		if err != nil {
			return nil, fmt.Errorf("read admin token: %w", err)
		}
		st.AdminToken = strings.TrimSpace(string(tok))
	}
	return &st, nil
}

// save writes state.json atomically.
func (s *State) save() error {
	b, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return fmt.Errorf("encode stack state: %w", err)
	}
	return writeFileAtomic(filepath.Join(s.Dir, stateFile), append(b, '\n'), 0o644)
}

// writeEnv writes env.sh (mode 0600: it holds the admin token).
func (s *State) writeEnv() error {
	return writeFileAtomic(filepath.Join(s.Dir, envFile), []byte(s.EnvScript()), 0o600)
}

func writeFileAtomic(path string, data []byte, mode os.FileMode) error {
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, data, mode); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := os.Chmod(tmp, mode); err != nil {
		return fmt.Errorf("chmod %s: %w", path, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}

// Env returns the content of the env.sh of the stack in dir.
func Env(dir string) (string, error) {
	st, err := Load(dir)
	if err != nil {
		return "", err
	}
	return st.EnvScript(), nil
}

// AbsDir resolves a run directory (default DefaultDir) to an absolute path.
func AbsDir(dir string) (string, error) { return absDir(dir) }
