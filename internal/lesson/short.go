package lesson

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
	"unicode/utf8"
)

// ShortUnitRatio is the unit of a figure that is a ratio of two
// throughputs: the figure a throughput lesson's verdict rests on.
const ShortUnitRatio = "ratio"

// MainFigure is the figure the lesson's verdict rests on: its first
// ratio (a throughput lesson compares two strategies), else its first
// figure; nil for a lesson without figures (a skipped one).
func (o Outcome) MainFigure() *Figure {
	for i := range o.Figures {
		if o.Figures[i].Unit == ShortUnitRatio {
			return &o.Figures[i]
		}
	}
	if len(o.Figures) > 0 {
		return &o.Figures[0]
	}
	return nil
}

// Short is the deciding figure in at most width runes: the main
// figure's bars as "label value", its unit once at the end (a share's %
// after each value, a ratio's none), as many bars as fit and "…" for the
// rest. "-" for a lesson without figures.
func (o Outcome) Short(width int) string {
	f := o.MainFigure()
	if f == nil || len(f.Bars) == 0 {
		return "-"
	}
	pct := strings.HasPrefix(f.Unit, "%")
	tail := ""
	if !pct && f.Unit != ShortUnitRatio && f.Unit != "" {
		tail = " " + f.Unit
	}
	bars := make([]string, len(f.Bars))
	for i, b := range f.Bars {
		v := shortValue(b.Value)
		if pct {
			v += "%"
		}
		bars[i] = b.Label + " " + v
	}
	for n := len(bars); n > 0; n-- {
		s := strings.Join(bars[:n], ", ")
		if n < len(bars) {
			s += ", …"
		}
		s += tail
		if utf8.RuneCountInString(s) <= width || n == 1 {
			return clip(s, width)
		}
	}
	return "-"
}

// shortValue prints a figure's value with about three significant
// digits: 2908, 27.5, 0.39, 1.
func shortValue(v float64) string {
	a := v
	if a < 0 {
		a = -a
	}
	prec := 2
	switch {
	case a >= 100:
		prec = 0
	case a >= 10:
		prec = 1
	}
	s := strconv.FormatFloat(v, 'f', prec, 64)
	if strings.Contains(s, ".") {
		s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
	}
	return s
}

// clip cuts s to width runes, the last one "…" when it cut.
func clip(s string, width int) string {
	if utf8.RuneCountInString(s) <= width {
		return s
	}
	if width < 1 {
		return ""
	}
	r := []rune(s)
	return string(r[:width-1]) + "…"
}

// ShortWidth is the widest line WriteShortSummary prints, in runes.
const ShortWidth = 120

// WriteShortSummary prints the course at a glance in at most ShortWidth
// runes a line: per lesson its number, title, verdict (without a skip's
// reason) and deciding figure (Outcome.Short, given the room the other
// columns leave). WriteSummary prints the source's figure and ours in
// full.
func WriteShortSummary(w io.Writer, outs []Outcome) error {
	head := []string{"#", "lesson", "verdict"}
	rows := make([][]string, 0, len(outs))
	widths := make([]int, len(head))
	for i, h := range head {
		widths[i] = utf8.RuneCountInString(h)
	}
	for _, o := range outs {
		l, err := Find(fmt.Sprint(o.Lesson))
		if err != nil {
			return err
		}
		r := []string{fmt.Sprint(o.Lesson), l.TitleEN, string(o.Verdict)}
		for i, c := range r {
			widths[i] = max(widths[i], utf8.RuneCountInString(c))
		}
		rows = append(rows, r)
	}
	room := ShortWidth
	for _, n := range widths {
		room -= n + 2 // the tabwriter's padding
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, strings.Join(append(head, "deciding figure"), "\t"))
	for i, o := range outs {
		fmt.Fprintln(tw, strings.Join(append(rows[i], o.Short(room)), "\t"))
	}
	if err := tw.Flush(); err != nil {
		return fmt.Errorf("write the course's short summary: %w", err)
	}
	return nil
}
