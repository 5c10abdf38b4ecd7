package cluster

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"net"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/seckill-lab/seckill/bench/costmodel"
	"github.com/seckill-lab/seckill/internal/config"
	"github.com/seckill-lab/seckill/internal/cost"
	"github.com/seckill-lab/seckill/internal/idleprobe"
	"github.com/seckill-lab/seckill/internal/server"
	"github.com/seckill-lab/seckill/stock/catalog"
	"github.com/seckill-lab/seckill/stock/phase"
)

// fakeLock is a lock server of the test's own: a line echo on loopback,
// described the way the lab's servers are (docs/architecture.md, "Adding
// a lock server").
const fakeLock catalog.Server = "fakelock"

// fakeInfo is its catalogue entry.
var fakeInfo = catalog.ServerInfo{Name: fakeLock, Env: "SECKILL_FAKELOCK_ADDRS", Flag: "fakelock-addrs", FlagHelp: "comma-separated fake lock servers",
	Read: "ping", Write: "take", Release: "take", Groups: []string{"fakelock"}}

// fakeOps are its idle probes: one line sent and echoed.
var fakeOps = []idleprobe.Op[net.Conn]{
	{Op: "ping", Sample: idleprobe.Timed(echo)},
	{Op: "take", Sample: idleprobe.Timed(echo)},
}

func echo(_ context.Context, c net.Conn, key string) error {
	if _, err := fmt.Fprintln(c, key); err != nil {
		return err
	}
	_, err := bufio.NewReader(c).ReadString('\n')
	return err
}

func dialFake(ctx context.Context, addr string) (net.Conn, func(context.Context) error, error) {
	var d net.Dialer
	c, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, nil, err
	}
	return c, func(context.Context) error { return c.Close() }, nil
}

// fakeSpec is its description: one process on base+95, its address in
// its variable, its probes.
func fakeSpec() *server.Spec {
	idle := idleprobe.For(fakeLock, dialFake, fakeOps)
	const kind server.Kind = "fakelock"
	return &server.Spec{
		Position: 7, Group: server.Group(fakeLock), Optional: true, Image: "example.org/fakelock:1",
		Kinds: []server.KindSpec{{Kind: kind, Rank: 4}},
		Ports: func(base int, _ bool) []server.PortUse { return []server.PortUse{{Port: base + 95, Name: "fakelock"}} },
		Nodes: func(l server.Layout) []server.Node {
			return []server.Node{{Name: "fakelock", Kind: kind, Port: l.Base + 95, Bin: "fakelock"}}
		},
		Env: func(base int, _, has bool) [][2]string {
			v := ""
			if has {
				v = fmt.Sprintf("127.0.0.1:%d", base+95)
			}
			return [][2]string{{fakeInfo.Env, v}}
		},
		Idle: &idle,
	}
}

// fakeWorkload is its cluster workload.
var fakeWorkload = &workload{kind: "fakelock", set: named("fakelock"), port: 7000, ports: []corev1.ContainerPort{tcp("client", 7000)}, mount: "/data",
	container: func(set, string) corev1.Container {
		return corev1.Container{Name: "fakelock", Image: "example.org/fakelock:1", ReadinessProbe: tcpProbe(7000, 5)}
	}, cpu: [2]string{"10m", "100m"}, mem: [2]string{"16Mi", "64Mi"}, sec: seckillSecurity}

// TestFakeLockServer registers a lock server of the test's own, described
// once, and shows that the parts of the lab that iterate over the servers
// pick it up: the cost model and the meter, the idle probes, the
// instance's variable and flag, and the cluster's manifests; and that a
// description that misses a part is refused, naming it.
func TestFakeLockServer(t *testing.T) {
	// Not parallel: it changes the lab's lists of servers for its length.
	removeInfo, err := catalog.ExtendServers(fakeInfo)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(removeInfo)

	t.Run("a description that misses a part", func(t *testing.T) {
		for _, tc := range []struct {
			name string
			mod  func(*server.Spec)
			want string
		}{
			{"no idle probes", func(s *server.Spec) { s.Idle = nil }, "idle probes"},
			{"no env", func(s *server.Spec) { s.Env = nil }, "env"},
			{"no image", func(s *server.Spec) { s.Image = "" }, "image"},
			{"not in the catalogue", func(s *server.Spec) { s.Group = "nolock" }, "catalogue entry"},
			{"no probe of an operation the model prices", func(s *server.Spec) {
				idle := idleprobe.For(fakeLock, dialFake, fakeOps[:1])
				s.Idle = &idle
			}, "idle probe of take"},
		} {
			t.Run(tc.name, func(t *testing.T) {
				sp := fakeSpec()
				tc.mod(sp)
				remove, err := server.Register(sp)
				if err == nil {
					remove()
					t.Fatal("registered")
				}
				if !strings.Contains(err.Error(), tc.want) {
					t.Errorf("%v: want it to name %q", err, tc.want)
				}
			})
		}
		if _, err := catalog.ExtendServers(catalog.ServerInfo{Name: "nolock", Env: "SECKILL_NOLOCK", Read: "get"}); err == nil || !strings.Contains(err.Error(), "no write") {
			t.Errorf("a catalogue entry without its write operation: %v", err)
		}
	})

	remove, err := server.Register(fakeSpec())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(remove)

	t.Run("the cost model and the meter", func(t *testing.T) {
		if !slices.Contains(costmodel.Servers(), fakeLock) {
			t.Errorf("costmodel.Servers() = %v, no %s", costmodel.Servers(), fakeLock)
		}
		if ops, ok := costmodel.OpsOf(fakeLock); !ok || ops.Write != "take" {
			t.Errorf("OpsOf = %+v, %v", ops, ok)
		}
		m := cost.NewMeter()
		m.Record(phase.With(context.Background(), phase.Held), fakeLock, true)
		if got := m.Snapshot()[fakeLock][phase.Held]; got.RoundTrips != 1 || got.Writes != 1 {
			t.Errorf("meter: %+v, want one round trip, one write", got)
		}
	})

	t.Run("the idle probes", func(t *testing.T) {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer ln.Close()
		go func() {
			for {
				c, err := ln.Accept()
				if err != nil {
					return
				}
				go func() {
					defer c.Close()
					r := bufio.NewReader(c)
					for {
						l, err := r.ReadString('\n')
						if err != nil {
							return
						}
						if _, err := c.Write([]byte(l)); err != nil {
							return
						}
					}
				}()
			}
		}()
		i := slices.IndexFunc(server.IdleProbes(), func(p idleprobe.ServerProbes) bool { return p.Server == fakeLock })
		if i < 0 {
			t.Fatal("server.IdleProbes() has no fakelock")
		}
		got := idleprobe.Run(context.Background(), []idleprobe.Target{{Probes: server.IdleProbes()[i], Addr: ln.Addr().String()}}, idleprobe.Options{Samples: 5, Budget: 5 * time.Second})
		sp := got.Servers[string(fakeLock)]
		for _, op := range []string{"ping", "take"} {
			if o := sp.Ops[op]; sp.Error != "" || o.N == 0 || o.MS <= 0 {
				t.Errorf("%s: %+v (server: %q), want a figure", op, o, sp.Error)
			}
		}
	})

	t.Run("the instance's variable and flag", func(t *testing.T) {
		if !slices.Contains(config.EnvVars(), fakeInfo.Env) {
			t.Errorf("config.EnvVars() lacks %s", fakeInfo.Env)
		}
		c, err := config.FromEnv(func(k string) string {
			if k == fakeInfo.Env {
				return "127.0.0.1:1,127.0.0.1:2"
			}
			return ""
		})
		if err != nil || len(c.Servers[fakeLock]) != 2 {
			t.Errorf("FromEnv: %v, %v", c.Servers, err)
		}
		fs := flag.NewFlagSet("serve", flag.ContinueOnError)
		c.BindFlags(fs)
		if err := fs.Parse([]string{"--fakelock-addrs", "127.0.0.1:3"}); err != nil || !slices.Equal(c.Servers[fakeLock], []string{"127.0.0.1:3"}) {
			t.Errorf("--fakelock-addrs: %v, %v", c.Servers[fakeLock], err)
		}
	})

	t.Run("the manifests", func(t *testing.T) {
		if _, err := Render(); err == nil || !strings.Contains(err.Error(), "has no cluster workload") {
			t.Fatalf("a server without a workload rendered: %v", err)
		}
		addWorkloads(fakeWorkload)
		defer func() { workloads = slices.DeleteFunc(workloads, func(w *workload) bool { return w == fakeWorkload }) }()
		files, err := Render()
		if err != nil {
			t.Fatal(err)
		}
		for _, want := range []string{"kind: StatefulSet", "name: fakelock\n", "image: example.org/fakelock:1", fakeInfo.Env + "=fakelock-0.fakelock:7000"} {
			if !anyHas(files, want) {
				t.Errorf("no manifest of deploy/k8s has %q", want)
			}
		}
		env, err := ServerEnv(Topologies[0])
		if err != nil {
			t.Fatal(err)
		}
		if i := slices.IndexFunc(env, func(kv [2]string) bool { return kv[0] == fakeInfo.Env }); i < 0 || !strings.Contains(env[i][1], "fakelock-0.fakelock") {
			t.Errorf("ServerEnv: %v, want %s at the fakelock pod", env, fakeInfo.Env)
		}
	})
}

func anyHas(files map[string][]byte, s string) bool {
	for _, b := range files {
		if strings.Contains(string(b), s) {
			return true
		}
	}
	return false
}
