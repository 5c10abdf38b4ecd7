package server

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	consul "github.com/hashicorp/consul/api"

	"github.com/seckill-lab/seckill/internal/idleprobe"
	"github.com/seckill-lab/seckill/internal/lockwire"
	"github.com/seckill-lab/seckill/lockimpl/consullock"
	"github.com/seckill-lab/seckill/stock"
	"github.com/seckill-lab/seckill/stock/catalog"
)

// Consul component kinds.
const (
	// KindConsul is the single server of the single topology.
	KindConsul Kind = "consul"
	// KindConsulMember is a server of the three-server cluster (ha).
	KindConsulMember Kind = "consul-member"
)

// ConsulVersion is the Consul the lab builds and runs: 1.16.3, the newest
// release under MPL-2.0 (its module's LICENSE; later ones are under the
// BUSL). tools/consul pins it; `make deps` builds it.
const ConsulVersion = "1.16.3"

// Port offsets: the single server's HTTP API B+41, server RPC B+42, Serf
// LAN B+43; server K of the ha cluster: B+41+3(K-1) .. B+43+3(K-1) (B+41 ..
// B+49; server 1 takes the single one's ports). Serf WAN, DNS and gRPC are
// off. Every server port stays below B+50: the fault proxy gives instance
// K the ports P+200+50(K-1), 50 apart.
const (
	offConsul       = 41
	offConsulMember = 41
)

func consulMemberName(k int) string    { return "consul-" + itoa(k) }
func consulMemberHTTP(base, k int) int { return base + offConsulMember + 3*(k-1) }

// consulPorts are a server's HTTP, server RPC and Serf LAN ports.
func consulPorts(http int) (int, int, int) { return http, http + 1, http + 2 }

// Consul is the Consul description: real raft with a data directory (not
// -dev), wiped at each `up`; one server, or three that elect a leader.
// It is optional: a machine without the binary runs the lab without it,
// and the consul strategy answers 503 backend_unavailable.
var Consul = Spec{
	Position: 6,
	Group:    "consul",
	Idle:     &idleConsul,
	Wiring:   &wireConsul,
	Optional: true,
	Tools: []Tool{{Key: "consul", Names: []string{"consul"}, Version: []string{"version"},
		Hint: "Consul " + ConsulVersion + " (MPL-2.0; no distribution packages it): `make deps` builds it from the Go module proxy into bin/"}},
	Image: "hashicorp/consul:" + ConsulVersion,
	Kinds: []KindSpec{
		{Kind: KindConsul, Rank: 3, Check: checkConsul, Role: consulRole},
		{Kind: KindConsulMember, Rank: 3, Check: checkConsul, Role: consulRole, Member: true, StopInTurn: true},
	},
	Ports: func(base int, ha bool) []PortUse {
		var https []int
		if !ha {
			https = []int{base + offConsul}
		}
		for _, k := range members() {
			if ha {
				https = append(https, consulMemberHTTP(base, k))
			}
		}
		var ps []PortUse
		for i, h := range https {
			name := "consul"
			if ha {
				name = consulMemberName(i + 1)
			}
			hp, rpc, serf := consulPorts(h)
			ps = append(ps, PortUse{hp, name + " http"}, PortUse{rpc, name + " server"}, PortUse{serf, name + " serf"})
		}
		return ps
	},
	Nodes: func(l Layout) []Node {
		if !l.HA {
			return []Node{consulNode(l, "consul", KindConsul, l.Base+offConsul, 1, nil)}
		}
		var ns []Node
		for _, k := range members() {
			var join []string
			for _, m := range members() {
				if m != k {
					_, _, serf := consulPorts(consulMemberHTTP(l.Base, m))
					join = append(join, Addr(serf))
				}
			}
			ns = append(ns, consulNode(l, consulMemberName(k), KindConsulMember, consulMemberHTTP(l.Base, k), HAMembers, join))
		}
		return ns
	},
	Env: func(base int, ha, has bool) [][2]string {
		return [][2]string{{envOf(catalog.ServerConsul), clientAddrs(base, ha, has, offConsul, consulMemberHTTP)}}
	},
	Links:  func(bool) []Link { return []Link{{Name: "consul", Kinds: []Kind{KindConsul, KindConsulMember}}} },
	Serves: map[string]string{"consul": "consul"},
	Durability: map[string]string{
		DurabilityDefault: "raft log fsynced before a write is acknowledged (as shipped)",
		DurabilityFsync:   "raft log fsynced before a write is acknowledged (as shipped)",
		DurabilityNone:    "data directory on tmpfs (" + Tmpfs + "): Consul has no switch for its fsync",
	},
	Fsyncs: map[string]bool{DurabilityDefault: true, DurabilityFsync: true, DurabilityNone: false},
}

// consulNode is a Consul server on the HTTP port http, in a cluster of
// expect servers joining the Serf addresses join.
func consulNode(l Layout, name string, kind Kind, http, expect int, join []string) Node {
	dir := l.DataDir(filepath.Join(l.Dir, name))
	hp, rpc, serf := consulPorts(http)
	args := []string{"agent", "-server", "-bootstrap-expect=" + itoa(expect), "-node=" + name, "-data-dir=" + dir,
		"-bind=127.0.0.1", "-advertise=127.0.0.1", "-client=127.0.0.1", "-log-level=warn", "-disable-host-node-id=true",
		"-hcl=" + fmt.Sprintf("ports { http = %d, server = %d, serf_lan = %d, serf_wan = -1, dns = -1, grpc = -1, grpc_tls = -1 }", hp, rpc, serf),
		// Production timing (the default, 5, is for development): a new
		// leader within about a second of the old one's loss.
		"-hcl=performance { raft_multiplier = 1 }",
		"-hcl=disable_update_check = true"}
	for _, j := range join {
		args = append(args, "-retry-join="+j)
	}
	return Node{Name: name, Kind: kind, Port: hp, Bin: l.Tools.Bin["consul"], Args: args, Prepare: wipePrepare(name, dir)}
}

// consulLeader reads /v1/status/leader: the leader's server address, ""
// while there is none.
func consulLeader(ctx context.Context, hostport string) (string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+hostport+"/v1/status/leader", nil)
	if err != nil {
		return "", fmt.Errorf("consul status: %w", err)
	}
	resp, err := httpClient.Do(req)
	if err != nil {
		return "", fmt.Errorf("consul GET /v1/status/leader: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("consul GET /v1/status/leader: %s", resp.Status)
	}
	var leader string
	if err := json.NewDecoder(io.LimitReader(resp.Body, 1<<12)).Decode(&leader); err != nil {
		return "", fmt.Errorf("consul GET /v1/status/leader: %w", err)
	}
	return leader, nil
}

// checkConsul: the server knows a leader (raft has one).
func checkConsul(ctx context.Context, hostport string) error {
	leader, err := consulLeader(ctx, hostport)
	if err != nil {
		return err
	}
	if leader == "" {
		return fmt.Errorf("consul %s: no leader yet", hostport)
	}
	return nil
}

// consulRole is "leader" when the leader's server address is this
// server's (its HTTP port + 1), else "follower".
func consulRole(ctx context.Context, hostport string) (string, error) {
	leader, err := consulLeader(ctx, hostport)
	if err != nil {
		return "", err
	}
	_, port, _ := strings.Cut(hostport, ":")
	http, err := strconv.Atoi(port)
	if err != nil {
		return "", fmt.Errorf("consul role: address %q: %w", hostport, err)
	}
	if _, rpc, _ := consulPorts(http); leader == Addr(rpc) {
		return "leader", nil
	}
	return "follower", nil
}

func init() { register(&Consul) }

// The idle probes of Consul (internal/idleprobe): a key read, a check-and-set PUT creating a key (a lock's
// acquire and release are such PUTs), and a session create (destroyed
// untimed after).

var consulOps = []idleprobe.Op[*consul.Client]{
	{Op: "kv_cas", Sample: idleprobe.Timed(func(ctx context.Context, c *consul.Client, key string) error {
		ok, _, err := c.KV().CAS(&consul.KVPair{Key: key, Value: []byte("1")}, (&consul.WriteOptions{}).WithContext(ctx))
		if err == nil && !ok {
			err = fmt.Errorf("cas %s: refused", key)
		}
		return err
	})},
	{Op: "kv_get", Sample: idleprobe.Timed(func(ctx context.Context, c *consul.Client, _ string) error {
		_, _, err := c.KV().Get(idleprobe.Prefix, (&consul.QueryOptions{}).WithContext(ctx))
		return err
	})},
	{Op: "session_create", Sample: func(ctx context.Context, c *consul.Client, _ string) (time.Duration, error) {
		t0 := time.Now()
		id, _, err := c.Session().Create(&consul.SessionEntry{Name: idleprobe.Prefix, TTL: "10s", Behavior: consul.SessionBehaviorDelete},
			(&consul.WriteOptions{}).WithContext(ctx))
		d := time.Since(t0)
		if err != nil {
			return 0, err
		}
		if _, err := c.Session().Destroy(id, (&consul.WriteOptions{}).WithContext(ctx)); err != nil {
			return 0, fmt.Errorf("destroy session %s: %w", id, err)
		}
		return d, nil
	}},
}

func dialConsul(ctx context.Context, addr string) (*consul.Client, func(context.Context) error, error) {
	c, err := consul.NewClient(&consul.Config{Address: addr, HttpClient: &http.Client{Timeout: 2 * time.Second}})
	if err != nil {
		return nil, nil, err
	}
	if _, err := c.KV().Put(&consul.KVPair{Key: idleprobe.Prefix, Value: []byte("1")}, (&consul.WriteOptions{}).WithContext(ctx)); err != nil {
		return nil, nil, err
	}
	return c, func(ctx context.Context) error {
		_, err := c.KV().DeleteTree(idleprobe.Prefix, (&consul.WriteOptions{}).WithContext(ctx))
		return err
	}, nil
}

// idleConsul is the server's entry of IdleProbes.
var idleConsul = idleprobe.For(catalog.ServerConsul, dialConsul, consulOps)

// wireConsul is how an instance reaches Consul: each backend opens an HTTP
// client of the agents, its requests counted by the instance's meter.
var wireConsul = lockwire.Wiring{
	Server: catalog.ServerConsul,
	Openers: map[string]lockwire.Opener{
		catalog.Consul:        onConsul(consullock.Config{}),
		catalog.ConsulNoDelay: onConsul(consullock.Config{LockDelay: consullock.NoLockDelay}),
	},
}

// onConsul opens a backend of the Consul agents with cfg.
func onConsul(cfg consullock.Config) lockwire.Opener {
	return func(_ context.Context, c lockwire.Clients) (stock.LockBackend, error) {
		addrs := c.Addrs[catalog.ServerConsul]
		if len(addrs) == 0 {
			return nil, lockwire.NotConfigured(catalog.ServerConsul)
		}
		var wrap []func(http.RoundTripper) http.RoundTripper
		if c.Cost != nil {
			wrap = append(wrap, c.Cost.ConsulTransport)
		}
		client, err := consullock.NewClient(addrs, nil, wrap...)
		if err != nil {
			return nil, err
		}
		return consullock.NewBackend(client, cfg), nil
	}
}
