package bench

import (
	"bytes"
	"context"
	"fmt"
	"image"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"testing"
	"time"

	"github.com/seckill-lab/seckill/bench/lockcheck"
	"github.com/seckill-lab/seckill/internal/testenv"
	"github.com/seckill-lab/seckill/stock"
)

// browserReport is a crafted report with every part report.html draws: a
// flawed strategy with failing evidence and its timeline, correct ones,
// latency distributions and sales per instance.
func browserReport(t *testing.T) *Report {
	rep := craftedReport()
	var evs []stock.Event
	for i, inst := range []string{"inst-1", "inst-2"} {
		p := fmt.Sprintf("p%d", i)
		at := int64(1_000_000 + i*400_000)
		evs = append(evs,
			stock.Event{Instance: inst, Purchase: p, Key: "goods:1", Kind: stock.EventRead, MonoNS: at},
			stock.Event{Instance: inst, Purchase: p, Key: "goods:1", Kind: stock.EventCommitted, MonoNS: at + 1_000_000})
	}
	secs := lockcheck.Sections(evs)
	ov := lockcheck.Overlaps(secs)
	for i := range rep.Runs {
		r := &rep.Runs[i]
		for j := 1; j <= 60; j++ {
			ms := float64(j) * float64(i+1)
			r.LatencyCDF = append(r.LatencyCDF, [2]float64{ms, float64(j) / 60})
		}
		if r.Strategy == "none" && r.Repeat == 1 {
			r.Invariants = append(r.Invariants,
				Invariant{Name: InvMutualExclusion, Applicable: true, Count: len(ov), Detail: "crafted overlap"},
				Invariant{Name: InvLinearizable, Applicable: true, Count: 1, Detail: "not linearizable (crafted)"})
			r.timelineSVG = lockcheck.TimelineSVG("none-1: the first overlapping critical sections", secs, ov, 0, 3_000_000)
			r.Timeline, r.HistoryView = "raw/none-1.timeline.svg", "raw/none-1.history.html"
		}
	}
	return rep
}

// TestReportInBrowser renders report.html in headless Chromium: the page
// must load without a console error, every chart must be drawn (inline SVG
// with marks in the DOM after load) and the screenshot must not be blank.
func TestReportInBrowser(t *testing.T) {
	bin := testenv.Binary(t, "chromium")
	dir := t.TempDir()
	if err := WriteReports(dir, browserReport(t)); err != nil {
		t.Fatal(err)
	}
	page := "file://" + filepath.Join(dir, "report.html")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	flags := []string{"--headless=new", "--no-sandbox", "--disable-gpu", "--no-first-run", "--hide-scrollbars",
		"--user-data-dir=" + filepath.Join(dir, "profile"), "--enable-logging=stderr", "--v=0"}

	dom, errOut, err := run(ctx, bin, append(flags, "--dump-dom", page)...)
	if err != nil {
		t.Fatalf("chromium --dump-dom: %v\n%s", err, errOut)
	}
	if m := regexp.MustCompile(`(?i)(uncaught|console\(.*error|SyntaxError|ReferenceError)`).Find(errOut); m != nil {
		t.Errorf("the page logged an error: %s\n%s", m, errOut)
	}
	charts := regexp.MustCompile(`(?s)<div class="chart" data-chart="([^"]+)">(.*?)</div>`).FindAllSubmatch(dom, -1)
	if len(charts) < 6 {
		t.Fatalf("the rendered page has %d charts, want 6 (oversold, lost, throughput, outcomes, sales, latency)", len(charts))
	}
	for _, c := range charts {
		if !regexp.MustCompile(`<(rect|path|polyline|line)\b`).Match(c[2]) {
			t.Errorf("chart %q is empty in the rendered page", c[1])
		}
	}
	if !bytes.Contains(dom, []byte(`class="timeline"`)) {
		t.Error("the rendered page has no race timeline")
	}

	shot := filepath.Join(dir, "report.png")
	if _, errOut, err := run(ctx, bin, append(flags, "--window-size=1280,2400", "--screenshot="+shot, page)...); err != nil {
		t.Fatalf("chromium --screenshot: %v\n%s", err, errOut)
	}
	f, err := os.Open(shot)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatalf("screenshot: %v", err)
	}
	if ink := inkRatio(img); ink < 0.02 {
		t.Errorf("the screenshot is nearly blank: %.1f%% of its pixels are not white", 100*ink)
	}
}

func run(ctx context.Context, bin string, args ...string) (stdout, stderr []byte, err error) {
	cmd := exec.CommandContext(ctx, bin, args...)
	var o, e bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &e
	err = cmd.Run()
	return o.Bytes(), e.Bytes(), err
}

// inkRatio is the share of pixels that are not (nearly) white.
func inkRatio(img image.Image) float64 {
	b := img.Bounds()
	ink, all := 0, 0
	for y := b.Min.Y; y < b.Max.Y; y += 2 {
		for x := b.Min.X; x < b.Max.X; x += 2 {
			r, g, bl, _ := img.At(x, y).RGBA()
			all++
			if r < 0xf000 || g < 0xf000 || bl < 0xf000 {
				ink++
			}
		}
	}
	return float64(ink) / float64(max(all, 1))
}
