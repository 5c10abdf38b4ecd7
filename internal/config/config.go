// Package config holds the settings of one `seckill serve` instance: where
// it listens, its name and the addresses of its backends. Every setting has
// an environment variable (the names docker-compose.yml and the local stack
// set) and a flag that overrides it.
package config

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/seckill-lab/seckill/stock/catalog"
)

// Environment variables read by `seckill serve`.
const (
	EnvListen     = "SECKILL_LISTEN"
	EnvInstance   = "SECKILL_INSTANCE"
	EnvMySQLDSN   = "SECKILL_MYSQL_DSN"
	EnvRedisAddrs = "SECKILL_REDIS_ADDRS"
	// EnvCounterRedis is the Redis of the lock-alone goods' counter
	// (counterstore.Store), dialled directly, never through the proxy.
	EnvCounterRedis = "SECKILL_COUNTER_REDIS"
	EnvSentinels    = "SECKILL_REDIS_SENTINELS"
	EnvRedisMaster  = "SECKILL_REDIS_MASTER"
	EnvAdminToken   = "SECKILL_ADMIN_TOKEN"
	EnvStrategy     = "SECKILL_STRATEGY"
	EnvMaxQty       = "SECKILL_MAX_QTY"
	// EnvDBInflight bounds the lock-free purchases one instance runs
	// against MySQL at once (sqlstore.NewBounded); 0 is no bound.
	EnvDBInflight = "SECKILL_DB_INFLIGHT"
	// EnvStreamGather is how long redis-stream's order consumer waits
	// after a short batch before it reads again (a Go duration, "20ms");
	// 0 reads again at once.
	EnvStreamGather = "SECKILL_STREAM_GATHER"
	// EnvStreamReplicas is how many replicas must have redis-stream's
	// accept before the purchase is answered (Redis WAIT); 0 answers once
	// the primary has it.
	EnvStreamReplicas = "SECKILL_STREAM_REPLICAS"
	// EnvProxyShift is how far above a server's port this instance's fault
	// proxy for it listens, on 127.0.0.1 (`seckill up --proxy`); Redis
	// addresses a Sentinel names are dialled shifted too.
	EnvProxyShift = "SECKILL_PROXY_SHIFT"
	// EnvSetting is a whole setting (the JSON of GET /admin/strategy) the
	// instance starts with instead of EnvStrategy's defaults. The local
	// stack sets it when it starts an instance beside running ones (a
	// kill fault's restart, `seckill restart`, a scale-up), so the new
	// process serves under the fleet's setting from its first request. It
	// is not in EnvVars: the deployments that do not restart by hand
	// (compose, the cluster) do not set it.
	EnvSetting = "SECKILL_SETTING"
)

// Environment variables the local stack adds to its env.sh for the bench
// and the integration tests (`seckill serve` does not read them).
const (
	EnvNginxURL     = "SECKILL_NGINX_URL"
	EnvInstanceURLs = "SECKILL_INSTANCE_URLS"
	EnvStackDir     = "SECKILL_STACK_DIR"
)

// ServerVars are the variables that give the servers' addresses (and the
// database's DSN), in a fixed order: Redis's, the lock servers' that Config
// keeps in Servers (catalog.ServerInfo.Env), MySQL's.
func ServerVars() []string {
	return slices.Concat([]string{EnvRedisAddrs, EnvSentinels, EnvRedisMaster, EnvCounterRedis}, listServerVars(), []string{EnvMySQLDSN})
}

// EnvVars lists every variable `seckill serve` reads, in a fixed order:
// one list the config, the stack and the compose check use.
func EnvVars() []string {
	return slices.Concat([]string{EnvListen, EnvInstance, EnvMySQLDSN, EnvRedisAddrs, EnvSentinels, EnvRedisMaster, EnvCounterRedis},
		listServerVars(), []string{EnvAdminToken, EnvStrategy, EnvMaxQty, EnvDBInflight, EnvStreamGather, EnvStreamReplicas, EnvProxyShift})
}

// listServers are the lock servers whose addresses Config keeps in
// Servers: the catalogue's with a flag of their own.
func listServers() []catalog.ServerInfo {
	var out []catalog.ServerInfo
	for _, s := range catalog.Servers() {
		if s.Flag != "" {
			out = append(out, s)
		}
	}
	return out
}

// listServerVars are listServers' variables.
func listServerVars() []string {
	var out []string
	for _, s := range listServers() {
		out = append(out, s.Env)
	}
	return out
}

// Defaults.
const (
	DefaultListen = "127.0.0.1:8080"
	DefaultMaxQty = 100
	// DefaultDBInflight is how many lock-free purchases one instance runs
	// against MySQL at once (sqlstore.NewBounded says why 4).
	DefaultDBInflight = 4
	// DefaultStreamGather is how long the order consumer waits after a
	// short batch (orderstream.ConsumerOptions says why 20 ms).
	DefaultStreamGather = 20 * time.Millisecond
	// MaxStreamGather bounds it: the consumer also takes over a dead
	// consumer's entries between its reads (orderstream.ClaimIdle is 2 s).
	MaxStreamGather = time.Second
	// MaxStreamReplicas bounds StreamReplicas (the lab's pair has one).
	MaxStreamReplicas = 8
	// DefaultRedisMaster is the Sentinel master name of the replicated Redis.
	DefaultRedisMaster = "seckill"
	MaxBodyBytes       = 4 << 10
)

// Config is one instance's settings.
type Config struct {
	// Listen is the HTTP listen address. Default 127.0.0.1:8080.
	Listen string
	// Instance names this instance in X-Instance and on its orders.
	// Default: the host name.
	Instance string
	// MySQLDSN is a go-sql-driver DSN. Required.
	MySQLDSN string
	// RedisAddrs are host:port of the Redis servers; the first serves the
	// redis lock, redis-atomic and the flawed variants, all of them are
	// the Redlock set. Optional: without it the Redis strategies are off.
	RedisAddrs []string
	// RedisSentinels are host:port of Redis Sentinels. When set, the
	// single-Redis strategies (redis, redis-atomic, the flawed variants)
	// use a failover client that follows the master RedisMaster; the
	// Redlock set stays RedisAddrs. Optional.
	RedisSentinels []string
	// RedisMaster is the Sentinel master name. Default "seckill".
	RedisMaster string
	// CounterRedis is the Redis of the lock-alone goods' counter
	// (counterstore.Store), reached directly. Optional: without it the
	// lock-alone goods answer backend_unavailable.
	CounterRedis string
	// Servers are the addresses (host:port) of the lock servers that have
	// no field of their own here, by server: those of the catalogue with
	// a flag (catalog.ServerInfo: its variable, its flag). Optional: a
	// server without addresses leaves its strategies off.
	Servers map[catalog.Server][]string
	// AdminToken guards /admin. Empty disables the admin API (403).
	AdminToken string
	// Strategy is the starting strategy. Default: the service's (none);
	// the service validates it.
	Strategy string
	// Setting is EnvSetting: a whole starting setting (JSON), "" for
	// Strategy's defaults.
	Setting string
	// MaxQty bounds qty per purchase. Default 100.
	MaxQty int64
	// DBInflight bounds the lock-free purchases (sql-atomic, redis-atomic's
	// MySQL half) this instance runs against MySQL at once, on loopback;
	// the instance scales it with its round trip to MySQL
	// (sqlstore.ScaledInflight). The others wait in the instance. 0 is no
	// bound. Default 4 (sqlstore.NewBounded says why).
	DBInflight int
	// StreamGather is how long redis-stream's order consumer waits after
	// a batch shorter than its most (128 entries) before it reads again,
	// so that under load each MySQL transaction writes more orders, at
	// the cost of up to that much order lag. 0 reads again at once.
	// Default 20 ms (orderstream.ConsumerOptions says why); at most 1 s.
	StreamGather time.Duration
	// StreamReplicas is how many replicas of the Redis primary must have
	// redis-stream's accept (its stock, its entry) before the purchase is
	// answered: the instance sends WAIT after the script and answers 503
	// backend_unavailable when fewer acknowledged it within
	// orderstream.ReplicaWait, so a careful client resends it. A failover
	// then promotes a replica that has every answered sale. 0 (the
	// default) answers once the primary has it: a failover can lose the
	// sales its replica had not yet received. `seckill up --topology ha
	// --durability fsync` sets 1.
	StreamReplicas int
	// ProxyShift, when not 0, is added to the port of every 127.0.0.1
	// Redis address a Sentinel hands out, so the failover client reaches
	// the primary through the same fault proxy as the other servers.
	// Optional.
	ProxyShift int
}

// FromEnv reads the variables through getenv (os.Getenv in production).
func FromEnv(getenv func(string) string) (Config, error) {
	c := Config{
		Listen:         getenv(EnvListen),
		Instance:       getenv(EnvInstance),
		MySQLDSN:       getenv(EnvMySQLDSN),
		RedisAddrs:     SplitList(getenv(EnvRedisAddrs)),
		RedisSentinels: SplitList(getenv(EnvSentinels)),
		RedisMaster:    getenv(EnvRedisMaster),
		CounterRedis:   getenv(EnvCounterRedis),
		AdminToken:     getenv(EnvAdminToken),
		Strategy:       getenv(EnvStrategy),
		Setting:        getenv(EnvSetting),
		MaxQty:         DefaultMaxQty,
		DBInflight:     DefaultDBInflight,
		StreamGather:   DefaultStreamGather,
		Servers:        map[catalog.Server][]string{},
	}
	for _, s := range listServers() {
		if addrs := SplitList(getenv(s.Env)); len(addrs) > 0 {
			c.Servers[s.Name] = addrs
		}
	}
	if v := getenv(EnvProxyShift); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			return c, fmt.Errorf("%s=%q: not a port shift >= 0", EnvProxyShift, v)
		}
		c.ProxyShift = n
	}
	if v := getenv(EnvMaxQty); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return c, fmt.Errorf("%s=%q: not an integer", EnvMaxQty, v)
		}
		c.MaxQty = n
	}
	if v := getenv(EnvDBInflight); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil {
			return c, fmt.Errorf("%s=%q: not an integer (0: no bound)", EnvDBInflight, v)
		}
		c.DBInflight = n
	}
	if v := getenv(EnvStreamGather); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil {
			return c, fmt.Errorf("%s=%q: not a duration such as 20ms (0: no wait)", EnvStreamGather, v)
		}
		c.StreamGather = d
	}
	if v := getenv(EnvStreamReplicas); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil {
			return c, fmt.Errorf("%s=%q: not an integer (0: answer once the primary has the sale)", EnvStreamReplicas, v)
		}
		c.StreamReplicas = n
	}
	if c.Listen == "" {
		c.Listen = DefaultListen
	}
	if c.Instance == "" {
		c.Instance, _ = os.Hostname()
	}
	if c.RedisMaster == "" {
		c.RedisMaster = DefaultRedisMaster
	}
	return c, nil
}

// listFlag is a comma-separated list flag.
type listFlag struct{ dst *[]string }

func (l listFlag) String() string {
	if l.dst == nil {
		return ""
	}
	return strings.Join(*l.dst, ",")
}
func (l listFlag) Set(s string) error { *l.dst = SplitList(s); return nil }

// serverFlag is a lock server's address list in Config.Servers.
type serverFlag struct {
	c    *Config
	name catalog.Server
}

func (f serverFlag) String() string {
	if f.c == nil {
		return ""
	}
	return strings.Join(f.c.Servers[f.name], ",")
}

func (f serverFlag) Set(s string) error {
	if f.c.Servers == nil {
		f.c.Servers = map[catalog.Server][]string{}
	}
	f.c.Servers[f.name] = SplitList(s)
	return nil
}

// BindFlags registers flags that override c's fields (the admin token is
// environment-only, so it never shows in `ps`).
func (c *Config) BindFlags(fs *flag.FlagSet) {
	fs.StringVar(&c.Listen, "listen", c.Listen, "HTTP listen address ($"+EnvListen+")")
	fs.StringVar(&c.Instance, "name", c.Instance, "instance name for X-Instance and orders ($"+EnvInstance+")")
	fs.StringVar(&c.MySQLDSN, "mysql-dsn", c.MySQLDSN, "MySQL DSN, e.g. root@tcp(127.0.0.1:17040)/seckill?parseTime=true ($"+EnvMySQLDSN+")")
	fs.Var(listFlag{&c.RedisAddrs}, "redis-addrs", "comma-separated Redis addresses; 5 for redlock ($"+EnvRedisAddrs+")")
	fs.Var(listFlag{&c.RedisSentinels}, "redis-sentinels", "comma-separated Redis Sentinel addresses ($"+EnvSentinels+")")
	fs.StringVar(&c.RedisMaster, "redis-master", c.RedisMaster, "Sentinel master name ($"+EnvRedisMaster+")")
	fs.StringVar(&c.CounterRedis, "counter-redis", c.CounterRedis, "Redis of the lock-alone goods' counter, dialled directly ($"+EnvCounterRedis+")")
	for _, s := range listServers() {
		fs.Var(serverFlag{c, s.Name}, s.Flag, s.FlagHelp+" ($"+s.Env+")")
	}
	fs.StringVar(&c.Strategy, "strategy", c.Strategy, "starting strategy ($"+EnvStrategy+")")
	fs.Int64Var(&c.MaxQty, "max-qty", c.MaxQty, "largest qty per purchase ($"+EnvMaxQty+")")
	fs.IntVar(&c.DBInflight, "db-inflight", c.DBInflight, "lock-free purchases at MySQL at once; 0: no bound ($"+EnvDBInflight+")")
	fs.DurationVar(&c.StreamGather, "stream-gather", c.StreamGather, "redis-stream: wait after a short batch ($"+EnvStreamGather+")")
	fs.IntVar(&c.StreamReplicas, "stream-replicas", c.StreamReplicas, "redis-stream: replicas that must have a sale before its answer ($"+EnvStreamReplicas+")")
	fs.IntVar(&c.ProxyShift, "proxy-shift", c.ProxyShift, "dial Sentinels' 127.0.0.1 Redis addresses this many ports up ($"+EnvProxyShift+")")
}

// Validate names the first setting that cannot work.
func (c Config) Validate() error {
	var errs []error
	if c.MySQLDSN == "" {
		errs = append(errs, fmt.Errorf("no MySQL DSN: set %s or --mysql-dsn (with a local stack: eval \"$(seckill env)\")", EnvMySQLDSN))
	}
	if c.MaxQty <= 0 {
		errs = append(errs, fmt.Errorf("max qty %d must be positive", c.MaxQty))
	}
	if c.DBInflight < 0 {
		errs = append(errs, fmt.Errorf("db inflight %d must be 0 (no bound) or more: set %s or --db-inflight", c.DBInflight, EnvDBInflight))
	}
	if c.StreamGather < 0 || c.StreamGather > MaxStreamGather {
		errs = append(errs, fmt.Errorf("stream gather %s must be between 0 (no wait) and %s: set %s or --stream-gather", c.StreamGather, MaxStreamGather, EnvStreamGather))
	}
	if c.StreamReplicas < 0 || c.StreamReplicas > MaxStreamReplicas {
		errs = append(errs, fmt.Errorf("stream replicas %d must be between 0 (answer once the primary has the sale) and %d: set %s or --stream-replicas", c.StreamReplicas, MaxStreamReplicas, EnvStreamReplicas))
	}
	if c.Instance == "" {
		errs = append(errs, errors.New("no instance name: set --name"))
	}
	if len(c.RedisSentinels) > 0 && c.RedisMaster == "" {
		errs = append(errs, fmt.Errorf("sentinels without a master name: set %s or --redis-master", EnvRedisMaster))
	}
	return errors.Join(errs...)
}

// SplitList splits a comma-separated list, dropping blanks.
func SplitList(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}
