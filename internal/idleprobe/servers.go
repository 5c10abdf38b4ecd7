package idleprobe

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"github.com/seckill-lab/seckill/bench/costmodel"
	"net/http"
	"time"

	"github.com/go-zookeeper/zk"
	consul "github.com/hashicorp/consul/api"
	"github.com/redis/go-redis/v9"
	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	// The MySQL driver of dialMySQL.
	_ "github.com/go-sql-driver/mysql"
)

// Redis: GET, SET NX PX (a lock's acquire) and the release script (a
// compare-and-delete) on a key set untimed first.

// releaseScript is a lock's release: delete the key if it holds the value.
const releaseScript = `if redis.call("get", KEYS[1]) == ARGV[1] then return redis.call("del", KEYS[1]) else return 0 end`

var redisOps = []op[*redis.Client]{
	{costmodel.RedisGet, timed(func(ctx context.Context, c *redis.Client, key string) error {
		return c.Get(ctx, Prefix).Err()
	})},
	{costmodel.RedisSet, timed(func(ctx context.Context, c *redis.Client, key string) error {
		return c.SetNX(ctx, key, "1", time.Minute).Err()
	})},
	{costmodel.RedisEval, func(ctx context.Context, c *redis.Client, key string) (time.Duration, error) {
		if err := c.Set(ctx, key, "1", time.Minute).Err(); err != nil {
			return 0, fmt.Errorf("set %s: %w", key, err)
		}
		return timed(func(ctx context.Context, c *redis.Client, key string) error {
			return c.Eval(ctx, releaseScript, []string{key}, "1").Err()
		})(ctx, c, key)
	}},
}

func dialRedis(ctx context.Context, addr string) (*redis.Client, func(context.Context) error, error) {
	c := redis.NewClient(&redis.Options{Addr: addr, DialTimeout: time.Second, MaxRetries: -1, PoolSize: 1})
	if err := c.Set(ctx, Prefix, "1", time.Minute).Err(); err != nil {
		_ = c.Close()
		return nil, nil, err
	}
	return c, func(ctx context.Context) error {
		defer c.Close()
		var keys []string
		iter := c.Scan(ctx, 0, Prefix+"*", 1000).Iterator()
		for iter.Next(ctx) {
			keys = append(keys, iter.Val())
		}
		if len(keys) > 0 {
			return c.Del(ctx, keys...).Err()
		}
		return iter.Err()
	}, nil
}

// etcd: a range read, a put, a lock's acquire transaction (create the key
// if absent, read the prefix's first key), a delete, and a delete of a key
// a watch is waiting on (registered untimed first; the event awaited
// untimed after).

var etcdOps = []op[*clientv3.Client]{
	{costmodel.EtcdPut, timed(func(ctx context.Context, c *clientv3.Client, key string) error {
		_, err := c.Put(ctx, key, "1")
		return err
	})},
	{costmodel.EtcdGet, timed(func(ctx context.Context, c *clientv3.Client, key string) error {
		_, err := c.Get(ctx, Prefix)
		return err
	})},
	{costmodel.EtcdTxn, timed(func(ctx context.Context, c *clientv3.Client, key string) error {
		_, err := c.Txn(ctx).If(clientv3.Compare(clientv3.CreateRevision(key), "=", 0)).
			Then(clientv3.OpPut(key, ""), clientv3.OpGet(Prefix+"-txn-", clientv3.WithFirstCreate()...)).
			Else(clientv3.OpGet(key)).Commit()
		return err
	})},
	{costmodel.EtcdDelete, func(ctx context.Context, c *clientv3.Client, key string) (time.Duration, error) {
		if _, err := c.Put(ctx, key, "1"); err != nil {
			return 0, fmt.Errorf("put %s: %w", key, err)
		}
		return timed(func(ctx context.Context, c *clientv3.Client, key string) error {
			_, err := c.Delete(ctx, key)
			return err
		})(ctx, c, key)
	}},
	{costmodel.EtcdDeleteWatched, func(ctx context.Context, c *clientv3.Client, key string) (time.Duration, error) {
		if _, err := c.Put(ctx, key, "1"); err != nil {
			return 0, fmt.Errorf("put %s: %w", key, err)
		}
		wctx, cancel := context.WithCancel(ctx)
		defer cancel()
		wch := c.Watch(wctx, key, clientv3.WithCreatedNotify())
		if wr, ok := <-wch; !ok || !wr.Created {
			return 0, fmt.Errorf("watch %s: not registered: %w", key, errors.Join(wr.Err(), ctx.Err()))
		}
		d, err := timed(func(ctx context.Context, c *clientv3.Client, key string) error {
			_, err := c.Delete(ctx, key)
			return err
		})(ctx, c, key)
		if err != nil {
			return 0, err
		}
		for wr := range wch {
			for _, ev := range wr.Events {
				if ev.Type == mvccpb.DELETE {
					return d, nil
				}
			}
		}
		return 0, fmt.Errorf("watch %s: no delete event: %w", key, ctx.Err())
	}},
}

func dialEtcd(ctx context.Context, addr string) (*clientv3.Client, func(context.Context) error, error) {
	c, err := clientv3.New(clientv3.Config{Endpoints: []string{addr}, DialTimeout: time.Second, Logger: zap.NewNop(), Context: context.WithoutCancel(ctx)})
	if err != nil {
		return nil, nil, err
	}
	if _, err := c.Put(ctx, Prefix, "1"); err != nil {
		_ = c.Close()
		return nil, nil, err
	}
	return c, func(ctx context.Context) error {
		defer c.Close()
		_, err := c.Delete(ctx, Prefix, clientv3.WithPrefix())
		return err
	}, nil
}

// ZooKeeper: the children of a directory, an ephemeral sequential create
// (a lock's node), a delete, and a delete of a node an exists watch waits
// on (set untimed first; the event awaited untimed after). go-zookeeper
// takes no context: each request waits within ctx in a goroutine of its
// own, which the connection's Close ends.

// zkDir is the probes' directory.
const zkDir = "/" + Prefix

// zkDo runs req within ctx.
func zkDo(ctx context.Context, req func() error) error {
	done := make(chan error, 1)
	go func() { done <- req() }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// zkNode creates an ephemeral sequential node in zkDir.
func zkNode(ctx context.Context, c *zk.Conn) (string, error) {
	var path string
	err := zkDo(ctx, func() (err error) {
		path, err = c.Create(zkDir+"/n-", nil, zk.FlagEphemeral|zk.FlagSequence, zk.WorldACL(zk.PermAll))
		return err
	})
	if err != nil {
		return "", fmt.Errorf("create in %s: %w", zkDir, err)
	}
	return path, nil
}

var zooKeeperOps = []op[*zk.Conn]{
	{costmodel.ZooKeeperCreate, timed(func(ctx context.Context, c *zk.Conn, _ string) error {
		_, err := zkNode(ctx, c)
		return err
	})},
	{costmodel.ZooKeeperGetChildren, timed(func(ctx context.Context, c *zk.Conn, _ string) error {
		return zkDo(ctx, func() error { _, _, err := c.Children(zkDir); return err })
	})},
	{costmodel.ZooKeeperDelete, func(ctx context.Context, c *zk.Conn, _ string) (time.Duration, error) {
		path, err := zkNode(ctx, c)
		if err != nil {
			return 0, err
		}
		t0 := time.Now()
		err = zkDo(ctx, func() error { return c.Delete(path, -1) })
		return time.Since(t0), err
	}},
	{costmodel.ZooKeeperDeleteWatched, func(ctx context.Context, c *zk.Conn, _ string) (time.Duration, error) {
		path, err := zkNode(ctx, c)
		if err != nil {
			return 0, err
		}
		var ev <-chan zk.Event
		if err := zkDo(ctx, func() (err error) { _, _, ev, err = c.ExistsW(path); return err }); err != nil {
			return 0, fmt.Errorf("watch %s: %w", path, err)
		}
		t0 := time.Now()
		if err := zkDo(ctx, func() error { return c.Delete(path, -1) }); err != nil {
			return 0, err
		}
		d := time.Since(t0)
		select {
		case <-ev:
			return d, nil
		case <-ctx.Done():
			return 0, fmt.Errorf("watch %s: no event: %w", path, ctx.Err())
		}
	}},
}

// quiet is a go-zookeeper logger that says nothing: a server that is down
// is an error entry, not a log line per retry.
type quiet struct{}

func (quiet) Printf(string, ...any) {}

func dialZooKeeper(ctx context.Context, addr string) (*zk.Conn, func(context.Context) error, error) {
	session := make(chan struct{})
	var once bool
	c, events, err := zk.Connect([]string{addr}, 4*time.Second, zk.WithLogger(quiet{}), zk.WithLogInfo(false))
	if err != nil {
		return nil, nil, err
	}
	go func() {
		for ev := range events { // until Close
			if ev.State == zk.StateHasSession && !once {
				once = true
				close(session)
			}
		}
	}()
	select {
	case <-session:
	case <-ctx.Done():
		c.Close()
		return nil, nil, fmt.Errorf("no session: %w", ctx.Err())
	}
	err = zkDo(ctx, func() error {
		_, err := c.Create(zkDir, nil, 0, zk.WorldACL(zk.PermAll))
		if errors.Is(err, zk.ErrNodeExists) {
			return nil
		}
		return err
	})
	if err != nil {
		c.Close()
		return nil, nil, fmt.Errorf("create %s: %w", zkDir, err)
	}
	return c, func(ctx context.Context) error {
		defer c.Close()
		return zkDo(ctx, func() error {
			kids, _, err := c.Children(zkDir)
			if err != nil {
				return err
			}
			for _, k := range kids { // the session's ephemeral nodes go with it, the others now
				_ = c.Delete(zkDir+"/"+k, -1)
			}
			return c.Delete(zkDir, -1)
		})
	}, nil
}

// Consul: a key read, a check-and-set PUT creating a key (a lock's
// acquire and release are such PUTs), and a session create (destroyed
// untimed after).

var consulOps = []op[*consul.Client]{
	{costmodel.ConsulKVCAS, timed(func(ctx context.Context, c *consul.Client, key string) error {
		ok, _, err := c.KV().CAS(&consul.KVPair{Key: key, Value: []byte("1")}, (&consul.WriteOptions{}).WithContext(ctx))
		if err == nil && !ok {
			err = fmt.Errorf("cas %s: refused", key)
		}
		return err
	})},
	{costmodel.ConsulKVGet, timed(func(ctx context.Context, c *consul.Client, _ string) error {
		_, _, err := c.KV().Get(Prefix, (&consul.QueryOptions{}).WithContext(ctx))
		return err
	})},
	{costmodel.ConsulSessionCreate, func(ctx context.Context, c *consul.Client, _ string) (time.Duration, error) {
		t0 := time.Now()
		id, _, err := c.Session().Create(&consul.SessionEntry{Name: Prefix, TTL: "10s", Behavior: consul.SessionBehaviorDelete},
			(&consul.WriteOptions{}).WithContext(ctx))
		d := time.Since(t0)
		if err != nil {
			return 0, err
		}
		if _, err := c.Session().Destroy(id, (&consul.WriteOptions{}).WithContext(ctx)); err != nil {
			return 0, fmt.Errorf("destroy session %s: %w", id, err)
		}
		return d, nil
	}},
}

func dialConsul(ctx context.Context, addr string) (*consul.Client, func(context.Context) error, error) {
	c, err := consul.NewClient(&consul.Config{Address: addr, HttpClient: &http.Client{Timeout: 2 * time.Second}})
	if err != nil {
		return nil, nil, err
	}
	if _, err := c.KV().Put(&consul.KVPair{Key: Prefix, Value: []byte("1")}, (&consul.WriteOptions{}).WithContext(ctx)); err != nil {
		return nil, nil, err
	}
	return c, func(ctx context.Context) error {
		_, err := c.KV().DeleteTree(Prefix, (&consul.WriteOptions{}).WithContext(ctx))
		return err
	}, nil
}

// MySQL: a point UPDATE in a transaction (the statement alone), and the
// COMMIT of such a transaction (the UPDATE untimed first), on a table of
// the probes' own, dropped after.

// mysqlTable is the probes' table.
const mysqlTable = "`seckill_idleprobe`"

// mysqlTx begins a transaction, untimed.
func mysqlTx(ctx context.Context, db *sql.DB) (*sql.Tx, error) {
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return nil, fmt.Errorf("begin: %w", err)
	}
	return tx, nil
}

const mysqlUpdate = "UPDATE " + mysqlTable + " SET n = n + 1 WHERE id = 1"

var mysqlOps = []op[*sql.DB]{
	{costmodel.MySQLUpdate, func(ctx context.Context, db *sql.DB, _ string) (time.Duration, error) {
		tx, err := mysqlTx(ctx, db)
		if err != nil {
			return 0, err
		}
		defer tx.Rollback()
		t0 := time.Now()
		if _, err := tx.ExecContext(ctx, mysqlUpdate); err != nil {
			return 0, fmt.Errorf("update: %w", err)
		}
		d := time.Since(t0)
		return d, tx.Commit()
	}},
	{costmodel.MySQLCommit, func(ctx context.Context, db *sql.DB, _ string) (time.Duration, error) {
		tx, err := mysqlTx(ctx, db)
		if err != nil {
			return 0, err
		}
		defer tx.Rollback()
		if _, err := tx.ExecContext(ctx, mysqlUpdate); err != nil {
			return 0, fmt.Errorf("update: %w", err)
		}
		t0 := time.Now()
		if err := tx.Commit(); err != nil {
			return 0, fmt.Errorf("commit: %w", err)
		}
		return time.Since(t0), nil
	}},
}

func dialMySQL(ctx context.Context, dsn string) (*sql.DB, func(context.Context) error, error) {
	db, err := sql.Open("mysql", dsn)
	if err != nil {
		return nil, nil, err
	}
	db.SetMaxOpenConns(1)
	for _, q := range []string{
		"CREATE TABLE IF NOT EXISTS " + mysqlTable + " (id INT PRIMARY KEY, n BIGINT NOT NULL) ENGINE=InnoDB",
		"INSERT IGNORE INTO " + mysqlTable + " (id, n) VALUES (1, 0)",
	} {
		if _, err := db.ExecContext(ctx, q); err != nil {
			_ = db.Close()
			return nil, nil, fmt.Errorf("%s: %w", q, err)
		}
	}
	return db, func(ctx context.Context) error {
		defer db.Close()
		_, err := db.ExecContext(ctx, "DROP TABLE IF EXISTS "+mysqlTable)
		return err
	}, nil
}
