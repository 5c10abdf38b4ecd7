package stack

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
	"golang.org/x/sync/errgroup"

	"github.com/seckill-lab/seckill/internal/config"
)

// Topologies of the stack (Options.Topology, `seckill up --topology`).
const (
	// TopologySingle is one Redis per role, a single-member etcd and a
	// standalone ZooKeeper.
	TopologySingle = "single"
	// TopologyHA adds a Sentinel-monitored Redis primary and replica, and
	// runs etcd and ZooKeeper as three-member clusters.
	TopologyHA = "ha"
	// DefaultTopology is the topology of Options.Topology's zero value.
	DefaultTopology = TopologySingle
)

// Topologies lists the valid topologies.
func Topologies() []string { return []string{TopologySingle, TopologyHA} }

// HA sizes and settings.
const (
	// HAMembers is the number of etcd members, ZooKeeper members and
	// Sentinels of the ha topology.
	HAMembers = 3
	// SentinelMaster is the master name the Sentinels monitor.
	SentinelMaster = config.DefaultRedisMaster
	// SentinelQuorum is the number of Sentinels that must agree the master
	// is down.
	SentinelQuorum = 2
	// Sentinel timings: the master is down after 1s without an answer, and
	// a failover is retried after 5s: failovers take seconds.
	sentinelDownAfterMs    = 1000
	sentinelFailoverTimeMs = 5000
)

// Port offsets of the ha topology's components.
const (
	offRedisPrimary = 6
	offRedisReplica = 7
	offSentinel     = 7  // sentinel-K listens on B+7+K, K in 1..3
	offEtcdMember   = 20 // etcd-K: client B+20+2K, peer B+21+2K
	offZKMember     = 30 // zookeeper-K: client B+28+3K, peer B+29+3K, election B+30+3K
)

// Component kinds of the ha topology.
const (
	// KindRedisHA is the Sentinel-monitored Redis primary or its replica.
	KindRedisHA Kind = "redis-ha"
	// KindSentinel is a Redis Sentinel watching the primary.
	KindSentinel Kind = "sentinel"
	// KindEtcdMember is a member of the three-member etcd cluster.
	KindEtcdMember Kind = "etcd-member"
	// KindZKMember is a member of the three-node ZooKeeper ensemble.
	KindZKMember Kind = "zookeeper-member"
)

// Names of the replicated Redis pair.
const (
	redisPrimaryName = "redis-primary"
	redisReplicaName = "redis-replica"
)

func sentinelName(k int) string   { return "sentinel-" + itoa(k) }
func etcdMemberName(k int) string { return "etcd-" + itoa(k) }
func zkMemberName(k int) string   { return "zookeeper-" + itoa(k) }

func etcdMemberClient(base, k int) int { return base + offEtcdMember + 2*k }
func etcdMemberPeer(base, k int) int   { return base + offEtcdMember + 2*k + 1 }
func zkMemberClient(base, k int) int   { return base + offZKMember + 3*k - 2 }
func zkMemberPeer(base, k int) int     { return base + offZKMember + 3*k - 1 }
func zkMemberElection(base, k int) int { return base + offZKMember + 3*k }

// haPorts are the ports of the ha topology's own components.
func haPorts(base int) []portUse {
	ps := []portUse{{base + offRedisPrimary, redisPrimaryName}, {base + offRedisReplica, redisReplicaName}}
	for k := 1; k <= HAMembers; k++ {
		ps = append(ps, portUse{base + offSentinel + k, sentinelName(k)})
	}
	for k := 1; k <= HAMembers; k++ {
		ps = append(ps, portUse{etcdMemberClient(base, k), etcdMemberName(k) + " client"},
			portUse{etcdMemberPeer(base, k), etcdMemberName(k) + " peer"})
	}
	for k := 1; k <= HAMembers; k++ {
		ps = append(ps, portUse{zkMemberClient(base, k), zkMemberName(k) + " client"},
			portUse{zkMemberPeer(base, k), zkMemberName(k) + " peer"},
			portUse{zkMemberElection(base, k), zkMemberName(k) + " election"})
	}
	return ps
}

// HA reports whether the stack runs the ha topology.
func (s *State) HA() bool { return s.Topology == TopologyHA }

// SentinelAddrs returns the Sentinels' addresses (none in the single
// topology).
func (s *State) SentinelAddrs() []string {
	if !s.HA() || !s.Has(BackendRedis) {
		return nil
	}
	out := make([]string, 0, HAMembers)
	for k := 1; k <= HAMembers; k++ {
		out = append(out, addr(s.port(offSentinel+k)))
	}
	return out
}

// startHAServers starts the ha topology's own servers concurrently in g.
func (r *runner) startHAServers(ctx context.Context, g *errgroup.Group, o Options, paths Tools) {
	st := r.st
	if st.Has(BackendRedis) {
		g.Go(func() error { return r.startRedisHA(ctx, o, paths, redisPrimaryName, offRedisPrimary, nil) })
		primary := st.port(offRedisPrimary)
		g.Go(func() error {
			return r.startRedisHA(ctx, o, paths, redisReplicaName, offRedisReplica, []string{"--replicaof", "127.0.0.1", itoa(primary)})
		})
	}
	for k := 1; k <= HAMembers; k++ {
		if st.Has(BackendRedis) {
			g.Go(func() error { return r.startSentinel(ctx, o, paths, k) })
		}
		if st.Has(BackendEtcd) {
			g.Go(func() error { return r.startEtcdMember(ctx, o, paths, k) })
		}
		if st.Has(BackendZooKeeper) {
			g.Go(func() error { return r.startZKMember(ctx, o, paths, k) })
		}
	}
}

func (r *runner) startRedisHA(ctx context.Context, o Options, paths Tools, name string, off int, extra []string) error {
	port := r.st.port(off)
	dataDir := filepath.Join(o.Dir, name)
	if err := os.MkdirAll(dataDir, 0o755); err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	args := append([]string{"--port", itoa(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
		"--dir", dataDir, "--daemonize", "no", "--logfile", "", "--maxclients", "10000"}, extra...)
	return r.launch(ctx, o, name, KindRedisHA, addr(port), paths.Bin["redis-server"], args, nil,
		func(ctx context.Context, c Component) error { return checkRedisHA(ctx, c.Addr) })
}

// startSentinel writes a fresh sentinel.conf (Sentinel rewrites it with
// what it learns: a restart keeps that) and runs redis-server --sentinel.
func (r *runner) startSentinel(ctx context.Context, o Options, paths Tools, k int) error {
	name := sentinelName(k)
	port := r.st.port(offSentinel + k)
	dir := filepath.Join(o.Dir, name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	conf := filepath.Join(dir, "sentinel.conf")
	lines := []string{
		"port " + itoa(port),
		"bind 127.0.0.1",
		"daemonize no",
		`logfile ""`,
		"dir " + dir,
		fmt.Sprintf("sentinel monitor %s 127.0.0.1 %d %d", SentinelMaster, r.st.port(offRedisPrimary), SentinelQuorum),
		fmt.Sprintf("sentinel down-after-milliseconds %s %d", SentinelMaster, sentinelDownAfterMs),
		fmt.Sprintf("sentinel failover-timeout %s %d", SentinelMaster, sentinelFailoverTimeMs),
		fmt.Sprintf("sentinel parallel-syncs %s 1", SentinelMaster),
	}
	if err := os.WriteFile(conf, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		return fmt.Errorf("%s: write config: %w", name, err)
	}
	return r.launch(ctx, o, name, KindSentinel, addr(port), paths.Bin["redis-server"], []string{conf, "--sentinel"}, nil,
		func(ctx context.Context, c Component) error { return checkSentinel(ctx, c.Addr) })
}

func (r *runner) startEtcdMember(ctx context.Context, o Options, paths Tools, k int) error {
	name := etcdMemberName(k)
	base := r.st.BasePort
	var cluster []string
	for m := 1; m <= HAMembers; m++ {
		cluster = append(cluster, etcdMemberName(m)+"=http://"+addr(etcdMemberPeer(base, m)))
	}
	client, peer := addr(etcdMemberClient(base, k)), addr(etcdMemberPeer(base, k))
	dataDir := filepath.Join(o.Dir, name)
	if err := os.RemoveAll(dataDir); err != nil {
		return fmt.Errorf("%s: wipe data: %w", name, err)
	}
	// A restart reuses the data directory, where the flags --initial-*
	// are ignored: the member rejoins its cluster.
	args := []string{"--name", name, "--data-dir", dataDir,
		"--listen-client-urls", "http://" + client, "--advertise-client-urls", "http://" + client,
		"--listen-peer-urls", "http://" + peer, "--initial-advertise-peer-urls", "http://" + peer,
		"--initial-cluster", strings.Join(cluster, ","), "--initial-cluster-state", "new",
		"--initial-cluster-token", "seckill-" + itoa(base)}
	return r.launch(ctx, o, name, KindEtcdMember, client, paths.Bin["etcd"], args, cleanEnv("ETCD_"),
		func(ctx context.Context, c Component) error { return checkEtcd(ctx, c.Addr) })
}

func (r *runner) startZKMember(ctx context.Context, o Options, paths Tools, k int) error {
	name := zkMemberName(k)
	base := r.st.BasePort
	dir := filepath.Join(o.Dir, name)
	dataDir := filepath.Join(dir, "data")
	if err := os.RemoveAll(dataDir); err != nil {
		return fmt.Errorf("%s: wipe data: %w", name, err)
	}
	if err := os.MkdirAll(dataDir, 0o755); err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	if err := os.WriteFile(filepath.Join(dataDir, "myid"), []byte(itoa(k)+"\n"), 0o644); err != nil {
		return fmt.Errorf("%s: write myid: %w", name, err)
	}
	lines := []string{
		"tickTime=2000", "initLimit=10", "syncLimit=5",
		"dataDir=" + dataDir,
		"clientPort=" + itoa(zkMemberClient(base, k)), "clientPortAddress=127.0.0.1",
		"admin.enableServer=false",
		"4lw.commands.whitelist=ruok,srvr,stat,mntr",
		"maxClientCnxns=0",
	}
	for m := 1; m <= HAMembers; m++ {
		lines = append(lines, fmt.Sprintf("server.%d=127.0.0.1:%d:%d", m, zkMemberPeer(base, m), zkMemberElection(base, m)))
	}
	cfg := filepath.Join(dir, "zoo.cfg")
	if err := os.WriteFile(cfg, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		return fmt.Errorf("%s: write config: %w", name, err)
	}
	args := zkArgs(paths.ZK, dir, cfg)
	return r.launch(ctx, o, name, KindZKMember, addr(zkMemberClient(base, k)), paths.Bin["java"], args, nil,
		func(ctx context.Context, c Component) error { return checkZKMember(ctx, c.Addr) })
}

// redisInfo dials hostport (first with a plain dial: go-redis logs every
// failed dial) and returns the fields of INFO section.
func redisInfo(ctx context.Context, hostport, section string) (map[string]string, error) {
	if err := checkRedis(ctx, hostport); err != nil {
		return nil, err
	}
	c := redis.NewClient(&redis.Options{Addr: hostport, DialTimeout: time.Second, MaxRetries: -1, PoolSize: 1})
	defer c.Close()
	s, err := c.Info(ctx, section).Result()
	if err != nil {
		return nil, fmt.Errorf("redis INFO %s %s: %w", section, hostport, err)
	}
	out := map[string]string{}
	sc := bufio.NewScanner(strings.NewReader(s))
	for sc.Scan() {
		if k, v, ok := strings.Cut(strings.TrimSpace(sc.Text()), ":"); ok {
			out[k] = v
		}
	}
	return out, nil
}

// checkRedisHA: the server answers; a replica is also linked to its master.
func checkRedisHA(ctx context.Context, hostport string) error {
	info, err := redisInfo(ctx, hostport, "replication")
	if err != nil {
		return err
	}
	if info["role"] == "slave" && info["master_link_status"] != "up" {
		return fmt.Errorf("redis %s: replica of %s:%s, link %s", hostport, info["master_host"], info["master_port"], info["master_link_status"])
	}
	return nil
}

// redisRole is the role INFO replication reports: master or slave.
func redisRole(ctx context.Context, hostport string) (string, error) {
	info, err := redisInfo(ctx, hostport, "replication")
	if err != nil {
		return "", err
	}
	return info["role"], nil
}

// checkSentinel: the Sentinel names the master, and enough Sentinels see
// each other to authorise a failover (SENTINEL CKQUORUM).
func checkSentinel(ctx context.Context, hostport string) error {
	if err := checkRedis(ctx, hostport); err != nil {
		return fmt.Errorf("sentinel: %w", err)
	}
	c := redis.NewSentinelClient(&redis.Options{Addr: hostport, DialTimeout: time.Second, MaxRetries: -1, PoolSize: 1})
	defer c.Close()
	master, err := c.GetMasterAddrByName(ctx, SentinelMaster).Result()
	if err != nil {
		return fmt.Errorf("sentinel %s: get-master-addr-by-name %s: %w", hostport, SentinelMaster, err)
	}
	if len(master) != 2 {
		return fmt.Errorf("sentinel %s: get-master-addr-by-name %s: %v", hostport, SentinelMaster, master)
	}
	if err := c.CkQuorum(ctx, SentinelMaster).Err(); err != nil {
		return fmt.Errorf("sentinel %s: ckquorum %s: %w", hostport, SentinelMaster, err)
	}
	return nil
}

// zkFourLetter sends a four-letter word to the ZooKeeper server at
// hostport and returns its answer.
func zkFourLetter(ctx context.Context, hostport, word string) (string, error) {
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", hostport)
	if err != nil {
		return "", fmt.Errorf("zookeeper %s: %w", word, err)
	}
	defer conn.Close()
	dl := time.Now().Add(2 * time.Second)
	if t, ok := ctx.Deadline(); ok && t.Before(dl) {
		dl = t
	}
	_ = conn.SetDeadline(dl)
	if _, err := conn.Write([]byte(word)); err != nil {
		return "", fmt.Errorf("zookeeper %s: %w", word, err)
	}
	b, err := io.ReadAll(io.LimitReader(conn, 1<<16))
	if err != nil && len(b) == 0 {
		return "", fmt.Errorf("zookeeper %s: %w", word, err)
	}
	return string(b), nil
}

// zkMode returns the Mode srvr reports (leader, follower, standalone);
// a server that does not serve requests (no quorum) is an error.
func zkMode(ctx context.Context, hostport string) (string, error) {
	s, err := zkFourLetter(ctx, hostport, "srvr")
	if err != nil {
		return "", err
	}
	for _, l := range strings.Split(s, "\n") {
		if m, ok := strings.CutPrefix(strings.TrimSpace(l), "Mode:"); ok {
			return strings.TrimSpace(m), nil
		}
	}
	return "", fmt.Errorf("zookeeper srvr %s: no Mode in %q", hostport, firstLine(s))
}

// checkZKMember: the member answers ruok and serves as leader or follower.
func checkZKMember(ctx context.Context, hostport string) error {
	if err := checkZooKeeper(ctx, hostport); err != nil {
		return err
	}
	mode, err := zkMode(ctx, hostport)
	if err != nil {
		return err
	}
	if mode != "leader" && mode != "follower" {
		return fmt.Errorf("zookeeper srvr %s: mode %s, want leader or follower", hostport, mode)
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
	switch st.Leader {
	case "", "0":
		return "", fmt.Errorf("etcd status %s: no leader", hostport)
	case st.Header.MemberID:
		return "leader", nil
	}
	return "follower", nil
}

// componentRole is the role c plays in its replication group: master or
// slave (Redis primary/replica), leader or follower (etcd, ZooKeeper;
// standalone for the single topology's ZooKeeper); "" for the others.
func componentRole(ctx context.Context, c Component) (string, error) {
	switch c.Kind {
	case KindRedisHA:
		return redisRole(ctx, c.Addr)
	case KindEtcd, KindEtcdMember:
		return etcdRole(ctx, c.Addr)
	case KindZooKeeper, KindZKMember:
		return zkMode(ctx, c.Addr)
	}
	return "", nil
}

// validTopology checks t (empty means DefaultTopology).
func validTopology(t string) (string, error) {
	switch t {
	case "":
		return DefaultTopology, nil
	case TopologySingle, TopologyHA:
		return t, nil
	}
	return "", fmt.Errorf("--topology %q: want %s", t, strings.Join(Topologies(), " or "))
}
