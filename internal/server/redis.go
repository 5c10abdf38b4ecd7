package server

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/seckill-lab/seckill/internal/config"
	"github.com/seckill-lab/seckill/internal/idleprobe"
	"github.com/seckill-lab/seckill/stock/catalog"
)

// Redis component kinds.
const (
	// KindRedis is one of the five independent servers redis-1..redis-5
	// (the Redlock set; redis-1 also serves the single-Redis locks in the
	// single topology).
	KindRedis Kind = "redis"
	// KindRedisHA is the Sentinel-monitored primary or its replica.
	KindRedisHA Kind = "redis-ha"
	// KindSentinel is a Redis Sentinel watching the primary.
	KindSentinel Kind = "sentinel"
)

// Redis settings.
const (
	// RedisCount is the number of independent servers (the Redlock set).
	RedisCount = 5
	// SentinelMaster is the master name the Sentinels monitor.
	SentinelMaster = config.DefaultRedisMaster
	// SentinelQuorum is the number of Sentinels that must agree the master
	// is down.
	SentinelQuorum = 2
	// Sentinel timings: the master is down after 1s without an answer, and
	// a failover is retried after 5s: failovers take seconds.
	SentinelDownAfterMs    = 1000
	SentinelFailoverTimeMs = 5000
	// RedisPrimary and RedisReplica name the replicated pair.
	RedisPrimary = "redis-primary"
	RedisReplica = "redis-replica"
)

// Port offsets: redis-K on B+K, the primary B+6, the replica B+7,
// sentinel-K B+7+K.
const (
	offRedis        = 0
	offRedisPrimary = 6
	offRedisReplica = 7
	offSentinel     = 7
)

func sentinelName(k int) string { return "sentinel-" + itoa(k) }

// RedisPersistence are the arguments of a Redis server at durability level
// d: no persistence, or with DurabilityFsync an AOF fsynced before every
// reply. The local stack and the cluster's manifests both use them.
func RedisPersistence(d string) []string {
	if d == DurabilityFsync {
		return []string{"--save", "", "--appendonly", "yes", "--appendfsync", "always"}
	}
	return []string{"--save", "", "--appendonly", "no"}
}

// redisArgs is a Redis server on port, data in dir, at l's durability.
func redisArgs(l Layout, port int, dir string) []string {
	return append(append([]string{"--port", itoa(port), "--bind", "127.0.0.1"}, RedisPersistence(l.Durability)...),
		"--dir", dir, "--daemonize", "no", "--logfile", "", "--maxclients", "10000")
}

func mkdirPrepare(dir string) func(context.Context) error {
	return func(context.Context) error { return os.MkdirAll(dir, 0o755) }
}

// Redis is the Redis description.
var Redis = Spec{
	Position: 1,
	Group:    "redis",
	Idle:     &idleRedis,
	Tools: []Tool{{Key: "redis-server", Names: []string{"redis-server"}, Version: []string{"--version"},
		Pkgs: map[string]string{pmApt: "redis-server", pmDnf: "redis", pmBrew: "redis"}}},
	Image: "redis:7.0.15",
	Kinds: []KindSpec{
		{Kind: KindRedis, Rank: 0, Check: checkRedis},
		{Kind: KindRedisHA, Rank: 1, Check: checkRedisHA, Role: redisRole},
		{Kind: KindSentinel, Rank: 2, Check: checkSentinel},
	},
	Ports: func(base int, ha bool) []PortUse {
		var ps []PortUse
		for k := 1; k <= RedisCount; k++ {
			ps = append(ps, PortUse{base + offRedis + k, "redis-" + itoa(k)})
		}
		if ha {
			ps = append(ps, PortUse{base + offRedisPrimary, RedisPrimary}, PortUse{base + offRedisReplica, RedisReplica})
			for _, k := range members() {
				ps = append(ps, PortUse{base + offSentinel + k, sentinelName(k)})
			}
		}
		return ps
	},
	Nodes: func(l Layout) []Node {
		bin := l.Tools.Bin["redis-server"]
		var ns []Node
		for k := 1; k <= RedisCount; k++ {
			name, port := "redis-"+itoa(k), l.Base+offRedis+k
			dir := filepath.Join(l.Dir, name)
			ns = append(ns, Node{Name: name, Kind: KindRedis, Port: port, Bin: bin, Args: redisArgs(l, port, dir), Prepare: mkdirPrepare(dir)})
		}
		if !l.HA {
			return ns
		}
		primary := l.Base + offRedisPrimary
		pdir, rdir := filepath.Join(l.Dir, RedisPrimary), filepath.Join(l.Dir, RedisReplica)
		ns = append(ns,
			Node{Name: RedisPrimary, Kind: KindRedisHA, Port: primary, Bin: bin, Args: redisArgs(l, primary, pdir), Prepare: mkdirPrepare(pdir)},
			Node{Name: RedisReplica, Kind: KindRedisHA, Port: l.Base + offRedisReplica, Bin: bin,
				Args: append(redisArgs(l, l.Base+offRedisReplica, rdir), "--replicaof", "127.0.0.1", itoa(primary)), Prepare: mkdirPrepare(rdir)})
		for _, k := range members() {
			ns = append(ns, sentinelNode(l, k, bin, primary))
		}
		return ns
	},
	// No Peers: the replica's link to its primary stays direct. Pointed
	// at the primary through the proxy, it is re-pointed by the
	// Sentinels at the primary's own address (what they monitor, and
	// what they must hand the instances).
	Env: func(base int, ha, has bool) [][2]string {
		var redlock, sentinels []int
		for k := 1; k <= RedisCount; k++ {
			redlock = append(redlock, base+offRedis+k)
		}
		if ha {
			for _, k := range members() {
				sentinels = append(sentinels, base+offSentinel+k)
			}
		}
		return [][2]string{
			{config.EnvRedisAddrs, joinAddrs(has, redlock...)},
			// The lock-alone counter lives on the last Redlock node.
			{config.EnvCounterRedis, joinAddrs(has, redlock[len(redlock)-1])},
			{config.EnvSentinels, joinAddrs(has, sentinels...)},
			{config.EnvRedisMaster, SentinelMaster},
		}
	},
	ServeOnly: []string{config.EnvSentinels, config.EnvRedisMaster},
	Direct:    []string{config.EnvCounterRedis},
	Links: func(ha bool) []Link {
		single := Link{Name: "redis", Names: []string{"redis-1"}}
		if ha {
			single = Link{Name: "redis", Kinds: []Kind{KindRedisHA, KindSentinel}}
		}
		return []Link{single, {Name: "redlock", Kinds: []Kind{KindRedis}}}
	},
	Serves: map[string]string{"redis": "redis", "redis x5": "redlock"},
	Order:  map[string]int{RedisReplica: 1},
	Durability: map[string]string{
		DurabilityDefault: `nothing reaches the disk: --save "" --appendonly no (seckill fault persistence turns the AOF on)`,
		DurabilityFsync:   "AOF with appendfsync always: each write is fsynced before the reply; in ha, redis-stream answers a sale once the replica has it too (WAIT 1)",
		DurabilityNone:    `nothing reaches the disk: --save "" --appendonly no`,
	},
	Fsyncs: map[string]bool{DurabilityDefault: false, DurabilityFsync: true, DurabilityNone: false},
}

// sentinelNode writes a fresh sentinel.conf at each `up` (Sentinel
// rewrites it with what it learns: a restart keeps that) and runs
// redis-server --sentinel.
func sentinelNode(l Layout, k int, bin string, primary int) Node {
	name, port := sentinelName(k), l.Base+offSentinel+k
	dir := filepath.Join(l.Dir, name)
	conf := filepath.Join(dir, "sentinel.conf")
	return Node{Name: name, Kind: KindSentinel, Port: port, Bin: bin, Args: []string{conf, "--sentinel"},
		Prepare: func(context.Context) error {
			if err := os.MkdirAll(dir, 0o755); err != nil {
				return fmt.Errorf("%s: %w", name, err)
			}
			return writeLines(conf, []string{
				"port " + itoa(port),
				"bind 127.0.0.1",
				"daemonize no",
				`logfile ""`,
				"dir " + dir,
				fmt.Sprintf("sentinel monitor %s 127.0.0.1 %d %d", SentinelMaster, primary, SentinelQuorum),
				fmt.Sprintf("sentinel down-after-milliseconds %s %d", SentinelMaster, SentinelDownAfterMs),
				fmt.Sprintf("sentinel failover-timeout %s %d", SentinelMaster, SentinelFailoverTimeMs),
				fmt.Sprintf("sentinel parallel-syncs %s 1", SentinelMaster),
			})
		}}
}

// checkRedis: the server accepts a connection (dialled plainly first:
// go-redis logs every failed dial) and answers PING.
func checkRedis(ctx context.Context, hostport string) error {
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", hostport)
	if err != nil {
		return fmt.Errorf("redis %s: %w", hostport, err)
	}
	conn.Close()
	c := redis.NewClient(&redis.Options{Addr: hostport, DialTimeout: time.Second, MaxRetries: -1, PoolSize: 1})
	defer c.Close()
	if err := c.Ping(ctx).Err(); err != nil {
		return fmt.Errorf("redis PING %s: %w", hostport, err)
	}
	return nil
}

// RedisInfo dials hostport and returns the fields of INFO section.
func RedisInfo(ctx context.Context, hostport, section string) (map[string]string, error) {
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
	info, err := RedisInfo(ctx, hostport, "replication")
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
	info, err := RedisInfo(ctx, hostport, "replication")
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

func init() { register(&Redis) }

// The idle probes of Redis (internal/idleprobe): GET, SET NX PX (a lock's acquire) and the release script (a
// compare-and-delete) on a key set untimed first.

// releaseScript is a lock's release: delete the key if it holds the value.
const releaseScript = `if redis.call("get", KEYS[1]) == ARGV[1] then return redis.call("del", KEYS[1]) else return 0 end`

var redisOps = []idleprobe.Op[*redis.Client]{
	{Op: "get", Sample: idleprobe.Timed(func(ctx context.Context, c *redis.Client, key string) error {
		return c.Get(ctx, idleprobe.Prefix).Err()
	})},
	{Op: "set", Sample: idleprobe.Timed(func(ctx context.Context, c *redis.Client, key string) error {
		return c.SetNX(ctx, key, "1", time.Minute).Err()
	})},
	{Op: "eval", Sample: func(ctx context.Context, c *redis.Client, key string) (time.Duration, error) {
		if err := c.Set(ctx, key, "1", time.Minute).Err(); err != nil {
			return 0, fmt.Errorf("set %s: %w", key, err)
		}
		return idleprobe.Timed(func(ctx context.Context, c *redis.Client, key string) error {
			return c.Eval(ctx, releaseScript, []string{key}, "1").Err()
		})(ctx, c, key)
	}},
}

func dialRedis(ctx context.Context, addr string) (*redis.Client, func(context.Context) error, error) {
	c := redis.NewClient(&redis.Options{Addr: addr, DialTimeout: time.Second, MaxRetries: -1, PoolSize: 1})
	if err := c.Set(ctx, idleprobe.Prefix, "1", time.Minute).Err(); err != nil {
		_ = c.Close()
		return nil, nil, err
	}
	return c, func(ctx context.Context) error {
		defer c.Close()
		var keys []string
		iter := c.Scan(ctx, 0, idleprobe.Prefix+"*", 1000).Iterator()
		for iter.Next(ctx) {
			keys = append(keys, iter.Val())
		}
		if len(keys) > 0 {
			return c.Del(ctx, keys...).Err()
		}
		return iter.Err()
	}, nil
}

// idleRedis is the server's entry of IdleProbes.
var idleRedis = idleprobe.For(catalog.ServerRedis, dialRedis, redisOps)
