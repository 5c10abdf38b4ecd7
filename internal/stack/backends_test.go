package stack

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/seckill-lab/seckill/internal/server"
	"github.com/seckill-lab/seckill/stock/catalog"

	"github.com/seckill-lab/seckill/internal/config"
	"github.com/seckill-lab/seckill/internal/testenv"
)

// backendsTestBasePort is the base port of TestUpBackendsSubset:
// $SECKILL_TEST_BASE_PORT when set (the stack takes B+1..B+101 of it),
// else 21500 (away from the other tests' fixed 29000-31700 and from the
// default 17000).
func backendsTestBasePort(t *testing.T) int {
	t.Helper()
	v := os.Getenv("SECKILL_TEST_BASE_PORT")
	if v == "" {
		return testenv.Port(21500)
	}
	p, err := strconv.Atoi(v)
	if err != nil {
		t.Fatalf("SECKILL_TEST_BASE_PORT=%q: %v", v, err)
	}
	return p
}

// TestOptionsBackends checks what up refuses before starting anything.
func TestOptionsBackends(t *testing.T) {
	// The default: every packaged server, and Consul where make deps
	// built it (the checkout's bin/).
	defaultAll := "redis,etcd,zookeeper,mysql"
	if _, err := SystemFinder().Find([]Backend{"consul"}); err == nil {
		defaultAll += ",consul"
	}
	tests := []struct {
		name     string
		opts     Options
		wantErr  string
		backends string
	}{
		{"default is all", Options{}, "", defaultAll},
		{"subset", Options{Backends: []Backend{BackendMySQL, BackendRedis}}, "", "redis,mysql"},
		{"mysql left out", Options{Backends: []Backend{BackendRedis}}, "mysql is always needed", ""},
		{"unknown", Options{Backends: []Backend{"mongo", BackendMySQL}}, `unknown backend "mongo"`, ""},
		{"strategy needs a backend left out", Options{Strategy: catalog.Etcd, Backends: []Backend{BackendMySQL}}, "--strategy etcd needs the etcd backend", ""},
		{"redlock needs redis", Options{Strategy: catalog.Redlock, Backends: []Backend{BackendMySQL, Backend("etcd")}}, "needs the redis backend", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tc.opts.Binary, tc.opts.Dir = seckillBin, t.TempDir()
			o, err := tc.opts.normalize()
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("normalize: %v, want an error containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil || joinBackends(o.Backends) != tc.backends {
				t.Fatalf("normalize: %v, %v; want backends %s", o.Backends, err, tc.backends)
			}
		})
	}
}

// TestUpBackendsSubset starts a stack with only redis and mysql: no etcd
// or ZooKeeper runs, the instances start without their addresses, their
// strategies answer 503 backend_unavailable, Redis and MySQL ones work,
// and status shows the absent ones as not started.
func TestUpBackendsSubset(t *testing.T) {
	requireTools(t)
	base := backendsTestBasePort(t)
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	t.Setenv("SECKILL_ADMIN_TOKEN", "")
	var progress bytes.Buffer
	st, err := Up(ctx, Options{Dir: dir, BasePort: base, Instances: 1, Binary: seckillBin, Out: &progress,
		Backends: []Backend{BackendRedis, BackendMySQL}})
	t.Cleanup(func() { _ = Down(context.Background(), dir, io.Discard) })
	if err != nil {
		t.Fatalf("up: %v\n%s", err, progress.String())
	}
	for _, c := range st.Components {
		if c.Kind == server.KindEtcd || c.Kind == server.KindZooKeeper {
			t.Errorf("%s started, but --backends left it out", c.Name)
		}
	}
	env := map[string]string{}
	for _, kv := range st.Env() {
		env[kv[0]] = kv[1]
	}
	if env[testenv.EtcdEndpoints] != "" || env[testenv.ZKServers] != "" || env[config.EnvRedisAddrs] == "" {
		t.Errorf("env: etcd %q, zk %q, redis %q; want only redis set", env[testenv.EtcdEndpoints], env[testenv.ZKServers], env[config.EnvRedisAddrs])
	}

	put := func(name string) (int, string) {
		req, err := http.NewRequestWithContext(ctx, http.MethodPut, st.InstanceURLs()[0]+"/admin/strategy", strings.NewReader(`{"name":"`+name+`"}`))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer "+st.AdminToken)
		resp, err := httpClient.Do(req)
		if err != nil {
			t.Fatalf("PUT /admin/strategy %s: %v", name, err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	tests := []struct {
		strategy string
		status   int
		body     string
	}{
		{catalog.Etcd, http.StatusServiceUnavailable, "backend_unavailable"},
		{catalog.ZooKeeper, http.StatusServiceUnavailable, "zookeeper"},
		{catalog.Redis, http.StatusOK, catalog.Redis},
		{catalog.SQLAtomic, http.StatusOK, catalog.SQLAtomic},
	}
	for _, tc := range tests {
		if code, body := put(tc.strategy); code != tc.status || !strings.Contains(body, tc.body) {
			t.Errorf("PUT %s: %d %s; want %d with %q", tc.strategy, code, body, tc.status, tc.body)
		}
	}

	resp, err := httpClient.Get(st.InstanceURLs()[0] + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	var h struct {
		Status   string            `json:"status"`
		Backends map[string]string `json:"backends"`
	}
	err = json.NewDecoder(resp.Body).Decode(&h)
	resp.Body.Close()
	if err != nil || h.Status != "ok" || h.Backends[string(catalog.ServerEtcd)] != "" || h.Backends["mysql"] != "ok" {
		t.Errorf("healthz: %+v, %v; want ok without etcd", h, err)
	}

	st2, cs, err := Status(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	if err := WriteTable(&b, st2, cs); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"etcd", "zookeeper"} {
		found := false
		for _, l := range strings.Split(b.String(), "\n") {
			if strings.HasPrefix(l, want+" ") && strings.Contains(l, "not started") {
				found = true
			}
		}
		if !found {
			t.Errorf("status does not show %s as not started:\n%s", want, b.String())
		}
	}
	if !AllHealthy(cs) {
		t.Errorf("status: not all healthy:\n%s", b.String())
	}
}

// TestStatusDashboardLine: the status table (what `up` prints last) gives
// the dashboard's URL when the stack runs one, and no line otherwise.
func TestStatusDashboardLine(t *testing.T) {
	for _, tc := range []struct {
		name string
		with bool
	}{{"with a dashboard", true}, {"without", false}} {
		t.Run(tc.name, func(t *testing.T) {
			st := &State{Dir: t.TempDir(), Topology: TopologySingle}
			if tc.with {
				st.Components = append(st.Components, Component{Name: DashboardName, Kind: KindDashboard, Addr: "127.0.0.1:17088"})
			}
			var b strings.Builder
			if err := WriteTable(&b, st, nil); err != nil {
				t.Fatal(err)
			}
			if got := strings.Contains(b.String(), "dashboard:   http://127.0.0.1:17088"); got != tc.with {
				t.Errorf("dashboard line %v, want %v:\n%s", got, tc.with, b.String())
			}
		})
	}
}
