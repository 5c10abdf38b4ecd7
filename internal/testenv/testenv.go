// Package testenv gives integration tests the addresses of the real servers
// started by `make test` (a dedicated `seckill up` stack), and enforces the
// CI rule: under CI=true a missing server fails the test instead of
// skipping it.
//
// The variables are the same ones `seckill serve` reads, and the ones the
// stack writes to <run dir>/env.sh:
//
//	SECKILL_REDIS_ADDRS     comma-separated, 5 addresses; the first is the primary
//	SECKILL_ETCD_ENDPOINTS  comma-separated etcd client endpoints
//	SECKILL_ZK_SERVERS      comma-separated ZooKeeper host:port
//	SECKILL_MYSQL_DSN       go-sql-driver DSN of the MariaDB/MySQL database
//	SECKILL_NGINX_URL       http://127.0.0.1:PORT of the stack's nginx
//	SECKILL_INSTANCE_URLS   comma-separated base URLs of the service instances
//	SECKILL_STACK_DIR       the stack's run directory
//	SECKILL_ADMIN_TOKEN     the admin token the instances accept
package testenv

import (
	"os"
	"strings"
	"testing"
)

// Variable names shared by the stack, the service and the tests.
const (
	RedisAddrs    = "SECKILL_REDIS_ADDRS"
	EtcdEndpoints = "SECKILL_ETCD_ENDPOINTS"
	ZKServers     = "SECKILL_ZK_SERVERS"
	MySQLDSN      = "SECKILL_MYSQL_DSN"
	NginxURL      = "SECKILL_NGINX_URL"
	InstanceURLs  = "SECKILL_INSTANCE_URLS"
	StackDir      = "SECKILL_STACK_DIR"
	AdminToken    = "SECKILL_ADMIN_TOKEN"
)

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
func Split(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

// Unavailable fails (CI) or skips (elsewhere) a test whose server is
// configured but does not answer.
func Unavailable(tb testing.TB, what string, err error) {
	tb.Helper()
	if InCI() {
		tb.Fatalf("%s is unavailable: %v (CI=true: a missing server is a failure)", what, err)
	}
	tb.Skipf("%s is unavailable: %v; run `make test`", what, err)
}
