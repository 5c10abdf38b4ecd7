package dashboard

import (
	"cmp"
	"math"
	"slices"

	"github.com/seckill-lab/seckill/bench/lockcheck"
	"github.com/seckill-lab/seckill/stock"
)

// The race timeline: each purchase's critical section from the lock
// events, overlaps marked, times relative to the snapshot.

// TimelineView is the race timeline: the sections of a span of time (the
// last Window, or the last burst's), times in ms relative to the span's end
// (negative: before it).
type TimelineView struct {
	WindowMS float64       `json:"window_ms"`
	Lanes    []string      `json:"lanes"`
	Sections []SectionView `json:"sections"`
	Overlaps [][2]float64  `json:"overlaps"` // overlapping intervals
	// Overlapping counts the sections of the window that overlap another;
	// Overlaps are the merged intervals where they do.
	Overlapping int `json:"overlapping"`
	// SwitchMS is when the fleet's setting changed inside the window
	// (absent: no change there), from strategy SwitchFrom to SwitchTo
	// (the same name when only a knob changed): the bars before it ran
	// under the old setting.
	SwitchMS   *float64 `json:"switch_ms,omitempty"`
	SwitchFrom string   `json:"switch_from,omitempty"`
	SwitchTo   string   `json:"switch_to,omitempty"`
}

// SectionView is one purchase's critical section: lock acquired (A),
// stock read (R), committed or rolled back (E), lock released (L); a
// missing step is null (E and L of a section still running).
type SectionView struct {
	Lane int      `json:"lane"`
	A    *float64 `json:"a"`
	R    *float64 `json:"r"`
	E    *float64 `json:"e"`
	L    *float64 `json:"l"`
	OK   bool     `json:"ok"`
	Red  bool     `json:"red"`
}

// timeline builds the race timeline of evs from fromNS to nowNS: one lane
// per instance (the stack's, then any other seen), every section whose
// span meets the window, red when it overlaps another (lockcheck.Overlaps:
// both read the stock before the other's commit).
func timeline(evs []stock.Event, lanes []string, fromNS, nowNS int64) TimelineView {
	tv := TimelineView{WindowMS: float64(nowNS-fromNS) / 1e6, Lanes: slices.Clone(lanes), Sections: []SectionView{}, Overlaps: [][2]float64{}}
	secs := lockcheck.Sections(evs)
	red := map[[2]string]bool{}
	var spans [][2]int64
	for _, o := range lockcheck.Overlaps(secs) {
		red[[2]string{o.A.Instance, o.A.Purchase}] = true
		red[[2]string{o.B.Instance, o.B.Purchase}] = true
		spans = append(spans, [2]int64{o.FromNS, o.ToNS})
	}
	// The overlapping intervals merged (n racing purchases make up to
	// n² pairs).
	slices.SortFunc(spans, func(a, b [2]int64) int { return cmp.Compare(a[0], b[0]) })
	for _, sp := range spans {
		if n := len(tv.Overlaps); n > 0 && rel(sp[0], nowNS) <= tv.Overlaps[n-1][1] {
			tv.Overlaps[n-1][1] = max(tv.Overlaps[n-1][1], rel(sp[1], nowNS))
			continue
		}
		tv.Overlaps = append(tv.Overlaps, [2]float64{rel(sp[0], nowNS), rel(sp[1], nowNS)})
	}
	lane := map[string]int{}
	for i, n := range tv.Lanes {
		lane[n] = i
	}
	from := fromNS
	for _, sec := range secs {
		start := cmp.Or(sec.AcquiredNS, sec.ReadNS)
		end := max(sec.ReleasedNS, sec.EndNS)
		// Only what ran between from and now: a kept burst's timeline
		// ends before purchases that came after it.
		if start == 0 || start > nowNS || (end != 0 && end < from) {
			continue
		}
		l, ok := lane[sec.Instance]
		if !ok {
			l = len(tv.Lanes)
			lane[sec.Instance] = l
			tv.Lanes = append(tv.Lanes, sec.Instance)
		}
		r := red[[2]string{sec.Instance, sec.Purchase}]
		if r {
			tv.Overlapping++
		}
		tv.Sections = append(tv.Sections, SectionView{Lane: l, A: relp(sec.AcquiredNS, nowNS), R: relp(sec.ReadNS, nowNS),
			E: relp(sec.EndNS, nowNS), L: relp(sec.ReleasedNS, nowNS), OK: sec.Committed, Red: r})
	}
	if n := len(tv.Sections); n > maxSections { // the latest ones
		tv.Sections = tv.Sections[n-maxSections:]
	}
	return tv
}

// maxSections bounds the sections a snapshot carries.
const maxSections = 2000

// rel is t relative to now in ms, rounded to 10 µs.
func rel(t, now int64) float64 { return math.Round(float64(t-now)/1e4) / 100 }

func relp(t, now int64) *float64 {
	if t == 0 {
		return nil
	}
	v := rel(t, now)
	return &v
}
