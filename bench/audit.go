package bench

import (
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/seckill-lab/seckill/bench/contract"
)

// Outcome labels of a purchase response: the codes of the outcome table
// (bench/contract, kept equal to stock/errors.go) the reports count apart,
// "ok" for a sale and "errors" for anything else.
const (
	OutcomeOK          = "ok"           // 2xx: the purchase went through
	OutcomeSoldOut     = "sold_out"     // the stock did not cover qty
	OutcomeStaleLock   = "stale_lock"   // fencing refused a stale holder
	OutcomeLeaseLost   = "lease_lost"   // the holder's lease was lost before COMMIT
	OutcomeLockTimeout = "lock_timeout" // the lock wait ran out
	OutcomeUserLimit   = "user_limit"   // the user is at the per-user limit
	OutcomeError       = "errors"       // anything else (other 4xx/5xx, transport errors)
)

// countedApart are the outcome table's codes the reports count apart.
var countedApart = []string{OutcomeSoldOut, OutcomeStaleLock, OutcomeLeaseLost, OutcomeLockTimeout, OutcomeUserLimit}

// Response is what the harness keeps of one purchase: the request id it
// sent (Idempotency-Key), the HTTP status (0 when no response came back),
// the body's "error" field (or the transport error) and the answering
// instance (X-Instance).
type Response struct {
	RequestID string `json:"request_id"`
	Code      int    `json:"code"`
	Error     string `json:"error,omitempty"`
	Instance  string `json:"instance,omitempty"`
	// Sent is when the request was sent, Latency how long the answer took.
	Sent    time.Time     `json:"sent"`
	Latency time.Duration `json:"latency_ns"`
	// Remaining is the stock a 2xx said was left after the sale; nil for
	// a replayed answer (an earlier try of the same Idempotency-Key had
	// sold, and nginx retried it after its instance died), whose remaining
	// may be the stock now.
	Remaining *int64 `json:"remaining,omitempty"`
	// Replayed marks a 2xx that replayed an earlier try's order.
	Replayed bool `json:"replayed,omitempty"`
}

// Outcome classifies r into one of the Outcome labels.
func (r Response) Outcome() string {
	if r.Code >= 200 && r.Code < 300 {
		return OutcomeOK
	}
	if o, ok := contract.OutcomeFor(r.Code, r.Error); ok && slices.Contains(countedApart, o.Code) {
		return o.Code
	}
	return OutcomeError
}

// Effect is what r says of the sale, by the outcome table: sold, nothing
// sold, or unknown. An answer the table lacks is nothing sold for a 4xx
// (refused before any effect: a proxy's or a framework's) and unknown
// otherwise (a 5xx, a transport error).
func (r Response) Effect() contract.Effect {
	if r.Code >= 200 && r.Code < 300 {
		return contract.Sold
	}
	if o, ok := contract.OutcomeFor(r.Code, r.Error); ok {
		return o.Effect
	}
	if r.Code >= 400 && r.Code < 500 {
		return contract.NothingSold
	}
	return contract.Unknown
}

// Definite reports whether r is a definite answer: a 2xx (the purchase
// happened) or a 4xx (it did not, and must have left no order). 5xx and
// transport errors are indeterminate.
func (r Response) Definite() bool {
	return r.Code >= 200 && r.Code < 500 && (r.Code < 300 || r.Code >= 400)
}

// ServerState is what the admin API says after a run.
type ServerState struct {
	InitialStock int            // what the goods were reset to
	FinalStock   int            // stock column after the run
	Orders       int            // orders persisted for the goods
	SoldQty      int            // sum of the orders' qty
	PerInstance  map[string]int // orders per instance
	RequestIDs   []string       // request id of every persisted order (duplicates kept)
}

// Invariant is one correctness check of a run: whether it held and how
// many units, orders or requests violate it.
type Invariant struct {
	Name       string `json:"name"`
	Pass       bool   `json:"pass"`
	Count      int    `json:"count"`
	Applicable bool   `json:"applicable"`
	Detail     string `json:"detail"`
	// Undecided: the check could not decide (the linearizability check ran
	// out of time). It is neither passed nor failed, and not counted.
	Undecided bool `json:"undecided,omitempty"`
	// Incomplete: the check failed for want of evidence, not because it
	// saw the invariant break (mutual exclusion when the lock events of
	// some sales were lost: an instance killed -9 takes its events with
	// it, and no two sections were seen overlapping).
	Incomplete bool `json:"incomplete,omitempty"`
	// CheckMS is how long the check took, for the checks whose cost grows
	// with the run (the history, the lock evidence); 0 for arithmetic.
	CheckMS float64 `json:"check_ms,omitempty"`
}

// Failed reports whether the check decided that the invariant broke.
func (inv Invariant) Failed() bool { return !inv.Pass && !inv.Undecided }

// Audit is the arithmetic of one run.
type Audit struct {
	Oversold    int            `json:"oversold"`
	LostUpdates int            `json:"lost_updates"`
	Outcomes    map[string]int `json:"outcomes"`
	ErrorKinds  map[string]int `json:"error_kinds,omitempty"`
	Invariants  []Invariant    `json:"invariants"`
}

// Decided counts the invariants that were decided (passed or failed).
func (a Audit) Decided() int {
	n := 0
	for _, inv := range a.Invariants {
		if !inv.Undecided {
			n++
		}
	}
	return n
}

// Passed counts the invariants that hold.
func (a Audit) Passed() int {
	n := 0
	for _, inv := range a.Invariants {
		if inv.Pass {
			n++
		}
	}
	return n
}

// Invariant names, in report order.
const (
	InvStockNonNegative = "stock_non_negative"
	InvOKHasOrder       = "ok_has_order"
	InvNoPhantomOrder   = "no_phantom_order"
	InvNoDoubleSale     = "no_double_sale"
	InvNoOrderFor4xx    = "no_order_for_4xx"
	InvSoldOutAllSold   = "sold_out_means_all_sold"
)

// Evaluate audits a run: responses are what the clients saw (one per
// request sent), st what the server persisted, qty the units per purchase.
//
//	oversold     = max(0, sold_qty - initial_stock)
//	lost_updates = sold_qty - (initial_stock - final_stock)
func Evaluate(responses []Response, st ServerState, qty int) Audit {
	a := Audit{
		Oversold:    max(0, st.SoldQty-st.InitialStock),
		LostUpdates: st.SoldQty - (st.InitialStock - st.FinalStock),
		Outcomes:    map[string]int{OutcomeOK: 0, OutcomeSoldOut: 0, OutcomeStaleLock: 0, OutcomeLockTimeout: 0, OutcomeError: 0},
		ErrorKinds:  map[string]int{},
	}
	a.tally(responses)
	orders := make(map[string]int, len(st.RequestIDs))
	for _, id := range st.RequestIDs {
		orders[id]++
	}
	a.checkOrders(responses, st, orders)
	a.checkStock(len(responses), st, qty)
	if len(a.ErrorKinds) == 0 {
		a.ErrorKinds = nil
	}
	return a
}

// tally counts the responses by outcome, and the errors by kind (the
// status, then the body's error or the transport's).
func (a *Audit) tally(responses []Response) {
	for _, r := range responses {
		o := r.Outcome()
		a.Outcomes[o]++
		if o != OutcomeError {
			continue
		}
		k := r.Error
		if k == "" {
			k = "unknown"
		}
		if c := strconv.Itoa(r.Code); r.Code != 0 && !strings.HasPrefix(k, c) {
			k = c + " " + k
		}
		a.ErrorKinds[k]++
	}
}

// checkOrders checks the invariants between the answers and the orders
// (request id -> orders persisted with it): the stock stayed >= 0, every
// 2xx has its order, no order was for a request never sent, none was sold
// twice, and none was for a 4xx.
func (a *Audit) checkOrders(responses []Response, st ServerState, orders map[string]int) {
	// 1. final stock >= 0
	neg := max(0, -st.FinalStock)
	a.add(InvStockNonNegative, neg == 0, neg, true, fmt.Sprintf("final stock %d", st.FinalStock))

	// 2. every 2xx has a persisted order with its request id
	missing := 0
	sent := make(map[string]bool, len(responses))
	for _, r := range responses {
		if r.Outcome() == OutcomeOK && orders[r.RequestID] == 0 {
			missing++
		}
		if r.RequestID != "" {
			sent[r.RequestID] = true
		}
	}
	a.add(InvOKHasOrder, missing == 0, missing, true, fmt.Sprintf("%d successful purchases without an order", missing))

	// 3. no order that no request asked for; 4. no request id sold twice
	phantom, dup := 0, 0
	for id, n := range orders {
		if !sent[id] {
			phantom += n
		}
		if n > 1 {
			dup += n - 1
		}
	}
	a.add(InvNoPhantomOrder, phantom == 0, phantom, true, fmt.Sprintf("%d orders with a request id never sent", phantom))
	a.add(InvNoDoubleSale, dup == 0, dup, true, fmt.Sprintf("%d extra orders for an already sold request id", dup))

	// 5. no order for a definite failure (4xx)
	failed := 0
	for _, r := range responses {
		if r.Code >= 400 && r.Code < 500 && orders[r.RequestID] > 0 {
			failed++
		}
	}
	a.add(InvNoOrderFor4xx, failed == 0, failed, true, fmt.Sprintf("%d orders for requests answered 4xx", failed))
}

// checkStock checks the invariants of the stock's arithmetic over a run of
// sent requests: a sell-out sold everything, no update was lost, and not
// every request failed.
func (a *Audit) checkStock(sent int, st ServerState, qty int) {
	// 6. once sold out, everything was sold: sold qty equals the initial
	// stock (up to qty-1 units that no whole purchase can take). The goods
	// sold out when a request was answered sold_out, or when at least the
	// whole stock was sold (a strategy that loses updates never says
	// sold_out). Requests refused for other reasons (stale_lock,
	// lock_timeout) do not make it sell out.
	soldOut := a.Outcomes[OutcomeSoldOut] > 0 || st.SoldQty >= st.InitialStock
	if !soldOut {
		a.add(InvSoldOutAllSold, true, 0, false, "not applicable: the goods did not sell out")
	} else {
		off := 0
		if d := st.InitialStock - st.SoldQty; d < 0 || d > qty-1 {
			off = d
			if off < 0 {
				off = -off
			}
		}
		a.add(InvSoldOutAllSold, off == 0, off, true,
			fmt.Sprintf("sold %d of an initial stock of %d", st.SoldQty, st.InitialStock))
	}
	// 7. no lost update: every unit sold left the stock column.
	a.add(InvNoLostUpdate, a.LostUpdates <= 0, max(a.LostUpdates, 0), true,
		fmt.Sprintf("%d units sold that the stock column never lost", a.LostUpdates))

	// 8. not every request failed: a run without a single business answer
	// (sold or sold out) shows nothing about the strategy.
	served := a.Outcomes[OutcomeOK] + a.Outcomes[OutcomeSoldOut]
	if sent == 0 {
		a.add(InvNotAllFailed, true, 0, false, "not applicable: no request was sent")
	} else {
		failedAll := 0
		if served == 0 {
			failedAll = sent
		}
		a.add(InvNotAllFailed, served > 0, failedAll, true,
			fmt.Sprintf("%d of %d requests sold or were told sold out", served, sent))
	}
}

func (a *Audit) add(name string, pass bool, count int, applicable bool, detail string) {
	a.Invariants = append(a.Invariants, Invariant{Name: name, Pass: pass, Count: count, Applicable: applicable, Detail: detail})
}

// sortedKeys returns m's keys in order.
func sortedKeys[V any](m map[string]V) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}
