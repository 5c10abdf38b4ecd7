package stack

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/seckill-lab/seckill/internal/config"
	"github.com/seckill-lab/seckill/internal/testenv"
)

// instanceEnvOf reads variable key of the running instance name from
// /proc/PID/environ.
func instanceEnvOf(t *testing.T, dir, name, key string) string {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/environ", loadedInstance(t, dir, name).Pid))
	if err != nil {
		t.Fatal(err)
	}
	for _, kv := range bytes.Split(b, []byte{0}) {
		if k, v, ok := strings.Cut(string(kv), "="); ok && k == key {
			return v
		}
	}
	return ""
}

// ping sends PING to a Redis at hostport on a new connection and returns
// how long it took; err when no answer came within 1 s.
func ping(ctx context.Context, hostport string) (time.Duration, error) {
	rc := redis.NewClient(&redis.Options{Addr: hostport, DialTimeout: time.Second, ReadTimeout: time.Second, MaxRetries: -1})
	defer rc.Close()
	t0 := time.Now()
	err := rc.Ping(ctx).Err()
	return time.Since(t0), err
}

// TestProxy: `up --proxy` puts Toxiproxy between every instance and every
// server; partition and latency act on one instance's link only, heal and
// scale keep the proxies right, and down stops it.
func TestProxy(t *testing.T) {
	requireTools(t)
	base := testenv.Port(29000)
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	st, err := Up(ctx, Options{Dir: dir, BasePort: base, Instances: 2, Proxy: true, Binary: seckillBin, Backends: packagedBackends(), Out: io.Discard})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = Down(context.Background(), dir, io.Discard) }()
	servers := 8    // redis-1..5, etcd, zookeeper, mariadb
	const probe = 1 // the round-trip probe's proxy
	if err := checkProxy(st.ProxyAddr(), 2*servers+probe); err != nil {
		t.Fatal(err)
	}
	// Each instance dials its servers on its own proxy ports, on
	// 127.0.0.1 (the one loopback address every platform has).
	for k, name := range []string{"inst-1", "inst-2"} {
		shift := proxyShift(k + 1)
		for key, port := range map[string]int{config.EnvRedisAddrs: base + 1, config.EnvMySQLDSN: base + 40, testenv.EtcdEndpoints: base + 20, testenv.ZKServers: base + 30} {
			v := instanceEnvOf(t, dir, name, key)
			if !strings.Contains(v, addr(port+shift)) || strings.Contains(v, addr(port)+",") || strings.HasSuffix(v, addr(port)) || strings.Contains(v, addr(port)+")") {
				t.Errorf("%s: %s=%q, want its servers at their port + %d", name, key, v, shift)
			}
		}
		if v := instanceEnvOf(t, dir, name, config.EnvProxyShift); v != strconv.Itoa(shift) {
			t.Errorf("%s: %s=%q, want %d", name, config.EnvProxyShift, v, shift)
		}
	}
	redis1 := func(k int) string { return addr(base + 1 + proxyShift(k)) }
	if _, err := ping(ctx, redis1(1)); err != nil {
		t.Fatalf("redis-1 through inst-1's proxy: %v", err)
	}

	// A partition cuts inst-1 from redis-1 only, both ways; heal undoes it.
	if out, code := runSeckill(t, "fault", "--dir", dir, "partition", "inst-1/redis"); code != 0 {
		t.Fatalf("fault partition: exit %d: %s", code, out)
	}
	if _, err := ping(ctx, redis1(1)); err == nil {
		t.Error("inst-1 reaches redis-1 through a partition")
	}
	if _, err := ping(ctx, redis1(2)); err != nil {
		t.Errorf("inst-2 cut off from redis-1 by inst-1's partition: %v", err)
	}
	if out, _ := runSeckill(t, "status", "--dir", dir); !strings.Contains(out, "fault on:    partition inst-1/redis") {
		t.Errorf("status does not show the partition:\n%s", out)
	}
	if out, code := runSeckill(t, "fault", "--dir", dir, "heal"); code != 0 || !strings.Contains(out, "healed: partition inst-1/redis") {
		t.Errorf("heal: exit %d: %s", code, out)
	}
	if _, err := ping(ctx, redis1(1)); err != nil {
		t.Errorf("inst-1 to redis-1 after heal: %v", err)
	}

	// Latency slows inst-2's answers from redis-2 only, for --for.
	done := make(chan string, 1)
	go func() {
		out, _ := runSeckill(t, "fault", "--dir", dir, "latency", "inst-2/redis-2", "--delay", "300ms", "--for", "4s")
		done <- out
	}()
	redis2 := func(k int) string { return addr(base + 2 + proxyShift(k)) }
	// The command needs a moment to start (longer on a loaded machine):
	// ping until the delay shows, bounded by the command's own life (it
	// heals after --for 4s and exits), not by a guess at its start-up.
	d, err := ping(ctx, redis2(2))
	for ; len(done) == 0 && (err != nil || d < 300*time.Millisecond) && ctx.Err() == nil; d, err = ping(ctx, redis2(2)) {
		time.Sleep(50 * time.Millisecond)
	}
	if err != nil || d < 300*time.Millisecond {
		t.Errorf("inst-2 to redis-2 under +300ms: %s, %v", d, err)
	}
	if d, err := ping(ctx, redis2(1)); err != nil || d >= 300*time.Millisecond {
		t.Errorf("inst-1 to redis-2, not under the fault: %s, %v", d, err)
	}
	if out := <-done; !strings.Contains(out, "healed") {
		t.Errorf("latency --for: %s", out)
	}
	if d, err := ping(ctx, redis2(2)); err != nil || d >= 300*time.Millisecond {
		t.Errorf("inst-2 to redis-2 after the latency ended: %s, %v", d, err)
	}

	// A clock jump (emulated) shortens every TTL on one node by the offset
	// and expires the keys with less left.
	rc := redis.NewClient(&redis.Options{Addr: addr(base + 3)})
	defer rc.Close()
	rc.Set(ctx, "long", "1", 10*time.Second)
	rc.Set(ctx, "short", "1", time.Second)
	rc.Set(ctx, "forever", "1", 0)
	out, code := runSeckill(t, "fault", "--dir", dir, "clock", "redis-3", "--offset", "3s")
	if code != 0 || !strings.Contains(out, "EMULATED") || !strings.Contains(out, "1 keys' TTL shortened, 1 expired") {
		t.Errorf("fault clock: exit %d: %s", code, out)
	}
	if ttl := rc.PTTL(ctx, "long").Val(); ttl > 7*time.Second || ttl < 5*time.Second {
		t.Errorf("long's TTL after a 3 s jump: %s, want about 7s", ttl)
	}
	if rc.Exists(ctx, "short").Val() != 0 || rc.Exists(ctx, "forever").Val() != 1 {
		t.Error("after the jump: want short expired, forever kept")
	}

	// Bad input: one line, nothing changed.
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"partition", "inst-9/redis"}, "the instances are inst-1, inst-2"},
		{[]string{"partition", "inst-1/nosuch"}, "SERVER one of redis, redlock"},
		{[]string{"latency", "inst-1"}, "SERVER one of redis, redlock"},
		{[]string{"clock", "inst-1"}, "applies to a Redis node"},
		{[]string{"latency", "mysql", "--delay", "-1s"}, "negative"},
	} {
		out, code := runSeckill(t, append([]string{"fault", "--dir", dir}, tc.args...)...)
		if code == 0 || !strings.Contains(out, tc.want) {
			t.Errorf("fault %v: exit %d: %s, want an error with %q", tc.args, code, out, tc.want)
		}
	}
	if fs, _ := ActiveFaults(dir); len(fs) != 0 {
		t.Errorf("bad input left faults on: %v", fs)
	}

	// A killed instance comes back with the fleet's current strategy, not
	// the stack's starting one (instance-crash oversold before this).
	for _, inst := range st.Instances() {
		if err := st.adminJSON(ctx, "PUT", inst.URL(), "/admin/strategy", map[string]any{"name": "redis", "lock_ttl": "2s"}, nil); err != nil {
			t.Fatal(err)
		}
	}
	if out, code := runSeckill(t, "fault", "--dir", dir, "kill", "inst-2", "--for", "500ms"); code != 0 {
		t.Fatalf("fault kill inst-2: %s", out)
	}
	var cfg map[string]any
	if err := st.adminJSON(ctx, "GET", loadedInstance(t, dir, "inst-2").URL(), "/admin/strategy", nil, &cfg); err != nil {
		t.Fatal(err)
	}
	if cfg["name"] != "redis" || cfg["lock_ttl"] != "2s" {
		t.Errorf("inst-2 after a kill and a start: strategy %v, want the fleet's redis with lock_ttl 2s", cfg)
	}

	// Scale: the proxy follows the instances.
	if _, err := Scale(ctx, dir, 3); err != nil {
		t.Fatal(err)
	}
	if err := checkProxy(st.ProxyAddr(), 3*servers+probe); err != nil {
		t.Error(err)
	}
	if v := instanceEnvOf(t, dir, "inst-3", config.EnvRedisAddrs); !strings.Contains(v, addr(base+1+proxyShift(3))) {
		t.Errorf("inst-3 after scale: %s=%q", config.EnvRedisAddrs, v)
	}
	if _, err := Scale(ctx, dir, 2); err != nil {
		t.Fatal(err)
	}
	if err := checkProxy(st.ProxyAddr(), 2*servers+probe); err != nil {
		t.Error(err)
	}

	// A partition left on is undone by down, with the proxy.
	if out, code := runSeckill(t, "fault", "--dir", dir, "partition", "mysql"); code != 0 {
		t.Fatalf("fault partition mysql: %s", out)
	}
	if err := Down(ctx, dir, io.Discard); err != nil {
		t.Fatal(err)
	}
	checkNothingLeft(t, dir, base, 3)
	if fs, _ := ActiveFaults(dir); len(fs) != 0 {
		t.Errorf("faults on after down: %v", fs)
	}
}
