package stack

import (
	"fmt"
	"os"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/seckill-lab/seckill/internal/config"
	"github.com/seckill-lab/seckill/internal/server"
)

// TestInstanceProcs: each instance gets its share of the CPUs, at least 1.
func TestInstanceProcs(t *testing.T) {
	cases := []struct{ cpus, fleet, want int }{
		{2, 3, 1}, {2, 1, 2}, {2, 2, 1}, {8, 3, 2}, {16, 4, 4}, {1, 5, 1}, {4, 0, 4},
	}
	for _, c := range cases {
		if got := instanceProcs(c.cpus, c.fleet); got != c.want {
			t.Errorf("instanceProcs(%d CPUs, %d instances) = %d, want %d", c.cpus, c.fleet, got, c.want)
		}
	}
}

// TestInstanceEnv: an instance gets its CPU share as GOMAXPROCS unless
// ours sets one, and our SECKILL_DB_INFLIGHT and SECKILL_STREAM_GATHER, but never our server
// addresses (the stack's own replace them).
func TestInstanceEnv(t *testing.T) {
	st := &State{Dir: t.TempDir(), Strategy: "none"} // no server is dialled: the ports do not matter
	c := Component{Name: "inst-2", Kind: KindInstance, Addr: "127.0.0.1:0"}
	cases := []struct {
		name  string
		ours  map[string]string
		fleet int
		want  []string // KEY=VALUE present
		not   []string // KEY=VALUE absent
	}{
		{
			name:  "share",
			ours:  map[string]string{config.EnvMySQLDSN: "root@tcp(elsewhere:3306)/x"},
			fleet: 3,
			want:  []string{fmt.Sprintf("GOMAXPROCS=%d", max(1, runtime.NumCPU()/3)), "SECKILL_INSTANCE=inst-2"},
			not:   []string{config.EnvMySQLDSN + "=root@tcp(elsewhere:3306)/x"},
		},
		{
			name:  "ours",
			ours:  map[string]string{"GOMAXPROCS": "7", config.EnvDBInflight: "0", config.EnvStreamGather: "0"},
			fleet: 3,
			want:  []string{"GOMAXPROCS=7", config.EnvDBInflight + "=0", config.EnvStreamGather + "=0"},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			for _, k := range []string{"GOMAXPROCS", config.EnvDBInflight, config.EnvStreamGather} {
				unsetenv(t, k)
			}
			for k, v := range tc.ours {
				t.Setenv(k, v)
			}
			env := instanceEnv(st, c, "", tc.fleet)
			for _, kv := range tc.want {
				if !slices.Contains(env, kv) {
					t.Errorf("no %s in %v", kv, env)
				}
			}
			for _, kv := range tc.not {
				if slices.Contains(env, kv) {
					t.Errorf("%s leaked into the instance's environment", kv)
				}
			}
			if n := len(slices.DeleteFunc(slices.Clone(env), func(kv string) bool { return !strings.HasPrefix(kv, "GOMAXPROCS=") })); n != 1 {
				t.Errorf("%d GOMAXPROCS entries, want 1", n)
			}
		})
	}
}

// unsetenv removes key for the test's duration (t.Setenv restores it).
func unsetenv(t *testing.T, key string) {
	t.Helper()
	t.Setenv(key, "")
	if err := os.Unsetenv(key); err != nil {
		t.Fatal(err)
	}
}

// TestServeEnvStreamReplicas: redis-stream's sales wait for the replica
// (SECKILL_STREAM_REPLICAS=1) in the ha topology at fsync durability only:
// a single Redis has no replica to wait for, and the default durability
// keeps the lab's fast path.
func TestServeEnvStreamReplicas(t *testing.T) {
	for _, tc := range []struct {
		topology, durability string
		want                 string
	}{
		{TopologyHA, server.DurabilityFsync, "1"},
		{TopologyHA, server.DurabilityDefault, ""},
		{TopologyHA, "", ""},
		{TopologySingle, server.DurabilityFsync, ""},
	} {
		st := &State{Dir: t.TempDir(), Topology: tc.topology, Durability: tc.durability} // no server is dialled
		if got := st.serveEnv()[config.EnvStreamReplicas]; got != tc.want {
			t.Errorf("%s topology, durability %q: %s=%q, want %q", tc.topology, tc.durability, config.EnvStreamReplicas, got, tc.want)
		}
	}
}
