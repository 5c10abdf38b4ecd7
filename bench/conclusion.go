package bench

import (
	"cmp"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/seckill-lab/seckill/bench/confidence"
	"github.com/seckill-lab/seckill/bench/fleet"
	"github.com/seckill-lab/seckill/stock/catalog"
)

// ConclusionWidth is the widest line of Conclusion's text, in runes.
const ConclusionWidth = 100

// Conclusion says in prose what the run found, from the same report as
// its table: which strategies oversold, each flawed by design (the
// catalogue's catalog.ColFlawed) or only not safe at this setting (the
// table's ColSafe); which did not; which correct strategy sold the most
// per second (median ok/s) and how it compares with the fastest correct
// lock (catalog.KindLocker); and the conditions the figures ran under.
// Correct means: not flawed by design, oversold in no repeat, every
// invariant passed. The text is wrapped at ConclusionWidth; "" for a
// report without rows.
func Conclusion(rep *Report) string {
	if len(rep.Summary) == 0 {
		return ""
	}
	var overFlawed, overUnsafe, overExpected, heldFlawed, heldLucky []string
	held := 0
	var best, bestLock *Summary
	for i := range rep.Summary {
		s := &rep.Summary[i]
		cat, _ := catalog.Lookup(s.Strategy)
		// A service without a lock on purpose is flawed by design.
		cat.Flawed = cat.Flawed || s.ServiceURL != "" && !s.ExpectedCorrect
		oversold := s.Oversold.Max > 0
		switch {
		case oversold && cat.Flawed:
			overFlawed = append(overFlawed, oversoldName(*s))
		case oversold && !s.ExpectedCorrect:
			overUnsafe = append(overUnsafe, oversoldName(*s))
		case oversold:
			overExpected = append(overExpected, oversoldName(*s))
		case cat.Flawed && s.ExpectedCorrect:
			held++
			heldFlawed = append(heldFlawed, s.Name)
		case !s.ExpectedCorrect:
			held++
			heldLucky = append(heldLucky, s.Name)
		default:
			held++
		}
		if cat.Flawed || oversold || s.InvariantsPassed < s.InvariantsTotal {
			continue
		}
		if best == nil || s.OKPerSec.Median > best.OKPerSec.Median {
			best = s
		}
		if cat.Kind == catalog.KindLocker && (bestLock == nil || s.OKPerSec.Median > bestLock.OKPerSec.Median) {
			bestLock = s
		}
	}

	var sentences []string
	if over := len(overFlawed) + len(overUnsafe) + len(overExpected); over == 0 {
		sentences = append(sentences, fmt.Sprintf("No strategy oversold, %s.", inAny(rep)))
	} else {
		var parts []string
		if len(overFlawed) > 0 {
			parts = append(parts, andList(overFlawed)+", "+catalog.ColFlawed)
		}
		if len(overUnsafe) > 0 {
			parts = append(parts, andList(overUnsafe)+", correct by design but not "+ColSafe)
		}
		if len(overExpected) > 0 {
			parts = append(parts, andList(overExpected)+", which the catalogue expects to hold at this setting: a failure to look into")
		}
		sentences = append(sentences, "Oversold (median units): "+strings.Join(parts, "; ")+".")
		heldText := fmt.Sprintf("the other %d strategies", held)
		if held == 1 {
			heldText = "the one other strategy"
		}
		if held > 0 {
			sentences = append(sentences, fmt.Sprintf("Did not oversell, %s: %s.", inAny(rep), heldText))
		}
	}
	if len(heldFlawed) > 0 {
		sentences = append(sentences, fmt.Sprintf("%s %s %s, yet safe at this setting, and did not oversell.",
			andList(heldFlawed), isAre(len(heldFlawed)), catalog.ColFlawed))
	}
	if len(heldLucky) > 0 {
		sentences = append(sentences, fmt.Sprintf("Not %s, yet no oversold unit this time: %s.", ColSafe, andList(heldLucky)))
	}
	sentences = append(sentences, fastestText(best, bestLock))
	sentences = append(sentences, "Conditions: "+conclusionConditions(rep)+".")
	return wrapText(strings.Join(sentences, " "), ConclusionWidth)
}

// fastestText compares the fastest correct strategy with the fastest
// correct lock.
func fastestText(best, bestLock *Summary) string {
	switch {
	case best == nil:
		return "No strategy was correct in this run (not " + catalog.ColFlawed + ", oversold in no repeat, every invariant passed)."
	case best == bestLock:
		return fmt.Sprintf("The fastest correct strategy is a lock, %s, at %.0f ok/s (median).", best.Name, best.OKPerSec.Median)
	case bestLock == nil:
		return fmt.Sprintf("The fastest correct strategy is %s, at %.0f ok/s (median); no correct lock ran to compare it with.",
			best.Name, best.OKPerSec.Median)
	}
	ratio := "-"
	if bestLock.OKPerSec.Median > 0 {
		ratio = fmt.Sprintf("%.1f", best.OKPerSec.Median/bestLock.OKPerSec.Median)
	}
	return fmt.Sprintf("The fastest correct strategy is %s, at %.0f ok/s (median): %s times the fastest correct lock, %s, at %.0f ok/s.",
		best.Name, best.OKPerSec.Median, ratio, bestLock.Name, bestLock.OKPerSec.Median)
}

// conclusionConditions are the run's conditions for Conclusion: the
// fleet, the load, the round trip, the durability, the mode, the machine
// and the repeats.
func conclusionConditions(rep *Report) string {
	e := rep.Environment
	parts := []string{instancesOf(e)}
	if len(rep.Runs) > 0 {
		r := rep.Runs[0]
		clients := fmt.Sprintf("%d clients", r.Concurrency)
		if rep.Sweep != nil {
			clients = "clients swept over " + sweptClients(rep)
		}
		parts = append(parts, clients, fmt.Sprintf("%d requests on a stock of %d", r.Requests, r.InitialStock))
	}
	mode := cmp.Or(e.Mode, ModePurchase)
	if mode == ModeLock {
		mode = "lock alone"
	}
	parts = append(parts, "round trip "+rttText(e.RTT), "durability "+cmp.Or(e.Durability, "unknown"), "mode "+mode,
		fmt.Sprintf("%d CPUs", e.CPUs), repeatsText(rep))
	return strings.Join(parts, ", ")
}

// rttText says the round trip the fleet's links added.
func rttText(r fleet.RTT) string {
	if r == (fleet.RTT{}) {
		return "loopback (no round trip added)"
	}
	return fmt.Sprintf("%.3f ms measured (%s)", r.MeasuredMS, cmp.Or(r.Profile, "custom"))
}

// repeatsText is "3 repeats" or "1 run": the rounds the medians are over.
func repeatsText(rep *Report) string {
	n := 0
	for _, s := range rep.Summary {
		n = max(n, s.Repeats)
	}
	if n <= 1 {
		return "1 run"
	}
	return fmt.Sprintf("%d repeats", n)
}

// inAny is "in any of the 3 repeats", or "in the run" for one, with
// what so few rule out (confidence.RuleOut): "in any of the 3 repeats (3
// repeats rule out only rates above 71 %)".
func inAny(rep *Report) string {
	n := 0
	for _, s := range rep.Summary {
		n = max(n, s.Repeats)
	}
	if n <= 1 {
		return "in the run (" + confidence.RuleOut(1, "run") + ")"
	}
	return fmt.Sprintf("in any of the %d repeats (%s)", n, confidence.RuleOut(n, "repeat"))
}

// oversoldName is a row's name with its median oversold units.
func oversoldName(s Summary) string {
	if s.Repeats > 1 && s.OversoldRuns > 0 { // a report of before OversoldRuns has 0
		return fmt.Sprintf("%s (%.0f; in %d of %d repeats, %s)", s.Name, s.Oversold.Median, s.OversoldRuns, s.Repeats, confidence.Interval(s.OversoldRuns, s.Repeats))
	}
	return fmt.Sprintf("%s (%.0f)", s.Name, s.Oversold.Median)
}

// andList joins names as prose: "a", "a and b", "a, b and c".
func andList(names []string) string {
	if len(names) < 2 {
		return strings.Join(names, "")
	}
	return strings.Join(names[:len(names)-1], ", ") + " and " + names[len(names)-1]
}

func isAre(n int) string {
	if n == 1 {
		return "is"
	}
	return "are"
}

// wrapText breaks text into lines of at most width runes at spaces (a
// word longer than width stands on a line of its own).
func wrapText(text string, width int) string {
	var b strings.Builder
	n := 0
	for _, w := range strings.Fields(text) {
		wl := utf8.RuneCountInString(w)
		switch {
		case n == 0:
		case n+1+wl > width:
			b.WriteByte('\n')
			n = 0
		default:
			b.WriteByte(' ')
			n++
		}
		b.WriteString(w)
		n += wl
	}
	return b.String()
}
