package idleprobe_test

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/seckill-lab/seckill/stock/catalog"

	"github.com/seckill-lab/seckill/internal/cost"
	"github.com/seckill-lab/seckill/internal/idleprobe"
	"github.com/seckill-lab/seckill/internal/server"
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
		catalog.ServerRedis: addr, catalog.ServerEtcd: addr, catalog.ServerZooKeeper: addr, catalog.ServerConsul: addr,
		catalog.ServerMySQL: "root@tcp(" + addr + ")/seckill",
	}
	const budget = 300 * time.Millisecond
	for _, e := range server.IdleProbes() {
		t.Run(string(e.Server), func(t *testing.T) {
			t0 := time.Now()
			got := idleprobe.Run(context.Background(), []idleprobe.Target{{Probes: e, Addr: targets[e.Server]}}, idleprobe.Options{Samples: 5, Budget: budget})
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
