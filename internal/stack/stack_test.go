package stack

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/seckill-lab/seckill/internal/server"
	"github.com/seckill-lab/seckill/internal/supervise"

	"github.com/goccy/go-yaml"

	"github.com/redis/go-redis/v9"

	"github.com/seckill-lab/seckill"
	"github.com/seckill-lab/seckill/internal/config"
	"github.com/seckill-lab/seckill/internal/testenv"
)

// seckillBin is the seckill binary built by TestMain for the instances.
var seckillBin string

func TestMain(m *testing.M) {
	bin, cleanup, err := testenv.BuildSeckill()
	if err != nil {
		fmt.Fprintln(os.Stderr, "stack test:", err)
		os.Exit(1)
	}
	seckillBin = bin
	code := m.Run()
	cleanup()
	os.Exit(code)
}

// requireTools fails (CI) or skips the test when a server binary is missing.
func requireTools(t *testing.T) {
	t.Helper()
	// The packaged servers; the optional ones (Consul) are started only
	// when found, and tested where the test gives the lab's bin/.
	if _, err := SystemFinder().Find(packagedBackends()); err != nil {
		if testenv.InCI() {
			t.Fatalf("%v (CI=true: a missing server is a failure)", err)
		}
		t.Skip(err)
	}
}

func requireCommand(t *testing.T, name string) string {
	t.Helper()
	p, err := SystemFinder().Command(name)
	if err != nil {
		if testenv.InCI() {
			t.Fatalf("%v (CI=true: a missing tool is a failure)", err)
		}
		t.Skip(err)
	}
	return p
}

// repoFile returns the path of a file at the repository root.
func repoFile(name string) string { return filepath.Join("..", "..", name) }

// directives returns the trimmed, comment-free lines of an nginx config.
func directives(conf string) []string {
	var out []string
	for _, l := range strings.Split(conf, "\n") {
		l, _, _ = strings.Cut(l, "#")
		if l = strings.TrimSpace(l); l != "" {
			out = append(out, l)
		}
	}
	return out
}

// nginxSets returns nginx.conf with each deployment's includes inlined:
// the compose files (nginx/compose) and the local stack's.
func nginxSets(t *testing.T) map[string]string {
	t.Helper()
	compose := map[string]string{}
	for _, f := range []string{"http.conf", "listen.conf"} {
		b, err := os.ReadFile(repoFile(filepath.Join("nginx", "compose", f)))
		if err != nil {
			t.Fatal(err)
		}
		compose[f] = string(b)
	}
	f := nginxFiles{prefix: "/run/nginx", accessLog: "/run/logs/nginx-access.log"}
	httpConf, listenConf, err := nginxIncludes(f, "127.0.0.1:17080", []string{"127.0.0.1:17101", "127.0.0.1:17102"})
	if err != nil {
		t.Fatal(err)
	}
	inline := func(h, l string) string {
		c := strings.Replace(seckill.NginxConf(), "include seckill.d/http.conf;", h, 1)
		return strings.Replace(c, "include seckill.d/listen.conf;", l, 1)
	}
	return map[string]string{
		"compose": inline(compose["http.conf"], compose["listen.conf"]),
		"local":   inline(httpConf, listenConf),
	}
}

func TestNginxConfChoices(t *testing.T) {
	top, err := os.ReadFile(repoFile("nginx.conf"))
	if err != nil {
		t.Fatal(err)
	}
	if string(top) != seckill.NginxConf() {
		t.Fatal("the embedded nginx.conf is not the top-level one")
	}
	for name, conf := range nginxSets(t) {
		ds := directives(conf)
		joined := strings.Join(ds, "\n")
		for _, want := range []string{
			"upstream seckill {",
			"location /api/ {",
			"location = /healthz {",
			"location = /readyz {",
			"location = /livez {",
			"proxy_pass http://seckill;",
			"proxy_http_version 1.1;",
			`proxy_set_header Connection "";`,
			"proxy_next_upstream error timeout non_idempotent;",
			"proxy_next_upstream_tries 3;",
			"proxy_next_upstream_timeout 40s;",
			"proxy_read_timeout 35s;",
			"location @unkeyed {",
			"proxy_next_upstream error timeout;",
			"error_page 418 = @unkeyed;",
			"map $http_idempotency_key $seckill_unkeyed {",
			"zone seckill 64k;",
			"client_header_timeout 10s;",
			"client_body_timeout 10s;",
			"send_timeout 10s;",
		} {
			if !slices.Contains(ds, want) {
				t.Errorf("%s: no %q", name, want)
			}
		}
		if !strings.Contains(joined, "$upstream_addr") || !strings.Contains(joined, "log_format seckill") {
			t.Errorf("%s: log_format seckill lacks $upstream_addr", name)
		}
		if !slices.ContainsFunc(ds, func(d string) bool { return strings.HasPrefix(d, "keepalive ") }) {
			t.Errorf("%s: upstream has no keepalive", name)
		}
		// Only keyed requests may be resent after they reached an
		// instance: non_idempotent once, at the server level, and the
		// key-less ones' location overrides it.
		if n := strings.Count(joined, "non_idempotent"); n != 1 {
			t.Errorf("%s: non_idempotent %d times, want once (the server's default, not @unkeyed's)", name, n)
		}
		if unkeyed := joined[strings.Index(joined, "location @unkeyed {"):]; strings.Contains(unkeyed[:strings.Index(unkeyed, "}")], "non_idempotent") {
			t.Errorf("%s: @unkeyed resends key-less POSTs", name)
		}
		// nginx's own /livez answers without the instances.
		if strings.Count(joined, "proxy_pass") != 4 {
			t.Errorf("%s: want exactly /api/, @unkeyed, /healthz and /readyz proxied, got %d proxy_pass", name, strings.Count(joined, "proxy_pass"))
		}
		servers := 0
		for _, d := range ds {
			if strings.HasPrefix(d, "server ") && d != "server {" {
				servers++
				if !strings.HasSuffix(d, " "+upstreamServerParams+";") {
					t.Errorf("%s: %q lacks %s", name, d, upstreamServerParams)
				}
			}
		}
		if servers == 0 {
			t.Errorf("%s: no upstream server", name)
		}
		if !slices.ContainsFunc(ds, func(d string) bool { return strings.HasPrefix(d, "access_log ") && strings.Contains(d, " seckill") }) {
			t.Errorf("%s: access_log does not use the seckill format", name)
		}
	}
}

func TestNginxIncludes(t *testing.T) {
	f := nginxFiles{prefix: "/run/nginx", accessLog: "/run/logs/nginx-access.log"}
	httpConf, listenConf, err := nginxIncludes(f, "127.0.0.1:17080", []string{"127.0.0.1:17101", "127.0.0.1:17102"})
	if err != nil {
		t.Fatal(err)
	}
	ds := directives(httpConf + listenConf)
	for _, w := range []string{"listen 127.0.0.1:17080;", "server 127.0.0.1:17101 " + upstreamServerParams + ";", "server 127.0.0.1:17102 " + upstreamServerParams + ";", upstreamZone,
		"access_log /run/logs/nginx-access.log seckill buffer=64k flush=1s;", "proxy_temp_path /run/nginx/temp/proxy;", "client_body_temp_path /run/nginx/temp/client_body;"} {
		if !slices.Contains(ds, w) {
			t.Errorf("no %q in\n%s", w, httpConf+listenConf)
		}
	}
	if _, _, err := nginxIncludes(f, "127.0.0.1:1", nil); err == nil {
		t.Error("no upstream: want an error")
	}
}

// TestNginxConfValid runs `nginx -t` on the config `up` generates.
func TestNginxConfValid(t *testing.T) {
	bin := requireCommand(t, "nginx")
	base := testenv.Port(29800)
	st := &State{Dir: t.TempDir(), BasePort: base,
		Components: []Component{{Name: "inst-1", Kind: KindInstance, Addr: addr(base + 101)}, {Name: "inst-2", Kind: KindInstance, Addr: addr(base + 102)}}}
	f, err := writeNginxConf(st)
	if err != nil {
		t.Fatal(err)
	}
	args := append([]string{"-t"}, nginxArgs(f)...)
	out, err := exec.Command(bin, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("nginx -t: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "test is successful") {
		t.Fatalf("nginx -t: %s", out)
	}
	// The compose files with the same nginx.conf: their upstream host names
	// do not resolve here, so only the syntax is checked (nginx -t fails on
	// "host not found", after parsing).
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "seckill.d"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"http.conf", "listen.conf"} {
		b, err := os.ReadFile(repoFile(filepath.Join("nginx", "compose", name)))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "seckill.d", name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "nginx.conf"), []byte(seckill.NginxConf()), 0o644); err != nil {
		t.Fatal(err)
	}
	out, _ = exec.Command(bin, "-t", "-p", dir, "-c", filepath.Join(dir, "nginx.conf"), "-e", filepath.Join(dir, "e.log"), "-g", "pid "+filepath.Join(dir, "pid")+";").CombinedOutput()
	if !strings.Contains(string(out), "host not found in upstream \"inst1:8080\"") && !strings.Contains(string(out), "test is successful") {
		t.Fatalf("nginx -t with the compose includes: %s", out)
	}
}

// composeUpstreams is nginx/compose/http.conf.
func composeUpstreams(t *testing.T) string {
	b, err := os.ReadFile(repoFile(filepath.Join("nginx", "compose", "http.conf")))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// composeFile is the part of `docker-compose config` the test checks.
type composeFile struct {
	Services map[string]struct {
		Image       string            `yaml:"image"`
		Build       any               `yaml:"build"`
		Command     any               `yaml:"command"`
		Environment map[string]string `yaml:"environment"`
		Healthcheck *struct {
			Test []string `yaml:"test"`
		} `yaml:"healthcheck"`
		DependsOn map[string]struct {
			Condition string `yaml:"condition"`
		} `yaml:"depends_on"`
		Ports    []any    `yaml:"ports"`
		Volumes  []any    `yaml:"volumes"`
		Profiles []string `yaml:"profiles"`
	} `yaml:"services"`
}

// composeConfig runs `docker-compose config` with args and parses it.
func composeConfig(t *testing.T, bin string, args ...string) composeFile {
	t.Helper()
	cmd := exec.Command(bin, append([]string{"-f", repoFile("docker-compose.yml")}, append(args, "config")...)...)
	cmd.Env = cleanEnv("SECKILL_") // the documented defaults apply
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("docker-compose %v config: %v\n%s", args, err, stderr.String())
	}
	var cf composeFile
	if err := yaml.Unmarshal(out, &cf); err != nil {
		t.Fatalf("parse docker-compose config output: %v", err)
	}
	return cf
}

func TestComposeConfig(t *testing.T) {
	bin := requireCommand(t, "docker-compose")
	cf := composeConfig(t, bin)
	backends := []string{"redis1", "redis2", "redis3", "redis4", "redis5", "etcd", "zookeeper", "consul", "mariadb"}
	instances := []string{"inst1", "inst2", "inst3"}
	for _, name := range append(append(append([]string{}, backends...), instances...), "nginx") {
		if _, ok := cf.Services[name]; !ok {
			t.Errorf("service %s missing", name)
		}
	}
	var haServices []string
	for name, s := range cf.Services {
		if slices.Contains(s.Profiles, "ha") {
			haServices = append(haServices, name)
		}
	}
	if n := len(cf.Services) - len(haServices); n != len(backends)+len(instances)+1 {
		t.Errorf("%d services outside the ha profile, want %d", n, len(backends)+len(instances)+1)
	}
	for _, name := range backends {
		s := cf.Services[name]
		if s.Healthcheck == nil || len(s.Healthcheck.Test) == 0 {
			t.Errorf("%s has no healthcheck", name)
		}
	}
	for _, name := range backends[:5] {
		if cf.Services[name].Image != server.Redis.Image {
			t.Errorf("%s image %q, want %s", name, cf.Services[name].Image, server.Redis.Image)
		}
	}
	want := config.EnvVars()
	slices.Sort(want)
	for i, name := range instances {
		s := cf.Services[name]
		if s.Build == nil {
			t.Errorf("%s is not built from the Dockerfile", name)
		}
		var got []string
		for k := range s.Environment {
			if strings.HasPrefix(k, "SECKILL_") {
				got = append(got, k)
			}
		}
		slices.Sort(got)
		if !slices.Equal(got, want) {
			t.Errorf("%s sets %v, want exactly config.EnvVars %v", name, got, want)
		}
		if s.Environment[config.EnvInstance] != fmt.Sprintf("inst%d", i+1) {
			t.Errorf("%s: %s=%q", name, config.EnvInstance, s.Environment[config.EnvInstance])
		}
		if s.Environment[config.EnvAdminToken] == "" {
			t.Errorf("%s: empty admin token", name)
		}
		if v := s.Environment[config.EnvSentinels]; v != "" {
			t.Errorf("%s: %s=%q without the ha profile", name, config.EnvSentinels, v)
		}
		for _, b := range backends {
			if s.DependsOn[b].Condition != "service_healthy" {
				t.Errorf("%s does not wait for %s to be healthy", name, b)
			}
		}
	}
	ng := cf.Services["nginx"]
	if ng.Image != server.Nginx.Image {
		t.Errorf("nginx image %q", ng.Image)
	}
	if !strings.Contains(fmt.Sprint(ng.Volumes), "/etc/nginx/nginx.conf") {
		t.Errorf("nginx does not mount nginx.conf: %v", ng.Volumes)
	}
	if !strings.Contains(fmt.Sprint(ng.Ports), "17080") {
		t.Errorf("nginx not published on 17080: %v", ng.Ports)
	}
	// The compose upstreams are the instance services.
	for _, name := range instances {
		if !strings.Contains(composeUpstreams(t), "server "+name+":8080 "+upstreamServerParams+";") {
			t.Errorf("nginx.conf has no upstream %s:8080", name)
		}
	}

	// The ha profile: exactly the services of `up --topology ha`, each
	// with a healthcheck; compose-ha.env points the instances at them.
	wantHA := []string{"redis-primary", "redis-replica", "sentinel1", "sentinel2", "sentinel3",
		"etcd1", "etcd2", "etcd3", "zookeeper1", "zookeeper2", "zookeeper3", "consul1", "consul2", "consul3"}
	slices.Sort(haServices)
	slices.Sort(wantHA)
	if !slices.Equal(haServices, wantHA) {
		t.Errorf("ha profile services %v, want %v", haServices, wantHA)
	}
	ha := composeConfig(t, bin, "--env-file", repoFile("compose-ha.env"), "--profile", "ha")
	for _, name := range wantHA {
		if s := ha.Services[name]; s.Healthcheck == nil || len(s.Healthcheck.Test) == 0 {
			t.Errorf("%s has no healthcheck", name)
		}
	}
	if c := fmt.Sprint(ha.Services["redis-replica"].Command); !strings.Contains(c, "--replicaof redis-primary 6379") {
		t.Errorf("redis-replica command %s", c)
	}
	for _, name := range instances {
		env := ha.Services[name].Environment
		for k, want := range map[string]string{
			config.EnvSentinels:   "sentinel1:26379,sentinel2:26379,sentinel3:26379",
			config.EnvRedisMaster: SentinelMaster,
			testenv.EtcdEndpoints: "etcd1:2379,etcd2:2379,etcd3:2379",
			testenv.ZKServers:     "zookeeper1:2181,zookeeper2:2181,zookeeper3:2181",
		} {
			if env[k] != want {
				t.Errorf("ha profile: %s %s=%q, want %q", name, k, env[k], want)
			}
		}
	}
}

// TestStackPorts: in each topology every port is distinct, above the base
// and below the instances' range, and the ha topology keeps the single
// one's Redis, MariaDB and nginx ports.
func TestStackPorts(t *testing.T) {
	const base = 17000
	for _, tc := range []struct {
		topology string
		count    int
	}{
		{TopologySingle, RedisCount + 5 + 3 + 3},                                                   // + consul's http, server, serf
		{TopologyHA, RedisCount + 2 + HAMembers + 2*HAMembers + 3*HAMembers + 2 + 3 + 3*HAMembers}, // + 3 per consul server
	} {
		t.Run(tc.topology, func(t *testing.T) {
			ps := stackPorts(tc.topology, base, 3, false, false)
			if len(ps) != tc.count {
				t.Errorf("%d ports, want %d: %v", len(ps), tc.count, ps)
			}
			seen := map[int]string{}
			for _, p := range ps {
				if prev, dup := seen[p.port]; dup {
					t.Errorf("port %d used by %s and %s", p.port, prev, p.name)
				}
				seen[p.port] = p.name
				if p.port <= base || (p.port > base+offInstance && !strings.HasPrefix(p.name, "inst-")) {
					t.Errorf("%s on %d: outside B+1..B+%d", p.name, p.port, offInstance)
				}
			}
			for port, name := range map[int]string{base + 1: "redis-1", base + 40: "mariadb", base + 80: "nginx", base + 101: "inst-1"} {
				if seen[port] != name {
					t.Errorf("port %d: %q, want %s", port, seen[port], name)
				}
			}
		})
	}
	st := &State{BasePort: base, Topology: TopologyHA}
	for _, tc := range []struct {
		name string
		got  []string
		want []string
	}{
		{"sentinels", st.SentinelAddrs(), []string{"127.0.0.1:17008", "127.0.0.1:17009", "127.0.0.1:17010"}},
		{"etcd", st.Addrs(testenv.EtcdEndpoints), []string{"127.0.0.1:17022", "127.0.0.1:17024", "127.0.0.1:17026"}},
		{"zookeeper", st.Addrs(testenv.ZKServers), []string{"127.0.0.1:17031", "127.0.0.1:17034", "127.0.0.1:17037"}},
		{"single etcd", (&State{BasePort: base}).Addrs(testenv.EtcdEndpoints), []string{"127.0.0.1:17020"}},
		{"single sentinels", (&State{BasePort: base}).SentinelAddrs(), nil},
	} {
		if !slices.Equal(tc.got, tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, tc.got, tc.want)
		}
	}
}

func TestShellQuote(t *testing.T) {
	tests := []struct{ in, want string }{
		{"127.0.0.1:1,127.0.0.1:2", "127.0.0.1:1,127.0.0.1:2"},
		{"root@tcp(127.0.0.1:1)/x?a=b&c=d", "'root@tcp(127.0.0.1:1)/x?a=b&c=d'"},
		{"it's", `'it'\''s'`},
		{"", "''"},
	}
	for _, tt := range tests {
		if got := shellQuote(tt.in); got != tt.want {
			t.Errorf("shellQuote(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

// portsInUse lists the ports of the stack at base, in any topology, where
// something listens.
func portsInUse(base, instances int) []int {
	var out []int
	seen := map[int]bool{}
	for _, p := range append(stackPorts(TopologySingle, base, instances, true, true), stackPorts(TopologyHA, base, instances, true, true)...) {
		if seen[p.port] {
			continue
		}
		seen[p.port] = true
		if c, err := net.DialTimeout("tcp", addr(p.port), time.Second); err == nil {
			c.Close()
			out = append(out, p.port)
		}
	}
	return out
}

// procsMentioning lists the live processes whose command line mentions
// dir (every server of a stack names its run directory).
func procsMentioning(dir string) []string {
	ents, _ := os.ReadDir("/proc")
	var out []string
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		if err != nil || !bytes.Contains(b, []byte(dir)) {
			continue
		}
		if !supervise.Dead(pid) {
			out = append(out, fmt.Sprintf("%d %s", pid, bytes.ReplaceAll(b, []byte{0}, []byte{' '})))
		}
	}
	return out
}

// checkNothingLeft fails the test when a process of the stack in dir (at
// base) is still running.
func checkNothingLeft(t *testing.T, dir string, base, instances int) {
	t.Helper()
	if used := portsInUse(base, instances); len(used) > 0 {
		t.Errorf("ports still in use: %v", used)
	}
	if ps := procsMentioning(dir); len(ps) > 0 {
		t.Errorf("processes still running: %v", ps)
	}
}

func TestUpPortTaken(t *testing.T) {
	requireTools(t)
	base := testenv.Port(30200)
	ln, err := net.Listen("tcp", addr(base+1))
	if err != nil {
		t.Fatalf("listen: %v", err)
	}
	defer ln.Close()
	dir := t.TempDir()
	_, err = Up(context.Background(), Options{Dir: dir, BasePort: base, Binary: seckillBin})
	want := fmt.Sprintf("port %d (redis-1) is already in use on 127.0.0.1; stop that process or pass --base-port", base+1)
	if err == nil || err.Error() != want {
		t.Fatalf("err = %v, want %q", err, want)
	}
	if _, err := Load(dir); !errors.Is(err, ErrNotRunning) {
		t.Errorf("Load after failed up: %v, want ErrNotRunning", err)
	}
	if used := portsInUse(base, DefaultInstances); !slices.Equal(used, []int{base + 1}) {
		t.Errorf("ports in use after the failed up: %v, want only %d", used, base+1)
	}
	if ps := procsMentioning(dir); len(ps) > 0 {
		t.Errorf("processes running after the failed up: %v", ps)
	}
}

func TestUpMissingTool(t *testing.T) {
	empty := Finder{Root: t.TempDir(), Path: t.TempDir()}
	_, err := Up(context.Background(), Options{Dir: t.TempDir(), BasePort: testenv.Port(30000), Binary: seckillBin, Finder: &empty})
	if err == nil {
		t.Fatal("up succeeded with no server to be found")
	}
	for _, want := range []string{"redis-server", "not found: run 'make deps'", "etcd-server", "seckill doctor"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("err = %q, want it to contain %q", err, want)
		}
	}
}

func TestUpRejectsBadOptions(t *testing.T) {
	tests := []struct {
		name string
		opts Options
		want string
	}{
		{"too many instances", Options{Instances: MaxInstances + 1}, "--instances"},
		{"negative instances", Options{Instances: -1}, "--instances"},
		{"low base port", Options{BasePort: 80}, "--base-port"},
		{"high base port", Options{BasePort: 65500}, "--base-port"},
		{"binary missing", Options{Binary: "/nonexistent/seckill"}, "not an executable"},
		{"unknown topology", Options{Topology: "cluster"}, `--topology "cluster": want single or ha`},
		{"unknown priority", Options{Priority: "high"}, `--priority "high": want servers-first or equal`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.opts.Dir = t.TempDir()
			if tt.opts.Binary == "" {
				tt.opts.Binary = seckillBin
			}
			_, err := Up(context.Background(), tt.opts)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v, want %q", err, tt.want)
			}
		})
	}
}

// TestUpFailureStopsEverything: instances that exit at once make `up`
// fail after the servers started; it must stop them all.
func TestUpFailureStopsEverything(t *testing.T) {
	requireTools(t)
	base := testenv.Port(30600)
	falseBin, err := exec.LookPath("false")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	var progress bytes.Buffer
	_, err = Up(context.Background(), Options{Dir: dir, BasePort: base, Instances: 2, Binary: falseBin, Out: &progress})
	if err == nil {
		t.Fatal("up succeeded with instances that exit")
	}
	if !strings.Contains(err.Error(), "exited") || !strings.Contains(err.Error(), "stopped everything it had started") {
		t.Errorf("err = %v", err)
	}
	if !strings.Contains(progress.String(), "redis-1") {
		t.Errorf("the servers did not start before the failure: %s", progress.String())
	}
	if _, err := Load(dir); !errors.Is(err, ErrNotRunning) {
		t.Errorf("Load after failed up: %v, want ErrNotRunning", err)
	}
	checkNothingLeft(t, dir, base, 2)
}

func TestUpCancelled(t *testing.T) {
	requireTools(t)
	base := testenv.Port(30400)
	dir := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	var progress syncBuffer
	go func() {
		// Cancel as soon as the first server is healthy.
		for i := 0; i < 600 && !strings.Contains(progress.String(), "healthy"); i++ {
			time.Sleep(10 * time.Millisecond)
		}
		cancel()
	}()
	_, err := Up(ctx, Options{Dir: dir, BasePort: base, Binary: seckillBin, Backends: packagedBackends(), Out: &progress})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
	checkNothingLeft(t, dir, base, DefaultInstances)
}

// The tests' base ports keep every port below the ephemeral range
// (32768-60999 on Linux), where client sockets of other tests could hold
// them.

// TestLifecycle runs the real stack: up, health, a purchase through nginx,
// a second up, scale down and up, down, nothing left.
func TestLifecycle(t *testing.T) {
	requireTools(t)
	base := testenv.Port(31000)
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	t.Setenv("SECKILL_ADMIN_TOKEN", "") // let up generate one

	var progress bytes.Buffer
	st, err := Up(ctx, Options{Dir: dir, BasePort: base, Instances: 3, Binary: seckillBin, Backends: packagedBackends(), Out: &progress})
	if err != nil {
		t.Fatalf("up: %v\n%s", err, progress.String())
	}
	var all []Component
	defer func() {
		// Whatever happens, nothing is left running.
		_ = Down(context.Background(), dir, io.Discard)
		for _, c := range all {
			if alive(c) {
				t.Errorf("%s (pid %d) still running after down", c.Name, c.Pid)
			}
		}
	}()
	all = append(all, st.Components...)
	// etcd, java, mariadbd and nginx's master name the run dir (redis-server
	// rewrites its title: the port checks cover it).
	if ps := procsMentioning(dir); len(ps) < 4 {
		t.Errorf("processes naming the run dir: %v, want at least 4", ps)
	}
	if len(st.Components) != RedisCount+3+3+1 {
		t.Fatalf("%d components: %+v", len(st.Components), st.Components)
	}

	checkNice(t, st)

	// status: every component healthy, with RSS.
	_, cs, err := Status(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range cs {
		if !c.Healthy || c.RSSBytes <= 0 {
			t.Errorf("%s: healthy=%v (%s) rss=%d", c.Name, c.Healthy, c.Health, c.RSSBytes)
		}
	}
	var table bytes.Buffer
	if err := WriteTable(&table, st, cs); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(table.String(), "admin token: generated") || !strings.Contains(table.String(), "total") ||
		!strings.Contains(table.String(), "priority:    servers first (instance, nginx, dashboard at niceness 10") {
		t.Errorf("table:\n%s", table.String())
	}

	// Load (what the bench uses) and env.sh agree.
	loaded, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	if loaded.AdminToken == "" || loaded.NginxURL() != fmt.Sprintf("http://127.0.0.1:%d", base+80) || len(loaded.InstanceURLs()) != 3 {
		t.Errorf("Load: token %q nginx %s instances %v", loaded.AdminToken, loaded.NginxURL(), loaded.InstanceURLs())
	}
	fi, err := os.Stat(filepath.Join(dir, tokenFile))
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("admin-token: %v mode %v", err, fi.Mode())
	}
	envsh, err := os.ReadFile(filepath.Join(dir, envFile))
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range []string{testenv.RedisAddrs, testenv.EtcdEndpoints, testenv.ZKServers, testenv.MySQLDSN,
		testenv.NginxURL, testenv.InstanceURLs, testenv.StackDir, testenv.AdminToken} {
		if !strings.Contains(string(envsh), "export "+v+"=") {
			t.Errorf("env.sh lacks %s", v)
		}
	}
	if !strings.Contains(string(envsh), "export SECKILL_ADMIN_TOKEN="+loaded.AdminToken+"\n") {
		t.Errorf("env.sh has not the admin token")
	}

	// A purchase through nginx reaches an instance.
	purchaseThroughNginx(t, ctx, loaded)

	// A second up changes nothing.
	again, err := Up(ctx, Options{Dir: dir, BasePort: base, Instances: 5, Binary: seckillBin, Backends: packagedBackends()})
	if !errors.Is(err, ErrAlreadyRunning) {
		t.Fatalf("second up: %v, want ErrAlreadyRunning", err)
	}
	if !slices.Equal(pids(again.Components), pids(st.Components)) {
		t.Errorf("second up changed the components: %v -> %v", pids(st.Components), pids(again.Components))
	}

	// The commands, as a user runs them.
	out, code := runSeckill(t, "status", "--dir", dir, "--json")
	var js []map[string]any
	if err := json.Unmarshal([]byte(out), &js); err != nil || code != 0 || len(js) != len(st.Components) {
		t.Errorf("seckill status --json: exit %d, %v:\n%s", code, err, out)
	}
	for _, c := range js {
		if c["health"] != "ok" || c["rss_bytes"].(float64) <= 0 || c["pid"].(float64) <= 0 || c["address"] == "" {
			t.Errorf("status --json: %v", c)
		}
	}
	if out, code := runSeckill(t, "up", "--dir", dir, "--base-port", fmt.Sprint(base)); code != 0 || !strings.Contains(out, "already running") {
		t.Errorf("second seckill up: exit %d:\n%s", code, out)
	}
	if out, code := runSeckill(t, "env", "--dir", dir); code != 0 || out != loaded.EnvScript() {
		t.Errorf("seckill env: exit %d:\n%s", code, out)
	}
	if out, code := runSeckill(t, "logs", "--dir", dir, "-n", "2", "etcd"); code != 0 || strings.Count(out, "\n") != 2 {
		t.Errorf("seckill logs -n 2 etcd: exit %d:\n%s", code, out)
	}
	if out, code := runSeckill(t, "logs", "--dir", dir, "nope"); code != 1 || strings.Count(strings.TrimSpace(out), "\n") != 0 || !strings.Contains(out, "unknown component") {
		t.Errorf("seckill logs nope: exit %d:\n%s", code, out)
	}

	// logs
	// nginx flushes its buffered access log within a second.
	var logs bytes.Buffer
	for deadline := time.Now().Add(10 * time.Second); ; {
		logs.Reset()
		err := Logs(&logs, dir, "nginx-access", 0)
		if err == nil && strings.Contains(logs.String(), "upstream=127.0.0.1:") {
			break
		}
		if time.Now().After(deadline) {
			t.Errorf("nginx access log: %v\n%s", err, logs.String())
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if err := Logs(io.Discard, dir, "nope", 10); err == nil || !strings.Contains(err.Error(), "redis-1") {
		t.Errorf("logs of an unknown component: %v", err)
	}

	// Scale down to 1, then up to 4: nginx routes to exactly those.
	for _, n := range []int{1, 4} {
		sst, err := Scale(ctx, dir, n)
		if err != nil {
			t.Fatalf("scale to %d: %v", n, err)
		}
		all = append(all, sst.Instances()...)
		if got := len(sst.Instances()); got != n {
			t.Fatalf("scale to %d: %d instances", n, got)
		}
		if err := checkNginx(ctx, sst.NginxURL(), sst.InstanceNames()); err != nil {
			t.Errorf("after scale to %d: %v", n, err)
		}
		if env, _ := Env(dir); !strings.Contains(env, sst.InstanceURLs()[n-1]) {
			t.Errorf("env.sh not updated by scale to %d", n)
		}
	}
	for _, c := range st.Instances()[1:3] { // inst-2, inst-3 were stopped by the scale to 1
		if alive(c) {
			t.Errorf("%s (pid %d) still running after scale down", c.Name, c.Pid)
		}
	}

	// Dead components: status exits 1; up starts only what is down, and
	// what runs keeps its pid (and Redis its data).
	rc := redisClient(t, loadedInstance(t, dir, "redis-1").Addr)
	if err := rc.Set(ctx, "seckill:test:survives", "1", 0).Err(); err != nil {
		t.Fatal(err)
	}
	killed := []string{"inst-1", "redis-2"}
	for _, name := range killed {
		if err := Signal(dir, name, syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		c := loadedInstance(t, dir, name)
		for i := 0; i < 100 && alive(c); i++ {
			time.Sleep(20 * time.Millisecond)
		}
	}
	if out, code := runSeckill(t, "status", "--dir", dir); code != 1 || !strings.Contains(out, "inst-1: not running") {
		t.Errorf("status with a dead instance: exit %d:\n%s", code, out)
	}
	before, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	var upOut bytes.Buffer
	after, err := Up(ctx, Options{Dir: dir, BasePort: base, Binary: seckillBin, Backends: packagedBackends(), Out: &upOut})
	if err != nil {
		t.Fatalf("up over a partly running stack: %v", err)
	}
	for _, c := range after.Components {
		prev, _ := before.Component(c.Name)
		restarted := slices.Contains(killed, c.Name)
		if !alive(c) {
			t.Errorf("%s not running after up", c.Name)
		}
		if restarted == (c.Pid == prev.Pid) {
			t.Errorf("%s: pid %d -> %d (started again: %v)", c.Name, prev.Pid, c.Pid, restarted)
		}
	}
	if !strings.Contains(upOut.String(), "inst-1") || !strings.Contains(upOut.String(), "redis-2") {
		t.Errorf("up did not say what it started: %q", upOut.String())
	}
	if v, err := rc.Get(ctx, "seckill:test:survives").Result(); err != nil || v != "1" {
		t.Errorf("redis-1 lost its data across the partial up: %q %v", v, err)
	}
	purchaseThroughNginx(t, ctx, after)

	// seckill restart COMPONENT: a new pid, healthy; an unknown name lists
	// the valid ones.
	old3 := loadedInstance(t, dir, "redis-3")
	if out, code := runSeckill(t, "restart", "--dir", dir, "redis-3"); code != 0 || !strings.Contains(out, "redis-3 restarted") {
		t.Errorf("seckill restart redis-3: exit %d: %s", code, out)
	}
	if new3 := loadedInstance(t, dir, "redis-3"); new3.Pid == old3.Pid || !alive(new3) || alive(old3) {
		t.Errorf("restart: pid %d -> %d", old3.Pid, new3.Pid)
	}
	// An instance started beside running ones takes their setting, not
	// the stack's starting strategy: lesson 28's kill run had inst-2 back
	// under "none" mid-run.
	for _, c := range after.Instances() {
		if err := after.adminJSON(ctx, http.MethodPut, c.URL(), "/admin/strategy", map[string]string{"name": "sql-atomic", "work_delay": "3ms"}, nil); err != nil {
			t.Fatal(err)
		}
	}
	if out, code := runSeckill(t, "restart", "--dir", dir, "inst-2"); code != 0 || !strings.Contains(out, "inst-2 restarted") {
		t.Errorf("seckill restart inst-2: exit %d: %s", code, out)
	}
	var setting struct {
		Name      string `json:"name"`
		WorkDelay string `json:"work_delay"`
	}
	if err := after.adminJSON(ctx, http.MethodGet, loadedInstance(t, dir, "inst-2").URL(), "/admin/strategy", nil, &setting); err != nil ||
		setting.Name != "sql-atomic" || setting.WorkDelay != "3ms" {
		t.Errorf("inst-2 restarted under %+v (%v), want the fleet's sql-atomic with work_delay 3ms", setting, err)
	}
	// ... from its first request: the process starts with it, before
	// nginx can send it a purchase.
	if env := instanceEnvOf(t, dir, "inst-2", config.EnvSetting); !strings.Contains(env, `"name":"sql-atomic"`) || !strings.Contains(env, `"work_delay":"3ms"`) {
		t.Errorf("inst-2 started with %s=%q, want the fleet's setting", config.EnvSetting, env)
	}
	restarted, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	checkNice(t, restarted) // up over a partial stack and restart keep the priorities
	if out, code := runSeckill(t, "restart", "--dir", dir, "redis-9"); code != 2 || !strings.Contains(out, "unknown component") || !strings.Contains(out, "redis-5") {
		t.Errorf("restart of an unknown component: exit %d: %s", code, out)
	}
	all = append(all, after.Components...)

	// down stops everything; a second down says so.
	var downOut bytes.Buffer
	if err := Down(ctx, dir, &downOut); err != nil {
		t.Fatalf("down: %v", err)
	}
	if !strings.Contains(downOut.String(), "stopped 13 components") {
		t.Errorf("down said %q", downOut.String())
	}
	for _, c := range all {
		if alive(c) {
			t.Errorf("%s (pid %d) still running after down", c.Name, c.Pid)
		}
	}
	checkNothingLeft(t, dir, base, 4)
	if out, code := runSeckill(t, "down", "--dir", dir); code != 0 || !strings.Contains(out, "not running") {
		t.Errorf("second seckill down: exit %d: %s", code, out)
	}
	if out, code := runSeckill(t, "status", "--dir", dir); code != 1 || !strings.Contains(out, "not running") {
		t.Errorf("status of a stopped stack: exit %d: %s", code, out)
	}
	if _, _, err := Status(ctx, dir); !errors.Is(err, ErrNotRunning) {
		t.Errorf("status after down: %v, want ErrNotRunning", err)
	}
}

// redisClient opens a client to addr, closed at cleanup.
func redisClient(t *testing.T, addr string) *redis.Client {
	c := redis.NewClient(&redis.Options{Addr: addr})
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// runSeckill runs the seckill binary and returns its combined output and
// exit code.
func runSeckill(t *testing.T, args ...string) (string, int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, seckillBin, args...).CombinedOutput()
	var ee *exec.ExitError
	switch {
	case err == nil:
		return string(out), 0
	case errors.As(err, &ee):
		return string(out), ee.ExitCode()
	}
	t.Fatalf("seckill %v: %v", args, err)
	return "", -1
}

func loadedInstance(t *testing.T, dir, name string) Component {
	t.Helper()
	st, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	c, ok := st.Component(name)
	if !ok {
		t.Fatalf("no %s in %v", name, st.Components)
	}
	return c
}

func pids(cs []Component) []int {
	var out []int
	for _, c := range cs {
		out = append(out, c.Pid)
	}
	return out
}

// purchaseThroughNginx resets goods 1 to 10 units on an instance's own
// port (nginx does not expose the admin API), buys one through nginx and
// checks the answer names one of the instances.
func purchaseThroughNginx(t *testing.T, ctx context.Context, st *State) {
	t.Helper()
	post := func(base, path, body string, admin bool) (*http.Response, string) {
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, base+path, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/json")
		if admin {
			req.Header.Set("Authorization", "Bearer "+st.AdminToken)
		}
		resp, err := httpClient.Do(req)
		if err != nil {
			t.Fatalf("POST %s: %v", path, err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp, string(b)
	}
	if resp, body := post(st.InstanceURLs()[0], "/admin/reset", `{"goods_id":1,"stock":10}`, true); resp.StatusCode != http.StatusOK {
		t.Fatalf("POST /admin/reset: %s %s", resp.Status, body)
	}
	resp, body := post(st.NginxURL(), "/api/v1/purchase", `{"goods_id":1,"qty":1,"user_id":"u1"}`, false)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("POST /api/v1/purchase: %s %s", resp.Status, body)
	}
	if inst := resp.Header.Get("X-Instance"); !slices.Contains(st.InstanceNames(), inst) {
		t.Errorf("X-Instance %q, want one of %v", inst, st.InstanceNames())
	}
	if !strings.Contains(body, `"order_id"`) || !strings.Contains(body, `"remaining":9`) {
		t.Errorf("purchase answer %s", body)
	}
}

// syncBuffer is a bytes.Buffer safe for one writer and one reader.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestNginxExposesOnlyTheAPI, on the running test stack: through nginx the
// purchase API and /healthz answer, the admin API and /metrics do not; on
// an instance's own port they do.
func TestNginxExposesOnlyTheAPI(t *testing.T) {
	nginx := testenv.Get(t, testenv.NginxURL)
	inst := testenv.List(t, testenv.InstanceURLs)[0]
	tok := testenv.Get(t, testenv.AdminToken)
	get := func(method, url string, body string) (int, string) {
		req, _ := http.NewRequest(method, url, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+tok)
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatalf("%s %s: %v", method, url, err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	for _, tc := range []struct{ method, path, body string }{
		{http.MethodGet, "/admin/strategy", ""},
		{http.MethodPut, "/admin/strategy", `{"name":"redis"}`},
		{http.MethodPost, "/admin/reset", `{"goods_id":1,"stock":1}`},
		{http.MethodGet, "/metrics", ""},
		{http.MethodGet, "/admin/events", ""},
	} {
		code, body := get(tc.method, nginx+tc.path, tc.body)
		if code != http.StatusNotFound || !strings.Contains(body, `"error":"not_found"`) {
			t.Errorf("%s %s through nginx: %d %s, want 404 not_found", tc.method, tc.path, code, body)
		}
	}
	// /healthz passes through nginx: the instance answers it, 200 or, when
	// a backend of the shared test stack is down at that moment (another
	// package's fault on its Redis), 503 "degraded"; never nginx's 404.
	if code, body := get(http.MethodGet, nginx+"/healthz", ""); (code != http.StatusOK && code != http.StatusServiceUnavailable) || !strings.Contains(body, `"instance"`) {
		t.Errorf("/healthz through nginx: %d %s, want the instance's answer", code, body)
	}
	if code, body := get(http.MethodGet, nginx+"/api/v1/goods/1", ""); code != http.StatusOK {
		t.Errorf("/api/v1/goods/1 through nginx: %d %s", code, body)
	}
	for _, path := range []string{"/admin/strategy", "/metrics"} {
		if code, body := get(http.MethodGet, inst+path, ""); code != http.StatusOK {
			t.Errorf("%s on the instance's own port: %d %.80s", path, code, body)
		}
	}
}

// TestLifecycleHA runs the ha topology: up, every component healthy with
// one Redis master and one replica, one etcd leader, one ZooKeeper leader;
// a purchase through nginx with the redis strategy, whose lock goes to the
// Sentinel-monitored primary; down leaves nothing.
func TestLifecycleHA(t *testing.T) {
	requireTools(t)
	base, instances := testenv.Port(31200), 2
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()

	var progress bytes.Buffer
	t0 := time.Now()
	st, err := Up(ctx, Options{Dir: dir, BasePort: base, Topology: TopologyHA, Instances: instances, Binary: seckillBin, Backends: packagedBackends(), Out: &progress})
	if err != nil {
		t.Fatalf("up: %v\n%s", err, progress.String())
	}
	toHealthy := time.Since(t0)
	defer func() {
		_ = Down(context.Background(), dir, io.Discard)
		for _, c := range st.Components {
			if alive(c) {
				t.Errorf("%s (pid %d) still running after down", c.Name, c.Pid)
			}
		}
	}()
	want := RedisCount + 2 + 3*HAMembers + 1 + instances + 1
	if len(st.Components) != want {
		t.Fatalf("%d components, want %d: %+v", len(st.Components), want, st.Components)
	}
	loaded, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	if loaded.Topology != TopologyHA {
		t.Errorf("state.json topology %q, want %q", loaded.Topology, TopologyHA)
	}

	// Every component healthy; the roles of each replication group.
	_, cs, err := Status(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	var rss int64
	roles := map[Kind]map[string]int{}
	for _, c := range cs {
		rss += c.RSSBytes
		if !c.Healthy || c.RSSBytes <= 0 {
			t.Errorf("%s: healthy=%v (%s) rss=%d", c.Name, c.Healthy, c.Health, c.RSSBytes)
		}
		if roles[c.Kind] == nil {
			roles[c.Kind] = map[string]int{}
		}
		roles[c.Kind][c.Role]++
	}
	t.Logf("ha topology: healthy in %.1fs, total RSS %.0f MiB (%d components)", toHealthy.Seconds(), float64(rss)/(1<<20), len(cs))
	for _, tc := range []struct {
		kind Kind
		want map[string]int
	}{
		{server.KindRedisHA, map[string]int{"master": 1, "slave": 1}},
		{server.KindSentinel, map[string]int{"": HAMembers}},
		{server.KindEtcdMember, map[string]int{"leader": 1, "follower": HAMembers - 1}},
		{server.KindZKMember, map[string]int{"leader": 1, "follower": HAMembers - 1}},
		{server.KindRedis, map[string]int{"": RedisCount}},
		{KindInstance, map[string]int{"": instances}},
	} {
		if got := roles[tc.kind]; !maps.Equal(got, tc.want) {
			t.Errorf("%s roles %v, want %v", tc.kind, got, tc.want)
		}
	}
	if p, ok := loaded.Component(server.RedisPrimary); !ok || p.Addr != addr(base+6) {
		t.Errorf("redis-primary: %+v", p)
	}

	// The table and the JSON show the roles.
	out, code := runSeckill(t, "status", "--dir", dir, "--json")
	var js []map[string]any
	if err := json.Unmarshal([]byte(out), &js); err != nil || code != 0 || len(js) != want {
		t.Fatalf("seckill status --json: exit %d, %v:\n%s", code, err, out)
	}
	for _, c := range js {
		if c["name"] == server.RedisReplica && c["role"] != "slave" {
			t.Errorf("status --json: %v", c)
		}
	}
	if out, code := runSeckill(t, "status", "--dir", dir); code != 0 || !strings.Contains(out, "ROLE") || !strings.Contains(out, "topology:    ha") {
		t.Errorf("seckill status: exit %d:\n%s", code, out)
	}

	// env.sh names the Sentinels and every member.
	envsh, err := os.ReadFile(filepath.Join(dir, envFile))
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range []string{
		fmt.Sprintf("export %s=127.0.0.1:%d,127.0.0.1:%d,127.0.0.1:%d\n", config.EnvSentinels, base+8, base+9, base+10),
		fmt.Sprintf("export %s=%s\n", config.EnvRedisMaster, SentinelMaster),
		fmt.Sprintf("export %s=127.0.0.1:%d,127.0.0.1:%d,127.0.0.1:%d\n", testenv.EtcdEndpoints, base+22, base+24, base+26),
		fmt.Sprintf("export %s=127.0.0.1:%d,127.0.0.1:%d,127.0.0.1:%d\n", testenv.ZKServers, base+31, base+34, base+37),
	} {
		if !strings.Contains(string(envsh), w) {
			t.Errorf("env.sh lacks %q:\n%s", w, envsh)
		}
	}

	// The instances use the failover client: /healthz checks it, and the
	// redis strategy's lock goes to the primary.
	for _, u := range loaded.InstanceURLs() {
		body := instanceRequest(t, ctx, loaded, http.MethodGet, u+"/healthz", "")
		if !strings.Contains(body, `"redis-primary":"ok"`) {
			t.Errorf("%s/healthz: %s", u, body)
		}
		instanceRequest(t, ctx, loaded, http.MethodPut, u+"/admin/strategy", `{"name":"redis"}`)
	}
	purchaseThroughNginx(t, ctx, loaded)
	primary := redisClient(t, addr(base+6))
	stats, err := primary.Info(ctx, "commandstats").Result()
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(stats, "cmdstat_evalsha:") && !strings.Contains(stats, "cmdstat_eval:") {
		t.Errorf("redis-primary ran no script: the redis lock did not go through the failover client\n%s", stats)
	}

	// A member restarted keeps its data and rejoins its cluster; a
	// killed Sentinel is brought back by up; the roles stay one of each.
	for _, name := range []string{"etcd-2", "zookeeper-2", server.RedisReplica} {
		old := loadedInstance(t, dir, name)
		if err := Restart(ctx, dir, name); err != nil {
			t.Fatalf("restart %s: %v", name, err)
		}
		if c := loadedInstance(t, dir, name); c.Pid == old.Pid || !alive(c) {
			t.Errorf("restart %s: pid %d -> %d", name, old.Pid, c.Pid)
		}
	}
	if err := Signal(dir, "sentinel-3", syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	if _, err := Up(ctx, Options{Dir: dir, BasePort: base, Binary: seckillBin, Backends: packagedBackends()}); err != nil {
		t.Fatalf("up with sentinel-3 down: %v", err)
	}
	_, cs, err = Status(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	leaders := map[Kind]int{}
	for _, c := range cs {
		if !c.Healthy {
			t.Errorf("after the restarts: %s: %s", c.Name, c.Health)
		}
		if c.Role == "leader" || c.Role == "master" {
			leaders[c.Kind]++
		}
	}
	if want := map[Kind]int{server.KindRedisHA: 1, server.KindEtcdMember: 1, server.KindZKMember: 1}; !maps.Equal(leaders, want) {
		t.Errorf("after the restarts: leaders %v, want %v", leaders, want)
	}

	// seckill fault failover: the Sentinels move the primary.
	primaryC := loadedInstance(t, dir, "redis-primary")
	if out, code := runSeckill(t, "fault", "--dir", dir, "failover"); code != 0 || !strings.Contains(out, "the primary moved from "+primaryC.Addr) {
		t.Errorf("seckill fault failover: exit %d: %s", code, out)
	}

	// down stops everything.
	var downOut bytes.Buffer
	if err := Down(ctx, dir, &downOut); err != nil {
		t.Fatalf("down: %v", err)
	}
	if !strings.Contains(downOut.String(), fmt.Sprintf("stopped %d components", want)) {
		t.Errorf("down said %q", downOut.String())
	}
	checkNothingLeft(t, dir, base, instances)
}

// instanceRequest sends an admin-authenticated request to an instance's
// own port and returns the body, failing unless it answers 200.
func instanceRequest(t *testing.T, ctx context.Context, st *State, method, url, body string) string {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+st.AdminToken)
	resp, err := httpClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("%s %s: %s %s", method, url, resp.Status, b)
	}
	return string(b)
}

// TestFaults: each fault kind of `seckill fault` against a real component,
// heal, and the errors a user can hit.
func TestFaults(t *testing.T) {
	requireTools(t)
	base := testenv.Port(30800)
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	if _, err := Up(ctx, Options{Dir: dir, BasePort: base, Instances: 1, Binary: seckillBin, Backends: packagedBackends(), Out: io.Discard}); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = Down(context.Background(), dir, io.Discard) }()
	state := func(name string) string {
		return supervise.State(loadedInstance(t, dir, name).Pid)
	}
	// pause --for: stopped during, running after, nothing left on.
	done := make(chan string, 1)
	go func() { out, _ := runSeckill(t, "fault", "--dir", dir, "pause", "redis-2", "--for", "2s"); done <- out }()
	// The command needs a moment to start (longer on a loaded machine):
	// look for the stopped state within the 2 s of the pause.
	st := state("redis-2")
	for deadline := time.Now().Add(1800 * time.Millisecond); st != "T" && time.Now().Before(deadline); st = state("redis-2") {
		time.Sleep(20 * time.Millisecond)
	}
	if st != "T" {
		t.Errorf("redis-2 during the pause: state %s, want T (stopped)", st)
	}
	if out := <-done; !strings.Contains(out, "healed") {
		t.Errorf("pause --for: %s", out)
	}
	if st := state("redis-2"); st == "T" || st == "gone" {
		t.Errorf("redis-2 after the pause: state %s", st)
	}
	// kill without --for stays on: status shows it; heal starts it again.
	if out, code := runSeckill(t, "fault", "--dir", dir, "kill", "redis-3"); code != 0 {
		t.Fatalf("fault kill: exit %d: %s", code, out)
	}
	if out, _ := runSeckill(t, "status", "--dir", dir); !strings.Contains(out, "fault on:    kill redis-3") {
		t.Errorf("status does not show the fault:\n%s", out)
	}
	if out, code := runSeckill(t, "fault", "--dir", dir, "heal"); code != 0 || !strings.Contains(out, "healed: kill redis-3") {
		t.Errorf("fault heal: exit %d: %s", code, out)
	}
	if c := loadedInstance(t, dir, "redis-3"); !alive(c) {
		t.Error("redis-3 not running after heal")
	}
	if fs, _ := ActiveFaults(dir); len(fs) != 0 {
		t.Errorf("faults still on after heal: %v", fs)
	}
	// restart: a new pid.
	old := loadedInstance(t, dir, "redis-4")
	if out, code := runSeckill(t, "fault", "--dir", dir, "restart", "redis-4"); code != 0 || loadedInstance(t, dir, "redis-4").Pid == old.Pid {
		t.Errorf("fault restart: exit %d: %s", code, out)
	}
	// Persistence: with AOF always a key survives kill -9; without, the
	// node comes back empty (the Redlock restart story and its fix).
	for _, tc := range []struct {
		p    Persistence
		kept bool
	}{{PersistAlways, true}, {PersistNone, false}} {
		if err := SetRedisPersistence(ctx, dir, "redis-4", tc.p); err != nil {
			t.Fatal(err)
		}
		st, err := Load(dir)
		if err != nil {
			t.Fatal(err)
		}
		if got := st.RedisPersistence("redis-4"); got != tc.p {
			t.Errorf("recorded persistence %s, want %s", got, tc.p)
		}
		rc := redis.NewClient(&redis.Options{Addr: loadedInstance(t, dir, "redis-4").Addr})
		if err := rc.Set(ctx, "persist-probe", "1", time.Minute).Err(); err != nil {
			t.Fatal(err)
		}
		_ = rc.Close()
		if out, code := runSeckill(t, "fault", "--dir", dir, "kill", "redis-4"); code != 0 {
			t.Fatalf("fault kill: %s", out)
		}
		if out, code := runSeckill(t, "fault", "--dir", dir, "heal"); code != 0 {
			t.Fatalf("fault heal: %s", out)
		}
		rc = redis.NewClient(&redis.Options{Addr: loadedInstance(t, dir, "redis-4").Addr})
		n, err := rc.Exists(ctx, "persist-probe").Result()
		_ = rc.Close()
		if err != nil || (n == 1) != tc.kept {
			t.Errorf("persistence %s: probe key exists=%d (err %v) after kill -9 and start, want kept=%v", tc.p, n, err, tc.kept)
		}
	}
	if err := SetRedisPersistence(ctx, dir, "inst-1", PersistAlways); err == nil {
		t.Error("SetRedisPersistence on an instance: no error")
	}
	// Errors: one line naming the valid choices, or the topology needed.
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"freeze", "inst-1"}, 2, "valid: pause, kill, restart, partition, latency, clock, failover, heal"},
		{[]string{"partition", "inst-1/redis"}, 2, "seckill up --proxy"},
		{[]string{"pause", "redis-9"}, 2, "unknown component"},
		{[]string{"failover"}, 1, "needs the ha topology"},
		{[]string{"pause"}, 2, "usage"},
	} {
		out, code := runSeckill(t, append([]string{"fault", "--dir", dir}, tc.args...)...)
		if code != tc.code || !strings.Contains(out, tc.want) {
			t.Errorf("fault %v: exit %d: %s, want exit %d and %q", tc.args, code, out, tc.code, tc.want)
		}
	}
	// A pause left on is undone by down.
	if _, code := runSeckill(t, "fault", "--dir", dir, "pause", "redis-5"); code != 0 {
		t.Fatal("fault pause redis-5")
	}
	r5 := loadedInstance(t, dir, "redis-5")
	if err := Down(ctx, dir, io.Discard); err != nil {
		t.Fatal(err)
	}
	if alive(r5) {
		t.Error("a paused redis-5 survived down")
	}
}

// cleanEnv returns the environment without the variables starting with
// prefix.
func cleanEnv(prefix string) []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, prefix) {
			env = append(env, kv)
		}
	}
	return env
}

// packagedBackends are the backends a package manager installs.
func packagedBackends() []Backend {
	var out []Backend
	for _, b := range AllBackends {
		if sp, ok := server.ByGroup(b); ok && !sp.Optional {
			out = append(out, b)
		}
	}
	return out
}

// TestServerPortsBelowProxyStride: every server port of either topology
// is below B+50, the stride of the fault proxy's per-instance ports
// (P+200+50(K-1)): a server port at B+53 collided with the next
// instance's proxy of redis-3 (CI: "bind: address already in use").
func TestServerPortsBelowProxyStride(t *testing.T) {
	const base = 17000
	for _, topology := range Topologies() {
		for _, p := range stackPorts(topology, base, 1, false, false) {
			if p.port < base+offNginx && p.port-base >= proxySlot {
				t.Errorf("%s: %s on B+%d, at or past the proxy's stride of %d", topology, p.name, p.port-base, proxySlot)
			}
		}
	}
}

// checkNice: under the default priority (servers first) every component
// and its children (nginx's workers, the servers' own) run at the
// niceness of its kind: the stateless tiers at YieldNice, the servers at 0.
func checkNice(t *testing.T, st *State) {
	t.Helper()
	if st.PriorityName() != PriorityServersFirst {
		t.Fatalf("priority %q, want the default %q", st.PriorityName(), PriorityServersFirst)
	}
	for _, c := range st.Components {
		want := 0
		if slices.Contains(YieldingKinds, c.Kind) {
			want = YieldNice
		}
		pids := supervise.GroupMembers(c.Pid) // a component leads its own group
		if len(pids) == 0 {
			t.Errorf("%s: no process in its group %d", c.Name, c.Pid)
		}
		for _, pid := range pids {
			if got, err := supervise.Nice(pid); err != nil || got != want {
				t.Errorf("%s (%s): pid %d at niceness %d (%v), want %d", c.Name, c.Kind, pid, got, err, want)
			}
		}
	}
}
