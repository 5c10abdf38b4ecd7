package server

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/seckill-lab/seckill/internal/idleprobe"
	"github.com/seckill-lab/seckill/internal/lockwire"
	"github.com/seckill-lab/seckill/lockimpl/zklock"
	"github.com/seckill-lab/seckill/stock"
	"github.com/seckill-lab/seckill/stock/catalog"
)

// ZooKeeper component kinds.
const (
	// KindZooKeeper is the standalone server of the single topology.
	KindZooKeeper Kind = "zookeeper"
	// KindZKMember is a member of the three-node ensemble (ha).
	KindZKMember Kind = "zookeeper-member"
)

// Port offsets: the standalone server B+30; member K of the ensemble:
// client B+28+3K, peer B+29+3K, election B+30+3K (B+31 .. B+39).
const (
	offZooKeeper = 30
	offZKMember  = 30
)

func zkMemberName(k int) string        { return "zookeeper-" + itoa(k) }
func zkMemberClient(base, k int) int   { return base + offZKMember + 3*k - 2 }
func zkMemberPeer(base, k int) int     { return base + offZKMember + 3*k - 1 }
func zkMemberElection(base, k int) int { return base + offZKMember + 3*k }

// zkKey is the tool key of ZooKeeper's jars (Tools.Java).
const zkKey = "zookeeper"

// ZooKeeper is the ZooKeeper description: java running the jars of the
// install found (Debian's, or a zkServer.sh tarball). Its data is wiped at
// each `up`.
var ZooKeeper = Spec{
	Position: 3,
	Group:    "zookeeper",
	Idle:     &idleZooKeeper,
	Wiring:   &wireZooKeeper,
	Tools: []Tool{
		{Key: "java", Names: []string{"java"}, Version: []string{"-version"},
			Pkgs: map[string]string{pmApt: "default-jre-headless", pmDnf: "java-21-openjdk-headless", pmBrew: "openjdk"}},
		{Key: zkKey, Locate: Finder.FindZooKeeper, Hint: "or unpack the Apache tarball and set ZOOKEEPER_HOME",
			Pkgs: map[string]string{pmApt: "zookeeper", pmDnf: "zookeeper", pmBrew: "zookeeper"}},
	},
	// The 3.8 line, Debian 12's.
	Image: "zookeeper:3.8.4",
	Kinds: []KindSpec{
		{Kind: KindZooKeeper, Rank: 4, Check: checkZooKeeper, Role: zkMode},
		{Kind: KindZKMember, Rank: 4, Check: checkZKMember, Role: zkMode, Member: true},
	},
	Ports: func(base int, ha bool) []PortUse {
		if !ha {
			return []PortUse{{base + offZooKeeper, "zookeeper"}}
		}
		var ps []PortUse
		for _, k := range members() {
			ps = append(ps, PortUse{zkMemberClient(base, k), zkMemberName(k) + " client"},
				PortUse{zkMemberPeer(base, k), zkMemberName(k) + " peer"},
				PortUse{zkMemberElection(base, k), zkMemberName(k) + " election"})
		}
		return ps
	},
	Nodes: func(l Layout) []Node {
		if !l.HA {
			return []Node{zkNode(l, "zookeeper", KindZooKeeper, l.Base+offZooKeeper, 0)}
		}
		var ns []Node
		for _, k := range members() {
			ns = append(ns, zkNode(l, zkMemberName(k), KindZKMember, zkMemberClient(l.Base, k), k))
		}
		return ns
	},
	Peers: func(base int) []PortUse {
		var ps []PortUse
		for _, k := range members() {
			ps = append(ps, PortUse{zkMemberPeer(base, k), zkMemberName(k) + " peer"},
				PortUse{zkMemberElection(base, k), zkMemberName(k) + " election"})
		}
		return ps
	},
	Env: func(base int, ha, has bool) [][2]string {
		return [][2]string{{envOf(catalog.ServerZooKeeper), clientAddrs(base, ha, has, offZooKeeper, zkMemberClient)}}
	},
	Links:  func(bool) []Link { return []Link{{Name: "zookeeper", Kinds: []Kind{KindZooKeeper, KindZKMember}}} },
	Serves: map[string]string{"zookeeper": "zookeeper"},
	Durability: map[string]string{
		DurabilityDefault: "forceSync=yes (as shipped): its transaction log is fsynced before each write is acknowledged",
		DurabilityFsync:   "forceSync=yes (as shipped): its transaction log is fsynced before each write is acknowledged",
		DurabilityNone:    "forceSync=no: the transaction log is written, not fsynced, before the acknowledgement",
	},
	Fsyncs: map[string]bool{DurabilityDefault: true, DurabilityFsync: true, DurabilityNone: false},
}

// ZKForceSync is zoo.cfg's forceSync at durability level d: "no" with
// DurabilityNone, "yes" (as shipped) otherwise.
func ZKForceSync(d string) string {
	return map[bool]string{true: "no", false: "yes"}[d == DurabilityNone]
}

// zkNode is a standalone server (k = 0) or member k of the ensemble: its
// zoo.cfg (and myid) written afresh, its data wiped.
func zkNode(l Layout, name string, kind Kind, port, k int) Node {
	dir := filepath.Join(l.Dir, name)
	dataDir := filepath.Join(dir, "data")
	cfg := filepath.Join(dir, "zoo.cfg")
	lines := []string{
		"tickTime=2000", "initLimit=10", "syncLimit=5",
		"dataDir=" + dataDir,
		"clientPort=" + itoa(port), "clientPortAddress=127.0.0.1",
		"admin.enableServer=false",
		"4lw.commands.whitelist=ruok,srvr,stat,mntr",
		"maxClientCnxns=0",
		// Read as the system property zookeeper.forceSync.
		"forceSync=" + ZKForceSync(l.Durability),
	}
	if k > 0 {
		// A member binds its own ports and dials the others' through
		// Layout.Peer: each member's zoo.cfg differs only there.
		for _, m := range members() {
			peer, election := zkMemberPeer(l.Base, m), zkMemberElection(l.Base, m)
			if m != k {
				peer, election = l.Peer(peer), l.Peer(election)
			}
			lines = append(lines, fmt.Sprintf("server.%d=127.0.0.1:%d:%d", m, peer, election))
		}
	}
	return Node{Name: name, Kind: kind, Port: port, Bin: l.Tools.Bin["java"], Args: zkArgs(l.Tools.Java[zkKey], dir, cfg),
		Prepare: func(ctx context.Context) error {
			if err := wipePrepare(name, dataDir)(ctx); err != nil {
				return err
			}
			if err := os.MkdirAll(dataDir, 0o755); err != nil {
				return fmt.Errorf("%s: %w", name, err)
			}
			if k > 0 {
				if err := os.WriteFile(filepath.Join(dataDir, "myid"), []byte(itoa(k)+"\n"), 0o644); err != nil {
					return fmt.Errorf("%s: write myid: %w", name, err)
				}
			}
			if err := writeLines(cfg, lines); err != nil {
				return fmt.Errorf("%s: %w", name, err)
			}
			return nil
		}}
}

// checkZooKeeper: the server answers ruok with imok.
func checkZooKeeper(ctx context.Context, hostport string) error {
	s, err := zkFourLetter(ctx, hostport, "ruok")
	if err != nil {
		return err
	}
	if s != "imok" {
		return fmt.Errorf("zookeeper ruok: got %q, want imok", s)
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
	first, _, _ := strings.Cut(strings.TrimSpace(s), "\n")
	return "", fmt.Errorf("zookeeper srvr %s: no Mode in %q", hostport, first)
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

// Debian's `zookeeper` package: one jar whose manifest names its lib jars
// (Class-Path), and the configuration in /etc/zookeeper/conf.
const (
	debianZKJar  = "usr/share/java/zookeeper.jar"
	debianZKConf = "etc/zookeeper/conf"
)

// zkHomes are where a zkServer.sh installation (the Apache tarball layout:
// bin/zkServer.sh, lib/*.jar, conf/) lives, relative to the root, after
// $ZOOKEEPER_HOME.
var zkHomes = []string{
	"usr/share/zookeeper",                      // Fedora
	"opt/zookeeper",                            // a tarball unpacked by hand
	"opt/homebrew/opt/zookeeper/libexec",       // Homebrew, Apple silicon
	"usr/local/opt/zookeeper/libexec",          // Homebrew, Intel
	"usr/local/zookeeper", "usr/lib/zookeeper", // other hand installs
}

// FindZooKeeper finds a ZooKeeper install: Debian's jar layout first, then
// a zkServer.sh install ($ZOOKEEPER_HOME, then zkHomes), whose classpath is
// its conf directory and its lib/*.jar (and the top-level zookeeper-*.jar
// older tarballs have).
func (f Finder) FindZooKeeper() (JavaInstall, error) {
	if jar := f.at(debianZKJar); fileExists(jar) {
		conf := f.at(debianZKConf)
		z := JavaInstall{Layout: "Debian jar " + jar, Classpath: []string{conf, jar}}
		if p := filepath.Join(conf, "log4j.properties"); fileExists(p) {
			z.Log4j = p
		}
		return z, nil
	}
	var homes []string
	if h := f.env("ZOOKEEPER_HOME"); h != "" {
		homes = append(homes, h)
	}
	for _, h := range zkHomes {
		homes = append(homes, f.at(h))
	}
	var tried []string
	for _, h := range homes {
		tried = append(tried, h)
		if !fileExists(filepath.Join(h, "bin", "zkServer.sh")) {
			continue
		}
		z, ok := zkFromHome(h)
		if ok {
			return z, nil
		}
	}
	return JavaInstall{}, fmt.Errorf("zookeeper: neither %s nor a zkServer.sh install with lib/*.jar (looked in %s; set ZOOKEEPER_HOME): %w",
		f.at(debianZKJar), strings.Join(tried, ", "), fs.ErrNotExist)
}

// zkFromHome builds the classpath of a zkServer.sh install at home; ok is
// false when it has no ZooKeeper server jar.
func zkFromHome(home string) (JavaInstall, bool) {
	jars, _ := filepath.Glob(filepath.Join(home, "lib", "*.jar"))
	top, _ := filepath.Glob(filepath.Join(home, "zookeeper-*.jar"))
	jars = append(top, jars...)
	sort.Strings(jars)
	server := false
	for _, j := range jars {
		b := filepath.Base(j)
		if strings.HasPrefix(b, "zookeeper-") && !strings.HasPrefix(b, "zookeeper-jute") || b == "zookeeper.jar" {
			server = true
		}
	}
	if !server {
		return JavaInstall{}, false
	}
	conf := filepath.Join(home, "conf")
	if !fileExists(conf) && fileExists(filepath.Join(home, "etc", "zookeeper")) {
		conf = filepath.Join(home, "etc", "zookeeper")
	}
	z := JavaInstall{Layout: "zkServer.sh install " + home, Classpath: append([]string{conf}, jars...)}
	if p := filepath.Join(conf, "log4j.properties"); fileExists(p) {
		z.Log4j = p
	}
	return z, true
}

// zkArgs are java's arguments to run a ZooKeeper server of install z with
// config cfg, logging to the console (the component's log).
func zkArgs(z JavaInstall, logDir, cfg string) []string {
	args := []string{"-Xmx256m", "-cp", z.ClasspathArg(),
		"-Dzookeeper.log.dir=" + logDir, "-Dzookeeper.root.logger=INFO,CONSOLE"}
	if z.Log4j != "" {
		args = append(args, "-Dlog4j.configuration=file:"+z.Log4j)
	}
	return append(args, "org.apache.zookeeper.server.quorum.QuorumPeerMain", cfg)
}

func init() { register(&ZooKeeper) }

// The idle probes of ZooKeeper (internal/idleprobe): the children of a directory, an ephemeral sequential create
// (a lock's node), a delete, and a delete of a node an exists watch waits
// on (set untimed first; the event awaited untimed after). go-zookeeper
// takes no context: each request waits within ctx in a goroutine of its
// own, which the connection's Close ends.

// zkIdleDir is the probes' directory.
const zkIdleDir = "/" + idleprobe.Prefix

// zkIdleDo runs req within ctx.
func zkIdleDo(ctx context.Context, req func() error) error {
	done := make(chan error, 1)
	go func() { done <- req() }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// zkIdleNode creates an ephemeral sequential node in zkIdleDir.
func zkIdleNode(ctx context.Context, c *zk.Conn) (string, error) {
	var path string
	err := zkIdleDo(ctx, func() (err error) {
		path, err = c.Create(zkIdleDir+"/n-", nil, zk.FlagEphemeral|zk.FlagSequence, zk.WorldACL(zk.PermAll))
		return err
	})
	if err != nil {
		return "", fmt.Errorf("create in %s: %w", zkIdleDir, err)
	}
	return path, nil
}

var zooKeeperOps = []idleprobe.Op[*zk.Conn]{
	{Op: "create", Sample: idleprobe.Timed(func(ctx context.Context, c *zk.Conn, _ string) error {
		_, err := zkIdleNode(ctx, c)
		return err
	})},
	{Op: "get_children", Sample: idleprobe.Timed(func(ctx context.Context, c *zk.Conn, _ string) error {
		return zkIdleDo(ctx, func() error { _, _, err := c.Children(zkIdleDir); return err })
	})},
	{Op: "delete", Sample: func(ctx context.Context, c *zk.Conn, _ string) (time.Duration, error) {
		path, err := zkIdleNode(ctx, c)
		if err != nil {
			return 0, err
		}
		t0 := time.Now()
		err = zkIdleDo(ctx, func() error { return c.Delete(path, -1) })
		return time.Since(t0), err
	}},
	{Op: "delete_watched", Sample: func(ctx context.Context, c *zk.Conn, _ string) (time.Duration, error) {
		path, err := zkIdleNode(ctx, c)
		if err != nil {
			return 0, err
		}
		var ev <-chan zk.Event
		if err := zkIdleDo(ctx, func() (err error) { _, _, ev, err = c.ExistsW(path); return err }); err != nil {
			return 0, fmt.Errorf("watch %s: %w", path, err)
		}
		t0 := time.Now()
		if err := zkIdleDo(ctx, func() error { return c.Delete(path, -1) }); err != nil {
			return 0, err
		}
		d := time.Since(t0)
		select {
		case <-ev:
			return d, nil
		case <-ctx.Done():
			return 0, fmt.Errorf("watch %s: no event: %w", path, ctx.Err())
		}
	}},
}

// quietZK is a go-zookeeper logger that says nothing: a server that is down
// is an error entry, not a log line per retry.
type quietZK struct{}

func (quietZK) Printf(string, ...any) {}

func dialZooKeeper(ctx context.Context, addr string) (*zk.Conn, func(context.Context) error, error) {
	session := make(chan struct{})
	var once bool
	c, events, err := zk.Connect([]string{addr}, 4*time.Second, zk.WithLogger(quietZK{}), zk.WithLogInfo(false))
	if err != nil {
		return nil, nil, err
	}
	go func() {
		for ev := range events { // until Close
			if ev.State == zk.StateHasSession && !once {
				once = true
				close(session)
			}
		}
	}()
	select {
	case <-session:
	case <-ctx.Done():
		c.Close()
		return nil, nil, fmt.Errorf("no session: %w", ctx.Err())
	}
	err = zkIdleDo(ctx, func() error {
		_, err := c.Create(zkIdleDir, nil, 0, zk.WorldACL(zk.PermAll))
		if errors.Is(err, zk.ErrNodeExists) {
			return nil
		}
		return err
	})
	if err != nil {
		c.Close()
		return nil, nil, fmt.Errorf("create %s: %w", zkIdleDir, err)
	}
	return c, func(ctx context.Context) error {
		defer c.Close()
		return zkIdleDo(ctx, func() error {
			kids, _, err := c.Children(zkIdleDir)
			if err != nil {
				return err
			}
			for _, k := range kids { // the session's ephemeral nodes go with it, the others now
				_ = c.Delete(zkIdleDir+"/"+k, -1)
			}
			return c.Delete(zkIdleDir, -1)
		})
	}, nil
}

// idleZooKeeper is the server's entry of IdleProbes.
var idleZooKeeper = idleprobe.For(catalog.ServerZooKeeper, dialZooKeeper, zooKeeperOps)

// wireZooKeeper is how an instance reaches ZooKeeper: each backend opens
// its own sessions (one per session timeout), through a dialer the
// instance's meter counts.
var wireZooKeeper = lockwire.Wiring{
	Server: catalog.ServerZooKeeper,
	Openers: map[string]lockwire.Opener{
		catalog.ZooKeeper:     onZooKeeper(zklock.NewBackend),
		catalog.ZooKeeperHerd: onZooKeeper(zklock.NewHerdBackend),
	},
}

// onZooKeeper opens a backend of the ZooKeeper servers with build.
func onZooKeeper(build func([]string, ...zklock.BackendOption) *zklock.Backend) lockwire.Opener {
	return func(_ context.Context, c lockwire.Clients) (stock.LockBackend, error) {
		addrs := c.Addrs[catalog.ServerZooKeeper]
		if len(addrs) == 0 {
			return nil, lockwire.NotConfigured(catalog.ServerZooKeeper)
		}
		var opts []zklock.BackendOption
		if c.Cost != nil {
			opts = append(opts, zklock.WithDialer(c.Cost.ZooKeeperDialer(nil)))
		}
		return build(addrs, opts...), nil
	}
}
