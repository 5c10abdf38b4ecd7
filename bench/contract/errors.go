package contract

import (
	"errors"
	"fmt"
	"strconv"
	"unicode"
	"unicode/utf8"
)

// What a call can end in besides success; compare with errors.Is. Every
// error of the package is a *CallError matching exactly one of them.
var (
	// ErrViolation: the service answered something the contract does not
	// allow: a status it does not give the call, a body that is not JSON,
	// misses a required property, has one it does not name, a wrong type
	// or bound, an echo of another goods, an unknown purchase code.
	ErrViolation = errors.New("the answer breaks the stock service contract")
	// ErrUnreachable: no answer came back (refused, reset, timed out, the
	// context ended); CallError.Err says why.
	ErrUnreachable = errors.New("the service did not answer")
	// ErrRefused: the service refused the call with an error answer the
	// contract gives it (401 unauthorized, 503 backend_unavailable...);
	// CallError.Code is the answer's code.
	ErrRefused = errors.New("the service refused the call")
)

// bodyShown is the most bytes of a body an error's text quotes.
const bodyShown = 300

// CallError is a call that did not end as the contract says a successful
// one does.
type CallError struct {
	// Call names the call as the contract does, with the goods:
	// "GET /admin/orders?goods_id=1".
	Call   string
	Method string
	// URL is the request's URL; "" for CheckPurchase, which sees only
	// the answer.
	URL string
	// Status is the answer's status; 0 when none came back.
	Status int
	// Body is the answer's body, as it came.
	Body []byte
	// Reason says what is wrong, following "answer" ("misses
	// \"request_ids\""), or why no answer came.
	Reason string
	// Code and Detail are a refusal's error code and its detail.
	Code, Detail string
	// Err is the transport's error of an unreachable service.
	Err error

	kind error // ErrViolation, ErrUnreachable or ErrRefused
}

func (e *CallError) Error() string {
	if e.Status == 0 {
		return fmt.Sprintf("contract: %s: %s", e.Call, e.Reason)
	}
	return fmt.Sprintf("contract: %s: %d answer %s: %s", e.Call, e.Status, e.Reason, showBody(e.Body))
}

// Is matches the error's sentinel: ErrViolation, ErrUnreachable or
// ErrRefused.
func (e *CallError) Is(target error) bool { return target == e.kind }

// Unwrap is the transport's error, for an unreachable service.
func (e *CallError) Unwrap() error { return e.Err }

// showBody is body for an error's text: empty, as is when it is short
// printable UTF-8, quoted otherwise, cut at bodyShown bytes.
func showBody(body []byte) string {
	if len(body) == 0 {
		return "body empty"
	}
	b, cut := body, ""
	if len(b) > bodyShown {
		b, cut = b[:bodyShown], " (cut; "+strconv.Itoa(len(body))+" bytes)"
	}
	if printable(b) {
		return "body " + string(b) + cut
	}
	return "body " + strconv.Quote(string(b)) + cut
}

func printable(b []byte) bool {
	for len(b) > 0 {
		r, n := utf8.DecodeRune(b)
		if r == utf8.RuneError && n <= 1 || !unicode.IsPrint(r) {
			return false
		}
		b = b[n:]
	}
	return true
}
