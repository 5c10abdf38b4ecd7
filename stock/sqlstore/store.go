// Package sqlstore is the database's stock.Database: the goods, orders and
// user slots in MySQL (MariaDB). gorm keeps the schema (Migrate) and the
// queries off the purchase path; database/sql runs the purchase path, each
// purchase's read and write together in purchase.go. It also holds the
// connection tuning every purchase needs (ConfigureMySQL, PurchaseDSN),
// the bound on lock-free purchases at MySQL (NewBounded, ScaledInflight)
// and the write of redis-stream's queued orders (WriteQueued).
package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"github.com/seckill-lab/seckill/stock"
)

var _ stock.Database = (*Store)(nil)

// Store is the stock.Database over MySQL (MariaDB). It is safe for
// concurrent use.
type Store struct {
	db *gorm.DB
	flavor
	// atomic bounds the lock-free purchases at MySQL (Atomic).
	atomic gate
}

// New wraps db. Its lock-free purchases (Atomic) are unbounded; see
// NewBounded.
func New(db *gorm.DB) *Store { return &Store{db: db} }

// NewBounded wraps db and runs at most inflight lock-free purchase
// transactions (Atomic) at once; the others wait in arrival order, until
// their context ends. inflight <= 0 is no bound. An instance runs with 4
// (config.DefaultDBInflight; seckill serve --db-inflight) scaled by its
// round trip to MySQL.
//
// Why a bound: every sale of one goods updates the same row, so every
// purchase transaction in MySQL waits in that row's lock queue, and a
// longer queue costs the server more CPU per sale (waking, scheduling and
// switching threads), not more sales. Measured with mariadb-slap sending
// the purchase straight at MariaDB on a 2-CPU machine: 50 clients gave
// 2976 transactions/s at 387 µs of server CPU each, 12 clients 4113/s at
// 299 µs. Three instances at 4 each keep MySQL at 12; the queue moves to
// the instances, where a waiting purchase costs a parked goroutine. It is
// the advice of HikariCP's "About Pool Sizing": a pool of about twice the
// database's cores beats a large one.
//
// A place is held for the round trip too, so a bound caps one instance at
// bound / (round trip + service) purchases per second: an instance scales
// its bound with the round trip it measures to MySQL at start
// (ScaledInflight: 4 or 5 on loopback, 21 at 2 ms).
//
// Only Atomic is bounded. The locking strategies serialise before they
// reach MySQL, and mysql-forupdate's and mysql-optimistic's waits are the
// database's own (innodb_lock_wait_timeout follows the setting's
// lock_wait), which a queue in front would change.
func NewBounded(db *gorm.DB, inflight int) *Store {
	return &Store{db: db, atomic: newGate(inflight)}
}

// DB returns the underlying handle.
func (s *Store) DB() *gorm.DB { return s.db }

// Migrate creates or updates the schema and makes sure goods 1 exists, so a
// fresh stack can sell at once after a reset. Instances starting together
// take turns through a MySQL named lock (GET_LOCK), because concurrent
// CREATE TABLEs race ("table already exists").
func (s *Store) Migrate(ctx context.Context) error {
	sqlDB, err := s.db.DB()
	if err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	conn, err := sqlDB.Conn(ctx)
	if err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	defer conn.Close()
	var got sql.NullInt64
	if err := conn.QueryRowContext(ctx, "SELECT GET_LOCK('seckill.migrate', 30)").Scan(&got); err != nil {
		return fmt.Errorf("migrate: take the schema lock: %w", err)
	}
	if got.Int64 != 1 {
		return errors.New("migrate: another instance held the schema lock for 30s")
	}
	defer conn.ExecContext(context.WithoutCancel(ctx), "SELECT RELEASE_LOCK('seckill.migrate')")
	if err := toUTF8MB4(ctx, conn); err != nil {
		return err
	}
	db := s.db.WithContext(ctx).Set("gorm:table_options", "ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin")
	if err := db.AutoMigrate(&stock.Goods{}, &stock.Order{}, &UserSlot{}); err != nil {
		return fmt.Errorf("migrate schema: %w", err)
	}
	g := stock.Goods{ID: 1, Name: "demo"}
	if err := db.Clauses(clause.OnConflict{DoNothing: true}).Create(&g).Error; err != nil {
		return fmt.Errorf("seed goods 1: %w", err)
	}
	return nil
}

// toUTF8MB4 makes the database's default and the lab's existing tables
// utf8mb4 with a binary collation. A datadir kept from before this was
// the rule has latin1 tables: keys there compared case- and
// accent-insensitively, and CJK or emoji text could not be stored. Tables
// already converted are left alone (a conversion rebuilds the table).
func toUTF8MB4(ctx context.Context, conn *sql.Conn) error {
	var db string
	if err := conn.QueryRowContext(ctx, "SELECT DATABASE()").Scan(&db); err != nil {
		return fmt.Errorf("migrate: current database: %w", err)
	}
	if _, err := conn.ExecContext(ctx, "ALTER DATABASE `"+db+"` CHARACTER SET utf8mb4 COLLATE utf8mb4_bin"); err != nil {
		return fmt.Errorf("migrate: database charset: %w", err)
	}
	rows, err := conn.QueryContext(ctx, `SELECT TABLE_NAME FROM information_schema.TABLES
WHERE TABLE_SCHEMA = ? AND TABLE_NAME IN ('goods', 'orders') AND TABLE_COLLATION <> 'utf8mb4_bin'`, db)
	if err != nil {
		return fmt.Errorf("migrate: table collations: %w", err)
	}
	var tables []string
	for rows.Next() {
		var t string
		if err := rows.Scan(&t); err != nil {
			rows.Close()
			return fmt.Errorf("migrate: table collations: %w", err)
		}
		tables = append(tables, t)
	}
	rows.Close()
	for _, t := range tables {
		if _, err := conn.ExecContext(ctx, "ALTER TABLE `"+t+"` CONVERT TO CHARACTER SET utf8mb4 COLLATE utf8mb4_bin"); err != nil {
			return fmt.Errorf("migrate: convert %s to utf8mb4: %w", t, err)
		}
	}
	return nil
}

// Ping checks the database with SELECT 1.
func (s *Store) Ping(ctx context.Context) error {
	var one int
	if err := s.db.WithContext(ctx).Raw("SELECT 1").Scan(&one).Error; err != nil {
		return fmt.Errorf("mysql: %w", err)
	}
	return nil
}

// Goods returns one goods row.
func (s *Store) Goods(ctx context.Context, id int64) (stock.Goods, error) {
	var g stock.Goods
	err := s.db.WithContext(ctx).Take(&g, id).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return g, fmt.Errorf("goods %d: %w", id, stock.ErrGoodsNotFound)
	}
	if err != nil {
		return g, fmt.Errorf("read goods %d: %w", id, err)
	}
	return g, nil
}

// Reset sets the stock (creating the goods if needed) and deletes the
// goods' orders, in one transaction.
func (s *Store) Reset(ctx context.Context, id, inStock int64) error {
	return s.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		g := stock.Goods{ID: id, Name: fmt.Sprintf("goods-%d", id), Stock: inStock, InitialStock: inStock}
		err := tx.Clauses(clause.OnConflict{
			DoUpdates: clause.Assignments(map[string]any{"stock": inStock, "initial_stock": inStock, "version": 0, "fence": 0}),
		}).Create(&g).Error
		if err != nil {
			return fmt.Errorf("reset goods %d: %w", id, err)
		}
		if err := tx.Where("goods_id = ?", id).Delete(&stock.Order{}).Error; err != nil {
			return fmt.Errorf("delete orders of goods %d: %w", id, err)
		}
		if err := tx.Exec(sqlResetSlots, id).Error; err != nil {
			return fmt.Errorf("delete user slots of goods %d: %w", id, err)
		}
		return nil
	})
}

// Audit summarises goods id: stock, orders, sold quantity, per instance.
func (s *Store) Audit(ctx context.Context, id int64) (stock.Audit, error) {
	g, err := s.Goods(ctx, id)
	if err != nil {
		return stock.Audit{}, err
	}
	var rows []struct {
		Instance string
		N        int64
		Qty      int64
	}
	err = s.db.WithContext(ctx).Model(&stock.Order{}).
		Select("instance, COUNT(*) AS n, COALESCE(SUM(qty),0) AS qty").
		Where("goods_id = ?", id).Group("instance").Scan(&rows).Error
	if err != nil {
		return stock.Audit{}, fmt.Errorf("audit orders of goods %d: %w", id, err)
	}
	per := make(map[string]int64, len(rows))
	var orders, sold int64
	for _, r := range rows {
		per[r.Instance] = r.Qty
		orders += r.N
		sold += r.Qty
	}
	return stock.NewAudit(id, g.InitialStock, g.Stock, orders, sold, per), nil
}

// RequestIDs returns the request ids of goods id's persisted orders.
func (s *Store) RequestIDs(ctx context.Context, id int64) ([]string, error) {
	ids := []string{}
	if err := s.db.WithContext(ctx).Model(&stock.Order{}).Where("goods_id = ?", id).Order("id").Pluck("request_id", &ids).Error; err != nil {
		return nil, fmt.Errorf("list orders of goods %d: %w", id, err)
	}
	return ids, nil
}

// OrderByRequest returns the order persisted for requestID, if any.
func (s *Store) OrderByRequest(ctx context.Context, requestID string) (stock.Order, bool, error) {
	var o stock.Order
	err := s.db.WithContext(ctx).Where("request_id = ?", requestID).Take(&o).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return o, false, nil
	}
	if err != nil {
		return o, false, fmt.Errorf("look up request %q: %w", requestID, err)
	}
	return o, true, nil
}
