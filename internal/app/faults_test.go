package app_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/prometheus/procfs"

	"github.com/seckill-lab/seckill/internal/app"
	"github.com/seckill-lab/seckill/internal/config"
	"github.com/seckill-lab/seckill/internal/netfault"
	"github.com/seckill-lab/seckill/internal/testenv"
	"github.com/seckill-lab/seckill/stock/catalog"
)

// start runs one in-process instance over cfg and returns it with its URL.
// The caller sets every field it needs (see single).
func start(t *testing.T, cfg config.Config) (*app.Instance, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	in, err := app.New(ctx, cfg, 10*time.Second)
	cancel()
	if err != nil {
		testenv.Unavailable(t, "the service's backends", err)
	}
	srv := httptest.NewServer(in.Handler)
	t.Cleanup(func() { srv.Close(); in.Close() })
	return in, srv.URL
}

// single is the config of one instance "f1" with the test's admin token.
func single(cfg config.Config) config.Config {
	cfg.Instance, cfg.AdminToken, cfg.MaxQty, cfg.Strategy = "f1", token, 100, catalog.None
	return cfg
}

// proxy puts a Toxiproxy proxy on a free port in front of upstream.
func proxy(t *testing.T, name, upstream string) *netfault.Proxy {
	t.Helper()
	p, err := netfault.Start(name, "127.0.0.1:"+strconv.Itoa(testenv.FreePort(t)), upstream)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	return p
}

// TestStalledBackendAnswersWithinLockWait: when etcd or ZooKeeper stop
// answering (a stalled link: connections open, nothing delivered, as with
// a SIGSTOPped server), every purchase is still answered within lock_wait
// + 1s, and purchases sell again once the link heals.
func TestStalledBackendAnswersWithinLockWait(t *testing.T) {
	const lockWait = time.Second
	etcdP := proxy(t, "etcd", testenv.List(t, testenv.EtcdEndpoints)[0])
	zkP := proxy(t, "zookeeper", testenv.List(t, testenv.ZKServers)[0])
	_, url := start(t, single(config.Config{
		MySQLDSN: testenv.Get(t, testenv.MySQLDSN),
		Servers:  map[catalog.Server][]string{catalog.ServerEtcd: []string{etcdP.Addr()}, catalog.ServerZooKeeper: []string{zkP.Addr()}},
	}))
	in := []instance{{name: "f1", url: url}}
	cases := []struct {
		name  string
		proxy *netfault.Proxy
	}{{catalog.Etcd, etcdP}, {catalog.ZooKeeper, zkP}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			goods := goodsID()
			reset(t, in[0], goods, 100)
			setStrategy(t, in, map[string]any{"name": tc.name, "lock_wait": lockWait.String(), "lock_ttl": "2s"})
			buy := func() reply {
				return do(t, http.MethodPost, url+"/api/v1/purchase", "application/json", jsonBody(map[string]any{"goods_id": goods, "qty": 1, "user_id": "u"}), nil)
			}
			if r := buy(); r.status != http.StatusOK {
				t.Fatalf("before the stall: %d %v", r.status, r.body)
			}
			if err := tc.proxy.Stall(); err != nil {
				t.Fatal(err)
			}
			var wg sync.WaitGroup
			slow := make(chan string, 8)
			for i := range 8 {
				wg.Go(func() {
					start := time.Now()
					r := buy()
					if d := time.Since(start); d > lockWait+time.Second+testenv.LoadSlack {
						slow <- fmt.Sprintf("purchase %d answered %d %v after %v, past lock_wait + 1s + %s", i, r.status, r.body["error"], d, testenv.LoadSlack)
					} else if r.status == http.StatusOK {
						slow <- fmt.Sprintf("purchase %d sold through a stalled %s", i, tc.name)
					}
				})
			}
			wg.Wait()
			close(slow)
			for msg := range slow {
				t.Error(msg)
			}
			// etcd: the abandoned acquisitions' clean-up (delete the
			// waiter's key, then revoke its lease) fails against the
			// stalled server; no caller sees it, /metrics counts it.
			// (ZooKeeper's creates never completed, so there is nothing
			// to delete.)
			if tc.name == catalog.Etcd && !eventually(10*time.Second, func() bool { return cleanupErrors(t, url, tc.name) > 0 }) {
				t.Errorf("no %s clean-up error counted in /metrics while the link was stalled", tc.name)
			}
			if err := tc.proxy.Heal(context.Background()); err != nil {
				t.Fatal(err)
			}
			deadline := time.Now().Add(30 * time.Second)
			for {
				r := buy()
				if r.status == http.StatusOK {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("no sale within 30s of the heal: %d %v", r.status, r.body)
				}
				time.Sleep(200 * time.Millisecond)
			}
		})
	}
}

// connsTo counts this process's established TCP connections to port.
func connsTo(t *testing.T, port int) int {
	t.Helper()
	fs, err := procfs.NewDefaultFS()
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	//lint:ignore SA1019 the replacement (netlink sockets) is heavier than reading /proc/net/tcp{,6} for a test
	for _, read := range []func() (procfs.NetTCP, error){fs.NetTCP, fs.NetTCP6} {
		tab, err := read()
		if err != nil {
			continue
		}
		for _, e := range tab {
			if int(e.RemPort) == port && e.St == 1 { // 1: ESTABLISHED
				n++
			}
		}
	}
	return n
}

// TestNoLockerLeakAcrossSettings: every distinct lock_ttl builds new
// lockers (a ZooKeeper session, etcd sessions, a Redis subscription); the
// replaced setting's lockers are closed, so 50 setting changes leave the
// goroutines and the connections where they were.
func TestNoLockerLeakAcrossSettings(t *testing.T) {
	zkAddr := testenv.List(t, testenv.ZKServers)[0]
	_, zkPortS, _ := net.SplitHostPort(zkAddr)
	zkPort, _ := strconv.Atoi(zkPortS)
	inst, url := start(t, single(config.Config{
		MySQLDSN:   testenv.Get(t, testenv.MySQLDSN),
		RedisAddrs: testenv.List(t, testenv.RedisAddrs),
		Servers:    map[catalog.Server][]string{catalog.ServerEtcd: testenv.List(t, testenv.EtcdEndpoints), catalog.ServerZooKeeper: []string{zkAddr}},
	}))
	ins := []instance{{name: "f1", url: url}}
	goods := goodsID()
	reset(t, ins[0], goods, 1000)
	// One round: each locker strategy at one TTL, with a purchase, so every
	// locker really opened its sessions and subscriptions.
	round := func(i int) {
		for _, name := range []string{catalog.Redis, catalog.Etcd, catalog.ZooKeeper} {
			setStrategy(t, ins, map[string]any{"name": name, "lock_ttl": fmt.Sprintf("%dms", 2000+i*10)})
			r := do(t, http.MethodPost, url+"/api/v1/purchase", "application/json", jsonBody(map[string]any{"goods_id": goods, "qty": 1, "user_id": "u"}), nil)
			if r.status != http.StatusOK {
				t.Fatalf("%s, round %d: %d %v", name, i, r.status, r.body)
			}
		}
	}
	settle := func() (int, int) {
		setStrategy(t, ins, map[string]any{"name": catalog.SQLAtomic})
		deadline := time.Now().Add(10 * time.Second)
		for inst.Service.Lockers() > 0 && time.Now().Before(deadline) {
			time.Sleep(50 * time.Millisecond)
		}
		// The closed connections' goroutines exit: await a count that
		// stopped falling (the same in 5 samples 20 ms apart).
		n, same := runtime.NumGoroutine(), 0
		for same < 5 && time.Now().Before(deadline) {
			time.Sleep(20 * time.Millisecond)
			if m := runtime.NumGoroutine(); m < n {
				n, same = m, 0
			} else {
				same++
			}
		}
		return n, connsTo(t, zkPort)
	}
	round(0)
	g0, zk0 := settle()
	for i := 1; i <= 50/3+1; i++ {
		round(i)
	}
	g1, zk1 := settle()
	// A closed ZooKeeper client hangs up once the server answers its close
	// request (up to a second later on a loaded machine): await that.
	for deadline := time.Now().Add(10 * time.Second); zk1 > zk0 && time.Now().Before(deadline); {
		time.Sleep(50 * time.Millisecond)
		zk1 = connsTo(t, zkPort)
	}
	if n := inst.Service.Lockers(); n != 0 {
		t.Errorf("%d lockers still open after switching to a lock-free strategy", n)
	}
	if zk1 > zk0 {
		t.Errorf("ZooKeeper connections %d -> %d after %d setting changes: sessions leak", zk0, zk1, 3*(50/3+1))
	}
	if g1 > g0+20 {
		t.Errorf("goroutines %d -> %d after %d setting changes: lockers leak", g0, g1, 3*(50/3+1))
	}
	t.Logf("goroutines %d -> %d, ZooKeeper connections %d -> %d", g0, g1, zk0, zk1)
}

// TestFencedSalesAfterRedisRestart: the redis lock's token counter lives in
// a Redis without persistence. After a restart, fenced purchases go on
// selling instead of being refused as stale_lock against the goods' fence.
func TestFencedSalesAfterRedisRestart(t *testing.T) {
	srv := testenv.StartRedis(t)
	_, url := start(t, single(config.Config{
		MySQLDSN:   testenv.Get(t, testenv.MySQLDSN),
		RedisAddrs: []string{srv.Addr},
	}))
	ins := []instance{{name: "f1", url: url}}
	goods := goodsID()
	reset(t, ins[0], goods, 100)
	setStrategy(t, ins, map[string]any{"name": catalog.Redis, "fencing": true})
	buy := func() reply {
		return do(t, http.MethodPost, url+"/api/v1/purchase", "application/json", jsonBody(map[string]any{"goods_id": goods, "qty": 1, "user_id": "u"}), nil)
	}
	for i := range 20 {
		if r := buy(); r.status != http.StatusOK {
			t.Fatalf("purchase %d before the restart: %d %v", i, r.status, r.body)
		}
	}
	srv.Stop(t)
	srv.Start(t)
	ok := 0
	for i := range 20 {
		r := buy()
		if r.body["error"] == "stale_lock" {
			t.Fatalf("purchase %d after the restart refused as stale_lock: the token counter went back", i)
		}
		if r.status == http.StatusOK {
			ok++
		}
	}
	if ok < 19 { // the first may meet the client's reconnect
		t.Fatalf("%d of 20 fenced purchases sold after the restart", ok)
	}
	if a := audit(t, ins[0], goods); a.Oversold != 0 || a.LostUpdates != 0 {
		t.Fatalf("audit after the restart: %+v", a)
	}
}

// eventually polls cond every 100ms until it holds or d has passed.
func eventually(d time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(100 * time.Millisecond)
	}
	return true
}

// cleanupErrors sums the instance's seckill_errors_total series whose kind
// starts with server + "_" (etcd_delete, etcd_revoke, zookeeper_delete).
func cleanupErrors(t *testing.T, url, server string) float64 {
	t.Helper()
	resp, err := client.Get(url + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	sum := 0.0
	if f, ok := fams["seckill_errors_total"]; ok {
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "kind" && strings.HasPrefix(l.GetValue(), server+"_") {
					sum += m.GetCounter().GetValue()
				}
			}
		}
	}
	return sum
}

// TestUnknownStartingStrategy: the service, not the config, knows the
// strategies; an unknown starting one is refused with the valid names.
func TestUnknownStartingStrategy(t *testing.T) {
	cfg := single(config.Config{MySQLDSN: testenv.Get(t, testenv.MySQLDSN)})
	cfg.Strategy = "magic"
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	in, err := app.New(ctx, cfg, 10*time.Second)
	if err == nil {
		in.Close()
		t.Fatal("app.New accepted an unknown strategy")
	}
	if !errors.Is(err, catalog.ErrUnknownStrategy) || !strings.Contains(err.Error(), catalog.SQLAtomic) {
		t.Fatalf("err = %v, want ErrUnknownStrategy listing the valid names", err)
	}
}
