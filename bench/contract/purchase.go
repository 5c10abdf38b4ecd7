package contract

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"
)

// Purchase is one purchase answer, as the contract reads it.
type Purchase struct {
	// Status is the answer's status; Code its outcome's code ("ok" for a
	// 2xx), Effect what the bench counts it as (Outcomes' row).
	Status int
	Code   string
	Effect Effect
	// Detail is an error answer's detail ("" when it has none).
	Detail string

	// A 2xx answer's receipt; zero for an error answer. The optional
	// properties a service leaves out are zero, but for LockWait.
	GoodsID, Qty int64
	// Remaining is the stock the sale left (for a replayed answer, the
	// stock then or now: not this sale's).
	Remaining int64
	// RequestID is the purchase's Idempotency-Key.
	RequestID string
	OrderID   int64
	Instance  string
	Strategy  string
	Fence     uint64
	Replayed  bool
	Accepted  bool
	// LockWait is how long the purchase waited for its lock; nil when the
	// answer does not say (lock_wait_ms left out).
	LockWait *time.Duration
}

// receipt is a 2xx purchase answer's body.
type receipt struct {
	GoodsID    int64    `json:"goods_id"`
	Qty        int64    `json:"qty"`
	Remaining  int64    `json:"remaining"`
	RequestID  string   `json:"request_id"`
	OrderID    int64    `json:"order_id"`
	Instance   string   `json:"instance"`
	Strategy   string   `json:"strategy"`
	Fence      uint64   `json:"fence"`
	Replayed   bool     `json:"replayed"`
	Accepted   bool     `json:"accepted"`
	LockWaitMS *float64 `json:"lock_wait_ms"`
}

// CheckPurchase checks one purchase answer, its status and body, against
// the contract and returns what it says. An answer the contract allows,
// a refusal included (409 sold_out), is no error: Purchase.Effect says
// what it did. Any other (a status or a code the outcome table lacks, a
// receipt that misses a property or has one the contract does not name,
// a wrong type, a body that is not JSON) is a
// *CallError matching ErrViolation.
func CheckPurchase(status int, body []byte) (Purchase, error) {
	a := answer{call: http.MethodPost + " " + PathPurchase, method: http.MethodPost, status: status, body: body}
	p := Purchase{Status: status}
	if status == http.StatusOK || status == http.StatusAccepted {
		if why := receiptShape.check(body); why != "" {
			return p, a.violation(why)
		}
		var r receipt
		if err := json.Unmarshal(body, &r); err != nil { // checked: it fits
			return p, a.violation(err.Error())
		}
		p.Code, p.Effect = "ok", Sold
		p.GoodsID, p.Qty, p.Remaining, p.RequestID = r.GoodsID, r.Qty, r.Remaining, r.RequestID
		p.OrderID, p.Instance, p.Strategy, p.Fence = r.OrderID, r.Instance, r.Strategy, r.Fence
		p.Replayed, p.Accepted = r.Replayed, r.Accepted
		if r.LockWaitMS != nil {
			d := time.Duration(*r.LockWaitMS * float64(time.Millisecond))
			p.LockWait = &d
		}
		return p, nil
	}
	statuses := purchaseStatuses()
	if !slices.Contains(statuses, status) {
		return p, a.violation("has a status the contract does not give a purchase (it gives " + statusList(statuses) + ")")
	}
	if why := errorShape.check(body); why != "" {
		return p, a.violation(why)
	}
	var e struct{ Error, Detail string }
	_ = json.Unmarshal(body, &e) // checked: it fits
	o, ok := OutcomeFor(status, e.Error)
	if !ok {
		return p, a.violation(fmt.Sprintf("has code %q, which the contract does not give a %d purchase (it gives %s)",
			e.Error, status, strings.Join(codesOf(status), ", ")))
	}
	p.Code, p.Effect, p.Detail = o.Code, o.Effect, e.Detail
	return p, nil
}

// codesOf lists the outcome table's codes of status.
func codesOf(status int) []string {
	var out []string
	for _, o := range outcomes {
		if o.Status == status {
			out = append(out, o.Code)
		}
	}
	return out
}
