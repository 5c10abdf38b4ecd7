package chart

import (
	"bytes"
	"encoding/xml"
	"io"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// node is a parsed XML element.
type node struct {
	name     string
	attr     map[string]string
	children []*node
	parent   *node
	text     string // all character data directly inside, concatenated
}

// parse parses data as XML, failing the test if it is not well-formed.
func parse(t *testing.T, data []byte) *node {
	t.Helper()
	d := xml.NewDecoder(bytes.NewReader(data))
	d.Strict = true
	root := &node{name: "#document"}
	cur := root
	for {
		tok, err := d.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("not well-formed XML: %v\n%s", err, data)
		}
		switch tk := tok.(type) {
		case xml.StartElement:
			nd := &node{name: tk.Name.Local, attr: map[string]string{}, parent: cur}
			for _, a := range tk.Attr {
				nd.attr[a.Name.Local] = a.Value
			}
			cur.children = append(cur.children, nd)
			cur = nd
		case xml.EndElement:
			cur = cur.parent
		case xml.CharData:
			cur.text += string(tk)
		}
	}
	if len(root.children) != 1 || root.children[0].name != "svg" {
		t.Fatalf("want one <svg> root, got %d children", len(root.children))
	}
	return root.children[0]
}

// all returns every element below n (pre-order) for which keep is true.
func (nd *node) all(keep func(*node) bool) []*node {
	var out []*node
	var walk func(*node)
	walk = func(x *node) {
		for _, c := range x.children {
			if keep(c) {
				out = append(out, c)
			}
			walk(c)
		}
	}
	walk(nd)
	return out
}

// fullText is the text of n and all its descendants.
func (nd *node) fullText() string {
	s := nd.text
	for _, c := range nd.children {
		s += c.fullText()
	}
	return s
}

func byClass(name, class string) func(*node) bool {
	return func(x *node) bool {
		return (name == "" || x.name == name) && slices.Contains(strings.Fields(x.attr["class"]), class)
	}
}

func texts(nodes []*node) []string {
	var out []string
	for _, x := range nodes {
		out = append(out, strings.TrimSpace(x.fullText()))
	}
	return out
}

func num(t *testing.T, s string) float64 {
	t.Helper()
	v, err := strconv.ParseFloat(s, 64)
	if err != nil {
		t.Fatalf("not a number: %q", s)
	}
	return v
}

// checkCommon checks what every chart must have.
func checkCommon(t *testing.T, data []byte, title string) *node {
	t.Helper()
	root := parse(t, data)
	if root.attr["viewBox"] == "" || !strings.HasPrefix(root.attr["viewBox"], "0 0 960 ") {
		t.Errorf("viewBox = %q, want 0 0 960 H", root.attr["viewBox"])
	}
	if root.attr["width"] != "100%" {
		t.Errorf("width = %q, want 100%%", root.attr["width"])
	}
	if _, ok := root.attr["height"]; ok {
		t.Errorf("root has a fixed height attribute")
	}
	if ff := root.attr["font-family"]; !strings.Contains(ff, "system-ui") || !strings.Contains(ff, "sans-serif") {
		t.Errorf("font-family = %q", ff)
	}
	if fs := num(t, root.attr["font-size"]); fs < 16 {
		t.Errorf("root font-size %v < 16", fs)
	}
	for _, x := range root.all(func(x *node) bool { return x.attr["font-size"] != "" }) {
		if fs := num(t, x.attr["font-size"]); fs < 16 {
			t.Errorf("<%s class=%q> font-size %v < 16", x.name, x.attr["class"], fs)
		}
	}
	titles := texts(root.all(byClass("text", "title")))
	if len(titles) != 1 || (title != "" && titles[0] != title) {
		t.Errorf("title texts = %q, want [%q]", titles, title)
	}
	if len(root.all(byClass("line", "grid"))) == 0 {
		t.Errorf("no gridlines")
	}
	s := string(data)
	for _, bad := range []string{"NaN", "Inf"} {
		if strings.Contains(s, bad) {
			t.Errorf("output contains %q", bad)
		}
	}
	return root
}

func TestBarChart(t *testing.T) {
	tests := []struct {
		name     string
		title    string
		bars     []Bar
		refLabel string
		refValue float64
	}{
		{name: "simple", title: "Throughput", bars: []Bar{{Label: "a", Value: 10}, {Label: "b", Value: 20}}},
		{name: "zero value", title: "Z", bars: []Bar{{Label: "none", Value: 0}, {Label: "some", Value: 5}}},
		{name: "all zero", title: "Z", bars: []Bar{{Label: "x", Value: 0}, {Label: "y", Value: 0}}},
		{name: "flawed", title: "F", bars: []Bar{{Label: "ok", Value: 3}, {Label: "bad", Value: 7, Flawed: true}}},
		{name: "reference", title: "R", bars: []Bar{{Label: "a", Value: 100}}, refLabel: "sql-atomic 288/s", refValue: 288},
		{name: "reference at zero", title: "R", bars: []Bar{{Label: "a", Value: 1}}, refLabel: "zero", refValue: 0},
		{name: "link", title: "L", bars: []Bar{{Label: "a", Value: 1, Link: "#run-a"}, {Label: "b", Value: 2}}},
		{name: "escaped", title: `a <b> & "c"`, bars: []Bar{{Label: "x<y & z", Value: 1, Link: "?a=1&b=2"}}, refLabel: "<ref> & co", refValue: 1},
		{name: "long labels rotated", title: "14 strategies", bars: func() []Bar {
			var b []Bar
			for i := range 14 {
				b = append(b, Bar{Label: "strategy-number-" + strconv.Itoa(i), Value: float64(i * 37), Flawed: i%5 == 0})
			}
			return b
		}()},
		{name: "empty", title: "nothing", bars: nil},
		{name: "weird values", title: "W", bars: []Bar{{Label: "nan", Value: math.NaN()}, {Label: "neg", Value: -3}, {Label: "inf", Value: math.Inf(1)}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			data := BarChart(tc.title, "req/s", tc.bars, tc.refLabel, tc.refValue)
			root := checkCommon(t, data, tc.title)

			rects := root.all(byClass("rect", "bar"))
			if len(rects) != len(tc.bars) {
				t.Fatalf("bar rects = %d, want %d", len(rects), len(tc.bars))
			}
			values := texts(root.all(byClass("text", "value")))
			if len(values) != len(tc.bars) {
				t.Fatalf("value labels = %d, want %d", len(values), len(tc.bars))
			}
			labels := texts(root.all(byClass("text", "label")))
			flawed := root.all(byClass("", "flawed"))
			wantFlawed := 0
			for i, b := range tc.bars {
				h := num(t, rects[i].attr["height"])
				if h < 2 {
					t.Errorf("bar %d height %v < 2", i, h)
				}
				if b.Value == 0 && values[i] != "0" {
					t.Errorf("zero bar %d labelled %q, want 0", i, values[i])
				}
				if b.Value > 0 && values[i] != FormatValue(b.Value) {
					t.Errorf("bar %d labelled %q, want %q", i, values[i], FormatValue(b.Value))
				}
				label := strings.TrimSuffix(strings.TrimSuffix(labels[i], Mark), "…")
				if !strings.HasPrefix(b.Label, label) {
					t.Errorf("label %d = %q, want %q", i, labels[i], b.Label)
				}
				if b.Flawed {
					wantFlawed++
					if !strings.HasPrefix(rects[i].attr["fill"], "url(#") {
						t.Errorf("flawed bar %d fill = %q, want a hatch pattern", i, rects[i].attr["fill"])
					}
				}
				inLink := rects[i].parent.name == "a"
				if inLink != (b.Link != "") {
					t.Errorf("bar %d wrapped in <a> = %v, want %v", i, inLink, b.Link != "")
				}
				if inLink && rects[i].parent.attr["href"] != b.Link {
					t.Errorf("bar %d href = %q, want %q", i, rects[i].parent.attr["href"], b.Link)
				}
			}
			if len(flawed) != wantFlawed {
				t.Errorf("flawed markers = %d, want %d", len(flawed), wantFlawed)
			}
			for _, f := range texts(flawed) {
				if f != Mark {
					t.Errorf("flawed marker %q", f)
				}
			}
			refs := root.all(byClass("", "ref"))
			if (len(refs) == 1) != (tc.refLabel != "") || len(refs) > 1 {
				t.Errorf("reference lines = %d, refLabel %q", len(refs), tc.refLabel)
			}
			if len(refs) == 1 {
				if got := strings.TrimSpace(refs[0].fullText()); got != tc.refLabel {
					t.Errorf("reference label = %q, want %q", got, tc.refLabel)
				}
				if len(refs[0].all(func(x *node) bool { return x.name == "line" && x.attr["stroke-dasharray"] != "" })) != 1 {
					t.Errorf("reference line is not one dashed line")
				}
			}
		})
	}
}

func TestBarChartEscapes(t *testing.T) {
	data := BarChart("<T&>", "<y>", []Bar{{Label: "a<b&c", Value: 1}}, "r&<", 1)
	parse(t, data)
	s := string(data)
	for _, raw := range []string{"a<b", "<T&>", "r&<", "<y>"} {
		if strings.Contains(s, raw) {
			t.Errorf("unescaped %q in output", raw)
		}
	}
	for _, want := range []string{"a&lt;b&amp;c", "&lt;T&amp;&gt;"} {
		if !strings.Contains(s, want) {
			t.Errorf("missing escaped %q", want)
		}
	}
}

func TestStackedBars(t *testing.T) {
	series := []string{"sold", "sold out", "error <5xx>", "timeout"}
	tests := []struct {
		name    string
		colours []string
		stacks  []Stack
	}{
		{name: "basic", stacks: []Stack{{Label: "a", Parts: []float64{10, 5, 0, 1}}, {Label: "b", Parts: []float64{3, 0, 0, 0}}}},
		{name: "all zero", stacks: []Stack{{Label: "dead", Parts: []float64{0, 0, 0, 0}}, {Label: "b", Parts: []float64{1, 2, 3, 4}}}},
		{name: "only zeros", stacks: []Stack{{Label: "dead", Parts: []float64{0, 0, 0, 0}}}},
		{name: "colours", colours: []string{"#2e7d32", "#9e9e9e", "#c62828", "#f9a825"}, stacks: []Stack{{Label: "x & y", Parts: []float64{500, 500, 20, 1}, Flawed: true}}},
		{name: "short parts and bad values", stacks: []Stack{{Label: "s", Parts: []float64{1, math.NaN(), -1}}}},
		{name: "fourteen", stacks: func() []Stack {
			var s []Stack
			for i := range 14 {
				s = append(s, Stack{Label: "strategy-" + strconv.Itoa(i), Parts: []float64{float64(1000 - i*70), float64(i * 70), float64(i % 3), 0}, Flawed: i == 4})
			}
			return s
		}()},
		{name: "empty", stacks: nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			data := StackedBars("Outcomes", "requests", series, tc.colours, tc.stacks)
			root := checkCommon(t, data, "Outcomes")

			wantParts := 0
			for _, st := range tc.stacks {
				for _, p := range st.Parts {
					if p > 0 && !math.IsNaN(p) {
						wantParts++
					}
				}
			}
			if got := len(root.all(byClass("rect", "part"))); got != wantParts {
				t.Errorf("part rects = %d, want %d", got, wantParts)
			}
			legend := root.all(byClass("g", "legend"))
			if len(legend) != 1 {
				t.Fatalf("legends = %d", len(legend))
			}
			lt := legend[0].fullText()
			for _, s := range series {
				if !strings.Contains(lt, s) {
					t.Errorf("legend lacks %q", s)
				}
			}
			if tc.colours != nil {
				swatches := legend[0].all(func(x *node) bool { return x.name == "rect" })
				for i, c := range tc.colours {
					if swatches[i].attr["fill"] != c {
						t.Errorf("legend swatch %d = %q, want %q", i, swatches[i].attr["fill"], c)
					}
				}
			}
			values := texts(root.all(byClass("text", "value")))
			if len(values) != len(tc.stacks) {
				t.Fatalf("totals = %d, want %d", len(values), len(tc.stacks))
			}
			zeros := 0
			for i, st := range tc.stacks {
				total := 0.0
				for _, p := range st.Parts {
					if p > 0 && !math.IsNaN(p) {
						total += p
					}
				}
				if total == 0 {
					zeros++
					if values[i] != "0" {
						t.Errorf("all-zero stack %d labelled %q, want 0", i, values[i])
					}
				}
			}
			zr := root.all(byClass("rect", "zero"))
			if len(zr) != zeros {
				t.Errorf("zero markers = %d, want %d", len(zr), zeros)
			}
			for _, z := range zr {
				if num(t, z.attr["width"]) < 2 {
					t.Errorf("zero marker narrower than 2")
				}
			}
			flawedWant := 0
			for _, st := range tc.stacks {
				if st.Flawed {
					flawedWant++
				}
			}
			if got := len(root.all(byClass("", "flawed"))); got != flawedWant {
				t.Errorf("flawed markers = %d, want %d", got, flawedWant)
			}
		})
	}
}

func TestLineChart(t *testing.T) {
	tests := []struct {
		name      string
		lines     []Line
		logX      bool
		wantTicks []string
	}{
		{name: "linear", lines: []Line{{Label: "a", X: []float64{0, 1, 2}, Y: []float64{0, 1, 4}}}, wantTicks: []string{"0", "2"}},
		{name: "log cdf", logX: true, lines: []Line{
			{Label: "redis", X: []float64{0.8, 3, 40, 250}, Y: []float64{0.1, 0.5, 0.9, 1}},
			{Label: "broken", X: []float64{2, 20}, Y: []float64{0.5, 1}, Flawed: true},
		}, wantTicks: []string{"1", "10", "100"}},
		{name: "log sub-ms", logX: true, lines: []Line{{Label: "a", X: []float64{0.05, 0.5, 5}, Y: []float64{0, 0.5, 1}}}, wantTicks: []string{"0.1", "1"}},
		{name: "empty line", logX: true, lines: []Line{{Label: "empty"}}},
		{name: "empty linear", lines: []Line{{Label: "empty"}, {Label: "also"}}},
		{name: "single point log", logX: true, lines: []Line{{Label: "one", X: []float64{5}, Y: []float64{1}}}},
		{name: "single point linear", lines: []Line{{Label: "one", X: []float64{5}, Y: []float64{1}}}},
		{name: "bad points", logX: true, lines: []Line{{Label: "bad", X: []float64{0, -1, math.NaN(), math.Inf(1), 3}, Y: []float64{0, 0.1, 0.2, 0.3, 1}}}},
		{name: "mismatched lengths", lines: []Line{{Label: "m", X: []float64{1, 2, 3}, Y: []float64{1}}}},
		{name: "no lines", logX: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			data := LineChart("Latency CDF", "latency (ms)", "fraction", tc.lines, tc.logX)
			root := checkCommon(t, data, "Latency CDF")
			paths := root.all(func(x *node) bool { return x.name == "path" || x.name == "polyline" })
			if len(paths) != len(tc.lines) {
				t.Errorf("paths = %d, want %d", len(paths), len(tc.lines))
			}
			for i, p := range paths {
				if tc.lines[i].Flawed != (p.attr["stroke-dasharray"] != "") {
					t.Errorf("line %d dashed = %v, want %v", i, p.attr["stroke-dasharray"] != "", tc.lines[i].Flawed)
				}
			}
			ticks := texts(root.all(byClass("text", "tick")))
			for _, w := range tc.wantTicks {
				if !slices.Contains(ticks, w) {
					t.Errorf("tick %q missing from %q", w, ticks)
				}
			}
			lt := root.all(byClass("g", "legend"))[0].fullText()
			for _, l := range tc.lines {
				if !strings.Contains(lt, l.Label) {
					t.Errorf("legend lacks %q", l.Label)
				}
			}
			axisLabels := texts(root.all(byClass("text", "axis-label")))
			if !slices.Contains(axisLabels, "latency (ms)") || !slices.Contains(axisLabels, "fraction") {
				t.Errorf("axis labels = %q", axisLabels)
			}
			// every coordinate in the path data is a finite number
			numRe := regexp.MustCompile(`-?[0-9.]+`)
			for _, p := range paths {
				for _, f := range numRe.FindAllString(p.attr["d"], -1) {
					num(t, f)
				}
			}
		})
	}
}

func TestLogTicks125(t *testing.T) {
	_, _, ticks := logTicks(1, 1000)
	want := []float64{1, 2, 5, 10, 20, 50, 100, 200, 500, 1000}
	if !slices.Equal(ticks, want) {
		t.Errorf("logTicks(1, 1000) = %v, want %v", ticks, want)
	}
	lo, hi, _ := logTicks(0.7, 3)
	if lo != 0.5 || hi != 5 {
		t.Errorf("logTicks(0.7, 3) domain = [%v, %v], want [0.5, 5]", lo, hi)
	}
}

func TestCDF(t *testing.T) {
	tests := []struct {
		name    string
		samples []float64
		points  int
		wantLen int // -1: don't check
	}{
		{name: "empty", samples: nil, points: 10, wantLen: 0},
		{name: "zero points", samples: []float64{1, 2}, points: 0, wantLen: 0},
		{name: "one", samples: []float64{7}, points: 10, wantLen: 1},
		{name: "fewer samples than points", samples: []float64{3, 1, 2}, points: 10, wantLen: 3},
		{name: "ties", samples: []float64{5, 5, 5, 1, 1}, points: 10, wantLen: 2},
		{name: "many", samples: func() []float64 {
			s := make([]float64, 1000)
			for i := range s {
				s[i] = float64((i * 7919) % 1000)
			}
			return s
		}(), points: 50, wantLen: 50},
		{name: "one point", samples: []float64{4, 2, 9}, points: 1, wantLen: 1},
		{name: "nan ignored", samples: []float64{math.NaN(), 2, 1}, points: 5, wantLen: 2},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			orig := slices.Clone(tc.samples)
			x, y := CDF(tc.samples, tc.points)
			if !slices.EqualFunc(orig, tc.samples, func(a, b float64) bool { return a == b || (math.IsNaN(a) && math.IsNaN(b)) }) {
				t.Errorf("input mutated: %v -> %v", orig, tc.samples)
			}
			if len(x) != len(y) {
				t.Fatalf("len(x)=%d len(y)=%d", len(x), len(y))
			}
			if tc.wantLen >= 0 && len(x) != tc.wantLen {
				t.Errorf("len = %d, want %d", len(x), tc.wantLen)
			}
			if len(x) > tc.points && tc.points > 0 {
				t.Errorf("len %d > points %d", len(x), tc.points)
			}
			for i := 1; i < len(x); i++ {
				if x[i] < x[i-1] || y[i] <= y[i-1] {
					t.Errorf("not monotone at %d: (%v,%v) after (%v,%v)", i, x[i], y[i], x[i-1], y[i-1])
				}
			}
			if len(y) > 0 {
				if y[len(y)-1] != 1 {
					t.Errorf("y ends at %v, want 1", y[len(y)-1])
				}
				if y[0] <= 0 {
					t.Errorf("y starts at %v", y[0])
				}
				mx := math.Inf(-1)
				for _, v := range tc.samples {
					if !math.IsNaN(v) {
						mx = max(mx, v)
					}
				}
				if x[len(x)-1] != mx {
					t.Errorf("x ends at %v, want max %v", x[len(x)-1], mx)
				}
			}
		})
	}
}

func TestFormatValue(t *testing.T) {
	for v, want := range map[float64]string{
		0: "0", 7: "7", 288: "288", 12.34: "12.3", 0.5: "0.5", 1234: "1234",
		12345: "12.3k", 20000: "20k", 2.5e6: "2.5M", 0.001: "0.001", -3: "-3",
	} {
		if got := FormatValue(v); got != want {
			t.Errorf("FormatValue(%v) = %q, want %q", v, got, want)
		}
	}
	if got := FormatValue(math.NaN()); got != "n/a" {
		t.Errorf("FormatValue(NaN) = %q", got)
	}
}

// TestHTMLPage writes the three charts into one HTML page, as the report
// does; open it in a browser to look at them (go test -run HTMLPage -v).
func TestHTMLPage(t *testing.T) {
	var strategies []Bar
	var stacks []Stack
	var lines []Line
	for i, name := range []string{"none", "go-mutex", "sql-atomic", "sql-for-update", "redis-lua", "redis-lock", "etcd-lock"} {
		v := float64(i * 53)
		strategies = append(strategies, Bar{Label: name, Value: v, Flawed: i == 0 || i == 1, Link: "#" + name})
		stacks = append(stacks, Stack{Label: name, Parts: []float64{100, float64(900 - i*100), float64(i * 10), 0}, Flawed: i == 0})
		var samples []float64
		for j := range 500 {
			samples = append(samples, 0.5*math.Exp(float64(j%97)/15)+float64(i))
		}
		x, y := CDF(samples, 100)
		lines = append(lines, Line{Label: name, X: x, Y: y, Flawed: i == 0})
	}
	strategies = append(strategies, Bar{Label: "zk-lock", Value: 0})
	stacks = append(stacks, Stack{Label: "zk-lock", Parts: []float64{0, 0, 0, 0}})

	var b bytes.Buffer
	b.WriteString("<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>charts</title></head>\n<body style=\"max-width:1200px;margin:auto\">\n")
	b.Write(BarChart("Throughput per strategy", "purchases/s", strategies, "sql-atomic 106/s", 106))
	b.Write(StackedBars("Outcomes per strategy", "requests", []string{"sold", "sold out", "error", "timeout"}, []string{"#2e7d32", "#9e9e9e", "#c62828", "#f9a825"}, stacks))
	b.Write(LineChart("Latency CDF", "latency (ms)", "fraction of requests", lines, true))
	b.WriteString("</body></html>\n")

	path := filepath.Join(t.TempDir(), "charts.html")
	if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(path)
	if err != nil || fi.Size() == 0 {
		t.Fatalf("page not written: %v", err)
	}
	if dir := os.Getenv("CHART_OUT"); dir != "" {
		_ = os.WriteFile(filepath.Join(dir, "charts.html"), b.Bytes(), 0o644)
	}
	t.Logf("wrote %s (%d bytes)", path, fi.Size())
}
