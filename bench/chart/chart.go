// Package chart draws the bench report's charts as hand-written SVG: vertical
// bar charts, horizontal stacked bar charts and line charts (with a log10 x
// axis for latency CDFs), using only the standard library.
//
// The charts are meant to be projected in a classroom, so every one of them
// scales with the window (a viewBox and width="100%", no fixed pixel size),
// uses system-ui/sans-serif text of at least 16 units at the 960-unit-wide
// viewBox, has a title, axis labels and light gridlines, writes the values on
// or next to the bars, and never hides a zero: a zero bar is a thin 2-unit bar
// labelled "0". All text is XML-escaped and every chart is well-formed XML, so
// it can be inlined into an HTML page or saved as a standalone .svg file.
//
// Element classes are stable and may be styled or inspected: "bar" (one rect
// per bar), "value" (value labels), "flawed" (the ✗ marker), "ref"
// (the reference line), "part" (one rect per non-zero stacked part), "zero"
// (the 2-unit marker of an all-zero stack), "legend", "line" (one path per
// line), "dot" (one circle per point of a line with Points, or of a
// one-point line), "tick" and "grid".
package chart

import (
	"bytes"
	"encoding/xml"
	"fmt"
	"hash/fnv"
	"html/template"
	"math"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// noStroke is SVG's "no paint" for a stroke.
const noStroke = "transparent"

// Layout constants, in viewBox units.
const (
	width      = 960.0 // viewBox width
	fontFamily = "system-ui, -apple-system, Segoe UI, Roboto, Helvetica, Arial, sans-serif"
	titleSize  = 24.0
	labelSize  = 18.0 // axis labels
	textSize   = 16.0 // tick labels, values, legend; the minimum
	charW      = 0.56 // estimated average glyph width, as a fraction of the font size

	gridColour  = "#e2e2e2"
	axisColour  = "#333333"
	textColour  = "#222222"
	barColour   = "#3366aa"
	greyColour  = "#8a8a8a"
	refColour   = "#c0392b"
	flawedColor = "#b03a2e"
	nbsp        = "\u00a0" // a space that SVG whitespace handling keeps

	// halo keeps a label readable where it crosses a line or a bar.
	halo = ` stroke="#ffffff" stroke-width="4" stroke-linejoin="round" paint-order="stroke"`
)

// Palette is the default series palette: the Okabe–Ito colour-blind-safe
// colours (without yellow, which vanishes on a projector) plus a few extra.
var Palette = []string{
	"#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9",
	"#000000", "#8C564B", "#7F7F7F", "#BCBD22", "#17BECF", "#9467BD",
}

// Mark is drawn beside the label of a flagged bar, stack or line (Flawed).
// What it means is the caller's to say, in the chart's title: a flawed
// strategy in a lesson's figure ("✗ = flawed by design"), a strategy the
// run's settings leave unsafe in a bench report ("✗ = not safe at this
// setting").
const Mark = "✗"

// Bar is one category of a bar chart.
type Bar struct {
	Label  string
	Value  float64
	Flawed bool   // drawn hatched/grey with a ✗ under the label (the title says what ✗ means)
	Link   string // optional: the bar is wrapped in <a href=Link>
}

// Stack is one bar of a stacked bar chart: Parts in the order of the series.
type Stack struct {
	Label  string
	Parts  []float64
	Flawed bool
}

// Line is one series of a line chart.
type Line struct {
	Label  string
	X, Y   []float64
	Flawed bool // drawn dashed
	Points bool // a dot on every point (for a few measured points, as a sweep has)
}

// ---------------------------------------------------------------- helpers

// esc returns s escaped for XML text and attribute values.
func esc(s string) string {
	var b strings.Builder
	_ = xml.EscapeText(&b, []byte(s))
	return b.String()
}

// n formats a coordinate: finite, at most one decimal.
func n(v float64) string {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		v = 0
	}
	v = math.Round(v*10) / 10
	if v == 0 {
		v = 0 // no "-0"
	}
	return strconv.FormatFloat(v, 'f', -1, 64)
}

// finite reports whether v is neither NaN nor infinite.
func finite(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }

// trim removes trailing zeros after a decimal point.
func trim(s string) string {
	if strings.Contains(s, ".") {
		s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
	}
	return s
}

// FormatValue formats a value for a label: integers as integers, 10 000 and
// more as 12.3k / 4.5M, small fractions with two significant decimals.
func FormatValue(v float64) string {
	if !finite(v) {
		return "n/a"
	}
	a := math.Abs(v)
	switch {
	case a >= 1e6:
		return trim(strconv.FormatFloat(v/1e6, 'f', 1, 64)) + "M"
	case a >= 1e4:
		return trim(strconv.FormatFloat(v/1e3, 'f', 1, 64)) + "k"
	case a >= 100 || v == math.Trunc(v):
		return strconv.FormatFloat(v, 'f', 0, 64)
	case a >= 10:
		return trim(strconv.FormatFloat(v, 'f', 1, 64))
	case a >= 0.01:
		return trim(strconv.FormatFloat(v, 'f', 2, 64))
	default:
		return strconv.FormatFloat(v, 'g', 2, 64)
	}
}

// textW estimates the rendered width of s at the given font size.
func textW(s string, size float64) float64 {
	return float64(utf8.RuneCountInString(s)) * size * charW
}

// clip shortens s to at most max runes, ending in "…".
func clip(s string, max int) string {
	if utf8.RuneCountInString(s) <= max {
		return s
	}
	r := []rune(s)
	return string(r[:max-1]) + "…"
}

// uid derives a deterministic element id prefix from the chart's content, so
// that several charts inlined in one HTML page do not share pattern ids.
func uid(kind, title string, extra int) string {
	h := fnv.New32a()
	fmt.Fprintf(h, "%s\x00%s\x00%d", kind, title, extra)
	return fmt.Sprintf("c%08x", h.Sum32())
}

// niceStep returns a 1-2-5 step that divides span into about n intervals.
func niceStep(span float64, n int) float64 {
	if !(span > 0) || !finite(span) {
		return 1
	}
	raw := span / float64(n)
	p := math.Pow(10, math.Floor(math.Log10(raw)))
	switch f := raw / p; {
	case f <= 1:
		return p
	case f <= 2:
		return 2 * p
	case f <= 5:
		return 5 * p
	default:
		return 10 * p
	}
}

// niceRange extends [lo, hi] to multiples of a 1-2-5 step and returns the ticks.
func niceRange(lo, hi float64, n int) (float64, float64, []float64) {
	if !finite(lo) || !finite(hi) {
		lo, hi = 0, 1
	}
	if hi <= lo {
		if lo == 0 {
			hi = 1
		} else {
			d := math.Abs(lo) * 0.1
			lo, hi = lo-d, hi+d
		}
	}
	step := niceStep(hi-lo, n)
	lo = math.Floor(lo/step+1e-9) * step
	hi = math.Ceil(hi/step-1e-9) * step
	var ticks []float64
	for i := 0; ; i++ {
		t := lo + float64(i)*step
		if t > hi+step*1e-6 || i > 100 {
			break
		}
		ticks = append(ticks, math.Round(t/step)*step)
	}
	return lo, hi, ticks
}

// svg is a chart under construction.
type svg struct {
	b bytes.Buffer
}

func (s *svg) f(format string, args ...any) { fmt.Fprintf(&s.b, format, args...) }

// open writes the root element and the title.
func (s *svg) open(title string, height float64) {
	s.f(`<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 %s %s" width="100%%" preserveAspectRatio="xMidYMid meet" style="height:auto;max-width:100%%" role="img" aria-label="%s" font-family="%s" font-size="%s" fill="%s">`+"\n",
		n(width), n(height), esc(title), fontFamily, n(textSize), textColour)
	s.f("<title>%s</title>\n", esc(title))
	s.f(`<rect x="0" y="0" width="%s" height="%s" fill="#ffffff"/>`+"\n", n(width), n(height))
	s.f(`<text class="title" x="%s" y="32" text-anchor="middle" font-size="%s" font-weight="600">%s</text>`+"\n",
		n(width/2), n(titleSize), esc(clip(title, 70)))
}

func (s *svg) close() []byte {
	s.f("</svg>\n")
	return s.b.Bytes()
}

// text writes a text element; attrs is inserted verbatim (already escaped).
func (s *svg) text(class string, x, y float64, anchor, attrs, content string) {
	s.f(`<text class="%s" x="%s" y="%s" text-anchor="%s"%s>%s</text>`+"\n",
		class, n(x), n(y), anchor, attrs, esc(content))
}

// newChart opens a chart of height with its title. id (from kind, title
// and n) names the chart's elements; a hatched chart gets the hatch
// pattern id-hatch.
func newChart(kind, title string, n int, height float64, hatched bool) (*svg, string) {
	s := &svg{}
	s.open(title, height)
	id := uid(kind, title, n)
	if hatched {
		s.hatch(id + "-hatch")
	}
	return s, id
}

// hatch writes a diagonal grey hatch pattern with the given id.
func (s *svg) hatch(id string) {
	s.f(`<defs><pattern id="%s" patternUnits="userSpaceOnUse" width="8" height="8" patternTransform="rotate(45)">`+
		`<rect width="8" height="8" fill="#d9d9d9"/><line x1="0" y1="0" x2="0" y2="8" stroke="%s" stroke-width="3"/></pattern></defs>`+"\n",
		id, greyColour)
}

// yLabel writes a vertical axis label centred on [top, bottom] at x.
func (s *svg) yLabel(label string, x, top, bottom float64) {
	if label == "" {
		return
	}
	cy := (top + bottom) / 2
	s.f(`<text class="axis-label" x="%s" y="%s" text-anchor="middle" font-size="%s" transform="rotate(-90 %s %s)">%s</text>`+"\n",
		n(x), n(cy), n(labelSize), n(x), n(cy), esc(clip(label, 50)))
}

// legendItem is one legend entry.
type legendItem struct {
	label  string
	colour string
	dashed bool
	line   bool // a line swatch instead of a square
}

// legendHeight returns the height the legend takes when laid out in rows
// across [left, right].
func legendLayout(items []legendItem, left, right float64) (pos [][2]float64, rows int) {
	x, row := left, 0
	for _, it := range items {
		w := 30 + textW(it.label, textSize) + 24
		if x+w > right && x > left {
			x, row = left, row+1
		}
		pos = append(pos, [2]float64{x, float64(row)})
		x += w
	}
	if len(items) > 0 {
		rows = row + 1
	}
	return pos, rows
}

// legend writes the legend starting at y (top of the first row).
func (s *svg) legend(items []legendItem, left, right, y float64) {
	pos, _ := legendLayout(items, left, right)
	s.f(`<g class="legend">` + "\n")
	for i, it := range items {
		x, ry := pos[i][0], y+pos[i][1]*28
		if it.line {
			dash := ""
			if it.dashed {
				dash = ` stroke-dasharray="6 4"`
			}
			s.f(`<line x1="%s" y1="%s" x2="%s" y2="%s" stroke="%s" stroke-width="4"%s/>`+"\n",
				n(x), n(ry+10), n(x+24), n(ry+10), esc(it.colour), dash)
		} else {
			s.f(`<rect x="%s" y="%s" width="20" height="20" fill="%s"/>`+"\n", n(x), n(ry), esc(it.colour))
		}
		s.text("legend-label", x+30, ry+16, "start", "", it.label)
	}
	s.f("</g>\n")
}

// ---------------------------------------------------------------- BarChart

// The bar chart's frame.
const (
	barLeft, barRight = 100.0, 30.0
	barPlotH          = 380.0
	barMaxLabel       = 28 // runes
)

// barLayout is a bar chart's geometry: the plot's top and bottom, the
// y range, each category's slot and whether the labels are rotated.
type barLayout struct {
	top, bottom, height float64
	yMax                float64
	ticks               []float64
	slot                float64
	rotate, anyFlawed   bool
}

// y is the plot's y of value v.
func (l barLayout) y(v float64) float64 { return l.bottom - v/l.yMax*barPlotH }

// BarChart draws vertical bars (labels rotated -30° if long), y axis from 0.
// When refLabel != "" a dashed horizontal reference line is drawn at refValue,
// labelled refLabel (e.g. "sql-atomic 288/s"). Negative and non-finite values
// are drawn as zero bars but labelled with their value.
func BarChart(title, yLabel string, bars []Bar, refLabel string, refValue float64) []byte {
	hasRef := refLabel != ""
	l := layoutBars(bars, hasRef, refValue)

	s, id := newChart("bar", title, len(bars), l.height, l.anyFlawed)
	s.yGrid(l.ticks, l.y, barLeft, barRight)
	s.yLabel(yLabel, 26, l.top, l.bottom)

	// bars; the value labels are written last, above the reference line
	values := &svg{}
	bw := min(l.slot*0.7, 110)
	for i, b := range bars {
		cx := barLeft + l.slot*(float64(i)+0.5)
		h := s.bar(b, l, id, cx, bw)
		values.text("value", cx, l.bottom-h-6, "middle", ` font-weight="600"`+halo, FormatValue(b.Value))
		s.barLabel(b, l, cx)
	}
	s.axes(barLeft, barRight, l.top, l.bottom)
	if hasRef {
		s.refLine(refLabel, refValue, l)
	}
	s.b.Write(values.b.Bytes())
	return s.close()
}

// layoutBars sizes a bar chart: the y range covers the bars and the
// reference value; long labels rotate, and flawed markers take a line.
func layoutBars(bars []Bar, hasRef bool, refValue float64) barLayout {
	l := barLayout{top: 64.0}
	if hasRef {
		l.top += 8
	}
	plotW := width - barLeft - barRight

	maxV := 0.0
	for _, b := range bars {
		if finite(b.Value) && b.Value > maxV {
			maxV = b.Value
		}
	}
	if hasRef && finite(refValue) && refValue > maxV {
		maxV = refValue
	}
	_, l.yMax, l.ticks = niceRange(0, maxV*1.08, 5)

	l.slot = plotW
	if len(bars) > 0 {
		l.slot = plotW / float64(len(bars))
	}
	longest := 0.0
	for _, b := range bars {
		w := textW(clip(b.Label, barMaxLabel), textSize)
		if w > l.slot*0.92 {
			l.rotate = true
		}
		if b.Flawed {
			l.anyFlawed = true
			w += textW(" "+Mark, textSize)
		}
		longest = max(longest, w)
	}
	labelBand := 30.0
	if l.anyFlawed {
		labelBand += 24 // the marker's line under the label
	}
	if l.rotate {
		// a -30° label of width w drops by w/2; the marker is on the same line.
		labelBand = 24 + longest*0.5 + 10
	}
	l.height = l.top + barPlotH + labelBand + 12
	l.bottom = l.top + barPlotH
	return l
}

// bar writes b's bar centred on cx, bw wide (hatched when flawed, in a
// link when it has one), and returns its height.
func (s *svg) bar(b Bar, l barLayout, id string, cx, bw float64) float64 {
	v := b.Value
	if !finite(v) || v < 0 {
		v = 0
	}
	h := max(l.bottom-l.y(v), 2)
	fill, stroke := barColour, noStroke
	if b.Flawed {
		fill, stroke = "url(#"+id+"-hatch)", greyColour
	}
	if b.Link != "" {
		s.f(`<a href="%s">`, esc(b.Link))
	}
	s.f(`<rect class="bar" x="%s" y="%s" width="%s" height="%s" fill="%s" stroke="%s"><title>%s: %s</title></rect>`,
		n(cx-bw/2), n(l.bottom-h), n(bw), n(h), fill, stroke, esc(b.Label), esc(FormatValue(b.Value)))
	if b.Link != "" {
		s.f(`</a>`)
	}
	s.f("\n")
	return h
}

// barLabel writes b's category label under its bar at cx, and the flawed
// marker: under the label, or after it when the labels are rotated.
func (s *svg) barLabel(b Bar, l barLayout, cx float64) {
	label := clip(b.Label, barMaxLabel)
	ly := l.bottom + 22
	anchor, tr := "middle", ""
	if l.rotate {
		tr = " rotate(-30)"
		ly = l.bottom + 18
	}
	s.f(`<g transform="translate(%s %s)%s">`, n(cx), n(ly), tr)
	if l.rotate {
		// one rotated line; the marker follows the label, next to the bar,
		// so that it cannot run into the neighbouring label
		s.f(`<text class="label" x="0" y="0" text-anchor="end" dominant-baseline="middle">%s`, esc(label))
		if b.Flawed {
			s.f(`<tspan class="flawed" dx="8" fill="%s" font-weight="600">%s</tspan>`, flawedColor, Mark)
		}
		s.f(`</text>`)
	} else {
		s.f(`<text class="label" x="0" y="0" text-anchor="%s">%s</text>`, anchor, esc(label))
		if b.Flawed {
			s.f(`<text class="flawed" x="0" y="22" text-anchor="middle" fill="%s" font-weight="600">%s</text>`, flawedColor, Mark)
		}
	}
	s.f("</g>\n")
}

// refLine writes the dashed reference line at value (0 when negative or
// not finite), labelled at its right end.
func (s *svg) refLine(label string, value float64, l barLayout) {
	if !finite(value) || value < 0 {
		value = 0
	}
	ry := l.y(value)
	s.f(`<g class="ref"><line x1="%s" y1="%s" x2="%s" y2="%s" stroke="%s" stroke-width="2.5" stroke-dasharray="10 6"/>`,
		n(barLeft), n(ry), n(width-barRight), n(ry), refColour)
	s.f(`<text x="%s" y="%s" text-anchor="end" fill="%s" font-weight="600"%s>%s</text></g>`+"\n",
		n(width-barRight-4), n(ry-7), refColour, halo, esc(clip(label, 60)))
}

// yGrid writes a horizontal gridline and a tick label at each tick, across
// [left, width-right]; y places a value.
func (s *svg) yGrid(ticks []float64, y func(float64) float64, left, right float64) {
	for _, t := range ticks {
		ty := y(t)
		s.f(`<line class="grid" x1="%s" y1="%s" x2="%s" y2="%s" stroke="%s" stroke-width="1"/>`+"\n",
			n(left), n(ty), n(width-right), n(ty), gridColour)
		s.text("tick", left-8, ty+5.5, "end", "", FormatValue(t))
	}
}

// axes writes the x axis at bottom across [left, width-right], then the y
// axis at left from top to bottom.
func (s *svg) axes(left, right, top, bottom float64) {
	s.f(`<line class="axis" x1="%s" y1="%s" x2="%s" y2="%s" stroke="%s" stroke-width="2"/>`+"\n",
		n(left), n(bottom), n(width-right), n(bottom), axisColour)
	s.f(`<line class="axis" x1="%s" y1="%s" x2="%s" y2="%s" stroke="%s" stroke-width="2"/>`+"\n",
		n(left), n(top), n(left), n(bottom), axisColour)
}

// xLabel writes the horizontal axis label centred at x, baseline y.
func (s *svg) xLabel(label string, x, y float64) {
	if label == "" {
		return
	}
	s.f(`<text class="axis-label" x="%s" y="%s" text-anchor="middle" font-size="%s">%s</text>`+"\n",
		n(x), n(y), n(labelSize), esc(clip(label, 70)))
}

// ---------------------------------------------------------------- StackedBars

// Luminance returns the WCAG 2 relative luminance of a #rrggbb (or #rgb) colour (0.5 if unparsable).
func Luminance(c string) float64 {
	c = strings.TrimPrefix(c, "#")
	if len(c) == 3 {
		c = string([]byte{c[0], c[0], c[1], c[1], c[2], c[2]})
	}
	v, err := strconv.ParseUint(c, 16, 32)
	if len(c) != 6 || err != nil {
		return 0.5
	}
	lin := func(x uint64) float64 {
		f := float64(x) / 255
		if f <= 0.03928 {
			return f / 12.92
		}
		return math.Pow((f+0.055)/1.055, 2.4)
	}
	return 0.2126*lin(v>>16&0xff) + 0.7152*lin(v>>8&0xff) + 0.0722*lin(v&0xff)
}

// StackedBars draws one horizontal stacked bar per Stack (readable with 14
// strategies), a legend of the series names with fixed colours (colours in
// the same order as series; Palette if nil, cycled if short), each part's
// count written inside it when wide enough and the total after the bar. A
// stack whose parts are all 0 still shows a 2-unit bar and "0". Negative and
// non-finite parts count as 0.
func StackedBars(title, xLabel string, series []string, colours []string, stacks []Stack) []byte {
	if len(colours) == 0 {
		colours = Palette
	}
	l := layoutStacks(series, colours, stacks)

	s, id := newChart("stack", title, len(stacks), l.height, l.anyFlawed)
	s.legend(l.items, l.left, width-stackRight, 52)
	for _, t := range l.ticks {
		tx := l.x(t)
		s.f(`<line class="grid" x1="%s" y1="%s" x2="%s" y2="%s" stroke="%s" stroke-width="1"/>`+"\n",
			n(tx), n(l.top), n(tx), n(l.bottom), gridColour)
		s.text("tick", tx, l.bottom+22, "middle", "", FormatValue(t))
	}
	s.xLabel(xLabel, l.left+l.plotW/2, l.bottom+52)
	for i, st := range stacks {
		s.stack(st, l, l.top+float64(i)*stackRowH+(stackRowH-stackBarH)/2, id)
	}
	s.f(`<line class="axis" x1="%s" y1="%s" x2="%s" y2="%s" stroke="%s" stroke-width="2"/>`+"\n",
		n(l.left), n(l.top), n(l.left), n(l.bottom), axisColour)
	s.f(`<line class="axis" x1="%s" y1="%s" x2="%s" y2="%s" stroke="%s" stroke-width="2"/>`+"\n",
		n(l.left), n(l.bottom), n(l.left+l.plotW), n(l.bottom), axisColour)
	return s.close()
}

// The stacked bar chart's frame.
const (
	stackRight    = 30.0
	stackRowH     = 36.0
	stackBarH     = 26.0
	stackMaxLabel = 30
)

// stackLayout is a stacked bar chart's geometry: the label column, the
// plot, the x range and the legend.
type stackLayout struct {
	left, plotW         float64
	top, bottom, height float64
	xMax                float64
	ticks               []float64
	anyFlawed           bool
	series, colours     []string
	items               []legendItem
}

// x is the plot's x of value v.
func (l stackLayout) x(v float64) float64 { return l.left + v/l.xMax*l.plotW }

// colour is series i's colour, cycling through the colours.
func (l stackLayout) colour(i int) string { return l.colours[i%len(l.colours)] }

// layoutStacks sizes a stacked bar chart: the label column fits the
// longest label (at most 380), the x range the largest total, and the plot
// starts under the legend's rows.
func layoutStacks(series, colours []string, stacks []Stack) stackLayout {
	l := stackLayout{series: series, colours: colours}
	labelW := 60.0
	maxT := 0.0
	for _, st := range stacks {
		lw := textW(clip(st.Label, stackMaxLabel), textSize)
		if st.Flawed {
			l.anyFlawed = true
			lw += textW(" "+Mark, textSize)
		}
		labelW = max(labelW, lw)
		maxT = max(maxT, stackTotal(st))
	}
	l.left = min(labelW+20, 380)
	totalW := textW(FormatValue(maxT), textSize) + 16
	l.plotW = width - l.left - stackRight - totalW

	l.items = make([]legendItem, len(series))
	for i, name := range series {
		l.items[i] = legendItem{label: name, colour: l.colour(i)}
	}
	_, legendRows := legendLayout(l.items, l.left, width-stackRight)
	l.top = 56.0 + float64(legendRows)*28 + 10
	plotH := max(float64(len(stacks)), 1) * stackRowH
	l.bottom = l.top + plotH
	l.height = l.bottom + 70
	_, l.xMax, l.ticks = niceRange(0, maxT, 5)
	return l
}

// stackTotal is the sum of st's positive finite parts.
func stackTotal(st Stack) float64 {
	total := 0.0
	for _, p := range st.Parts {
		if finite(p) && p > 0 {
			total += p
		}
	}
	return total
}

// stack writes st's row with its bar's top at ry: the label against the
// axis, each part (its value inside when it fits), the flawed hatch, and
// the total after the bar.
func (s *svg) stack(st Stack, l stackLayout, ry float64, id string) {
	cy := ry + stackBarH/2
	// label, right-aligned against the axis
	s.f(`<text class="label" x="%s" y="%s" text-anchor="end" dominant-baseline="middle">%s`,
		n(l.left-10), n(cy), esc(clip(st.Label, stackMaxLabel)))
	if st.Flawed {
		s.f(`<tspan class="flawed" dx="8" fill="%s" font-weight="600">%s</tspan>`, flawedColor, Mark)
	}
	s.f("</text>\n")

	opacity := ""
	if st.Flawed {
		opacity = ` fill-opacity="0.55"`
	}
	acc := 0.0
	for j, p := range st.Parts {
		if !finite(p) || p <= 0 {
			continue
		}
		x0, x1 := l.x(acc), l.x(acc+p)
		acc += p
		name := ""
		if j < len(l.series) {
			name = l.series[j]
		}
		c := l.colour(j)
		s.f(`<rect class="part" x="%s" y="%s" width="%s" height="%s" fill="%s"%s stroke="#ffffff" stroke-width="1"><title>%s — %s: %s</title></rect>`+"\n",
			n(x0), n(ry), n(max(x1-x0, 2)), n(stackBarH), esc(c), opacity, esc(st.Label), esc(name), esc(FormatValue(p)))
		label := FormatValue(p)
		if x1-x0 >= textW(label, textSize)+8 {
			fg := "#ffffff"
			if Luminance(c) > 0.4 || st.Flawed {
				fg = "#111111"
			}
			s.f(`<text class="part-value" x="%s" y="%s" text-anchor="middle" dominant-baseline="middle" fill="%s" font-weight="600">%s</text>`+"\n",
				n((x0+x1)/2), n(cy), fg, esc(label))
		}
	}
	if st.Flawed && acc > 0 {
		s.f(`<rect class="hatch" x="%s" y="%s" width="%s" height="%s" fill="url(#%s-hatch)" fill-opacity="0.45"/>`+"\n",
			n(l.left), n(ry), n(l.x(acc)-l.left), n(stackBarH), id)
	}
	end := l.x(acc)
	if acc == 0 {
		s.f(`<rect class="zero" x="%s" y="%s" width="2" height="%s" fill="%s"/>`+"\n",
			n(l.left), n(ry), n(stackBarH), greyColour)
		end = l.left + 2
	}
	s.text("value", end+6, cy, "start", ` dominant-baseline="middle" font-weight="600"`+halo, FormatValue(acc))
}

// ---------------------------------------------------------------- LineChart

// logTicks returns the 1-2-5 ticks covering [lo, hi] (both > 0), the
// extended domain and which ticks are decades.
func logTicks(lo, hi float64) (dlo, dhi float64, ticks []float64) {
	k0 := int(math.Floor(math.Log10(lo) + 1e-9))
	k1 := int(math.Ceil(math.Log10(hi) - 1e-9))
	var all []float64
	for k := k0 - 1; k <= k1; k++ {
		p := math.Pow(10, float64(k))
		for _, m := range []float64{1, 2, 5} {
			all = append(all, cleanPow(m, k, p))
		}
	}
	// the domain runs from the largest tick <= lo to the smallest tick >= hi
	dlo, dhi = all[0], all[len(all)-1]
	for _, t := range all {
		if t <= lo*(1+1e-9) {
			dlo = t
		}
	}
	for i := len(all) - 1; i >= 0; i-- {
		if all[i] >= hi*(1-1e-9) {
			dhi = all[i]
		}
	}
	if dhi <= dlo {
		dhi = dlo * 10
	}
	for _, t := range all {
		if t >= dlo*(1-1e-9) && t <= dhi*(1+1e-9) {
			ticks = append(ticks, t)
		}
	}
	return dlo, dhi, ticks
}

// cleanPow returns m·10^k without floating-point noise.
func cleanPow(m float64, k int, p float64) float64 {
	v, err := strconv.ParseFloat(strconv.FormatFloat(m*p, 'g', 6, 64), 64)
	if err != nil {
		return m * p
	}
	return v
}

// isDecade reports whether t is a power of ten.
func isDecade(t float64) bool {
	l := math.Log10(t)
	return math.Abs(l-math.Round(l)) < 1e-9
}

// The line chart's frame.
const lineLeft, lineRight, linePlotH = 100.0, 40.0, 400.0

// point is one drawn point of a line.
type point struct{ x, y float64 }

// lineLayout is a line chart's geometry: the points kept, the x and y
// domains with their ticks, the plot's top and bottom, and the legend.
type lineLayout struct {
	logX                bool
	pts                 [][]point
	plotW               float64
	dxlo, dxhi          float64
	xticks              []float64
	dylo, dyhi          float64
	yticks              []float64
	top, bottom, height float64
	items               []legendItem
}

// xpos is the plot's x of value v: log10 or linear.
func (l *lineLayout) xpos(v float64) float64 {
	if l.logX {
		l0, l1 := math.Log10(l.dxlo), math.Log10(l.dxhi)
		return lineLeft + (math.Log10(v)-l0)/(l1-l0)*l.plotW
	}
	return lineLeft + (v-l.dxlo)/(l.dxhi-l.dxlo)*l.plotW
}

// ypos is the plot's y of value v.
func (l *lineLayout) ypos(v float64) float64 {
	return l.bottom - (v-l.dylo)/(l.dyhi-l.dylo)*linePlotH
}

// LineChart draws one polyline per line (one colour per line, dashed when
// Flawed) with a legend. The x axis is linear, or log10 when logX (points with
// x <= 0 are then skipped), with ticks at 1-2-5 per decade; the y axis is
// linear. Made for the latency CDF: x = latency in ms on a log axis, y =
// fraction 0..1. Non-finite points are skipped; a line with a single point is
// drawn as a dot, an empty line draws nothing but keeps its legend entry.
func LineChart(title, xLabel, yLabel string, lines []Line, logX bool) []byte {
	l := layoutLines(lines, logX)

	s := &svg{}
	s.open(title, l.height)
	s.legend(l.items, lineLeft, width-lineRight, 52)
	s.xGrid(l)
	s.yGrid(l.yticks, l.ypos, lineLeft, lineRight)
	s.xLabel(xLabel, lineLeft+l.plotW/2, l.bottom+54)
	s.yLabel(yLabel, 26, l.top, l.bottom)
	for i, line := range lines {
		s.line(line, l.pts[i], Palette[i%len(Palette)], l)
	}
	s.axes(lineLeft, lineRight, l.top, l.bottom)
	return s.close()
}

// layoutLines keeps the drawable points of lines, picks the domains (x
// from the points, 1-10 or 0-1 when there are none; y from 0 when no
// value is negative) and sizes the plot under the legend.
func layoutLines(lines []Line, logX bool) *lineLayout {
	l := &lineLayout{logX: logX, plotW: width - lineLeft - lineRight, pts: make([][]point, len(lines))}
	xlo, xhi := math.Inf(1), math.Inf(-1)
	ylo, yhi := math.Inf(1), math.Inf(-1)
	for i, line := range lines {
		for j := 0; j < len(line.X) && j < len(line.Y); j++ {
			px, py := line.X[j], line.Y[j]
			if !finite(px) || !finite(py) || (logX && px <= 0) {
				continue
			}
			l.pts[i] = append(l.pts[i], point{px, py})
			xlo, xhi = min(xlo, px), max(xhi, px)
			ylo, yhi = min(ylo, py), max(yhi, py)
		}
	}

	if logX {
		if !finite(xlo) {
			xlo, xhi = 1, 10
		}
		l.dxlo, l.dxhi, l.xticks = logTicks(xlo, xhi)
	} else {
		if !finite(xlo) {
			xlo, xhi = 0, 1
		}
		l.dxlo, l.dxhi, l.xticks = niceRange(xlo, xhi, 6)
	}
	if !finite(ylo) {
		ylo, yhi = 0, 1
	}
	ylo = min(ylo, 0)
	l.dylo, l.dyhi, l.yticks = niceRange(ylo, yhi, 5)

	l.items = make([]legendItem, len(lines))
	for i, line := range lines {
		label := clip(line.Label, 40)
		if line.Flawed {
			label += nbsp + Mark
		}
		l.items[i] = legendItem{label: label, colour: Palette[i%len(Palette)], dashed: line.Flawed, line: true}
	}
	_, legendRows := legendLayout(l.items, lineLeft, width-lineRight)
	l.top = 56.0 + float64(legendRows)*28 + 14
	l.bottom = l.top + linePlotH
	l.height = l.bottom + 80
	return l
}

// xGrid writes the vertical gridlines and tick labels; on a log axis the
// minor ticks are lighter, and with many decades only the decades are
// labelled.
func (s *svg) xGrid(l *lineLayout) {
	labelAll := true
	if l.logX {
		decades := math.Log10(l.dxhi) - math.Log10(l.dxlo)
		labelAll = l.plotW/max(decades, 1) >= 150
	}
	for _, t := range l.xticks {
		tx := l.xpos(t)
		major := !l.logX || isDecade(t)
		c, w := gridColour, "1"
		if l.logX && !major {
			c = "#eeeeee"
		}
		s.f(`<line class="grid" x1="%s" y1="%s" x2="%s" y2="%s" stroke="%s" stroke-width="%s"/>`+"\n",
			n(tx), n(l.top), n(tx), n(l.bottom), c, w)
		if major || labelAll {
			s.text("tick", tx, l.bottom+22, "middle", "", FormatValue(t))
		}
	}
}

// line writes one line's path through pts in colour c (dashed when
// flawed), and a dot on each point when it has one point or asks for them.
func (s *svg) line(line Line, pts []point, c string, l *lineLayout) {
	var d strings.Builder
	for j, p := range pts {
		if j == 0 {
			d.WriteString("M")
		} else {
			d.WriteString(" L")
		}
		d.WriteString(n(l.xpos(p.x)) + " " + n(l.ypos(p.y)))
	}
	dash := ""
	if line.Flawed {
		dash = ` stroke-dasharray="8 5"`
	}
	s.f(`<path class="line" d="%s" fill="none" stroke="%s" stroke-width="3" stroke-linejoin="round"%s><title>%s</title></path>`+"\n",
		d.String(), c, dash, esc(line.Label))
	if len(pts) == 1 || line.Points {
		for _, p := range pts {
			s.f(`<circle class="dot" cx="%s" cy="%s" r="5" fill="%s"><title>%s: %s, %s</title></circle>`+"\n",
				n(l.xpos(p.x)), n(l.ypos(p.y)), c, esc(line.Label), esc(FormatValue(p.x)), esc(FormatValue(p.y)))
		}
	}
}

// ---------------------------------------------------------------- CDF

// CDF returns the empirical cumulative distribution of samples at up to
// points quantiles: x[i] is a sample value and y[i] the fraction of samples
// <= x[i]. The first point is the minimum, the last is the maximum with
// y = 1; x is non-decreasing and y strictly increasing (tied samples become
// one point). NaN samples are ignored. samples is not modified.
func CDF(samples []float64, points int) (x, y []float64) {
	s := make([]float64, 0, len(samples))
	for _, v := range samples {
		if !math.IsNaN(v) {
			s = append(s, v)
		}
	}
	if len(s) == 0 || points <= 0 {
		return nil, nil
	}
	slices.Sort(s)
	cnt := len(s)
	points = min(points, cnt)
	last := -1
	for j := 0; j < points; j++ {
		idx := cnt - 1
		if points > 1 {
			idx = j * (cnt - 1) / (points - 1)
		}
		// move to the last occurrence of this value so y counts all ties
		for idx+1 < cnt && s[idx+1] == s[idx] {
			idx++
		}
		if idx <= last {
			continue
		}
		last = idx
		x = append(x, s[idx])
		y = append(y, float64(idx+1)/float64(cnt))
	}
	return x, y
}

// Inline makes an SVG document an HTML fragment for a self-contained page:
// inline SVG needs no namespace declaration, and the pages hold no
// http(s):// string. The charts escape every text they write.
func Inline(svg []byte) template.HTML {
	s := strings.Replace(string(svg), ` xmlns="http://www.w3.org/2000/svg"`, "", 1)
	s = strings.Replace(s, ` xmlns:xlink="http://www.w3.org/1999/xlink"`, "", 1)
	if i := strings.Index(s, "<svg"); i > 0 {
		s = s[i:] // drop an XML declaration
	}
	return template.HTML(s)
}
