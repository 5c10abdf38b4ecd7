package dashboard

import (
	"context"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/seckill-lab/seckill/exercises"
	"github.com/seckill-lab/seckill/internal/democli"
	"github.com/seckill-lab/seckill/internal/testenv"
	"github.com/seckill-lab/seckill/stock"
	"github.com/seckill-lab/seckill/stock/catalog"
)

// allowedLatin are the words the Chinese page keeps in Latin letters:
// names of programs, protocols and the lab's own identifiers.
var allowedLatin = map[string]bool{"seckill": true, "nginx": true, "fencing": true, "ttl": true, "avg": true, "metrics": true,
	"English": true, "fsync": true, "mariadb": true, "etcd": true, "zookeeper": true, "consul": true}

// TestDashboardShowsFleet: the page's form shows the fleet's setting as it
// is, whoever changed it (any strategy, the exercises' locks and none
// included), the header names every knob that differs from the defaults,
// "Fleet to defaults" leaves the form equal to the fleet, and the page in
// Chinese has no English word left on screen. Screenshots of both
// languages: /tmp/dash-shot-10.png (zh) and /tmp/dash-shot-11.png (en).
func TestDashboardShowsFleet(t *testing.T) {
	dir := testenv.Get(t, testenv.StackDir)
	bin := testenv.Binary(t, "chromium")
	if err := exercises.Register(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	s, err := New(Options{Dir: dir, GoodsID: browserGoods + 1, Poll: 250 * time.Millisecond, Out: testLog{t}})
	if err != nil {
		t.Fatal(err)
	}
	runCtx, stopRun := context.WithCancel(ctx)
	defer stopRun()
	go s.Run(runCtx)
	srv := httptest.NewServer(s)
	defer srv.Close()
	defer srv.CloseClientConnections()
	f, err := democli.FromStack(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _, _ = f.SetStrategy(context.Background(), stock.Config{Name: catalog.None}) })
	if _, err := f.SetStrategy(ctx, stock.Config{Name: catalog.Redis}); err != nil {
		t.Fatal(err)
	}
	tmp := t.TempDir()
	b := startBrowser(t, ctx, bin, tmp)
	b.call(t, "Page.enable", nil)
	b.call(t, "Runtime.enable", nil)
	b.call(t, "Emulation.setDeviceMetricsOverride", map[string]any{"width": 1280, "height": 720, "deviceScaleFactor": 1, "mobile": false})
	b.call(t, "Page.navigate", map[string]any{"url": srv.URL + "/?lang=zh"})
	b.waitFor(t, "the first snapshot", 30*time.Second, `window.__snapshots > 0`)
	b.eval(t, `document.getElementById("reset-stock").value = "50"; document.getElementById("btn-reset").click(); true`)
	b.waitFor(t, "stock 50 after reset", 30*time.Second, `document.getElementById("stock").textContent === "50"`)

	form := `[document.getElementById("strategy-name").value, document.getElementById("work-delay").value, document.getElementById("lock-ttl").value,
		document.getElementById("fencing").checked, document.getElementById("watchdog").checked].join("|")`
	tests := []struct {
		name string
		cfg  stock.Config
		// form is the form's fields (strategy|work|ttl|fencing|watchdog);
		// header, words the header must show.
		form, header string
	}{
		{"an exercise's lock", stock.Config{Name: "ex-redislock", WorkDelay: 5 * time.Millisecond, LockTTL: 3 * time.Second}, "ex-redislock|5ms|3s|false|true", "5ms"},
		{"none, lease check off", stock.Config{Name: catalog.None, NoLeaseCheck: true}, "none|0s|10s|false|true", "租约检查 关"},
		{"redis, no watchdog, fencing", stock.Config{Name: catalog.Redis, Fencing: true, NoWatchdog: true, NoLocalQueue: true}, "redis|0s|10s|true|false", "本地队列 关"},
	}
	for _, tt := range tests {
		if _, err := f.SetStrategy(ctx, tt.cfg); err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
		b.waitFor(t, tt.name+" in the form and the header", 20*time.Second,
			form+` === "`+tt.form+`" && document.getElementById("strategy").textContent === "`+tt.cfg.Name+`" && document.getElementById("knobs").textContent.includes("`+tt.header+`")`)
	}
	// A burst, then the strategy changes: the cards start afresh.
	b.eval(t, `document.getElementById("burst-n").value = "40"; document.getElementById("burst-c").value = "8"; document.getElementById("btn-burst").click(); true`)
	b.waitFor(t, "the burst's answer in Chinese", 60*time.Second, `/^抢购结束：.*成功/.test(document.getElementById("msg").textContent)`)
	b.eval(t, `const s = document.getElementById("strategy-name"); s.value = "mutex"; s.dispatchEvent(new Event("change")); document.getElementById("btn-defaults").click(); true`)
	b.waitFor(t, "mutex's defaults in the form, the fleet and the cards afresh", 30*time.Second,
		form+` === "mutex|0s|10s|false|true" && last.strategy.name === "mutex" && last.lock.acquisitions === 0 && (last.rates || []).length < 8`)
	if got, err := f.Strategies(ctx); err != nil || len(got) == 0 || got[0].Config.Name != catalog.Mutex {
		t.Errorf("after Fleet to defaults on mutex, the fleet runs %v (%v)", got, err)
	}

	// On a fresh page the status line and the last burst's title give the
	// same duration.
	b.call(t, "Page.reload", map[string]any{"ignoreCache": true})
	b.waitFor(t, "the reloaded page's first snapshot", 30*time.Second, `window.__snapshots > 0`)
	b.eval(t, `document.getElementById("burst-n").value = "30"; document.getElementById("btn-burst").click(); true`)
	b.waitFor(t, "the last burst on screen", 60*time.Second, `document.getElementById("view-burst").classList.contains("on") && /^抢购结束/.test(document.getElementById("msg").textContent)`)
	b.call(t, "Page.reload", map[string]any{"ignoreCache": true})
	b.waitFor(t, "the fresh page's last burst", 30*time.Second, `window.__snapshots > 1 && document.getElementById("view-burst").classList.contains("on")`)
	title, msg := b.eval(t, `document.getElementById("tl-title").textContent`).(string), b.eval(t, `document.getElementById("msg").textContent`).(string)
	if d := regexp.MustCompile(`[0-9.]+ (秒|毫秒)`).FindString(title); d == "" || !strings.Contains(msg, d) {
		t.Errorf("fresh page: the last burst's title %q and the status line %q disagree on the burst's duration", title, msg)
	}
	b.checkLayout(t)
	b.screenshot(t, tmp, 10, "zh")

	// No English left on screen in Chinese: every Latin word is a name the
	// page shows as it is (a strategy, an instance, a path, a program).
	visible := b.eval(t, `document.body.innerText + " " + [...document.querySelectorAll("#tl text")].map((e) => e.textContent).join(" ")`).(string)
	names := map[string]bool{}
	for _, st := range catalog.Extended() {
		for _, w := range regexp.MustCompile(`[A-Za-z]+`).FindAllString(st.Name, -1) {
			names[w] = true
		}
	}
	visible = regexp.MustCompile(`(https?://|/)[^\s，·]*`).ReplaceAllString(visible, " ") // URLs and paths
	visible = regexp.MustCompile(`\binst-\d+\b|\bp(50|99)\b|\b\d+(ms|s)\b`).ReplaceAllString(visible, " ")
	var english []string
	for _, w := range regexp.MustCompile(`[A-Za-z]{2,}`).FindAllString(visible, -1) {
		if !allowedLatin[w] && !names[w] {
			english = append(english, w)
		}
	}
	if len(english) > 0 {
		t.Errorf("the Chinese page shows English words %q in:\n%s", english, visible)
	}
	b.eval(t, `document.getElementById("btn-lang").click(); true`)
	b.waitFor(t, "the page in English", 10*time.Second, `document.documentElement.lang === "en" && /Stock left/.test(document.body.textContent)`)
	b.screenshot(t, tmp, 11, "en")
	if errs := b.eval(t, `window.__errors.join("\n")`).(string); errs != "" {
		t.Errorf("the page caught script errors: %s", errs)
	}
}
