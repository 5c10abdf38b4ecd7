package stock

import (
	"context"
	"errors"
	"net/http"
)

// Purchase outcomes other than success. Compare with errors.Is; OutcomeOf
// gives each one's HTTP status and code.
var (
	// ErrSoldOut: the stock does not cover qty.
	ErrSoldOut = errors.New("sold_out")
	// ErrUserLimit: the user already has Config.PerUserLimit orders of this
	// goods; nothing was sold.
	ErrUserLimit = errors.New("user_limit")
	// ErrStaleLock: fencing rejected the write of a holder whose token is
	// older than one already accepted.
	ErrStaleLock = errors.New("stale_lock")
	// ErrLeaseLost: the lock's backend reported the holder's lease lost
	// (expired, session ended) before the purchase committed; it was
	// rolled back (unless Config.NoLeaseCheck).
	ErrLeaseLost = errors.New("lease_lost")
	// ErrLockTimeout: the lock wait budget ran out (or optimistic retries
	// were exhausted).
	ErrLockTimeout = errors.New("lock_timeout")
	// ErrBackendUnavailable: a lock server or MySQL did not answer.
	ErrBackendUnavailable = errors.New("backend_unavailable")
	// ErrGoodsNotFound: no goods with that id.
	ErrGoodsNotFound = errors.New("goods_not_found")
	// ErrIdempotencyKeyReused: the Idempotency-Key was already sold for a
	// different purchase (goods, qty or user); nothing was changed.
	ErrIdempotencyKeyReused = errors.New("idempotency_key_reused")
	// ErrInvalid: the request itself is invalid (qty out of range, ...).
	ErrInvalid = errors.New("invalid_request")
)

// Outcome is how a request to the service ended, as its HTTP answer
// gives it.
type Outcome struct {
	// Err is the service's error this outcome is for (nil for success
	// and a timeout).
	Err error
	// Status is the HTTP status.
	Status int
	// Code is the answer's "error" field and the purchase metric's
	// outcome label.
	Code string
	// Told: the error's text is the service's own sentence and is the
	// answer's detail.
	Told bool
	// Detail, when set, is the answer's detail in place of the error's
	// text, which may name servers, SQL or addresses and goes to the
	// instance's log only. Unset with Told false: the code says it all.
	Detail string
}

// outcomes is the one table of the service's errors, in the order they
// are matched (an error that wraps two is the first's).
var outcomes = []Outcome{
	{Err: ErrSoldOut, Status: http.StatusConflict, Code: "sold_out"},
	{Err: ErrUserLimit, Status: http.StatusConflict, Code: "user_limit", Told: true},
	{Err: ErrStaleLock, Status: http.StatusConflict, Code: "stale_lock"},
	{Err: ErrLeaseLost, Status: http.StatusConflict, Code: "lease_lost"},
	{Err: ErrLockTimeout, Status: http.StatusServiceUnavailable, Code: "lock_timeout", Told: true},
	{Err: ErrGoodsNotFound, Status: http.StatusNotFound, Code: "goods_not_found", Told: true},
	{Err: ErrInvalid, Status: http.StatusBadRequest, Code: "invalid_request", Told: true},
	{Err: ErrIdempotencyKeyReused, Status: http.StatusUnprocessableEntity, Code: "idempotency_key_reused", Told: true},
	{Err: ErrBackendUnavailable, Status: http.StatusServiceUnavailable, Code: "backend_unavailable",
		Detail: "a server this strategy needs did not answer; the instance's log has the details"},
}

var (
	outcomeOK      = Outcome{Status: http.StatusOK, Code: "ok"}
	outcomeTimeout = Outcome{Status: http.StatusServiceUnavailable, Code: "timeout", Detail: "the request ran out of time"}
)

// OutcomeOf maps err to its outcome: success for nil, the table's row for
// an error of the service's, a timeout for a context's end, and
// backend_unavailable for anything else.
func OutcomeOf(err error) Outcome {
	if err == nil {
		return outcomeOK
	}
	if o, ok := knownOutcome(err); ok {
		return o
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return outcomeTimeout
	}
	o, _ := knownOutcome(ErrBackendUnavailable)
	return o
}

// Outcomes lists the service's errors with their outcomes, in the order
// OutcomeOf matches them.
func Outcomes() []Outcome { return append([]Outcome(nil), outcomes...) }

// knownOutcome is the table's row for err, if err is one of the
// service's errors.
func knownOutcome(err error) (Outcome, bool) {
	for _, o := range outcomes {
		if errors.Is(err, o.Err) {
			return o, true
		}
	}
	return Outcome{}, false
}
