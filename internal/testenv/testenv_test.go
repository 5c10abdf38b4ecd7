package testenv

import (
	"strconv"
	"testing"

	"github.com/seckill-lab/seckill/internal/ports"
	"github.com/seckill-lab/seckill/stock/catalog"
)

// TestFreePortAvoidsSuite: FreePort never hands out a port of the test
// stacks' ranges as this run shifts them (TestRTT's stack lies inside
// FreeRange unshifted), and always one inside FreeRange.
func TestFreePortAvoidsSuite(t *testing.T) {
	for _, shift := range []int{0, 400, -600} {
		t.Run(strconv.Itoa(shift), func(t *testing.T) {
			t.Setenv(PortShiftVar, strconv.Itoa(shift))
			for range 300 {
				p := FreePort(t)
				if p < ports.FreeRange.Lo || p > ports.FreeRange.Hi {
					t.Fatalf("port %d outside %s", p, ports.FreeRange)
				}
				for _, r := range ports.Suite {
					if p >= r.Lo+shift && p <= r.Hi+shift {
						t.Fatalf("port %d is in the suite's range %d-%d (shift %d)", p, r.Lo+shift, r.Hi+shift, shift)
					}
				}
			}
		})
	}
}

// TestServerVariablesAgree: the lock servers' variables here are the
// catalogue's.
func TestServerVariablesAgree(t *testing.T) {
	for name, v := range map[catalog.Server]string{catalog.ServerEtcd: EtcdEndpoints, catalog.ServerZooKeeper: ZKServers, catalog.ServerConsul: ConsulAddrs, catalog.ServerRedis: RedisAddrs, catalog.ServerMySQL: MySQLDSN} {
		if info, ok := catalog.ServerOf(name); !ok || info.Env != v {
			t.Errorf("%s: testenv says %s, the catalogue %+v", name, v, info)
		}
	}
}
