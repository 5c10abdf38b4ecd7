package bench

import (
	"cmp"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/seckill-lab/seckill/stock"
	"github.com/seckill-lab/seckill/stock/sqlstore"
)

// DBCeiling is the database's own limit for the purchase transaction: a Go
// client on this machine running exactly the instances' purchase
// transaction (sqlstore.ExecPurchase: BEGIN, the conditional deduction, the
// order and COMMIT, in one round trip) with
// the run's concurrency, straight at MariaDB/MySQL, no HTTP, no lock. It
// is the most any strategy could sell per second on this box.
//
// A bench measures it before each round of its strategies (Run), so the
// ceiling and the strategies meet the same state of the machine (a disk
// whose fsync slows, a neighbour on the host); TPS is the median of those
// measurements, and the latencies and duration are the median one's.
type DBCeiling struct {
	Transactions int     `json:"transactions"` // per measurement
	Concurrency  int     `json:"concurrency"`
	TPS          float64 `json:"tps"`
	DurationSecs float64 `json:"duration_s"`
	P50MS        float64 `json:"p50_ms"`
	P99MS        float64 `json:"p99_ms"`
	// RoundsTPS is each measurement's TPS, in the order taken (one before
	// each round). Empty for a single measurement.
	RoundsTPS []float64 `json:"rounds_tps,omitempty"`

	all []DBCeiling // every measurement, for add
}

// add records one more measurement m and recomputes c from all of them.
func (c *DBCeiling) add(m DBCeiling) {
	if len(c.all) == 0 && c.TPS > 0 {
		first := *c
		first.all, first.RoundsTPS = nil, nil
		c.all = []DBCeiling{first}
	}
	c.all = append(c.all, m)
	byTPS := slices.Clone(c.all)
	slices.SortFunc(byTPS, func(a, b DBCeiling) int { return cmp.Compare(a.TPS, b.TPS) })
	med := byTPS[(len(byTPS)-1)/2]
	all := c.all
	*c = med
	c.all = all
	c.RoundsTPS = make([]float64, len(all))
	for i, x := range all {
		c.RoundsTPS[i] = x.TPS
	}
	if n := len(byTPS); n%2 == 0 {
		c.TPS = (byTPS[n/2-1].TPS + byTPS[n/2].TPS) / 2
	}
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
	sqlstore.ConfigureMySQL(mc)
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
		sold, err := sqlstore.ExecPurchase(ctx, db, &o, &left)
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
	s := fmt.Sprintf("%d transactions by %d clients straight at the database, p50 %.2f ms, p99 %.2f ms", c.Transactions, c.Concurrency, c.P50MS, c.P99MS)
	if len(c.RoundsTPS) > 1 {
		each := make([]string, len(c.RoundsTPS))
		for i, v := range c.RoundsTPS {
			each[i] = fmt.Sprintf("%.0f", v)
		}
		s += fmt.Sprintf("; the median of %d measurements, one before each round: %s/s", len(c.RoundsTPS), strings.Join(each, ", "))
	}
	return s
}
