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
	"time"

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

var perUserLesson = Lesson{N: 27, Slug: "one-order-per-user", TitleZH: "一人一单：先查再插入的竞态", TitleEN: "One order per user: check, then insert, is a race",
	ShowsZH: "库存对了以后，秒杀还要限制每人只能买一单。朴素写法先查这个用户有没有订单、没有再下单：查和插入之间没有保护，同一用户的并发请求都查到 0，都下单了。" +
		"正确的做法把规则放到一个原子步骤里：MySQL 里用 (商品, 用户, 序号) 的唯一键，或者在扣库存的同一段 Lua 里检查并记下这个用户。来源文章没有讲这一课，它来自实践：黑马点评 Redis 课程的“一人一单”。",
	ShowsEN: "Once the stock is safe, a flash sale also limits each user to one order. The naive code asks whether the user has an order and inserts one when not: nothing guards the two steps, so a user's concurrent requests all find 0 and all buy. " +
		"The fix puts the rule in one atomic step: a unique key (goods, user, slot) in MySQL, or a check of the user in the same Lua script that takes the stock. The sources do not cover this lesson; it comes from practice: the hm-dianping (黑马点评) Redis course's 一人一单.",
	Seed:       "none of the sources covers a per-user limit; the practice is the hm-dianping (黑马点评) Redis course, 一人一单: “查询订单……判断是否存在……扣减库存……创建订单” (query, check, deduct, create: the race), then a lock per user and the Lua check in Redis",
	SeedFigure: "none given (not in the sources); practice: the check-then-insert lets one user buy several times under concurrency, a key or the Lua check makes it one",
	Look: inBench(1, "Invariants per strategy",
		"the column orders per user within limit: none FAILs (the link gives how many orders past the limit, held by how many users), sql-atomic and redis-atomic pass. In the Comparison table ok is at most the number of users for them, above it for none.",
		"orders per user within limit 这一列：none 是 FAIL（链接里有超出限制的订单数、涉及多少个用户），sql-atomic 和 redis-atomic 都通过。Comparison 表里这两者的 ok 不超过用户数，none 超过了。"),
	Estimate: 15 * time.Second, run: onePerUser}

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
