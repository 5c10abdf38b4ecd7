package bench

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"html/template"
	"image/color"
	"io"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
)

// tableHeader are the columns of the comparison table.
var tableHeader = []string{"strategy", "expected", "oversold", "lost", "ok", "final stock",
	"req/s", "ok/s", "p50 ms", "p99 ms", "lock wait ms", "invariants"}

// tableRows renders one row per strategy.
func tableRows(ss []Summary) [][]string {
	rows := make([][]string, 0, len(ss))
	for _, s := range ss {
		exp := "correct"
		if !s.ExpectedCorrect {
			exp = "flawed"
		}
		wait := "-"
		if s.LockWaitMS != nil {
			wait = fmtStat(*s.LockWaitMS, s.Repeats, "%.2f")
		}
		rows = append(rows, []string{
			s.Strategy, exp,
			fmtStat(s.Oversold, s.Repeats, "%.0f"),
			fmtStat(s.LostUpdates, s.Repeats, "%.0f"),
			fmtStat(s.OK, s.Repeats, "%.0f"),
			fmtStat(s.FinalStock, s.Repeats, "%.0f"),
			fmtStat(s.ThroughputRPS, s.Repeats, "%.0f"),
			fmtStat(s.OKPerSec, s.Repeats, "%.0f"),
			fmtStat(s.P50MS, s.Repeats, "%.1f"),
			fmtStat(s.P99MS, s.Repeats, "%.1f"),
			wait,
			fmt.Sprintf("%d/%d", s.InvariantsPassed, s.InvariantsTotal),
		})
	}
	return rows
}

// WriteTable prints the comparison table (one row per strategy) to w.
func WriteTable(w io.Writer, rep *Report) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, strings.Join(tableHeader, "\t"))
	for _, r := range tableRows(rep.Summary) {
		fmt.Fprintln(tw, strings.Join(r, "\t"))
	}
	if w := windowsTable(rep.Runs); len(w.Rows) > 0 {
		fmt.Fprintf(tw, "\n%s\n%s\n", strings.ToLower(w.Title[:1])+w.Title[1:]+" (answers counted by the time they came back):", strings.Join(w.Header, "\t"))
		for _, r := range w.Rows {
			fmt.Fprintln(tw, strings.Join(r, "\t"))
		}
	}
	if err := tw.Flush(); err != nil {
		return fmt.Errorf("write table: %w", err)
	}
	if rep.CeilingRPS > 0 {
		verdict := "ok"
		if rep.CeilingRatio > 0 && rep.CeilingRatio < MinCeilingRatio {
			verdict = fmt.Sprintf("below %.0fx: the figures may measure the generator, not the fleet", MinCeilingRatio)
		}
		_, err := fmt.Fprintf(w, "\ngenerator ceiling %.0f req/s; ceiling / best throughput = %.1fx (%s)\n",
			rep.CeilingRPS, rep.CeilingRatio, verdict)
		if err != nil {
			return fmt.Errorf("write table: %w", err)
		}
	}
	return nil
}

// Markdown renders report.md (from the same view as report.html).
func Markdown(rep *Report) []byte { return buildView(rep).markdown() }

func rateString(r int) string {
	if r == 0 {
		return "closed model"
	}
	return fmt.Sprintf("%d/s", r)
}

// palette colours the series of a chart.
var palette = []color.Color{
	color.RGBA{R: 0xd6, G: 0x27, B: 0x28, A: 0xff},
	color.RGBA{R: 0x1f, G: 0x77, B: 0xb4, A: 0xff},
	color.RGBA{R: 0x2c, G: 0xa0, B: 0x2c, A: 0xff},
}

// barChart plots one bar per strategy for each series and returns the PNG.
func barChart(title, ylabel string, names []string, series map[string][]float64, order []string) ([]byte, error) {
	p := plot.New()
	p.Title.Text = title
	p.Y.Label.Text = ylabel
	p.Y.Min = 0
	p.NominalX(names...)
	p.X.Tick.Label.Rotation = 0.6
	p.X.Tick.Label.XAlign = -1 // right
	p.X.Tick.Label.YAlign = -0.5
	w := vg.Points(30 / float64(max(len(order), 1)))
	p.X.Min = -0.7
	p.X.Max = float64(len(names)) - 0.3
	top := 0.0
	for _, vs := range series {
		for _, v := range vs {
			top = max(top, v)
		}
	}
	p.Y.Max = max(top*1.2, 1) // head room for the legend
	for i, name := range order {
		bars, err := plotter.NewBarChart(plotter.Values(series[name]), w)
		if err != nil {
			return nil, fmt.Errorf("chart %s: %w", title, err)
		}
		bars.Color = palette[i%len(palette)]
		bars.LineStyle.Width = 0
		bars.Offset = w * vg.Length(float64(i)-float64(len(order)-1)/2)
		p.Add(bars)
		if len(order) > 1 {
			p.Legend.Add(name, bars)
		}
	}
	p.Legend.Top = true
	width := vg.Points(float64(max(420, 46*len(names))))
	wt, err := p.WriterTo(width, 4*vg.Inch, "png")
	if err != nil {
		return nil, fmt.Errorf("render %s: %w", title, err)
	}
	var b bytes.Buffer
	if _, err := wt.WriteTo(&b); err != nil {
		return nil, fmt.Errorf("render %s: %w", title, err)
	}
	return b.Bytes(), nil
}

// Charts renders the report's charts (oversold units, throughput and
// latency per strategy) as PNG images.
func Charts(rep *Report) (map[string][]byte, []string, error) {
	var names []string
	over := map[string][]float64{}
	thr := map[string][]float64{}
	lat := map[string][]float64{}
	for _, s := range rep.Summary {
		names = append(names, s.Strategy)
		over["oversold"] = append(over["oversold"], s.Oversold.Median)
		over["lost updates"] = append(over["lost updates"], max(0, s.LostUpdates.Median))
		thr["req/s"] = append(thr["req/s"], s.ThroughputRPS.Median)
		thr["ok/s"] = append(thr["ok/s"], s.OKPerSec.Median)
		lat["p50"] = append(lat["p50"], s.P50MS.Median)
		lat["p99"] = append(lat["p99"], s.P99MS.Median)
	}
	type spec struct {
		key, title, y string
		data          map[string][]float64
		order         []string
	}
	specs := []spec{
		{"oversold", "Oversold units and lost updates per strategy", "units", over, []string{"oversold", "lost updates"}},
		{"throughput", "Throughput per strategy", "per second", thr, []string{"req/s", "ok/s"}},
		{"latency", "Latency per strategy", "ms", lat, []string{"p50", "p99"}},
	}
	out := map[string][]byte{}
	var keys []string
	if len(names) == 0 {
		return out, keys, nil
	}
	for _, s := range specs {
		png, err := barChart(s.title, s.y, names, s.data, s.order)
		if err != nil {
			return nil, nil, err
		}
		out[s.key] = png
		keys = append(keys, s.key)
	}
	return out, keys, nil
}

var htmlTmpl = template.Must(template.New("report").Parse(`<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>{{.V.Title}} {{(index .V.Facts 0).Value}}</title>
<style>
body{font-family:sans-serif;margin:2em;color:#222}
table{border-collapse:collapse;font-size:14px;margin-bottom:1em}
th,td{border:1px solid #bbb;padding:4px 8px;text-align:right}
th:first-child,td:first-child,td:nth-child(2){text-align:left}
tr.bad td{background:#fde2e2}
img{max-width:100%;display:block;margin:1em 0}
code{background:#f3f3f3;padding:1px 4px}
</style></head><body>
<h1>{{.V.Title}}</h1>
<ul>{{range .V.Facts}}<li>{{.Label}}: {{if eq .Label "command"}}<code>{{.Value}}</code>{{else}}{{.Value}}{{end}}</li>
{{end}}</ul>
{{define "table"}}<table><tr>{{range .Header}}<th>{{.}}</th>{{end}}</tr>
{{$bad := .Bad}}{{range $i, $r := .Rows}}<tr{{if index $bad $i}} class="bad"{{end}}>{{range $r}}<td>{{.}}</td>{{end}}</tr>
{{end}}</table>{{end}}
<h2>{{.V.Main.Title}}</h2>
{{template "table" .V.Main}}
{{range .Charts}}<h2>{{.Title}}</h2><img alt="{{.Title}}" src="{{.PNG}}">
{{end}}
{{range .V.Tables}}<h2>{{.Title}}</h2>
{{template "table" .}}
{{end}}
{{range .V.Notes}}<p>{{.}}</p>{{end}}
{{if .V.Failed}}<h2>Failed invariants</h2><ul>{{range .V.Failed}}<li>{{.}}</li>{{end}}</ul>{{end}}
</body></html>
`))

// HTML renders report.html from the same view as report.md:
// self-contained, no external reference, the charts embedded as data: PNG
// images.
func HTML(rep *Report) ([]byte, error) {
	pngs, keys, err := Charts(rep)
	if err != nil {
		return nil, err
	}
	titles := map[string]string{"oversold": "Oversold units", "throughput": "Throughput", "latency": "Latency"}
	type img struct {
		Title string
		PNG   template.URL
	}
	v := buildView(rep)
	for i := range v.Facts {
		v.Facts[i].Value = noScheme(v.Facts[i].Value)
	}
	data := struct {
		V      view
		Charts []img
	}{V: v}
	for _, k := range keys {
		data.Charts = append(data.Charts, img{titles[k], template.URL("data:image/png;base64," + base64.StdEncoding.EncodeToString(pngs[k]))})
	}
	var b bytes.Buffer
	if err := htmlTmpl.Execute(&b, data); err != nil {
		return nil, fmt.Errorf("render report.html: %w", err)
	}
	return b.Bytes(), nil
}

// noScheme drops URL schemes from text shown in report.html, which must
// hold no http(s):// reference (it is read offline; report.json keeps the
// full URLs).
func noScheme(s string) string {
	return strings.NewReplacer("https://", "", "http://", "", "HTTPS://", "", "HTTP://", "").Replace(s)
}

// WriteReports writes report.json, report.md and report.html into dir.
func WriteReports(dir string, rep *Report) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("create %s: %w", dir, err)
	}
	js, err := json.MarshalIndent(rep, "", "  ")
	if err != nil {
		return fmt.Errorf("encode report.json: %w", err)
	}
	html, err := HTML(rep)
	if err != nil {
		return err
	}
	files := map[string][]byte{
		"report.json": append(js, '\n'),
		"report.md":   Markdown(rep),
		"report.html": html,
	}
	for _, name := range []string{"report.json", "report.md", "report.html"} {
		if err := os.WriteFile(filepath.Join(dir, name), files[name], 0o644); err != nil {
			return fmt.Errorf("write %s: %w", name, err)
		}
	}
	return nil
}
