package scenario

import (
	"bytes"
	"fmt"
	"html/template"
)

var page = template.Must(template.New("scenario").Parse(`<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>scenario {{.R.Scenario}}</title>
<style>
body{font-family:sans-serif;margin:2em;color:#222;font-size:16px}
table{border-collapse:collapse}
th,td{border:1px solid #bbb;padding:4px 8px;text-align:right}
th:nth-child(-n+2),td:nth-child(-n+2){text-align:left}
tr.bad td{background:#fde2e2}
.ok{color:#1a7f37}.fail{color:#b42318}
</style></head><body>
<h1>Scenario {{.R.Scenario}}</h1>
<ul><li>seed: {{.R.Seed}}</li><li>story: {{.R.Story}}</li><li>predicts: {{.R.Predicts}}</li><li>load: {{.R.Load}}</li><li>date: {{.Date}}</li></ul>
<table><tr>{{range .Header}}<th>{{.}}</th>{{end}}</tr>
{{range .Rows}}<tr{{if .Bad}} class="bad"{{end}}>{{range .Cells}}<td>{{.}}</td>{{end}}<td>{{range .Reports}}<a href="{{.Href}}">{{.N}}</a> {{end}}</td></tr>
{{end}}</table>
<ul>{{range .Meanings}}<li>{{.}}</li>{{end}}</ul>
{{if .R.Failures}}<p class="fail"><b>Verdict: failed.</b> {{range .R.Failures}}{{.}}; {{end}}</p>{{else}}<p class="ok"><b>Verdict: ok.</b> No fenced strategy oversold; every 2xx has its order{{.RuleOut}}.</p>{{end}}
</body></html>
`))

func renderHTML(res *Result) ([]byte, error) {
	type link struct {
		N    int
		Href string
	}
	type row struct {
		Cells   []string
		Reports []link
		Bad     bool
	}
	data := struct {
		R        *Result
		Date     string
		Header   []string
		Rows     []row
		Meanings []string
		RuleOut  string
	}{R: res, Date: res.Date.Format("2006-01-02 15:04:05 MST"), Header: append(header[:len(header):len(header)], "run reports"), RuleOut: res.ruleOut("; ")}
	for _, r := range res.Rows {
		rw := row{Cells: r.cells(), Bad: r.Oversold > 0}
		for i, h := range r.Reports {
			rw.Reports = append(rw.Reports, link{i + 1, h})
		}
		data.Rows = append(data.Rows, rw)
	}
	for _, p := range res.protections() {
		data.Meanings = append(data.Meanings, Meaning[p])
	}
	var b bytes.Buffer
	if err := page.Execute(&b, data); err != nil {
		return nil, fmt.Errorf("render scenario.html: %w", err)
	}
	return b.Bytes(), nil
}
