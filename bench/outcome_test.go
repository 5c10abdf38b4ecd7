package bench

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/seckill-lab/seckill/bench/contract"
	"github.com/seckill-lab/seckill/bench/history"
	"github.com/seckill-lab/seckill/stock"
)

// TestOutcomesThroughTheBench walks every outcome of the service's table
// (stock/errors.go, and success and a timeout) through the bench: the
// label the reports count it under and what the history checker takes it
// for come from the outcome table, never from a status or code written
// here.
func TestOutcomesThroughTheBench(t *testing.T) {
	outs := append(stock.Outcomes(), stock.OutcomeOf(nil), stock.OutcomeOf(context.DeadlineExceeded), stock.OutcomeOf(errors.New("a driver's error")))
	for _, o := range outs {
		code := o.Code
		if o.Status == 200 {
			code = "" // a receipt carries no code
		}
		row, ok := contract.OutcomeFor(o.Status, o.Code)
		if !ok {
			t.Errorf("%d %s: not in the contract's table", o.Status, o.Code)
			continue
		}
		remaining := int64(1)
		r := Response{RequestID: "k", Code: o.Status, Error: code, Sent: time.Unix(0, 0), Latency: time.Millisecond, Remaining: &remaining}
		if r.Code != 200 {
			r.Remaining = nil
		}
		label := r.Outcome()
		wantLabel := OutcomeError
		switch {
		case row.Effect == contract.Sold:
			wantLabel = OutcomeOK
		case o.Code == OutcomeSoldOut || o.Code == OutcomeUserLimit || o.Code == OutcomeStaleLock ||
			o.Code == OutcomeLeaseLost || o.Code == OutcomeLockTimeout:
			wantLabel = o.Code
		}
		if label != wantLabel {
			t.Errorf("%d %s: counted as %q, want %q", o.Status, o.Code, label, wantLabel)
		}
		got := historyOps([]Response{r}, 1)[0].Result
		want := map[contract.Effect]history.Result{contract.Sold: history.Sold, contract.NothingSold: history.Refused, contract.Unknown: history.Unknown}[row.Effect]
		if o.Code == OutcomeSoldOut {
			want = history.SoldOut
		}
		if got != want {
			t.Errorf("%d %s (%s): the history checker takes it for %s, want %s", o.Status, o.Code, row.Effect, got, want)
		}
		if r.Effect() != row.Effect {
			t.Errorf("%d %s: effect %s, want the table's %s", o.Status, o.Code, r.Effect(), row.Effect)
		}
	}
	// Answers the table lacks: a proxy's 4xx sold nothing, its 5xx and a
	// transport error may have.
	for _, tc := range []struct {
		r    Response
		want history.Result
	}{
		{Response{Code: 404, Error: "404 Not Found"}, history.Refused},
		{Response{Code: 502, Error: "502 Bad Gateway"}, history.Unknown},
		{Response{Code: 0, Error: "connection reset"}, history.Unknown},
	} {
		if got := historyOps([]Response{tc.r}, 1)[0].Result; got != tc.want || tc.r.Outcome() != OutcomeError {
			t.Errorf("%d %q: %s (%s), want %s (errors)", tc.r.Code, tc.r.Error, got, tc.r.Outcome(), tc.want)
		}
	}
}
