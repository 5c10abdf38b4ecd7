package scenario

import (
	"time"

	"github.com/seckill-lab/seckill/bench"
	"github.com/seckill-lab/seckill/internal/fault"
	"github.com/seckill-lab/seckill/stock"
	"github.com/seckill-lab/seckill/stock/catalog"
)

// All lists the scenarios, in the sources' order.
func All() []Scenario {
	return []Scenario{
		{
			Name:     "pause-holder",
			Seed:     "Chapter 1 \"Fencing token\" (Kleppmann): a GC pause longer than the lease",
			Story:    "the instance that just took the lock is SIGSTOPped for 1.6x the lock's TTL, watchdog on; its lease expires at the server and another instance takes the lock while the first, resumed, still works",
			Predicts: "unfenced locks oversell; the lease check narrows the window; fencing tokens refuse the stale holder: oversold 0",
			Topology: "single",
			// zookeeper and etcd keep a session that outlives a 1.6 s pause
			// (their minimum session and lease are 4 s and 2 s here): see
			// zk-session and etcd-lease for their stories.
			Strategies: []string{catalog.Redis, catalog.MySQLUnique},
			Load:       Load{Stock: 40, Requests: 80, Concurrency: 12, WorkDelay: 200 * time.Millisecond, LockTTL: time.Second, LockWait: 10 * time.Second},
			Short:      Load{Stock: 20, Requests: 40, Concurrency: 8, WorkDelay: 200 * time.Millisecond, LockTTL: time.Second, LockWait: 10 * time.Second},
			Strike: func(dir string, s catalog.Strategy, goods int64) bench.Striker {
				return holderStriker{key: stock.LockKey(goods), gap: 300 * time.Millisecond, strike: pauseHolder(dir, 1600*time.Millisecond)}
			},
		},
		{
			Name:       "redlock-restart",
			Seed:       "Chapter 1 RedLock 崩溃恢复: a granting node restarts without persistence",
			Story:      "right after an instance takes the Redlock lock, one of the nodes that granted it is restarted (empty: no persistence); a second client can now gather a majority while the first still works",
			Predicts:   "two holders; Redlock has no fencing token to refuse the stale one (AOF appendfsync always plus a restart delay longer than the TTL is the source's fix)",
			Topology:   "single",
			Strategies: []string{catalog.Redlock},
			// The work (1.5 s) outlasts the restarts (0.2-1.3 s measured
			// for one to three nodes), so the holder still works when the
			// second client gathers its majority.
			Load:  Load{Stock: 10, Requests: 20, Concurrency: 8, WorkDelay: 1500 * time.Millisecond, LockTTL: 5 * time.Second, LockWait: 20 * time.Second},
			Short: Load{Stock: 6, Requests: 12, Concurrency: 6, WorkDelay: 1500 * time.Millisecond, LockTTL: 5 * time.Second, LockWait: 20 * time.Second},
			Strike: func(dir string, s catalog.Strategy, goods int64) bench.Striker {
				return holderStriker{key: stock.LockKey(goods), gap: 500 * time.Millisecond, strike: restartGrantingNodes(dir, stock.LockKey(goods)), max: 5}
			},
		},
		{
			Name:       "redlock-restart-aof",
			Seed:       "Chapter 1 RedLock 崩溃恢复: the fix, AOF appendfsync always plus a delayed restart",
			Story:      "as redlock-restart, with Chapter 1's fix: every node writes its AOF with appendfsync always, and the granting nodes are killed (a crash) and started again only after the lock's TTL plus 1 s",
			Predicts:   "while the nodes are down nobody gathers a majority: purchases fail fast with 503 backend_unavailable, not a second holder; the nodes come back after the TTL: oversold 0 without any token, paid for in availability",
			Topology:   "single",
			Strategies: []string{catalog.Redlock},
			Load:       Load{Stock: 40, Requests: 80, Concurrency: 12, WorkDelay: 400 * time.Millisecond, LockTTL: 3 * time.Second, LockWait: 10 * time.Second},
			Short:      Load{Stock: 20, Requests: 40, Concurrency: 8, WorkDelay: 400 * time.Millisecond, LockTTL: 3 * time.Second, LockWait: 10 * time.Second},
			Strike: func(dir string, s catalog.Strategy, goods int64) bench.Striker {
				return holderStriker{key: stock.LockKey(goods), gap: 500 * time.Millisecond, max: 3,
					strike: crashGrantingNodes(dir, stock.LockKey(goods), 4*time.Second), setup: persistAll(dir)}
			},
		},
		{
			Name:       "zk-session",
			Seed:       "Chapter 1 zk 真正存在的问题: the holder's session expires during a pause",
			Story:      "the instance that just took the ZooKeeper lock is SIGSTOPped for 8 s, past its session timeout (4 s: ZooKeeper's minimum, 2 x tickTime); the server deletes its node and the next waiter takes the lock",
			Predicts:   "two holders; fencing by the node's czxid refuses the stale one",
			Topology:   "single",
			Strategies: []string{catalog.ZooKeeper},
			Load:       Load{Stock: 40, Requests: 60, Concurrency: 12, WorkDelay: 200 * time.Millisecond, LockTTL: 4 * time.Second, LockWait: 15 * time.Second},
			Short:      Load{Stock: 20, Requests: 30, Concurrency: 8, WorkDelay: 200 * time.Millisecond, LockTTL: 4 * time.Second, LockWait: 15 * time.Second},
			Strike: func(dir string, s catalog.Strategy, goods int64) bench.Striker {
				return holderStriker{key: stock.LockKey(goods), gap: time.Second, strike: pauseHolder(dir, 8*time.Second), max: 2}
			},
		},
		{
			Name:       "etcd-lease",
			Seed:       "Overview, etcd article, Chapter 1 etcd: the holder's lease expires during a pause",
			Story:      "the instance that just took the etcd lock is SIGSTOPped for 5 s, past its 2 s lease; the lease expires, its key goes, and the next waiter takes the lock",
			Predicts:   "two holders; fencing by the key's create revision refuses the stale one",
			Topology:   "single",
			Strategies: []string{catalog.Etcd},
			Load:       Load{Stock: 40, Requests: 60, Concurrency: 12, WorkDelay: 200 * time.Millisecond, LockTTL: 2 * time.Second, LockWait: 15 * time.Second},
			Short:      Load{Stock: 20, Requests: 30, Concurrency: 8, WorkDelay: 200 * time.Millisecond, LockTTL: 2 * time.Second, LockWait: 15 * time.Second},
			Strike: func(dir string, s catalog.Strategy, goods int64) bench.Striker {
				return holderStriker{key: stock.LockKey(goods), gap: time.Second, strike: pauseHolder(dir, 5*time.Second), max: 2}
			},
		},
		{
			Name: "consul-session",
			Seed: "Q&A 基于 Consul 做分布式锁: the holder's session is invalidated during a pause (Consul's lock-delay)",
			Story: "the instance that just took the Consul lock and read the stock is SIGSTOPped for 24 s, past its session's 10 s TTL (Consul's minimum; it may take up to twice that to invalidate it); " +
				"the session goes and the key is released. consul-nodelay runs with lock-delay 0, consul with Consul's default 15 s, during which nobody may take the key",
			Predicts: "lock-delay 0: the next waiter takes the key at once, two holders, oversold; the default lock-delay holds the key back for 15 s after the invalidation, " +
				"which covers a pause that ends within it, not a longer one; fencing by the key's index refuses the stale holder: oversold 0. " +
				"Over 60 s: Consul's 10 s minimum session TTL sets the pause",
			Topology:   "single",
			Strategies: []string{catalog.ConsulNoDelay, catalog.Consul},
			// The lock wait (25 s) stays under the bench's 30 s client
			// timeout: with the default lock-delay, waiters that need the
			// key before invalidation + 15 s get lock_timeout, the price.
			Load:  Load{Stock: 20, Requests: 30, Concurrency: 8, WorkDelay: 200 * time.Millisecond, LockTTL: 10 * time.Second, LockWait: 25 * time.Second},
			Short: Load{Stock: 8, Requests: 12, Concurrency: 6, WorkDelay: 200 * time.Millisecond, LockTTL: 10 * time.Second, LockWait: 25 * time.Second},
			Strike: func(dir string, s catalog.Strategy, goods int64) bench.Striker {
				// Struck once it has read the stock: what it writes when it
				// wakes is stale, whatever the timing of the acquisition.
				return holderStriker{key: stock.LockKey(goods), gap: time.Second, strike: pauseHolder(dir, 24*time.Second), max: 1, on: stock.EventRead}
			},
		},
		{
			Name:       "consul-leader",
			Seed:       "Q&A Consul: its lock lives in a raft cluster that must elect a new leader",
			Story:      "while purchases run, the leader of the 3-server Consul cluster is killed (SIGKILL) just after an instance took the lock, and started again 3 s later; the two others elect a new leader",
			Predicts:   "nothing oversells and no 2xx is lost; acquisitions wait (or fail with 503) during the election and resume; held sessions survive it",
			Topology:   "ha",
			Strategies: []string{catalog.Consul},
			Load:       Load{Stock: 100, Requests: 80, Concurrency: 8, WorkDelay: 50 * time.Millisecond, LockTTL: 10 * time.Second, LockWait: 10 * time.Second},
			Short:      Load{Stock: 100, Requests: 40, Concurrency: 8, WorkDelay: 50 * time.Millisecond, LockTTL: 10 * time.Second, LockWait: 10 * time.Second},
			Strike: func(dir string, s catalog.Strategy, goods int64) bench.Striker {
				return holderStriker{key: stock.LockKey(goods), gap: time.Second, strike: killLeader(dir, "consul", 3*time.Second), max: 1, after: 2 * time.Second}
			},
		},
		{
			Name:       "etcd-leader",
			Seed:       "Chapter 1 high availability: etcd survives the loss of its leader",
			Story:      "while purchases run, the etcd cluster's leader is killed (SIGKILL) just after an instance took the lock, and started again 3 s later; the two others elect a new leader",
			Predicts:   "nothing oversells and no 2xx is lost; sales dip while the cluster elects (about an election timeout) and resume",
			Topology:   "ha",
			Strategies: []string{catalog.Etcd},
			Load:       Load{Stock: 100, Requests: 120, Concurrency: 8, WorkDelay: 50 * time.Millisecond, LockTTL: 5 * time.Second, LockWait: 5 * time.Second},
			Short:      Load{Stock: 100, Requests: 60, Concurrency: 8, WorkDelay: 50 * time.Millisecond, LockTTL: 5 * time.Second, LockWait: 5 * time.Second},
			Strike: func(dir string, s catalog.Strategy, goods int64) bench.Striker {
				return holderStriker{key: stock.LockKey(goods), gap: time.Second, strike: killLeader(dir, "etcd", 3*time.Second), max: 1, after: 2 * time.Second}
			},
		},
		{
			Name:       "redis-failover",
			Seed:       "Q&A, Chapter 1: the Redis primary fails over before it replicated the lock",
			Story:      "right after an instance takes the redis lock (through Sentinel), the primary fails over while the key is on it only (the replication lag is emulated: the replica's copy is deleted first); the new primary has no lock, and a second client takes it",
			Predicts:   "two holders; fencing (each token is at least the server's clock in µs, so the new primary's tokens are newer) refuses the stale one",
			Topology:   "ha",
			Strategies: []string{catalog.Redis},
			// The work (1 s) outlasts the failover (0.5-1 s here), so the
			// holder is still working when the new primary grants the lock.
			Load:    Load{Stock: 10, Requests: 20, Concurrency: 8, WorkDelay: time.Second, LockTTL: 5 * time.Second, LockWait: 15 * time.Second},
			Short:   Load{Stock: 6, Requests: 12, Concurrency: 6, WorkDelay: time.Second, LockTTL: 5 * time.Second, LockWait: 15 * time.Second},
			Prepare: waitGoodReplica,
			Strike: func(dir string, s catalog.Strategy, goods int64) bench.Striker {
				return holderStriker{key: stock.LockKey(goods), gap: 2 * time.Second, strike: failoverBeforeReplication(dir, stock.LockKey(goods)), max: 1}
			},
		},
		{
			Name:       "partition-holder",
			Seed:       "Chapter 1 \"Fencing token\" (Kleppmann): a network delay or partition outlasts the lease",
			Story:      "the instance that just took the redis lock is cut off from Redis (a partition of its link only, through the fault proxy) for 2.5 s while its work takes 1.5 s; its watchdog cannot renew, the 1 s lease expires, another instance takes the lock, and the first, still working against MySQL, commits",
			Predicts:   "unfenced, two holders commit: oversold; the lease check cannot reach Redis and aborts (lease_lost); fencing refuses the stale holder: oversold 0",
			Topology:   "single",
			Proxy:      true,
			Strategies: []string{catalog.Redis},
			Load:       Load{Stock: 8, Requests: 16, Concurrency: 8, WorkDelay: 1500 * time.Millisecond, LockTTL: time.Second, LockWait: 30 * time.Second},
			Short:      Load{Stock: 5, Requests: 10, Concurrency: 6, WorkDelay: 1500 * time.Millisecond, LockTTL: time.Second, LockWait: 30 * time.Second},
			Strike: func(dir string, s catalog.Strategy, goods int64) bench.Striker {
				return holderStriker{key: stock.LockKey(goods), gap: 3 * time.Second, strike: linkHolder(dir, fault.Partition, "redis", 0, 2500*time.Millisecond), max: 2}
			},
		},
		{
			Name:       "slow-db",
			Seed:       "Chapter 1 锁超时: the business outlasts the lock's expiry (a slow database)",
			Story:      "the instance that just took the redis lock (no watchdog, 1 s TTL) gets +500 ms on every answer from MySQL for 3 s (latency on its link only, through the fault proxy); its transaction outlasts the TTL and the lock passes to another instance mid-transaction",
			Predicts:   "unfenced: two holders, oversold; the lease check sees the expiry and aborts (lease_lost); fencing: oversold 0",
			Topology:   "single",
			Proxy:      true,
			Strategies: []string{catalog.Redis},
			Load:       Load{Stock: 40, Requests: 80, Concurrency: 12, WorkDelay: 200 * time.Millisecond, LockTTL: time.Second, LockWait: 10 * time.Second, NoWatchdog: true},
			Short:      Load{Stock: 20, Requests: 40, Concurrency: 8, WorkDelay: 200 * time.Millisecond, LockTTL: time.Second, LockWait: 10 * time.Second, NoWatchdog: true},
			Strike: func(dir string, s catalog.Strategy, goods int64) bench.Striker {
				return holderStriker{key: stock.LockKey(goods), gap: 3 * time.Second, strike: linkHolder(dir, fault.Latency, "mysql", 500*time.Millisecond, 3*time.Second), max: 2}
			},
		},
		{
			Name:       "majority-loss",
			Seed:       "Chapter 1 high availability: a lock service is only as available as its quorum",
			Story:      "while purchases run, 2 of the 3 etcd members (or ZooKeeper nodes) are stopped for 4 s",
			Predicts:   "the lock is unavailable (503 backend_unavailable or lock_timeout) while the quorum is gone, nothing oversells, and sales resume after",
			Topology:   "ha",
			Strategies: []string{catalog.Etcd, catalog.ZooKeeper},
			Load:       Load{Stock: 100, Requests: 80, Concurrency: 8, WorkDelay: 100 * time.Millisecond, LockTTL: 10 * time.Second, LockWait: 2 * time.Second},
			Short:      Load{Stock: 100, Requests: 40, Concurrency: 8, WorkDelay: 100 * time.Millisecond, LockTTL: 10 * time.Second, LockWait: 2 * time.Second},
			Strike: func(dir string, s catalog.Strategy, goods int64) bench.Striker {
				prefix := "etcd"
				if s.Name == catalog.ZooKeeper {
					prefix = "zookeeper"
				}
				return holderStriker{key: stock.LockKey(goods), gap: time.Second, strike: stopMajority(dir, prefix, 4*time.Second), max: 1}
			},
		},
		{
			Name:       "redlock-clock",
			Seed:       "Chapter 1 RedLock 时钟变迁: a clock jump on a granting node",
			Story:      "right after an instance takes the Redlock lock, the clocks of granting nodes jump forward past the TTL (emulated: the key's TTL on those nodes is cut to 1 ms, as a jump would expire it; the lab never changes a clock) until the holder keeps a minority",
			Predicts:   "the key expires early; a second client gathers a majority: two holders, and no token to refuse the stale one",
			Topology:   "single",
			Strategies: []string{catalog.Redlock},
			Load:       Load{Stock: 40, Requests: 80, Concurrency: 12, WorkDelay: 400 * time.Millisecond, LockTTL: 5 * time.Second, LockWait: 10 * time.Second},
			Short:      Load{Stock: 20, Requests: 40, Concurrency: 8, WorkDelay: 400 * time.Millisecond, LockTTL: 5 * time.Second, LockWait: 10 * time.Second},
			Strike: func(dir string, s catalog.Strategy, goods int64) bench.Striker {
				return holderStriker{key: stock.LockKey(goods), gap: 500 * time.Millisecond, strike: jumpClocks(dir, stock.LockKey(goods)), max: 5}
			},
		},
		{
			Name:     "redis-restart-fencing",
			Seed:     "Chapter 1 Fencing token: the token source restarts",
			Story:    "right after an instance takes the redis lock, redis-1 (the lock and its token counter, no persistence) restarts empty",
			Predicts: "the lock is lost with the restart (two holders possible), and fenced purchases go on selling: the counter is re-seeded from the server's clock, above the goods' fence",
			Topology: "single",
			// On ha the redis lock lives on the Sentinel-managed primary,
			// not on redis-1: the restart would not touch it.
			ExactTopology: true,
			NotOn:         "there the redis lock lives on the Sentinel-managed primary, and this story restarts redis-1",
			Strategies:    []string{catalog.Redis},
			Load:          Load{Stock: 40, Requests: 80, Concurrency: 12, WorkDelay: 300 * time.Millisecond, LockTTL: 5 * time.Second, LockWait: 10 * time.Second},
			Short:         Load{Stock: 20, Requests: 40, Concurrency: 8, WorkDelay: 300 * time.Millisecond, LockTTL: 5 * time.Second, LockWait: 10 * time.Second},
			Strike: func(dir string, s catalog.Strategy, goods int64) bench.Striker {
				return holderStriker{key: stock.LockKey(goods), gap: time.Second, strike: restartComponent(dir, "redis-1"), max: 2}
			},
		},
		{
			Name:       "instance-crash",
			Seed:       "Chapter 1 锁超时防死锁: a holder that dies must not block the goods for ever",
			Story:      "the instance that just took the lock is killed with SIGKILL mid-critical-section and started again 1 s later",
			Predicts:   "the lock frees at its TTL (or its session's end), the others go on selling, no 2xx is lost and nothing oversells",
			Topology:   "single",
			Strategies: []string{catalog.Redis, catalog.Redlock, catalog.ZooKeeper, catalog.Etcd, catalog.MySQLUnique},
			Load:       Load{Stock: 40, Requests: 80, Concurrency: 12, WorkDelay: 100 * time.Millisecond, LockTTL: 2 * time.Second, LockWait: 10 * time.Second},
			Short:      Load{Stock: 20, Requests: 40, Concurrency: 8, WorkDelay: 100 * time.Millisecond, LockTTL: 2 * time.Second, LockWait: 10 * time.Second},
			Strike: func(dir string, s catalog.Strategy, goods int64) bench.Striker {
				return holderStriker{key: stock.LockKey(goods), gap: 500 * time.Millisecond, strike: killHolder(dir, time.Second), max: 1}
			},
		},
	}
}
