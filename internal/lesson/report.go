package lesson

import (
	"cmp"
	"encoding/json"
	"fmt"
	"html/template"
	"io"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/seckill-lab/seckill/bench/chart"
	"github.com/seckill-lab/seckill/stock/catalog"
)

// Course is a run of lessons: what `seckill lesson all` writes.
type Course struct {
	Date     time.Time `json:"date"`
	Short    bool      `json:"short"`
	WallS    float64   `json:"wall_s"`
	Outcomes []Outcome `json:"outcomes"`
}

// WriteList prints the course: number, titles, estimate, what it needs.
func WriteList(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "#\tlesson\ttime\tneeds\t课")
	for _, l := range course {
		needs := l.Needs()
		if needs == "" {
			needs = "seckill up"
		}
		fmt.Fprintf(tw, "%d\t%s (%s)\t~%ds\t%s\t%s\n", l.N, l.TitleEN, l.Slug, int(l.Estimate.Seconds()), needs, l.TitleZH)
	}
	return tw.Flush()
}

// WriteLesson prints what a lesson shows, before it runs, and for a
// lesson that takes over a minute, why.
func WriteLesson(w io.Writer, l Lesson) error {
	var longer string
	if l.Longer != "" {
		longer = fmt.Sprintf("  time:        ~%ds, over a minute: %s\n", int(l.Estimate.Seconds()), l.Longer)
	}
	_, err := fmt.Fprintf(w, "Lesson %d: %s / %s\n\n  %s\n  %s\n\n  seed:        %s\n  source figure: %s\n%s\n", l.N, l.TitleEN, l.TitleZH, l.ShowsEN, l.ShowsZH, l.Seed, l.SeedFigure, longer)
	return err
}

// WriteOutcome prints a lesson's result.
func WriteOutcome(w io.Writer, l Lesson, o Outcome) error {
	var b strings.Builder
	fmt.Fprintf(&b, "  ours:        %s\n  verdict:     %s", o.Ours, o.Verdict)
	if o.Why != "" {
		fmt.Fprintf(&b, " (%s)", o.Why)
	}
	// The source's figure was printed once, with the lesson (WriteLesson).
	b.WriteString("\n")
	if o.Conditions != "" {
		fmt.Fprintf(&b, "  conditions:  %s\n", o.Conditions)
	}
	for _, c := range o.Commands {
		fmt.Fprintf(&b, "  repeat it:   %s\n", c)
	}
	for _, r := range o.Reports {
		fmt.Fprintf(&b, "  report:      %s\n", r)
	}
	if o.Verdict != Skipped {
		b.WriteString(lookText(l.Look, o))
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// lookText is the "where to look" lines of the terminal: the page (its
// path when the lesson wrote reports), the section, what to see there.
func lookText(lk Look, o Outcome) string {
	where := lk.Where(o)
	if where == "" {
		where = fmt.Sprintf("report %d's %s", lk.Report, lk.Page)
	}
	return fmt.Sprintf("  look at:     %s, %q\n               %s\n               %s\n", where, lk.Section, lk.EN, lk.ZH)
}

// WriteSummary prints one line per lesson run: the course at a glance.
func WriteSummary(w io.Writer, outs []Outcome) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "#\tlesson\tverdict\ts\tthe source | ours")
	for _, o := range outs {
		l, err := Find(fmt.Sprint(o.Lesson))
		if err != nil {
			return err
		}
		v := string(o.Verdict)
		if o.Verdict == Skipped {
			v += ": " + o.Why
		}
		fmt.Fprintf(tw, "%d\t%s\t%s\t%.0f\t%s | %s\n", o.Lesson, l.TitleEN, v, o.Seconds, l.SeedFigure, o.Ours)
	}
	return tw.Flush()
}

// Write writes the course report to dir: course.json, course.md and a
// self-contained course.html (no script, no external reference).
func Write(dir string, c Course) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("course report: %w", err)
	}
	js, err := json.MarshalIndent(c, "", "  ")
	if err != nil {
		return err
	}
	var md strings.Builder
	fmt.Fprintf(&md, "# seckill: the course (%s, %.0f s%s)\n\n", c.Date.Format("2006-01-02 15:04 MST"), c.WallS, map[bool]string{true: ", short loads", false: ""}[c.Short])
	for _, o := range c.Outcomes {
		l, _ := Find(fmt.Sprint(o.Lesson))
		fmt.Fprintf(&md, "## %d. %s / %s\n\n%s\n\n%s\n\n- source: %s\n- source figure: %s\n- ours: %s\n- verdict: **%s**", l.N, l.TitleEN, l.TitleZH, l.ShowsEN, l.ShowsZH, l.Seed, l.SeedFigure, o.Ours, o.Verdict)
		if o.Why != "" {
			fmt.Fprintf(&md, " (%s)", o.Why)
		}
		md.WriteString("\n")
		for _, cmd := range o.Commands {
			fmt.Fprintf(&md, "- repeat it: `%s`\n", cmd)
		}
		for _, r := range o.Reports {
			page := filepath.Base(r) + "/" + pageOf(r)
			fmt.Fprintf(&md, "- report: [%s](%s)\n", page, page)
		}
		if lk := l.Look; o.Verdict != Skipped && lk.Where(o) != "" {
			page := filepath.Base(filepath.Dir(lk.Where(o))) + "/" + lk.Page
			fmt.Fprintf(&md, "- where to look: [%s](%s), “%s”: %s\n  %s\n", page, page, lk.Section, lk.EN, lk.ZH)
		}
		md.WriteString("\n")
	}
	var html strings.Builder
	if err := page.Execute(&html, view(c)); err != nil {
		return fmt.Errorf("course report: %w", err)
	}
	for name, body := range map[string]string{"course.json": string(js), "course.md": md.String(), "course.html": html.String()} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			return fmt.Errorf("course report: %w", err)
		}
	}
	return nil
}

// pageOf is the page of a lesson's report directory: scenario.html for a
// failure story, report.html for a bench.
func pageOf(dir string) string {
	if _, err := os.Stat(filepath.Join(dir, ScenarioPage)); err == nil {
		return ScenarioPage
	}
	return BenchPage
}

type link struct{ Href, Text string }

type lessonView struct {
	Lesson
	Outcome
	Class    string
	Reports  []link
	Look     *link // the page to look at; nil when the lesson wrote none
	Commands []command
	Charts   []template.HTML
}

// command is a repeat command cut into words that must stay on one line:
// a flag with its value, so the page wraps it only between them.
type command [][]string

// words cuts a command line: each "--flag value" is one unit.
func words(line string) command {
	var out command
	for _, f := range strings.Fields(line) {
		if n := len(out); n > 0 && !strings.HasPrefix(f, "-") && len(out[n-1]) == 1 && strings.HasPrefix(out[n-1][0], "-") {
			out[n-1] = append(out[n-1], f)
			continue
		}
		out = append(out, []string{f})
	}
	return out
}

// svgChart draws a Figure with bench/chart, inline (no xmlns: the page
// holds no URL).
func svgChart(f Figure) template.HTML {
	bars := make([]chart.Bar, len(f.Bars))
	title := f.Title
	for i, b := range f.Bars {
		bars[i] = chart.Bar{Label: b.Label, Value: b.Value, Flawed: b.Flawed}
		if b.Flawed && title == f.Title {
			title += "; " + chart.Mark + " = " + cmp.Or(f.Mark, catalog.ColFlawed)
		}
	}
	return chart.Inline(chart.BarChart(title, f.Unit, bars, f.RefLabel, f.Ref))
}

func view(c Course) map[string]any {
	var ls []lessonView
	verdicts := map[Verdict]int{}
	for _, o := range c.Outcomes {
		l, _ := Find(fmt.Sprint(o.Lesson))
		verdicts[o.Verdict]++
		v := lessonView{Lesson: l, Outcome: o, Class: verdictClass[o.Verdict]}
		for _, r := range o.Reports {
			href := filepath.Base(r) + "/" + pageOf(r)
			v.Reports = append(v.Reports, link{href, href})
		}
		if where := l.Look.Where(o); where != "" && o.Verdict != Skipped {
			href := filepath.Base(filepath.Dir(where)) + "/" + l.Look.Page
			v.Look = &link{href, l.Look.Section}
		}
		for _, cmd := range o.Commands {
			v.Commands = append(v.Commands, words(cmd))
		}
		for _, f := range o.Figures {
			v.Charts = append(v.Charts, svgChart(f))
		}
		ls = append(ls, v)
	}
	var counts []string
	for _, vd := range []Verdict{Reproduced, InKind, NotReproduced, Skipped} {
		if verdicts[vd] > 0 {
			counts = append(counts, fmt.Sprintf("%d %s", verdicts[vd], vd))
		}
	}
	return map[string]any{"Date": c.Date.Format("2006-01-02 15:04 MST"), "Wall": fmt.Sprintf("%.0f", c.WallS), "Short": c.Short, "Lessons": ls,
		"Counts": strings.Join(counts, " · ")}
}

var verdictClass = map[Verdict]string{Reproduced: "ok", InKind: "kind", NotReproduced: "no", Skipped: "skip"}

var page = template.Must(template.New("course").Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1"><title>seckill: the course</title>
<style>
body{font:18px/1.45 system-ui,"Noto Sans CJK SC","WenQuanYi Micro Hei",sans-serif;margin:20px auto;max-width:1200px;padding:0 16px;color:#1d232b;background:#f6f7f9}
h1{font-size:28px;margin:0 0 4px} .sub{color:#4a5462;margin-bottom:16px}
table.sum{border-collapse:collapse;width:100%;margin-bottom:24px;background:#fff}
table.sum td,table.sum th{border-bottom:1px solid #e3e6ea;padding:6px 8px;text-align:left;vertical-align:top;font-size:16px}
.v{font-weight:600;white-space:nowrap;border-radius:4px;padding:1px 6px}
.ok{background:#d9f2dd;color:#1e6b2a}.kind{background:#e6eefb;color:#1f4f96}.no{background:#fadada;color:#a11d1d}.skip{background:#ececec;color:#4a4a4a}
section{background:#fff;border:1px solid #e3e6ea;border-radius:8px;padding:14px 18px;margin:14px 0}
section h2{font-size:22px;margin:0 0 6px} .zh{color:#333b47} dl{display:grid;grid-template-columns:150px minmax(0,1fr);gap:6px 12px;margin:10px 0 0}
dt{color:#4a5462} dd{margin:0;min-width:0}
.look{background:#fff7e0;border-left:5px solid #b57600;padding:8px 12px;margin:10px 0;border-radius:4px}
.look b{display:block;margin-bottom:2px}
code.cmd{display:block;background:#f0f2f5;padding:6px 8px;border-radius:4px;font-size:15px;white-space:normal;overflow-wrap:normal;word-break:normal}
code.cmd span{white-space:nowrap}
.charts{display:grid;grid-template-columns:repeat(auto-fit,minmax(420px,1fr));gap:12px;margin-top:10px}
.charts svg{width:100%;height:auto;display:block;border:1px solid #e3e6ea;border-radius:6px}
</style></head><body>
<h1>seckill: the course</h1>
<div class="sub">{{.Date}} · {{.Wall}} s{{if .Short}} · short loads{{end}} · {{.Counts}} · each verdict sets our figure beside the source's</div>
<table class="sum"><tr><th>#</th><th>lesson</th><th>source figure</th><th>verdict</th><th>where to look</th></tr>
{{range .Lessons}}<tr><td>{{.N}}</td><td><a href="#l{{.N}}">{{.TitleEN}}</a><br><span class="zh">{{.TitleZH}}</span></td><td>{{.SeedFigure}}</td><td><span class="v {{.Class}}">{{.Verdict}}</span></td><td>{{with .Look}}<a href="{{.Href}}">{{.Text}}</a>{{end}}</td></tr>
{{end}}</table>
{{range .Lessons}}<section id="l{{.N}}"><h2>{{.N}}. {{.TitleEN}} · <span class="zh">{{.TitleZH}}</span></h2>
<p>{{.ShowsEN}}</p><p class="zh">{{.ShowsZH}}</p>
{{if .Look}}<div class="look"><b>Where to look · 看哪里: <a href="{{.Look.Href}}">{{.Look.Href}}</a>, “{{.Lesson.Look.Section}}”</b>{{.Lesson.Look.EN}}<br><span class="zh">{{.Lesson.Look.ZH}}</span></div>{{end}}
{{if .Charts}}<div class="charts">{{range .Charts}}{{.}}{{end}}</div>{{end}}
<dl><dt>seed</dt><dd>{{.Seed}}</dd><dt>source figure</dt><dd>{{.SeedFigure}}</dd><dt>ours</dt><dd>{{.Ours}}</dd>
<dt>verdict</dt><dd><span class="v {{.Class}}">{{.Verdict}}</span>{{if .Why}} {{.Why}}{{end}}</dd>
{{range .Commands}}<dt>repeat it</dt><dd><code class="cmd">{{range $i, $w := .}}{{if $i}} {{end}}<span>{{range $j, $x := $w}}{{if $j}} {{end}}{{$x}}{{end}}</span>{{end}}</code></dd>{{end}}
{{range .Reports}}<dt>report</dt><dd><a href="{{.Href}}">{{.Text}}</a></dd>{{end}}</dl></section>
{{end}}</body></html>
`))
