package nemesis

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"strings"
	"time"

	vegeta "github.com/tsenart/vegeta/v12/lib"

	"github.com/seckill-lab/seckill/bench"
	"github.com/seckill-lab/seckill/internal/fault"
	"github.com/seckill-lab/seckill/internal/soak"
)

// salesPerSecond reads the bench's raw results (vegeta's format) into the
// sales (2xx) answered in each second since the first request.
func salesPerSecond(path string) ([]int, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("nemesis: the raw results: %w", err)
	}
	defer f.Close()
	dec := vegeta.NewDecoder(bufio.NewReader(f))
	var t0 time.Time
	var at []time.Time
	for {
		var r vegeta.Result
		if err := dec(&r); err != nil {
			if errors.Is(err, io.EOF) {
				break
			}
			return nil, fmt.Errorf("nemesis: read %s: %w", path, err)
		}
		if t0.IsZero() || r.Timestamp.Before(t0) {
			t0 = r.Timestamp
		}
		if r.Code >= 200 && r.Code < 300 {
			at = append(at, r.Timestamp.Add(r.Latency))
		}
	}
	var out []int
	for _, a := range at {
		s := int(a.Sub(t0) / time.Second)
		for len(out) <= s {
			out = append(out, 0)
		}
		out[s]++
	}
	return out, nil
}

// Markdown is the run's summary: conditions, the safety figures, each
// fault with its times and sales gap, the verdict and the command.
func Markdown(r *Result) string {
	var b strings.Builder
	fencing := "without fencing"
	if r.Fencing {
		fencing = "with fencing"
	}
	fmt.Fprintf(&b, "Nemesis on %s: %s %s, %d purchases/s for %s, seed %d, a fault every %s on average; on %s.\n\n",
		r.Stack, r.Strategy, fencing, r.Rate, r.For, r.Seed, r.Every, r.Machine)
	fmt.Fprintf(&b, "- faults made: %d (%s), %d on %s and its links (%.0f%%), %d begun while another was on\n",
		r.Made, kindList(r.Kinds), r.NeededMade, r.NeededLink, pct(r.NeededMade, r.Made), r.Overlaps)
	fmt.Fprintf(&b, "- purchases %d, sales %d, oversold %d; resent %d, unanswered after %d resends %d\n",
		r.Requests, r.OK, r.Oversold, r.Resent, r.Resend, r.Unanswered)
	fmt.Fprintf(&b, "- invariants %d/%d decided passed", r.InvariantsPassed, r.InvariantsDecided)
	for _, inv := range r.Invariants {
		if inv.Undecided {
			fmt.Fprintf(&b, "; %s undecided", inv.Name)
		}
	}
	for _, inv := range r.Invariants {
		if why := Unchecked(inv); why != "" {
			fmt.Fprintf(&b, "\n- %s not checked: %s", inv.Name, why)
		}
		if why := r.Fenced(inv); why != "" {
			fmt.Fprintf(&b, "\n- %s broken, fenced: %s", inv.Name, why)
		}
	}
	fmt.Fprintf(&b, "\n- longest time without a sale: %.1f s\n\n", r.LongestGapS)
	b.WriteString("| # | fault | on | began s | healed s | sales gap s |\n|---|---|---|---|---|---|\n")
	for i, f := range r.Faults {
		on := "other"
		if f.Needed {
			on = r.NeededLink
		}
		if !f.Made {
			fmt.Fprintf(&b, "| %d | %s | %s | (%.1f) | | %s |\n", i+1, f.Fault, on, f.Start.Seconds(), f.Error)
			continue
		}
		healed := fmt.Sprintf("%.1f", f.HealedS)
		if !f.Healed {
			healed = "**not healed**: " + f.Error
		}
		gap := fmt.Sprintf("%.1f", f.SalesGapS)
		if f.GapOpen {
			gap += " (not resumed)"
		}
		fmt.Fprintf(&b, "| %d | %s | %s | %.1f | %s | %s |\n", i+1, f.describe(), on, f.StartS, healed, gap)
	}
	if fs := r.Failures(); len(fs) > 0 {
		fmt.Fprintf(&b, "\n**Verdict: failed.** %s\n", strings.Join(fs, "; "))
	} else {
		b.WriteString("\n**Verdict: ok.** Nothing oversold, every sale has its order, every order's request was answered 2xx, the history linearizable where decided, every fault healed.\n")
	}
	fmt.Fprintf(&b, "\nA sales gap is the longest span without a sale (or a sold out) that began before the fault healed (or within %s after) and ended after it began, counted from its start at the earliest. Repeat: `%s` (chart: OUT/nemesis.svg; the bench's report: %s)\n",
		bench.GapSettle, soak.PortableCommand(r.Command), r.BenchReport)
	return b.String()
}

func pct(k, n int) float64 {
	if n == 0 {
		return 0
	}
	return 100 * float64(k) / float64(n)
}

// kindLetter marks a fault's bar on the chart beside its number.
var kindLetter = map[string]string{fault.Kill: "k", fault.Pause: "p", fault.Partition: "x", fault.Latency: "l", fault.Failover: "f"}

// SVG draws the sales per second over the load and, under it, each fault
// made as a bar from its start to its heal, one lane per fault on at
// once: the needed group's in red, the others' in grey.
func SVG(r *Result) []byte {
	const w, left, right, top, plotH, laneH = 960.0, 56.0, 16.0, 36.0, 200.0, 14.0
	lanes := laneOf(r.Faults)
	nl := 0
	for _, l := range lanes {
		nl = max(nl, l+1)
	}
	h := top + plotH + 30 + float64(nl)*laneH + 56
	end := float64(len(r.SalesPerSecond))
	for _, f := range r.Faults {
		end = max(end, f.HealedS)
	}
	end = math.Max(end, 1)
	yMax := 1.0
	for _, v := range r.SalesPerSecond {
		yMax = math.Max(yMax, float64(v))
	}
	x := func(s float64) float64 { return left + s/end*(w-left-right) }
	y := func(v float64) float64 { return top + plotH - v/yMax*plotH }
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%.0f" height="%.0f" viewBox="0 0 %.0f %.0f" font-family="sans-serif" font-size="11">`+"\n", w, h, w, h)
	fmt.Fprintf(&b, `<rect width="100%%" height="100%%" fill="white"/>`+"\n")
	fmt.Fprintf(&b, `<text x="%.0f" y="18" font-size="13">%s: sales per second under the nemesis (seed %d)</text>`+"\n", left, esc(r.Strategy), r.Seed)
	fmt.Fprintf(&b, `<text x="%.0f" y="%.0f">faults on %s and its links red, the others grey; each numbered as the table, with its kind: k kill, p pause, x partition, l latency, f failover</text>`+"\n",
		left, h-8, esc(r.NeededLink))
	for i, f := range r.Faults {
		if !f.Made {
			continue
		}
		fill := "#bbbbbb"
		if f.Needed {
			fill = "#e8a0a0"
		}
		fmt.Fprintf(&b, `<rect x="%.1f" y="%.0f" width="%.1f" height="%.0f" fill="%s" opacity="0.25"/>`+"\n",
			x(f.StartS), top, math.Max(x(f.HealedS)-x(f.StartS), 1), plotH, fill)
		ly := top + plotH + 30 + float64(lanes[i])*laneH
		fmt.Fprintf(&b, `<rect x="%.1f" y="%.1f" width="%.1f" height="%.0f" fill="%s"><title>%s: %.1f-%.1f s, sales gap %.1f s</title></rect>`+"\n",
			x(f.StartS), ly, math.Max(x(f.HealedS)-x(f.StartS), 2), laneH-3, fill, esc(f.describe()), f.StartS, f.HealedS, f.SalesGapS)
		// The table's number and the kind's letter: a fault's bar is
		// often narrower than its kind's name.
		fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" font-size="9">%d%s</text>`+"\n", x(f.StartS)+2, ly+laneH-5, i+1, esc(kindLetter[f.Kind]))
	}
	var pts []string
	for s, v := range r.SalesPerSecond {
		pts = append(pts, fmt.Sprintf("%.1f,%.1f", x(float64(s)+0.5), y(float64(v))))
	}
	fmt.Fprintf(&b, `<polyline fill="none" stroke="#1f5fa8" stroke-width="1.2" points="%s"/>`+"\n", strings.Join(pts, " "))
	fmt.Fprintf(&b, `<line x1="%.0f" y1="%.0f" x2="%.0f" y2="%.0f" stroke="black"/>`+"\n", left, top+plotH, w-right, top+plotH)
	fmt.Fprintf(&b, `<line x1="%.0f" y1="%.0f" x2="%.0f" y2="%.0f" stroke="black"/>`+"\n", left, top, left, top+plotH)
	fmt.Fprintf(&b, `<text x="%.0f" y="%.0f" text-anchor="end">%.0f</text><text x="%.0f" y="%.0f" text-anchor="end">0</text>`+"\n",
		left-4, top+4, yMax, left-4, top+plotH)
	for _, t := range ticks(end) {
		fmt.Fprintf(&b, `<text x="%.1f" y="%.0f" text-anchor="middle">%.0f</text>`+"\n", x(t), top+plotH+14, t)
	}
	fmt.Fprintf(&b, `<text x="%.0f" y="%.0f" text-anchor="middle">seconds since the load began</text>`+"\n", (left+w-right)/2, h-26)
	b.WriteString("</svg>\n")
	return []byte(b.String())
}

// laneOf gives each fault made the lowest lane free at its start.
func laneOf(fs []Record) []int {
	out := make([]int, len(fs))
	var until []float64
	for i, f := range fs {
		if !f.Made {
			continue
		}
		l := 0
		for l < len(until) && until[l] > f.StartS {
			l++
		}
		if l == len(until) {
			until = append(until, 0)
		}
		until[l], out[i] = f.HealedS, l
	}
	return out
}

// ticks are about ten round seconds up to end.
func ticks(end float64) []float64 {
	step := 1.0
	for _, s := range []float64{1, 2, 5, 10, 20, 30, 60, 120, 300, 600} {
		step = s
		if end/s <= 12 {
			break
		}
	}
	var out []float64
	for t := 0.0; t <= end; t += step {
		out = append(out, t)
	}
	return out
}

func esc(s string) string {
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;", `"`, "&quot;").Replace(s)
}
