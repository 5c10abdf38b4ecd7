package etcdlock_test

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/seckill-lab/seckill/internal/testenv"
)

// clusterPorts is the loopback range the private clusters of these tests
// take their ports from (a client and a peer port per member).
const (
	clusterPortLow  = 12000
	clusterPortHigh = 12089
)

// cluster is a private etcd cluster the test started and can pause member
// by member, without disturbing the shared stack.
type cluster struct {
	dir     string
	members []*member
}

// member is one etcd process of a cluster.
type member struct {
	name   string
	client string // host:port
	cmd    *exec.Cmd
	exited chan struct{}
}

// startCluster starts an n-member etcd cluster (default settings, as the
// stack's ha topology runs it) in a temporary directory, waits until it
// answers through a quorum, and stops it at cleanup. A missing etcd binary
// fails under CI and skips elsewhere (testenv.Binary).
// flags are added to every member's command line.
func startCluster(tb testing.TB, n int, flags ...string) *cluster {
	tb.Helper()
	bin := testenv.Binary(tb, "etcd")
	ports := freePorts(tb, 2*n)
	dir := tb.TempDir()
	c := &cluster{dir: dir}
	var initial []string
	for i := range n {
		initial = append(initial, fmt.Sprintf("m%d=http://127.0.0.1:%d", i+1, ports[2*i+1]))
	}
	for i := range n {
		name := fmt.Sprintf("m%d", i+1)
		client := "127.0.0.1:" + strconv.Itoa(ports[2*i])
		peer := "http://127.0.0.1:" + strconv.Itoa(ports[2*i+1])
		logf, err := os.Create(filepath.Join(dir, name+".log"))
		if err != nil {
			tb.Fatal(err)
		}
		cmd := exec.Command(bin, "--name", name, "--data-dir", filepath.Join(dir, name),
			"--listen-client-urls", "http://"+client, "--advertise-client-urls", "http://"+client,
			"--listen-peer-urls", peer, "--initial-advertise-peer-urls", peer,
			"--initial-cluster", strings.Join(initial, ","), "--initial-cluster-state", "new",
			"--initial-cluster-token", "etcdlock-test")
		cmd.Args = append(cmd.Args, flags...)
		cmd.Env = cleanEnv("ETCD_")
		cmd.Stdout, cmd.Stderr = logf, logf
		if err := cmd.Start(); err != nil {
			tb.Fatalf("start etcd %s: %v", name, err)
		}
		m := &member{name: name, client: client, cmd: cmd, exited: make(chan struct{})}
		go func() { _ = cmd.Wait(); _ = logf.Close(); close(m.exited) }()
		c.members = append(c.members, m)
	}
	tb.Cleanup(func() {
		for _, m := range c.members {
			_ = m.cmd.Process.Signal(syscall.SIGCONT)
			_ = m.cmd.Process.Kill()
			<-m.exited
		}
	})
	cli := c.client(tb)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for {
		rctx, rcancel := context.WithTimeout(ctx, time.Second)
		_, err := cli.Put(rctx, "/etcdlock-test/ready", "1")
		rcancel()
		if err == nil {
			return c
		}
		if ctx.Err() != nil {
			tb.Fatalf("etcd cluster on %v did not form: %v (logs in %s)", c.Endpoints(), err, dir)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// Endpoints returns the members' client addresses.
func (c *cluster) Endpoints() []string {
	var eps []string
	for _, m := range c.members {
		eps = append(eps, m.client)
	}
	return eps
}

// client opens a plain client on every member (for the test's own
// checks), closed at cleanup.
func (c *cluster) client(tb testing.TB) *clientv3.Client {
	tb.Helper()
	cli, err := clientv3.New(clientv3.Config{Endpoints: c.Endpoints(), DialTimeout: 2 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = cli.Close() })
	return cli
}

// Signal sends sig (SIGSTOP, SIGCONT) to member i (0-based).
func (c *cluster) Signal(tb testing.TB, i int, sig syscall.Signal) {
	tb.Helper()
	if err := c.members[i].cmd.Process.Signal(sig); err != nil {
		tb.Fatalf("signal %v to %s: %v", sig, c.members[i].name, err)
	}
}

// Leader returns the index of the member that leads, or -1.
func (c *cluster) Leader(ctx context.Context, cli *clientv3.Client) int {
	ids := map[uint64]int{}
	var leader uint64
	for i, m := range c.members {
		sctx, cancel := context.WithTimeout(ctx, time.Second)
		st, err := cli.Status(sctx, m.client)
		cancel()
		if err != nil {
			continue
		}
		ids[st.Header.MemberId] = i
		leader = st.Leader
	}
	if i, ok := ids[leader]; ok {
		return i
	}
	return -1
}

// MoveLeader makes member i (0-based) the leader and waits until every
// member agrees.
func (c *cluster) MoveLeader(tb testing.TB, i int) {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	cli := c.client(tb)
	for {
		cur := c.Leader(ctx, cli)
		if cur == i {
			return
		}
		if cur >= 0 {
			target, err := cli.Status(ctx, c.members[i].client)
			if err != nil {
				tb.Fatalf("status of %s: %v", c.members[i].name, err)
			}
			lc, err := clientv3.New(clientv3.Config{Endpoints: []string{c.members[cur].client}, DialTimeout: 2 * time.Second, Logger: zap.NewNop()})
			if err != nil {
				tb.Fatal(err)
			}
			_, err = lc.MoveLeader(ctx, target.Header.MemberId)
			_ = lc.Close()
			if err != nil && ctx.Err() == nil {
				tb.Logf("move leader from %s to %s: %v (retrying)", c.members[cur].name, c.members[i].name, err)
			}
		}
		if ctx.Err() != nil {
			tb.Fatalf("%s did not become the leader", c.members[i].name)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// freePorts returns n loopback ports of clusterPortLow..clusterPortHigh
// that are free now.
func freePorts(tb testing.TB, n int) []int {
	tb.Helper()
	var out []int
	for p := clusterPortLow; p <= clusterPortHigh && len(out) < n; p++ {
		ln, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(p))
		if err != nil {
			continue
		}
		_ = ln.Close()
		out = append(out, p)
	}
	if len(out) < n {
		tb.Fatalf("only %d free ports in %d-%d, need %d", len(out), clusterPortLow, clusterPortHigh, n)
	}
	return out
}

// cleanEnv is the test's environment without variables starting with
// prefix (etcd reads ETCD_* as flags).
func cleanEnv(prefix string) []string {
	var out []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, prefix) {
			out = append(out, kv)
		}
	}
	return out
}
