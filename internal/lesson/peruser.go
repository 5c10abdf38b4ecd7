package lesson

// Lesson 27, one order per user (一人一单): the rule a flash sale adds once
// the stock is safe, and a second race of the same shape. None of the
// sources covers it; the lesson says so and cites the practice it comes
// from, the hm-dianping (黑马点评) Redis course. The experiment is one
// bench with --per-user-limit 1 and users that repeat (--users): none
// counts the user's orders and then inserts, with nothing around the two
// steps; sql-atomic takes the user's slot under a primary key in MySQL;
// redis-atomic checks the user in the Lua script that takes the stock.

import (
	"context"
	"fmt"
	"strings"

	"github.com/seckill-lab/seckill/bench"
	"github.com/seckill-lab/seckill/stock"
	"github.com/seckill-lab/seckill/stock/catalog"
)

// perUserStrategies are lesson 27's: the naive check, the key, the Lua
// check.
var perUserStrategies = []string{catalog.None, catalog.SQLAtomic, catalog.RedisAtomic}

// perUserLoad is lesson 27's load: more requests than users, so every
// user asks several times, and a stock that covers them all, so the limit
// (not the stock) decides. users is its --users.
type perUserLoad struct {
	load
	users int
}

var (
	perUserFull  = perUserLoad{load{requests: 500, stock: 300, concurrency: 50}, 50}
	perUserShort = perUserLoad{load{requests: 120, stock: 100, concurrency: 20}, 20}
)

// onePerUser is lesson 27's experiment: one bench of perUserStrategies
// with a limit of 1 per user.
func onePerUser(ctx context.Context, r *runner) (Outcome, error) {
	ld := perUserFull
	if r.o.Short {
		ld = perUserShort
	}
	o := bench.Options{Strategies: perUserStrategies, Requests: ld.requests, Stock: ld.stock, Concurrency: ld.concurrency,
		Config: stock.Config{PerUserLimit: 1}, Users: ld.users}
	rep, err := r.bench(ctx, o, benchCmd(o))
	if err != nil {
		return Outcome{}, err
	}
	most := Figure{Title: "Most orders one user holds (limit 1)", Unit: "orders", Ref: 1, RefLabel: "the limit: 1"}
	past := Figure{Title: "Orders past the limit of 1 per user", Unit: "orders"}
	out := Outcome{Verdict: Reproduced}
	var parts []string
	for _, run := range rep.Runs {
		p := run.PerUser
		if p == nil {
			return Outcome{}, fmt.Errorf("the %s run has no per-user figures", run.Strategy)
		}
		most.Bars = append(most.Bars, FigureBar{Label: run.Strategy, Value: float64(p.MaxOrders), Flawed: flawed(run.Strategy)})
		past.Bars = append(past.Bars, FigureBar{Label: run.Strategy, Value: float64(p.OrdersOverLimit), Flawed: flawed(run.Strategy)})
		parts = append(parts, fmt.Sprintf("%s: %d orders for %d users, %d past the limit (%d users over it, at most %d orders each), oversold %d",
			run.Strategy, run.Orders, ld.users, p.OrdersOverLimit, p.UsersOverLimit, p.MaxOrders, run.Oversold))
		switch {
		case flawed(run.Strategy) && p.OrdersOverLimit == 0 && out.Verdict == Reproduced:
			out.Verdict, out.Why = NotReproduced, run.Strategy+" kept every user within the limit on this run: the race needs contention; rerun"
		case !flawed(run.Strategy) && (p.OrdersOverLimit > 0 || run.Orders > ld.users || run.Oversold > 0):
			out.Verdict, out.Why = NotReproduced, run.Strategy+" let a user past the limit (or oversold): a defect, see its report"
		}
	}
	r.figure(most)
	r.figure(past)
	out.Ours = fmt.Sprintf("%d requests from %d users, limit 1 per user: %s", ld.requests, ld.users, strings.Join(parts, "; "))
	return out, nil
}
