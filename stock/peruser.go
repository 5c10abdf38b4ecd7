package stock

// "One order per user" (一人一单), or more generally at most Limit orders
// per user and goods, is the rule a flash sale adds once the stock is
// safe: a user who clicks ten times, or runs a script, must not take ten
// units. The source articles do not cover it; it comes from practice (the
// hm-dianping Redis course's 一人一单). It is a second race of the same
// shape as the stock's: read the user's orders, check, insert.
//
// The service enforces Config.PerUserLimit where each strategy's stock is:
//   - the correct MySQL strategies (locks, row locks, version CAS,
//     sql-atomic) take a slot (goods, user, 0..Limit-1) in user_slots,
//     whose primary key is the guarantee: a purchase takes slot 0, or
//     slot 1 when 0 is taken, ... and is refused with ErrUserLimit when
//     all Limit slots are; two purchases that race for one slot meet at
//     the key, whatever lock they hold or do not hold;
//   - the flawed strategies check then insert (count the user's orders,
//     refuse at Limit, insert the order), as the naive code does: their
//     check races exactly as their stock read does;
//   - redis-atomic (and redis-stream) check the user's count in the same
//     Lua script that checks and takes the stock (UserLimitKey).

// MaxPerUserLimit bounds Config.PerUserLimit.
const MaxPerUserLimit = 1000

// UserRule is the per-user rule an order is sold under (Order.Rule; not
// stored).
type UserRule struct {
	// Limit is the most orders per user and goods; 0 = no rule.
	Limit int
	// CheckThenInsert counts the user's orders and inserts when the count
	// is below Limit, with no key behind it (the flawed strategies);
	// false takes a slot under user_slots' primary key.
	CheckThenInsert bool
}
