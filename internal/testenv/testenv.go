// Package testenv gives integration tests the addresses of the real servers
// started by `make test` (a dedicated `seckill up` stack), and enforces the
// CI rule: under CI=true a missing server fails the test instead of
// skipping it.
//
// The variables are the same ones `seckill serve` reads (internal/config's
// Env* names), the ones the stack writes to <run dir>/env.sh: each server's
// addresses, the MySQL DSN, nginx's URL, the instances' URLs, the run
// directory and the admin token.
package testenv

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/seckill-lab/seckill/internal/config"
	"github.com/seckill-lab/seckill/internal/ports"
)

// Variable names: config's, the one list shared by the stack, the service
// and the tests.
const (
	RedisAddrs = config.EnvRedisAddrs
	// The lock servers' variables (catalog.ServerInfo.Env; a test checks
	// they agree).
	EtcdEndpoints = "SECKILL_ETCD_ENDPOINTS"
	ZKServers     = "SECKILL_ZK_SERVERS"
	ConsulAddrs   = "SECKILL_CONSUL_ADDRS"
	MySQLDSN      = config.EnvMySQLDSN
	NginxURL      = config.EnvNginxURL
	InstanceURLs  = config.EnvInstanceURLs
	StackDir      = config.EnvStackDir
	AdminToken    = config.EnvAdminToken
)

// Variables are the names of every variable above.
func Variables() []string {
	return append(config.ServerVars(), NginxURL, InstanceURLs, StackDir, AdminToken)
}

// InCI reports whether the tests run under CI (CI=true), where a missing
// server is a failure, never a skip.
func InCI() bool {
	v := strings.ToLower(os.Getenv("CI"))
	return v == "true" || v == "1"
}

// Get returns the value of the variable name. When it is unset it fails the
// test under CI and skips it otherwise, telling the user to run `make test`.
func Get(tb testing.TB, name string) string {
	tb.Helper()
	v := strings.TrimSpace(os.Getenv(name))
	if v != "" {
		return v
	}
	msg := name + " is not set: run the integration tests with `make test`, which starts the real servers"
	if InCI() {
		tb.Fatal(msg + " (CI=true: a missing server is a failure)")
	}
	tb.Skip(msg)
	return ""
}

// List is Get for comma-separated variables.
func List(tb testing.TB, name string) []string {
	tb.Helper()
	return Split(Get(tb, name))
}

// Split splits a comma-separated list, dropping blanks.
func Split(s string) []string { return config.SplitList(s) }

// Unavailable fails (CI) or skips (elsewhere) a test whose server is
// configured but does not answer.
func Unavailable(tb testing.TB, what string, err error) {
	tb.Helper()
	if InCI() {
		tb.Fatalf("%s is unavailable: %v (CI=true: a missing server is a failure)", what, err)
	}
	tb.Skipf("%s is unavailable: %v; run `make test`", what, err)
}

// FreePort returns a loopback TCP port that is free now, from
// ports.FreeRange (22000-22999): below Linux's ephemeral range, where
// client sockets of other programs could take it at any time. It never
// returns a port of the tests' own stacks (ports.Suite, moved by
// SECKILL_TEST_PORT_SHIFT as the stacks are): a port free now may be
// one a stack of another package is about to listen on. (It was
// 26000-26999 once, and a proxy of an app test took a port of the lesson
// stack starting at the same time; TestRTT's stack sits inside
// FreeRange.)
func FreePort(tb testing.TB) int {
	tb.Helper()
	lo, n := ports.FreeRange.Lo, ports.FreeRange.Hi-ports.FreeRange.Lo+1
	start := lo + rand.IntN(n)
	for i := range n {
		port := lo + (start-lo+i)%n
		if inSuite(port) {
			continue
		}
		ln, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(port))
		if err == nil {
			_ = ln.Close()
			return port
		}
	}
	tb.Fatalf("no free port in %s", ports.FreeRange)
	return 0
}

// Binary returns the path of a server binary the test starts itself: in
// the checkout's bin/ (where make deps builds etcd), on PATH or in
// /usr/sbin, the order `seckill up` searches. A missing one fails (CI) or skips the test.
func Binary(tb testing.TB, name string) string {
	tb.Helper()
	if lab := LabBin(); lab != "" && fileExists(filepath.Join(lab, name)) {
		return filepath.Join(lab, name)
	}
	if p, err := exec.LookPath(name); err == nil {
		return p
	}
	if p := "/usr/sbin/" + name; fileExists(p) {
		return p
	}
	Unavailable(tb, name, errors.New("not installed (make deps installs it)"))
	return ""
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

// Redis is a private redis-server the test started and can restart.
type Redis struct {
	Addr string
	bin  string
	port int
	dir  string
	cmd  *exec.Cmd
}

// StartRedis starts a private redis-server without persistence on a free
// port, stopped at cleanup. Tests that restart or stop a server use one, so
// they never disturb the shared stack other packages test against.
func StartRedis(tb testing.TB) *Redis {
	tb.Helper()
	port := FreePort(tb)
	r := &Redis{Addr: "127.0.0.1:" + strconv.Itoa(port), bin: Binary(tb, "redis-server"), port: port, dir: tb.TempDir()}
	r.Start(tb)
	tb.Cleanup(func() { r.Stop(tb) })
	return r
}

// Start starts the server (again) and waits until it accepts connections.
func (r *Redis) Start(tb testing.TB) {
	tb.Helper()
	r.cmd = exec.Command(r.bin, "--port", strconv.Itoa(r.port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--dir", r.dir)
	if err := r.cmd.Start(); err != nil {
		tb.Fatalf("start redis-server: %v", err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		c, err := net.DialTimeout("tcp", r.Addr, 200*time.Millisecond)
		if err == nil {
			_ = c.Close()
			return
		}
		if time.Now().After(deadline) {
			tb.Fatalf("redis-server on %s did not start: %v", r.Addr, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Stop kills the server (SIGKILL: nothing is saved) and waits for it.
func (r *Redis) Stop(tb testing.TB) {
	tb.Helper()
	if r.cmd == nil || r.cmd.Process == nil {
		return
	}
	_ = r.cmd.Process.Kill()
	_ = r.cmd.Wait()
	r.cmd = nil
}

// BuildSeckill builds cmd/seckill into a temporary directory, for a
// package's TestMain whose tests start stacks of their own; cleanup
// removes it.
func BuildSeckill() (bin string, cleanup func(), err error) {
	tmp, err := os.MkdirTemp("", "seckill-test-bin-")
	if err != nil {
		return "", nil, err
	}
	bin = tmp + "/seckill"
	build := exec.Command("go", "build", "-o", bin, "github.com/seckill-lab/seckill/cmd/seckill")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		os.RemoveAll(tmp)
		return "", nil, fmt.Errorf("build seckill: %w", err)
	}
	return bin, func() { os.RemoveAll(tmp) }, nil
}

// LabBin is the module's bin/ directory, where `make deps` builds the
// servers no distribution packages: tests that start a stack of their own
// give it to the stack's finder (stack.Finder.Lab), as bin/seckill finds
// it next to itself.
func LabBin() string {
	out, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		return ""
	}
	return filepath.Join(filepath.Dir(strings.TrimSpace(string(out))), "bin")
}

// PortShiftVar moves every fixed port the tests use (the stacks of
// stacktest, the scenario and stack tests: ports.Suite) by its value, so
// two checkouts can run their suites side by side on one machine:
// SECKILL_TEST_PORT_SHIFT=-6000. scripts/test.sh picks a free one when it
// is unset (`seckill lab test-shift`).
const PortShiftVar = "SECKILL_TEST_PORT_SHIFT"

// Port returns a test's fixed port p moved by $SECKILL_TEST_PORT_SHIFT (0
// when unset or not a number).
func Port(p int) int {
	s, _ := strconv.Atoi(os.Getenv(PortShiftVar))
	return p + s
}

// inSuite reports whether port is in one of the test stacks' ranges, as
// shifted for this run.
func inSuite(port int) bool {
	for _, r := range ports.Suite {
		if port >= Port(r.Lo) && port <= Port(r.Hi) {
			return true
		}
	}
	return false
}

// LoadSlack is what a test adds to a time the product promises before it
// calls an answer late: on a loaded 2-core machine a goroutine or a server
// can wait seconds for a CPU. A bound of promise + LoadSlack still tells a
// bounded answer from a hang.
const LoadSlack = 5 * time.Second

// Tree builds a fake file tree under root: each path ending in "/" is a
// directory, each path starting with "x " an executable, the others plain
// files.
func Tree(t testing.TB, root string, paths ...string) {
	t.Helper()
	for _, p := range paths {
		mode := os.FileMode(0o644)
		if rest, ok := strings.CutPrefix(p, "x "); ok {
			p, mode = rest, 0o755
		}
		full := filepath.Join(root, p)
		if strings.HasSuffix(p, "/") {
			if err := os.MkdirAll(full, 0o755); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte("#!/bin/sh\n"), mode); err != nil {
			t.Fatal(err)
		}
	}
}
