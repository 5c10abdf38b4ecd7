package stack

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/seckill-lab/seckill/bench/adminclient"
	"github.com/seckill-lab/seckill/internal/testenv"
	"github.com/seckill-lab/seckill/stock"
	"github.com/seckill-lab/seckill/stock/catalog"
)

// answer is one purchase sent through nginx, as the client saw it.
type answer struct {
	key    string // the Idempotency-Key sent ("" for none)
	status int    // 0 when no response came back
	inst   string // X-Instance
	body   string
	err    error
}

func (a answer) String() string {
	if a.err != nil {
		return fmt.Sprintf("key %q: %v", a.key, a.err)
	}
	return fmt.Sprintf("key %q: %d from %q %.160s", a.key, a.status, a.inst, strings.TrimSpace(a.body))
}

// nginxBuyer sends purchases of goods 1 through the stack's nginx, each
// with a fresh user and, when keyed, a fresh Idempotency-Key.
type nginxBuyer struct {
	st     *State
	client *http.Client
	mu     sync.Mutex
	n      int
	prefix string
}

func (b *nginxBuyer) buy(ctx context.Context, keyed bool) answer {
	b.mu.Lock()
	b.n++
	n := b.n
	b.mu.Unlock()
	a := answer{}
	if keyed {
		a.key = fmt.Sprintf("%s-%d", b.prefix, n)
	}
	body := fmt.Sprintf(`{"goods_id":1,"qty":1,"user_id":"%s-u%d"}`, b.prefix, n)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, b.st.NginxURL()+"/api/v1/purchase", strings.NewReader(body))
	if err != nil {
		a.err = err
		return a
	}
	req.Header.Set("Content-Type", "application/json")
	if keyed {
		req.Header.Set("Idempotency-Key", a.key)
	}
	resp, err := b.client.Do(req)
	if err != nil {
		a.err = err
		return a
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	a.status, a.inst, a.body = resp.StatusCode, resp.Header.Get("X-Instance"), string(raw)
	return a
}

// buyAll sends n purchases at once; done closes when all are answered,
// and wait returns the answers.
func (b *nginxBuyer) buyAll(ctx context.Context, n int, keyed bool) (done <-chan struct{}, wait func() []answer) {
	out := make([]answer, n)
	var wg sync.WaitGroup
	for i := range out {
		wg.Go(func() { out[i] = b.buy(ctx, keyed) })
	}
	ch := make(chan struct{})
	go func() { wg.Wait(); close(ch) }()
	return ch, func() []answer { <-ch; return out }
}

// awaitRouting waits until nginx routes to every instance of st: a healed
// instance is left out for up to its fail_timeout after its last failure.
func awaitRouting(t *testing.T, ctx context.Context, st *State) {
	t.Helper()
	nginx, ok := st.Component("nginx")
	if !ok {
		t.Fatal("no nginx")
	}
	wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	for {
		err := checkNginx(wctx, nginx.URL(), st.InstanceNames())
		if err == nil {
			return
		}
		select {
		case <-wctx.Done():
			t.Fatalf("nginx does not route to all of %v: %v", st.InstanceNames(), err)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// setFleet gives every running instance the strategy setting cfg and
// resets goods 1 to stock (which deletes its orders).
func setFleet(t *testing.T, ctx context.Context, st *State, cfg map[string]any, stockN int) {
	t.Helper()
	for _, c := range st.Instances() {
		if err := st.adminJSON(ctx, http.MethodPut, c.URL(), "/admin/strategy", cfg, nil); err != nil {
			t.Fatalf("%s: PUT /admin/strategy: %v", c.Name, err)
		}
	}
	if err := st.adminJSON(ctx, http.MethodPost, st.InstanceURLs()[0], "/admin/reset", map[string]any{"goods_id": 1, "stock": stockN}, nil); err != nil {
		t.Fatalf("POST /admin/reset: %v", err)
	}
}

// checkOneOrderPerSale reads goods 1's orders and checks that every 2xx
// answer has exactly one order, under its key, and that no order exists
// without a 2xx. Key-less answers are counted only.
func checkOneOrderPerSale(t *testing.T, ctx context.Context, st *State, answers []answer) {
	t.Helper()
	var orders struct {
		RequestIDs []string `json:"request_ids"`
	}
	if err := st.adminJSON(ctx, http.MethodGet, st.InstanceURLs()[0], "/admin/orders?goods_id=1", nil, &orders); err != nil {
		t.Fatalf("GET /admin/orders: %v", err)
	}
	sold := 0
	for _, a := range answers {
		if a.status/100 != 2 {
			continue
		}
		sold++
		if a.key == "" {
			continue
		}
		if n := countOf(orders.RequestIDs, a.key); n != 1 {
			t.Errorf("%v: %d orders under its key, want 1", a, n)
		}
	}
	if len(orders.RequestIDs) != sold {
		t.Errorf("%d orders for %d 2xx answers", len(orders.RequestIDs), sold)
	}
}

func countOf(xs []string, x string) int {
	n := 0
	for _, v := range xs {
		if v == x {
			n++
		}
	}
	return n
}

// killWhileServing subscribes to inst's lock events, starts n purchases
// through nginx at once, waits until inst has read the stock for one of
// them (it is inside its work delay, not committed), kills inst with
// SIGKILL and returns the wait for the answers.
func killWhileServing(t *testing.T, ctx context.Context, st *State, b *nginxBuyer, inst string, n int, keyed bool) func() []answer {
	t.Helper()
	c, ok := st.Component(inst)
	if !ok {
		t.Fatalf("no %s", inst)
	}
	ectx, cancel := context.WithCancel(ctx)
	defer cancel()
	events, err := adminclient.New(st.AdminToken).Events(ectx, c.URL())
	if err != nil {
		t.Fatalf("%s: events: %v", inst, err)
	}
	done, wait := b.buyAll(ctx, n, keyed)
	for read := false; !read; {
		select {
		case ev, open := <-events:
			if !open {
				t.Fatalf("%s: the event stream ended before a purchase reached it", inst)
			}
			read = ev.Kind == stock.EventRead
		case <-done:
			t.Fatalf("none of %d purchases reached %s: %v", n, inst, wait())
		}
	}
	if err := Signal(st.Dir, inst, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	return wait
}

// TestNginxRoutesAroundDeadInstances runs nginx in front of three real
// instances (MariaDB only, strategy none) and kills them with SIGKILL, as
// the instance-crash scenario does:
//   - kill-and-heal of every instance in turn, with purchases sent while
//     each is dead: every purchase gets 2xx and the one after the last heal
//     gets 200 at once (nginx's defaults took an instance out for 10 s after
//     one failure: 502 "no live upstreams" while all three were healthy);
//   - keyed purchases in flight on an instance when it is killed, and sent
//     while it stays dead: every one gets 2xx, with exactly one order;
//   - key-less purchases: one sent while an instance is dead gets 2xx (its
//     connection was refused: it never reached an instance), one in flight
//     on the killed instance gets 502 and is not retried (it could have
//     sold there), and no order exists without its 2xx.
func TestNginxRoutesAroundDeadInstances(t *testing.T) {
	requireTools(t)
	base := testenv.Port(29500)
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	st, err := Up(ctx, Options{Dir: dir, BasePort: base, Instances: 3, Binary: seckillBin, Out: io.Discard,
		Backends: []Backend{BackendMySQL}})
	t.Cleanup(func() { _ = Down(context.Background(), dir, io.Discard) })
	if err != nil {
		t.Fatalf("up: %v", err)
	}
	// One client connection at a time for the sequential purchases: nginx
	// sees them on one worker, as a browser's keep-alive would.
	b := &nginxBuyer{st: st, client: &http.Client{Timeout: time.Minute}, prefix: "nginx-" + fmt.Sprint(time.Now().UnixNano())}

	t.Run("kill-and-heal", func(t *testing.T) {
		setFleet(t, ctx, st, map[string]any{"name": catalog.None}, 1000)
		var answers []answer
		for _, inst := range st.InstanceNames() {
			if err := Signal(dir, inst, syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
			// Round robin: three purchases in a row reach every instance
			// once, the dead one included.
			for range 3 {
				answers = append(answers, b.buy(ctx, true))
			}
			if err := Start(ctx, dir, inst); err != nil {
				t.Fatal(err)
			}
		}
		for _, a := range answers {
			if a.status/100 != 2 {
				t.Errorf("sent while an instance was dead: %v", a)
			}
		}
		after := b.buy(ctx, true)
		if after.status != http.StatusOK {
			t.Errorf("the first purchase after every instance was healed: %v, want 200", after)
		}
		checkOneOrderPerSale(t, ctx, st, append(answers, after))
	})

	// The purchases below stay 2 s in their critical section, so the kill
	// finds one in flight.
	slow := map[string]any{"name": catalog.None, "work_delay": "2s"}
	for _, tc := range []struct {
		name  string
		keyed bool
	}{
		{"dead instance, keyed", true},
		{"dead instance, key-less", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st, err := Load(dir)
			if err != nil {
				t.Fatal(err)
			}
			setFleet(t, ctx, st, slow, 1000)
			awaitRouting(t, ctx, st)
			const victim = "inst-2"
			defer func() {
				if err := Start(ctx, dir, victim); err != nil {
					t.Error(err)
				}
			}()
			inFlight := killWhileServing(t, ctx, st, b, victim, 6, tc.keyed)()
			var whileDead []answer
			for range 3 {
				whileDead = append(whileDead, b.buy(ctx, tc.keyed))
			}
			for _, a := range whileDead {
				if a.status/100 != 2 || a.inst == victim {
					t.Errorf("sent while %s was dead: %v, want 2xx from another instance", victim, a)
				}
			}
			refused := 0
			for _, a := range inFlight {
				switch {
				case a.status/100 == 2 && a.inst != victim:
				case !tc.keyed && a.status == http.StatusBadGateway:
					refused++ // the one in flight on the victim: not retried
				default:
					t.Errorf("in flight when %s was killed: %v", victim, a)
				}
			}
			if !tc.keyed && refused == 0 {
				t.Errorf("no key-less purchase in flight on %s got 502: was one retried? %v", victim, inFlight)
			}
			checkOneOrderPerSale(t, ctx, st, append(inFlight, whileDead...))
		})
	}
	if t.Failed() {
		if log, err := readTail(st.Dir, "nginx-access"); err == nil {
			t.Logf("nginx access log (last lines):\n%s", log)
		}
	}
}

// readTail returns the last 40 lines of the component log name.
func readTail(dir, name string) (string, error) {
	var sb strings.Builder
	err := Logs(&sb, dir, name, 40)
	return sb.String(), err
}
