package scenario

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"
	"golang.org/x/sync/errgroup"

	"github.com/seckill-lab/seckill/bench"
	"github.com/seckill-lab/seckill/bench/fleet"
	"github.com/seckill-lab/seckill/internal/stack"
	"github.com/seckill-lab/seckill/lockimpl/redislock"
	"github.com/seckill-lab/seckill/lockimpl/redlock"
	"github.com/seckill-lab/seckill/stock"
)

// holderStriker watches the lock events of every instance and strikes the
// instance that just acquired the goods' lock: at most once per instance
// per run, one strike at a time, with a gap after each, so the others keep
// selling while one is struck.
type holderStriker struct {
	key string
	gap time.Duration
	// strike does the fault to inst and undoes it; it returns what it did
	// and how long the fault lasted.
	strike func(ctx context.Context, inst string) (string, time.Duration, error)
	max    int // strikes per run; 0 = one per instance
	// after holds the first strike until this long into the run, so the
	// run has a "before" to compare with.
	after time.Duration
	// on is the event of the holder that triggers the strike: by default
	// its acquisition (stock.EventAcquired); stock.EventRead strikes once
	// it has read the stock, so what it writes after the strike is stale.
	on stock.EventKind
	// setup, when set, runs before the load is watched; the func it
	// returns undoes it after the last strike.
	setup func(ctx context.Context) (undo func(ctx context.Context) error, err error)
}

func (h holderStriker) Run(ctx context.Context, fleet fleet.Fleet, t0 time.Time) (_ []bench.Strike, err error) {
	if h.setup != nil {
		undo, serr := h.setup(ctx)
		if serr != nil {
			return nil, serr
		}
		defer func() { err = errors.Join(err, undo(context.WithoutCancel(ctx))) }()
	}
	merged := make(chan stock.Event, 4096)
	var wg sync.WaitGroup
	for _, base := range fleet.Instances {
		ch, err := bench.SubscribeEvents(ctx, base, fleet.AdminToken)
		if err != nil {
			return nil, err
		}
		wg.Go(func() {
			for ev := range ch {
				select {
				case merged <- ev:
				case <-ctx.Done():
					return
				}
			}
		})
	}
	limit := h.max
	if limit == 0 {
		limit = len(fleet.Instances)
	}
	var strikes []bench.Strike
	struck := map[string]bool{}
	var next time.Time
	for len(strikes) < limit && err == nil {
		var ev stock.Event
		select {
		case <-ctx.Done():
			return strikes, nil
		case ev = <-merged:
		}
		if ev.Kind != cmp.Or(h.on, stock.EventAcquired) || ev.Key != h.key || struck[ev.Instance] || time.Now().Before(next) || time.Since(t0) < h.after {
			continue
		}
		struck[ev.Instance] = true
		at := time.Since(t0)
		var what string
		var d time.Duration
		// A strike's wait ends with ctx (the load ended, or the run was
		// cancelled), but its undo always runs: a paused instance is
		// resumed before the audit.
		what, d, err = h.strike(ctx, ev.Instance)
		strikes = append(strikes, bench.NewStrike(what, fmt.Sprintf("%s %s %s, token %d", ev.Instance, ev.Kind, ev.Key, ev.Token), at, d))
		next = time.Now().Add(h.gap)
	}
	return strikes, err
}

// pauseHolder SIGSTOPs the holder for d, then SIGCONTs it: a stop-the-world
// pause (a long GC) that also stops its lock's renewal.
func pauseHolder(dir string, d time.Duration) func(ctx context.Context, inst string) (string, time.Duration, error) {
	return func(ctx context.Context, inst string) (string, time.Duration, error) {
		if err := stack.Signal(dir, inst, syscall.SIGSTOP); err != nil {
			return "", 0, err
		}
		waited := sleepCtx(ctx, d)
		if err := stack.Signal(dir, inst, syscall.SIGCONT); err != nil {
			return "", 0, err
		}
		return fmt.Sprintf("pause %s for %s", inst, shown(waited, d)), min(waited, d), nil
	}
}

// killHolder SIGKILLs the holder mid-critical-section and starts it again
// after d.
func killHolder(dir string, d time.Duration) func(ctx context.Context, inst string) (string, time.Duration, error) {
	return func(ctx context.Context, inst string) (string, time.Duration, error) {
		t0 := time.Now()
		if err := stack.Signal(dir, inst, syscall.SIGKILL); err != nil {
			return "", 0, err
		}
		waited := sleepCtx(ctx, d)
		if err := stack.Start(context.WithoutCancel(ctx), dir, inst); err != nil {
			return "", 0, err
		}
		return fmt.Sprintf("kill -9 %s, start after %s", inst, shown(waited, d)), time.Since(t0), nil
	}
}

// restartGrantingNodes restarts (empty: the lab's Redis has no
// persistence) Redlock nodes that hold key's lock right now, until the
// holder keeps only a minority (2 of 5): then a second client can gather a
// majority while the first still works. When all five granted the lock,
// that is three restarts; the source's story, three granting nodes of five,
// needs one.
func restartGrantingNodes(dir, key string) func(ctx context.Context, inst string) (string, time.Duration, error) {
	return func(ctx context.Context, inst string) (string, time.Duration, error) {
		st, err := stack.Load(dir)
		if err != nil {
			return "", 0, err
		}
		t0 := time.Now()
		holding := holdingNodes(ctx, st, redlock.DefaultPrefix+key)
		keep := len(st.RedisAddrs()) / 2 // a minority
		if len(holding) <= keep {
			return fmt.Sprintf("%s's lock was on %d nodes only", inst, len(holding)), time.Since(t0), nil
		}
		restart := holding[:len(holding)-keep]
		// Begun, the restarts finish even when the load ends meanwhile: a
		// node left stopped would fail the audit (stack.Restart bounds
		// its own wait).
		var g errgroup.Group
		for _, name := range restart {
			g.Go(func() error { return stack.Restart(context.WithoutCancel(ctx), dir, name) })
		}
		if err := g.Wait(); err != nil {
			return "", 0, err
		}
		return fmt.Sprintf("restart %v empty (%d of %d granted %s's lock)", restart, len(holding), len(st.RedisAddrs()), inst), time.Since(t0), nil
	}
}

// failoverBeforeReplication makes the Redis primary fail over while the
// lock it just granted is on the primary only. The lab cannot slow Redis's
// replication down on loopback (it takes well under a millisecond), so it
// stands in for "acknowledged but not yet replicated" by deleting the lock
// key from the replica first (writes on a replica stay local), then asks
// the Sentinels to fail over. An emulation of the lag, labelled as such;
// the failover itself is real.
func failoverBeforeReplication(dir, key string) func(ctx context.Context, inst string) (string, time.Duration, error) {
	return func(ctx context.Context, inst string) (string, time.Duration, error) {
		st, err := loadHA(dir, "redis-failover")
		if err != nil {
			return "", 0, err
		}
		t0 := time.Now()
		replica, ok := st.Component("redis-replica")
		if !ok {
			return "", 0, fmt.Errorf("no redis-replica in the stack")
		}
		rc := redis.NewClient(&redis.Options{Addr: replica.Addr})
		defer rc.Close()
		full := redislock.DefaultPrefix + key
		if err := rc.ConfigSet(ctx, "replica-read-only", "no").Err(); err != nil {
			return "", 0, fmt.Errorf("replica: %w", err)
		}
		rc.Del(ctx, full)
		if err := rc.ConfigSet(ctx, "replica-read-only", "yes").Err(); err != nil {
			return "", 0, fmt.Errorf("replica: %w", err)
		}
		if err := stack.Failover(context.WithoutCancel(ctx), st, io.Discard); err != nil { // begun, it finishes
			return "", 0, err
		}
		return fmt.Sprintf("failover while %s held the lock, its key on the old primary only (lag emulated)", inst), time.Since(t0), nil
	}
}

// stopMajority SIGSTOPs members 1 and 2 of the etcd or ZooKeeper cluster
// for d, then resumes them: the cluster loses its quorum.
func stopMajority(dir, prefix string, d time.Duration) func(ctx context.Context, inst string) (string, time.Duration, error) {
	return func(ctx context.Context, inst string) (string, time.Duration, error) {
		if _, err := loadHA(dir, "majority-loss"); err != nil {
			return "", 0, err
		}
		members := []string{prefix + "-1", prefix + "-2"}
		for _, m := range members {
			if err := stack.Signal(dir, m, syscall.SIGSTOP); err != nil {
				return "", 0, err
			}
		}
		waited := sleepCtx(ctx, d)
		for _, m := range members {
			if err := stack.Signal(dir, m, syscall.SIGCONT); err != nil {
				return "", 0, err
			}
		}
		return fmt.Sprintf("stop %v (2 of 3) for %s", members, shown(waited, d)), min(waited, d), nil
	}
}

// jumpClocks emulates a forward clock jump on Redlock nodes that granted
// key's lock: Redis expires keys by its wall clock, so a jump of the TTL
// or more expires the key at once. The lab never changes a clock (and
// libfaketime does not run Debian's redis-server), so it applies the jump's
// effect: the key's remaining TTL on those nodes cut to 1 ms, on as many
// granting nodes as it takes to leave the holder a minority. An emulation,
// labelled as such.
func jumpClocks(dir, key string) func(ctx context.Context, inst string) (string, time.Duration, error) {
	return func(ctx context.Context, inst string) (string, time.Duration, error) {
		st, err := stack.Load(dir)
		if err != nil {
			return "", 0, err
		}
		t0 := time.Now()
		full := redlock.DefaultPrefix + key
		holding := holdingNodes(ctx, st, full)
		keep := len(st.RedisAddrs()) / 2
		if len(holding) <= keep {
			return fmt.Sprintf("%s's lock was on %d nodes only", inst, len(holding)), time.Since(t0), nil
		}
		jump := holding[:len(holding)-keep]
		for _, name := range jump {
			c, _ := st.Component(name)
			rc := redis.NewClient(&redis.Options{Addr: c.Addr, DialTimeout: time.Second})
			rc.PExpire(ctx, full, time.Millisecond)
			rc.Close()
		}
		return fmt.Sprintf("clock jump emulated on %v (%s's key expired early)", jump, inst), time.Since(t0), nil
	}
}

// restartComponent restarts the named component (a Redis comes back empty).
func restartComponent(dir, name string) func(ctx context.Context, inst string) (string, time.Duration, error) {
	return func(ctx context.Context, inst string) (string, time.Duration, error) {
		t0 := time.Now()
		// Begun, the restart finishes even when the load ends meanwhile.
		if err := stack.Restart(context.WithoutCancel(ctx), dir, name); err != nil {
			return "", 0, err
		}
		return fmt.Sprintf("restart %s (empty) while %s held the lock", name, inst), time.Since(t0), nil
	}
}

// holdingNodes names the Redlock nodes (redis-K) on which key is set now.
func holdingNodes(ctx context.Context, st *stack.State, key string) []string {
	var out []string
	for i, a := range st.RedisAddrs() {
		c := redis.NewClient(&redis.Options{Addr: a, DialTimeout: time.Second})
		n, err := c.Exists(ctx, key).Result()
		c.Close()
		if err == nil && n > 0 {
			out = append(out, fmt.Sprintf("redis-%d", i+1))
		}
	}
	return out
}

// crashGrantingNodes is restartGrantingNodes with Chapter 1's fix: the
// granting nodes are killed (SIGKILL, a crash: nothing is flushed on the
// way down) and started again only after delay, longer than the lock's
// TTL; with persistence (see persistAll) they come back with the keys
// they had, and by then the holder's lease has run out anyway.
func crashGrantingNodes(dir, key string, delay time.Duration) func(ctx context.Context, inst string) (string, time.Duration, error) {
	return func(ctx context.Context, inst string) (string, time.Duration, error) {
		st, err := stack.Load(dir)
		if err != nil {
			return "", 0, err
		}
		t0 := time.Now()
		holding := holdingNodes(ctx, st, redlock.DefaultPrefix+key)
		keep := len(st.RedisAddrs()) / 2
		if len(holding) <= keep {
			return fmt.Sprintf("%s's lock was on %d nodes only", inst, len(holding)), time.Since(t0), nil
		}
		crash := holding[:len(holding)-keep]
		for _, name := range crash {
			if err := stack.Signal(dir, name, syscall.SIGKILL); err != nil {
				return "", 0, err
			}
		}
		waited := sleepCtx(ctx, delay)
		var g errgroup.Group
		for _, name := range crash {
			g.Go(func() error { return stack.Start(context.WithoutCancel(ctx), dir, name) })
		}
		if err := g.Wait(); err != nil {
			return "", 0, err
		}
		return fmt.Sprintf("kill -9 %v, start after %s with AOF (%d of %d granted %s's lock)", crash, shown(waited, delay), len(holding), len(st.RedisAddrs()), inst), time.Since(t0), nil
	}
}

// persistAll turns AOF with appendfsync always on for every Redlock node,
// and returns the undo.
func persistAll(dir string) func(ctx context.Context) (func(ctx context.Context) error, error) {
	return func(ctx context.Context) (func(ctx context.Context) error, error) {
		st, err := stack.Load(dir)
		if err != nil {
			return nil, err
		}
		var names []string
		for i := range st.RedisAddrs() {
			names = append(names, fmt.Sprintf("redis-%d", i+1))
		}
		set := func(ctx context.Context, p stack.Persistence) error {
			var errs []error
			for _, n := range names {
				errs = append(errs, stack.SetRedisPersistence(ctx, dir, n, p))
			}
			return errors.Join(errs...)
		}
		if err := set(ctx, stack.PersistAlways); err != nil {
			return nil, errors.Join(err, set(context.WithoutCancel(ctx), stack.PersistNone))
		}
		return func(ctx context.Context) error { return set(ctx, stack.PersistNone) }, nil
	}
}

// killLeader kills (SIGKILL) the leader of a quorum group (the members
// named prefix-K) and starts it again after d: the others elect a new leader meanwhile.
func killLeader(dir, prefix string, d time.Duration) func(ctx context.Context, inst string) (string, time.Duration, error) {
	return func(ctx context.Context, inst string) (string, time.Duration, error) {
		st, err := loadHA(dir, "a leader kill")
		if err != nil {
			return "", 0, err
		}
		leader, err := stack.Leader(ctx, st, prefix)
		if err != nil {
			return "", 0, err
		}
		t0 := time.Now()
		if err := stack.Signal(dir, leader, syscall.SIGKILL); err != nil {
			return "", 0, err
		}
		waited := sleepCtx(ctx, d)
		if err := stack.Start(context.WithoutCancel(ctx), dir, leader); err != nil {
			return "", 0, err
		}
		return fmt.Sprintf("kill -9 the %s leader %s, start it after %s", prefix, leader, shown(waited, d)), time.Since(t0), nil
	}
}

// linkHolder makes a link fault (fault.Partition, or fault.Latency of
// delay) between the holder and server (a server or a group: redis, mysql)
// for d, through the fault proxy, then heals it. The holder itself keeps
// running: only its link is cut or slowed.
func linkHolder(dir, kind, server string, delay, d time.Duration) func(ctx context.Context, inst string) (string, time.Duration, error) {
	return func(ctx context.Context, inst string) (string, time.Duration, error) {
		did, end, err := stack.Begin(ctx, dir, stack.Fault{Kind: kind, Target: inst + "/" + server, Delay: delay})
		if err != nil {
			return "", 0, err
		}
		waited := sleepCtx(ctx, d)
		if err := end(context.WithoutCancel(ctx)); err != nil {
			return "", 0, err
		}
		return fmt.Sprintf("%s for %s", did, shown(waited, d)), min(waited, d), nil
	}
}

// waitGoodReplica waits, before a run's load, until the Sentinels see a
// replica they could promote (flags "slave", master link ok): a run that
// follows another's failover would otherwise strike while the demoted
// primary is still becoming a replica, and the failover would wait seconds
// for it (NOGOODSLAVE) while the holder finishes.
func waitGoodReplica(ctx context.Context, dir string) error {
	st, err := stack.Load(dir)
	if err != nil {
		return err
	}
	if !st.HA() {
		return fmt.Errorf("redis-failover needs the ha topology: seckill down, then seckill up --topology ha")
	}
	sc := redis.NewSentinelClient(&redis.Options{Addr: st.SentinelAddrs()[0]})
	defer sc.Close()
	deadline := time.Now().Add(30 * time.Second)
	for {
		reps, err := sc.Replicas(ctx, stack.SentinelMaster).Result()
		if err == nil {
			for _, r := range reps {
				if r["flags"] == "slave" && r["master-link-status"] == "ok" {
					return nil
				}
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the Sentinels see no healthy replica after 30s (last answer %v, %v)", reps, err)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// sleepCtx waits d, or less when ctx is done first, and returns how long it
// waited: a strike's wait ends with its run, its undo never does.
func sleepCtx(ctx context.Context, d time.Duration) time.Duration {
	t0 := time.Now()
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
	return time.Since(t0)
}

// shown is the wait a strike description gives: the planned d when the
// wait ran its course, else how long it lasted, to the millisecond.
func shown(waited, d time.Duration) time.Duration {
	if waited >= d {
		return d
	}
	return waited.Round(time.Millisecond)
}

// loadHA loads the stack in dir, which a strike (what) needs in the ha
// topology.
func loadHA(dir, what string) (*stack.State, error) {
	st, err := stack.Load(dir)
	if err != nil {
		return nil, err
	}
	if !st.HA() {
		return nil, fmt.Errorf("%s needs the ha topology: seckill down, then seckill up --topology ha", what)
	}
	return st, nil
}
