package history

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"sort"
	"strings"
	"testing"
	"time"
)

var t0 = time.Unix(1_700_000_000, 0)

// at is a time n milliseconds after t0.
func at(n int) time.Time { return t0.Add(time.Duration(n) * time.Millisecond) }

func sold(id string, call, ret int, qty, remaining int64) Op {
	return Op{ID: id, Qty: qty, Call: at(call), Return: at(ret), Result: Sold, Remaining: remaining}
}

func soldOut(id string, call, ret int, qty int64) Op {
	return Op{ID: id, Qty: qty, Call: at(call), Return: at(ret), Result: SoldOut}
}

func unknown(id string, call int, qty int64) Op {
	return Op{ID: id, Qty: qty, Call: at(call), Result: Unknown}
}

func refused(id string, call, ret int, qty int64) Op {
	return Op{ID: id, Qty: qty, Call: at(call), Return: at(ret), Result: Refused, Remaining: 12345}
}

func TestCheckCrafted(t *testing.T) {
	tests := []struct {
		name    string
		initial int64
		ops     []Op
		want    Verdict
		wantOps int
	}{
		{
			name:    "empty",
			initial: 3,
			want:    Linearizable,
		},
		{
			name:    "sequential",
			initial: 3,
			ops: []Op{
				sold("a", 0, 1, 1, 2),
				sold("b", 2, 3, 2, 0),
				soldOut("c", 4, 5, 1),
			},
			want:    Linearizable,
			wantOps: 3,
		},
		{
			name:    "concurrent, remaining fixes the order",
			initial: 3,
			ops: []Op{
				sold("a", 0, 10, 1, 1),
				sold("b", 1, 5, 1, 2),
				sold("c", 2, 8, 1, 0),
				soldOut("d", 3, 12, 1),
			},
			want:    Linearizable,
			wantOps: 4,
		},
		{
			name:    "sold out for a larger qty than the stock",
			initial: 1,
			ops: []Op{
				soldOut("a", 0, 1, 2),
				sold("b", 2, 3, 1, 0),
			},
			want:    Linearizable,
			wantOps: 2,
		},
		{
			name:    "oversell: two sales report remaining 0 from stock 1",
			initial: 1,
			ops: []Op{
				sold("a", 0, 2, 1, 0),
				sold("b", 1, 3, 1, 0),
			},
			want:    NotLinearizable,
			wantOps: 2,
		},
		{
			name:    "duplicated remaining in sequential sales",
			initial: 5,
			ops: []Op{
				sold("a", 0, 1, 1, 4),
				sold("b", 2, 3, 1, 4),
			},
			want:    NotLinearizable,
			wantOps: 2,
		},
		{
			name:    "sold out while stock was available",
			initial: 5,
			ops: []Op{
				soldOut("a", 0, 1, 1),
				sold("b", 2, 3, 1, 4),
			},
			want:    NotLinearizable,
			wantOps: 2,
		},
		{
			name:    "sale reports a remaining that does not follow",
			initial: 5,
			ops: []Op{
				sold("a", 0, 1, 2, 4),
			},
			want:    NotLinearizable,
			wantOps: 1,
		},
		{
			name:    "unknown that must have sold",
			initial: 5,
			ops: []Op{
				unknown("u", 0, 1),
				sold("a", 2, 3, 1, 3),
				sold("b", 4, 5, 1, 2),
			},
			want:    Linearizable,
			wantOps: 3,
		},
		{
			name:    "same without the unknown is not linearizable",
			initial: 5,
			ops: []Op{
				sold("a", 2, 3, 1, 3),
				sold("b", 4, 5, 1, 2),
			},
			want:    NotLinearizable,
			wantOps: 2,
		},
		{
			name:    "unknown that sold between two sales",
			initial: 5,
			ops: []Op{
				sold("a", 0, 1, 1, 4),
				unknown("u", 0, 2),
				sold("b", 4, 5, 1, 1),
			},
			want:    Linearizable,
			wantOps: 3,
		},
		{
			name:    "unknown cannot take effect before its call",
			initial: 5,
			ops: []Op{
				sold("a", 0, 1, 1, 3),
				unknown("u", 2, 1),
			},
			want:    NotLinearizable,
			wantOps: 2,
		},
		{
			name:    "unknown that must not have sold",
			initial: 2,
			ops: []Op{
				unknown("u", 0, 1),
				sold("a", 1, 2, 1, 1),
				sold("b", 3, 4, 1, 0),
				soldOut("c", 5, 6, 1),
			},
			want:    Linearizable,
			wantOps: 4,
		},
		{
			name:    "unknown whose return time is before its call is fine",
			initial: 2,
			ops: []Op{
				{ID: "u", Qty: 1, Call: at(5), Return: at(1), Result: Unknown},
				sold("a", 6, 7, 1, 1),
			},
			want:    Linearizable,
			wantOps: 2,
		},
		{
			name:    "refused ops are ignored",
			initial: 2,
			ops: []Op{
				refused("r1", 0, 1, 1),
				sold("a", 1, 2, 1, 1),
				refused("r2", 2, 3, 5),
				{ID: "r3", Qty: -1, Call: at(9), Return: at(3), Result: Refused},
				sold("b", 3, 4, 1, 0),
				refused("r4", 5, 6, 1),
			},
			want:    Linearizable,
			wantOps: 2,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rep, err := Check(context.Background(), tt.ops, tt.initial, 5*time.Second)
			if err != nil {
				t.Fatalf("Check: %v", err)
			}
			if rep.Verdict != tt.want {
				t.Fatalf("verdict %q, want %q", rep.Verdict, tt.want)
			}
			if rep.Ops != tt.wantOps {
				t.Errorf("ops %d, want %d", rep.Ops, tt.wantOps)
			}
			if rep.Elapsed <= 0 {
				t.Errorf("elapsed %v", rep.Elapsed)
			}
			checkVisualization(t, rep)
		})
	}
}

func checkVisualization(t *testing.T, rep Report) {
	t.Helper()
	if rep.Verdict != NotLinearizable {
		if rep.Visualization != nil {
			t.Errorf("visualization set for verdict %q", rep.Verdict)
		}
		return
	}
	if len(rep.Visualization) == 0 {
		t.Fatal("no visualization for a non-linearizable history")
	}
	if !bytes.Contains(bytes.ToLower(rep.Visualization[:min(len(rep.Visualization), 512)]), []byte("<html")) {
		t.Errorf("visualization does not look like HTML: %.200q", rep.Visualization)
	}
}

func TestCheckBadInput(t *testing.T) {
	tests := []struct {
		name    string
		initial int64
		ops     []Op
		wantIn  string
	}{
		{"negative qty", 5, []Op{sold("a", 0, 1, -1, 6)}, "negative qty"},
		{"negative qty unknown", 5, []Op{unknown("u", 0, -2)}, "negative qty"},
		{"return before call", 5, []Op{sold("a", 0, 1, 1, 4), sold("b", 3, 2, 1, 3)}, "before call"},
		{"sold out return before call", 5, []Op{soldOut("a", 3, 2, 9)}, "before call"},
		{"invalid result", 5, []Op{{ID: "x", Qty: 1, Call: at(0), Return: at(1), Result: Result(42)}}, "invalid result"},
		{"negative initial", -1, nil, "negative"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Check(context.Background(), tt.ops, tt.initial, time.Second)
			if err == nil || !strings.Contains(err.Error(), tt.wantIn) {
				t.Fatalf("error %v, want one containing %q", err, tt.wantIn)
			}
		})
	}
}

func TestCheckCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	ops := synthetic(1, 5000, 3000, 50)
	rep, err := Check(ctx, ops, 3000, 10*time.Second)
	if err != nil {
		t.Fatalf("Check: %v", err)
	}
	if rep.Verdict != VerdictUnknown {
		t.Fatalf("verdict %q, want %q", rep.Verdict, VerdictUnknown)
	}
}

// synthetic simulates clients purchasing 1 unit each, in a loop (think, send,
// answer) on a shared fake clock, against a correct serial server: each
// purchase commits at a random instant inside [Call, Return], and the server
// applies commits in time order, answering sold (with the remaining stock)
// while there is stock and sold_out afterwards.
func synthetic(seed uint64, purchases int, stock int64, clients int) []Op {
	rng := rand.New(rand.NewPCG(seed, seed^0x5eed))
	ops := make([]Op, 0, purchases)
	commit := make([]time.Duration, 0, purchases)
	clocks := make([]time.Duration, clients) // per client: when it is free again
	for i := 0; i < purchases; i++ {
		c := i % clients
		call := clocks[c] + time.Duration(rng.IntN(2000))*time.Microsecond // think
		toServer := time.Duration(1+rng.IntN(5000)) * time.Microsecond
		back := time.Duration(1+rng.IntN(5000)) * time.Microsecond
		ret := call + toServer + back
		clocks[c] = ret
		ops = append(ops, Op{
			ID:     fmt.Sprintf("c%02d-%04d", c, i/clients),
			Qty:    1,
			Call:   t0.Add(call),
			Return: t0.Add(ret),
		})
		commit = append(commit, call+toServer)
	}
	order := make([]int, len(ops))
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(a, b int) bool { return commit[order[a]] < commit[order[b]] })
	left := stock
	for _, i := range order {
		if left >= ops[i].Qty {
			left -= ops[i].Qty
			ops[i].Result = Sold
			ops[i].Remaining = left
		} else {
			ops[i].Result = SoldOut
		}
	}
	return ops
}

func TestCheckSynthetic(t *testing.T) {
	ops := synthetic(42, 5000, 3000, 50)
	var nSold, nSoldOut int
	for _, op := range ops {
		switch op.Result {
		case Sold:
			nSold++
		case SoldOut:
			nSoldOut++
		}
	}
	if nSold != 3000 || nSoldOut != 2000 {
		t.Fatalf("synthetic history: %d sold, %d sold out; want 3000, 2000", nSold, nSoldOut)
	}

	// The same history with one Remaining duplicating another's.
	bad := append([]Op(nil), ops...)
	var first = -1
	for i := range bad {
		if bad[i].Result != Sold {
			continue
		}
		if first < 0 {
			first = i
			continue
		}
		bad[i].Remaining = bad[first].Remaining
		break
	}

	// The same history with some answers lost: every 97th purchase (sold or
	// sold out) timed out, and a few refusals.
	lost := append([]Op(nil), ops...)
	for i := range lost {
		switch {
		case i%97 == 0:
			lost[i].Result = Unknown
			lost[i].Return = time.Time{}
		case i%89 == 0 && lost[i].Result == SoldOut:
			lost[i].Result = Refused
		}
	}
	nRefused := 0
	for _, op := range lost {
		if op.Result == Refused {
			nRefused++
		}
	}

	tests := []struct {
		name    string
		ops     []Op
		want    Verdict
		wantOps int
	}{
		{"correct server", ops, Linearizable, 5000},
		{"correct server, lost answers", lost, Linearizable, 5000 - nRefused},
		{"duplicated remaining", bad, NotLinearizable, 5000},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rep, err := Check(context.Background(), tt.ops, 3000, 10*time.Second)
			if err != nil {
				t.Fatalf("Check: %v", err)
			}
			t.Logf("%d ops: %s in %v", rep.Ops, rep.Verdict, rep.Elapsed)
			if rep.Verdict != tt.want {
				t.Fatalf("verdict %q, want %q", rep.Verdict, tt.want)
			}
			if rep.Ops != tt.wantOps {
				t.Errorf("ops %d, want %d", rep.Ops, tt.wantOps)
			}
			checkVisualization(t, rep)
		})
	}
}

func BenchmarkCheck5000(b *testing.B) {
	ops := synthetic(42, 5000, 3000, 50)
	for b.Loop() {
		rep, err := Check(context.Background(), ops, 3000, 10*time.Second)
		if err != nil {
			b.Fatal(err)
		}
		if rep.Verdict != Linearizable {
			b.Fatalf("verdict %q", rep.Verdict)
		}
	}
}

// TestRefuteLostUpdates: a lock that loses updates (mutex-tx) gives many
// sales reporting the same remaining stock; porcupine alone ran past 10 s
// on such a run of 300 purchases (verdict unknown). The one-pass
// refutation proves it at once.
func TestRefuteLostUpdates(t *testing.T) {
	t0 := time.Unix(0, 0)
	var ops []Op
	for i := range 3000 {
		at := t0.Add(time.Duration(i/3) * time.Millisecond) // three at a time, all overlapping
		ops = append(ops, Op{ID: fmt.Sprintf("p%d", i), Qty: 1, Call: at, Return: at.Add(5 * time.Millisecond),
			Result: Sold, Remaining: int64(5000 - 1 - i/3)}) // each trio reports one remaining: lost updates
	}
	rep, err := Check(context.Background(), ops, 5000, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Verdict != NotLinearizable || !strings.Contains(rep.Reason, "both reported") {
		t.Fatalf("verdict %s, reason %q; want not linearizable by a duplicated remaining", rep.Verdict, rep.Reason)
	}
	if rep.Elapsed > 5*time.Second {
		t.Logf("slow: %s", rep.Elapsed) // a figure, not an assertion
	}
}
