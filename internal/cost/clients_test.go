package cost_test

import (
	"context"
	"database/sql"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/go-zookeeper/zk"
	"github.com/hashicorp/consul/api"
	"github.com/redis/go-redis/v9"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/seckill-lab/seckill/bench/costmodel"
	"github.com/seckill-lab/seckill/internal/cost"
	"github.com/seckill-lab/seckill/internal/testenv"
	"github.com/seckill-lab/seckill/lockimpl/consullock"
	"github.com/seckill-lab/seckill/lockimpl/etcdlock"
	"github.com/seckill-lab/seckill/stock/catalog"
	"github.com/seckill-lab/seckill/stock/phase"
	"github.com/seckill-lab/seckill/stock/sqlstore"
)

// step is one client call and what the meter must count for it, in the
// phase of its context.
type step struct {
	name string
	do   func(ctx context.Context) error
	want cost.Counts
}

// runSteps runs each step with its context marked Held and checks what m
// (the meter of the step's client) counted there.
func runSteps(t *testing.T, m *cost.Meter, server cost.Server, steps []step) {
	t.Helper()
	for _, s := range steps {
		t.Run(s.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			before := m.Snapshot()
			if err := s.do(phase.With(ctx, phase.Held)); err != nil {
				t.Fatal(err)
			}
			d := m.Snapshot().Sub(before)
			if got := d[server][cost.Held]; got != s.want {
				t.Errorf("%s held: got %+v, want %+v (all: %v)", server, got, s.want, d)
			}
		})
	}
}

func key(t *testing.T) string { return fmt.Sprintf("cost-test/%s/%d", t.Name(), rand.Int64()) }

// meteredRedis is a client of the test Redis counted by a new Meter.
func meteredRedis(t *testing.T) (*redis.Client, *cost.Meter) {
	t.Helper()
	c := redis.NewClient(&redis.Options{Addr: testenv.List(t, testenv.RedisAddrs)[0], PoolSize: 8})
	t.Cleanup(func() { _ = c.Close() })
	if err := c.Ping(context.Background()).Err(); err != nil {
		testenv.Unavailable(t, "redis", err)
	}
	m := cost.NewMeter()
	c.AddHook(m.RedisHook())
	return c, m
}

func TestRedisHook(t *testing.T) {
	c, m := meteredRedis(t)
	k := key(t)
	runSteps(t, m, catalog.ServerRedis, []step{
		{"SET", func(ctx context.Context) error { return c.Set(ctx, k, "v", time.Minute).Err() }, cost.Counts{RoundTrips: 1, Writes: 1}},
		{"GET", func(ctx context.Context) error { return c.Get(ctx, k).Err() }, cost.Counts{RoundTrips: 1}},
		{"GET missing (redis.Nil)", func(ctx context.Context) error { return ignoreNil(c.Get(ctx, k+"-none").Err()) }, cost.Counts{RoundTrips: 1}},
		{"PUBLISH", func(ctx context.Context) error { return c.Publish(ctx, k, "m").Err() }, cost.Counts{RoundTrips: 1}},
		{"EVAL", func(ctx context.Context) error {
			return c.Eval(ctx, "return redis.call('PEXPIRE', KEYS[1], 60000)", []string{k}).Err()
		}, cost.Counts{RoundTrips: 1, Writes: 1}},
		{"EVALSHA NOSCRIPT", func(ctx context.Context) error {
			if err := c.EvalSha(ctx, strings.Repeat("0", 40), []string{k}).Err(); err == nil {
				return fmt.Errorf("EVALSHA of an unknown script succeeded")
			}
			return nil
		}, cost.Counts{RoundTrips: 1}},
		{"pipeline SET+GET", func(ctx context.Context) error {
			_, err := c.Pipelined(ctx, func(p redis.Pipeliner) error {
				p.Set(ctx, k, "w", time.Minute)
				p.Get(ctx, k)
				return nil
			})
			return err
		}, cost.Counts{RoundTrips: 1, Writes: 1}},
		{"DEL", func(ctx context.Context) error { return c.Del(ctx, k).Err() }, cost.Counts{RoundTrips: 1, Writes: 1}},
	})
}

// TestRedisFanOut: requests of one purchase phase sent at once (Redlock
// asks every master in parallel) are each counted, and all but the first
// are marked overlapped, so that the critical path takes them as one round
// trip; a request sent after them is not. The critical path used to count
// Redlock's three masters as three round trips per step, and predicted
// half of what it sold (measured/predicted 1.63 at cross-zone).
func TestRedisFanOut(t *testing.T) {
	c, m := meteredRedis(t)
	k := key(t)
	ctx := phase.With(context.Background(), phase.Release)
	// Three BLPOPs that wait on an empty list (go-redis rounds the 0.3 s
	// up to Redis's 1 s): in flight together for sure. Then one DEL on its
	// own.
	errs := make(chan error, 3)
	for range 3 {
		go func() { errs <- ignoreNil(c.BLPop(ctx, 300*time.Millisecond, k+"-empty").Err()) }()
	}
	for range 3 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	if err := c.Del(ctx, k).Err(); err != nil {
		t.Fatal(err)
	}
	got := m.Snapshot()[catalog.ServerRedis][cost.Release]
	if want := (cost.Counts{RoundTrips: 4, Writes: 1, Overlapped: 2}); got != want {
		t.Errorf("counts %+v, want %+v", got, want)
	}
	path := costmodel.CriticalPath(m.Snapshot().Per(1), true)
	if rt := path.RoundTrips[catalog.ServerRedis]; rt != 2 {
		t.Errorf("critical path %v round trips, want 2 (the three at once, then the DEL)", rt)
	}
}

func ignoreNil(err error) error {
	if err == redis.Nil {
		return nil
	}
	return err
}

func TestEtcdInterceptors(t *testing.T) {
	m := cost.NewMeter()
	cfg := etcdlock.ClientConfig(context.Background(), testenv.List(t, testenv.EtcdEndpoints))
	cfg.DialOptions = append(cfg.DialOptions, m.EtcdDialOptions()...)
	c, err := clientv3.New(cfg)
	if err != nil {
		testenv.Unavailable(t, "etcd", err)
	}
	t.Cleanup(func() { _ = c.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := c.Get(ctx, "health-probe"); err != nil {
		testenv.Unavailable(t, "etcd", err)
	}
	k := key(t)
	runSteps(t, m, catalog.ServerEtcd, []step{
		{"Put", func(ctx context.Context) error { _, err := c.Put(ctx, k, "v"); return err }, cost.Counts{RoundTrips: 1, Writes: 1}},
		{"Get", func(ctx context.Context) error { _, err := c.Get(ctx, k); return err }, cost.Counts{RoundTrips: 1}},
		{"Txn with a put", func(ctx context.Context) error {
			_, err := c.Txn(ctx).If(clientv3.Compare(clientv3.CreateRevision(k), "=", 0)).Then(clientv3.OpPut(k, "w")).Else(clientv3.OpGet(k)).Commit()
			return err
		}, cost.Counts{RoundTrips: 1, Writes: 1}},
		{"read-only Txn", func(ctx context.Context) error {
			_, err := c.Txn(ctx).If(clientv3.Compare(clientv3.CreateRevision(k), "=", 0)).Then(clientv3.OpGet(k)).Commit()
			return err
		}, cost.Counts{RoundTrips: 1}},
		{"LeaseGrant and LeaseRevoke", func(ctx context.Context) error {
			l, err := c.Grant(ctx, 5)
			if err != nil {
				return err
			}
			_, err = c.Revoke(ctx, l.ID)
			return err
		}, cost.Counts{RoundTrips: 2, Writes: 2}},
		{"Delete", func(ctx context.Context) error { _, err := c.Delete(ctx, k); return err }, cost.Counts{RoundTrips: 1, Writes: 1}},
	})
}

func TestMySQLConnector(t *testing.T) {
	mc, err := mysql.ParseDSN(testenv.Get(t, testenv.MySQLDSN))
	if err != nil {
		t.Fatal(err)
	}
	sqlstore.ConfigureMySQL(mc) // as the instances connect: one round trip per statement, batches allowed
	conn, err := mysql.NewConnector(mc)
	if err != nil {
		t.Fatal(err)
	}
	m := cost.NewMeter()
	db := sql.OpenDB(m.Connector(conn))
	t.Cleanup(func() { _ = db.Close() })
	db.SetMaxOpenConns(1)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := db.PingContext(ctx); err != nil {
		testenv.Unavailable(t, "mysql", err)
	}
	if _, err := db.ExecContext(ctx, "CREATE TABLE IF NOT EXISTS cost_probe (id BIGINT PRIMARY KEY, n BIGINT NOT NULL)"); err != nil {
		t.Fatal(err)
	}
	id := rand.Int64N(1 << 60)
	if _, err := db.ExecContext(ctx, "INSERT INTO cost_probe (id, n) VALUES (?, 0)", id); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _, _ = db.Exec("DELETE FROM cost_probe WHERE id = ?", id) })
	inTx := func(ctx context.Context, stmts ...string) error {
		tx, err := db.BeginTx(ctx, nil)
		if err != nil {
			return err
		}
		for _, s := range stmts {
			if _, err := tx.ExecContext(ctx, s, id); err != nil {
				_ = tx.Rollback()
				return err
			}
		}
		return tx.Commit()
	}
	runSteps(t, m, catalog.ServerMySQL, []step{
		// BEGIN, UPDATE, COMMIT: the commit makes the write durable
		// (one fsync with innodb_flush_log_at_trx_commit=1).
		{"transaction with one UPDATE", func(ctx context.Context) error {
			return inTx(ctx, "UPDATE cost_probe SET n = n + 1 WHERE id = ?")
		}, cost.Counts{RoundTrips: 3, Writes: 1}},
		{"read-only transaction", func(ctx context.Context) error {
			return inTx(ctx, "SELECT n FROM cost_probe WHERE id = ?")
		}, cost.Counts{RoundTrips: 3}},
		{"autocommit UPDATE", func(ctx context.Context) error {
			_, err := db.ExecContext(ctx, "UPDATE cost_probe SET n = n + 1 WHERE id = ?", id)
			return err
		}, cost.Counts{RoundTrips: 1, Writes: 1}},
		{"failed INSERT (duplicate key)", func(ctx context.Context) error {
			if _, err := db.ExecContext(ctx, "INSERT INTO cost_probe (id, n) VALUES (?, 0)", id); err == nil {
				return fmt.Errorf("a duplicate INSERT succeeded")
			}
			return nil
		}, cost.Counts{RoundTrips: 1}},
		// sqlstore.SQLPurchase's shape: a whole transaction in one batch is
		// one round trip and one durable write, and holds no row lock
		// past it.
		{"transaction in one batch", func(ctx context.Context) error {
			_, err := db.ExecContext(ctx, "BEGIN; UPDATE cost_probe SET n = n + 1 WHERE id = ?; UPDATE cost_probe SET n = n + 1 WHERE id = ?; COMMIT", id, id)
			return err
		}, cost.Counts{RoundTrips: 1, Writes: 1}},
		{"rolled back UPDATE", func(ctx context.Context) error {
			tx, err := db.BeginTx(ctx, nil)
			if err != nil {
				return err
			}
			if _, err := tx.ExecContext(ctx, "UPDATE cost_probe SET n = n + 1 WHERE id = ?", id); err != nil {
				return err
			}
			return tx.Rollback()
		}, cost.Counts{RoundTrips: 3}},
	})
	// The row's serial section: after the statement that locks the row,
	// up to the commit.
	before := m.Snapshot()
	if err := inTx(phase.With(ctx, phase.Held), "SELECT n FROM cost_probe WHERE id = ? FOR UPDATE", "UPDATE cost_probe SET n = n + 1 WHERE id = ?"); err != nil {
		t.Fatal(err)
	}
	if got, want := m.Snapshot().Sub(before)[catalog.ServerMySQL][cost.RowLocked], (cost.Counts{RoundTrips: 2, Writes: 1}); got != want {
		t.Errorf("row locked by SELECT ... FOR UPDATE: got %+v, want %+v (UPDATE and COMMIT)", got, want)
	}
}

func TestConsulTransport(t *testing.T) {
	m := cost.NewMeter()
	c, err := consullock.NewClient(testenv.List(t, testenv.ConsulAddrs), nil, m.ConsulTransport)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Status().Leader(); err != nil {
		testenv.Unavailable(t, "consul", err)
	}
	k := key(t)
	var index uint64
	var session string
	wo := func(ctx context.Context) *api.WriteOptions { return (&api.WriteOptions{}).WithContext(ctx) }
	qo := func(ctx context.Context) *api.QueryOptions { return (&api.QueryOptions{}).WithContext(ctx) }
	runSteps(t, m, catalog.ServerConsul, []step{
		{"KV put", func(ctx context.Context) error {
			_, err := c.KV().Put(&api.KVPair{Key: k, Value: []byte("v")}, wo(ctx))
			return err
		}, cost.Counts{RoundTrips: 1, Writes: 1}},
		{"KV get", func(ctx context.Context) error {
			_, meta, err := c.KV().Get(k, qo(ctx))
			if err == nil {
				index = meta.LastIndex
			}
			return err
		}, cost.Counts{RoundTrips: 1}},
		{"blocking KV get", func(ctx context.Context) error {
			_, _, err := c.KV().Get(k, (&api.QueryOptions{WaitIndex: index, WaitTime: 10 * time.Millisecond}).WithContext(ctx))
			return err
		}, cost.Counts{Waits: 1}},
		{"session create", func(ctx context.Context) error {
			var err error
			session, _, err = c.Session().Create(&api.SessionEntry{TTL: "10s", Behavior: api.SessionBehaviorDelete}, wo(ctx))
			return err
		}, cost.Counts{RoundTrips: 1, Writes: 1}},
		{"session renew", func(ctx context.Context) error { _, _, err := c.Session().Renew(session, wo(ctx)); return err }, cost.Counts{RoundTrips: 1}},
		{"session destroy", func(ctx context.Context) error { _, err := c.Session().Destroy(session, wo(ctx)); return err }, cost.Counts{RoundTrips: 1, Writes: 1}},
		{"KV delete", func(ctx context.Context) error { _, err := c.KV().Delete(k, wo(ctx)); return err }, cost.Counts{RoundTrips: 1, Writes: 1}},
	})

	// Transactions: one the store refuses went through raft like a
	// committed one; one the leader refuses before raft (a lock-delay)
	// wrote nothing.
	lockKey := key(t)
	holder, _, err := c.Session().Create(&api.SessionEntry{TTL: "10s", Behavior: api.SessionBehaviorRelease, LockDelay: 10 * time.Second}, nil)
	if err != nil {
		t.Fatal(err)
	}
	other, _, err := c.Session().Create(&api.SessionEntry{TTL: "10s", Behavior: api.SessionBehaviorRelease}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _, _ = c.Session().Destroy(other, nil) })
	lock := func(session string, want bool) func(ctx context.Context) error {
		return func(ctx context.Context) error {
			ok, resp, _, err := c.Txn().Txn(api.TxnOps{{KV: &api.KVTxnOp{Verb: api.KVLock, Key: lockKey, Session: session}}}, qo(ctx))
			if err == nil && ok != want {
				err = fmt.Errorf("transaction committed %v, want %v (errors %v)", ok, want, resp.Errors)
			}
			return err
		}
	}
	runSteps(t, m, catalog.ServerConsul, []step{
		{"txn lock", lock(holder, true), cost.Counts{RoundTrips: 1, Writes: 1}},
		{"txn refused by the store (held)", lock(other, false), cost.Counts{RoundTrips: 1, Writes: 1}},
		{"session destroy (the lock-delay starts)", func(ctx context.Context) error { _, err := c.Session().Destroy(holder, wo(ctx)); return err }, cost.Counts{RoundTrips: 1, Writes: 1}},
		{"txn refused by the leader (lock-delay)", lock(other, false), cost.Counts{RoundTrips: 1}},
	})
}

// TestZooKeeperDialer: go-zookeeper takes no context, so its requests are
// attributed by opcode: create to acquire, delete to release.
func TestZooKeeperDialer(t *testing.T) {
	m := cost.NewMeter()
	conn, _, err := zk.Connect(testenv.List(t, testenv.ZKServers), 10*time.Second, zk.WithDialer(m.ZooKeeperDialer(nil)), zk.WithLogInfo(false))
	if err != nil {
		testenv.Unavailable(t, "zookeeper", err)
	}
	t.Cleanup(conn.Close)
	p := fmt.Sprintf("/cost-test-%d", rand.Int64())
	cases := []struct {
		name  string
		do    func() error
		phase cost.Phase
		want  cost.Counts
	}{
		{"create", func() error { _, err := conn.Create(p, nil, zk.FlagEphemeral, zk.WorldACL(zk.PermAll)); return err }, cost.Acquire, cost.Counts{RoundTrips: 1, Writes: 1}},
		{"exists", func() error { _, _, err := conn.Exists(p); return err }, cost.Acquire, cost.Counts{RoundTrips: 1}},
		{"getChildren", func() error { _, _, err := conn.Children("/"); return err }, cost.Acquire, cost.Counts{RoundTrips: 1}},
		{"delete", func() error { return conn.Delete(p, -1) }, cost.Release, cost.Counts{RoundTrips: 1, Writes: 1}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			before := m.Snapshot()
			if err := tc.do(); err != nil {
				if tc.name == "create" {
					testenv.Unavailable(t, "zookeeper", err)
				}
				t.Fatal(err)
			}
			if got := m.Snapshot().Sub(before)[catalog.ServerZooKeeper][tc.phase]; got != tc.want {
				t.Errorf("%s: got %+v, want %+v", tc.phase, got, tc.want)
			}
		})
	}
	if got := m.Snapshot()[catalog.ServerZooKeeper][cost.Other]; got.Writes < 1 {
		t.Errorf("the session's connect request was not counted: other %+v", got)
	}
}
