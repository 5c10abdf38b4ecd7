package bench

import (
	"bytes"
	"encoding/json"
	"fmt"
	"html/template"
	"io"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"

	"github.com/seckill-lab/seckill/bench/chart"
	"github.com/seckill-lab/seckill/bench/confidence"
	"github.com/seckill-lab/seckill/stock/catalog"
)

// ColSafe is the comparison table's column that says, yes or no, whether
// the catalogue and the run's settings predict the strategy never
// oversells (ExpectedCorrect): a lock correct by design is not safe at a
// setting that defeats it, e.g. --no-watchdog with --work-delay past
// --lock-ttl. The catalogue's own verdict is catalog.ColFlawed.
const ColSafe = "safe at this setting"

// unsafeMark is what the report's charts add to their titles when they
// mark a strategy with chart.Mark: what the mark means.
const unsafeMark = "; " + chart.Mark + " = not safe at this setting"

// tableHeader are the columns of the comparison table.
var tableHeader = []string{"strategy", ColSafe, "oversold", "lost", "ok", "final stock",
	"req/s", "ok/s", "of DB", "p50 ms", "p99 ms", "lock wait ms", "invariants", "limited by"}

// tableRows renders one row per strategy.
func tableRows(ss []Summary) [][]string {
	rows := make([][]string, 0, len(ss))
	for _, s := range ss {
		exp := yesNo(s.ExpectedCorrect)
		wait := "-"
		if s.LockWaitMS != nil {
			wait = fmtStat(*s.LockWaitMS, s.Repeats, "%.2f")
		}
		rows = append(rows, []string{
			s.Name, exp,
			fmtStat(s.Oversold, s.Repeats, "%.0f"),
			fmtStat(s.LostUpdates, s.Repeats, "%.0f"),
			fmtStat(s.OK, s.Repeats, "%.0f"),
			fmtStat(s.FinalStock, s.Repeats, "%.0f"),
			fmtStat(s.ThroughputRPS, s.Repeats, "%.0f"),
			fmtStat(s.OKPerSec, s.Repeats, "%.0f"),
			ofDB(s),
			fmtStat(s.P50MS, s.Repeats, "%.1f"),
			fmtStat(s.P99MS, s.Repeats, "%.1f"),
			wait,
			fmt.Sprintf("%d/%d", s.InvariantsPassed, s.InvariantsTotal),
			limitCell(s),
		})
	}
	return rows
}

// ofDB prints a summary's sales per second as a fraction of the database
// ceiling, "-" when there is none.
func ofDB(s Summary) string {
	if s.OfDBCeiling == nil {
		return "-"
	}
	return fmt.Sprintf("%.2f", *s.OfDBCeiling)
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
	extra := sweepTables(rep.Sweep)
	if q := queueTable(rep.Summary); len(q.Rows) > 0 {
		extra = append(extra, q)
	}
	if q := orderQueueTable(rep.Runs); len(q.Rows) > 0 {
		extra = append(extra, q)
	}
	if c := cpuTable(rep.Runs); len(c.Rows) > 0 {
		extra = append(extra, c)
	}
	for _, t := range extra {
		fmt.Fprintf(tw, "\n%s:\n%s\n", strings.ToLower(t.Title[:1])+t.Title[1:], strings.Join(t.Header, "\t"))
		for _, r := range t.Rows {
			fmt.Fprintln(tw, strings.Join(r, "\t"))
		}
	}
	if err := tw.Flush(); err != nil {
		return fmt.Errorf("write table: %w", err)
	}
	if _, err := fmt.Fprintf(w, "\nconditions: %s\n", rep.Environment.Conditions()); err != nil {
		return fmt.Errorf("write table: %w", err)
	}
	if c := rep.DBCeiling; c != nil {
		if _, err := fmt.Fprintf(w, "\ndatabase ceiling %.0f purchase transactions/s (%s; \"of DB\" is ok/s over it)\n", c.TPS, c.describe()); err != nil {
			return fmt.Errorf("write table: %w", err)
		}
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
	if c := Conclusion(rep); c != "" {
		if _, err := fmt.Fprintf(w, "\nconclusion:\n%s\n", c); err != nil {
			return fmt.Errorf("write table: %w", err)
		}
	}
	return nil
}

// CompactWidth is the widest line WriteCompactTable prints, in runes.
const CompactWidth = 120

// compactHeader are the columns of the compact table: what a newcomer
// reads first.
var compactHeader = []string{"strategy", catalog.ColFlawed, ColSafe, "oversold", "ok/s", "invariants"}

// WriteCompactTable prints the comparison in the few columns a newcomer
// reads first, one row per strategy: the name, the catalogue's verdict
// (catalog.ColFlawed), ColSafe, the oversold units (median and range),
// the median ok/s and the invariants passed. WriteTable prints every
// column.
func WriteCompactTable(w io.Writer, rep *Report) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, strings.Join(compactHeader, "\t"))
	for _, s := range rep.Summary {
		flawed := "-"
		if c, ok := catalog.Lookup(s.Strategy); ok {
			flawed = yesNo(c.Flawed)
		}
		if s.ServiceURL != "" {
			flawed = yesNo(!s.ExpectedCorrect) // --unprotected: no lock on purpose
		}
		fmt.Fprintln(tw, strings.Join([]string{s.Name, flawed, yesNo(s.ExpectedCorrect),
			fmtStat(s.Oversold, s.Repeats, "%.0f"), fmt.Sprintf("%.0f", s.OKPerSec.Median),
			fmt.Sprintf("%d/%d", s.InvariantsPassed, s.InvariantsTotal)}, "\t"))
	}
	if err := tw.Flush(); err != nil {
		return fmt.Errorf("write the compact table: %w", err)
	}
	return nil
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
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
// outcomeSeries are the stacked outcome chart's series, in order, with
// their colours: sold green, sold out grey, the refusals warm, errors red.
var outcomeSeries = []string{OutcomeOK, OutcomeSoldOut, OutcomeLockTimeout, OutcomeStaleLock, OutcomeLeaseLost, OutcomeError}
var outcomeColours = []string{"#2ca02c", "#9a9a9a", "#ff7f0e", "#9467bd", "#8c564b", "#d62728"}

// evidenceInvariants are the per-strategy verdict columns of the report.
var evidenceInvariants = []string{InvLinearizable, InvMutualExclusion, InvReleaseAfterCommit, InvNoLostUpdate,
	InvStockNonNegative, InvOKHasOrder, InvNoPhantomOrder, InvNoDoubleSale, InvNoOrderFor4xx, InvSoldOutAllSold, InvNotAllFailed}

// glossary explains the Chinese terms of the source articles the lab's reports and
// README use.
var glossary = [][2]string{
	{"秒杀 (miǎoshā)", "flash sale: a stock of a few units sold in seconds to a crowd"},
	{"超卖 (chāomài)", "oversell: more units sold than were in stock"},
	{"库存 (kùcún)", "stock, inventory"},
	{"分布式锁 (fēnbùshì suǒ)", "distributed lock: one holder across processes and machines"},
	{"看门狗 (kānméngǒu)", "watchdog: renews a held lock's TTL while its holder works (Redisson)"},
	{"脑裂 (nǎoliè)", "split brain: two sides each believe they hold the lock (a failover; Chapter 1 also uses it for Redlock's split votes)"},
	{"分票 (fēnpiào)", "split votes: Redlock contenders each win some masters and none a majority, so all retry"},
	{"羊群效应 (yángqún xiàoyìng)", "herd effect: every waiter wakes when one lock is released (waiters watching the parent node, not their predecessor)"},
	{"可重入 (kě chóngrù)", "reentrant: the holder may take its own lock again"},
	{"锁超时 (suǒ chāoshí)", "lock timeout: the lock's TTL runs out while its holder still works"},
	{"多例模式 (duōlì móshì)", "prototype scope: a new lock object per request, so nothing is shared"},
	{"时钟变迁 (shízhōng biànqiān)", "clock change: a server's clock jumps, and TTLs with it"},
	{"崩溃恢复 (bēngkuì huīfù)", "crash recovery: a lock server restarts, with or without its data"},
	{"乐观锁 / 悲观锁", "optimistic lock (version check) / pessimistic lock (SELECT ... FOR UPDATE)"},
	{"一人一单 (yì rén yì dān)", "one order per user: a user may buy the goods once (bench --per-user-limit 1)"},
}

// chartSet builds the report's SVG charts from the summary and the runs.
type chartSVG struct {
	Title string
	SVG   template.HTML
}

func reportCharts(rep *Report) []chartSVG {
	if len(rep.Summary) == 0 {
		return nil
	}
	var over, lost, okps []chart.Bar
	refLabel, refValue := "", 0.0
	note := ""
	for _, s := range rep.Summary {
		flawed := !s.ExpectedCorrect
		if flawed {
			note = unsafeMark
		}
		link := "#" + strategyAnchor(s.Name)
		over = append(over, chart.Bar{Label: s.Name, Value: s.Oversold.Median, Flawed: flawed, Link: link})
		lost = append(lost, chart.Bar{Label: s.Name, Value: max(0, s.LostUpdates.Median), Flawed: flawed, Link: link})
		okps = append(okps, chart.Bar{Label: s.Name, Value: s.OKPerSec.Median, Flawed: flawed, Link: link})
		if s.Strategy == catalog.SQLAtomic && s.Variant == "" && refLabel == "" {
			refLabel, refValue = fmt.Sprintf("%s %.0f/s", s.Name, s.OKPerSec.Median), s.OKPerSec.Median
		}
	}
	nameOf := runNamer(rep.Runs)
	// Outcomes and sales per instance add up every repeat of a strategy.
	outcomes := map[string][]float64{}
	sales := map[string]map[string]float64{}
	insts := map[string]bool{}
	firstRun := map[string]RunResult{}
	for _, r := range rep.Runs {
		k := nameOf(r)
		if _, ok := outcomes[k]; !ok {
			outcomes[k] = make([]float64, len(outcomeSeries))
			sales[k] = map[string]float64{}
			firstRun[k] = r
		}
		for i, o := range outcomeSeries {
			outcomes[k][i] += float64(r.Outcomes[o])
		}
		for inst, n := range r.SalesPerInstance {
			sales[k][inst] += float64(n)
			insts[inst] = true
		}
	}
	instNames := sortedKeys(insts)
	var outStacks, saleStacks []chart.Stack
	var lines []chart.Line
	for _, s := range rep.Summary {
		flawed := !s.ExpectedCorrect
		outStacks = append(outStacks, chart.Stack{Label: s.Name, Parts: outcomes[s.Name], Flawed: flawed})
		parts := make([]float64, len(instNames))
		for i, in := range instNames {
			parts[i] = sales[s.Name][in]
		}
		saleStacks = append(saleStacks, chart.Stack{Label: s.Name, Parts: parts, Flawed: flawed})
		if cdf := firstRun[s.Name].LatencyCDF; len(cdf) > 0 {
			l := chart.Line{Label: s.Name, Flawed: flawed}
			for _, p := range cdf {
				l.X, l.Y = append(l.X, p[0]), append(l.Y, p[1])
			}
			lines = append(lines, l)
		}
	}
	per := "per run"
	if len(rep.Runs) > len(rep.Summary) {
		per = "all repeats added up"
	}
	out := []chartSVG{
		{"Oversold units", chart.Inline(chart.BarChart("Oversold units (median of repeats)"+note, "units", over, "", 0))},
		{"Lost updates", chart.Inline(chart.BarChart("Lost updates: units sold that the stock column never lost (median)"+note, "units", lost, "", 0))},
		{"Throughput", chart.Inline(chart.BarChart("Successful purchases per second (median)"+note, "ok/s", okps, refLabel, refValue))},
		{"Outcomes", chart.Inline(chart.StackedBars("Answers per strategy ("+per+")"+note, "requests", outcomeSeries, outcomeColours, outStacks))},
		{"Sales per instance", chart.Inline(chart.StackedBars("Orders per instance ("+per+")"+note, "orders", instNames, nil, saleStacks))},
	}
	if len(lines) > 0 {
		out = append(out, chartSVG{"Latency", chart.Inline(chart.LineChart("Latency CDF (first repeat of each strategy)"+note, "latency, ms (log scale)", "fraction of requests answered", lines, true))})
	}
	return append(out, sweepCharts(rep.Sweep)...)
}

// invariantCell is one strategy × invariant verdict of the report.
type invariantCell struct {
	Text, Class, Link string
	// Title is the cell's tooltip: for a failure, the 95 % interval of
	// its rate over the runs.
	Title string
}

type strategyEvidence struct {
	Strategy string // the summary row's name
	Anchor   string
	Flawed   bool
	Cells    []invariantCell
	Timeline template.HTML // the first failing run's timeline, inline
	Links    []failureLink
}

type failureLink struct{ Label, Href string }

// evidenceRows gives, per strategy, each invariant's verdict over its
// repeats (a failure links to its detail) and the first failing run's
// timeline and porcupine view.
func evidenceRows(rep *Report) []strategyEvidence {
	var out []strategyEvidence
	nameOf := runNamer(rep.Runs)
	for _, s := range rep.Summary {
		e := strategyEvidence{Strategy: s.Name, Anchor: strategyAnchor(s.Name), Flawed: !s.ExpectedCorrect}
		for _, name := range evidenceColumns(rep) {
			fails, undecided, applicable, runs := 0, 0, false, 0
			anchor := ""
			for _, r := range rep.Runs {
				if nameOf(r) != s.Name {
					continue
				}
				for _, inv := range r.Invariants {
					if inv.Name != name {
						continue
					}
					runs++
					applicable = applicable || inv.Applicable
					if inv.Undecided {
						undecided++
					}
					if inv.Failed() {
						fails++
						if anchor == "" {
							anchor = failureAnchor(r, name)
						}
					}
				}
			}
			c := invariantCell{Text: "pass", Class: "pass"}
			switch {
			case runs == 0:
				c = invariantCell{Text: "-", Class: "na"}
			case fails > 0:
				c = invariantCell{Text: fmt.Sprintf("FAIL %d/%d", fails, runs), Class: "fail", Link: "#" + anchor,
					Title: fmt.Sprintf("failed in %d of %d runs, %s", fails, runs, confidence.Interval(fails, runs))}
			case undecided > 0:
				c = invariantCell{Text: fmt.Sprintf("undecided %d/%d", undecided, runs), Class: "na"}
			case !applicable:
				c = invariantCell{Text: "n/a", Class: "na"}
			}
			e.Cells = append(e.Cells, c)
		}
		for _, r := range rep.Runs {
			if nameOf(r) != s.Name {
				continue
			}
			if e.Timeline == "" && len(r.timelineSVG) > 0 {
				e.Timeline = chart.Inline(r.timelineSVG)
			}
			if r.Timeline != "" {
				e.Links = append(e.Links, failureLink{fmt.Sprintf("#%d timeline", r.Repeat), r.Timeline})
			}
			if r.HistoryView != "" {
				e.Links = append(e.Links, failureLink{fmt.Sprintf("#%d porcupine view", r.Repeat), r.HistoryView})
			}
			if r.Events != "" && len(e.Links) < 8 {
				e.Links = append(e.Links, failureLink{fmt.Sprintf("#%d events", r.Repeat), r.Events})
			}
		}
		out = append(out, e)
	}
	return out
}

func failureAnchor(r RunResult, inv string) string {
	if r.Name != "" {
		return "fail-" + r.Name + "-" + inv
	}
	return fmt.Sprintf("fail-%s-%d-%s", r.Strategy, r.Repeat, inv)
}

// strategyAnchor is the HTML id of a summary row's evidence: "strategy-"
// and the name with every character but letters, digits and "-" made "-".
func strategyAnchor(name string) string {
	return "strategy-" + strings.Map(func(c rune) rune {
		if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' {
			return c
		}
		return '-'
	}, name)
}

type failureItem struct{ ID, Text string }

var htmlTmpl = template.Must(template.New("report").Parse(`<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>{{.V.Title}} {{(index .V.Facts 0).Value}}</title>
<style>
body{font-family:system-ui,-apple-system,"Segoe UI",Roboto,"Noto Sans","Noto Sans CJK SC",sans-serif;margin:1.5em auto;max-width:1280px;padding:0 1em;color:#222;font-size:17px;line-height:1.4}
h1{font-size:1.8em;margin-bottom:.3em} h2{font-size:1.4em;margin-top:1.6em;border-bottom:2px solid #ddd;padding-bottom:.2em}
table{border-collapse:collapse;font-size:15px;margin-bottom:1em}
th,td{border:1px solid #bbb;padding:4px 8px;text-align:right}
th:first-child,td:first-child,td:nth-child(2){text-align:left}
th{background:#f2f2f2}
tr.bad td{background:#fde2e2}
td.pass{color:#1a7f37} td.fail{background:#d62728;color:#fff;font-weight:bold} td.fail a{color:#fff} td.na{color:#999}
.charts{display:grid;grid-template-columns:repeat(auto-fit,minmax(560px,1fr));gap:1.2em}
.chart{border:1px solid #e3e3e3;border-radius:6px;padding:.5em;background:#fff}
.chart svg,.timeline svg{width:100%;height:auto;display:block}
.timeline{border:1px solid #f0b0b0;border-radius:6px;padding:.5em;margin:.5em 0 1em}
code{background:#f3f3f3;padding:1px 4px}
dl.glossary dt{font-weight:bold;margin-top:.4em} dl.glossary dd{margin-left:1.5em}
li.failure{margin:.3em 0}
.wide{overflow-x:auto} table.inv{width:100%;table-layout:fixed} table.inv th{font-size:13px;white-space:normal;overflow-wrap:anywhere} table.inv td{text-align:center}
</style></head><body>
<h1>{{.V.Title}}</h1>
<ul>{{range .V.Facts}}<li>{{.Label}}: {{if eq .Label "command"}}<code>{{.Value}}</code>{{else}}{{.Value}}{{end}}</li>
{{end}}</ul>
{{define "table"}}<table><tr>{{range .Header}}<th>{{.}}</th>{{end}}</tr>
{{$bad := .Bad}}{{range $i, $r := .Rows}}<tr{{if index $bad $i}} class="bad"{{end}}>{{range $r}}<td>{{.}}</td>{{end}}</tr>
{{end}}</table>{{end}}
<h2>{{.V.Main.Title}}</h2>
{{template "table" .V.Main}}
{{if .V.Conclusion}}<p class="conclusion">{{.V.Conclusion}}</p>{{end}}
<h2>Invariants per strategy</h2>
<p>Each cell adds up the strategy's repeats; a failure links to its detail below. linearizable: the clients' history fits a sequential stock counter (porcupine). mutual_exclusion: no two purchases between their stock read and their COMMIT at once, from the instances' lock events; all instances run on this machine and stamp events with its one monotonic clock, so their times compare directly. ✗: not safe at this setting (the comparison's "safe at this setting" column).</p>
<div class="wide"><table class="inv"><tr><th>strategy</th>{{range .Invariants}}<th>{{.}}</th>{{end}}</tr>
{{range .Evidence}}<tr id="{{.Anchor}}"><td>{{.Strategy}}{{if .Flawed}} ✗{{end}}</td>{{range .Cells}}<td class="{{.Class}}"{{if .Title}} title="{{.Title}}"{{end}}>{{if .Link}}<a href="{{.Link}}">{{.Text}}</a>{{else}}{{.Text}}{{end}}</td>{{end}}</tr>
{{end}}</table></div>
<h2>Charts</h2>
<div class="charts">{{range .Charts}}<div class="chart" data-chart="{{.Title}}">{{.SVG}}</div>
{{end}}</div>
{{range .Evidence}}{{if .Timeline}}<h2>The race: {{.Strategy}}</h2>
<p>One lane per instance; each bar is one purchase's lock hold (from acquired to released, or its stock read to its commit when there is no lock), a tick marks its COMMIT, red bars took part in an overlap and the red bands are the overlapping intervals.</p>
<div class="timeline">{{.Timeline}}</div>
{{end}}{{if .Links}}<p>{{.Strategy}}: {{range .Links}}<a href="{{.Href}}">{{.Label}}</a> · {{end}}</p>{{end}}{{end}}
{{range .V.Tables}}<h2>{{.Title}}</h2>
{{template "table" .}}
{{end}}
{{range .V.Notes}}<p>{{.}}</p>{{end}}
{{if .Failures}}<h2>Failed invariants</h2><ul>{{range .Failures}}<li class="failure" id="{{.ID}}">{{.Text}}</li>{{end}}</ul>{{end}}
<h2>Glossary</h2>
<dl class="glossary">{{range .Glossary}}<dt>{{index . 0}}</dt><dd>{{index . 1}}</dd>{{end}}</dl>
</body></html>
`))

// HTML renders report.html from the same view as report.md, plus the
// evidence and the charts: one self-contained file (inline SVG, no script,
// no external reference) that scales to the window.
func HTML(rep *Report) ([]byte, error) {
	v := buildView(rep)
	for i := range v.Facts {
		v.Facts[i].Value = noScheme(v.Facts[i].Value)
	}
	var fails []failureItem
	nameOf := runNamer(rep.Runs)
	for _, r := range rep.Runs {
		for _, inv := range r.Invariants {
			if inv.Failed() {
				fails = append(fails, failureItem{failureAnchor(r, inv.Name),
					fmt.Sprintf("%s #%d: %s failed (count %d): %s", nameOf(r), r.Repeat, inv.Name, inv.Count, inv.Detail)})
			}
		}
	}
	data := struct {
		V          view
		Charts     []chartSVG
		Invariants []string
		Evidence   []strategyEvidence
		Failures   []failureItem
		Glossary   [][2]string
	}{V: v, Charts: reportCharts(rep), Invariants: invariantHeaders(rep), Evidence: evidenceRows(rep), Failures: fails, Glossary: glossary}
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
	// A report read back from report.json has its timelines on disk only.
	for i := range rep.Runs {
		if r := &rep.Runs[i]; r.Timeline != "" && len(r.timelineSVG) == 0 {
			if b, err := os.ReadFile(filepath.Join(dir, r.Timeline)); err == nil {
				r.timelineSVG = b
			}
		}
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

// invariantHeaders are the invariant names with spaces, so the header
// wraps and the table fits a projector's width.
func invariantHeaders(rep *Report) []string {
	cols := evidenceColumns(rep)
	out := make([]string, len(cols))
	for i, n := range cols {
		out[i] = strings.ReplaceAll(n, "_", " ")
	}
	return out
}
