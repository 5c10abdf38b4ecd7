package nemesis

import (
	"encoding/xml"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/seckill-lab/seckill/bench"
	"github.com/seckill-lab/seckill/internal/fault"
)

// TestReport: the summary lists every fault with its heal and sales gap
// (or why it was not made), names the verdict, and writes no path of the
// machine; the chart is well-formed SVG with a bar per fault made.
func TestReport(t *testing.T) {
	made := func(kind, target string, needed bool, start, healed, gap float64) Record {
		return Record{Fault: Fault{Kind: kind, Target: target, Needed: needed, Start: secs(start)}, Hit: kind + " " + target,
			StartS: start, HealedS: healed, Made: true, Healed: true, SalesGapS: gap}
	}
	leader := made(fault.Kill, "redis-primary", true, 10, 14.5, 2.25)
	leader.Target = LeaderPrefix + "redis" // aimed at whichever led: redis-primary did
	ok := &Result{Stack: "ha topology", Strategy: "redis", Fencing: true, Seed: 1, For: "1m0s", Every: "6s", Rate: 40, NeededLink: "redis",
		Faults: []Record{
			leader,
			made(fault.Pause, "inst-1", false, 12, 15, 0.5),
			{Fault: Fault{Kind: fault.Failover, Needed: true, Start: 30 * time.Second}, Error: "not made: NOGOODSLAVE"},
		},
		Invariants:     []bench.Invariant{{Name: bench.InvOKHasOrder, Pass: true, Applicable: true}},
		SalesPerSecond: []int{40, 38, 0, 12, 40},
		Command:        "seckill nemesis --dir /home/me/.seckill --strategy redis --out /tmp/x"}
	broken := *ok
	broken.Oversold = 2
	broken.Faults = append([]Record{}, ok.Faults...)
	broken.Faults[1].Healed, broken.Faults[1].Error = false, "not healed: start inst-1: boom"
	lost := *ok
	lost.Invariants = append([]bench.Invariant{{Name: bench.InvMutualExclusion, Applicable: true, Count: 1, Incomplete: true,
		Detail: "the evidence is incomplete (9 sales, 8 committed sections seen): 1 sales without a committed critical section seen"}}, ok.Invariants...)
	overlap := *ok
	overlap.Fencing = false
	overlap.Invariants = []bench.Invariant{{Name: bench.InvMutualExclusion, Applicable: true, Count: 2,
		Detail: "2 pairs of purchases were inside the critical section at once"}}
	fenced := overlap
	fenced.Fencing, fenced.Outcomes = true, map[string]int{bench.OutcomeStaleLock: 3}
	fencedLost := fenced
	fencedLost.Invariants = append([]bench.Invariant{{Name: bench.InvNoLostUpdate, Applicable: true, Count: 1, Detail: "1 units sold that the stock column never lost"}}, fenced.Invariants...)
	tests := []struct {
		name string
		r    *Result
		want []string
	}{
		{"sections overlapped, fenced", &fenced, []string{"mutual_exclusion broken, fenced: 2 pairs", "the tokens refused 3 stale writes", "**Verdict: ok.**"}},
		{"sections overlapped, fenced, a sale lost", &fencedLost, []string{"**Verdict: failed.** no_lost_update: 1 units"}},
		{"events lost with a killed instance", &lost, []string{"mutual_exclusion not checked: no two critical sections seen overlapping, but the evidence is incomplete", "**Verdict: ok.**"}},
		{"sections overlapped", &overlap, []string{"**Verdict: failed.** mutual_exclusion: 2 pairs"}},
		{"ok", ok, []string{"| 1 | kill redis-primary (the redis leader) | redis | 10.0 | 14.5 | 2.2 |", "| 2 | pause inst-1 | other | 12.0 | 15.0 | 0.5 |",
			"not made: NOGOODSLAVE", "**Verdict: ok.**", "--dir DIR", "--out OUT"}},
		{"failed", &broken, []string{"**Verdict: failed.** oversold 2", "**not healed**: not healed: start inst-1: boom"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			md := Markdown(tt.r)
			for _, w := range tt.want {
				if !strings.Contains(md, w) {
					t.Errorf("the summary lacks %q:\n%s", w, md)
				}
			}
			if strings.Contains(md, "/home/me") || strings.Contains(md, "/tmp/x") {
				t.Errorf("the summary names the machine's paths:\n%s", md)
			}
			svg := SVG(tt.r)
			dec := xml.NewDecoder(strings.NewReader(string(svg)))
			titles := 0
			for {
				tok, err := dec.Token()
				if err == io.EOF {
					break
				}
				if err != nil {
					t.Fatalf("the chart is not well-formed: %v", err)
				}
				if se, ok := tok.(xml.StartElement); ok && se.Name.Local == "title" {
					titles++
				}
			}
			if titles != 2 {
				t.Errorf("%d fault bars; want 2 (the faults made)", titles)
			}
		})
	}
}
