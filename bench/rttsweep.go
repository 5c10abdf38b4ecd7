package bench

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/seckill-lab/seckill/bench/chart"
	"github.com/seckill-lab/seckill/bench/fleet"
)

// RTTSetter changes the round trip on a fleet's links and returns the
// fleet as it then is (its RTT measured). The local stack implements it
// (stack.SetRTT) when it runs the proxy; a fleet started elsewhere has
// none.
type RTTSetter interface {
	SetRTT(ctx context.Context, profile string, d time.Duration) (fleet.Fleet, error)
}

// RTTSetterFunc adapts a function to RTTSetter.
type RTTSetterFunc func(ctx context.Context, profile string, d time.Duration) (fleet.Fleet, error)

// SetRTT calls f.
func (f RTTSetterFunc) SetRTT(ctx context.Context, profile string, d time.Duration) (fleet.Fleet, error) {
	return f(ctx, profile, d)
}

// RTTPoint is one condition of a sweep: a round trip (a profile's name or
// "" for a bare duration) and the mode (Options.Mode; "" is o's).
type RTTPoint struct {
	Profile string
	RTT     time.Duration
	Mode    string
	// Batch is the point's batch size (Options.Config.Batch; 1 is off); 0
	// keeps o's.
	Batch int
}

// CrossBatches returns every point at each batch size, size by size (the
// points as they are without any).
func CrossBatches(points []RTTPoint, batches []int) []RTTPoint {
	if len(batches) == 0 {
		return points
	}
	return cross(points, batches, func(p *RTTPoint, b int) { p.Batch = b })
}

// CrossModes returns every point under each mode, mode by mode.
func CrossModes(points []RTTPoint, modes []string) []RTTPoint {
	return cross(points, modes, func(p *RTTPoint, m string) { p.Mode = m })
}

// cross returns the points once per value, set on each copy.
func cross[V any](points []RTTPoint, vs []V, set func(*RTTPoint, V)) []RTTPoint {
	var out []RTTPoint
	for _, v := range vs {
		for _, p := range points {
			set(&p, v)
			out = append(out, p)
		}
	}
	return out
}

// distinct counts the distinct values of vs.
func distinct[T comparable](vs []T) int {
	seen := map[T]bool{}
	for _, v := range vs {
		seen[v] = true
	}
	return len(seen)
}

// RTTSweep is a sweep over round trips (RunRTTSweep): the same bench at
// each point, its report in a directory of its own, and per strategy the
// median ok/s and p50 at each point's measured round trip.
type RTTSweep struct {
	Date        time.Time   `json:"date"`
	CommandLine string      `json:"command_line"`
	Environment Environment `json:"environment"`
	// Points are the round trips as asked and measured, Modes each
	// point's mode; Dirs the points' report directories, relative to the
	// sweep's.
	Points []fleet.RTT `json:"points"`
	Modes  []string    `json:"modes"`
	// Batches are each point's batch size (1: off).
	Batches []int       `json:"batches"`
	Dirs    []string    `json:"dirs"`
	Series  []RTTSeries `json:"series"`
	Runs    int         `json:"runs_per_point"`
	WallS   float64     `json:"wall_s"`
	Notes   []string    `json:"notes,omitempty"`
	// point are the points' reports (in their own directories, not in
	// the sweep's JSON).
	point []*Report
}

// RTTSeries is one strategy's throughput and latency over the round trips;
// OKPerSec, P50MS and Oversold are aligned with RTTSweep.Points (nil where
// the strategy did not run).
type RTTSeries struct {
	Label           string  `json:"label"`
	ExpectedCorrect bool    `json:"expected_correct"`
	OKPerSec        []*Stat `json:"ok_per_s"`
	P50MS           []*Stat `json:"p50_ms"`
	P99MS           []*Stat `json:"p99_ms"`
	Oversold        []*Stat `json:"oversold"`
}

// ParseRTTSweep reads a list of round trips: profile names or durations;
// a bare number is milliseconds ("0,0.2,2" or "loopback,zone,cross-zone").
func ParseRTTSweep(s string, parse func(string) (string, time.Duration, error)) ([]RTTPoint, error) {
	var out []RTTPoint
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		if f == "" {
			continue
		}
		if strings.Trim(f, "0123456789.") == "" {
			f += "ms"
		}
		p, d, err := parse(f)
		if err != nil {
			return nil, fmt.Errorf("%w: --sweep-rtt: %v", ErrInvalidOptions, err)
		}
		out = append(out, RTTPoint{Profile: p, RTT: d})
	}
	if len(out) < 1 || len(out) > MaxSweepPoints {
		return nil, fmt.Errorf("%w: --sweep-rtt %q: want 1 to %d round trips, e.g. 0,0.2,2 (ms) or loopback,zone,cross-zone", ErrInvalidOptions, s, MaxSweepPoints)
	}
	return out, nil
}

// RunRTTSweep runs the bench o at each round trip, setting it with set
// between the points, each point's reports in o.OutDir/rtt-N, and writes
// the sweep (rtt-sweep.json, .md, .html) into o.OutDir.
func RunRTTSweep(ctx context.Context, o Options, points []RTTPoint, set RTTSetter) (*RTTSweep, error) {
	if set == nil {
		return nil, fmt.Errorf("%w: --sweep-rtt needs a local stack with the fault proxy (seckill up --rtt loopback): a fleet started elsewhere cannot change its round trip", ErrInvalidOptions)
	}
	if len(o.Sweep) > 0 {
		return nil, fmt.Errorf("%w: --sweep-rtt and --sweep: sweep one condition at a time", ErrInvalidOptions)
	}
	if len(points) < 2 {
		return nil, fmt.Errorf("%w: a sweep needs 2 conditions at least: give 2 round trips, or 1 with --mode both", ErrInvalidOptions)
	}
	t0 := time.Now()
	mode := o.Mode
	sw := &RTTSweep{Date: t0.UTC(), CommandLine: strings.Join(o.CommandLine, " "), Runs: max(o.Repeat, 1)}
	base := o.OutDir
	for i, p := range points {
		fleet, err := set.SetRTT(ctx, p.Profile, p.RTT)
		if err != nil {
			return nil, fmt.Errorf("round trip %s: %w", p.RTT, err)
		}
		po := o
		po.Fleet = fleet
		po.Mode = cmp.Or(p.Mode, mode, ModePurchase)
		if p.Batch > 0 {
			po.Config.Batch = p.Batch
			if p.Batch == 1 {
				po.Config.Batch = 0 // one purchase per hold: batching off
			}
		}
		// At a lock-alone point Run sits the strategies that deduct in
		// the database out and names them (Report.Skipped).
		dir := fmt.Sprintf("rtt-%d", i+1)
		po.OutDir = filepath.Join(base, dir)
		if o.Progress != nil {
			fmt.Fprintf(o.Progress, "condition %d/%d: mode %s, round trip %.3f ms requested, %.3f ms measured\n", i+1, len(points), po.Mode, fleet.RTT.RequestedMS, fleet.RTT.MeasuredMS)
		}
		rep, err := Run(ctx, po)
		if err != nil {
			return nil, fmt.Errorf("round trip %s, mode %s: %w", p.RTT, po.Mode, err)
		}
		sw.Points, sw.Modes, sw.Dirs, sw.point = append(sw.Points, fleet.RTT), append(sw.Modes, po.Mode), append(sw.Dirs, dir), append(sw.point, rep)
		sw.Batches = append(sw.Batches, max(po.Config.Batch, 1))
		sw.Environment = rep.Environment
	}
	sw.Environment.RTT, sw.Environment.Mode = fleet.RTT{}, "" // per point
	sw.Series = rttSeries(sw.point)
	if sw.Environment.Durability == "unknown" {
		sw.Notes = append(sw.Notes, "The servers' durability was not given: compare these figures only with runs under the same one.")
	}
	sw.WallS = time.Since(t0).Seconds()
	return sw, WriteRTTSweep(base, sw)
}

// rttSeries aligns the points' summaries by strategy label.
func rttSeries(reps []*Report) []RTTSeries {
	var out []RTTSeries
	index := map[string]int{}
	for p, rep := range reps {
		for _, s := range rep.Summary {
			i, ok := index[s.Name]
			if !ok {
				i = len(out)
				index[s.Name] = i
				out = append(out, RTTSeries{Label: s.Name, ExpectedCorrect: true,
					OKPerSec: make([]*Stat, len(reps)), P50MS: make([]*Stat, len(reps)), P99MS: make([]*Stat, len(reps)), Oversold: make([]*Stat, len(reps))})
			}
			okps, p50, p99, over := s.OKPerSec, s.P50MS, s.P99MS, s.Oversold
			out[i].OKPerSec[p], out[i].P50MS[p], out[i].P99MS[p], out[i].Oversold[p] = &okps, &p50, &p99, &over
			out[i].ExpectedCorrect = out[i].ExpectedCorrect && s.ExpectedCorrect
		}
	}
	return out
}

// rttHeader names a point by its measured round trip (and profile), and
// its mode when the sweep has two.
func (sw *RTTSweep) rttHeader(i int) string {
	r := sw.Points[i]
	h := fmt.Sprintf("%.2f ms", r.MeasuredMS)
	if r.Profile != "" {
		h = r.Profile + " " + h
	}
	if distinct(sw.Modes) > 1 {
		h += map[string]string{ModeLock: ", lock alone", ModePurchase: ", purchase"}[sw.Modes[i]]
	}
	if distinct(sw.Batches) > 1 {
		h += fmt.Sprintf(", batch %d", sw.Batches[i])
	}
	return h
}

// view is the sweep's tables and facts, shared by the .md and the .html.
func (sw *RTTSweep) view() view {
	e := sw.Environment
	v := view{Title: "seckill bench: throughput by network round trip"}
	if distinct(sw.Batches) > 1 {
		v.Title = "seckill bench: throughput by batch size and round trip"
	}
	v.Facts = append(v.Facts,
		fact{"date", sw.Date.Format("2006-01-02 15:04:05 MST")},
		fact{"command", sw.CommandLine},
		fact{"environment", fmt.Sprintf("%s %s/%s, %d CPUs, host %s", e.GoVersion, e.OS, e.Arch, e.CPUs, e.Hostname)},
		fact{"durability", durabilityFact(e)},
		fact{"fleet", fmt.Sprintf("%d instances behind %s", e.Instances, e.Target)},
		fact{"modes", "purchase: the critical section is the database transaction; lock alone: a Redis counter on a direct link instead (seckill bench --mode)"},
		fact{"round trips", "added by the fault proxy on every link of an instance to a server (and the ha members' links when the stack started with --rtt); each point's measured round trip is a one-byte echo through a proxy with the same toxics (the proxy's own cost included), the requested one is in report.json"})
	header := []string{"strategy"}
	for i := range sw.Points {
		header = append(header, sw.rttHeader(i))
	}
	by := "round trip"
	if distinct(sw.Batches) > 1 {
		by = "round trip and batch size"
	}
	okt := table{Title: "Successful purchases per second by " + by + " (median)", Header: header}
	p50t := table{Title: "p50 latency (ms) by " + by + " (median)", Header: header}
	p99t := table{Title: "p99 latency (ms) by " + by + " (median)", Header: header}
	cell := func(st *Stat, format string) string {
		if st == nil {
			return "-"
		}
		return fmtStat(*st, sw.Runs, format)
	}
	for _, s := range sw.Series {
		okRow, p50Row, p99Row := []string{s.Label}, []string{s.Label}, []string{s.Label}
		bad := false
		for i := range sw.Points {
			okRow = append(okRow, cell(s.OKPerSec[i], "%.0f"))
			p50Row = append(p50Row, cell(s.P50MS[i], "%.1f"))
			p99Row = append(p99Row, cell(s.P99MS[i], "%.1f"))
			bad = bad || s.Oversold[i] != nil && s.Oversold[i].Max > 0
		}
		okt.Rows, okt.Bad = append(okt.Rows, okRow), append(okt.Bad, bad)
		p50t.Rows, p50t.Bad = append(p50t.Rows, p50Row), append(p50t.Bad, bad)
		p99t.Rows, p99t.Bad = append(p99t.Rows, p99Row), append(p99t.Bad, bad)
	}
	v.Main = okt
	v.Tables = []table{p50t, p99t}
	v.Notes = append(slices.Clone(sw.Notes), "Red rows oversold at some point. Each point's full report (invariants, race, latency) is in its directory: "+strings.Join(sw.Dirs, ", ")+".")
	return v
}

// charts are the sweep's two line charts over the measured round trip (log
// scale): throughput and p50, one line per strategy.
func (sw *RTTSweep) charts() []chartSVG {
	// Over the batch size when the sweep varies it (one line per strategy
	// and round trip), else over the measured round trip (one line per
	// strategy and mode).
	byBatch := distinct(sw.Batches) > 1
	x := func(i int) float64 { return sw.Points[i].MeasuredMS }
	group := func(i int) string {
		if distinct(sw.Modes) > 1 {
			return map[string]string{ModeLock: " · lock alone", ModePurchase: " · purchase"}[sw.Modes[i]]
		}
		return ""
	}
	xLabel, what := "measured round trip, ms (log scale)", "round trip"
	if byBatch {
		x = func(i int) float64 { return float64(sw.Batches[i]) }
		group = func(i int) string {
			g := " · " + cmp.Or(sw.Points[i].Profile, fmt.Sprintf("%.1f ms", sw.Points[i].RequestedMS))
			if distinct(sw.Modes) > 1 {
				g += map[string]string{ModeLock: ", lock alone", ModePurchase: ""}[sw.Modes[i]]
			}
			return g
		}
		xLabel, what = "batch size (log scale)", "batch size"
	}
	var groups []string
	for i := range sw.Points {
		if g := group(i); !slices.Contains(groups, g) {
			groups = append(groups, g)
		}
	}
	var okLines, p50Lines, p99Lines []chart.Line
	note := ""
	for _, g := range groups {
		for _, s := range sw.Series {
			if !s.ExpectedCorrect {
				note = unsafeMark
			}
			okl := chart.Line{Label: s.Label + g, Flawed: !s.ExpectedCorrect, Points: true}
			p50l, p99l := okl, okl
			for i := range sw.Points {
				if group(i) != g {
					continue
				}
				if st := s.OKPerSec[i]; st != nil {
					okl.X, okl.Y = append(okl.X, x(i)), append(okl.Y, st.Median)
				}
				if st := s.P50MS[i]; st != nil {
					p50l.X, p50l.Y = append(p50l.X, x(i)), append(p50l.Y, st.Median)
				}
				if st := s.P99MS[i]; st != nil {
					p99l.X, p99l.Y = append(p99l.X, x(i)), append(p99l.Y, st.Median)
				}
			}
			if len(okl.X) > 0 {
				okLines, p50Lines, p99Lines = append(okLines, okl), append(p50Lines, p50l), append(p99Lines, p99l)
			}
		}
	}
	out := []chartSVG{
		{"RTT throughput", chart.Inline(chart.LineChart("Successful purchases per second by "+what+" (median)"+note, xLabel, "ok/s", okLines, true))},
		{"RTT p50", chart.Inline(chart.LineChart("p50 latency by "+what+" (median)"+note, xLabel, "p50 latency, ms", p50Lines, true))},
	}
	if byBatch {
		out = append(out, chartSVG{"RTT p99", chart.Inline(chart.LineChart("p99 latency by "+what+" (median)"+note, xLabel, "p99 latency, ms", p99Lines, true))})
	}
	return out
}

var rttSweepTmpl = template.Must(template.New("rtt").Parse(`<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>{{.V.Title}}</title>
<style>
body{font-family:system-ui,-apple-system,"Segoe UI",Roboto,"Noto Sans",sans-serif;margin:1.5em auto;max-width:1280px;padding:0 1em;color:#222;font-size:17px;line-height:1.4}
h2{border-bottom:2px solid #ddd} table{border-collapse:collapse;font-size:15px} th,td{border:1px solid #bbb;padding:4px 8px;text-align:right}
th:first-child,td:first-child{text-align:left} th{background:#f2f2f2} tr.bad td{background:#fde2e2}
.charts{display:grid;grid-template-columns:repeat(auto-fit,minmax(560px,1fr));gap:1.2em} .chart svg{width:100%;height:auto;display:block}
code{background:#f3f3f3;padding:1px 4px}
</style></head><body>
<h1>{{.V.Title}}</h1>
<ul>{{range .V.Facts}}<li>{{.Label}}: {{if eq .Label "command"}}<code>{{.Value}}</code>{{else}}{{.Value}}{{end}}</li>
{{end}}</ul>
<div class="charts">{{range .Charts}}<div class="chart" data-chart="{{.Title}}">{{.SVG}}</div>{{end}}</div>
{{define "table"}}<h2>{{.Title}}</h2><table><tr>{{range .Header}}<th>{{.}}</th>{{end}}</tr>
{{$bad := .Bad}}{{range $i, $r := .Rows}}<tr{{if index $bad $i}} class="bad"{{end}}>{{range $r}}<td>{{.}}</td>{{end}}</tr>
{{end}}</table>{{end}}
{{template "table" .V.Main}}{{range .V.Tables}}{{template "table" .}}{{end}}
{{range .V.Notes}}<p>{{.}}</p>{{end}}
<p>The points' reports: {{range $i, $d := .Dirs}}<a href="{{$d}}/report.html">{{index $.Heads $i}}</a> · {{end}}</p>
</body></html>
`))

// RTTSweepMarkdown renders the sweep as rtt-sweep.md has it.
func RTTSweepMarkdown(sw *RTTSweep) []byte { return sw.view().markdown() }

// WriteRTTSweep writes rtt-sweep.json, rtt-sweep.md and rtt-sweep.html
// into dir.
func WriteRTTSweep(dir string, sw *RTTSweep) error {
	js, err := json.MarshalIndent(sw, "", "  ")
	if err != nil {
		return fmt.Errorf("encode rtt-sweep.json: %w", err)
	}
	v := sw.view()
	heads := make([]string, len(sw.Points))
	for i := range sw.Points {
		heads[i] = sw.rttHeader(i)
	}
	for i := range v.Facts {
		v.Facts[i].Value = noScheme(v.Facts[i].Value)
	}
	var html bytes.Buffer
	if err := rttSweepTmpl.Execute(&html, struct {
		V      view
		Charts []chartSVG
		Dirs   []string
		Heads  []string
	}{v, sw.charts(), sw.Dirs, heads}); err != nil {
		return fmt.Errorf("render rtt-sweep.html: %w", err)
	}
	var errs []error
	for name, b := range map[string][]byte{"rtt-sweep.json": append(js, '\n'), "rtt-sweep.md": v.markdown(), "rtt-sweep.html": html.Bytes()} {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			errs = append(errs, fmt.Errorf("write %s: %w", name, err))
		}
	}
	return errors.Join(errs...)
}
