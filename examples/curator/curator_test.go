package curator_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/seckill-lab/seckill/bench"
	"github.com/seckill-lab/seckill/internal/testenv"
)

// The tests build the service (build.sh into a temporary directory) and
// start it against the test stack's ZooKeeper and MariaDB
// (SECKILL_ZK_SERVERS, SECKILL_MYSQL_DSN), in a database and under a lock
// path of their own. Without javac or the Debian jars they skip, or fail
// under CI=true.

// basePort is the first of the instances' ports (ports.Suite).
var basePort = testenv.Port(28500)

const (
	database = "seckill_curator_test"
	lockRoot = "/seckill-curator-test/locks"
	token    = "curator-test-token"
)

var (
	buildOnce sync.Once
	builtJar  string
	buildErr  error
	buildDir  string
)

func TestMain(m *testing.M) {
	code := m.Run()
	if buildDir != "" {
		os.RemoveAll(buildDir)
	}
	os.Exit(code)
}

// jar builds the service once per run and returns its jar.
func jar(t *testing.T) string {
	t.Helper()
	if _, err := exec.LookPath("javac"); err != nil {
		testenv.Unavailable(t, "javac", fmt.Errorf("%w (make deps installs default-jdk-headless)", err))
	}
	for _, j := range []string{"curator-recipes", "mariadb-java-client", "gson"} {
		if _, err := os.Stat("/usr/share/java/" + j + ".jar"); err != nil {
			testenv.Unavailable(t, "the Debian jars", fmt.Errorf("%w (make deps installs them)", err))
		}
	}
	buildOnce.Do(func() {
		buildDir, buildErr = os.MkdirTemp("", "seckill-curator-")
		if buildErr != nil {
			return
		}
		out, err := exec.Command("./build.sh", buildDir).CombinedOutput()
		if err != nil {
			buildErr = fmt.Errorf("build.sh: %w\n%s", err, out)
			return
		}
		builtJar = filepath.Join(buildDir, "seckill-curator.jar")
	})
	if buildErr != nil {
		t.Fatalf("build the service: %v", buildErr)
	}
	return builtJar
}

// instance is one running service.
type instance struct {
	name, url, log string
	exited         chan error
}

// launch starts the service on port with args after the test stack's
// servers; await waits until it answers. Cleanup kills it.
func launch(t *testing.T, port int, name string, args ...string) *instance {
	t.Helper()
	zk := testenv.Get(t, testenv.ZKServers)
	dsn := testenv.Get(t, testenv.MySQLDSN)
	addr := "127.0.0.1:" + strconv.Itoa(port)
	logPath := filepath.Join(t.TempDir(), name+".log")
	logf, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { logf.Close() })
	argv := append([]string{"-Xmx128m", "-XX:+UseSerialGC", "-jar", jar(t), "--listen", addr, "--zk", zk, "--mysql", dsn,
		"--database", database, "--lock-root", lockRoot, "--instance", name}, args...)
	cmd := exec.Command("java", argv...)
	cmd.Env = append(os.Environ(), "SECKILL_ADMIN_TOKEN="+token)
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", name, err)
	}
	in := &instance{name: name, url: "http://" + addr, log: logPath, exited: make(chan error, 1)}
	go func() { in.exited <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		in.exited <- <-in.exited
	})
	return in
}

// await waits until the instance's /healthz answers 200; it fails the
// test when the process exits first or the JVM takes too long.
func (in *instance) await(t *testing.T) {
	t.Helper()
	deadline := time.Now().Add(30*time.Second + testenv.LoadSlack)
	for {
		select {
		case err := <-in.exited:
			in.exited <- err
			t.Fatalf("%s exited before it answered (%v):\n%s", in.name, err, in.logText())
		default:
		}
		resp, err := http.Get(in.url + "/healthz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: /healthz did not answer 200 in time (%v):\n%s", in.name, err, in.logText())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func (in *instance) logText() string {
	b, _ := os.ReadFile(in.log)
	return string(b)
}

var client = &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 64}}

// call sends a request and decodes the JSON answer.
func call(t *testing.T, method, url, key, auth string, body any) (int, map[string]any) {
	t.Helper()
	code, m, err := try(method, url, key, auth, body)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	return code, m
}

func try(method, url, key, auth string, body any) (int, map[string]any, error) {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return 0, nil, err
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, url, rd)
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	if key != "" {
		req.Header.Set("Idempotency-Key", key)
	}
	if auth != "" {
		req.Header.Set("Authorization", "Bearer "+auth)
	}
	resp, err := client.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		return 0, nil, err
	}
	if ct := resp.Header.Get("Content-Type"); ct != "application/json" {
		return 0, nil, fmt.Errorf("content type %q: %s", ct, raw)
	}
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		return 0, nil, fmt.Errorf("decode %s: %w", raw, err)
	}
	return resp.StatusCode, m, nil
}

// wantError checks an error answer: its status and code, and no field
// but error and detail.
func wantError(t *testing.T, what string, code int, m map[string]any, status int, errCode string) {
	t.Helper()
	if code != status || m["error"] != errCode {
		t.Errorf("%s: %d %v, want %d %s", what, code, m, status, errCode)
	}
	for k := range m {
		if k != "error" && k != "detail" {
			t.Errorf("%s: field %q in an error answer %v", what, k, m)
		}
	}
}

func num(m map[string]any, k string) int64 {
	f, _ := m[k].(float64)
	return int64(f)
}

// receiptFields are the fields a 200 purchase may carry.
var receiptFields = []string{"goods_id", "qty", "remaining", "request_id", "order_id", "instance", "strategy", "lock_wait_ms", "replayed"}

// TestCuratorService: the four calls and /healthz on a locked instance,
// then 200 one-unit purchases of a stock of 50, 50 at a time, over two
// locked instances: exactly 50 sold, 50 orders, each a 200's key. The
// --no-lock instance sells under the same contract; what it oversells is
// logged, not asserted (a race).
func TestCuratorService(t *testing.T) {
	jar(t)
	goods := time.Now().UnixNano()%1_000_000_000 + 1_000_000_000
	// The three JVMs boot side by side.
	a := launch(t, basePort+1, "curator-test-1")
	b := launch(t, basePort+2, "curator-test-2")
	nolock := launch(t, basePort+3, "curator-test-nolock", "--no-lock")
	for _, in := range []*instance{a, b, nolock} {
		in.await(t)
	}

	code, m := call(t, "GET", a.url+"/healthz", "", "", nil)
	if code != 200 || m["status"] != "ok" || len(m) != 1 {
		t.Errorf("healthz: %d %v", code, m)
	}

	// /admin/reset: the token, then the goods.
	code, m = call(t, "POST", a.url+"/admin/reset", "", "", map[string]any{"goods_id": goods, "stock": 5})
	wantError(t, "reset without the token", code, m, 401, "unauthorized")
	code, m = call(t, "POST", a.url+"/admin/reset", "", token, map[string]any{"goods_id": goods, "stock": 5})
	if code != 200 || num(m, "goods_id") != goods || num(m, "stock") != 5 || len(m) != 2 {
		t.Fatalf("reset: %d %v", code, m)
	}
	code, m = call(t, "GET", fmt.Sprintf("%s/api/v1/goods/%d", b.url, goods), "", "", nil)
	if code != 200 || num(m, "id") != goods || num(m, "stock") != 5 || num(m, "sold") != 0 || len(m) != 3 {
		t.Errorf("goods after reset: %d %v", code, m)
	}
	code, m = call(t, "GET", fmt.Sprintf("%s/api/v1/goods/%d", a.url, goods+1), "", "", nil)
	wantError(t, "goods of no reset", code, m, 404, "goods_not_found")

	// /api/v1/purchase: a sale, its replay, the key reused, the errors.
	key := fmt.Sprintf("curator-test-%d-one", goods)
	buy := map[string]any{"goods_id": goods, "qty": 2, "user_id": "alice"}
	code, m = call(t, "POST", a.url+"/api/v1/purchase", key, "", buy)
	if code != 200 || num(m, "goods_id") != goods || num(m, "qty") != 2 || num(m, "remaining") != 3 ||
		m["request_id"] != key || m["instance"] != "curator-test-1" || m["strategy"] != "curator" || m["replayed"] != nil {
		t.Fatalf("purchase: %d %v", code, m)
	}
	if _, ok := m["lock_wait_ms"].(float64); !ok {
		t.Errorf("purchase: lock_wait_ms is no number: %v", m)
	}
	for k := range m {
		if !slices.Contains(receiptFields, k) {
			t.Errorf("purchase: field %q: %v", k, m)
		}
	}
	order := num(m, "order_id")
	code, m = call(t, "POST", b.url+"/api/v1/purchase", key, "", buy)
	if code != 200 || m["replayed"] != true || num(m, "order_id") != order || num(m, "remaining") != 3 {
		t.Errorf("replay on the other instance: %d %v (order %d)", code, m, order)
	}
	code, m = call(t, "POST", a.url+"/api/v1/purchase", key, "", map[string]any{"goods_id": goods, "qty": 1, "user_id": "alice"})
	wantError(t, "key reused for another qty", code, m, 422, "idempotency_key_reused")
	code, m = call(t, "POST", a.url+"/api/v1/purchase", key+"-big", "", map[string]any{"goods_id": goods, "qty": 4, "user_id": "bob"})
	wantError(t, "more than the stock", code, m, 409, "sold_out")
	code, m = call(t, "POST", a.url+"/api/v1/purchase", key+"-none", "", map[string]any{"goods_id": goods + 1, "qty": 1, "user_id": "bob"})
	wantError(t, "goods of no reset", code, m, 404, "goods_not_found")
	for name, body := range map[string]any{
		"qty 0":        map[string]any{"goods_id": goods, "qty": 0, "user_id": "bob"},
		"no user":      map[string]any{"goods_id": goods, "qty": 1},
		"long user":    map[string]any{"goods_id": goods, "qty": 1, "user_id": strings.Repeat("u", 65)},
		"extra field":  map[string]any{"goods_id": goods, "qty": 1, "user_id": "bob", "price": 1},
		"qty a string": map[string]any{"goods_id": goods, "qty": "1", "user_id": "bob"},
		"not object":   []int{1},
	} {
		code, m = call(t, "POST", a.url+"/api/v1/purchase", key+"-bad", "", body)
		wantError(t, name, code, m, 400, "invalid_request")
	}
	code, m = call(t, "POST", a.url+"/api/v1/purchase", "", "", buy)
	wantError(t, "no Idempotency-Key", code, m, 400, "invalid_request")

	// /admin/orders and the goods' sold count.
	code, m = call(t, "GET", fmt.Sprintf("%s/admin/orders?goods_id=%d", b.url, goods), "", token, nil)
	if ids, _ := m["request_ids"].([]any); code != 200 || num(m, "goods_id") != goods || len(ids) != 1 || ids[0] != key {
		t.Errorf("orders: %d %v", code, m)
	}
	code, m = call(t, "GET", fmt.Sprintf("%s/admin/orders?goods_id=%d", b.url, goods), "", "", nil)
	wantError(t, "orders without the token", code, m, 401, "unauthorized")
	code, m = call(t, "GET", fmt.Sprintf("%s/api/v1/goods/%d", a.url, goods), "", "", nil)
	if code != 200 || num(m, "stock") != 3 || num(m, "sold") != 2 {
		t.Errorf("goods after a sale of 2: %d %v", code, m)
	}

	// Under load: the locked pair sells exactly the stock.
	locked := rush(t, goods, []*instance{a, b}, 50, 200, 50)
	if locked.sold != 50 || locked.stock != 0 || locked.orders != 50 || locked.ok != 50 {
		t.Errorf("locked, stock 50: %+v, want 50 sold, 50 orders, 50 answers 200, stock 0", locked)
	}
	free := rush(t, goods+2, []*instance{nolock}, 50, 200, 50)
	t.Logf("--no-lock, stock 50, 200 buyers 50 at a time: %+v (oversold %d, lost updates %d)",
		free, max(0, free.sold-50), free.sold-(50-free.stock))
	if free.orders != free.ok {
		t.Errorf("--no-lock: %d answers 200 but %d orders", free.ok, free.orders)
	}
	underTheBench(t, goods+3, a, nolock)
}

// underTheBench loads the service with the lab's bench, through the
// contract alone (bench.Options.Services): Curator's mutex oversells in
// none of 2 runs and every 2xx has its order; --no-lock oversells in at
// least one of up to 3 (a race: the runs stop at the first that does).
func underTheBench(t *testing.T, goods int64, locked, nolock *instance) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	o := bench.Options{Stock: 50, Requests: 150, Concurrency: 25, Repeat: 2, GoodsID: goods, Seed: 1,
		CalibrateRequests: -1, Warmup: -1, RunTimeout: time.Minute,
		Services: []bench.Service{{Name: "curator", URL: locked.url, Token: token}}}
	rep, err := bench.Run(ctx, o)
	if err != nil {
		t.Fatalf("bench of the Curator service: %v", err)
	}
	for _, r := range rep.Runs {
		if r.Oversold != 0 || r.Orders != r.OK || r.OK != o.Stock {
			t.Errorf("curator, run %d: oversold %d, %d answers 2xx, %d orders; want 0 and the stock (%d) sold", r.Repeat, r.Oversold, r.OK, r.Orders, o.Stock)
		}
		for _, inv := range r.Invariants {
			if inv.Applicable && !inv.Pass {
				t.Errorf("curator, run %d: invariant %s failed: %+v", r.Repeat, inv.Name, inv)
			}
		}
	}
	o.Services, o.Repeat = []bench.Service{{Name: "curator-no-lock", URL: nolock.url, Token: token, Unprotected: true}}, 1
	for try := 1; try <= 3; try++ {
		o.Seed = int64(try)
		rep, err := bench.Run(ctx, o)
		if err != nil {
			t.Fatalf("bench of the --no-lock service: %v", err)
		}
		if r := rep.Runs[0]; r.Oversold > 0 {
			t.Logf("--no-lock under the bench, try %d: oversold %d, lost updates %d", try, r.Oversold, r.LostUpdates)
			return
		}
	}
	t.Error("--no-lock oversold in none of 3 bench runs of 150 purchases, 25 at a time, on a stock of 50")
}

// outcome is what a rush sold.
type outcome struct {
	ok, soldOut  int   // answers 200 and 409
	sold, stock  int64 // the goods' sold and stock after
	orders       int   // orders of the goods
	ordersAre200 bool  // every order is a key answered 200, and back
}

// rush resets goods to stock, sends n one-unit purchases, c at a time,
// round robin over ins, and reads back the goods and its orders. Every
// answer must be 200 or 409, and the orders the 200s' keys.
func rush(t *testing.T, goods int64, ins []*instance, stock, n, c int) outcome {
	t.Helper()
	code, m := call(t, "POST", ins[0].url+"/admin/reset", "", token, map[string]any{"goods_id": goods, "stock": stock})
	if code != 200 {
		t.Fatalf("reset %d: %d %v", goods, code, m)
	}
	var (
		mu   sync.Mutex
		out  outcome
		keys = map[string]bool{}
		bad  []string
		sem  = make(chan struct{}, c)
		wg   sync.WaitGroup
	)
	for i := range n {
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			key := fmt.Sprintf("curator-rush-%d-%d", goods, i)
			code, m, err := try("POST", ins[i%len(ins)].url+"/api/v1/purchase", key, "",
				map[string]any{"goods_id": goods, "qty": 1, "user_id": "u" + strconv.Itoa(i)})
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err != nil:
				bad = append(bad, err.Error())
			case code == 200:
				out.ok++
				keys[key] = true
			case code == 409 && m["error"] == "sold_out":
				out.soldOut++
			default:
				bad = append(bad, fmt.Sprintf("%d %v", code, m))
			}
		}()
	}
	wg.Wait()
	if len(bad) > 0 {
		t.Errorf("goods %d: %d answers neither 200 nor 409, e.g. %s", goods, len(bad), bad[0])
	}
	code, m = call(t, "GET", fmt.Sprintf("%s/api/v1/goods/%d", ins[0].url, goods), "", "", nil)
	if code != 200 {
		t.Fatalf("goods %d: %d %v", goods, code, m)
	}
	out.sold, out.stock = num(m, "sold"), num(m, "stock")
	code, m = call(t, "GET", fmt.Sprintf("%s/admin/orders?goods_id=%d", ins[0].url, goods), "", token, nil)
	ids, _ := m["request_ids"].([]any)
	if code != 200 {
		t.Fatalf("orders %d: %d %v", goods, code, m)
	}
	out.orders = len(ids)
	out.ordersAre200 = len(ids) == len(keys)
	for _, id := range ids {
		s, _ := id.(string)
		out.ordersAre200 = out.ordersAre200 && keys[s]
	}
	if !out.ordersAre200 {
		t.Errorf("goods %d: the orders (%d) are not the keys answered 200 (%d)", goods, len(ids), len(keys))
	}
	return out
}

// TestCuratorStartupErrors: a ZooKeeper or a MariaDB that does not answer
// ends the service at start with one line on stderr and a non-zero exit
// code.
func TestCuratorStartupErrors(t *testing.T) {
	j := jar(t)
	zk := testenv.Get(t, testenv.ZKServers)
	dsn := testenv.Get(t, testenv.MySQLDSN)
	nobody := "127.0.0.1:" + strconv.Itoa(testenv.FreePort(t))
	for _, tc := range []struct {
		name, zk, mysql, want string
		port                  int
	}{
		{"zookeeper", nobody, dsn, "ZooKeeper at " + nobody + " did not answer", basePort + 8},
		{"mariadb", zk, "root@tcp(" + nobody + ")/x", "MariaDB at root@" + nobody + " did not answer", basePort + 9},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			cmd := exec.Command("java", "-jar", j, "--listen", "127.0.0.1:"+strconv.Itoa(tc.port), "--zk", tc.zk, "--mysql", tc.mysql,
				"--database", database)
			var stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stderr, &stderr
			done := make(chan error, 1)
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			go func() { done <- cmd.Wait() }()
			var err error
			select {
			case err = <-done:
			case <-time.After(20*time.Second + testenv.LoadSlack):
				_ = cmd.Process.Kill()
				<-done
				t.Fatalf("still running:\n%s", stderr.String())
			}
			var exit *exec.ExitError
			if !errors.As(err, &exit) || exit.ExitCode() == 0 {
				t.Errorf("exit: %v, want a non-zero code", err)
			}
			lines := strings.Split(strings.TrimSpace(stderr.String()), "\n")
			if last := lines[len(lines)-1]; !strings.HasPrefix(last, "seckill-curator: "+tc.want) {
				t.Errorf("last line %q, want seckill-curator: %s...", last, tc.want)
			}
			if strings.Contains(stderr.String(), "\tat ") {
				t.Errorf("a stack trace on stderr:\n%s", stderr.String())
			}
		})
	}
}
