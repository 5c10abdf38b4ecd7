package lockcheck

import (
	"bytes"
	"encoding/xml"
	"fmt"
	"io"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/seckill-lab/seckill/stock"
)

const us = int64(time.Microsecond)

// stream builds the events of purchases; each instance numbers its own Seq.
type stream struct {
	events []stock.Event
	seq    map[string]uint64
}

// ev records one event at t microseconds (from an arbitrary origin).
func (s *stream) ev(inst, strategy, purchase, key string, kind stock.EventKind, t int64, token uint64) *stream {
	if s.seq == nil {
		s.seq = map[string]uint64{}
	}
	s.seq[inst]++
	e := stock.Event{Seq: s.seq[inst], MonoNS: 1_000_000_000 + t*us, Instance: inst, Strategy: strategy,
		Purchase: purchase, Key: key, Kind: kind, Token: token}
	if kind == stock.EventRead || kind == stock.EventWritten {
		v := int64(10)
		e.Value = &v
	}
	if kind == stock.EventRolledBack {
		e.Detail = "fencing token refused"
	}
	s.events = append(s.events, e)
	return s
}

// ns is the MonoNS of t microseconds.
func ns(t int64) int64 { return 1_000_000_000 + t*us }

// locked records a purchase under a correct lock: requested, acquired,
// read, written, committed, released.
func (s *stream) locked(inst, purchase, key string, token uint64, req, acq, read, commit, rel int64) *stream {
	const st = "redis-lock"
	return s.ev(inst, st, purchase, key, stock.EventRequested, req, 0).
		ev(inst, st, purchase, key, stock.EventAcquired, acq, token).
		ev(inst, st, purchase, key, stock.EventRead, read, 0).
		ev(inst, st, purchase, key, stock.EventWritten, read+1, 0).
		ev(inst, st, purchase, key, stock.EventCommitted, commit, 0).
		ev(inst, st, purchase, key, stock.EventReleased, rel, token)
}

// unprotected records a purchase of strategy none: read, written, committed.
func (s *stream) unprotected(inst, purchase, key string, read, commit int64) *stream {
	return s.ev(inst, "none", purchase, key, stock.EventRead, read, 0).
		ev(inst, "none", purchase, key, stock.EventWritten, commit-1, 0).
		ev(inst, "none", purchase, key, stock.EventCommitted, commit, 0)
}

// mutexTx records a mutex-tx purchase: the lock is released before the commit.
func (s *stream) mutexTx(inst, purchase, key string, token uint64, acq, read, rel, commit int64) *stream {
	const st = "mutex-tx"
	return s.ev(inst, st, purchase, key, stock.EventRequested, acq-1, 0).
		ev(inst, st, purchase, key, stock.EventAcquired, acq, token).
		ev(inst, st, purchase, key, stock.EventRead, read, 0).
		ev(inst, st, purchase, key, stock.EventWritten, read+1, 0).
		ev(inst, st, purchase, key, stock.EventReleased, rel, token).
		ev(inst, st, purchase, key, stock.EventCommitted, commit, 0)
}

// batch records the purchases of one batch on inst: one lock hold from acq
// to rel, every purchase's events stamped with the leader's id (the first
// purchase), each read at read+i, and one commit for all of them.
func (s *stream) batch(inst, key string, token uint64, acq, read, commit, rel int64, purchases ...string) *stream {
	const st = "redis-lock"
	n := len(s.events)
	for i, p := range purchases {
		s.ev(inst, st, p, key, stock.EventRequested, acq-1, 0).
			ev(inst, st, p, key, stock.EventAcquired, acq, token).
			ev(inst, st, p, key, stock.EventRead, read+int64(i), 0).
			ev(inst, st, p, key, stock.EventWritten, commit-1, 0).
			ev(inst, st, p, key, stock.EventCommitted, commit, 0).
			ev(inst, st, p, key, stock.EventReleased, rel, token)
	}
	for i := n; i < len(s.events); i++ {
		s.events[i].Batch = purchases[0]
	}
	return s
}

type wantOverlap struct {
	a, b     string // purchases, a read first
	from, to int64  // µs
}

func TestChecks(t *testing.T) {
	tests := []struct {
		name     string
		events   []stock.Event
		overlaps []wantOverlap
		early    map[string]int64 // purchase -> ByNS in µs
	}{
		{
			name: "correct lock on 2 instances",
			// B acquires (14) before A's release is recorded (15): the
			// release lag; the [read, end] windows still do not meet.
			events: new(stream).
				locked("i1", "p1", "goods:1", 1, 0, 10, 11, 13, 15).
				locked("i2", "p2", "goods:1", 2, 5, 14, 16, 19, 21).
				locked("i1", "p3", "goods:1", 3, 6, 22, 23, 25, 26).
				events,
		},
		{
			name: "none on 2 instances, interleaved",
			events: new(stream).
				unprotected("i1", "p1", "goods:1", 10, 40).
				unprotected("i2", "p2", "goods:1", 25, 50).
				unprotected("i1", "p3", "goods:1", 60, 70).
				events,
			overlaps: []wantOverlap{{"p1", "p2", 25, 40}},
		},
		{
			name: "mutex-tx released before committed, no overlap",
			events: new(stream).
				mutexTx("i1", "p1", "goods:1", 1, 10, 11, 13, 20).
				mutexTx("i2", "p2", "goods:1", 2, 22, 23, 24, 30).
				events,
			early: map[string]int64{"p1": 7, "p2": 6},
		},
		{
			name: "mutex-tx released before committed, next holder reads in between",
			events: new(stream).
				mutexTx("i1", "p1", "goods:1", 1, 10, 11, 13, 20).
				mutexTx("i2", "p2", "goods:1", 2, 14, 15, 16, 30).
				events,
			overlaps: []wantOverlap{{"p1", "p2", 15, 20}},
			early:    map[string]int64{"p1": 7, "p2": 14},
		},
		{
			name: "stale holder refused by fencing overlaps the new holder",
			events: new(stream).
				ev("i1", "redis-fenced", "p1", "goods:1", stock.EventRequested, 0, 0).
				ev("i1", "redis-fenced", "p1", "goods:1", stock.EventAcquired, 10, 1).
				ev("i1", "redis-fenced", "p1", "goods:1", stock.EventRead, 11, 0).
				ev("i1", "redis-fenced", "p1", "goods:1", stock.EventLeaseLost, 18, 1).
				ev("i2", "redis-fenced", "p2", "goods:1", stock.EventRequested, 5, 0).
				ev("i2", "redis-fenced", "p2", "goods:1", stock.EventAcquired, 20, 2).
				ev("i2", "redis-fenced", "p2", "goods:1", stock.EventRead, 21, 0).
				ev("i1", "redis-fenced", "p1", "goods:1", stock.EventWritten, 22, 0).
				ev("i1", "redis-fenced", "p1", "goods:1", stock.EventRolledBack, 23, 0).
				ev("i2", "redis-fenced", "p2", "goods:1", stock.EventWritten, 24, 0).
				ev("i2", "redis-fenced", "p2", "goods:1", stock.EventCommitted, 25, 0).
				ev("i2", "redis-fenced", "p2", "goods:1", stock.EventReleased, 26, 2).
				ev("i1", "redis-fenced", "p1", "goods:1", stock.EventReleased, 27, 1).
				events,
			overlaps: []wantOverlap{{"p1", "p2", 21, 23}},
		},
		{
			name: "different keys never overlap",
			events: new(stream).
				unprotected("i1", "p1", "goods:1", 10, 20).
				unprotected("i2", "p2", "goods:2", 12, 18).
				unprotected("i2", "p3", "goods:3", 11, 30).
				events,
		},
		{
			name: "different keys, only the same key's pair overlaps",
			events: new(stream).
				unprotected("i1", "p1", "goods:1", 10, 20).
				unprotected("i2", "p2", "goods:2", 12, 18).
				unprotected("i2", "p3", "goods:1", 15, 30).
				events,
			overlaps: []wantOverlap{{"p1", "p3", 15, 20}},
		},
		{
			name: "windows that only touch do not overlap",
			events: new(stream).
				unprotected("i1", "p1", "goods:1", 10, 20).
				unprotected("i2", "p2", "goods:1", 20, 30).
				events,
		},
		{
			name: "three at once: every pair",
			events: new(stream).
				unprotected("i1", "p1", "goods:1", 10, 40).
				unprotected("i2", "p2", "goods:1", 20, 50).
				unprotected("i3", "p3", "goods:1", 30, 35).
				events,
			overlaps: []wantOverlap{{"p1", "p2", 20, 40}, {"p1", "p3", 30, 35}, {"p2", "p3", 30, 35}},
		},
		{
			name: "batches: the purchases of one batch are one critical section",
			events: new(stream).
				batch("i1", "goods:1", 1, 10, 11, 20, 21, "p1", "p2", "p3").
				batch("i2", "goods:1", 2, 22, 23, 30, 31, "p4", "p5").
				events,
		},
		{
			name: "batches of one instance that overlap each other are reported",
			events: new(stream).
				batch("i1", "goods:1", 1, 10, 11, 20, 21, "p1", "p2").
				batch("i1", "goods:1", 2, 14, 15, 30, 31, "p3").
				events,
			overlaps: []wantOverlap{{"p1", "p3", 15, 20}, {"p2", "p3", 15, 20}},
		},
		{
			name: "the same batch id on two instances is two critical sections",
			events: new(stream).
				batch("i1", "goods:1", 1, 10, 11, 20, 21, "p1").
				batch("i2", "goods:1", 2, 10, 12, 25, 26, "p1").
				events,
			overlaps: []wantOverlap{{"p1", "p1", 12, 20}},
		},
		{
			name: "a batch overlapping an unprotected purchase",
			events: new(stream).
				batch("i1", "goods:1", 1, 10, 11, 20, 21, "p1", "p2").
				unprotected("i2", "p3", "goods:1", 18, 25).
				events,
			overlaps: []wantOverlap{{"p1", "p3", 18, 20}, {"p2", "p3", 18, 20}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// Merge order must not matter: shuffle the streams together.
			events := slices.Clone(tt.events)
			rand.New(rand.NewPCG(1, 2)).Shuffle(len(events), func(i, j int) { events[i], events[j] = events[j], events[i] })
			secs := Sections(events)
			for i := 1; i < len(secs); i++ {
				if secs[i].ReadNS < secs[i-1].ReadNS {
					t.Fatalf("sections not ordered by ReadNS: %+v", secs)
				}
			}
			got := Overlaps(secs)
			if len(got) != len(tt.overlaps) {
				t.Fatalf("overlaps = %d, want %d: %+v", len(got), len(tt.overlaps), got)
			}
			for i, w := range tt.overlaps {
				o := got[i]
				if o.A.Purchase != w.a || o.B.Purchase != w.b || o.FromNS != ns(w.from) || o.ToNS != ns(w.to) {
					t.Errorf("overlap %d = %s/%s [%d, %d], want %s/%s [%d, %d]", i,
						o.A.Purchase, o.B.Purchase, o.FromNS, o.ToNS, w.a, w.b, ns(w.from), ns(w.to))
				}
				if o.Key != o.A.Key || o.Key != o.B.Key {
					t.Errorf("overlap %d: key %q, sections %q and %q", i, o.Key, o.A.Key, o.B.Key)
				}
				if d := time.Duration((w.to - w.from) * us); o.Duration() != d {
					t.Errorf("overlap %d: duration %s, want %s", i, o.Duration(), d)
				}
			}
			early := ReleasedBeforeCommit(secs)
			if len(early) != len(tt.early) {
				t.Fatalf("early releases = %d, want %d: %+v", len(early), len(tt.early), early)
			}
			for _, e := range early {
				by, ok := tt.early[e.Section.Purchase]
				if !ok || e.ByNS != by*us {
					t.Errorf("early release of %s by %d ns, want %d µs", e.Section.Purchase, e.ByNS, by)
				}
			}
		})
	}
}

func TestSections(t *testing.T) {
	events := new(stream).
		unprotected("i2", "n1", "goods:1", 50, 60).
		locked("i1", "p1", "goods:1", 7, 0, 10, 11, 13, 15).
		ev("i1", "redis-lock", "p2", "goods:1", stock.EventRequested, 12, 0). // never acquired
		events
	got := Sections(events)
	want := []Section{
		{Instance: "i1", Purchase: "p2", Key: "goods:1"},
		{Instance: "i1", Purchase: "p1", Key: "goods:1", Token: 7, AcquiredNS: ns(10), ReadNS: ns(11), EndNS: ns(13), Committed: true, ReleasedNS: ns(15)},
		{Instance: "i2", Purchase: "n1", Key: "goods:1", ReadNS: ns(50), EndNS: ns(60), Committed: true},
	}
	if !slices.Equal(got, want) {
		t.Fatalf("Sections =\n%+v\nwant\n%+v", got, want)
	}
	if o := Overlaps(got); len(o) != 0 {
		t.Errorf("a section without read or end takes part in overlaps: %+v", o)
	}
}

// synthetic is n sections of one key that follow each other (each read 10µs
// after the previous end), spread over 4 instances.
func synthetic(n int) []Section {
	secs := make([]Section, n)
	for i := range secs {
		base := int64(i) * 100 * us
		secs[i] = Section{
			Instance: fmt.Sprintf("i%d", i%4), Purchase: fmt.Sprintf("p%d", i), Key: "goods:1",
			Token: uint64(i + 1), AcquiredNS: base + 5*us, ReadNS: base + 10*us, EndNS: base + 90*us,
			Committed: true, ReleasedNS: base + 95*us,
		}
	}
	return secs
}

func TestOverlapsLarge(t *testing.T) {
	secs := synthetic(10000)
	if o := Overlaps(secs); len(o) != 0 {
		t.Fatalf("no injection: %d overlaps, first %+v", len(o), o[0])
	}
	// Reads 20µs before section 5000's end.
	bad := Section{Instance: "i9", Purchase: "stale", Key: "goods:1", ReadNS: 5000*100*us + 70*us, EndNS: 5000*100*us + 95*us}
	secs = append(secs, bad)
	rand.New(rand.NewPCG(3, 4)).Shuffle(len(secs), func(i, j int) { secs[i], secs[j] = secs[j], secs[i] })
	o := Overlaps(secs)
	if len(o) != 1 {
		t.Fatalf("%d overlaps, want 1: %+v", len(o), o)
	}
	if o[0].A.Purchase != "p5000" || o[0].B.Purchase != "stale" || o[0].Duration() != 20*time.Microsecond {
		t.Errorf("overlap = %s/%s %s, want p5000/stale 20µs", o[0].A.Purchase, o[0].B.Purchase, o[0].Duration())
	}
}

// TestOverlapsBruteForce compares the sweep with the O(n²) definition on
// random sections.
func TestOverlapsBruteForce(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	for round := range 200 {
		n := 1 + r.IntN(30)
		secs := make([]Section, n)
		for i := range secs {
			read := r.Int64N(100)
			secs[i] = Section{Instance: "i", Purchase: fmt.Sprint(i), Key: fmt.Sprintf("goods:%d", r.IntN(3)),
				ReadNS: read, EndNS: read + r.Int64N(20)}
			if r.IntN(10) == 0 {
				secs[i].EndNS = 0
			}
		}
		want := map[string]bool{}
		for i, a := range secs {
			for _, b := range secs[i+1:] {
				if a.Key == b.Key && a.ReadNS != 0 && b.ReadNS != 0 && a.EndNS != 0 && b.EndNS != 0 &&
					a.ReadNS < b.EndNS && b.ReadNS < a.EndNS {
					want[pair(a.Purchase, b.Purchase)] = true
				}
			}
		}
		got := Overlaps(secs)
		seen := map[string]bool{}
		for i, o := range got {
			p := pair(o.A.Purchase, o.B.Purchase)
			if !want[p] || seen[p] {
				t.Fatalf("round %d: unexpected or repeated overlap %s", round, p)
			}
			seen[p] = true
			if o.FromNS != max(o.A.ReadNS, o.B.ReadNS) || o.ToNS != min(o.A.EndNS, o.B.EndNS) || o.ToNS < o.FromNS {
				t.Fatalf("round %d: overlap %s interval [%d, %d]", round, p, o.FromNS, o.ToNS)
			}
			if i > 0 && got[i-1].FromNS > o.FromNS {
				t.Fatalf("round %d: overlaps not sorted by FromNS", round)
			}
		}
		if len(seen) != len(want) {
			t.Fatalf("round %d: %d overlaps, want %d", round, len(seen), len(want))
		}
	}
}

func pair(a, b string) string {
	if a > b {
		a, b = b, a
	}
	return a + "|" + b
}

func BenchmarkOverlaps(b *testing.B) {
	secs := synthetic(10000)
	secs = append(secs, Section{Instance: "i9", Purchase: "stale", Key: "goods:1", ReadNS: 5000*100*us + 70*us, EndNS: 5000*100*us + 95*us})
	b.ReportAllocs()
	for b.Loop() {
		if o := Overlaps(secs); len(o) != 1 {
			b.Fatalf("%d overlaps", len(o))
		}
	}
}

// svgInfo parses an SVG (failing on malformed XML) and counts its bars.
type svgInfo struct {
	root            xml.StartElement
	bars, red, blue int
	titledBars      int
	overlapShades   int
	texts           []string
}

func parseSVG(t *testing.T, data []byte) svgInfo {
	t.Helper()
	var info svgInfo
	dec := xml.NewDecoder(bytes.NewReader(data))
	var stack []xml.StartElement
	var inText bool
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("SVG is not well-formed: %v\n%s", err, data)
		}
		switch el := tok.(type) {
		case xml.StartElement:
			if len(stack) == 0 {
				info.root = el.Copy()
			}
			if el.Name.Local == "title" && len(stack) > 0 && stack[len(stack)-1].Name.Local == "rect" && attr(stack[len(stack)-1], "class") == "bar" {
				info.titledBars++
			}
			if el.Name.Local == "rect" {
				switch attr(el, "class") {
				case "bar":
					info.bars++
					switch attr(el, "fill") {
					case "#d62728":
						info.red++
					case "#1f77b4":
						info.blue++
					}
				case "overlap":
					info.overlapShades++
				}
			}
			inText = el.Name.Local == "text"
			stack = append(stack, el.Copy())
		case xml.EndElement:
			stack = stack[:len(stack)-1]
			inText = false
		case xml.CharData:
			if inText {
				info.texts = append(info.texts, string(el))
			}
		}
	}
	if len(stack) != 0 {
		t.Fatalf("unclosed elements in SVG")
	}
	return info
}

func attr(el xml.StartElement, name string) string {
	for _, a := range el.Attr {
		if a.Name.Local == name {
			return a.Value
		}
	}
	return ""
}

func TestTimelineSVG(t *testing.T) {
	events := new(stream).
		unprotected("i1", "p1", "goods:1", 10, 40).
		unprotected("i2", "p2", "goods:1", 25, 50).
		locked("i3", "p3", "goods:1", 1, 0, 60, 61, 70, 75).
		ev("i3", "redis-lock", "p<&\"4>", "goods:1", stock.EventAcquired, 80, 2). // still held, odd name
		ev("i3", "redis-lock", "p<&\"4>", "goods:1", stock.EventRead, 81, 0).
		locked("i2", "late", "goods:1", 3, 900, 1000, 1001, 1010, 1020). // out of range
		events
	secs := Sections(events)
	overlaps := Overlaps(secs)
	if len(overlaps) != 1 {
		t.Fatalf("overlaps = %+v", overlaps)
	}
	tests := []struct {
		name     string
		overlaps []Overlap
		from, to int64
		bars     int
	}{
		{"with overlaps", overlaps, ns(0), ns(100), 4},
		{"without overlaps", nil, ns(0), ns(100), 4},
		{"narrow window", overlaps, ns(30), ns(45), 2},
		{"wide window", overlaps, ns(0), ns(3000), 5},
		{"empty window", nil, ns(0), ns(0), 5}, // widened to 1ms, which reaches the late one's acquire
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			svg := TimelineSVG("run <1> & \"none\"", secs, tt.overlaps, tt.from, tt.to)
			info := parseSVG(t, svg)
			if info.root.Name.Local != "svg" {
				t.Fatalf("root element %q", info.root.Name.Local)
			}
			if !strings.HasPrefix(attr(info.root, "viewBox"), "0 0 ") || !bytes.Contains(svg, []byte("viewBox")) {
				t.Errorf("no viewBox: %q", attr(info.root, "viewBox"))
			}
			if attr(info.root, "width") != "100%" || attr(info.root, "font-family") != "sans-serif" {
				t.Errorf("root attrs: %+v", info.root.Attr)
			}
			if info.bars != tt.bars || info.titledBars != tt.bars {
				t.Errorf("bars = %d (titled %d), want %d", info.bars, info.titledBars, tt.bars)
			}
			if info.red+info.blue != info.bars {
				t.Errorf("%d red + %d blue bars of %d", info.red, info.blue, info.bars)
			}
			if (info.red > 0) != (len(tt.overlaps) > 0) {
				t.Errorf("red bars = %d with %d overlaps", info.red, len(tt.overlaps))
			}
			if len(tt.overlaps) > 0 && info.overlapShades == 0 {
				t.Errorf("no overlap shading")
			}
			joined := strings.Join(info.texts, "\n")
			for _, want := range []string{"run <1> & \"none\"", "i1", "i2", "i3", "ms"} {
				if !strings.Contains(joined, want) {
					t.Errorf("no text %q in %q", want, joined)
				}
			}
			// 5-8 axis ticks: the numeric labels.
			ticks := 0
			for _, s := range info.texts {
				if _, err := fmt.Sscanf(s, "%g", new(float64)); err == nil && !strings.HasPrefix(s, "i") {
					ticks++
				}
			}
			if ticks < 5 || ticks > 8 {
				t.Errorf("%d axis ticks, want 5-8: %q", ticks, info.texts)
			}
		})
	}
}

func TestTickStep(t *testing.T) {
	for _, spanNS := range []float64{1, 999, 1e3, 7e4, 1e6, 1.7e6, 3e6, 9.99e6, 1e7, 1.2345e8, 4e9, 6.1e10} {
		step := tickStep(spanNS)
		n := 0
		for i := 0; float64(i)*step <= spanNS*(1+1e-9); i++ {
			n++
		}
		if n < 5 || n > 8 {
			t.Errorf("span %g ns: step %g gives %d ticks", spanNS, step, n)
		}
	}
}

// TestCycles: the holds of each key in acquire order, a batch's sections
// one hold, the cycle split into held and handoff, and held into read,
// write and release.
func TestCycles(t *testing.T) {
	sec := func(inst, purchase, key, batch string, acq, rel int64) Section {
		acq, rel = acq+1000, rel+1000 // 0 is "none"
		return Section{Instance: inst, Purchase: purchase, Key: key, Batch: batch, AcquiredNS: acq * us, ReadNS: (acq + 1) * us, EndNS: (rel - 1) * us, Committed: true, ReleasedNS: rel * us}
	}
	// A batch's sections read and commit at their own times: the hold
	// runs from the first read to the last commit.
	batched := func(s Section, read, end int64) Section {
		s.ReadNS, s.EndNS = (read+1000)*us, (end+1000)*us
		return s
	}
	cases := []struct {
		name                  string
		secs                  []Section
		held, handoff, cycles []int64 // µs
		read, write, release  []int64 // µs
	}{
		{"two holds on two instances", []Section{sec("i2", "b", "k", "", 130, 200), sec("i1", "a", "k", "", 0, 100)},
			[]int64{100, 70}, []int64{30}, []int64{130}, []int64{1, 1}, []int64{98, 68}, []int64{1, 1}},
		{"the next holder in before the release's answer: a negative handoff", []Section{sec("i1", "a", "k", "", 0, 100), sec("i2", "b", "k", "", 90, 150)},
			[]int64{100, 60}, []int64{-10}, []int64{90}, []int64{1, 1}, []int64{98, 58}, []int64{1, 1}},
		{"a batch is one hold", []Section{
			batched(sec("i1", "a", "k", "a", 0, 100), 20, 60), batched(sec("i1", "b", "k", "a", 0, 100), 10, 70), batched(sec("i1", "c", "k", "a", 0, 100), 30, 80),
			sec("i2", "d", "k", "", 110, 150)},
			[]int64{100, 40}, []int64{10}, []int64{110}, []int64{10, 1}, []int64{70, 38}, []int64{20, 1}},
		{"keys apart; a section never acquired or never released is no hold; one whose read was not seen is not split", []Section{
			sec("i1", "a", "k1", "", 0, 100), sec("i1", "b", "k2", "", 10, 50), sec("i1", "c", "k1", "", 120, 200),
			{Instance: "i1", Purchase: "d", Key: "k1", ReadNS: 5 * us, EndNS: 6 * us}, {Instance: "i1", Purchase: "e", Key: "k1", AcquiredNS: 300 * us},
			{Instance: "i1", Purchase: "f", Key: "k1", AcquiredNS: 1300 * us, ReleasedNS: 1310 * us}},
			[]int64{100, 80, 10, 40}, []int64{20, 100}, []int64{120, 180}, []int64{1, 1, 1}, []int64{98, 78, 38}, []int64{1, 1, 1}},
		{"one hold: no cycle", []Section{sec("i1", "a", "k", "", 0, 100)}, []int64{100}, nil, nil, []int64{1}, []int64{98}, []int64{1}},
	}
	toUS := func(ns []int64) []int64 {
		var out []int64
		for _, v := range ns {
			out = append(out, v/us)
		}
		return out
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := Cycles(Holds(tc.secs))
			if !slices.Equal(toUS(c.Held), tc.held) || !slices.Equal(toUS(c.Handoff), tc.handoff) || !slices.Equal(toUS(c.Cycle), tc.cycles) {
				t.Errorf("held %v handoff %v cycle %v (µs), want %v %v %v", toUS(c.Held), toUS(c.Handoff), toUS(c.Cycle), tc.held, tc.handoff, tc.cycles)
			}
			if !slices.Equal(toUS(c.Read), tc.read) || !slices.Equal(toUS(c.Write), tc.write) || !slices.Equal(toUS(c.Release), tc.release) {
				t.Errorf("read %v write %v release %v (µs), want %v %v %v", toUS(c.Read), toUS(c.Write), toUS(c.Release), tc.read, tc.write, tc.release)
			}
		})
	}
}

// eventsOf is the lock events of n purchases of one key, as three
// instances' streams merged: each acquires, reads, writes, commits and
// releases, one after the other, and the streams come in instance order
// (not time order), as the bench collects them.
func eventsOf(n int) []stock.Event {
	insts := []string{"inst-1", "inst-2", "inst-3"}
	per := make([][]stock.Event, len(insts))
	kinds := []stock.EventKind{stock.EventAcquired, stock.EventRead, stock.EventWritten, stock.EventCommitted, stock.EventReleased}
	v := int64(1)
	for i := range n {
		k := i % len(insts)
		base := int64(i) * 100 * us
		for j, kind := range kinds {
			e := stock.Event{Seq: uint64(len(per[k]) + 1), MonoNS: base + int64(j+1)*15*us, Instance: insts[k], Strategy: "redis",
				Purchase: fmt.Sprintf("bench-7-1-%d", i), Key: "goods:1", Kind: kind, Token: uint64(i + 1)}
			if kind == stock.EventRead || kind == stock.EventWritten {
				e.Value = &v
			}
			per[k] = append(per[k], e)
		}
	}
	return slices.Concat(per...)
}

// BenchmarkChecks1M is the bench's lock checks over a million critical
// sections (five million events): sections, mutual exclusion,
// release-after-commit and the lock cycle.
//
//	go test -run '^$' -bench Checks1M -benchtime 3x ./bench/lockcheck
func BenchmarkChecks1M(b *testing.B) {
	events := eventsOf(1_000_000)
	b.ReportAllocs()
	for b.Loop() {
		secs := Sections(events)
		if len(secs) != 1_000_000 {
			b.Fatalf("%d sections", len(secs))
		}
		if o := Overlaps(secs); len(o) != 0 {
			b.Fatalf("%d overlaps", len(o))
		}
		if e := ReleasedBeforeCommit(secs); len(e) != 0 {
			b.Fatalf("%d early releases", len(e))
		}
		if c := Cycles(Holds(secs)); len(c.Held) != 1_000_000 {
			b.Fatalf("%d holds", len(c.Held))
		}
	}
}
