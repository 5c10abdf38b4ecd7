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

	"github.com/seckill-lab/seckill/bench"
	"github.com/seckill-lab/seckill/stock/catalog"

	"github.com/seckill-lab/seckill/internal/democli"
	"github.com/seckill-lab/seckill/internal/testenv"
	"github.com/seckill-lab/seckill/stock"
)

// browserGoods is the browser test's own goods: the other packages' tests
// buy goods 1 of the shared stack at the same time.
const browserGoods = 4242

// serveDashboard runs a dashboard with o (polling every 250 ms, logging
// to the test) behind an httptest server until the test ends or ctx is
// done; the server closes the page's event streams at the end.
func serveDashboard(t *testing.T, ctx context.Context, o Options) *httptest.Server {
	t.Helper()
	o.Poll, o.Out = 250*time.Millisecond, testLog{t}
	s, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	runCtx, stopRun := context.WithCancel(ctx)
	t.Cleanup(stopRun)
	go s.Run(runCtx)
	srv := httptest.NewServer(s)
	t.Cleanup(srv.Close)
	t.Cleanup(srv.CloseClientConnections) // the page's event stream
	return srv
}

// TestDashboardInBrowser runs the dashboard against the real stack
// (SECKILL_STACK_DIR) in headless Chromium at 1280x720, driven over the
// DevTools protocol; every screenshot is taken after the first snapshot.
// The page must fill in from the server-sent events with every label at
// least 18 px and everything on screen, switch to Chinese and back,
// "Reset" must show the new stock, "Burst" must move the stock and sales
// counters and draw the race timeline, a burst must go on when the page
// is reloaded under it, and the page must log no error. Then the class's
// story: a fleet an earlier lesson left with a 300 ms work delay and a
// 100 ms TTL, "Fleet to defaults" on mutex, and a burst on the 3
// instances: the race stays on screen and oversold is red; a switch to
// redis leaves the last burst's title naming mutex and marks the switch on
// the live timeline, the bars before it named ("mutex ←"). It saves the
// screenshots in the test's temp dir and as /tmp/dash-shot-*.png. It runs
// on the package's own stack (TestMain), so every purchase records lock
// events for the timeline.
func TestDashboardInBrowser(t *testing.T) {
	dir := testenv.Get(t, testenv.StackDir)
	bin := testenv.Binary(t, "chromium")
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	srv := serveDashboard(t, ctx, Options{Dir: dir, GoodsID: browserGoods})

	tmp := t.TempDir()
	f, err := democli.FromStack(dir)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.SetStrategy(ctx, stock.Config{Name: catalog.Redis}); err != nil {
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
	b.checkLayout(t)
	b.eval(t, `document.getElementById("btn-lang").click(); true`)
	b.waitFor(t, "the page in Chinese", 10*time.Second, `document.documentElement.lang === "zh-CN" && /剩余库存/.test(document.body.textContent)`)
	b.checkLayout(t)
	b.screenshot(t, tmp, 0, "zh")
	b.eval(t, `document.getElementById("btn-lang").click(); true`)
	b.waitFor(t, "the page in English", 10*time.Second, `document.documentElement.lang === "en" && /Stock left/.test(document.body.textContent)`)

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

	// A burst goes on when the page that started it is reloaded: 120
	// purchases of 20 ms each under one lock last over two seconds.
	slow := stock.Config{Name: catalog.Redis}
	slow.WorkDelay = 20 * time.Millisecond
	if _, err := f.SetStrategy(ctx, slow); err != nil {
		t.Fatal(err)
	}
	b.eval(t, `document.getElementById("reset-stock").value = "500"; document.getElementById("btn-reset").click(); true`)
	b.waitFor(t, "stock 500 after reset", 30*time.Second, `document.getElementById("stock").textContent === "500"`)
	b.eval(t, `document.getElementById("burst-n").value = "120"; document.getElementById("burst-c").value = "10"; document.getElementById("btn-burst").click(); true`)
	b.waitFor(t, "the burst under way", 30*time.Second, `last && last.burst && last.burst.running && last.burst.answered > 0`)
	b.call(t, "Page.reload", map[string]any{"ignoreCache": true})
	b.waitFor(t, "the reloaded page's first snapshot", 30*time.Second, `window.__snapshots > 0 && last && last.burst`)
	b.waitFor(t, "the burst's end, after the reload", 60*time.Second, `last.burst && !last.burst.running`)
	if got := b.eval(t, `JSON.stringify(last.burst)`).(string); !strings.Contains(got, `"outcomes":{"ok":120}`) || !strings.Contains(got, `"answered":120`) {
		t.Errorf("the burst after the page's reload: %s; want all 120 sold", got)
	}

	// The class's story: an earlier lesson left the fleet slow (300 ms of
	// work, a 100 ms TTL). "Fleet to defaults" on mutex, then a burst on
	// the 3 instances: the race and a red oversold figure, on screen.
	left := stock.Config{Name: catalog.Redis}
	left.WorkDelay, left.LockTTL = 300*time.Millisecond, 100*time.Millisecond
	if _, err := f.SetStrategy(ctx, left); err != nil {
		t.Fatal(err)
	}
	b.waitFor(t, "the slow fleet on the page", 30*time.Second, `/300ms/.test(document.getElementById("knobs").textContent)`)
	b.eval(t, `const s = document.getElementById("strategy-name"); s.value = "mutex"; s.dispatchEvent(new Event("change")); document.getElementById("btn-defaults").click(); true`)
	b.waitFor(t, "mutex with its defaults", 30*time.Second,
		`document.getElementById("strategy").textContent === "mutex" && /work 0s/.test(document.getElementById("knobs").textContent) && document.getElementById("work-delay").value === "0s"`)
	for try := 1; ; try++ {
		b.eval(t, `document.getElementById("reset-stock").value = "100"; document.getElementById("btn-reset").click(); true`)
		b.waitFor(t, "stock 100 after reset", 30*time.Second, `document.getElementById("stock").textContent === "100" && document.getElementById("sold").textContent === "0"`)
		b.eval(t, `document.getElementById("burst-n").value = "200"; document.getElementById("burst-c").value = "20"; document.getElementById("btn-burst").click(); true`)
		b.waitFor(t, "the mutex burst's answer", 60*time.Second, `/^burst: .* in /.test(document.getElementById("msg").textContent)`)
		b.waitFor(t, "the last burst on screen", 10*time.Second, `document.getElementById("view-burst").classList.contains("on") && document.querySelectorAll("#tl rect.bar").length > 0`)
		b.waitFor(t, "the audit after the burst", 10*time.Second, `last && last.audit && last.audit.sold_qty > 0`)
		if over, _ := strconv.Atoi(text("oversold")); over > 0 || try == 3 {
			break
		}
		t.Logf("try %d: mutex on 3 instances did not oversell: %s", try, text("msg"))
	}
	if n := b.eval(t, `document.querySelectorAll("#tl rect.bar.red").length`).(float64); n == 0 || !b.eval(t, `document.getElementById("oversold-card").classList.contains("bad")`).(bool) {
		t.Errorf("after a mutex burst on 3 instances: %v red bars, oversold %q; want the race and a red oversold figure", n, text("oversold"))
	}
	time.Sleep(1500 * time.Millisecond) // two more snapshots: the view stays on the burst
	if !b.eval(t, `document.getElementById("view-burst").classList.contains("on") && document.querySelectorAll("#tl rect.bar.red").length > 0`).(bool) {
		t.Errorf("the last burst's race left the screen")
	}
	b.checkLayout(t)
	t.Logf("mutex burst: %s; oversold %s; %s", text("msg"), text("oversold"), text("race"))
	b.screenshot(t, tmp, 3, "mutex-burst")

	// A switch of strategy: the last burst's title still names the
	// strategy its bars ran under, and the live timeline marks the switch.
	if !strings.HasSuffix(text("tl-title"), "· mutex") {
		t.Errorf("the last burst's title %q does not name mutex", text("tl-title"))
	}
	if _, err := f.SetStrategy(ctx, stock.Config{Name: catalog.Redis}); err != nil {
		t.Fatal(err)
	}
	b.waitFor(t, "redis in the header", 30*time.Second, `document.getElementById("strategy").textContent === "redis"`)
	if !strings.HasSuffix(text("tl-title"), "· mutex") {
		t.Errorf("after the switch to redis, the last burst's title %q no longer names mutex", text("tl-title"))
	}
	b.eval(t, `document.getElementById("view-live").click(); true`)
	b.waitFor(t, "the switch on the live timeline, naming mutex's bars", 10*time.Second, `[...document.querySelectorAll("#tl text.switch")].some((e) => e.textContent === "mutex ←")`)
	b.screenshot(t, tmp, 4, "switch")

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

// checkLayout fails for a text smaller than 18 px (a projector at
// 1280x720) and for a page that does not fit the window.
func (b *browser) checkLayout(t *testing.T) {
	t.Helper()
	small := b.eval(t, `(() => {
  const bad = [];
  for (const e of document.querySelectorAll("body *")) {
    if (e.closest("script, style, option")) continue;
    const r = e.getBoundingClientRect();
    if (!r.width || !r.height) continue;
    if (![...e.childNodes].some((n) => n.nodeType === 3 && n.textContent.trim())) continue;
    const px = parseFloat(getComputedStyle(e).fontSize) * (e instanceof SVGElement && e.ownerSVGElement ? e.ownerSVGElement.getScreenCTM().a : 1);
    if (px < 17.9) bad.push(e.tagName.toLowerCase() + (e.id ? "#" + e.id : "") + " " + px.toFixed(1) + "px: " + e.textContent.trim().slice(0, 30));
  }
  return bad.join("; ");
})()`).(string)
	if small != "" {
		t.Errorf("text under 18 px: %s", small)
	}
	if out := b.eval(t, `(() => { const m = document.getElementById("msg").getBoundingClientRect(); return m.bottom <= innerHeight && document.documentElement.scrollWidth <= innerWidth ? "" : "msg bottom " + m.bottom + " of " + innerHeight + ", width " + document.documentElement.scrollWidth; })()`).(string); out != "" {
		t.Errorf("the page does not fit 1280x720: %s", out)
	}
}

// TestTokenInBrowser: the page of a dashboard listening on all
// interfaces asks for the admin token at a button's first 401, tells a
// wrong one, then keeps the right one for the tab: the next buttons send
// it without asking.
func TestTokenInBrowser(t *testing.T) {
	dir := testenv.Get(t, testenv.StackDir)
	bin := testenv.Binary(t, "chromium")
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	srv := serveDashboard(t, ctx, Options{Dir: dir, Addr: "0.0.0.0:0", GoodsID: rebindGoods})
	f, err := democli.FromStack(dir)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := f.Reset(ctx, rebindGoods, 30); err != nil {
		t.Fatal(err)
	}

	b := startBrowser(t, ctx, bin, t.TempDir())
	b.call(t, "Page.enable", nil)
	b.call(t, "Runtime.enable", nil)
	b.call(t, "Page.navigate", map[string]any{"url": srv.URL + "/"})
	b.waitFor(t, "the first snapshot", 30*time.Second, `window.__snapshots > 0`)
	answer := func(tok string) {
		b.eval(t, `window.__asked = window.__asked || 0; window.prompt = () => { window.__asked++; return `+strconv.Quote(tok)+`; }; true`)
	}
	reset := func(n int) {
		b.eval(t, `document.getElementById("reset-stock").value = "`+strconv.Itoa(n)+`"; document.getElementById("btn-reset").click(); true`)
	}

	answer("wrong")
	reset(11)
	b.waitFor(t, "the refusal", 30*time.Second, `/unauthorized/.test(document.getElementById("msg").textContent) && window.__asked === 1`)
	answer(f.Token)
	reset(12)
	b.waitFor(t, "stock 12 after the token", 30*time.Second,
		`document.getElementById("stock").textContent === "12" && /reset to stock 12/.test(document.getElementById("msg").textContent)`)
	reset(13)
	b.waitFor(t, "stock 13 with the kept token", 30*time.Second, `document.getElementById("stock").textContent === "13"`)
	if asked := b.eval(t, `window.__asked`); asked != float64(2) {
		t.Errorf("the page asked %v times, want 2 (a wrong token, then the right one, then kept)", asked)
	}
	a, err := bench.NewAdmin(f.Token).Audit(ctx, f.Instances[0], rebindGoods)
	if err != nil {
		t.Fatal(err)
	}
	if a.Stock != 13 || a.InitialStock != 13 {
		t.Errorf("the goods: %+v, want stock 13", a)
	}
	if errs := b.eval(t, `window.__errors.join("\n")`).(string); errs != "" {
		t.Errorf("the page caught script errors: %s", errs)
	}
}
