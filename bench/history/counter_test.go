package history

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
)

// porcupineVerdict is porcupine's verdict alone (no counter checker, no
// refutation) on ops.
func porcupineVerdict(t testing.TB, ops []Op, initial int64) Verdict {
	t.Helper()
	kept, base, err := effective(ops)
	if err != nil {
		t.Fatalf("effective: %v", err)
	}
	if len(kept) == 0 {
		return Linearizable
	}
	history, _ := operations(ops, kept, base)
	var cancelled atomic.Bool
	switch porcupine.CheckOperationsTimeout(counterModel(initial, &cancelled), history, 10*time.Second) {
	case porcupine.Ok:
		return Linearizable
	case porcupine.Illegal:
		return NotLinearizable
	}
	return VerdictUnknown
}

// counterVerdict is the counter checker's verdict on ops ("" when it
// leaves the history to porcupine).
func counterVerdict(t testing.TB, ops []Op, initial int64) counterResult {
	t.Helper()
	kept, base, err := effective(ops)
	if err != nil {
		t.Fatalf("effective: %v", err)
	}
	return checkCounter(ops, kept, base, initial)
}

// server simulates purchases against one stock counter, at integer
// milliseconds (so that calls and returns often coincide). Each purchase
// reads the stock at an instant of its window and writes stock-qty at a
// later one (sold, reporting what it wrote), or answers sold_out when the
// stock it read was short. atomic makes read and write one instant (a
// correct server); otherwise concurrent purchases lose updates, as the
// strategy none does.
type server struct {
	rng     *rand.Rand
	initial int64
	atomic  bool
	unknown float64 // share of answers lost (Unknown); half of them took effect
	refused float64 // share refused (no effect)
	late    bool    // a lost answer may take effect after its return
}

// qtys draws the quantities of n purchases: mostly all 1, some all q > 1,
// some mixed.
func qtys(rng *rand.Rand, n int) []int64 {
	q := make([]int64, n)
	mode := rng.IntN(10)
	for i := range q {
		switch {
		case mode < 6:
			q[i] = 1
		case mode < 8:
			q[i] = int64(2 + mode%2)
		default:
			q[i] = int64(1 + rng.IntN(3))
		}
	}
	return q
}

func (s server) run(q []int64, span, maxDur int) []Op {
	type ev struct {
		at    int
		op    int
		write bool
	}
	n := len(q)
	ops := make([]Op, n)
	evs := make([]ev, 0, 2*n)
	effect := make([]bool, n)
	for i := range ops {
		call := s.rng.IntN(span)
		ret := call + s.rng.IntN(maxDur+1)
		ops[i] = Op{ID: fmt.Sprintf("p%d", i), Qty: q[i], Call: at(call), Return: at(ret)}
		effect[i] = true
		u := s.rng.Float64()
		switch {
		case u < s.unknown:
			ops[i].Result = Unknown
			effect[i] = s.rng.IntN(2) == 0
			if s.late {
				ret += s.rng.IntN(maxDur + 1)
			}
		case u < s.unknown+s.refused:
			ops[i].Result = Refused
			effect[i] = false
		}
		r := call + s.rng.IntN(ret-call+1)
		w := r
		if !s.atomic {
			w = r + s.rng.IntN(ret-r+1)
		}
		evs = append(evs, ev{at: r, op: i}, ev{at: w, op: i, write: true})
	}
	slices.SortStableFunc(evs, func(a, b ev) int {
		if a.at != b.at {
			return a.at - b.at
		}
		if s.atomic && a.op != b.op { // one step each
			return a.op - b.op
		}
		if a.write != b.write { // at one instant: reads first (an op reads before it writes)
			if a.write {
				return 1
			}
			return -1
		}
		return 0
	})
	stock := s.initial
	read := make([]int64, n)
	for _, e := range evs {
		op := &ops[e.op]
		switch {
		case !e.write:
			read[e.op] = stock
		case !effect[e.op]:
		case read[e.op] >= op.Qty:
			stock = read[e.op] - op.Qty
			if op.Result == Sold {
				op.Remaining = stock
			}
		case op.Result == Sold:
			op.Result = SoldOut
		}
	}
	return ops
}

// flaw breaks a history the way a wrong server or a wrong record would:
// a remaining off by one, a sale turned sold_out or the reverse, a window
// moved.
func flaw(rng *rand.Rand, ops []Op) {
	i := rng.IntN(len(ops))
	op := &ops[i]
	switch rng.IntN(4) {
	case 0:
		if op.Result == Sold {
			op.Remaining += int64(1 - 2*rng.IntN(2))
		}
	case 1:
		switch op.Result {
		case Sold:
			op.Result = SoldOut
		case SoldOut:
			op.Result, op.Remaining = Sold, int64(rng.IntN(4))
		}
	case 2:
		d := time.Duration(rng.IntN(20)-10) * time.Millisecond
		op.Call, op.Return = op.Call.Add(d), op.Return.Add(d)
	case 3:
		if op.Result == Sold || op.Result == SoldOut {
			op.Result = Unknown
		}
	}
}

// generated draws one small history: a correct or a racy server, answers
// lost (some taking effect late) or refused, perhaps a flaw.
func generated(rng *rand.Rand) ([]Op, int64) {
	n := 1 + rng.IntN(11)
	initial := int64(rng.IntN(9))
	s := server{rng: rng, initial: initial, atomic: rng.IntN(2) > 0, late: rng.IntN(2) == 0}
	if rng.IntN(3) > 0 {
		s.unknown = 0.1 + 0.3*rng.Float64()
	}
	if rng.IntN(4) == 0 {
		s.refused = 0.1
	}
	ops := s.run(qtys(rng, n), 5+rng.IntN(25), rng.IntN(10))
	if rng.IntN(3) > 0 {
		flaw(rng, ops)
	}
	return ops, initial
}

// TestCounterAgreesWithPorcupine: on 12,000 generated histories (seeded),
// the counter checker and porcupine give the same verdict wherever the
// counter checker decides; it falls back on few.
func TestCounterAgreesWithPorcupine(t *testing.T) {
	const histories = 12000
	rng := rand.New(rand.NewPCG(7, 0xc0ffee))
	var agreed, notLin, fallback, withUnknown, withQty, witnessed int
	for h := range histories {
		ops, initial := generated(rng)
		want := porcupineVerdict(t, ops, initial)
		if want == VerdictUnknown {
			t.Fatalf("history %d: porcupine ran out of time on %d ops", h, len(ops))
		}
		if want == NotLinearizable {
			notLin++
		}
		if slices.ContainsFunc(ops, func(op Op) bool { return op.Result == Unknown }) {
			withUnknown++
		}
		if slices.ContainsFunc(ops, func(op Op) bool { return op.Qty > 1 }) {
			withQty++
		}
		got := counterVerdict(t, ops, initial)
		if got.undecided != "" {
			fallback++
			continue
		}
		if got.verdict != want {
			t.Fatalf("history %d (initial %d): counter checker %q (%s), porcupine %q\n%s", h, initial, got.verdict, got.reason, want, dump(ops))
		}
		if want == NotLinearizable {
			if got.reason == "" || len(got.witness) == 0 {
				t.Fatalf("history %d: not linearizable without a counter-example: %+v", h, got)
			}
			if alone := witnessAlone(ops, got.witness); alone != nil {
				witnessed++
				if v := porcupineVerdict(t, alone, initial); v != NotLinearizable {
					t.Fatalf("history %d: counter-example %q alone is %s for porcupine\n%s", h, got.reason, v, dump(alone))
				}
			}
		}
		agreed++
	}
	share := float64(notLin) / histories
	t.Logf("%d histories: %d agreed, %d left to porcupine; %.1f%% not linearizable (%d counter-examples illegal on their own); %d with unknown outcomes, %d with qty > 1",
		histories, agreed, fallback, 100*share, witnessed, withUnknown, withQty)
	if share < 0.30 {
		t.Errorf("%.1f%% of the histories not linearizable, want at least 30%%", 100*share)
	}
	if fallback > histories/20 {
		t.Errorf("%d of %d histories left to porcupine, want at most 5%%", fallback, histories)
	}
	if withUnknown < histories/3 || withQty < histories/5 {
		t.Errorf("%d histories with unknown outcomes, %d with qty > 1: the generator does not cover them", withUnknown, withQty)
	}
}

// witnessAlone is the counter-example's operations alone when none has an
// unknown outcome: such a counter-example is illegal on its own (a
// counter-example naming an unknown purchase counts the others too). nil
// otherwise.
func witnessAlone(ops []Op, witness []int) []Op {
	var alone []Op
	for _, i := range witness {
		if ops[i].Result == Unknown {
			return nil
		}
		alone = append(alone, ops[i])
	}
	return alone
}

func dump(ops []Op) string {
	var b strings.Builder
	for _, op := range ops {
		fmt.Fprintf(&b, "  %s qty %d call %d ret %d %s", op.ID, op.Qty, op.Call.Sub(t0).Milliseconds(), op.Return.Sub(t0).Milliseconds(), op.Result)
		if op.Result == Sold {
			fmt.Fprintf(&b, " remaining %d", op.Remaining)
		}
		b.WriteByte('\n')
	}
	return b.String()
}

func TestCounterCrafted(t *testing.T) {
	tests := []struct {
		name     string
		initial  int64
		ops      []Op
		want     Verdict
		checker  string
		inReason string   // "" when the verdict is linearizable
		witness  []string // ids of the counter-example
	}{
		{
			name:    "qty 2: sold_out of 2 once 1 is left",
			initial: 5,
			ops:     []Op{sold("a", 0, 1, 2, 3), sold("b", 2, 3, 2, 1), soldOut("c", 4, 5, 2)},
			want:    Linearizable, checker: CheckerCounter,
		},
		{
			name:    "qty 2: sold_out answered before the sales were called",
			initial: 5,
			ops:     []Op{soldOut("c", 0, 1, 2), sold("a", 2, 3, 2, 3), sold("b", 4, 5, 2, 1)},
			want:    NotLinearizable, checker: CheckerCounter,
			inReason: "c (called at +0.000 ms, answered at +1.000 ms) answered sold_out for 2 before b (called at +4.000 ms, answered at +5.000 ms) was called, which left 1 after buying 2: the stock was at least 2 until then",
			witness:  []string{"b", "c"},
		},
		{
			name:    "qty 3: a remaining that no sale of 3 leaves",
			initial: 7,
			ops:     []Op{sold("a", 0, 1, 3, 4), sold("b", 2, 3, 3, 0)},
			want:    NotLinearizable, checker: CheckerCounter,
			inReason: "1 units went to no purchase", witness: []string{"a", "b"},
		},
		{
			name:    "qty 2: an unknown purchase explains the drop",
			initial: 7,
			ops:     []Op{sold("a", 0, 1, 2, 5), unknown("u", 0, 2), sold("b", 2, 3, 2, 1)},
			want:    Linearizable, checker: CheckerCounter,
		},
		{
			name:    "sold_out after an unknown purchase took the last unit",
			initial: 2,
			ops:     []Op{sold("a", 0, 1, 1, 1), unknown("u", 0, 1), soldOut("s", 5, 6, 1)},
			want:    Linearizable, checker: CheckerCounter,
		},
		{
			name:    "sold_out while a unit was left and nothing else could take it",
			initial: 2,
			ops:     []Op{sold("a", 0, 1, 1, 1), soldOut("s", 5, 6, 1)},
			want:    NotLinearizable, checker: CheckerCounter,
			inReason: "yet the stock never fell below 1", witness: []string{"s"},
		},
		{
			name:    "sold_out answered before the unknown purchase it needs was called",
			initial: 1,
			ops:     []Op{soldOut("s", 0, 1, 1), unknown("u", 2, 1)},
			want:    NotLinearizable, checker: CheckerCounter,
			inReason: "1 purchases of unknown outcome must have taken effect, and at most 0 had been called", witness: []string{"u", "s"},
		},
		{
			name:    "a sale answered before the unknown purchase its remaining needs was called",
			initial: 3,
			ops:     []Op{sold("a", 0, 1, 1, 1), unknown("u", 2, 1)},
			want:    NotLinearizable, checker: CheckerCounter,
			inReason: "needs 1 purchases of unknown outcome", witness: []string{"u", "a"},
		},
		{
			name:    "sold_out of 3 once a sale of 1 left 2 (mixed quantities, no unknown)",
			initial: 4,
			ops:     []Op{sold("a", 0, 1, 2, 2), soldOut("s", 0, 1, 3), sold("b", 2, 3, 1, 1)},
			want:    Linearizable, checker: CheckerCounter,
		},
		{
			name:    "unknown purchases of different quantities: porcupine decides",
			initial: 6,
			ops:     []Op{unknown("u", 0, 1), unknown("v", 0, 2), sold("a", 2, 3, 1, 2)},
			want:    Linearizable, checker: CheckerPorcupine,
		},
		{
			name:    "a sale of 0 units: porcupine decides",
			initial: 2,
			ops:     []Op{sold("a", 0, 1, 0, 2), sold("b", 2, 3, 1, 1)},
			want:    Linearizable, checker: CheckerPorcupine,
		},
		{
			name:    "sold_out of 0 units",
			initial: 2,
			ops:     []Op{soldOut("s", 0, 1, 0)},
			want:    NotLinearizable, checker: CheckerCounter,
			inReason: "sold_out for 0 units", witness: []string{"s"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rep, err := Check(context.Background(), tt.ops, tt.initial, 5*time.Second)
			if err != nil {
				t.Fatalf("Check: %v", err)
			}
			if rep.Verdict != tt.want || rep.Checker != tt.checker {
				t.Fatalf("verdict %q by %q (%s), want %q by %q", rep.Verdict, rep.Checker, rep.Reason, tt.want, tt.checker)
			}
			if (rep.Checker == CheckerPorcupine) != (rep.Fallback != "") {
				t.Errorf("checker %q, fallback %q", rep.Checker, rep.Fallback)
			}
			if v := porcupineVerdict(t, tt.ops, tt.initial); v != tt.want {
				t.Errorf("porcupine says %q", v)
			}
			if !strings.Contains(rep.Reason, tt.inReason) {
				t.Errorf("reason %q, want it to contain %q", rep.Reason, tt.inReason)
			}
			var ids []string
			for _, op := range rep.Counterexample {
				ids = append(ids, op.ID)
			}
			if !slices.Equal(ids, tt.witness) {
				t.Errorf("counter-example %v, want %v", ids, tt.witness)
			}
			checkVisualization(t, rep)
		})
	}
}

// TestCounterRacyServer: histories of bench size (300 purchases of 1, a
// stock of 100, some answers lost) from a server that reads and writes the
// stock apart, as the strategy none does (no live stack: simulated), and
// from a correct one. The racy ones lose updates, which the counter checker
// proves with the two sales at once; the correct ones pass.
func TestCounterRacyServer(t *testing.T) {
	for seed := range uint64(20) {
		for _, atomic := range []bool{false, true} {
			rng := rand.New(rand.NewPCG(seed, 0xbad))
			s := server{rng: rng, initial: 100, atomic: atomic, unknown: 0.03, refused: 0.02, late: true}
			q := make([]int64, 300)
			for i := range q {
				q[i] = 1
			}
			ops := s.run(q, 3000, 40)
			want := Linearizable
			if !atomic {
				want = NotLinearizable
			}
			got := counterVerdict(t, ops, 100)
			if got.undecided != "" || got.verdict != want {
				t.Fatalf("seed %d, atomic %v: %q (%s%s), want %q", seed, atomic, got.verdict, got.reason, got.undecided, want)
			}
			if seed > 0 || atomic {
				continue
			}
			rep, err := Check(context.Background(), ops, 100, 10*time.Second)
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("racy server, %d ops: %s by %s in %v (%d bytes of view): %s", rep.Ops, rep.Verdict, rep.Checker, rep.Elapsed, len(rep.Visualization), rep.Reason)
			if rep.Verdict != NotLinearizable || rep.Checker != CheckerCounter || len(rep.Counterexample) != 2 {
				t.Fatalf("report %+v", rep)
			}
		}
	}
}

// TestCounterLarge: a history of 100,000 purchases (porcupine runs out of
// its 10 s at about 250,000) is decided by the counter checker.
// BenchmarkCounter1M times a million.
func TestCounterLarge(t *testing.T) {
	if testing.Short() {
		t.Skip("large history")
	}
	ops := synthetic(3, 100_000, 60_000, 100)
	for i := range ops {
		if i%97 == 0 {
			ops[i].Result, ops[i].Return = Unknown, time.Time{}
		}
	}
	rep, err := Check(context.Background(), ops, 60_000, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d ops: %s by %s in %v", rep.Ops, rep.Verdict, rep.Checker, rep.Elapsed)
	if rep.Verdict != Linearizable || rep.Checker != CheckerCounter {
		t.Fatalf("verdict %q by %q, want linearizable by the counter checker", rep.Verdict, rep.Checker)
	}
}

// BenchmarkCounter1M checks a linearizable history of a million purchases
// (700,000 sold, every 97th answer lost) with Check: the counter checker
// decides it.
func BenchmarkCounter1M(b *testing.B) {
	ops := synthetic(1, 1_000_000, 700_000, 200)
	for i := range ops {
		if i%97 == 0 {
			ops[i].Result, ops[i].Return = Unknown, time.Time{}
		}
	}
	b.ReportAllocs()
	for b.Loop() {
		rep, err := Check(context.Background(), ops, 700_000, 10*time.Second)
		if err != nil {
			b.Fatal(err)
		}
		if rep.Verdict != Linearizable || rep.Checker != CheckerCounter {
			b.Fatalf("verdict %q by %q", rep.Verdict, rep.Checker)
		}
	}
}
