package bench

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/seckill-lab/seckill/stock"
)

// DBCeiling is the database's own limit for the purchase transaction: a Go
// client on this machine running exactly the instances' purchase
// transaction (stock.ExecPurchase: BEGIN, the conditional deduction, the
// order and COMMIT, in one round trip) with
// the run's concurrency, straight at MariaDB/MySQL, no HTTP, no lock. It
// is the most any strategy could sell per second on this box.
type DBCeiling struct {
	Transactions int     `json:"transactions"`
	Concurrency  int     `json:"concurrency"`
	TPS          float64 `json:"tps"`
	DurationSecs float64 `json:"duration_s"`
	P50MS        float64 `json:"p50_ms"`
	P99MS        float64 `json:"p99_ms"`
}

// DBCeilingGoodsID is the goods the ceiling sells (reset before and
// cleared after), apart from any goods a bench sells.
const DBCeilingGoodsID = 999_999_001

// CalibrateDatabase measures DBCeiling: n purchase transactions by
// concurrency clients on their own connections, with parameters
// interpolated as the instances send them. The goods DBCeilingGoodsID is
// set to n units first; its orders are deleted after.
func CalibrateDatabase(ctx context.Context, dsn string, n, concurrency int) (DBCeiling, error) {
	if n <= 0 || concurrency <= 0 {
		return DBCeiling{}, fmt.Errorf("%w: the database ceiling needs transactions > 0 and concurrency > 0", ErrInvalidOptions)
	}
	mc, err := mysql.ParseDSN(dsn)
	if err != nil {
		return DBCeiling{}, fmt.Errorf("%w: database DSN: %w", ErrInvalidOptions, err)
	}
	stock.ConfigureMySQL(mc)
	if mc.Timeout == 0 {
		mc.Timeout = 2 * time.Second
	}
	conn, err := mysql.NewConnector(mc)
	if err != nil {
		return DBCeiling{}, fmt.Errorf("database DSN: %w", err)
	}
	db := sql.OpenDB(conn)
	defer db.Close()
	db.SetMaxOpenConns(concurrency)
	db.SetMaxIdleConns(concurrency)

	prep := func(stockN int) error {
		cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		if _, err := db.ExecContext(cctx, "DELETE FROM orders WHERE goods_id = ?", DBCeilingGoodsID); err != nil {
			return fmt.Errorf("database ceiling: clear its orders: %w", err)
		}
		_, err := db.ExecContext(cctx, "INSERT INTO goods (id, name, stock, initial_stock, version, fence) VALUES (?, 'db-ceiling', ?, ?, 0, 0) "+
			"ON DUPLICATE KEY UPDATE stock = VALUES(stock), initial_stock = VALUES(initial_stock)", DBCeilingGoodsID, stockN, stockN)
		if err != nil {
			return fmt.Errorf("database ceiling: set its goods: %w", err)
		}
		return nil
	}
	if err := prep(n); err != nil {
		return DBCeiling{}, err
	}
	defer func() { _ = prep(0) }()
	// Open the connections first: dialling is not the transaction's cost.
	var warm sync.WaitGroup
	for range concurrency {
		warm.Go(func() { _ = db.PingContext(ctx) })
	}
	warm.Wait()

	tx := func(i int) error {
		o := stock.Order{GoodsID: DBCeilingGoodsID, Qty: 1, UserID: "ceiling", RequestID: fmt.Sprintf("db-ceiling-%d", i),
			Instance: "bench", Strategy: "db-ceiling"}
		var left int64
		sold, err := stock.ExecPurchase(ctx, db, &o, &left)
		if err == nil && !sold {
			err = errors.New("the deduction matched no row")
		}
		return err
	}
	var next atomic.Int64
	lat := make([][]time.Duration, concurrency)
	errs := make([]error, concurrency)
	var wg sync.WaitGroup
	began := time.Now()
	for w := range concurrency {
		wg.Go(func() {
			for {
				i := int(next.Add(1))
				if i > n || ctx.Err() != nil {
					return
				}
				t0 := time.Now()
				if err := tx(i); err != nil {
					errs[w] = fmt.Errorf("transaction %d: %w", i, err)
					return
				}
				lat[w] = append(lat[w], time.Since(t0))
			}
		})
	}
	wg.Wait()
	wall := time.Since(began)
	if err := errors.Join(errs...); err != nil {
		return DBCeiling{}, fmt.Errorf("database ceiling: %w", err)
	}
	if err := ctx.Err(); err != nil {
		return DBCeiling{}, err
	}
	all := slices.Concat(lat...)
	slices.Sort(all)
	c := DBCeiling{Transactions: len(all), Concurrency: concurrency, DurationSecs: wall.Seconds()}
	if len(all) > 0 {
		c.P50MS, c.P99MS = ms(all[len(all)/2]), ms(all[len(all)*99/100])
		c.TPS = float64(len(all)) / wall.Seconds()
	}
	return c, nil
}

func (c DBCeiling) describe() string {
	return fmt.Sprintf("%d transactions by %d clients straight at the database, p50 %.2f ms, p99 %.2f ms", c.Transactions, c.Concurrency, c.P50MS, c.P99MS)
}
