package history

import (
	"cmp"
	"fmt"
	"slices"
	"time"
)

// The counter checker decides the history of one stock counter in
// O(n log n) without searching orderings.
//
// Every effective purchase lowers the stock, so the sales are totally
// ordered by the remaining stock they reported (descending is time order),
// and the drop between two consecutive sales, r_prev - qty - r, is what
// purchases of unknown outcome must have sold in between. A linearization
// is then a choice of points: each sale at a point of its [Call, Return],
// the points non-decreasing in the sales' order; each unknown purchase that
// sold at a point after its Call (it has no deadline: it may take effect
// any time after it was sent); each sold_out of q at a point of its window
// where the stock is below q (the stock only falls, so: after the purchase
// that brought it below q). Taking every point as early as it can be (the
// largest Call so far) and, where a drop needs unknown purchases, the ones
// called earliest (they have no deadline, so an earlier one is never worse:
// an exchange argument), gives points no later than any linearization's;
// a history is linearizable exactly when these points fit. Porcupine orders
// two operations only when one returned strictly before the other was
// called, hence the comparisons Return >= point.
//
// This is exact when every purchase of unknown outcome has one quantity u
// (the bench sends one qty per run): a drop of d then needs exactly d/u of
// them. Unknown purchases of different quantities make it a subset-sum (and
// a sale of 0 units observes the stock without lowering it); the counter
// checker then proves what it can without them (a remaining out of range,
// two sales leaving the same stock, a sale that returned before a sale that
// left more was called), passes a history that is linearizable with none
// of them taking effect, and leaves the others to porcupine.

// cop is an operation as the counter checker reads it: times in
// nanoseconds since the history's first call.
type cop struct {
	idx  int // index in the caller's ops
	call int64
	ret  int64
	qty  int64
	rem  int64
}

// counterResult is the counter checker's verdict; undecided says why it
// could not decide ("" when it did).
type counterResult struct {
	verdict   Verdict
	reason    string
	witness   []int // indexes in ops of the operations that prove it
	undecided string
}

// counterexample is a NotLinearizable result proved by the ops at idx.
func counterexample(reason string, idx ...int) counterResult {
	return counterResult{verdict: NotLinearizable, reason: reason, witness: idx}
}

// checkCounter decides ops[kept] (validated by effective, timed from
// base) against a counter starting at initial.
func checkCounter(ops []Op, kept []int, base time.Time, initial int64) counterResult {
	var nSales, nSoldOuts int
	for _, i := range kept {
		switch ops[i].Result {
		case Sold:
			nSales++
		case SoldOut:
			nSoldOuts++
		}
	}
	all := make([]cop, 0, len(kept)) // one array: sales, sold_outs, unknowns
	sales := all[0:0:nSales]
	soldOuts := all[nSales : nSales : nSales+nSoldOuts]
	unknowns := all[nSales+nSoldOuts : nSales+nSoldOuts]
	unknownQty := int64(-1) // -1: none yet; 0: more than one quantity
	zeroSale := -1
	for _, i := range kept {
		op := &ops[i]
		c := cop{idx: i, call: int64(op.Call.Sub(base)), ret: int64(op.Return.Sub(base)), qty: op.Qty, rem: op.Remaining}
		switch op.Result {
		case Sold:
			if op.Qty == 0 && zeroSale < 0 {
				zeroSale = i
			}
			sales = append(sales, c)
		case SoldOut:
			if op.Qty == 0 {
				return counterexample(fmt.Sprintf("%s answered sold_out for 0 units: the stock is never below 0", describe(ops, base, i)), i)
			}
			soldOuts = append(soldOuts, c)
		case Unknown:
			if op.Qty == 0 { // sells nothing whenever it takes effect
				continue
			}
			switch unknownQty {
			case -1:
				unknownQty = op.Qty
			case op.Qty:
			default:
				unknownQty = 0
			}
			unknowns = append(unknowns, c)
		}
	}

	// Proofs that hold whatever the unknown purchases did.
	if r := refuteSales(ops, base, sales, initial); r.verdict != "" {
		return r
	}
	if zeroSale >= 0 {
		return counterResult{undecided: fmt.Sprintf("%s sold 0 units: it observes the stock without lowering it", ops[zeroSale].ID)}
	}
	slices.SortFunc(soldOuts, func(a, b cop) int { return cmp.Compare(b.qty, a.qty) })
	if unknownQty == 0 {
		// Linearizable if it is with none of the unknown purchases taking
		// effect (all placed after everything else); undecided otherwise.
		s := sweep{ops: ops, base: base, soldOuts: soldOuts, stock: initial, src: -1}
		if r := s.run(sales); r.verdict != "" {
			return counterResult{undecided: "purchases of unknown outcome buy different quantities: which of them took effect is a subset-sum"}
		}
		return counterResult{verdict: Linearizable}
	}
	slices.SortFunc(unknowns, func(a, b cop) int { return cmp.Compare(a.call, b.call) })
	s := sweep{ops: ops, base: base, u: max(unknownQty, 0), unknowns: unknowns, soldOuts: soldOuts, stock: initial, src: -1}
	if r := s.run(sales); r.verdict != "" {
		return r
	}
	return counterResult{verdict: Linearizable}
}

// refuteSales sorts sales by remaining, descending, and proves the history
// not linearizable from the sales alone: a remaining out of [0, initial-qty],
// two sales leaving the same stock (a lost update), a sale that returned
// before a sale that left more was called.
func refuteSales(ops []Op, base time.Time, sales []cop, initial int64) counterResult {
	for _, s := range sales {
		if s.rem < 0 || s.rem > initial-s.qty {
			return counterexample(fmt.Sprintf("%s reported %d remaining after buying %d of a stock of %d",
				describe(ops, base, s.idx), s.rem, s.qty, initial), s.idx)
		}
	}
	slices.SortFunc(sales, func(a, b cop) int {
		if c := cmp.Compare(b.rem, a.rem); c != 0 {
			return c
		}
		return cmp.Compare(a.call, b.call)
	})
	for k := 1; k < len(sales); k++ {
		if a, b := sales[k-1], sales[k]; a.rem == b.rem && a.qty > 0 && b.qty > 0 {
			return counterexample(fmt.Sprintf("%s and %s both reported %d remaining: two sales cannot leave the same stock",
				describe(ops, base, a.idx), describe(ops, base, b.idx), a.rem), a.idx, b.idx)
		}
	}
	latest := -1 // the sale called last among those that left more
	for k := range sales {
		b := sales[k]
		if latest >= 0 {
			if a := sales[latest]; b.ret < a.call && a.rem > b.rem {
				return counterexample(fmt.Sprintf("%s answered before %s was called, yet left less (%d remaining, against %d): the sale that left more must come first",
					describe(ops, base, b.idx), describe(ops, base, a.idx), b.rem, a.rem), a.idx, b.idx)
			}
		}
		if latest < 0 || b.call > sales[latest].call {
			latest = k
		}
	}
	return counterResult{}
}

// sweep places the operations as early as they can go, in the sales'
// order: t is the point of the last placed operation and src the index in
// ops of the operation whose call set it (-1: none yet).
type sweep struct {
	ops      []Op
	base     time.Time
	u        int64 // the unknown purchases' quantity (0: there are none)
	unknowns []cop // by call
	soldOuts []cop // by qty, descending
	next     int   // unknowns[next:] are unused
	nextSO   int   // soldOuts[nextSO:] still wait for the stock to fall below their qty
	stock    int64
	t        int64
	src      int
}

// run places sales (by remaining, descending) and the sold_out answers.
func (s *sweep) run(sales []cop) counterResult {
	s.t = -1 << 63
	if r := s.settle(); r.verdict != "" {
		return r
	}
	prev := -1
	for _, sale := range sales {
		if drop := s.stock - sale.qty - sale.rem; drop != 0 {
			if r := s.gap(prev, sale, drop); r.verdict != "" {
				return r
			}
		}
		if sale.call > s.t {
			s.t, s.src = sale.call, sale.idx
		}
		if sale.ret < s.t {
			return s.late(sale)
		}
		s.stock = sale.rem
		prev = sale.idx
		if r := s.settle(); r.verdict != "" {
			return r
		}
	}
	return s.tail()
}

// gap explains the drop of stock before sale (prev: the sale before it,
// -1 for the initial stock) by unknown purchases, the earliest called.
func (s *sweep) gap(prev int, sale cop, drop int64) counterResult {
	fail := func(format string, args ...any) counterResult {
		after := "the initial stock of " + fmt.Sprint(s.stock)
		witness := []int{sale.idx}
		if prev >= 0 {
			after = fmt.Sprintf("%s, which left %d", describe(s.ops, s.base, prev), s.stock)
			witness = []int{prev, sale.idx}
		}
		what := fmt.Sprintf("%s bought %d and left %d after %s", describe(s.ops, s.base, sale.idx), sale.qty, sale.rem, after)
		return counterexample(what+fmt.Sprintf(format, args...), witness...)
	}
	switch {
	case drop < 0:
		return fail(": more than there was")
	case s.u == 0:
		return fail(": %d units went to no purchase (none has an unknown outcome)", drop)
	case drop%s.u != 0:
		return fail(": %d units went to no purchase (those of unknown outcome buy %d each)", drop, s.u)
	}
	k := int(drop / s.u)
	if s.next+k > len(s.unknowns) {
		return fail(": %d units need %d purchases of unknown outcome, and only %d are left", drop, k, len(s.unknowns)-s.next)
	}
	// sold_out answers whose qty the stock falls below inside the gap:
	// after the j-th of its unknown purchases.
	end := s.stock - drop
	for ; s.nextSO < len(s.soldOuts) && s.soldOuts[s.nextSO].qty > end; s.nextSO++ {
		so := s.soldOuts[s.nextSO]
		j := (s.stock-so.qty)/s.u + 1
		if r := s.soldOutAfter(so, s.next+int(j)-1); r.verdict != "" {
			return r
		}
	}
	last := s.unknowns[s.next+k-1]
	if last.call > s.t {
		s.t, s.src = last.call, last.idx
	}
	s.next += k
	s.stock = end
	return counterResult{}
}

// soldOutAfter checks sold_out answer so placed after the unknown purchase
// unknowns[j] took effect (and after everything placed so far).
func (s *sweep) soldOutAfter(so cop, j int) counterResult {
	t, src := s.t, s.src
	if c := s.unknowns[j]; c.call > t {
		t, src = c.call, c.idx
	}
	if so.ret >= t {
		return counterResult{}
	}
	if s.ops[src].Result == Unknown {
		return counterexample(fmt.Sprintf("%s answered before %s was called: for the stock to be below %d by then, %d purchases of unknown outcome must have taken effect, and at most %d had been called",
			describe(s.ops, s.base, so.idx), describe(s.ops, s.base, src), so.qty, j+1, j), src, so.idx)
	}
	return s.soldOutEarly(so, src)
}

// settle checks the sold_out answers whose qty the stock is now below.
func (s *sweep) settle() counterResult {
	for ; s.nextSO < len(s.soldOuts) && s.soldOuts[s.nextSO].qty > s.stock; s.nextSO++ {
		if so := s.soldOuts[s.nextSO]; so.ret < s.t {
			if s.ops[s.src].Result == Unknown {
				return counterexample(fmt.Sprintf("%s answered before %s was called: for the stock to be below %d by then, %d purchases of unknown outcome must have taken effect, and at most %d had been called",
					describe(s.ops, s.base, so.idx), describe(s.ops, s.base, s.src), so.qty, s.next, s.next-1), s.src, so.idx)
			}
			return s.soldOutEarly(so, s.src)
		}
	}
	return counterResult{}
}

// soldOutEarly: sold_out answer so returned before sale src, which comes
// no later than the stock fell below so's qty, was called.
func (s *sweep) soldOutEarly(so cop, src int) counterResult {
	sale := &s.ops[src]
	return counterexample(fmt.Sprintf("%s answered sold_out for %d before %s was called, which left %d after buying %d: the stock was at least %d until then",
		describe(s.ops, s.base, so.idx), so.qty, describe(s.ops, s.base, src), sale.Remaining, sale.Qty, so.qty), src, so.idx)
}

// late: sale returned before the operation that set t was called.
func (s *sweep) late(sale cop) counterResult {
	// refuteSales caught the case of a sale that left more: src is an
	// unknown purchase the drops before sale need.
	return counterexample(fmt.Sprintf("%s answered before %s was called: the stock it left needs %d purchases of unknown outcome to have taken effect before it, and at most %d had been called",
		describe(s.ops, s.base, sale.idx), describe(s.ops, s.base, s.src), s.next, s.next-1), s.src, sale.idx)
}

// tail checks the sold_out answers that need the stock below the last
// sale's remaining: unknown purchases, the earliest called, after it.
func (s *sweep) tail() counterResult {
	for ; s.nextSO < len(s.soldOuts); s.nextSO++ {
		so := s.soldOuts[s.nextSO]
		var j int64 // unknown purchases needed after the last sale
		if s.u > 0 {
			j = (s.stock-so.qty)/s.u + 1
		}
		if s.u == 0 || j > s.stock/s.u || s.next+int(j) > len(s.unknowns) {
			return counterexample(fmt.Sprintf("%s answered sold_out for %d, yet the stock never fell below %d: the sales left %d, and the %d purchases of unknown outcome left could not sell enough",
				describe(s.ops, s.base, so.idx), so.qty, so.qty, s.stock, len(s.unknowns)-s.next), so.idx)
		}
		if r := s.soldOutAfter(so, s.next+int(j)-1); r.verdict != "" {
			return r
		}
	}
	return counterResult{}
}

// describe is op i with its times since base, as a counter-example
// names it.
func describe(ops []Op, base time.Time, i int) string {
	op := &ops[i]
	ms := func(t time.Time) float64 { return float64(t.Sub(base)) / float64(time.Millisecond) }
	if op.Result == Unknown {
		return fmt.Sprintf("%s (called at +%.3f ms, outcome unknown)", op.ID, ms(op.Call))
	}
	return fmt.Sprintf("%s (called at +%.3f ms, answered at +%.3f ms)", op.ID, ms(op.Call), ms(op.Return))
}
