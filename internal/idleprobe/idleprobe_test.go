package idleprobe_test

import (
	"context"
	"github.com/seckill-lab/seckill/bench/costmodel"
	"net"
	"testing"
	"time"

	"github.com/seckill-lab/seckill/internal/cost"
	"github.com/seckill-lab/seckill/internal/idleprobe"
)

// TestServerDown: a server nobody answers for is an error entry within
// its budget, never a hang, whatever its client.
func TestServerDown(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // refused from now on
	targets := map[cost.Server]string{
		cost.Redis: addr, cost.Etcd: addr, cost.ZooKeeper: addr, cost.Consul: addr,
		cost.MySQL: "root@tcp(" + addr + ")/seckill",
	}
	const budget = 300 * time.Millisecond
	for _, e := range idleprobe.Table {
		t.Run(string(e.Server), func(t *testing.T) {
			t0 := time.Now()
			got := idleprobe.Run(context.Background(), []idleprobe.Target{{Server: e.Server, Addr: targets[e.Server]}}, idleprobe.Options{Samples: 5, Budget: budget})
			if d := time.Since(t0); d > 2*budget+2*time.Second {
				t.Errorf("took %v with a budget of %v", d, budget)
			}
			sp := got.Servers[string(e.Server)]
			if sp.Error == "" {
				t.Errorf("no error entry for a server that is down: %+v", sp)
			}
			if len(sp.Ops) != 0 {
				t.Errorf("figures for a server that is down: %+v", sp.Ops)
			}
		})
	}
}

// TestTable: every server the model prices has probes for the operations
// it prices with (costmodel.ServerOps), once each.
func TestTable(t *testing.T) {
	for s, ops := range costmodel.ServerOps {
		t.Run(string(s), func(t *testing.T) {
			var have []costmodel.Op
			for _, e := range idleprobe.Table {
				if e.Server == s {
					have = append(have, e.Ops...)
				}
			}
			seen := map[costmodel.Op]int{}
			for _, op := range have {
				seen[op]++
			}
			for _, op := range []costmodel.Op{ops.Read, ops.Write, ops.Release} {
				if seen[op] != 1 {
					t.Errorf("%s %s probed %d times, want once (have %v)", s, op, seen[op], have)
				}
			}
		})
	}
}
