package catalog

import (
	"errors"
	"fmt"
	"slices"
	"sync"
)

// ServerInfo is what every part of the lab reads of one lock server, as
// data: its name, how an instance is told its addresses, how the cost
// model prices its steps, and the process groups its CPU is counted
// under. How a server starts, its health and idle probes and the
// instance's clients of it are its descriptor in internal/server; its cost
// meter is internal/cost's; its cluster workload internal/cluster's.
// docs/architecture.md ("Adding a lock server") lists the parts.
type ServerInfo struct {
	// Name is the server's one name: its group in `up --backends`, its
	// key in the cost counts, the idle probes and state.json.
	Name Server
	// Env is the instance's environment variable with the server's
	// addresses (its first address is the one the idle probes time).
	Env string
	// Flag is the instance's flag of a comma-separated address list that
	// the instance's config keeps in Config.Servers, with FlagHelp; ""
	// when the config has fields of its own for the server (Redis's
	// Sentinels, MySQL's DSN).
	Flag, FlagHelp string
	// Read, Write and Release are the operations (as the idle probes name
	// them) the cost model prices a step's reads, writes and Release-phase
	// writes with.
	Read, Write, Release string
	// NoContext: the server's client takes no context, so no
	// acquisition's last request is known; the model takes a waiter's last
	// step there as one read.
	NoContext bool
	// Groups are the process groups of the stack that run the server: the
	// columns of the bench's per-purchase CPU.
	Groups []string
}

// servers are the lock servers, in report order.
var servers = []ServerInfo{
	{Name: ServerRedis, Env: "SECKILL_REDIS_ADDRS",
		Read: "get", Write: "set", Release: "eval", Groups: []string{"redis", "redis-ha", "sentinel"}},
	{Name: ServerEtcd, Env: "SECKILL_ETCD_ENDPOINTS", Flag: "etcd-endpoints", FlagHelp: "comma-separated etcd endpoints",
		Read: "get", Write: "txn", Release: "delete_watched", Groups: []string{"etcd", "etcd-member"}},
	{Name: ServerZooKeeper, Env: "SECKILL_ZK_SERVERS", Flag: "zk-servers", FlagHelp: "comma-separated ZooKeeper servers",
		Read: "get_children", Write: "create", Release: "delete_watched", NoContext: true, Groups: []string{"zookeeper", "zookeeper-member"}},
	{Name: ServerMySQL, Env: "SECKILL_MYSQL_DSN",
		Read: "update", Write: "commit", Release: "commit", Groups: []string{"mysql"}},
	{Name: ServerConsul, Env: "SECKILL_CONSUL_ADDRS", Flag: "consul-addrs", FlagHelp: "comma-separated Consul agents' HTTP addresses",
		Read: "kv_get", Write: "kv_cas", Release: "kv_cas", Groups: []string{"consul", "consul-member"}},
}

var (
	serverMu    sync.RWMutex
	moreServers []ServerInfo
)

// Servers returns every lock server: the lab's, in report order, then any
// ExtendServers added.
func Servers() []ServerInfo {
	serverMu.RLock()
	defer serverMu.RUnlock()
	return slices.Concat(servers, moreServers)
}

// ServerOf returns the ServerInfo of name.
func ServerOf(name Server) (ServerInfo, bool) {
	for _, s := range Servers() {
		if s.Name == name {
			return s, true
		}
	}
	return ServerInfo{}, false
}

// ExtendServers adds lock servers after the lab's (a student's server, a
// test's fake one) and returns what removes them again. Every part is
// required but Flag, FlagHelp, NoContext and Groups; a name already known
// is an error.
func ExtendServers(ss ...ServerInfo) (remove func(), err error) {
	serverMu.Lock()
	defer serverMu.Unlock()
	for _, s := range ss {
		if err := s.check(); err != nil {
			return nil, err
		}
		for _, have := range slices.Concat(servers, moreServers) {
			if have.Name == s.Name || have.Env == s.Env {
				return nil, fmt.Errorf("extend server %q: its name or %s is taken", s.Name, s.Env)
			}
		}
		moreServers = append(moreServers, s)
	}
	return func() {
		serverMu.Lock()
		defer serverMu.Unlock()
		moreServers = slices.DeleteFunc(moreServers, func(m ServerInfo) bool {
			return slices.ContainsFunc(ss, func(s ServerInfo) bool { return s.Name == m.Name })
		})
	}, nil
}

// check says which required part s lacks.
func (s ServerInfo) check() error {
	var missing []error
	for _, p := range []struct{ name, v string }{{"name", string(s.Name)}, {"env", s.Env}, {"read", s.Read}, {"write", s.Write}, {"release", s.Release}} {
		if p.v == "" {
			missing = append(missing, fmt.Errorf("no %s", p.name))
		}
	}
	if (s.Flag == "") != (s.FlagHelp == "") {
		missing = append(missing, errors.New("a flag needs its help and a help its flag"))
	}
	if len(missing) > 0 {
		return fmt.Errorf("server %q: %w", s.Name, errors.Join(missing...))
	}
	return nil
}
