package lesson

import (
	"strings"
	"testing"
	"unicode/utf8"
)

// TestOutcomeShort: the deciding figure is the first ratio, else the
// first figure, in as many bars as fit the width.
func TestOutcomeShort(t *testing.T) {
	ops := Figure{Title: "Requests per second (median)", Unit: "req/s", Bars: []FigureBar{{Label: "none", Value: 3062.4}, {Label: "mutex", Value: 1187}}}
	ratio := Figure{Title: "mutex over none", Unit: ShortUnitRatio, Bars: []FigureBar{{Label: "mutex/none", Value: 0.3876}}}
	share := Figure{Title: "Acquired out of order", Unit: "% of waiting pairs", Bars: []FigureBar{{Label: "zookeeper", Value: 4}, {Label: "redis", Value: 27.53}}}
	many := Figure{Title: "ok/s", Unit: "ok/s", Bars: []FigureBar{{Label: "sql-atomic", Value: 2908}, {Label: "mysql-forupdate", Value: 1139},
		{Label: "redis", Value: 641}, {Label: "zookeeper", Value: 410}}}
	for _, tc := range []struct {
		name  string
		figs  []Figure
		width int
		want  string
	}{
		{"no figure: skipped", nil, 40, "-"},
		{"the ratio, not the first figure", []Figure{ops, ratio}, 40, "mutex/none 0.39"},
		{"the first figure, its unit once", []Figure{ops}, 40, "none 3062, mutex 1187 req/s"},
		{"a share: % after each value", []Figure{share}, 40, "zookeeper 4%, redis 27.5%"},
		{"as many bars as fit", []Figure{many}, 46, "sql-atomic 2908, mysql-forupdate 1139, … ok/s"},
		{"one bar, clipped", []Figure{many}, 14, "sql-atomic 29…"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := Outcome{Figures: tc.figs}.Short(tc.width)
			if got != tc.want {
				t.Errorf("Short(%d) = %q, want %q", tc.width, got, tc.want)
			}
			if n := utf8.RuneCountInString(got); n > tc.width {
				t.Errorf("Short(%d) has %d runes", tc.width, n)
			}
		})
	}
}

// TestShortSummaryWidth: the course at a glance stays within ShortWidth
// runes for every lesson of the course, however long its figures.
func TestShortSummaryWidth(t *testing.T) {
	var outs []Outcome
	long := Figure{Title: "x", Unit: "% of the stock", Bars: []FigureBar{
		{Label: "consul-nodelay unprotected", Value: 12345.678}, {Label: "consul-nodelay fencing", Value: 0.001}}}
	for _, l := range course {
		o := Outcome{Lesson: l.N, Slug: l.Slug, Verdict: InKind, Figures: []Figure{long}}
		if l.N%5 == 0 {
			o = Outcome{Lesson: l.N, Slug: l.Slug, Verdict: Skipped, Why: strings.Repeat("a long reason ", 20)}
		}
		outs = append(outs, o)
	}
	var b strings.Builder
	if err := WriteShortSummary(&b, outs); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(b.String(), "\n"), "\n")
	if len(lines) != len(course)+1 || !strings.HasPrefix(lines[0], "#") || !strings.Contains(lines[0], "deciding figure") {
		t.Fatalf("short summary:\n%s", b.String())
	}
	if strings.Contains(b.String(), "a long reason") {
		t.Error("a skipped lesson's reason is in the short summary")
	}
	for i, l := range lines {
		if n := utf8.RuneCountInString(l); n > ShortWidth {
			t.Errorf("line %d has %d runes, want <= %d: %q", i+1, n, ShortWidth, l)
		}
	}
	if !strings.Contains(lines[1], "reproduced in kind  consul-nodelay unprotected 1") {
		t.Errorf("lesson 1's figure: %q", lines[1])
	}
}
