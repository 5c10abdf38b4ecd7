package dashboard

import (
	"fmt"
	"math"
	"regexp"
	"testing"

	"github.com/seckill-lab/seckill/bench/chart"
)

// palette reads the page's colours: the --name:#rrggbb custom properties
// of its :root rule, which every colour the page draws with comes from.
func palette(t *testing.T) map[string]string {
	t.Helper()
	root := regexp.MustCompile(`(?s):root\s*\{(.*?)\}`).FindSubmatch(page)
	if root == nil {
		t.Fatal("page.html has no :root rule")
	}
	out := map[string]string{}
	for _, m := range regexp.MustCompile(`--([a-z0-9-]+)\s*:\s*(#[0-9a-fA-F]{6})`).FindAllSubmatch(root[1], -1) {
		out[string(m[1])] = string(m[2])
	}
	return out
}

// contrast is the WCAG 2 contrast ratio of two colours.
func contrast(a, b string) float64 {
	la, lb := chart.Luminance(a), chart.Luminance(b)
	return (max(la, lb) + 0.05) / (min(la, lb) + 0.05)
}

// TestPaletteContrast: every pair the page draws passes WCAG 2 AA on a
// projector: text 4.5:1 against its background, graphics (the timeline's
// bars and lock bands, the legend's swatches, the status dot) 3:1.
func TestPaletteContrast(t *testing.T) {
	const text, graphic = 4.5, 3.0
	pairs := []struct {
		fg, bg string
		min    float64
		what   string
	}{
		{"ink", "card", text, "text on a card"},
		{"ink", "bg", text, "text on the page"},
		{"ink", "lane", text, "lane labels"},
		{"ink", "msg", text, "the message line"},
		{"ink", "ok-bg", text, "a message that went well"},
		{"err-ink", "err-bg", text, "an error message"},
		{"mute", "card", text, "headings, labels, axis ticks"},
		{"mute", "bg", text, "the knobs line"},
		{"white", "red", text, "the oversold figure and its labels"},
		{"white", "blue", text, "a button"},
		{"white", "warn", text, "a fault button"},
		{"white", "ink", text, "the strategy badge, a chosen view"},
		{"white", "flawed", text, "a flawed strategy's badge"},
		{"red", "card", text, "the raced count, a fault that is on"},
		{"blue", "lane", graphic, "a committed purchase"},
		{"blue", "lane2", graphic, "a committed purchase"},
		{"blue", "hold", graphic, "a committed purchase inside its lock hold"},
		{"red", "lane", graphic, "an overlapping purchase"},
		{"red", "lane2", graphic, "an overlapping purchase"},
		{"red", "hold", graphic, "an overlapping purchase inside its lock hold"},
		{"rolled", "lane", graphic, "a rolled back purchase"},
		{"rolled", "lane2", graphic, "a rolled back purchase"},
		{"rolled", "hold", graphic, "a rolled back purchase inside its lock hold"},
		{"hold-edge", "lane", graphic, "a lock hold's outline"},
		{"hold-edge", "lane2", graphic, "a lock hold's outline"},
		{"hold-edge", "card", graphic, "the lock held swatch"},
		{"green", "card", graphic, "the live dot"},
		{"field", "card", graphic, "an input's border"},
	}
	pal := palette(t)
	for _, p := range pairs {
		t.Run(fmt.Sprintf("%s on %s", p.fg, p.bg), func(t *testing.T) {
			fg, ok1 := pal[p.fg]
			bg, ok2 := pal[p.bg]
			if !ok1 || !ok2 {
				t.Fatalf("the palette has no --%s or --%s", p.fg, p.bg)
			}
			if c := contrast(fg, bg); c < p.min {
				t.Errorf("%s (%s on %s): contrast %.2f:1, want at least %.1f:1", p.what, fg, bg, c, p.min)
			}
		})
	}
	// Every colour the stylesheet names comes from the palette: no literal
	// #rrggbb outside :root.
	css := regexp.MustCompile(`(?s)<style>(.*?)</style>`).FindSubmatch(page)
	body := regexp.MustCompile(`(?s):root\s*\{.*?\}`).ReplaceAll(css[1], nil)
	if lit := regexp.MustCompile(`#[0-9a-fA-F]{3,6}\b`).FindAll(body, -1); len(lit) > 0 {
		t.Errorf("colours outside the palette: %s", lit)
	}
	script := regexp.MustCompile(`(?s)<script>(.*?)</script>`).FindSubmatch(page)
	if lit := regexp.MustCompile(`"#[0-9a-fA-F]{3,6}"`).FindAll(script[1], -1); len(lit) > 0 {
		t.Errorf("the script draws with colours outside the palette: %s", lit)
	}
}

// TestContrast checks the formula on WCAG's own extremes.
func TestContrast(t *testing.T) {
	tests := []struct {
		a, b string
		want float64
	}{{"#000000", "#ffffff", 21}, {"#ffffff", "#ffffff", 1}, {"#777777", "#ffffff", 4.48}}
	for _, tc := range tests {
		if got := contrast(tc.a, tc.b); math.Abs(got-tc.want) > 0.01 {
			t.Errorf("contrast(%s, %s) = %.3f, want %.2f", tc.a, tc.b, got, tc.want)
		}
	}
}
