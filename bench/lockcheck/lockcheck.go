// Package lockcheck rebuilds the critical sections of purchases from the
// lock events the stock-service instances record (stock.Event), and checks
// them: mutual exclusion (no two purchases of one key between their stock
// read and their commit at the same time) and the order of release and
// commit (a lock released before its holder committed). It also draws the
// sections as an SVG timeline.
//
// Every instance on one machine stamps its events with the same
// CLOCK_MONOTONIC, so the events of different instances compare directly.
//
// The mutual-exclusion check compares [read, end] windows, not
// [acquire, release]: a lock server's release reaches the client (and its
// event) a little after the server let the next holder in, so comparing
// lock holds would raise false alarms. A correct lock orders
// A.commit < A.release < B.acquire < B.read, so the [read, end] windows of
// two purchases under it never meet; two windows that do meet mean both
// purchases read the stock before the other's commit: a lost update.
package lockcheck

import (
	"bytes"
	"cmp"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/seckill-lab/seckill/stock"
)

// Section is one purchase's critical section on one key, on one instance.
type Section struct {
	Instance, Purchase, Key string
	Token                   uint64
	AcquiredNS              int64 // 0 when the strategy takes no lock
	ReadNS                  int64 // the stock read (0 if the purchase never read)
	EndNS                   int64 // committed or rolled_back (0 if neither was seen)
	Committed               bool
	ReleasedNS              int64 // 0 when no lock or no release seen
	// Batch is the batch leader's purchase id when the purchase was sold
	// in a batch (stock.Event.Batch): the sections of one instance with
	// the same Batch are one critical section.
	Batch string
}

// sameBatch reports whether a and b were sold in one batch: one lock hold
// and one transaction, so their windows overlap by design.
func sameBatch(a, b *Section) bool {
	return a.Batch != "" && a.Batch == b.Batch && a.Instance == b.Instance
}

type sectionID struct{ instance, purchase, key string }

func (s Section) id() sectionID { return sectionID{s.Instance, s.Purchase, s.Key} }

// Sections groups events by (Instance, Purchase) into sections, ordered by
// ReadNS (then AcquiredNS). A purchase that touched several keys gives one
// section per key. The events may come in any order (several instances'
// streams merged): each purchase's events are put in MonoNS (then Seq)
// order first.
//
// Within a section the last acquired event counts (a retried acquire is the
// one that held the lock), its token is the section's Token; the first read
// and the first committed or rolled_back count; the last released counts.
func Sections(events []stock.Event) []Section {
	// Each event's section number, in the order sections first appear,
	// then the events grouped by section in one array (a counting sort):
	// one map lookup per event and no slice per section.
	at := map[sectionID]int32{}
	group := make([]int32, len(events))
	var order []sectionID
	for i := range events {
		ev := &events[i]
		id := sectionID{ev.Instance, ev.Purchase, ev.Key}
		g, ok := at[id]
		if !ok {
			g = int32(len(order))
			at[id] = g
			order = append(order, id)
		}
		group[i] = g
	}
	start := make([]int32, len(order)+1)
	for _, g := range group {
		start[g+1]++
	}
	for g := range order {
		start[g+1] += start[g]
	}
	next := slices.Clone(start[:len(order)])
	byGroup := make([]int32, len(events))
	for i, g := range group {
		byGroup[next[g]] = int32(i)
		next[g]++
	}
	secs := make([]Section, 0, len(order))
	for g, id := range order {
		idx := byGroup[start[g]:start[g+1]]
		slices.SortStableFunc(idx, func(a, b int32) int {
			return cmp.Or(cmp.Compare(events[a].MonoNS, events[b].MonoNS), cmp.Compare(events[a].Seq, events[b].Seq))
		})
		s := Section{Instance: id.instance, Purchase: id.purchase, Key: id.key}
		for _, i := range idx {
			ev := &events[i]
			if ev.Batch != "" {
				s.Batch = ev.Batch
			}
			switch ev.Kind {
			case stock.EventAcquired:
				s.AcquiredNS, s.Token = ev.MonoNS, ev.Token
			case stock.EventRead:
				if s.ReadNS == 0 {
					s.ReadNS = ev.MonoNS
				}
			case stock.EventCommitted, stock.EventRolledBack:
				if s.EndNS == 0 {
					s.EndNS = ev.MonoNS
					s.Committed = ev.Kind == stock.EventCommitted
				}
			case stock.EventReleased:
				s.ReleasedNS = ev.MonoNS
				if s.Token == 0 {
					s.Token = ev.Token
				}
			}
		}
		secs = append(secs, s)
	}
	slices.SortStableFunc(secs, func(a, b Section) int {
		return cmp.Or(
			cmp.Compare(a.ReadNS, b.ReadNS),
			cmp.Compare(a.AcquiredNS, b.AcquiredNS),
			cmp.Compare(a.Instance, b.Instance),
			cmp.Compare(a.Purchase, b.Purchase),
			cmp.Compare(a.Key, b.Key),
		)
	})
	return secs
}

// Overlap is two purchases of one key inside [ReadNS, EndNS] at the same
// time: both read the stock before the other's commit (a lost-update
// window). That is the mutual-exclusion violation. A is the section that
// read first. Two purchases of one batch (same instance, same Batch) are
// one critical section, not an overlap.
type Overlap struct {
	Key          string
	A, B         Section
	FromNS, ToNS int64 // the overlapping interval
}

// Duration is the length of the overlapping interval.
func (o Overlap) Duration() time.Duration { return time.Duration(o.ToNS - o.FromNS) }

// endHeap is a min-heap of indexes into secs by EndNS: the active windows
// of a sweep.
type endHeap struct {
	secs []Section
	idx  []int
}

func (h *endHeap) less(i, j int) bool { return h.secs[h.idx[i]].EndNS < h.secs[h.idx[j]].EndNS }

func (h *endHeap) push(x int) {
	h.idx = append(h.idx, x)
	for j := len(h.idx) - 1; j > 0; {
		p := (j - 1) / 2
		if !h.less(j, p) {
			break
		}
		h.idx[j], h.idx[p] = h.idx[p], h.idx[j]
		j = p
	}
}

func (h *endHeap) pop() {
	n := len(h.idx) - 1
	h.idx[0] = h.idx[n]
	h.idx = h.idx[:n]
	for i := 0; ; {
		m, l, r := i, 2*i+1, 2*i+2
		if l < n && h.less(l, m) {
			m = l
		}
		if r < n && h.less(r, m) {
			m = r
		}
		if m == i {
			return
		}
		h.idx[i], h.idx[m] = h.idx[m], h.idx[i]
		i = m
	}
}

// Overlaps returns every overlapping pair of sections of one key (only
// sections with both ReadNS and EndNS set count), sorted by FromNS. Two
// windows overlap when each read came strictly before the other's end; the
// windows [r1, e1] and [e1, e2] that only touch do not. A purchase that read
// and ended within one nanosecond while another held its read gives an
// overlap of zero duration: still a lost update. It sorts and sweeps:
// O(n log n + overlaps).
func Overlaps(secs []Section) []Overlap {
	all := make([]Section, 0, len(secs))
	for _, s := range secs {
		if s.ReadNS != 0 && s.EndNS != 0 {
			all = append(all, s)
		}
	}
	slices.SortFunc(all, func(a, b Section) int {
		if c := strings.Compare(a.Key, b.Key); c != 0 {
			return c
		}
		if c := cmp.Compare(a.ReadNS, b.ReadNS); c != 0 {
			return c
		}
		return cmp.Compare(a.EndNS, b.EndNS)
	})
	var out []Overlap
	for len(all) > 0 {
		n := 1
		for n < len(all) && all[n].Key == all[0].Key {
			n++
		}
		ks := all[:n]
		all = all[n:]
		active := &endHeap{secs: ks}
		for j := range ks {
			b := &ks[j]
			// Windows that ended at or before this read cannot meet it, nor
			// any later one (reads only grow).
			for len(active.idx) > 0 && ks[active.idx[0]].EndNS <= b.ReadNS {
				active.pop()
			}
			// Every active a has a.ReadNS <= b.ReadNS < a.EndNS. They overlap
			// if also a.ReadNS < b.EndNS, which fails only for an empty window
			// b (EndNS <= ReadNS) that a's read does not precede.
			for _, i := range active.idx {
				if a := &ks[i]; a.ReadNS < b.EndNS && !sameBatch(a, b) {
					out = append(out, Overlap{Key: b.Key, A: *a, B: *b, FromNS: b.ReadNS, ToNS: min(a.EndNS, b.EndNS)})
				}
			}
			if b.EndNS > b.ReadNS {
				active.push(j)
			}
		}
	}
	slices.SortStableFunc(out, func(x, y Overlap) int {
		return cmp.Or(
			cmp.Compare(x.FromNS, y.FromNS),
			cmp.Compare(x.ToNS, y.ToNS),
			cmp.Compare(x.Key, y.Key),
			cmp.Compare(x.A.Instance, y.A.Instance),
			cmp.Compare(x.A.Purchase, y.A.Purchase),
			cmp.Compare(x.B.Instance, y.B.Instance),
			cmp.Compare(x.B.Purchase, y.B.Purchase),
		)
	})
	return out
}

// EarlyRelease is a lock released before its holder's commit (the mutex-tx
// flaw): between the release and the commit another purchase may take the
// lock and read the stock the commit is about to change.
type EarlyRelease struct {
	Section Section
	ByNS    int64 // EndNS - ReleasedNS
}

// ReleasedBeforeCommit returns the committed sections whose lock was
// released before the commit, in the order of secs.
func ReleasedBeforeCommit(secs []Section) []EarlyRelease {
	var out []EarlyRelease
	for _, s := range secs {
		if s.ReleasedNS > 0 && s.Committed && s.ReleasedNS < s.EndNS {
			out = append(out, EarlyRelease{Section: s, ByNS: s.EndNS - s.ReleasedNS})
		}
	}
	return out
}

// Hold is one lock hold on a key: one section, or the sections of one
// batch (one acquire for them all). ReadNS is its first stock read and
// EndNS its last commit or rollback (0 when not seen).
type Hold struct {
	Key                    string
	AcquiredNS, ReleasedNS int64
	ReadNS, EndNS          int64
}

// Holds returns the lock holds of secs that were both acquired and
// released, by key and in the order they were acquired. A batch's
// sections are one hold: from the first acquire seen to the last release.
func Holds(secs []Section) map[string][]Hold {
	// A section outside a batch is a hold of its own (sections are one per
	// instance, purchase and key): only a batch's need the map.
	type hid struct{ key, instance, batch string }
	at := map[hid]int{}
	var all []Hold
	for _, s := range secs {
		if s.AcquiredNS == 0 || s.ReleasedNS == 0 {
			continue
		}
		if s.Batch != "" {
			id := hid{s.Key, s.Instance, s.Batch}
			if i, ok := at[id]; ok {
				h := &all[i]
				h.AcquiredNS = min(h.AcquiredNS, s.AcquiredNS)
				h.ReleasedNS = max(h.ReleasedNS, s.ReleasedNS)
				if s.ReadNS != 0 && (h.ReadNS == 0 || s.ReadNS < h.ReadNS) {
					h.ReadNS = s.ReadNS
				}
				h.EndNS = max(h.EndNS, s.EndNS)
				continue
			}
			at[id] = len(all)
		}
		all = append(all, Hold{Key: s.Key, AcquiredNS: s.AcquiredNS, ReleasedNS: s.ReleasedNS, ReadNS: s.ReadNS, EndNS: s.EndNS})
	}
	out := map[string][]Hold{}
	for _, h := range all {
		out[h.Key] = append(out[h.Key], h)
	}
	for _, hs := range out {
		slices.SortFunc(hs, func(a, b Hold) int { return cmp.Compare(a.AcquiredNS, b.AcquiredNS) })
	}
	return out
}

// Cycle is where a lock's time went, over the holds of each key taken one
// after the other: Held is a hold seen by its holder, from the acquire
// returning to the release returning (its release round trip included);
// Handoff is from one hold's release returning to the next hold's acquire
// returning (the release reaches the server and the next holder sooner,
// so a handoff can be negative); Cycle is from one acquire to the next.
// Held is split in three for the holds whose read and end were seen, in
// the order the holder meets them: Read from the acquire returning to the
// stock read's answer, Write from the read to the commit (or rollback)
// returning, Release from there to the release returning. Each is in ns,
// in hold order.
type Cycle struct {
	Held, Handoff, Cycle []int64
	Read, Write, Release []int64
}

// Cycles measures the cycle of the holds of every key (Holds).
func Cycles(holds map[string][]Hold) Cycle {
	var c Cycle
	for _, k := range slices.Sorted(maps.Keys(holds)) {
		hs := holds[k]
		for i, h := range hs {
			c.Held = append(c.Held, h.ReleasedNS-h.AcquiredNS)
			if h.ReadNS != 0 && h.EndNS != 0 {
				c.Read = append(c.Read, h.ReadNS-h.AcquiredNS)
				c.Write = append(c.Write, h.EndNS-h.ReadNS)
				c.Release = append(c.Release, h.ReleasedNS-h.EndNS)
			}
			if i+1 < len(hs) {
				c.Handoff = append(c.Handoff, hs[i+1].AcquiredNS-h.ReleasedNS)
				c.Cycle = append(c.Cycle, hs[i+1].AcquiredNS-h.AcquiredNS)
			}
		}
	}
	return c
}

// Colours of the timeline.
const (
	colourRed  = "#d62728"
	colourBlue = "#1f77b4"
)

// Layout of the timeline, in viewBox units.
const (
	svgWidth    = 1200.0
	marginLeft  = 160.0
	marginRight = 30.0
	marginTop   = 50.0
	axisHeight  = 50.0
	rowHeight   = 14.0
	rowGap      = 3.0
	laneGap     = 12.0
	maxRows     = 12 // sub-rows per lane; more concurrent sections share rows
	fontSize    = 14
)

// barSpan is where a section's bar starts and ends: from the lock taken (or
// the read, with no lock) to the release (or the end). A section with
// neither start has no bar; one with neither end runs to toNS.
func barSpan(s Section, toNS int64) (from, to int64, ok bool) {
	from = s.AcquiredNS
	if from == 0 {
		from = s.ReadNS
	}
	if from == 0 {
		return 0, 0, false
	}
	to = s.ReleasedNS
	if to == 0 {
		to = s.EndNS
	}
	if to == 0 {
		to = max(toNS, from)
	}
	return from, max(to, from), true
}

// TimelineSVG draws the sections in [fromNS, toNS] (those whose bar meets
// the interval) as an SVG: one horizontal lane per instance (sorted names,
// labelled at the left; concurrent sections of one instance on sub-rows),
// each section a bar (<rect class="bar">) from AcquiredNS (or ReadNS when
// no lock) to ReleasedNS (or EndNS), a small vertical tick at EndNS when
// Committed (and a dashed line from the bar to it when the lock was
// released before the end), bars that take part in any of overlaps filled red and others
// blue, the overlapping intervals shaded red behind the lanes
// (<rect class="overlap">), an x axis in milliseconds from fromNS with 5-8
// ticks, and a title line. The SVG scales with the window (viewBox,
// width="100%"). Each bar has a <title> tooltip: instance, purchase, key,
// token, and its times in ms from fromNS.
func TimelineSVG(title string, secs []Section, overlaps []Overlap, fromNS, toNS int64) []byte {
	if toNS <= fromNS {
		toNS = fromNS + int64(time.Millisecond)
	}
	t := &timeline{fromNS: fromNS, toNS: toNS, span: float64(toNS - fromNS), plotW: svgWidth - marginLeft - marginRight}
	lanes, plotBottom := timelineLanes(secs, fromNS, toNS)
	height := plotBottom + axisHeight

	fmt.Fprintf(&t.b, `<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 %g %g" width="100%%" preserveAspectRatio="xMinYMin meet" font-family="sans-serif" font-size="%d">`+"\n",
		svgWidth, height, fontSize)
	fmt.Fprintf(&t.b, `<text x="%g" y="%g" font-size="%d" font-weight="bold">%s</text>`+"\n", marginLeft, 24.0, fontSize+2, esc(title))
	t.overlaps(overlaps, plotBottom) // behind the lanes
	red := map[sectionID]bool{}
	for _, o := range overlaps {
		red[o.A.id()], red[o.B.id()] = true, true
	}
	for _, l := range lanes {
		t.lane(l, red)
	}
	t.axis(plotBottom)
	t.b.WriteString("</svg>\n")
	return t.b.Bytes()
}

// timeline is a timeline SVG under construction over [fromNS, toNS].
type timeline struct {
	b            bytes.Buffer
	fromNS, toNS int64
	span, plotW  float64
}

// x is the x of ns, clamped to the window.
func (t *timeline) x(ns int64) float64 {
	ns = min(max(ns, t.fromNS), t.toNS)
	return marginLeft + float64(ns-t.fromNS)/t.span*t.plotW
}

// ms is ns in milliseconds from the window's start.
func (t *timeline) ms(ns int64) string {
	return strconv.FormatFloat(float64(ns-t.fromNS)/1e6, 'f', 3, 64)
}

// laneBar is one section's bar on its lane's sub-row.
type laneBar struct {
	s        Section
	from, to int64
	row      int
}

// lane is one instance's lane: its bars, sub-rows and top.
type lane struct {
	name string
	bars []laneBar
	rows int
	top  float64
}

// timelineLanes lays out one lane per instance of secs (so lanes stay put
// between windows), sorted by name, with the bars that meet [fromNS, toNS]
// on sub-rows; plotBottom is where the last lane ends.
func timelineLanes(secs []Section, fromNS, toNS int64) (lanes []lane, plotBottom float64) {
	index := map[string]int{}
	for _, s := range secs {
		i, ok := index[s.Instance]
		if !ok {
			i = len(lanes)
			index[s.Instance] = i
			lanes = append(lanes, lane{name: s.Instance})
		}
		from, to, ok := barSpan(s, toNS)
		if !ok || to < fromNS || from > toNS {
			continue
		}
		lanes[i].bars = append(lanes[i].bars, laneBar{s: s, from: from, to: to})
	}
	slices.SortFunc(lanes, func(a, b lane) int { return strings.Compare(a.name, b.name) })
	y := marginTop
	for i := range lanes {
		lanes[i].rows = assignRows(lanes[i].bars)
		lanes[i].top = y
		y += float64(lanes[i].rows)*(rowHeight+rowGap) + laneGap
	}
	return lanes, y
}

// assignRows puts each bar on the first sub-row free at its start (greedy
// interval colouring), wrapping at maxRows, and returns the rows used (at
// least 1). bars end sorted by start.
func assignRows(bars []laneBar) int {
	slices.SortStableFunc(bars, func(a, b laneBar) int { return cmp.Compare(a.from, b.from) })
	var rowEnd []int64
	for i := range bars {
		r := slices.IndexFunc(rowEnd, func(end int64) bool { return end <= bars[i].from })
		switch {
		case r >= 0:
		case len(rowEnd) < maxRows:
			r = len(rowEnd)
			rowEnd = append(rowEnd, 0)
		default:
			r = i % maxRows
		}
		rowEnd[r] = max(rowEnd[r], bars[i].to)
		bars[i].row = r
	}
	return max(len(rowEnd), 1)
}

// overlaps shades the overlapping intervals that meet the window, from
// above the first lane to plotBottom.
func (t *timeline) overlaps(overlaps []Overlap, plotBottom float64) {
	for _, o := range overlaps {
		if o.ToNS < t.fromNS || o.FromNS > t.toNS {
			continue
		}
		x0, x1 := t.x(o.FromNS), t.x(o.ToNS)
		fmt.Fprintf(&t.b, `<rect class="overlap" x="%.2f" y="%.2f" width="%.2f" height="%.2f" fill="%s" fill-opacity="0.18"><title>%s</title></rect>`+"\n",
			x0, marginTop-6, max(x1-x0, 1), plotBottom-marginTop+6, colourRed,
			esc(fmt.Sprintf("overlap on %s: %s/%s and %s/%s, %s-%s ms (%s)",
				o.Key, o.A.Instance, o.A.Purchase, o.B.Instance, o.B.Purchase, t.ms(o.FromNS), t.ms(o.ToNS), o.Duration())))
	}
}

// lane writes l's separator, its name and its bars (red when in red),
// each with the line on to its end when the lock was released before it
// and a tick at a commit.
func (t *timeline) lane(l lane, red map[sectionID]bool) {
	h := float64(l.rows)*(rowHeight+rowGap) - rowGap
	fmt.Fprintf(&t.b, `<line x1="%g" y1="%.2f" x2="%g" y2="%.2f" stroke="#ccc"/>`+"\n", marginLeft, l.top+h+laneGap/2, svgWidth-marginRight, l.top+h+laneGap/2)
	fmt.Fprintf(&t.b, `<text x="%g" y="%.2f" text-anchor="end" dominant-baseline="middle">%s</text>`+"\n", marginLeft-8, l.top+h/2, esc(l.name))
	for _, br := range l.bars {
		s := br.s
		fill := colourBlue
		if red[s.id()] {
			fill = colourRed
		}
		by := l.top + float64(br.row)*(rowHeight+rowGap)
		x0, x1 := t.x(br.from), t.x(br.to)
		fmt.Fprintf(&t.b, `<rect class="bar" x="%.2f" y="%.2f" width="%.2f" height="%g" fill="%s" fill-opacity="0.85"><title>%s</title></rect>`+"\n",
			x0, by, max(x1-x0, 1), rowHeight, fill, esc(tooltip(s, t.ms)))
		if s.EndNS > br.to && br.to < t.toNS {
			// Released before the end (mutex-tx): a thin line on to it.
			fmt.Fprintf(&t.b, `<line class="after-release" x1="%.2f" y1="%.2f" x2="%.2f" y2="%.2f" stroke="%s" stroke-dasharray="4 3"/>`+"\n",
				x1, by+rowHeight/2, t.x(s.EndNS), by+rowHeight/2, fill)
		}
		if s.Committed && s.EndNS >= t.fromNS && s.EndNS <= t.toNS {
			ex := t.x(s.EndNS)
			fmt.Fprintf(&t.b, `<line class="commit" x1="%.2f" y1="%.2f" x2="%.2f" y2="%.2f" stroke="#000" stroke-width="1.5"/>`+"\n", ex, by-2, ex, by+rowHeight+2)
		}
	}
}

// axis writes the x axis at plotBottom in ms from the window's start.
func (t *timeline) axis(plotBottom float64) {
	fmt.Fprintf(&t.b, `<line x1="%g" y1="%.2f" x2="%g" y2="%.2f" stroke="#000"/>`+"\n", marginLeft, plotBottom, svgWidth-marginRight, plotBottom)
	stepNS := tickStep(t.span)
	for i := 0; ; i++ {
		tick := float64(i) * stepNS
		if tick > t.span*(1+1e-9) {
			break
		}
		tx := marginLeft + tick/t.span*t.plotW
		label := strconv.FormatFloat(math.Round(tick)/1e6, 'f', -1, 64)
		fmt.Fprintf(&t.b, `<line x1="%.2f" y1="%.2f" x2="%.2f" y2="%.2f" stroke="#000"/>`+"\n", tx, plotBottom, tx, plotBottom+6)
		fmt.Fprintf(&t.b, `<text x="%.2f" y="%.2f" text-anchor="middle">%s</text>`+"\n", tx, plotBottom+22, label)
	}
	fmt.Fprintf(&t.b, `<text x="%.2f" y="%.2f" text-anchor="middle">ms</text>`+"\n", marginLeft+t.plotW/2, plotBottom+42)
}

// tickStep picks the axis step (in ns) for a span of ns: 1, 2, 2.5 or 5
// times a power of ten ms, the finest that gives at most 8 ticks. Each
// candidate at most doubles the previous one, so the chosen step gives at
// least 5 ticks.
func tickStep(span float64) float64 {
	spanMS := span / 1e6
	p := math.Pow(10, math.Floor(math.Log10(spanMS/8)))
	for {
		for _, m := range []float64{1, 2, 2.5, 5} {
			step := m * p
			if math.Floor(spanMS/step*(1+1e-9))+1 <= 8 {
				return step * 1e6
			}
		}
		p *= 10
	}
}

func tooltip(s Section, ms func(int64) string) string {
	var t strings.Builder
	fmt.Fprintf(&t, "%s %s %s", s.Instance, s.Purchase, s.Key)
	if s.Token != 0 {
		fmt.Fprintf(&t, " token %d", s.Token)
	}
	if s.AcquiredNS != 0 {
		fmt.Fprintf(&t, "\nacquired %s ms", ms(s.AcquiredNS))
	}
	if s.ReadNS != 0 {
		fmt.Fprintf(&t, "\nread %s ms", ms(s.ReadNS))
	}
	if s.EndNS != 0 {
		what := "rolled back"
		if s.Committed {
			what = "committed"
		}
		fmt.Fprintf(&t, "\n%s %s ms", what, ms(s.EndNS))
	}
	if s.ReleasedNS != 0 {
		fmt.Fprintf(&t, "\nreleased %s ms", ms(s.ReleasedNS))
	}
	return t.String()
}

func esc(s string) string {
	var b strings.Builder
	for _, r := range s {
		switch r {
		case '&':
			b.WriteString("&amp;")
		case '<':
			b.WriteString("&lt;")
		case '>':
			b.WriteString("&gt;")
		case '"':
			b.WriteString("&quot;")
		case '\'':
			b.WriteString("&apos;")
		case '\n':
			b.WriteString("&#10;")
		default:
			if r < 0x20 && r != '\t' {
				continue // not allowed in XML
			}
			b.WriteRune(r)
		}
	}
	return b.String()
}
