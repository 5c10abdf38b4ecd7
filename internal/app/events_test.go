package app_test

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/seckill-lab/seckill/internal/app"
	"github.com/seckill-lab/seckill/internal/config"
	"github.com/seckill-lab/seckill/internal/testenv"
	"github.com/seckill-lab/seckill/stock"
	"github.com/seckill-lab/seckill/stock/catalog"
)

// subscribe opens url's /admin/events stream and returns its events on a
// channel, until the test ends.
func subscribe(t *testing.T, url string) <-chan stock.Event {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url+"/admin/events", nil)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		t.Fatalf("GET /admin/events: %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	out := make(chan stock.Event, 1024)
	go func() {
		defer resp.Body.Close()
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			data, ok := strings.CutPrefix(sc.Text(), "data: ")
			if !ok {
				continue
			}
			var ev stock.Event
			if json.Unmarshal([]byte(data), &ev) == nil {
				out <- ev
			}
		}
	}()
	return out
}

// TestEventStream: one purchase under each locker strategy streams its lock
// events in order, each once, with the token and the stock figures; the
// flawed mutex-tx shows its release before the commit.
func TestEventStream(t *testing.T) {
	_, url := start(t, single(config.Config{
		MySQLDSN:   testenv.Get(t, testenv.MySQLDSN),
		RedisAddrs: testenv.List(t, testenv.RedisAddrs),
		Servers: map[catalog.Server][]string{
			catalog.ServerEtcd: testenv.List(t, testenv.EtcdEndpoints), catalog.ServerZooKeeper: testenv.List(t, testenv.ZKServers), catalog.ServerConsul: testenv.List(t, testenv.ConsulAddrs)},
	}))
	ins := []instance{{name: "f1", url: url}}
	events := subscribe(t, url)
	normal := []stock.EventKind{stock.EventRequested, stock.EventAcquired, stock.EventRead, stock.EventWritten, stock.EventCommitted, stock.EventReleased}
	for _, s := range catalog.Strategies() {
		if s.Kind != catalog.KindLocker {
			continue
		}
		t.Run(s.Name, func(t *testing.T) {
			want := normal
			if s.ReleaseBeforeCommit {
				want = []stock.EventKind{stock.EventRequested, stock.EventAcquired, stock.EventRead, stock.EventWritten, stock.EventReleased, stock.EventCommitted}
			}
			goods := goodsID()
			reset(t, ins[0], goods, 7)
			setStrategy(t, ins, map[string]any{"name": s.Name})
			r := do(t, http.MethodPost, url+"/api/v1/purchase", "application/json", jsonBody(map[string]any{"goods_id": goods, "qty": 2, "user_id": "u"}), nil)
			if r.status != http.StatusOK {
				t.Fatalf("purchase: %d %v", r.status, r.body)
			}
			id, _ := r.body["request_id"].(string)
			var got []stock.Event
			timeout := time.After(10 * time.Second)
			for len(got) < len(want) {
				select {
				case ev := <-events:
					if ev.Purchase == id {
						got = append(got, ev)
					}
				case <-timeout:
					t.Fatalf("after 10s, %d of %d events: %+v", len(got), len(want), got)
				}
			}
			var kinds []stock.EventKind
			for i, ev := range got {
				kinds = append(kinds, ev.Kind)
				if ev.Instance != "f1" || ev.Strategy != s.Name || ev.Key != stock.LockKey(goods) || ev.MonoNS == 0 {
					t.Errorf("event %d: %+v", i, ev)
				}
				if i > 0 && (ev.MonoNS < got[i-1].MonoNS || ev.Seq <= got[i-1].Seq) {
					t.Errorf("event %d out of order: %+v after %+v", i, ev, got[i-1])
				}
				switch ev.Kind {
				case stock.EventRead:
					if ev.Value == nil || *ev.Value != 7 {
						t.Errorf("read event value %v, want 7", ev.Value)
					}
				case stock.EventWritten:
					if ev.Value == nil || *ev.Value != 5 {
						t.Errorf("written event value %v, want 5", ev.Value)
					}
				case stock.EventAcquired:
					if s.Tokens && ev.Token == 0 {
						t.Error("acquired without the lock's token")
					}
				}
			}
			if !slices.Equal(kinds, want) {
				t.Fatalf("events %v, want %v", kinds, want)
			}
		})
	}
}

// TestEventStreamOutlivesWriteTimeout: an event stream served by Serve
// (whose http.Server has a WriteTimeout) still delivers events after that
// timeout has run out. Before the fix, the stream was cut at the timeout
// (3 minutes by default): `seckill events -f` and a long bench's event
// collection broke.
func TestEventStreamOutlivesWriteTimeout(t *testing.T) {
	const writeTimeout = 500 * time.Millisecond
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	in, err := app.New(ctx, single(config.Config{MySQLDSN: testenv.Get(t, testenv.MySQLDSN), Listen: "127.0.0.1:0"}), 10*time.Second)
	cancel()
	if err != nil {
		testenv.Unavailable(t, "the service's backends", err)
	}
	in.Timeouts = app.Timeouts{Write: writeTimeout}
	sctx, stop := context.WithCancel(context.Background())
	addrc := make(chan string, 1)
	done := make(chan error, 1)
	go func() { done <- in.Serve(sctx, func(a string) { addrc <- a }) }()
	t.Cleanup(func() { stop(); <-done; in.Close() })
	url := "http://" + <-addrc
	ins := []instance{{name: "f1", url: url}}
	events := subscribe(t, url)
	setStrategy(t, ins, map[string]any{"name": catalog.Mutex})
	// Past the write timeout: the stream was opened more than four
	// timeouts ago when the purchase below is made.
	time.Sleep(4 * writeTimeout)
	goods := goodsID()
	reset(t, ins[0], goods, 3)
	r := do(t, http.MethodPost, url+"/api/v1/purchase", "application/json", jsonBody(map[string]any{"goods_id": goods, "qty": 1, "user_id": "u"}), nil)
	if r.status != http.StatusOK {
		t.Fatalf("purchase: %d %v", r.status, r.body)
	}
	id, _ := r.body["request_id"].(string)
	timeout := time.After(10 * time.Second)
	for {
		select {
		case ev, ok := <-events:
			if !ok {
				t.Fatal("the event stream ended after the write timeout")
			}
			if ev.Purchase == id {
				return
			}
		case <-timeout:
			t.Fatal("no event of the purchase within 10s: the stream was cut at the write timeout")
		}
	}
}
