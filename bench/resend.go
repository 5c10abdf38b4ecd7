package bench

import (
	"fmt"
	"slices"
	"time"

	"github.com/seckill-lab/seckill/bench/contract"
)

// MaxResend bounds Options.Resend.
const MaxResend = 100

// InvOrderAnswered: every order's request got a 2xx, at its first answer
// or at a resend's (a replay). Checked with Options.Resend only: without
// it, a purchase whose instance died after its commit leaves an order its
// client never heard of, as the API allows.
const InvOrderAnswered = "order_answered"

// resendWait is the wait before resend k (from 0): 100 ms, doubling, at
// most 2 s, so Resend 20 waits about 35 s in all before giving up.
func resendWait(k int) time.Duration {
	if k >= 5 {
		return 2 * time.Second
	}
	return min(100*time.Millisecond<<k, 2*time.Second)
}

// indeterminate reports whether an attempt's result says nothing of the
// sale: a transport error, or an answer the outcome table calls unknown
// (a 5xx such as the proxy's 502 for a dead instance, backend_unavailable).
func indeterminate(r *vegetaResult, err error) bool {
	return err != nil || toResponse(r, "").Effect() == contract.Unknown
}

// unanswered counts the responses still indeterminate.
func unanswered(responses []Response) int {
	n := 0
	for _, r := range responses {
		if r.Effect() == contract.Unknown {
			n++
		}
	}
	return n
}

// orderAnswered checks InvOrderAnswered: the request of every order in
// ids (the orders' request ids) was answered 2xx.
func orderAnswered(responses []Response, ids []string) Invariant {
	ok := make(map[string]bool, len(responses))
	for _, r := range responses {
		if r.Outcome() == OutcomeOK {
			ok[r.RequestID] = true
		}
	}
	missing := 0
	for _, id := range slices.Compact(slices.Sorted(slices.Values(ids))) {
		if !ok[id] {
			missing++
		}
	}
	return Invariant{Name: InvOrderAnswered, Pass: missing == 0, Count: missing, Applicable: true,
		Detail: fmt.Sprintf("%d of %d orders' requests got no 2xx (first answer or a resend's replay)", missing, len(ids))}
}

// GapSettle is how long after a strike healed a span without sales that
// begins then is still the strike's: a failover is over when the
// demoted primary replicates the new one, and the sales it stops may stop
// after.
const GapSettle = 5 * time.Second

// setSalesGaps sets every strike's SalesGapS from the answers: over the
// times of the sales and sold-outs, the longest span between two of them
// (or from the last one to the run's last answer, GapOpen) that ends after
// the strike began and begins before it healed (or within GapSettle
// after), counted from its start at the earliest.
func setSalesGaps(strikes []Strike, responses []Response, t0 time.Time) {
	if len(strikes) == 0 || len(responses) == 0 {
		return
	}
	var sales []time.Time
	var last time.Time
	for _, r := range responses {
		at := r.Sent.Add(r.Latency)
		if at.After(last) {
			last = at
		}
		if o := r.Outcome(); o == OutcomeOK || o == OutcomeSoldOut {
			sales = append(sales, at)
		}
	}
	slices.SortFunc(sales, time.Time.Compare)
	for i := range strikes {
		s := &strikes[i]
		from, healed := t0.Add(s.start), t0.Add(s.start+s.length+GapSettle)
		var gap time.Duration
		open := false
		prev := time.Time{}
		for k := 0; k <= len(sales); k++ {
			next, end := last, true
			if k < len(sales) {
				next, end = sales[k], false
			}
			if k > 0 {
				prev = sales[k-1]
			}
			if !next.After(from) || (!prev.IsZero() && !prev.Before(healed)) {
				continue
			}
			begin := from
			if prev.After(from) {
				begin = prev
			}
			if d := next.Sub(begin); d > gap {
				gap, open = d, end
			}
		}
		s.SalesGapS, s.GapOpen = gap.Seconds(), open
	}
}
