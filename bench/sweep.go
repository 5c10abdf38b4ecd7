package bench

import (
	"fmt"
	"slices"
	"strings"

	"github.com/seckill-lab/seckill/bench/chart"
)

// ScalingTarget is the least scaling ratio (ok/s at the most clients over
// ok/s at the fewest) a correct lock should reach: adding clients should
// not cost it more than a fifth of its throughput.
const ScalingTarget = 0.8

// Sweep is a concurrency sweep (Options.Sweep) read off the summary: per
// strategy (and variant), the median ok/s and p99 at each client count.
type Sweep struct {
	// Clients are the sweep's points, ascending.
	Clients []int `json:"clients"`
	// TargetRatio is ScalingTarget.
	TargetRatio float64       `json:"target_ratio"`
	Series      []SweepSeries `json:"series"`
}

// SweepSeries is one strategy's sweep. OKPerSec and P99MS are aligned with
// Sweep.Clients (nil where that point did not run).
type SweepSeries struct {
	Label           string  `json:"label"`
	Strategy        string  `json:"strategy"`
	Variant         string  `json:"variant,omitempty"`
	ExpectedCorrect bool    `json:"expected_correct"`
	Locker          bool    `json:"locker"`
	Repeats         int     `json:"repeats"`
	OKPerSec        []*Stat `json:"ok_per_s"`
	P99MS           []*Stat `json:"p99_ms"`
	// ScalingRatio is, for an expected-correct locker, the median ok/s at
	// the most clients over the median ok/s at the fewest (1 in the usual
	// sweep); ScalingMet says whether it reaches TargetRatio. Both nil for
	// the other strategies or when an end of the sweep is missing.
	ScalingRatio *float64 `json:"scaling_ratio,omitempty"`
	ScalingMet   *bool    `json:"scaling_met,omitempty"`
}

// sweepOf builds the sweep from the summary; nil without a sweep.
func sweepOf(ss []Summary, clients []int) *Sweep {
	if len(clients) == 0 {
		return nil
	}
	sw := &Sweep{Clients: slices.Clone(clients), TargetRatio: ScalingTarget}
	index := map[string]int{}
	for _, s := range ss {
		label := labelOf(s.Strategy, s.Variant)
		i, ok := index[label]
		if !ok {
			i = len(sw.Series)
			index[label] = i
			sw.Series = append(sw.Series, SweepSeries{Label: label, Strategy: s.Strategy, Variant: s.Variant,
				ExpectedCorrect: s.ExpectedCorrect, Locker: Locker(s.Strategy),
				OKPerSec: make([]*Stat, len(clients)), P99MS: make([]*Stat, len(clients))})
		}
		p := slices.Index(clients, s.Concurrency)
		if p < 0 {
			continue
		}
		ser := &sw.Series[i]
		okps, p99 := s.OKPerSec, s.P99MS
		ser.OKPerSec[p], ser.P99MS[p] = &okps, &p99
		ser.Repeats = max(ser.Repeats, s.Repeats)
		ser.ExpectedCorrect = ser.ExpectedCorrect && s.ExpectedCorrect
	}
	last := len(clients) - 1
	for i := range sw.Series {
		ser := &sw.Series[i]
		lo, hi := ser.OKPerSec[0], ser.OKPerSec[last]
		if !ser.Locker || !ser.ExpectedCorrect || last == 0 || lo == nil || hi == nil || lo.Median <= 0 {
			continue
		}
		r := hi.Median / lo.Median
		met := r >= ScalingTarget
		ser.ScalingRatio, ser.ScalingMet = &r, &met
	}
	return sw
}

func clientsHeader(c int) string {
	if c == 1 {
		return "1 client"
	}
	return fmt.Sprintf("%d clients", c)
}

// sweepTables are the sweep's tables: ok/s and p99 by clients, and the
// scaling ratios of the expected-correct lockers.
func sweepTables(sw *Sweep) []table {
	if sw == nil {
		return nil
	}
	header := []string{"strategy"}
	for _, c := range sw.Clients {
		header = append(header, clientsHeader(c))
	}
	okt := table{Title: "Sweep: successful purchases per second by clients", Header: header}
	p99t := table{Title: "Sweep: p99 latency (ms) by clients", Header: header}
	first, last := sw.Clients[0], sw.Clients[len(sw.Clients)-1]
	scale := table{Title: "Sweep: scaling of the correct locks", Header: []string{"strategy",
		"ok/s @" + fmt.Sprint(first), "ok/s @" + fmt.Sprint(last), fmt.Sprintf("ratio @%d / @%d", last, first),
		fmt.Sprintf("target >= %.1f", sw.TargetRatio)}}
	cell := func(st *Stat, repeats int, format string) string {
		if st == nil {
			return "-"
		}
		return fmtStat(*st, repeats, format)
	}
	for _, ser := range sw.Series {
		okRow, p99Row := []string{ser.Label}, []string{ser.Label}
		for i := range sw.Clients {
			okRow = append(okRow, cell(ser.OKPerSec[i], ser.Repeats, "%.0f"))
			p99Row = append(p99Row, cell(ser.P99MS[i], ser.Repeats, "%.1f"))
		}
		okt.Rows, okt.Bad = append(okt.Rows, okRow), append(okt.Bad, false)
		p99t.Rows, p99t.Bad = append(p99t.Rows, p99Row), append(p99t.Bad, false)
		if ser.ScalingRatio != nil {
			verdict := "met"
			if !*ser.ScalingMet {
				verdict = "not met"
			}
			scale.Rows = append(scale.Rows, []string{ser.Label, cell(ser.OKPerSec[0], ser.Repeats, "%.0f"),
				cell(ser.OKPerSec[len(sw.Clients)-1], ser.Repeats, "%.0f"), fmt.Sprintf("%.2f", *ser.ScalingRatio), verdict})
			scale.Bad = append(scale.Bad, !*ser.ScalingMet)
		}
	}
	out := []table{okt, p99t}
	if len(scale.Rows) > 0 {
		out = append(out, scale)
	}
	return out
}

// sweepCharts are the sweep's two line charts over clients (log scale):
// throughput and p99 latency, one line per strategy.
func sweepCharts(sw *Sweep) []chartSVG {
	if sw == nil {
		return nil
	}
	var okLines, p99Lines []chart.Line
	note := ""
	for _, ser := range sw.Series {
		if !ser.ExpectedCorrect {
			note = unsafeMark
		}
		okl := chart.Line{Label: ser.Label, Flawed: !ser.ExpectedCorrect, Points: true}
		p99l := okl
		for i, c := range sw.Clients {
			if st := ser.OKPerSec[i]; st != nil {
				okl.X, okl.Y = append(okl.X, float64(c)), append(okl.Y, st.Median)
			}
			if st := ser.P99MS[i]; st != nil {
				p99l.X, p99l.Y = append(p99l.X, float64(c)), append(p99l.Y, st.Median)
			}
		}
		okLines, p99Lines = append(okLines, okl), append(p99Lines, p99l)
	}
	return []chartSVG{
		{"Sweep throughput", chart.Inline(chart.LineChart("Successful purchases per second by clients (median)"+note, "clients (log scale)", "ok/s", okLines, true))},
		{"Sweep p99", chart.Inline(chart.LineChart("p99 latency by clients (median)"+note, "clients (log scale)", "p99 latency, ms", p99Lines, true))},
	}
}

// queueTable compares, per strategy and concurrency that ran both ways
// (Options.CompareQueue), the local queue on and off.
func queueTable(ss []Summary) table {
	t := table{Title: "Local queue on and off", Header: []string{"strategy", "clients", "ok/s queue", "ok/s no queue",
		"no queue / queue", "p99 ms queue", "p99 ms no queue", "ok queue", "ok no queue"}}
	type key struct {
		s string
		c int
	}
	off := map[key]Summary{}
	for _, s := range ss {
		if s.Variant == VariantNoQueue {
			off[key{s.Strategy, s.Concurrency}] = s
		}
	}
	for _, on := range ss {
		o, ok := off[key{on.Strategy, on.Concurrency}]
		if on.Variant != "" || !ok {
			continue
		}
		ratio := "-"
		if on.OKPerSec.Median > 0 {
			ratio = fmt.Sprintf("%.2f", o.OKPerSec.Median/on.OKPerSec.Median)
		}
		t.Rows = append(t.Rows, []string{on.Strategy, fmt.Sprint(on.Concurrency),
			fmtStat(on.OKPerSec, on.Repeats, "%.0f"), fmtStat(o.OKPerSec, o.Repeats, "%.0f"), ratio,
			fmtStat(on.P99MS, on.Repeats, "%.1f"), fmtStat(o.P99MS, o.Repeats, "%.1f"),
			fmtStat(on.OK, on.Repeats, "%.0f"), fmtStat(o.OK, o.Repeats, "%.0f")})
		t.Bad = append(t.Bad, false)
	}
	return t
}

// orderFact is the report's line on the order of the runs.
func orderFact(order [][]string) string {
	parts := make([]string, len(order))
	for i, o := range order {
		parts[i] = fmt.Sprintf("round %d: %s", i+1, strings.Join(o, ", "))
	}
	return strings.Join(parts, "; ")
}
