package scenario

import (
	"time"

	"github.com/seckill-lab/seckill/bench"
	"github.com/seckill-lab/seckill/stock"
)

// All lists the scenarios, in the seeds' order.
func All() []Scenario {
	return []Scenario{
		{
			Name:     "pause-holder",
			Seed:     "003 \"Fencing token\" (Kleppmann): a GC pause longer than the lease",
			Story:    "the instance that just took the lock is SIGSTOPped for 1.6x the lock's TTL, watchdog on; its lease expires at the server and another instance takes the lock while the first, resumed, still works",
			Predicts: "unfenced locks oversell; the lease check narrows the window; fencing tokens refuse the stale holder: oversold 0",
			Topology: "single",
			// zookeeper and etcd keep a session that outlives a 1.6 s pause
			// (their minimum session and lease are 4 s and 2 s here): see
			// zk-session and etcd-lease for their stories.
			Strategies: []string{stock.Redis, stock.MySQLUnique},
			Load:       Load{Stock: 40, Requests: 80, Concurrency: 12, WorkDelay: 200 * time.Millisecond, LockTTL: time.Second, LockWait: 10 * time.Second},
			Short:      Load{Stock: 20, Requests: 40, Concurrency: 8, WorkDelay: 200 * time.Millisecond, LockTTL: time.Second, LockWait: 10 * time.Second},
			Strike: func(dir string, s stock.Strategy, goods int64) bench.Striker {
				return holderStriker{key: stock.LockKey(goods), gap: 300 * time.Millisecond, strike: pauseHolder(dir, 1600*time.Millisecond)}
			},
		},
		{
			Name:       "instance-crash",
			Seed:       "003 锁超时防死锁: a holder that dies must not block the goods for ever",
			Story:      "the instance that just took the lock is killed with SIGKILL mid-critical-section and started again 1 s later",
			Predicts:   "the lock frees at its TTL (or its session's end), the others go on selling, no 2xx is lost and nothing oversells",
			Topology:   "single",
			Strategies: []string{stock.Redis, stock.Redlock, stock.ZooKeeper, stock.Etcd, stock.MySQLUnique},
			Load:       Load{Stock: 40, Requests: 80, Concurrency: 12, WorkDelay: 100 * time.Millisecond, LockTTL: 2 * time.Second, LockWait: 10 * time.Second},
			Short:      Load{Stock: 20, Requests: 40, Concurrency: 8, WorkDelay: 100 * time.Millisecond, LockTTL: 2 * time.Second, LockWait: 10 * time.Second},
			Strike: func(dir string, s stock.Strategy, goods int64) bench.Striker {
				return holderStriker{key: stock.LockKey(goods), gap: 500 * time.Millisecond, strike: killHolder(dir, time.Second), max: 1}
			},
		},
	}
}
