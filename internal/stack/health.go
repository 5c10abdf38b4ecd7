package stack

import (
	"bufio"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"

	_ "github.com/go-sql-driver/mysql" // MySQL driver for the health check
	"github.com/redis/go-redis/v9"
)

func netListen(port int) (net.Listener, error) {
	return net.Listen("tcp", addr(port))
}

// httpClient does not reuse connections, so a request through nginx after
// a reload reaches the new workers.
var httpClient = &http.Client{
	Timeout:   3 * time.Second,
	Transport: &http.Transport{DisableKeepAlives: true, Proxy: nil},
}

func checkRedis(ctx context.Context, hostport string) error {
	// Dial first: go-redis logs every failed dial of its pool, which would
	// clutter `up`'s output while the server starts.
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

func checkZooKeeper(ctx context.Context, hostport string) error {
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", hostport)
	if err != nil {
		return fmt.Errorf("zookeeper ruok: %w", err)
	}
	defer conn.Close()
	dl := time.Now().Add(2 * time.Second)
	if t, ok := ctx.Deadline(); ok && t.Before(dl) {
		dl = t
	}
	_ = conn.SetDeadline(dl)
	if _, err := conn.Write([]byte("ruok")); err != nil {
		return fmt.Errorf("zookeeper ruok: %w", err)
	}
	b, _ := io.ReadAll(io.LimitReader(conn, 64))
	if string(b) != "imok" {
		return fmt.Errorf("zookeeper ruok: got %q, want imok", b)
	}
	return nil
}

// checkMySQL runs SELECT 1 on dsn.
func checkMySQL(ctx context.Context, dsn string) error {
	db, err := sql.Open("mysql", dsn+"&timeout=2s")
	if err != nil {
		return fmt.Errorf("mysql: %w", err)
	}
	defer db.Close()
	var one int
	if err := db.QueryRowContext(ctx, "SELECT 1").Scan(&one); err != nil {
		return fmt.Errorf("mysql SELECT 1: %w", err)
	}
	return nil
}

// createDatabase creates DatabaseName on the server at hostport.
func createDatabase(ctx context.Context, hostport string) error {
	db, err := sql.Open("mysql", "root@tcp("+hostport+")/?timeout=2s")
	if err != nil {
		return fmt.Errorf("mysql: %w", err)
	}
	defer db.Close()
	if _, err := db.ExecContext(ctx, "CREATE DATABASE IF NOT EXISTS `"+DatabaseName+"`"); err != nil {
		return fmt.Errorf("create database %s: %w", DatabaseName, err)
	}
	return nil
}

// healthz GETs base+/healthz and returns the X-Instance header.
func healthz(ctx context.Context, base string) (string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/healthz", nil)
	if err != nil {
		return "", fmt.Errorf("healthz: %w", err)
	}
	resp, err := httpClient.Do(req)
	if err != nil {
		return "", fmt.Errorf("GET %s/healthz: %w", base, err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<16))
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("GET %s/healthz: %s: %s", base, resp.Status, firstLine(string(body)))
	}
	return resp.Header.Get("X-Instance"), nil
}

func checkInstance(ctx context.Context, c Component) error {
	name, err := healthz(ctx, c.URL())
	if err != nil {
		return err
	}
	if name != c.Name {
		return fmt.Errorf("GET %s/healthz: X-Instance %q, want %q", c.URL(), name, c.Name)
	}
	return nil
}

// checkNginx GETs /healthz through nginx until every name in want answered
// (and no other), making at most 4*len(want)+4 requests.
func checkNginx(ctx context.Context, base string, want []string) error {
	wantSet := map[string]bool{}
	for _, n := range want {
		wantSet[n] = true
	}
	seen := map[string]bool{}
	for i := 0; i < 4*len(want)+4; i++ {
		name, err := healthz(ctx, base)
		if err != nil {
			return fmt.Errorf("through nginx: %w", err)
		}
		if !wantSet[name] {
			return fmt.Errorf("through nginx: answered by %q, want one of %s", name, strings.Join(want, ","))
		}
		seen[name] = true
		if len(seen) == len(wantSet) {
			return nil
		}
	}
	var missing []string
	for _, n := range want {
		if !seen[n] {
			missing = append(missing, n)
		}
	}
	return fmt.Errorf("through nginx: %s never answered", strings.Join(missing, ","))
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(strings.TrimSpace(s), "\n")
	if len(s) > 200 {
		s = s[:200] + "..."
	}
	return s
}

// lastLines returns the last n non-empty lines of path, for error messages.
func lastLines(path string, n int) string {
	s, err := tailFile(path, n)
	if err != nil {
		return ""
	}
	var out []string
	sc := bufio.NewScanner(strings.NewReader(s))
	for sc.Scan() {
		if l := strings.TrimSpace(sc.Text()); l != "" {
			out = append(out, l)
		}
	}
	return strings.Join(out, " | ")
}

// checkComponent runs the health check of c (one attempt).
func checkComponent(ctx context.Context, st *State, c Component) error {
	switch c.Kind {
	case KindRedis:
		return checkRedis(ctx, c.Addr)
	case KindEtcd:
		return checkEtcd(ctx, c.Addr)
	case KindZooKeeper:
		return checkZooKeeper(ctx, c.Addr)
	case KindMySQL:
		return checkMySQL(ctx, mysqlDSN(c.Addr, DatabaseName))
	case KindRedisHA:
		return checkRedisHA(ctx, c.Addr)
	case KindSentinel:
		return checkSentinel(ctx, c.Addr)
	case KindEtcdMember:
		return checkEtcd(ctx, c.Addr)
	case KindZKMember:
		return checkZKMember(ctx, c.Addr)
	case KindInstance:
		return checkInstance(ctx, c)
	case KindNginx:
		return checkNginx(ctx, c.URL(), st.InstanceNames())
	case KindDashboard:
		return checkDashboard(ctx, c.URL())
	case KindProxy:
		return checkProxy(c.Addr, len(proxyConfig(st, len(st.Instances()))))
	}
	return fmt.Errorf("unknown kind %q", c.Kind)
}

// waitHealthy retries check until it passes, p exits, ctx ends or timeout
// passes.
func waitHealthy(ctx context.Context, name string, p *proc, logPath string, timeout time.Duration, check func(context.Context) error) error {
	deadline := time.Now().Add(timeout)
	var last error
	for {
		if p != nil && p.exited() {
			return fmt.Errorf("%s exited (%v) before it was healthy; last log lines: %s", name, p.err, lastLines(logPath, 3))
		}
		actx, cancel := context.WithTimeout(ctx, 3*time.Second)
		last = check(actx)
		cancel()
		if last == nil {
			return nil
		}
		if ctx.Err() != nil {
			return fmt.Errorf("%s: %w", name, ctx.Err())
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s not healthy after %s: %v (log: %s)", name, timeout, last, logPath)
		}
		select {
		case <-ctx.Done():
		case <-p.doneChan():
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func (p *proc) doneChan() <-chan struct{} {
	if p == nil {
		return nil
	}
	return p.done
}

func itoa(i int) string { return strconv.Itoa(i) }

// errorLines returns the lines of path that mention an error (at most 3),
// else its last lines.
func errorLines(path string) string {
	s, err := tailFile(path, 0)
	if err != nil {
		return ""
	}
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(strings.ToLower(l), "error") && len(out) < 3 {
			out = append(out, strings.TrimSpace(l))
		}
	}
	if len(out) == 0 {
		return lastLines(path, 3)
	}
	return strings.Join(out, " | ")
}
