// Package history checks a flash-sale purchase history of one goods for
// linearizability against a sequential stock-counter model. Two checkers
// share the model: a counter checker that decides in O(n log n) (a sort
// and a sweep, memory linear: a million purchases in seconds), and
// porcupine (github.com/anishathalye/porcupine), which searches orderings
// and gives up at a few hundred thousand purchases.
//
// The model is one counter that starts at the initial stock. A purchase that
// sold q units is legal only if the stock was at least q and the server
// reported stock-q as remaining; a sold_out answer is legal only if the stock
// was below q. An operation whose outcome the client never learned (timeout,
// 5xx, transport error) may or may not have taken effect: it is given a return
// time after every other operation's, and the model lets it sell whenever the
// stock allows. Linearized somewhere inside the history it is a sale;
// linearized after everything else its effect is unobservable, which is the
// same as not having happened. This is how porcupine's own tests express
// timed-out operations (a return event at the end of the history, and a step
// that accepts any output), and it keeps the state a plain int64.
//
// The counter checker (counter.go) uses that every sale lowers the stock:
// the sales are totally ordered by the remaining stock they reported, each
// must fit in its own [Call, Return] in that order, the drops between them
// must be explained by purchases of unknown outcome called early enough,
// and each sold_out must come after the stock fell below its qty. It is
// exact when the purchases of unknown outcome all buy one quantity (the
// bench buys one qty per run); otherwise (a subset-sum), or with a sale of 0
// units, it proves what it can and Check falls back to porcupine
// (Report.Checker, Report.Fallback). A history it proves not linearizable
// comes with a counter-example (Report.Reason, Report.Counterexample), and,
// when it is small enough, porcupine's drawing of it (Report.Visualization).
package history

import (
	"bytes"
	"context"
	"fmt"
	"sort"
	"sync/atomic"
	"time"

	"github.com/anishathalye/porcupine"
)

// Result of one purchase as the client saw it.
type Result int

const (
	Sold    Result = iota // 2xx: the server sold Qty and reported Remaining
	SoldOut               // 409 sold_out: legal only if stock < Qty at that point
	Unknown               // timeout/5xx/transport error: may or may not have taken effect
	Refused               // any other answer that sold nothing (4xx, 503 lock_timeout): took no effect
)

func (r Result) String() string {
	switch r {
	case Sold:
		return "sold"
	case SoldOut:
		return "sold_out"
	case Unknown:
		return "unknown"
	case Refused:
		return "refused"
	}
	return fmt.Sprintf("Result(%d)", int(r))
}

// Op is one purchase as the client saw it.
type Op struct {
	ID        string
	Qty       int64
	Call      time.Time // when the request was sent
	Return    time.Time // when the answer came back (ignored for Unknown: it may take effect any time after Call)
	Result    Result
	Remaining int64 // for Sold: the stock the server said was left after this sale
}

// Verdict of a check.
type Verdict string

const (
	Linearizable    Verdict = "linearizable"
	NotLinearizable Verdict = "not linearizable"
	VerdictUnknown  Verdict = "unknown" // the checker timed out
)

// Report of a check.
type Report struct {
	Verdict Verdict
	Ops     int           // operations checked (Refused ones are dropped: no effect)
	Elapsed time.Duration // how long the check took
	// Visualization is porcupine's self-contained HTML visualization of the
	// history; set when the verdict is NotLinearizable (nil otherwise, or
	// when porcupine could not finish within its budget after a quick
	// refutation).
	Visualization []byte
	// Reason says why a history is not linearizable when a quick check
	// proved it without the search (two sales reporting the same remaining
	// stock, more sold than there was, a sale that answered before one
	// that left more was called: the counter checker's counter-example,
	// naming its operations with their times since the first call); ""
	// otherwise.
	Reason string
	// Checker is the checker that decided: CheckerCounter or
	// CheckerPorcupine ("" when nothing was checked: no operations, or ctx
	// cancelled first).
	Checker string
	// Fallback says why the counter checker left the history to porcupine
	// ("" when it decided).
	Fallback string
	// Counterexample holds the operations (one or two) Reason names when
	// the counter checker proved the history not linearizable.
	Counterexample []Op
}

// Checkers of Report.Checker.
const (
	CheckerCounter   = "counter"   // the O(n log n) stock-counter checker
	CheckerPorcupine = "porcupine" // porcupine's search
)

// drawMaxOps bounds the histories the counter checker proved not
// linearizable that porcupine also searches, within refutedBudget, only
// to draw them (Report.Visualization).
const drawMaxOps = 5000

// refute looks for a proof, in one pass, that no linearization exists:
// every sale strictly lowers the stock, so the remaining stocks the sales
// reported must all differ, lie in [0, initial-qty], and add up to no more
// sold than there was. Porcupine takes long to refute a history with many
// such sales (a lock that loses updates); this takes microseconds.
func refute(steps []step, initial int64) string {
	seen := make(map[int64]string, len(steps))
	var sold int64
	for _, s := range steps {
		if s.result != Sold || s.qty <= 0 {
			continue
		}
		sold += s.qty
		if s.remaining < 0 || s.remaining > initial-s.qty {
			return fmt.Sprintf("%s reported %d remaining after buying %d of a stock of %d", s.id, s.remaining, s.qty, initial)
		}
		if other, ok := seen[s.remaining]; ok {
			return fmt.Sprintf("%s and %s both reported %d remaining: two sales cannot leave the same stock", other, s.id, s.remaining)
		}
		seen[s.remaining] = s.id
	}
	if sold > initial {
		return fmt.Sprintf("%d units sold of a stock of %d", sold, initial)
	}
	return ""
}

// refutedBudget bounds the search that only draws the view of a history
// refute already proved not linearizable.
const refutedBudget = 2 * time.Second

// step is the input of one porcupine operation. A pointer to it is the
// operation's Input (a pointer in an interface does not allocate); the Output
// is unused.
type step struct {
	id        string
	result    Result
	qty       int64
	remaining int64
}

// Check checks ops against a counter that starts at initial: a Sold op of q
// is legal only if stock >= q and Remaining == stock-q (then stock -= q); a
// SoldOut op only if stock < q (stock unchanged); an Unknown op either
// sold q (when stock >= q) or did nothing. The counter checker decides
// (timeout does not bound it: it takes O(n log n)); where it cannot,
// porcupine searches, and gives up after timeout (VerdictUnknown). ctx
// cancels it too (VerdictUnknown as well, and no error: an error means bad
// input only).
func Check(ctx context.Context, ops []Op, initial int64, timeout time.Duration) (Report, error) {
	return check(ctx, ops, initial, timeout, true)
}

// CheckPorcupine checks ops with porcupine's search alone, as Check does
// where the counter checker cannot decide: the cross-check of the counter
// checker on a history small enough for both.
func CheckPorcupine(ctx context.Context, ops []Op, initial int64, timeout time.Duration) (Report, error) {
	return check(ctx, ops, initial, timeout, false)
}

// check is Check, with the counter checker first when counter is set.
func check(ctx context.Context, ops []Op, initial int64, timeout time.Duration, counter bool) (Report, error) {
	start := time.Now()
	if initial < 0 {
		return Report{}, fmt.Errorf("history: initial stock %d is negative", initial)
	}
	kept, base, err := effective(ops)
	if err != nil {
		return Report{}, err
	}
	rep := Report{Ops: len(kept)}
	if len(kept) == 0 {
		rep.Verdict = Linearizable
		rep.Elapsed = time.Since(start)
		return rep, nil
	}
	if ctx.Err() != nil {
		rep.Verdict = VerdictUnknown
		rep.Elapsed = time.Since(start)
		return rep, nil
	}
	if counter {
		res := checkCounter(ops, kept, base, initial)
		if res.undecided == "" {
			rep.Checker, rep.Verdict, rep.Reason = CheckerCounter, res.verdict, res.reason
			for _, i := range res.witness {
				rep.Counterexample = append(rep.Counterexample, ops[i])
			}
			if res.verdict == NotLinearizable && len(kept) <= drawMaxOps {
				err = draw(ctx, &rep, ops, kept, base, initial)
			}
			rep.Elapsed = time.Since(start)
			return rep, err
		}
		rep.Fallback = res.undecided
	}
	err = rep.porcupine(ctx, ops, kept, base, initial, timeout)
	rep.Elapsed = time.Since(start)
	return rep, err
}

// porcupine decides rep by porcupine's search over the kept ops.
func (rep *Report) porcupine(ctx context.Context, ops []Op, kept []int, base time.Time, initial int64, timeout time.Duration) error {
	rep.Checker = CheckerPorcupine
	history, steps := operations(ops, kept, base)

	// Cancellation by ctx: porcupine only knows its own timeout, so a
	// cancelled ctx makes every step fail, which unwinds the search at once;
	// the verdict is then reported as unknown.
	var cancelled atomic.Bool
	stop := context.AfterFunc(ctx, func() { cancelled.Store(true) })
	defer stop()
	if ctx.Err() != nil {
		cancelled.Store(true)
	}
	timeout = ctxBudget(ctx, timeout)

	rep.Reason = refute(steps, initial)
	if rep.Reason != "" && (timeout <= 0 || timeout > refutedBudget) {
		timeout = refutedBudget
	}
	return search(rep, counterModel(initial, &cancelled), history, timeout, &cancelled)
}

// draw runs porcupine on a history the counter checker proved not
// linearizable, within refutedBudget, only for its visualization; rep's
// verdict stands whatever porcupine finds (none is drawn unless it finds
// the history illegal in time).
func draw(ctx context.Context, rep *Report, ops []Op, kept []int, base time.Time, initial int64) error {
	var cancelled atomic.Bool
	stop := context.AfterFunc(ctx, func() { cancelled.Store(true) })
	defer stop()
	history, _ := operations(ops, kept, base)
	model := counterModel(initial, &cancelled)
	res, info := porcupine.CheckOperationsVerbose(model, history, ctxBudget(ctx, refutedBudget))
	if res != porcupine.Illegal || cancelled.Load() {
		return nil
	}
	return visualize(rep, model, info)
}

// effective validates ops and returns the indexes of those that may have
// had an effect (all but Refused) and the earliest call among them.
func effective(ops []Op) (kept []int, base time.Time, err error) {
	kept = make([]int, 0, len(ops))
	for i := range ops {
		op := &ops[i]
		switch op.Result {
		case Refused:
			continue
		case Sold, SoldOut, Unknown:
		default:
			return nil, base, fmt.Errorf("history: op %d (%q): invalid result %d", i, op.ID, int(op.Result))
		}
		if op.Qty < 0 {
			return nil, base, fmt.Errorf("history: op %d (%q): negative qty %d", i, op.ID, op.Qty)
		}
		if op.Result != Unknown && op.Return.Before(op.Call) {
			return nil, base, fmt.Errorf("history: op %d (%q): return %s is before call %s",
				i, op.ID, op.Return.Format(time.RFC3339Nano), op.Call.Format(time.RFC3339Nano))
		}
		if len(kept) == 0 || op.Call.Before(base) {
			base = op.Call
		}
		kept = append(kept, i)
	}
	return kept, base, nil
}

// operations turns the kept ops into porcupine operations, timed in
// nanoseconds since base; Unknown ops return after every other operation.
func operations(ops []Op, kept []int, base time.Time) ([]porcupine.Operation, []step) {
	var last int64
	history := make([]porcupine.Operation, len(kept))
	steps := make([]step, len(kept))
	for j, i := range kept {
		op := &ops[i]
		steps[j] = step{id: op.ID, result: op.Result, qty: op.Qty, remaining: op.Remaining}
		call := int64(op.Call.Sub(base))
		ret := call
		if op.Result != Unknown {
			ret = int64(op.Return.Sub(base))
		}
		last = max(last, ret)
		history[j] = porcupine.Operation{Input: &steps[j], Call: call, Return: ret, Metadata: op.ID}
	}
	for j := range history {
		if steps[j].result == Unknown {
			history[j].Return = last + 1
		}
	}
	assignLanes(history)
	return history, steps
}

// ctxBudget is timeout shortened to what is left of ctx's deadline (at
// least 1ns); timeout <= 0 means none.
func ctxBudget(ctx context.Context, timeout time.Duration) time.Duration {
	d, ok := ctx.Deadline()
	if !ok {
		return timeout
	}
	left := time.Until(d)
	if left <= 0 {
		left = time.Nanosecond
	}
	if timeout <= 0 || left < timeout {
		return left
	}
	return timeout
}

// search runs porcupine on history within timeout and sets rep's verdict:
// not linearizable when refute already proved it (or the search found
// it, with the visualization), unknown when cancelled or out of time.
func search(rep *Report, model porcupine.Model, history []porcupine.Operation, timeout time.Duration, cancelled *atomic.Bool) error {
	res, info := porcupine.CheckOperationsVerbose(model, history, timeout)
	switch {
	case rep.Reason != "" && !cancelled.Load():
		rep.Verdict = NotLinearizable
		if res == porcupine.Illegal {
			return visualize(rep, model, info)
		}
	case cancelled.Load():
		rep.Verdict = VerdictUnknown
	case res == porcupine.Ok:
		rep.Verdict = Linearizable
	case res == porcupine.Illegal:
		rep.Verdict = NotLinearizable
		return visualize(rep, model, info)
	default:
		rep.Verdict = VerdictUnknown
	}
	return nil
}

// visualize keeps porcupine's view of the illegal history in rep.
func visualize(rep *Report, model porcupine.Model, info porcupine.LinearizationInfo) error {
	var buf bytes.Buffer
	if err := porcupine.Visualize(model, info, &buf); err != nil {
		return fmt.Errorf("history: visualization: %w", err)
	}
	rep.Visualization = buf.Bytes()
	return nil
}

// counterModel is the sequential stock counter. The state is an int64; Step
// and Equal are a type assertion and a comparison.
func counterModel(initial int64, cancelled *atomic.Bool) porcupine.Model {
	return porcupine.Model{
		Init: func() interface{} { return initial },
		Step: func(state, input, _ interface{}) (bool, interface{}) {
			if cancelled.Load() {
				return false, state
			}
			stock := state.(int64)
			s := input.(*step)
			switch s.result {
			case Sold:
				if stock >= s.qty && s.remaining == stock-s.qty {
					return true, s.remaining
				}
				return false, state
			case SoldOut:
				return stock < s.qty, state
			case Unknown:
				if stock >= s.qty {
					return true, stock - s.qty
				}
				return true, state
			}
			return false, state
		},
		Equal: func(a, b interface{}) bool { return a.(int64) == b.(int64) },
		Hash: func(state interface{}) uint64 {
			return uint64(state.(int64)) * 0x9e3779b97f4a7c15
		},
		DescribeOperation: func(input, _ interface{}) string {
			s := input.(*step)
			switch s.result {
			case Sold:
				return fmt.Sprintf("buy(%d) -> sold, remaining %d", s.qty, s.remaining)
			case SoldOut:
				return fmt.Sprintf("buy(%d) -> sold_out", s.qty)
			case Unknown:
				return fmt.Sprintf("buy(%d) -> unknown (sold if stock allowed, or nothing)", s.qty)
			}
			return fmt.Sprintf("buy(%d) -> %s", s.qty, s.result)
		},
		DescribeState: func(state interface{}) string {
			return fmt.Sprintf("stock %d", state.(int64))
		},
	}
}

// assignLanes sets ClientId so that operations in one lane do not overlap:
// porcupine's visualization draws one row per client.
func assignLanes(history []porcupine.Operation) {
	order := make([]int, len(history))
	for i := range order {
		order[i] = i
	}
	sort.Slice(order, func(a, b int) bool { return history[order[a]].Call < history[order[b]].Call })
	var free []int64 // per lane: the return time of its last operation
	for _, i := range order {
		lane := -1
		for l, ret := range free {
			if ret < history[i].Call {
				lane = l
				break
			}
		}
		if lane < 0 {
			lane = len(free)
			free = append(free, 0)
		}
		free[lane] = history[i].Return
		history[i].ClientId = lane
	}
}
