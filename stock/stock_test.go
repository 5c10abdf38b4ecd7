package stock

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/redis/go-redis/v9"
	gormmysql "gorm.io/driver/mysql"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"

	"github.com/seckill-lab/seckill/internal/testenv"
)

func TestNewAudit(t *testing.T) {
	cases := []struct {
		name                        string
		initial, stock, sold        int64
		wantOversold, wantLostUpdts int64
	}{
		{"exact", 10, 0, 10, 0, 0},
		{"partial", 10, 4, 6, 0, 0},
		{"oversold with lost updates", 10, 0, 14, 4, 4},
		{"lost updates, stock left", 10, 5, 9, 0, 4},
		{"oversold, negative stock", 10, -2, 12, 2, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			a := NewAudit(1, tc.initial, tc.stock, tc.sold, tc.sold, nil)
			if a.Oversold != tc.wantOversold || a.LostUpdates != tc.wantLostUpdts || a.PerInstance == nil {
				t.Fatalf("got oversold %d lost %d, want %d %d", a.Oversold, a.LostUpdates, tc.wantOversold, tc.wantLostUpdts)
			}
		})
	}
}

func TestConfigJSONAndValidate(t *testing.T) {
	cases := []struct {
		in      string
		wantErr string
		want    Config
	}{
		{`{"name":"redis"}`, "", Config{Name: Redis}},
		{`{"name":"etcd","work_delay":"250ms","lock_ttl":"2s","lock_wait":"1s","fencing":true}`, "", Config{Name: Etcd, WorkDelay: 250 * time.Millisecond, LockTTL: 2 * time.Second, LockWait: time.Second, Fencing: true}},
		{`{"name":"mysql-unique","watchdog":false,"fencing":true}`, "", Config{Name: MySQLUnique, Fencing: true, NoWatchdog: true}},
		{`{"name":"etcd","watchdog":false}`, "watchdog can be turned off only", Config{}},
		{`{"name":"redis-ttl","watchdog":false}`, "watchdog can be turned off only", Config{}},
		{`{"name":"magic"}`, "unknown strategy", Config{}},
		{`{"name":"redis","lock_ttl":"1ms"}`, "lock_ttl", Config{}},
		{`{"name":"redis","lock_wait":"0s"}`, "lock_wait", Config{}},
		{`{"name":"redis","work_delay":"-1s"}`, "work_delay", Config{}},
		{`{"name":"redlock","fencing":true}`, "fencing", Config{}},
		{`{"name":"redis","lock_ttl":"ten"}`, "not a Go duration", Config{}},
		{`{"name":"redis-owner","release_pause":"300ms","lock_ttl":"100ms"}`, "", Config{Name: RedisOwner, LockTTL: 100 * time.Millisecond, ReleasePause: 300 * time.Millisecond}},
		{`{"name":"redis","release_pause":"300ms"}`, "release_pause applies only to redis-owner", Config{}},
		{`{"name":"redis-owner","release_pause":"5s"}`, "release_pause 5s out of range", Config{}},
		{`{"name":"redis-owner","release_pause":"-1ms"}`, "release_pause -1ms out of range", Config{}},
		{`{"name":"redis-owner","release_pause":"soon"}`, "release_pause: \"soon\" is not a Go duration", Config{}},
		{`{"name":"redis","batch":16}`, "", Config{Name: Redis, Batch: 16}},
		{`{"name":"sql-atomic","batch":1}`, "", Config{Name: SQLAtomic, Batch: 1}},
		{`{"name":"sql-atomic","batch":4}`, "batch applies only to", Config{}},
		{`{"name":"mutex-tx","batch":2}`, "batch applies only to", Config{}},
		{`{"name":"redis","batch":257}`, "batch 257 out of range", Config{}},
		{`{"name":"redis","batch":-1}`, "out of range", Config{}},
		{`{"name":"redis","batch":"many"}`, "cannot unmarshal", Config{}},
	}
	for _, tc := range cases {
		t.Run(tc.in, func(t *testing.T) {
			var c Config
			err := json.Unmarshal([]byte(tc.in), &c)
			if err == nil {
				err = c.Validate()
			}
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err %v, want one mentioning %q", err, tc.wantErr)
				}
				return
			}
			if err != nil || c != tc.want {
				t.Fatalf("got %+v, %v; want %+v", c, err, tc.want)
			}
			back, _ := json.Marshal(c)
			var again Config
			if err := json.Unmarshal(back, &again); err != nil || !again.Equal(c) {
				t.Fatalf("round trip %s -> %+v (%v)", back, again, err)
			}
		})
	}
	// The 18 of STRATEGIES.md that run, consul-nodelay (the consul lock
	// with lock-delay 0) and redis-stream (the async orders of issue 24).
	if len(StrategyNames()) != 20 {
		t.Fatalf("catalogue has %d strategies, want 20", len(StrategyNames()))
	}
}

func testStore(t *testing.T) *SQLStore {
	t.Helper()
	return testStoreOf(t, NewStore)
}

// testStoreOf opens the test database (closed at the test's end), wraps
// it with open and migrates the schema.
func testStoreOf(t *testing.T, open func(*gorm.DB) *SQLStore) *SQLStore {
	t.Helper()
	dsn, err := PurchaseDSN(testenv.Get(t, testenv.MySQLDSN))
	if err != nil {
		t.Fatal(err)
	}
	db, err := gorm.Open(gormmysql.Open(dsn), &gorm.Config{Logger: logger.Discard})
	if err != nil {
		testenv.Unavailable(t, "MySQL", err)
	}
	sqlDB, _ := db.DB()
	t.Cleanup(func() { sqlDB.Close() })
	st := open(db)
	if err := st.Migrate(context.Background()); err != nil {
		testenv.Unavailable(t, "MySQL", err)
	}
	return st
}

func order(goods int64, rid string) Order {
	return Order{GoodsID: goods, Qty: 1, UserID: "u", RequestID: rid, Instance: "test", Strategy: Redis}
}

// TestFencingRejectsStaleHolder: a write carrying an older token than the
// one already accepted is rolled back and reported as ErrStaleLock.
func TestFencingRejectsStaleHolder(t *testing.T) {
	st := testStore(t)
	ctx := context.Background()
	goods := 2_000_000_000 + rand.Int64N(1_000_000_000)
	if err := st.Reset(ctx, goods, 5); err != nil {
		t.Fatal(err)
	}
	steps := []struct {
		fence uint64
		want  error
	}{{7, nil}, {3, ErrStaleLock}, {7, ErrStaleLock}, {8, nil}}
	for i, s := range steps {
		_, err := st.ReadModifyWrite(ctx, Deduction{Order: order(goods, fmt.Sprintf("%d-%d", goods, i)), Fence: s.fence}, nil)
		if !errors.Is(err, s.want) && !(s.want == nil && err == nil) {
			t.Fatalf("step %d fence %d: err %v, want %v", i, s.fence, err, s.want)
		}
	}
	a, err := st.Audit(ctx, goods)
	if err != nil {
		t.Fatal(err)
	}
	if a.Orders != 2 || a.Stock != 3 {
		t.Fatalf("stale writes left data behind: %+v", a)
	}
	g, _ := st.Goods(ctx, goods)
	if g.Fence != 8 {
		t.Fatalf("fence %d, want the last accepted token 8", g.Fence)
	}
}

// TestRedisAtomicReturnsUnitOnFailure: when the MySQL half fails, the unit
// goes back to Redis.
func TestRedisAtomicReturnsUnitOnFailure(t *testing.T) {
	st := testStore(t)
	rdb := redis.NewClient(&redis.Options{Addr: testenv.List(t, testenv.RedisAddrs)[0]})
	t.Cleanup(func() { rdb.Close() })
	ctx := context.Background()
	if err := rdb.Ping(ctx).Err(); err != nil {
		testenv.Unavailable(t, "Redis", err)
	}
	mirror := NewRedisMirror(rdb)
	svc, err := NewService(ServiceOptions{Instance: "test", Store: st, Mirror: mirror, Initial: Config{Name: RedisAtomic}})
	if err != nil {
		t.Fatal(err)
	}
	goods := 2_000_000_000 + rand.Int64N(1_000_000_000)
	if rep, err := svc.Reset(ctx, goods, 3); err != nil || len(rep.Skipped) > 0 {
		t.Fatalf("reset: %v, skipped %v", err, rep.Skipped)
	}
	rid := fmt.Sprintf("dup-%d", goods)
	if _, err := svc.Purchase(ctx, PurchaseRequest{GoodsID: goods, Qty: 1, UserID: "u", RequestID: rid}); err != nil {
		t.Fatal(err)
	}
	// Make the MySQL half fail: the goods row vanishes after Redis said yes.
	if err := st.DB().Exec("DELETE FROM goods WHERE id = ?", goods).Error; err != nil {
		t.Fatal(err)
	}
	_, err = svc.Purchase(ctx, PurchaseRequest{GoodsID: goods, Qty: 1, UserID: "u"})
	if err == nil {
		t.Fatal("purchase succeeded without a goods row")
	}
	n, err := rdb.Get(ctx, MirrorKey(goods)).Int64()
	if err != nil || n != 2 {
		t.Fatalf("mirror holds %d (%v) after a failed insert, want 2: the unit must go back", n, err)
	}
}

// TestMigrateConcurrently: instances starting together on a fresh database
// must not race on CREATE TABLE.
func TestMigrateConcurrently(t *testing.T) {
	st := testStore(t)
	dbName := fmt.Sprintf("seckill_migrate_%d", rand.Int64N(1_000_000_000))
	if err := st.DB().Exec("CREATE DATABASE " + dbName).Error; err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.DB().Exec("DROP DATABASE " + dbName) })
	cfg, err := mysqlDSNFor(testenv.Get(t, testenv.MySQLDSN), dbName)
	if err != nil {
		t.Fatal(err)
	}
	one, err := gorm.Open(gormmysql.Open(cfg), &gorm.Config{Logger: logger.Discard})
	if err != nil {
		t.Fatal(err)
	}
	sqlDB, _ := one.DB()
	t.Cleanup(func() { sqlDB.Close() })
	errs := make(chan error, 4)
	for range 4 {
		go func() { errs <- NewStore(one).Migrate(context.Background()) }()
	}
	for range 4 {
		if err := <-errs; err != nil {
			t.Fatalf("concurrent migrate: %v", err)
		}
	}
}

func mysqlDSNFor(dsn, db string) (string, error) {
	c, err := mysql.ParseDSN(dsn)
	if err != nil {
		return "", err
	}
	c.DBName = db
	ConfigureMySQL(c)
	return c.FormatDSN(), nil
}

// TestStorePathsRemaining: every store path (the lean database/sql path)
// reports the stock each purchase left, ids its orders, refuses a purchase
// the stock does not cover without changing data, and tells a missing goods
// from a sold-out one.
func TestStorePathsRemaining(t *testing.T) {
	st := testStore(t)
	ctx := context.Background()
	paths := []struct {
		name string
		run  func(Deduction) (Result, error)
	}{
		{SQLAtomic, func(d Deduction) (Result, error) { return st.Atomic(ctx, d) }},
		{MySQLForUpdate, func(d Deduction) (Result, error) { return st.ForUpdate(ctx, d, time.Second) }},
		{MySQLOptimistic, func(d Deduction) (Result, error) { return st.Optimistic(ctx, d, 3, time.Second) }},
		{None, func(d Deduction) (Result, error) { return st.ReadModifyWrite(ctx, d, nil) }},
	}
	for _, p := range paths {
		t.Run(p.name, func(t *testing.T) {
			goods := 2_000_000_000 + rand.Int64N(1_000_000_000)
			if err := st.Reset(ctx, goods, 3); err != nil {
				t.Fatal(err)
			}
			// Step 1 reuses step 0's request id: the duplicate is refused
			// and its deduction rolled back (the later steps' stock shows
			// it), which for sql-atomic means the one-round-trip batch
			// stopped at the INSERT and was rolled back.
			steps := []struct {
				qty, remaining int64
				want           error
				req            int
			}{{1, 2, nil, 0}, {1, 0, errDuplicateRequest, 0}, {3, 0, ErrSoldOut, 2}, {2, 0, nil, 3}, {1, 0, ErrSoldOut, 4}}
			var ids []int64
			for i, s := range steps {
				o := order(goods, fmt.Sprintf("%s-%d-%d", p.name, goods, s.req))
				o.Qty = s.qty
				res, err := p.run(Deduction{Order: o})
				if s.want != nil {
					if !errors.Is(err, s.want) {
						t.Fatalf("step %d: err %v, want %v", i, err, s.want)
					}
					continue
				}
				if err != nil {
					t.Fatalf("step %d: %v", i, err)
				}
				if res.Remaining != s.remaining || res.Order.ID == 0 {
					t.Fatalf("step %d: remaining %d order id %d, want remaining %d and an id", i, res.Remaining, res.Order.ID, s.remaining)
				}
				ids = append(ids, res.Order.ID)
			}
			a, err := st.Audit(ctx, goods)
			if err != nil {
				t.Fatal(err)
			}
			if a.Stock != 0 || a.Orders != 2 || a.SoldQty != 3 || ids[0] == ids[1] {
				t.Fatalf("audit %+v, order ids %v", a, ids)
			}
			if _, err := p.run(Deduction{Order: order(goods+1_000_000_000_000, p.name+"-missing")}); !errors.Is(err, ErrGoodsNotFound) {
				t.Fatalf("missing goods: %v, want ErrGoodsNotFound", err)
			}
		})
	}
}
