package dashboard

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"strconv"
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

// fleetLanguages are the languages TestDashboardShowsFleet renders the
// page in: the header's words for two knobs, the status line after a burst
// (outcomes in words, no API key such as sold_out),
// a burst's duration as the page writes it, and whether the page must show
// no English word (the Chinese page).
var fleetLanguages = []struct {
	lang, leaseOff, queueOff string
	burstDone, duration      string
	noEnglish                bool
	shot                     int
}{
	{lang: "en", leaseOff: "lease check off", queueOff: "local queue off", burstDone: `^burst: [^_]*\bsold\b[^_]* in `, duration: `[0-9.]+ (s|ms)\b`, shot: 11},
	{lang: "zh", leaseOff: "租约检查 关", queueOff: "本地队列 关", burstDone: `^抢购结束：.*成功`, duration: `[0-9.]+ (秒|毫秒)`, noEnglish: true, shot: 10},
}

// TestDashboardShowsFleet renders the page in English and in Chinese. In
// both, the page's form shows the fleet's setting as it is, whoever changed
// it (a grade's exercise lock, a scenario's none without lease check, a
// lesson's redis with fencing: SetStrategy as they do it), after a Reset
// too; the header names every knob that differs from the defaults; "Fleet
// to defaults" leaves the form equal to the fleet; on a fresh page the
// status line and the last burst's title give the same duration. The page
// in Chinese has no English word left on screen. Screenshots:
// /tmp/dash-shot-11.png (en) and /tmp/dash-shot-10.png (zh).
func TestDashboardShowsFleet(t *testing.T) {
	dir := testenv.Get(t, testenv.StackDir)
	bin := testenv.Binary(t, "chromium")
	if err := exercises.Register(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	srv := serveDashboard(t, ctx, Options{Dir: dir, GoodsID: browserGoods + 1})
	f, err := democli.FromStack(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _, _ = f.SetStrategy(context.Background(), stock.Config{Name: catalog.None}) })
	tmp := t.TempDir()
	b := startBrowser(t, ctx, bin, tmp)
	b.call(t, "Page.enable", nil)
	b.call(t, "Runtime.enable", nil)
	b.call(t, "Emulation.setDeviceMetricsOverride", map[string]any{"width": 1280, "height": 720, "deviceScaleFactor": 1, "mobile": false})

	form := `[document.getElementById("strategy-name").value, document.getElementById("work-delay").value, document.getElementById("lock-ttl").value,
		document.getElementById("fencing").checked, document.getElementById("watchdog").checked].join("|")`
	for _, lt := range fleetLanguages {
		t.Run(lt.lang, func(t *testing.T) {
			// formEqualsFleet waits until the form shows what every
			// instance reports (GET /admin/strategy), and the header
			// shows the strategy and the header words.
			formEqualsFleet := func(after string, header ...string) {
				t.Helper()
				want := fleetForm(ctx, t, f)
				cond := form + ` === "` + want + `" && document.getElementById("strategy").textContent === "` + strings.SplitN(want, "|", 2)[0] + `"`
				for _, h := range header {
					cond += ` && document.getElementById("knobs").textContent.includes("` + h + `")`
				}
				b.waitFor(t, "the fleet's "+want+" in the form after "+after, 20*time.Second, cond)
			}
			if _, err := f.SetStrategy(ctx, stock.Config{Name: catalog.Redis}); err != nil {
				t.Fatal(err)
			}
			b.call(t, "Page.navigate", map[string]any{"url": srv.URL + "/?lang=" + lt.lang})
			b.waitFor(t, "the first snapshot", 30*time.Second, `window.__snapshots > 0`)
			formEqualsFleet("the first snapshot")

			settings := []struct {
				by     string
				cfg    stock.Config
				header string
			}{
				{"a grade (an exercise's lock)", stock.Config{Name: "ex-redislock", WorkDelay: 5 * time.Millisecond, LockTTL: 3 * time.Second}, "5ms"},
				{"a scenario (none, lease check off)", stock.Config{Name: catalog.None, NoLeaseCheck: true}, lt.leaseOff},
				{"a lesson (redis, no watchdog, fencing)", stock.Config{Name: catalog.Redis, Fencing: true, NoWatchdog: true, NoLocalQueue: true}, lt.queueOff},
			}
			for _, st := range settings {
				if _, err := f.SetStrategy(ctx, st.cfg); err != nil {
					t.Fatalf("%s: %v", st.by, err)
				}
				formEqualsFleet(st.by, st.header)
			}
			b.eval(t, `document.getElementById("reset-stock").value = "50"; document.getElementById("btn-reset").click(); true`)
			b.waitFor(t, "stock 50 after reset", 30*time.Second, `document.getElementById("stock").textContent === "50"`)
			formEqualsFleet("a reset", lt.queueOff)

			// A burst, then the strategy changes: the cards start afresh.
			b.eval(t, `document.getElementById("burst-n").value = "40"; document.getElementById("burst-c").value = "8"; document.getElementById("btn-burst").click(); true`)
			b.waitFor(t, "the burst's answer", 60*time.Second, `new RegExp(`+strconv.Quote(lt.burstDone)+`).test(document.getElementById("msg").textContent)`)
			b.eval(t, `const s = document.getElementById("strategy-name"); s.value = "mutex"; s.dispatchEvent(new Event("change")); document.getElementById("btn-defaults").click(); true`)
			b.waitFor(t, "mutex in the fleet and the cards afresh", 30*time.Second,
				`last.strategy.name === "mutex" && last.lock.acquisitions === 0 && (last.rates || []).length < 8`)
			formEqualsFleet("Fleet to defaults on mutex")
			if got, err := f.Strategies(ctx); err != nil || len(got) == 0 || !got[0].Config.Equal(stock.Config{Name: catalog.Mutex}) {
				t.Errorf("after Fleet to defaults on mutex, the fleet runs %v (%v)", got, err)
			}

			// On a fresh page the status line and the last burst's title
			// give the same duration.
			b.call(t, "Page.reload", map[string]any{"ignoreCache": true})
			b.waitFor(t, "the reloaded page's first snapshot", 30*time.Second, `window.__snapshots > 0`)
			b.eval(t, `document.getElementById("burst-n").value = "30"; document.getElementById("btn-burst").click(); true`)
			b.waitFor(t, "the last burst on screen", 60*time.Second, `document.getElementById("view-burst").classList.contains("on") && new RegExp(`+strconv.Quote(lt.burstDone)+`).test(document.getElementById("msg").textContent)`)
			b.call(t, "Page.reload", map[string]any{"ignoreCache": true})
			b.waitFor(t, "the fresh page's last burst", 30*time.Second, `window.__snapshots > 1 && document.getElementById("view-burst").classList.contains("on")`)
			formEqualsFleet("a reload")
			title, msg := b.eval(t, `document.getElementById("tl-title").textContent`).(string), b.eval(t, `document.getElementById("msg").textContent`).(string)
			if d := regexp.MustCompile(lt.duration).FindString(title); d == "" || !strings.Contains(msg, d) {
				t.Errorf("fresh page: the last burst's title %q and the status line %q disagree on the burst's duration", title, msg)
			}
			b.checkLayout(t)
			b.screenshot(t, tmp, lt.shot, lt.lang)
			if lt.noEnglish {
				if english, visible := englishWords(t, b); len(english) > 0 {
					t.Errorf("the %s page shows English words %q in:\n%s", lt.lang, english, visible)
				}
			}
			if errs := b.eval(t, `window.__errors.join("\n")`).(string); errs != "" {
				t.Errorf("the page caught script errors: %s", errs)
			}
		})
	}
}

// fleetForm is the fleet's setting as the page's form shows it
// (strategy|work|ttl|fencing|watchdog), read from every instance; the
// instances must agree.
func fleetForm(ctx context.Context, t *testing.T, f democli.Fleet) string {
	t.Helper()
	got, err := f.Strategies(ctx)
	if err != nil || len(got) == 0 {
		t.Fatalf("read the fleet's setting: %v (%d instances)", err, len(got))
	}
	var form string
	for i, s := range got {
		var c struct {
			Name      string `json:"name"`
			WorkDelay string `json:"work_delay"`
			LockTTL   string `json:"lock_ttl"`
			Fencing   bool   `json:"fencing"`
			Watchdog  *bool  `json:"watchdog"`
		}
		b, err := json.Marshal(s.Config)
		if err == nil {
			err = json.Unmarshal(b, &c)
		}
		if err != nil {
			t.Fatalf("%s's setting: %v", s.Instance, err)
		}
		fi := fmt.Sprintf("%s|%s|%s|%t|%t", c.Name, c.WorkDelay, c.LockTTL, c.Fencing, c.Watchdog == nil || *c.Watchdog)
		if i > 0 && fi != form {
			t.Fatalf("the instances disagree: %s has %s, %s has %s", got[0].Instance, form, s.Instance, fi)
		}
		form = fi
	}
	return form
}

// englishWords are the Latin words on the page (the text and the race
// timeline's labels) that are no name the page shows as it is: a
// strategy, an instance, a path, a program.
func englishWords(t *testing.T, b *browser) (english []string, visible string) {
	t.Helper()
	visible = b.eval(t, `document.body.innerText + " " + [...document.querySelectorAll("#tl text")].map((e) => e.textContent).join(" ")`).(string)
	names := map[string]bool{}
	for _, st := range catalog.Extended() {
		for _, w := range regexp.MustCompile(`[A-Za-z]+`).FindAllString(st.Name, -1) {
			names[w] = true
		}
	}
	rest := regexp.MustCompile(`(https?://|/)[^\s，·]*`).ReplaceAllString(visible, " ") // URLs and paths
	rest = regexp.MustCompile(`\binst-\d+\b|\bp(50|99)\b|\b\d+(ms|s)\b`).ReplaceAllString(rest, " ")
	for _, w := range regexp.MustCompile(`[A-Za-z]{2,}`).FindAllString(rest, -1) {
		if !allowedLatin[w] && !names[w] {
			english = append(english, w)
		}
	}
	return english, visible
}
