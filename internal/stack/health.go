package stack

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"

	_ "github.com/go-sql-driver/mysql" // MySQL driver for the health check
	"github.com/seckill-lab/seckill/internal/server"
	"github.com/seckill-lab/seckill/internal/supervise"
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

// readyz GETs base+/readyz, the instance's readiness (its HTTP server and
// MySQL; never a lock server, so one lock server's fault does not fail an
// instance), and returns the X-Instance header.
func readyz(ctx context.Context, base string) (string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/readyz", nil)
	if err != nil {
		return "", fmt.Errorf("readyz: %w", err)
	}
	resp, err := httpClient.Do(req)
	if err != nil {
		return "", fmt.Errorf("GET %s/readyz: %w", base, err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<16))
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("GET %s/readyz: %s: %s", base, resp.Status, firstLine(string(body)))
	}
	return resp.Header.Get("X-Instance"), nil
}

func checkInstance(ctx context.Context, c Component) error {
	name, err := readyz(ctx, c.URL())
	if err != nil {
		return err
	}
	if name != c.Name {
		return fmt.Errorf("GET %s/readyz: X-Instance %q, want %q", c.URL(), name, c.Name)
	}
	return nil
}

// checkNginx GETs /readyz through nginx until every name in want answered
// (and no other), making at most 4*len(want)+4 requests.
func checkNginx(ctx context.Context, base string, want []string) error {
	wantSet := map[string]bool{}
	for _, n := range want {
		wantSet[n] = true
	}
	seen := map[string]bool{}
	for i := 0; i < 4*len(want)+4; i++ {
		name, err := readyz(ctx, base)
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
	s, err := supervise.Tail(path, n)
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

// labChecks are the health checks of the lab's own components.
var labChecks = map[Kind]func(ctx context.Context, st *State, c Component) error{
	KindInstance: func(ctx context.Context, _ *State, c Component) error { return checkInstance(ctx, c) },
	KindNginx: func(ctx context.Context, st *State, c Component) error {
		return checkNginx(ctx, c.URL(), st.InstanceNames())
	},
	KindDashboard: func(ctx context.Context, _ *State, c Component) error { return checkDashboard(ctx, c.URL()) },
	KindProxy: func(_ context.Context, st *State, c Component) error {
		return checkProxy(c.Addr, len(proxyConfig(st, len(st.Instances()))))
	},
}

// checkComponent runs the health check of c (one attempt): its server
// description's, or the lab's own.
func checkComponent(ctx context.Context, st *State, c Component) error {
	if _, ks, ok := server.KindOf(c.Kind); ok {
		return ks.Check(ctx, c.Addr)
	}
	if check, ok := labChecks[c.Kind]; ok {
		return check(ctx, st, c)
	}
	return fmt.Errorf("unknown kind %q", c.Kind)
}

// waitHealthy retries check until it passes, p exits, ctx ends or timeout
// passes.
func waitHealthy(ctx context.Context, name string, p *proc, logPath string, timeout time.Duration, check func(context.Context) error) error {
	deadline := time.Now().Add(timeout)
	var last error
	for {
		if p != nil && p.Exited() {
			return fmt.Errorf("%s exited (%v) before it was healthy; last log lines: %s", name, p.Err, lastLines(logPath, 3))
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
		case <-doneChan(p):
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func doneChan(p *proc) <-chan struct{} {
	if p == nil {
		return nil
	}
	return p.Done
}

func itoa(i int) string { return strconv.Itoa(i) }
