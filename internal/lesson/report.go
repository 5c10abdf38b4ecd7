package lesson

import (
	"encoding/json"
	"fmt"
	"html/template"
	"io"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"
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

// WriteLesson prints what a lesson shows, before it runs.
func WriteLesson(w io.Writer, l Lesson) error {
	_, err := fmt.Fprintf(w, "Lesson %d: %s / %s\n\n  %s\n  %s\n\n  seed:        %s\n  seed figure: %s\n\n", l.N, l.TitleEN, l.TitleZH, l.ShowsEN, l.ShowsZH, l.Seed, l.SeedFigure)
	return err
}

// WriteOutcome prints a lesson's result.
func WriteOutcome(w io.Writer, l Lesson, o Outcome) error {
	var b strings.Builder
	fmt.Fprintf(&b, "  ours:        %s\n  verdict:     %s", o.Ours, o.Verdict)
	if o.Why != "" {
		fmt.Fprintf(&b, " (%s)", o.Why)
	}
	// The seed's figure was printed once, with the lesson (WriteLesson).
	b.WriteString("\n")
	for _, c := range o.Commands {
		fmt.Fprintf(&b, "  repeat it:   %s\n", c)
	}
	for _, r := range o.Reports {
		fmt.Fprintf(&b, "  report:      %s\n", r)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// WriteSummary prints one line per lesson run: the course at a glance.
func WriteSummary(w io.Writer, outs []Outcome) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "#\tlesson\tverdict\ts\tthe seed | ours")
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
		fmt.Fprintf(&md, "## %d. %s / %s\n\n%s\n\n%s\n\n- seed: %s\n- seed figure: %s\n- ours: %s\n- verdict: **%s**", l.N, l.TitleEN, l.TitleZH, l.ShowsEN, l.ShowsZH, l.Seed, l.SeedFigure, o.Ours, o.Verdict)
		if o.Why != "" {
			fmt.Fprintf(&md, " (%s)", o.Why)
		}
		md.WriteString("\n")
		for _, cmd := range o.Commands {
			fmt.Fprintf(&md, "- repeat it: `%s`\n", cmd)
		}
		for _, r := range o.Reports {
			fmt.Fprintf(&md, "- report: [%s](%s/)\n", filepath.Base(r), filepath.Base(r))
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

type lessonView struct {
	Lesson
	Outcome
	Class   string
	Reports []string
}

func view(c Course) map[string]any {
	var ls []lessonView
	for _, o := range c.Outcomes {
		l, _ := Find(fmt.Sprint(o.Lesson))
		class := map[Verdict]string{Reproduced: "ok", InKind: "kind", NotReproduced: "no", Skipped: "skip"}[o.Verdict]
		var reps []string
		for _, r := range o.Reports {
			reps = append(reps, filepath.Base(r))
		}
		ls = append(ls, lessonView{Lesson: l, Outcome: o, Class: class, Reports: reps})
	}
	return map[string]any{"Date": c.Date.Format("2006-01-02 15:04 MST"), "Wall": fmt.Sprintf("%.0f", c.WallS), "Short": c.Short, "Lessons": ls}
}

var page = template.Must(template.New("course").Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>seckill: the course</title>
<style>
body{font:16px/1.45 system-ui,sans-serif;margin:24px auto;max-width:1100px;color:#1d232b;background:#f6f7f9}
h1{font-size:26px;margin:0 0 4px} .sub{color:#5a6472;margin-bottom:18px}
table.sum{border-collapse:collapse;width:100%;margin-bottom:24px;background:#fff}
table.sum td,table.sum th{border-bottom:1px solid #e3e6ea;padding:6px 8px;text-align:left;vertical-align:top;font-size:14px}
.v{font-weight:600;white-space:nowrap;border-radius:4px;padding:1px 6px}
.ok{background:#d9f2dd;color:#1e6b2a}.kind{background:#e6eefb;color:#1f4f96}.no{background:#fadada;color:#a11d1d}.skip{background:#ececec;color:#555}
section{background:#fff;border:1px solid #e3e6ea;border-radius:8px;padding:14px 18px;margin:14px 0}
section h2{font-size:19px;margin:0 0 6px} .zh{color:#3b4350} dl{display:grid;grid-template-columns:130px 1fr;gap:4px 12px;margin:10px 0 0}
dt{color:#5a6472} dd{margin:0} code{background:#f0f2f5;padding:1px 4px;border-radius:3px;font-size:13px}
</style></head><body>
<h1>seckill: the course</h1>
<div class="sub">{{.Date}} · {{.Wall}} s{{if .Short}} · short loads{{end}} · each verdict sets our figure beside the seed's</div>
<table class="sum"><tr><th>#</th><th>lesson</th><th>seed figure</th><th>verdict</th></tr>
{{range .Lessons}}<tr><td>{{.N}}</td><td><a href="#l{{.N}}">{{.TitleEN}}</a><br><span class="zh">{{.TitleZH}}</span></td><td>{{.SeedFigure}}</td><td><span class="v {{.Class}}">{{.Verdict}}</span></td></tr>
{{end}}</table>
{{range .Lessons}}<section id="l{{.N}}"><h2>{{.N}}. {{.TitleEN}} · <span class="zh">{{.TitleZH}}</span></h2>
<p>{{.ShowsEN}}</p><p class="zh">{{.ShowsZH}}</p>
<dl><dt>seed</dt><dd>{{.Seed}}</dd><dt>seed figure</dt><dd>{{.SeedFigure}}</dd><dt>ours</dt><dd>{{.Ours}}</dd>
<dt>verdict</dt><dd><span class="v {{.Class}}">{{.Verdict}}</span>{{if .Why}} {{.Why}}{{end}}</dd>
{{range .Commands}}<dt>repeat it</dt><dd><code>{{.}}</code></dd>{{end}}
{{range .Reports}}<dt>report</dt><dd><a href="{{.}}/">{{.}}</a></dd>{{end}}</dl></section>
{{end}}</body></html>
`))
