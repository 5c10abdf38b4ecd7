package sqlstore_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	gormmysql "gorm.io/driver/mysql"

	"github.com/go-sql-driver/mysql"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"

	"github.com/seckill-lab/seckill/internal/cost"
	"github.com/seckill-lab/seckill/internal/sqltest"
	"github.com/seckill-lab/seckill/internal/testenv"
	"github.com/seckill-lab/seckill/stock"
	"github.com/seckill-lab/seckill/stock/catalog"
	"github.com/seckill-lab/seckill/stock/phase"
	"github.com/seckill-lab/seckill/stock/sqlstore"
)

func order(goods int64, rid string) stock.Order {
	return stock.Order{GoodsID: goods, Qty: 1, UserID: "u", RequestID: rid, Instance: "test", Strategy: catalog.Redis}
}

// TestFencingRejectsStaleHolder: a write carrying an older token than the
// one already accepted is rolled back and reported as ErrStaleLock.
func TestFencingRejectsStaleHolder(t *testing.T) {
	st := sqltest.Store(t)
	ctx := context.Background()
	goods := 2_000_000_000 + rand.Int64N(1_000_000_000)
	if err := st.Reset(ctx, goods, 5); err != nil {
		t.Fatal(err)
	}
	steps := []struct {
		fence uint64
		want  error
	}{{7, nil}, {3, stock.ErrStaleLock}, {7, stock.ErrStaleLock}, {8, nil}}
	for i, s := range steps {
		_, err := st.ReadModifyWrite(ctx, stock.Deduction{Order: order(goods, fmt.Sprintf("%d-%d", goods, i)), Fence: s.fence}, nil)
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

// TestMigrateConcurrently: instances starting together on a fresh database
// must not race on CREATE TABLE.
func TestMigrateConcurrently(t *testing.T) {
	st := sqltest.Store(t)
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
		go func() { errs <- sqlstore.New(one).Migrate(context.Background()) }()
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
	sqlstore.ConfigureMySQL(c)
	return c.FormatDSN(), nil
}

// TestStorePathsRemaining: every store path (the lean database/sql path)
// reports the stock each purchase left, ids its orders, refuses a purchase
// the stock does not cover without changing data, and tells a missing goods
// from a sold-out one.
func TestStorePathsRemaining(t *testing.T) {
	st := sqltest.Store(t)
	ctx := context.Background()
	paths := []struct {
		name string
		run  func(stock.Deduction) (stock.Result, error)
	}{
		{catalog.SQLAtomic, func(d stock.Deduction) (stock.Result, error) { return st.Atomic(ctx, d) }},
		{catalog.MySQLForUpdate, func(d stock.Deduction) (stock.Result, error) { return st.ForUpdate(ctx, d, time.Second) }},
		{catalog.MySQLOptimistic, func(d stock.Deduction) (stock.Result, error) { return st.Optimistic(ctx, d, 3, time.Second) }},
		{catalog.None, func(d stock.Deduction) (stock.Result, error) { return st.ReadModifyWrite(ctx, d, nil) }},
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
			}{{1, 2, nil, 0}, {1, 0, stock.ErrDuplicateRequest, 0}, {3, 0, stock.ErrSoldOut, 2}, {2, 0, nil, 3}, {1, 0, stock.ErrSoldOut, 4}}
			var ids []int64
			for i, s := range steps {
				o := order(goods, fmt.Sprintf("%s-%d-%d", p.name, goods, s.req))
				o.Qty = s.qty
				res, err := p.run(stock.Deduction{Order: o})
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
			if _, err := p.run(stock.Deduction{Order: order(goods+1_000_000_000_000, p.name+"-missing")}); !errors.Is(err, stock.ErrGoodsNotFound) {
				t.Fatalf("missing goods: %v, want ErrGoodsNotFound", err)
			}
		})
	}
}

// TestBatchOneInsert: a batch's orders go to MySQL in one multi-row INSERT,
// so a lock hold costs the same round trips for 2 purchases as for 8 (it
// was one INSERT per order: at a cross-zone round trip, `redis --batch 32`
// spent 1.17 MySQL round trips per purchase under the lock). Each order
// gets its own row's id, and the order-by-order path still takes over
// where one INSERT cannot: a request id already sold, or one id twice.
func TestBatchOneInsert(t *testing.T) {
	dsn, err := sqlstore.PurchaseDSN(testenv.Get(t, testenv.MySQLDSN))
	if err != nil {
		t.Fatal(err)
	}
	mc, err := mysql.ParseDSN(dsn)
	if err != nil {
		t.Fatal(err)
	}
	connector, err := mysql.NewConnector(mc)
	if err != nil {
		t.Fatal(err)
	}
	meter := cost.NewMeter()
	sqlDB := sql.OpenDB(meter.Connector(connector))
	t.Cleanup(func() { sqlDB.Close() })
	db, err := gorm.Open(gormmysql.New(gormmysql.Config{Conn: sqlDB}), &gorm.Config{Logger: logger.Discard})
	if err != nil {
		testenv.Unavailable(t, "MySQL", err)
	}
	st := sqlstore.New(db)
	if err := st.Migrate(context.Background()); err != nil {
		testenv.Unavailable(t, "MySQL", err)
	}
	ctx := phase.With(context.Background(), phase.Held)
	// sell sells one batch of qty-1 deductions (request ids
	// "<goods>-<key>"; presold sold before it) on a new goods of stock and
	// returns the MySQL round trips the batch took.
	sell := func(t *testing.T, inStock int64, keys []string, presold string) (results []stock.Result, errs []error, goods int64, rts int64) {
		t.Helper()
		goods = 3_000_000_000 + rand.Int64N(1_000_000_000)
		if err := st.Reset(context.Background(), goods, inStock); err != nil {
			t.Fatal(err)
		}
		if presold != "" {
			o := order(goods, fmt.Sprintf("%d-%s", goods, presold))
			var left int64
			if _, err := sqlstore.ExecPurchase(context.Background(), sqlDB, &o, &left); err != nil {
				t.Fatal(err)
			}
		}
		ds := make([]stock.Deduction, len(keys))
		for i, k := range keys {
			ds[i] = stock.Deduction{Order: order(goods, fmt.Sprintf("%d-%s", goods, k))}
		}
		before := meter.Snapshot()
		results, errs, _ = st.ReadModifyWriteBatch(ctx, ds, 0, nil)
		rts = meter.Snapshot().Sub(before)[catalog.ServerMySQL][cost.Held].RoundTrips
		return results, errs, goods, rts
	}
	sell(t, 10, []string{"a", "b"}, "") // the store asks once how the server numbers rows
	_, _, _, two := sell(t, 10, []string{"a", "b"}, "")
	cases := []struct {
		name    string
		inStock int64
		keys    []string
		presold string
		// want: the errors, by position (nil: sold).
		want []error
		// oneInsert: the batch costs what a batch of two costs.
		oneInsert bool
	}{
		{"eight orders", 10, []string{"a", "b", "c", "d", "e", "f", "g", "h"}, "", make([]error, 8), true},
		{"the stock covers four of six", 4, []string{"a", "b", "c", "d", "e", "f"}, "", []error{nil, nil, nil, nil, stock.ErrSoldOut, stock.ErrSoldOut}, true},
		{"a request id already sold", 10, []string{"a", "b", "c", "d"}, "c", []error{nil, nil, stock.ErrDuplicateRequest, nil}, false},
		{"one request id twice", 10, []string{"a", "b", "a", "d"}, "", []error{nil, nil, stock.ErrDuplicateRequest, nil}, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			results, errs, goods, rts := sell(t, tc.inStock, tc.keys, tc.presold)
			for i, want := range tc.want {
				if !errors.Is(errs[i], want) || (want == nil) != (errs[i] == nil) {
					t.Errorf("deduction %d: %v, want %v", i, errs[i], want)
					continue
				}
				if want != nil {
					continue
				}
				o, found, err := st.OrderByRequest(context.Background(), results[i].Order.RequestID)
				if err != nil || !found || o.ID != results[i].Order.ID || o.ID == 0 {
					t.Errorf("deduction %d: order id %d, the row of %s: %+v (found %v, %v)", i, results[i].Order.ID, results[i].Order.RequestID, o, found, err)
				}
			}
			au, err := st.Audit(context.Background(), goods)
			if err != nil || au.Oversold != 0 || au.LostUpdates != 0 {
				t.Errorf("audit %+v (%v): want nothing oversold or lost", au, err)
			}
			if tc.oneInsert && rts != two {
				t.Errorf("%d orders took %d MySQL round trips, a batch of two %d: want the same (one INSERT)", len(tc.keys), rts, two)
			}
			t.Logf("%d MySQL round trips (a batch of two: %d)", rts, two)
		})
	}
}

// TestBoundedAtomic: a bounded store's lock-free purchases use at most
// its bound of MySQL connections at once and sell exactly the stock; a
// purchase that cannot get a place before its context ends writes
// nothing.
func TestBoundedAtomic(t *testing.T) {
	const bound = 2
	st := sqltest.StoreOf(t, func(db *gorm.DB) *sqlstore.Store { return sqlstore.NewBounded(db, bound) })
	sqlDB, err := st.DB().DB()
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	goods := 4_000_000_000 + rand.Int64N(1_000_000_000)
	sell := func(n int, prefix string) (sold, soldOut int) {
		var mu sync.Mutex
		var wg sync.WaitGroup
		for i := range n {
			wg.Go(func() {
				_, err := st.Atomic(ctx, stock.Deduction{Order: order(goods, fmt.Sprintf("%d-%s-%d", goods, prefix, i))})
				mu.Lock()
				defer mu.Unlock()
				switch {
				case err == nil:
					sold++
				case errors.Is(err, stock.ErrSoldOut):
					soldOut++
				default:
					t.Error(err)
				}
			})
		}
		wg.Wait()
		return sold, soldOut
	}

	// 24 at once on stock to spare: the pool never needed more than the
	// bound (Migrate's connection is closed by now).
	if err := st.Reset(ctx, goods, 100); err != nil {
		t.Fatal(err)
	}
	sqlDB.SetMaxIdleConns(100)
	if sold, _ := sell(24, "a"); sold != 24 {
		t.Fatalf("sold %d of 24 with stock to spare", sold)
	}
	if open := sqlDB.Stats().OpenConnections; open > bound {
		t.Errorf("%d MySQL connections open after 24 concurrent purchases, want at most the bound %d", open, bound)
	}

	// The gate full: a purchase gives up when its context ends, and writes
	// nothing.
	for range bound {
		if err := sqlstore.EnterGate(ctx, st); err != nil {
			t.Fatal(err)
		}
	}
	wctx, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	_, err = st.Atomic(wctx, stock.Deduction{Order: order(goods, fmt.Sprintf("%d-waiting", goods))})
	cancel()
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("purchase at a full gate: %v, want the context's deadline", err)
	}
	for range bound {
		sqlstore.LeaveGate(st)
	}
	if a, err := st.Audit(ctx, goods); err != nil || a.Orders != 24 || a.Stock != 76 {
		t.Fatalf("after the refused purchase: audit %+v, %v; want 24 orders and stock 76", a, err)
	}

	// A reset to 10 (its orders go): 30 at once sell exactly 10.
	if err := st.Reset(ctx, goods, 10); err != nil {
		t.Fatal(err)
	}
	sold, soldOut := sell(30, "b")
	if a, err := st.Audit(ctx, goods); err != nil || sold != 10 || soldOut != 20 || a.Stock != 0 || a.Orders != 10 {
		t.Fatalf("30 on stock 10: sold %d, sold out %d, audit %+v, %v", sold, soldOut, a, err)
	}
}
