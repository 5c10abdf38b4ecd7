package dashboard

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"image/png"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/net/websocket"

	"github.com/seckill-lab/seckill/internal/democli"
	"github.com/seckill-lab/seckill/internal/testenv"
	"github.com/seckill-lab/seckill/stock"
)

// browserGoods is the browser test's own goods: the other packages' tests
// buy goods 1 of the shared stack at the same time.
const browserGoods = 4242

// TestDashboardInBrowser runs the dashboard against the real stack
// (SECKILL_STACK_DIR) in headless Chromium, driven over the DevTools
// protocol: the page must fill in from the server-sent events, "Reset"
// must show the new stock, "Burst" must move the stock and sales counters
// and draw the race timeline, and the page must log no error. It saves
// screenshots (1280x720) in the test's temp dir and as
// /tmp/dash-shot-*.png. It runs on the package's own stack (TestMain),
// set to redis, so every purchase records lock events for the timeline.
func TestDashboardInBrowser(t *testing.T) {
	dir := testenv.Get(t, testenv.StackDir)
	bin := testenv.Binary(t, "chromium")
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	s, err := New(Options{Dir: dir, GoodsID: browserGoods, Poll: 250 * time.Millisecond, Out: testLog{t}})
	if err != nil {
		t.Fatal(err)
	}
	runCtx, stopRun := context.WithCancel(ctx)
	defer stopRun()
	go s.Run(runCtx)
	srv := httptest.NewServer(s)
	defer srv.Close()
	defer srv.CloseClientConnections() // the page's event stream

	tmp := t.TempDir()
	f, err := democli.FromStack(dir)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.SetStrategy(ctx, stock.DefaultConfig(stock.Redis)); err != nil {
		t.Fatal(err)
	}
	b := startBrowser(t, ctx, bin, tmp)
	b.call(t, "Page.enable", nil)
	b.call(t, "Runtime.enable", nil)
	b.call(t, "Log.enable", nil)
	b.call(t, "Emulation.setDeviceMetricsOverride", map[string]any{"width": 1280, "height": 720, "deviceScaleFactor": 1, "mobile": false})
	b.call(t, "Page.navigate", map[string]any{"url": srv.URL + "/"})

	text := func(id string) string { return b.eval(t, `document.getElementById("`+id+`").textContent`).(string) }
	b.waitFor(t, "the first snapshot", 30*time.Second, `window.__snapshots > 0`)

	b.eval(t, `document.getElementById("reset-stock").value = "40"; document.getElementById("btn-reset").click(); true`)
	b.waitFor(t, "stock 40, sold 0 after reset", 30*time.Second,
		`document.getElementById("stock").textContent === "40" && document.getElementById("sold").textContent === "0"`)
	b.screenshot(t, tmp, 1, "reset")

	b.eval(t, `document.getElementById("burst-n").value = "80"; document.getElementById("burst-c").value = "16"; document.getElementById("btn-burst").click(); true`)
	b.waitFor(t, "the burst's answer", 60*time.Second, `/^burst: .* in /.test(document.getElementById("msg").textContent)`)
	b.waitFor(t, "sales on the page", 30*time.Second,
		`document.getElementById("sold").textContent !== "0" && document.getElementById("stock").textContent !== "40"`)
	b.waitFor(t, "the race timeline", 10*time.Second, `document.querySelectorAll("#tl rect.bar").length > 0`)
	b.waitFor(t, "sales per instance", 10*time.Second, `[...document.querySelectorAll("#insts .n")].some((e) => Number(e.textContent) > 0)`)
	sold, _ := strconv.Atoi(text("sold"))
	stockLeft, _ := strconv.Atoi(text("stock"))
	if sold <= 0 || stockLeft >= 40 {
		t.Errorf("after the burst: sold %q, stock %q; want sales and less stock", text("sold"), text("stock"))
	}
	t.Logf("after a burst of 80 at stock 40 under %s: %s; sold %d, stock %d, oversold %s", text("strategy"), text("msg"), sold, stockLeft, text("oversold"))
	b.screenshot(t, tmp, 2, "burst")

	if errs := b.eval(t, `window.__errors.join("\n")`).(string); errs != "" {
		t.Errorf("the page caught script errors: %s", errs)
	}
	for _, e := range b.errors() {
		t.Errorf("the browser logged: %s", e)
	}
}

type testLog struct{ t *testing.T }

func (l testLog) Write(p []byte) (int, error) {
	l.t.Log(strings.TrimSpace(string(p)))
	return len(p), nil
}

// browser is headless Chromium driven over the DevTools protocol.
type browser struct {
	ws   *websocket.Conn
	mu   sync.Mutex
	id   int
	wait map[int]chan cdpReply
	errs []string
}

type cdpReply struct {
	Result json.RawMessage `json:"result"`
	Error  *struct {
		Message string `json:"message"`
	} `json:"error"`
}

// startBrowser starts Chromium on a DevTools port of its choosing (read
// from its profile's DevToolsActivePort), connects to its page and stops
// it at cleanup.
func startBrowser(t *testing.T, ctx context.Context, bin, tmp string) *browser {
	t.Helper()
	profile := filepath.Join(tmp, "profile")
	cmd := exec.CommandContext(ctx, bin, "--headless=new", "--no-sandbox", "--disable-gpu", "--no-first-run",
		"--hide-scrollbars", "--remote-debugging-port=0", "--remote-allow-origins=*", "--user-data-dir="+profile,
		"--window-size=1280,720", "about:blank")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatalf("start chromium: %v", err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	var port string
	for deadline := time.Now().Add(60 * time.Second); port == ""; time.Sleep(100 * time.Millisecond) {
		if b, err := os.ReadFile(filepath.Join(profile, "DevToolsActivePort")); err == nil {
			port, _, _ = strings.Cut(string(b), "\n")
		}
		if time.Now().After(deadline) {
			t.Fatalf("chromium wrote no DevToolsActivePort within 60s: %s", stderr.String())
		}
	}
	var targets []struct {
		Type string `json:"type"`
		WS   string `json:"webSocketDebuggerUrl"`
	}
	resp, err := http.Get("http://127.0.0.1:" + port + "/json/list")
	if err != nil {
		t.Fatalf("DevTools targets: %v", err)
	}
	err = json.NewDecoder(resp.Body).Decode(&targets)
	resp.Body.Close()
	if err != nil {
		t.Fatalf("DevTools targets: %v", err)
	}
	wsURL := ""
	for _, tg := range targets {
		if tg.Type == "page" {
			wsURL = tg.WS
		}
	}
	if wsURL == "" {
		t.Fatalf("chromium has no page target: %+v", targets)
	}
	ws, err := websocket.Dial(wsURL, "", "http://127.0.0.1/")
	if err != nil {
		t.Fatalf("DevTools websocket: %v", err)
	}
	t.Cleanup(func() { ws.Close() })
	b := &browser{ws: ws, wait: map[int]chan cdpReply{}}
	go b.read()
	return b
}

// read dispatches replies to their callers and keeps the errors the page
// logged.
func (b *browser) read() {
	for {
		var msg string
		if err := websocket.Message.Receive(b.ws, &msg); err != nil {
			return
		}
		var m struct {
			ID     int             `json:"id"`
			Method string          `json:"method"`
			Params json.RawMessage `json:"params"`
			cdpReply
		}
		if json.Unmarshal([]byte(msg), &m) != nil {
			continue
		}
		b.mu.Lock()
		switch {
		case m.ID != 0:
			if ch, ok := b.wait[m.ID]; ok {
				ch <- m.cdpReply
				delete(b.wait, m.ID)
			}
		case m.Method == "Runtime.exceptionThrown":
			b.errs = append(b.errs, "exception: "+string(m.Params))
		case m.Method == "Runtime.consoleAPICalled" && strings.Contains(string(m.Params), `"type":"error"`):
			b.errs = append(b.errs, "console error: "+string(m.Params))
		case m.Method == "Log.entryAdded" && strings.Contains(string(m.Params), `"level":"error"`):
			b.errs = append(b.errs, "log: "+string(m.Params))
		}
		b.mu.Unlock()
	}
}

func (b *browser) errors() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]string(nil), b.errs...)
}

// call sends one DevTools command and returns its result.
func (b *browser) call(t *testing.T, method string, params any) json.RawMessage {
	t.Helper()
	b.mu.Lock()
	b.id++
	id := b.id
	ch := make(chan cdpReply, 1)
	b.wait[id] = ch
	b.mu.Unlock()
	msg, err := json.Marshal(map[string]any{"id": id, "method": method, "params": params})
	if err != nil {
		t.Fatal(err)
	}
	if err := websocket.Message.Send(b.ws, string(msg)); err != nil {
		t.Fatalf("%s: %v", method, err)
	}
	select {
	case r := <-ch:
		if r.Error != nil {
			t.Fatalf("%s: %s", method, r.Error.Message)
		}
		return r.Result
	case <-time.After(30 * time.Second):
		t.Fatalf("%s: no answer within 30s", method)
	}
	return nil
}

// eval evaluates a JS expression in the page and returns its value.
func (b *browser) eval(t *testing.T, expr string) any {
	t.Helper()
	var r struct {
		Result struct {
			Value any `json:"value"`
		} `json:"result"`
		Exception *struct {
			Text string `json:"text"`
		} `json:"exceptionDetails"`
	}
	if err := json.Unmarshal(b.call(t, "Runtime.evaluate", map[string]any{"expression": expr, "returnByValue": true}), &r); err != nil {
		t.Fatal(err)
	}
	if r.Exception != nil {
		t.Fatalf("evaluate %s: %s", expr, r.Exception.Text)
	}
	return r.Result.Value
}

// waitFor polls a JS condition until it holds.
func (b *browser) waitFor(t *testing.T, what string, limit time.Duration, cond string) {
	t.Helper()
	deadline := time.Now().Add(limit)
	for {
		if v, _ := b.eval(t, "!!("+cond+")").(bool); v {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("waited %s for %s; the page says: %v", limit, what, b.eval(t, `document.getElementById("msg").textContent`))
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// screenshot saves the viewport as dir/dash-N-name.png and
// /tmp/dash-shot-N.png, and checks it is a 1280x720 PNG.
func (b *browser) screenshot(t *testing.T, dir string, n int, name string) {
	t.Helper()
	var r struct {
		Data string `json:"data"`
	}
	if err := json.Unmarshal(b.call(t, "Page.captureScreenshot", map[string]any{"format": "png"}), &r); err != nil {
		t.Fatal(err)
	}
	img, err := base64.StdEncoding.DecodeString(r.Data)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := png.DecodeConfig(bytes.NewReader(img))
	if err != nil || cfg.Width != 1280 || cfg.Height != 720 {
		t.Errorf("screenshot %s: %dx%d, %v; want a 1280x720 PNG", name, cfg.Width, cfg.Height, err)
	}
	for _, p := range []string{filepath.Join(dir, fmt.Sprintf("dash-%d-%s.png", n, name)), fmt.Sprintf("/tmp/dash-shot-%d.png", n)} {
		if err := os.WriteFile(p, img, 0o644); err != nil {
			t.Errorf("save screenshot: %v", err)
		}
	}
}
