package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/seckill-lab/seckill/internal/cost"
	"github.com/seckill-lab/seckill/internal/idleprobe"
	"github.com/seckill-lab/seckill/internal/lockwire"
	"github.com/seckill-lab/seckill/lockimpl/etcdlock"
	"github.com/seckill-lab/seckill/stock"
	"github.com/seckill-lab/seckill/stock/catalog"
	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
)

// etcd component kinds.
const (
	// KindEtcd is the single member of the single topology.
	KindEtcd Kind = "etcd"
	// KindEtcdMember is a member of the three-member cluster (ha).
	KindEtcdMember Kind = "etcd-member"
)

// Port offsets: the single member's client B+20 and peer B+21; member K
// of the ha cluster: client B+20+2K, peer B+21+2K (B+22 .. B+27).
const (
	offEtcdClient = 20
	offEtcdPeer   = 21
	offEtcdMember = 20
)

func etcdMemberName(k int) string      { return "etcd-" + itoa(k) }
func etcdMemberClient(base, k int) int { return base + offEtcdMember + 2*k }
func etcdMemberPeer(base, k int) int   { return base + offEtcdMember + 2*k + 1 }

// wipePrepare removes dir: the data starts empty at each `up`.
func wipePrepare(name, dir string) func(context.Context) error {
	return func(context.Context) error {
		if err := os.RemoveAll(dir); err != nil {
			return fmt.Errorf("%s: wipe data: %w", name, err)
		}
		return nil
	}
}

// Etcd is the etcd description: EtcdVersion, which `make deps` builds
// into the lab's bin/ (searched before PATH). Its data is wiped at each `up`; a
// restart reuses the data directory, where the --initial-* flags are
// ignored: the member rejoins its cluster.
var Etcd = Spec{
	Position: 2,
	Group:    "etcd",
	Idle:     &idleEtcd,
	Wiring:   &wireEtcd,
	Tools: []Tool{{Key: "etcd", Names: []string{"etcd"}, Version: []string{"--version"}, PinFlag: "--etcd",
		Pkgs: map[string]string{pmApt: "etcd-server", pmDnf: "etcd", pmBrew: "etcd"},
		Hint: "etcd " + EtcdVersion + ": `make deps` builds it from the Go module proxy into bin/ (distributions package older releases)"}},
	Image: "gcr.io/etcd-development/etcd:v" + EtcdVersion,
	Kinds: []KindSpec{
		{Kind: KindEtcd, Rank: 3, Check: checkEtcd, Role: etcdRole, DropEnv: "ETCD_"},
		// A stopping leader first hands its leadership over to a connected
		// peer; when every member stops at once that handover waits for
		// its timeout (about 7s): the members stop one after the other.
		{Kind: KindEtcdMember, Rank: 3, Check: checkEtcd, Role: etcdRole, Member: true, StopInTurn: true, DropEnv: "ETCD_"},
	},
	Ports: func(base int, ha bool) []PortUse {
		if !ha {
			return []PortUse{{base + offEtcdClient, "etcd client"}, {base + offEtcdPeer, "etcd peer"}}
		}
		var ps []PortUse
		for _, k := range members() {
			ps = append(ps, PortUse{etcdMemberClient(base, k), etcdMemberName(k) + " client"},
				PortUse{etcdMemberPeer(base, k), etcdMemberName(k) + " peer"})
		}
		return ps
	},
	Nodes: func(l Layout) []Node {
		bin := l.Tools.Bin["etcd"]
		if !l.HA {
			client, peer := Addr(l.Base+offEtcdClient), Addr(l.Base+offEtcdPeer)
			dir, noFsync := etcdData(l, bin, "etcd")
			return []Node{{Name: "etcd", Kind: KindEtcd, Port: l.Base + offEtcdClient, Bin: bin, Prepare: wipePrepare("etcd", dir),
				Args: append([]string{"--name", "seckill", "--data-dir", dir,
					"--listen-client-urls", "http://" + client, "--advertise-client-urls", "http://" + client,
					"--listen-peer-urls", "http://" + peer, "--initial-advertise-peer-urls", "http://" + peer,
					"--initial-cluster", "seckill=http://" + peer}, noFsync...)}}
		}
		var cluster []string
		for _, m := range members() {
			cluster = append(cluster, etcdMemberName(m)+"=http://"+Addr(l.Peer(etcdMemberPeer(l.Base, m))))
		}
		var ns []Node
		for _, k := range members() {
			name := etcdMemberName(k)
			client, peer := Addr(etcdMemberClient(l.Base, k)), Addr(etcdMemberPeer(l.Base, k))
			advertised := Addr(l.Peer(etcdMemberPeer(l.Base, k)))
			dir, noFsync := etcdData(l, bin, name)
			ns = append(ns, Node{Name: name, Kind: KindEtcdMember, Port: etcdMemberClient(l.Base, k), Bin: bin, Prepare: wipePrepare(name, dir),
				Args: append([]string{"--name", name, "--data-dir", dir,
					"--listen-client-urls", "http://" + client, "--advertise-client-urls", "http://" + client,
					"--listen-peer-urls", "http://" + peer, "--initial-advertise-peer-urls", "http://" + advertised,
					"--initial-cluster", strings.Join(cluster, ","), "--initial-cluster-state", "new",
					"--initial-cluster-token", "seckill-" + itoa(l.Base)}, append(etcdlock.ServerFlags(), noFsync...)...)})
		}
		return ns
	},
	Peers: func(base int) []PortUse {
		var ps []PortUse
		for _, k := range members() {
			ps = append(ps, PortUse{etcdMemberPeer(base, k), etcdMemberName(k) + " peer"})
		}
		return ps
	},
	Env: func(base int, ha, has bool) [][2]string {
		return [][2]string{{envOf(catalog.ServerEtcd), clientAddrs(base, ha, has, offEtcdClient, etcdMemberClient)}}
	},
	Links:  func(bool) []Link { return []Link{{Name: "etcd", Kinds: []Kind{KindEtcd, KindEtcdMember}}} },
	Serves: map[string]string{"etcd": "etcd"},
	Durability: map[string]string{
		DurabilityDefault: "its write-ahead log fsynced on every write (as shipped)",
		DurabilityFsync:   "its write-ahead log fsynced on every write (as shipped)",
		DurabilityNone:    "--unsafe-no-fsync (an etcd before 3.5, which has no such switch: its data directory on tmpfs, " + Tmpfs + ")",
	},
	Fsyncs: map[string]bool{DurabilityDefault: true, DurabilityFsync: true, DurabilityNone: false},
}

// EtcdVersion is the etcd the lab builds and runs (tools/etcd pins it;
// `make deps` builds it into bin/): the newest release the Go module proxy
// serves. Distributions package 3.4, past its end of life; `up --etcd
// PATH` runs another.
const EtcdVersion = "3.7.3"

// etcdData is member name's data directory under layout l, and the flags
// that turn its fsync off at DurabilityNone: --unsafe-no-fsync (etcd 3.5
// and later), or, for an older bin, none and the directory on tmpfs.
func etcdData(l Layout, bin, name string) (string, []string) {
	dir := filepath.Join(l.Dir, name)
	if l.Durability != DurabilityNone {
		return dir, nil
	}
	if v, ok := etcdMajorMinor(bin); ok && v[0] == 3 && v[1] < 5 {
		return l.DataDir(dir), nil
	}
	return dir, []string{"--unsafe-no-fsync"}
}

// etcdVersions caches etcdMajorMinor by binary path.
var etcdVersions sync.Map

// etcdMajorMinor runs `bin --version` once per path and returns the major
// and minor of its "etcd Version: X.Y.Z" line; false when it cannot tell.
func etcdMajorMinor(bin string) ([2]int, bool) {
	if v, ok := etcdVersions.Load(bin); ok {
		return v.([2]int), true
	}
	if bin == "" {
		return [2]int{}, false
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, bin, "--version").Output()
	if err != nil {
		return [2]int{}, false
	}
	v, ok := parseEtcdVersion(string(out))
	if ok {
		etcdVersions.Store(bin, v)
	}
	return v, ok
}

// parseEtcdVersion reads the major and minor of `etcd --version`'s
// "etcd Version: X.Y.Z" line.
func parseEtcdVersion(out string) ([2]int, bool) {
	for _, line := range strings.Split(out, "\n") {
		v, ok := strings.CutPrefix(strings.TrimSpace(line), "etcd Version: ")
		if !ok {
			continue
		}
		parts := strings.SplitN(v, ".", 3)
		if len(parts) < 2 {
			return [2]int{}, false
		}
		maj, err1 := strconv.Atoi(parts[0])
		min, err2 := strconv.Atoi(parts[1])
		if err1 != nil || err2 != nil {
			return [2]int{}, false
		}
		return [2]int{maj, min}, true
	}
	return [2]int{}, false
}

// httpClient is for the servers' HTTP health and status endpoints.
var httpClient = &http.Client{
	Timeout:   3 * time.Second,
	Transport: &http.Transport{DisableKeepAlives: true, Proxy: nil},
}

// checkEtcd: GET /health answers {"health":"true"}.
func checkEtcd(ctx context.Context, hostport string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+hostport+"/health", nil)
	if err != nil {
		return fmt.Errorf("etcd health: %w", err)
	}
	resp, err := httpClient.Do(req)
	if err != nil {
		return fmt.Errorf("etcd GET /health: %w", err)
	}
	defer resp.Body.Close()
	var h struct {
		Health string `json:"health"`
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, 1<<16)).Decode(&h); err != nil {
		return fmt.Errorf("etcd GET /health: %s: %w", resp.Status, err)
	}
	if resp.StatusCode != http.StatusOK || h.Health != "true" {
		return fmt.Errorf("etcd GET /health: %s health=%q", resp.Status, h.Health)
	}
	return nil
}

// etcdRole asks the member at hostport (its gRPC gateway's
// /v3/maintenance/status) whether it is the leader.
func etcdRole(ctx context.Context, hostport string) (string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+hostport+"/v3/maintenance/status", strings.NewReader("{}"))
	if err != nil {
		return "", fmt.Errorf("etcd status: %w", err)
	}
	resp, err := httpClient.Do(req)
	if err != nil {
		return "", fmt.Errorf("etcd status: %w", err)
	}
	defer resp.Body.Close()
	var st struct {
		Header struct {
			MemberID json.Number `json:"member_id"`
		} `json:"header"`
		Leader json.Number `json:"leader"`
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, 1<<16)).Decode(&st); err != nil {
		return "", fmt.Errorf("etcd status %s: %s: %w", hostport, resp.Status, err)
	}
	if resp.StatusCode != http.StatusOK || st.Header.MemberID == "" {
		return "", fmt.Errorf("etcd status %s: %s", hostport, resp.Status)
	}
	if st.Leader == "" || st.Leader == "0" {
		return "", fmt.Errorf("etcd status %s: no leader", hostport)
	}
	if st.Leader == st.Header.MemberID {
		return "leader", nil
	}
	return "follower", nil
}

func init() { register(&Etcd) }

// The idle probes of etcd (internal/idleprobe): a range read, a put, a lock's acquire transaction (create the key
// if absent, read the prefix's first key), a delete, and a delete of a key
// a watch is waiting on (registered untimed first; the event awaited
// untimed after).

var etcdOps = []idleprobe.Op[*clientv3.Client]{
	{Op: "put", Sample: idleprobe.Timed(func(ctx context.Context, c *clientv3.Client, key string) error {
		_, err := c.Put(ctx, key, "1")
		return err
	})},
	{Op: "get", Sample: idleprobe.Timed(func(ctx context.Context, c *clientv3.Client, key string) error {
		_, err := c.Get(ctx, idleprobe.Prefix)
		return err
	})},
	{Op: "txn", Sample: idleprobe.Timed(func(ctx context.Context, c *clientv3.Client, key string) error {
		_, err := c.Txn(ctx).If(clientv3.Compare(clientv3.CreateRevision(key), "=", 0)).
			Then(clientv3.OpPut(key, ""), clientv3.OpGet(idleprobe.Prefix+"-txn-", clientv3.WithFirstCreate()...)).
			Else(clientv3.OpGet(key)).Commit()
		return err
	})},
	{Op: "delete", Sample: func(ctx context.Context, c *clientv3.Client, key string) (time.Duration, error) {
		if _, err := c.Put(ctx, key, "1"); err != nil {
			return 0, fmt.Errorf("put %s: %w", key, err)
		}
		return idleprobe.Timed(func(ctx context.Context, c *clientv3.Client, key string) error {
			_, err := c.Delete(ctx, key)
			return err
		})(ctx, c, key)
	}},
	{Op: "delete_watched", Sample: func(ctx context.Context, c *clientv3.Client, key string) (time.Duration, error) {
		if _, err := c.Put(ctx, key, "1"); err != nil {
			return 0, fmt.Errorf("put %s: %w", key, err)
		}
		wctx, cancel := context.WithCancel(ctx)
		defer cancel()
		wch := c.Watch(wctx, key, clientv3.WithCreatedNotify())
		if wr, ok := <-wch; !ok || !wr.Created {
			return 0, fmt.Errorf("watch %s: not registered: %w", key, errors.Join(wr.Err(), ctx.Err()))
		}
		d, err := idleprobe.Timed(func(ctx context.Context, c *clientv3.Client, key string) error {
			_, err := c.Delete(ctx, key)
			return err
		})(ctx, c, key)
		if err != nil {
			return 0, err
		}
		for wr := range wch {
			for _, ev := range wr.Events {
				if ev.Type == mvccpb.DELETE {
					return d, nil
				}
			}
		}
		return 0, fmt.Errorf("watch %s: no delete event: %w", key, ctx.Err())
	}},
}

func dialEtcd(ctx context.Context, addr string) (*clientv3.Client, func(context.Context) error, error) {
	c, err := clientv3.New(clientv3.Config{Endpoints: []string{addr}, DialTimeout: time.Second, Logger: zap.NewNop(), Context: context.WithoutCancel(ctx)})
	if err != nil {
		return nil, nil, err
	}
	if _, err := c.Put(ctx, idleprobe.Prefix, "1"); err != nil {
		_ = c.Close()
		return nil, nil, err
	}
	return c, func(ctx context.Context) error {
		defer c.Close()
		_, err := c.Delete(ctx, idleprobe.Prefix, clientv3.WithPrefix())
		return err
	}, nil
}

// idleEtcd is the server's entry of IdleProbes.
var idleEtcd = idleprobe.For(catalog.ServerEtcd, dialEtcd, etcdOps)

// wireEtcd is how an instance reaches etcd: one client for the etcd
// strategy and the workshop's exercises, its requests counted by the
// instance's meter.
var wireEtcd = lockwire.Wiring{
	Server: catalog.ServerEtcd,
	Connect: func(ctx context.Context, addrs []string, meter *cost.Meter) (any, func() error, error) {
		ec := etcdlock.ClientConfig(context.WithoutCancel(ctx), addrs)
		ec.DialOptions = append(ec.DialOptions, meter.EtcdDialOptions()...)
		cli, err := clientv3.New(ec)
		if err != nil {
			return nil, nil, err
		}
		return cli, cli.Close, nil
	},
	Openers: map[string]lockwire.Opener{
		catalog.Etcd: func(_ context.Context, c lockwire.Clients) (stock.LockBackend, error) {
			cli := EtcdClient(c)
			if cli == nil {
				return nil, lockwire.NotConfigured(catalog.ServerEtcd)
			}
			return etcdlock.NewBackend(cli), nil
		},
	},
}

// EtcdClient is the instance's shared etcd client (wireEtcd's Connect),
// nil without one: the etcd strategy's and the workshop's exercises'.
func EtcdClient(c lockwire.Clients) *clientv3.Client {
	cli, _ := c.Shared[catalog.ServerEtcd].(*clientv3.Client)
	return cli
}
