// Package server describes, once, each kind of server the lab runs: the
// lock services, MariaDB and nginx, one file and one Spec value each. A
// description (Spec) holds, as data and
// small functions, the programs a server needs and the packages that
// install them, how to print their version, its ports, the command line
// and configuration of a single node and of an ha member, its health
// check and role, what it writes to disk, the SECKILL_* variables that
// give its addresses to an instance, its links through the fault proxy
// and the strategies' server names it backs.
//
// The stack (internal/stack) reads the table All to find, start, check,
// proxy, report on and stop the servers; doctor, status, faults and the
// dashboard read it too. None of them switches over server kinds: adding a
// server is adding one file here.
package server

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/seckill-lab/seckill/bench/costmodel"
	"github.com/seckill-lab/seckill/bench/fleet"
	"github.com/seckill-lab/seckill/internal/idleprobe"
	"github.com/seckill-lab/seckill/internal/lockwire"
	"github.com/seckill-lab/seckill/stock/catalog"
)

// Group is a server group: what `up --backends` starts or leaves out, and
// what a strategy needs besides the goods row.
type Group string

// Kind is the kind of a component, as state.json records it.
type Kind string

// Check is one attempt of a health check against addr (host:port).
type Check func(ctx context.Context, addr string) error

// Tool is one program a server needs.
type Tool struct {
	// Key names the tool in Tools.Bin (or Tools.Java).
	Key string
	// Names are the program's names, in order of preference.
	Names []string
	// Pkgs maps a package manager (apt-get, dnf, brew) to the package.
	Pkgs map[string]string
	// Version are the arguments that print its version (nil: none cheap).
	Version []string
	// Locate, when set, finds the tool instead of Names (a Java server's
	// jars); Hint says how else to provide it.
	Locate func(f Finder) (JavaInstall, error)
	Hint   string
	// PinFlag is the `seckill up` flag that runs another copy of the tool
	// (Finder.Pin), "" for none.
	PinFlag string
}

// Label is the tool's name in messages: its names joined with "/".
func (t Tool) Label() string {
	if t.Locate != nil {
		return t.Key
	}
	return strings.Join(t.Names, "/")
}

// Role looks up the role a member plays in its group (leader, follower,
// master, slave, standalone).
type Role func(ctx context.Context, addr string) (string, error)

// KindSpec describes one kind of component a Spec runs.
type KindSpec struct {
	Kind Kind
	// Rank orders the kinds at start and in listings: dependencies first.
	Rank int
	// Check is its health check.
	Check Check
	// Role is nil for a kind that plays no role.
	Role Role
	// Member: a member of a quorum group, among which Leader looks.
	Member bool
	// StopInTurn: the members stop one after the other, not all at once.
	StopInTurn bool
	// DropEnv is a prefix of variables removed from its environment.
	DropEnv string
}

// Layout is what a description needs to lay out its nodes.
type Layout struct {
	// Dir is the stack's run directory; Base its base port.
	Dir  string
	Base int
	// HA is the ha topology.
	HA bool
	// Durability is the level every server runs at (Durabilities; ""
	// is DurabilityDefault).
	Durability string
	// PeerShift, when not 0, is how far above a member's peer port
	// (Spec.Peers) the other members dial it: the fault proxy listens
	// there and adds the links' round trip (`seckill up --rtt` in ha).
	PeerShift int
	// Tools are the programs found.
	Tools Tools
}

// Peer is port as the other members dial it.
func (l Layout) Peer(port int) int { return port + l.PeerShift }

// Node is one process a description asks the stack to run.
type Node struct {
	Name string
	Kind Kind
	// Port is the client port (the component's address).
	Port int
	// Bin and Args are the command line.
	Bin  string
	Args []string
	// Prepare writes its configuration and wipes what must start empty;
	// nil for none. It runs before each start by `up`.
	Prepare func(ctx context.Context) error
	// Ready is an extra step once the process answers (MariaDB creates
	// the lab's database); nil for none.
	Ready Check
}

// PortUse is one port a description needs.
type PortUse struct {
	Port int
	Name string
}

// Link is a group of servers a link fault names (redis, redlock, ...).
type Link struct {
	Name string
	// Kinds are the kinds of the components it covers; Names, when set,
	// are the components instead.
	Kinds []Kind
	Names []string
}

// Spec describes one server.
type Spec struct {
	// Position places it in All: start order, tables, listings.
	Position int
	// Group is the server group; Required: `up --backends` cannot leave it
	// out.
	Group    Group
	Required bool
	// Optional: `up` without --backends starts it only when its tools are
	// found, and goes on without it otherwise (its strategies answer 503
	// backend_unavailable); --backends naming it requires it.
	Optional bool
	// Tools it needs.
	Tools []Tool
	// Image is the pinned container image that runs it in
	// docker-compose.yml and on a cluster (deploy/k8s): the same line as
	// the distribution's package the local stack runs.
	Image string
	// Kinds of its components.
	Kinds []KindSpec
	// Ports lists every port of the topology (client, peer, election).
	Ports func(base int, ha bool) []PortUse
	// Nodes lays out its processes.
	Nodes func(l Layout) []Node
	// Peers lists the ports of the ha topology that its members dial one
	// another on (raft peers, quorum and election, the replica's link to
	// its primary); nil for none. With Layout.PeerShift they dial them
	// PeerShift higher, through the proxy.
	Peers func(base int) []PortUse
	// Env is the SECKILL_* variables that give its addresses to an
	// instance; has is false when the stack left it out (the addresses
	// are then empty).
	Env func(base int, ha, has bool) [][2]string
	// Direct lists the variables of Env whose addresses an instance
	// dials directly even when the fault proxy runs (the lock-alone
	// counter: it must not pay the links' round trip).
	Direct []string
	// ServeOnly lists the variables of Env an instance gets only when
	// they are not empty.
	ServeOnly []string
	// Links are the link groups of the fault proxy.
	Links func(ha bool) []Link
	// Serves are the names the strategy registry gives this server
	// (catalog.Server), each with the link group that carries it.
	Serves map[string]string
	// Durability says what reaches the disk at each level of `up
	// --durability` (DurabilityDefault, DurabilityFsync, DurabilityNone).
	Durability map[string]string
	// Fsyncs says, at each level, whether an acknowledged write costs an
	// fsync of the disk (false: no fsync, or one on tmpfs): the price of a
	// write in the cost model (internal/cost).
	Fsyncs map[string]bool
	// Order places a component among those of its kind whose name has
	// no number (the replica after the primary).
	Order map[string]int
	// Idle are its idle probes (internal/idleprobe): how to connect, and
	// one sample's request per operation its locks use; nil for a server
	// that is no lock server (nginx).
	Idle *idleprobe.ServerProbes
	// Wiring is how an instance reaches it (lockwire.Provide): its shared
	// client and its strategies' lock backends; nil for a server whose
	// clients lockwire types (Redis, MySQL) or no lock server (nginx).
	Wiring *lockwire.Wiring
}

// All are the servers, in start order (Position). Each file adds its own
// description with register.
var All []*Spec

// register adds one of the lab's own descriptions to All (Register);
// a description that misses a part is a bug of the lab's.
func register(s *Spec) {
	if _, err := Register(s); err != nil {
		panic(err)
	}
}

// Register adds s to All, in Position order, and a lock server's wiring to
// lockwire (Provide); remove takes both away again (a test's fake
// server). A lock server (a server of the catalogue, catalog.ServerInfo,
// named by Group; or one with Idle or Wiring) must be in the catalogue and
// have every part the rest of the lab reads (checkParts): Register
// says which it misses.
func Register(s *Spec) (remove func(), err error) {
	if err := s.checkParts(); err != nil {
		return nil, err
	}
	undo := func() {}
	if s.Wiring != nil {
		if undo, err = lockwire.Provide(*s.Wiring); err != nil {
			return nil, fmt.Errorf("server %s: %w", s.Group, err)
		}
	}
	i, _ := slices.BinarySearchFunc(All, s, func(a, b *Spec) int { return a.Position - b.Position })
	All = slices.Insert(All, i, s)
	return func() {
		undo()
		All = slices.DeleteFunc(All, func(a *Spec) bool { return a == s })
	}, nil
}

// checkParts says which part a lock server's description misses: what
// starts it (Image, Kinds, Nodes, Ports), the variable that gives an
// instance its addresses (Env, as the catalogue names it), and its idle
// probes of the operations the cost model prices (Idle).
func (s *Spec) checkParts() error {
	info, ok := catalog.ServerOf(catalog.Server(s.Group))
	if !ok && s.Idle == nil && s.Wiring == nil {
		return nil // no lock server (nginx)
	}
	var missing []string
	if !ok {
		missing = append(missing, "catalogue entry (catalog.ServerInfo named "+string(s.Group)+")")
	}
	if s.Image == "" {
		missing = append(missing, "image")
	}
	if len(s.Kinds) == 0 {
		missing = append(missing, "kinds")
	}
	if s.Nodes == nil {
		missing = append(missing, "nodes")
	}
	if s.Ports == nil {
		missing = append(missing, "ports")
	}
	if s.Env == nil || ok && !slices.ContainsFunc(s.Env(0, false, true), func(kv [2]string) bool { return kv[0] == info.Env }) {
		missing = append(missing, "env (its addresses in "+info.Env+")")
	}
	switch {
	case s.Idle == nil:
		missing = append(missing, "idle probes")
	case ok:
		for _, op := range []string{info.Read, info.Write, info.Release} {
			if !slices.Contains(s.Idle.Ops, costmodel.Op(op)) {
				missing = append(missing, "idle probe of "+op)
			}
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("server %s: its description misses %s", s.Group, strings.Join(slices.Compact(missing), ", "))
	}
	return nil
}

// Groups are the groups of All that `up --backends` names, in order.
func Groups() []Group {
	var out []Group
	for _, s := range All {
		if s.Group != "" {
			out = append(out, s.Group)
		}
	}
	return out
}

// ByGroup returns the spec of group g.
func ByGroup(g Group) (*Spec, bool) {
	for _, s := range All {
		if s.Group == g && g != "" {
			return s, true
		}
	}
	return nil, false
}

// KindOf returns the description of component kind k.
func KindOf(k Kind) (*Spec, KindSpec, bool) {
	for _, s := range All {
		for _, ks := range s.Kinds {
			if ks.Kind == k {
				return s, ks, true
			}
		}
	}
	return nil, KindSpec{}, false
}

// ToolsOf lists the tools the given groups need (and those of the specs of
// no group), in All's order.
func ToolsOf(groups []Group) []Tool {
	var out []Tool
	for _, s := range All {
		if s.Group != "" && !slices.Contains(groups, s.Group) {
			continue
		}
		out = append(out, s.Tools...)
	}
	return out
}

// GroupOfServer is the group that backs the strategy registry's server
// name ("" when none does: the process, or nothing beyond MySQL).
func GroupOfServer(name string) Group {
	for _, s := range All {
		if _, ok := s.Serves[name]; ok {
			return s.Group
		}
	}
	return ""
}

// LinkOfServer is the link group that carries the strategy registry's
// server name (the database's when no server does).
func LinkOfServer(name string) string {
	for _, s := range All {
		if l, ok := s.Serves[name]; ok {
			return l
		}
	}
	return string(MariaDB.Group)
}

// LinkNames lists the link groups of every server.
func LinkNames(ha bool) []string {
	var out []string
	for _, s := range All {
		if s.Links == nil {
			continue
		}
		for _, l := range s.Links(ha) {
			out = append(out, l.Name)
		}
	}
	return out
}

// FindLink returns the link group called name.
func FindLink(name string, ha bool) (Link, bool) {
	for _, s := range All {
		if s.Links == nil {
			continue
		}
		for _, l := range s.Links(ha) {
			if l.Name == name {
				return l, true
			}
		}
	}
	return Link{}, false
}

// Addr is host:port on loopback.
func Addr(port int) string { return "127.0.0.1:" + strconv.Itoa(port) }

// joinAddrs joins the addresses of ports, "" when has is false.
func joinAddrs(has bool, ports ...int) string {
	if !has {
		return ""
	}
	out := make([]string, len(ports))
	for i, p := range ports {
		out[i] = Addr(p)
	}
	return strings.Join(out, ",")
}

// clientAddrs are the client addresses of a quorum group: the single
// node's (B+single) or, ha, every member's (member(base, K)).
func clientAddrs(base int, ha, has bool, single int, member func(base, k int) int) string {
	if !ha {
		return joinAddrs(has, base+single)
	}
	var ports []int
	for _, k := range members() {
		ports = append(ports, member(base, k))
	}
	return joinAddrs(has, ports...)
}

// HAMembers is the number of members of each replicated group of the ha
// topology (quorum groups and Sentinels).
const HAMembers = 3

// member numbers 1..HAMembers.
func members() []int {
	out := make([]int, HAMembers)
	for i := range out {
		out[i] = i + 1
	}
	return out
}

// cleanEnv returns the environment without the variables starting with
// prefix ("" keeps all).
func cleanEnv(prefix string) []string {
	var env []string
	for _, kv := range os.Environ() {
		if prefix == "" || !strings.HasPrefix(kv, prefix) {
			env = append(env, kv)
		}
	}
	return env
}

// Env is the environment of a component of kind k: the process's own,
// minus what the kind drops (nil: inherit unchanged).
func Env(k Kind) []string {
	_, ks, ok := KindOf(k)
	if !ok || ks.DropEnv == "" {
		return nil
	}
	return cleanEnv(ks.DropEnv)
}

// writeLines writes lines, one per line, to path.
func writeLines(path string, lines []string) error {
	if err := os.WriteFile(path, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}

func itoa(i int) string { return strconv.Itoa(i) }

// The durability levels of `up --durability`: what a server makes durable
// before it acknowledges a write.
const (
	// DurabilityDefault runs each server as the lab always has: Redis
	// without persistence, the others fsyncing every write.
	DurabilityDefault = "default"
	// DurabilityFsync: every server fsyncs an acknowledged write first
	// (Redis: AOF with appendfsync always).
	DurabilityFsync = "fsync"
	// DurabilityNone: no server pays an fsync per write: each
	// description turns its fsync off, or, for a server without a switch,
	// puts its data directory on tmpfs (Layout.DataDir).
	DurabilityNone = "none"
)

// Durabilities lists the levels.
func Durabilities() []string { return []string{DurabilityDefault, DurabilityFsync, DurabilityNone} }

// ValidDurability returns d ("" is DurabilityDefault) or an error naming
// the levels.
func ValidDurability(d string) (string, error) {
	if d == "" {
		return DurabilityDefault, nil
	}
	for _, v := range Durabilities() {
		if d == v {
			return d, nil
		}
	}
	return "", fmt.Errorf("--durability %q: want %s", d, strings.Join(Durabilities(), ", "))
}

// DescribeDurability fills in what f's servers make durable at
// f.Durability, as these descriptions say: the level's meaning and the
// servers whose acknowledged writes cost an fsync there. A fleet that did
// not say its level ("", started elsewhere) is taken to run the default,
// and its meaning says so.
func DescribeDurability(f *fleet.Fleet) {
	level, err := ValidDurability(f.Durability)
	if err != nil {
		level = DurabilityDefault
	}
	f.Fsyncs = nil
	for _, sp := range All {
		if sp.Fsyncs[level] {
			f.Fsyncs = append(f.Fsyncs, string(sp.Group))
		}
	}
	f.DurabilityMeans = durabilityMeans[level]
	if f.Durability != level {
		f.DurabilityMeans = "not given by a fleet started elsewhere; the cost model assumes the default: " + f.DurabilityMeans
	}
}

// durabilityMeans says what each level means, for the reports.
var durabilityMeans = map[string]string{
	DurabilityDefault: "Redis without persistence, the other servers fsync every write (seckill up --durability)",
	DurabilityFsync:   "every server fsyncs an acknowledged write, Redis with appendfsync always, and in ha redis-stream's sales wait for the replica (seckill up --durability)",
	DurabilityNone:    "no server fsyncs per write (each turns it off, or keeps its data on tmpfs: seckill status says which) (seckill up --durability)",
}

// Tmpfs is where DurabilityNone puts the data of a server without a switch
// for its fsync: a RAM file system, where an fsync costs nothing.
var Tmpfs = "/dev/shm"

// DataDir is where a server keeps data that DurabilityNone moves to tmpfs:
// dir itself, or a directory of the same stack and name under Tmpfs.
func (l Layout) DataDir(dir string) string {
	if l.Durability != DurabilityNone {
		return dir
	}
	return filepath.Join(Tmpfs, "seckill-"+itoa(l.Base), filepath.Base(dir))
}

// envOf is the instance's variable of lock server name's addresses
// (catalog.ServerInfo.Env).
func envOf(name catalog.Server) string {
	info, ok := catalog.ServerOf(name)
	if !ok {
		panic(fmt.Sprintf("server: %q is no lock server of the catalogue", name))
	}
	return info.Env
}

// IdleProbes are the idle probes of every server of All that has them.
func IdleProbes() []idleprobe.ServerProbes {
	var out []idleprobe.ServerProbes
	for _, s := range All {
		if s.Idle != nil {
			out = append(out, *s.Idle)
		}
	}
	return out
}
