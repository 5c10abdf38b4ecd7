package bench

import (
	"fmt"
	"slices"
	"strconv"
)

// The per-user limit ("one order per user", stock.Config.PerUserLimit):
// with Options.Users the requests draw their user ids from that many
// users (userOf, from the request id, so the audit finds each order's
// user again), and with Options.Config.PerUserLimit the service refuses a user's
// purchase past the limit (409 user_limit). The run then checks that no
// user holds more orders than the limit (InvPerUserLimit) and reports the
// counts (RunResult.PerUser).

// InvPerUserLimit is the per-user invariant's name: no user has more
// orders of the goods than Options.Config.PerUserLimit. It is checked only in
// runs with a limit.
const InvPerUserLimit = "orders_per_user_within_limit"

// MaxUsers bounds Options.Users.
const MaxUsers = 10_000_000

// userOf is the user id of the request with id requestID: "u-" + the
// request id when every request is its own user (users 0), else one of
// users ids ("u<k>"), drawn by hashing the request id (seeded with it):
// FNV-1a, then SplitMix64's finalizer, whose low bits are uniform (FNV's
// own are not, over ids that differ in their last digits).
func userOf(requestID string, users int) string {
	if users <= 0 {
		return "u-" + requestID
	}
	z := hashString(requestID)
	z = (z ^ z>>30) * 0xbf58476d1ce4e5b9
	z = (z ^ z>>27) * 0x94d049bb133111eb
	z ^= z >> 31
	return "u" + strconv.FormatUint(z%uint64(users), 10)
}

// PerUser is what a run with a per-user limit sold per user.
type PerUser struct {
	// Limit is the per-user limit the service enforced; Users the users
	// the requests were drawn from (0 = one per request).
	Limit int `json:"limit"`
	Users int `json:"users"`
	// Buyers are the users with at least one order; MaxOrders is the most
	// orders one user holds.
	Buyers    int `json:"buyers"`
	MaxOrders int `json:"max_orders"`
	// UsersOverLimit are the users with more than Limit orders, and
	// OrdersOverLimit the orders past the limit they hold in all.
	UsersOverLimit  int `json:"users_over_limit"`
	OrdersOverLimit int `json:"orders_over_limit"`
}

// perUser counts the orders (their request ids) per user and checks them
// against limit.
func perUser(orderIDs []string, users, limit int) (PerUser, Invariant) {
	per := map[string]int{}
	for _, id := range orderIDs {
		per[userOf(id, users)]++
	}
	p := PerUser{Limit: limit, Users: users, Buyers: len(per)}
	for _, n := range per {
		p.MaxOrders = max(p.MaxOrders, n)
		if n > limit {
			p.UsersOverLimit++
			p.OrdersOverLimit += n - limit
		}
	}
	inv := Invariant{Name: InvPerUserLimit, Applicable: true, Pass: p.OrdersOverLimit == 0, Count: p.OrdersOverLimit,
		Detail: fmt.Sprintf("%d orders past the limit of %d per user, held by %d of %d buyers (most orders of one user: %d)",
			p.OrdersOverLimit, limit, p.UsersOverLimit, p.Buyers, p.MaxOrders)}
	return p, inv
}

// evidenceColumns are the report's invariant columns: evidenceInvariants,
// and the per-user limit's when a run had one.
func evidenceColumns(rep *Report) []string {
	for _, r := range rep.Runs {
		if r.PerUser != nil {
			return append(slices.Clone(evidenceInvariants), InvPerUserLimit)
		}
	}
	return evidenceInvariants
}
