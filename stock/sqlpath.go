package stock

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"gorm.io/gorm"

	"github.com/seckill-lab/seckill/internal/mysqlerr"
)

// The purchase path's statements. They go through database/sql, not gorm:
// the hot path does no reflection, and every statement is one round trip
// (the instances' DSN interpolates parameters, so there is no prepare and
// close around each execute). The bench's database ceiling runs the same
// statements (SQLDeduct, SQLInsertOrder).
const (
	// SQLDeduct is sql-atomic's conditional deduction (args: qty, goods
	// id, qty). The new stock is passed through LAST_INSERT_ID(expr), so
	// it comes back in the OK packet (sql.Result.LastInsertId) and needs no
	// SELECT while the row lock is held.
	SQLDeduct = "UPDATE goods SET stock = LAST_INSERT_ID(stock - ?) WHERE id = ? AND stock >= ?"
	// SQLInsertOrder inserts one order (args: goods id, qty, user id,
	// request id, instance, strategy, fence token, created at); its
	// LastInsertId is the order id.
	SQLInsertOrder = "INSERT INTO orders (goods_id, qty, user_id, request_id, instance, strategy, fence_token, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)"

	sqlReadStock       = "SELECT stock FROM goods WHERE id = ?"
	sqlReadStockLocked = "SELECT stock FROM goods WHERE id = ? FOR UPDATE"
	sqlReadVersioned   = "SELECT stock, version FROM goods WHERE id = ?"
	sqlWriteStock      = "UPDATE goods SET stock = ? WHERE id = ?"
	sqlWriteFenced     = "UPDATE goods SET stock = ? WHERE id = ? AND fence = ?"
	sqlWriteVersioned  = "UPDATE goods SET stock = ?, version = version + 1 WHERE id = ? AND version = ?"
	sqlClaim           = "UPDATE goods SET fence = ? WHERE id = ? AND fence < ?"
	sqlGoodsExists     = "SELECT COUNT(*) FROM goods WHERE id = ?"
)

// sqlDB is the store's database/sql handle (the one gorm wraps).
func (s *Store) sqlDB() (*sql.DB, error) {
	db, err := s.db.DB()
	if err != nil {
		return nil, fmt.Errorf("mysql: the store's gorm handle has no database/sql pool: %w", err)
	}
	return db, nil
}

// inTx runs f in one transaction: committed when f returns nil, rolled back
// otherwise.
func (s *Store) inTx(ctx context.Context, f func(*sql.Tx) error) error {
	db, err := s.sqlDB()
	if err != nil {
		return err
	}
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("begin: %w", err)
	}
	if err := f(tx); err != nil {
		_ = tx.Rollback()
		return err
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("commit: %w", err)
	}
	return nil
}

// insertOrderTx inserts o in tx and sets its id and creation time. A
// request id that was already sold is errDuplicateRequest (MySQL rolls
// back only that statement; the caller decides about the transaction).
func insertOrderTx(ctx context.Context, tx *sql.Tx, o *Order) error {
	if o.CreatedAt.IsZero() {
		o.CreatedAt = time.Now()
	}
	r, err := tx.ExecContext(ctx, SQLInsertOrder, o.GoodsID, o.Qty, o.UserID, o.RequestID, o.Instance, o.Strategy, o.FenceToken, o.CreatedAt)
	if err != nil {
		if mysqlerr.IsDuplicate(err) {
			return errDuplicateRequest
		}
		return fmt.Errorf("insert order: %w", err)
	}
	id, err := r.LastInsertId()
	if err != nil {
		return fmt.Errorf("insert order: %w", err)
	}
	o.ID = id
	return nil
}

// readStock reads goods id's stock in tx (FOR UPDATE when locked).
func readStock(ctx context.Context, tx *sql.Tx, id int64, locked bool) (int64, error) {
	q := sqlReadStock
	if locked {
		q = sqlReadStockLocked
	}
	var stock int64
	if err := tx.QueryRowContext(ctx, q, id).Scan(&stock); err != nil {
		return 0, goodsErr(id, err)
	}
	return stock, nil
}

// soldOutOrMissing tells why a conditional deduction matched no row.
func soldOutOrMissing(ctx context.Context, q interface {
	QueryRowContext(context.Context, string, ...any) *sql.Row
}, id int64) error {
	var n int64
	if err := q.QueryRowContext(ctx, sqlGoodsExists, id).Scan(&n); err != nil {
		return fmt.Errorf("check goods %d: %w", id, err)
	}
	if n == 0 {
		return fmt.Errorf("goods %d: %w", id, ErrGoodsNotFound)
	}
	return ErrSoldOut
}

// lockWaitPrefix returns how to bound one statement's row-lock wait to
// secs seconds: MariaDB takes it in the statement itself (SET STATEMENT ...
// FOR), so it costs no round trip; on MySQL the session variable is set
// first (one more statement per transaction).
func (s *Store) lockWaitPrefix(ctx context.Context, secs int) (prefix string, perTx bool) {
	s.flavorOnce.Do(func() {
		db, err := s.sqlDB()
		if err != nil {
			return
		}
		var v string
		if db.QueryRowContext(ctx, "SELECT VERSION()").Scan(&v) == nil {
			s.mariadb = strings.Contains(strings.ToLower(v), "mariadb")
		}
	})
	if s.mariadb {
		return fmt.Sprintf("SET STATEMENT innodb_lock_wait_timeout = %d FOR ", secs), false
	}
	return "", true
}

// flavor caches whether the server is MariaDB (see lockWaitPrefix).
type flavor struct {
	flavorOnce sync.Once
	mariadb    bool
}

// goodsErr maps a failed read of goods id (sql.ErrNoRows: no such goods).
func goodsErr(id int64, err error) error {
	if errors.Is(err, sql.ErrNoRows) || errors.Is(err, gorm.ErrRecordNotFound) {
		return fmt.Errorf("goods %d: %w", id, ErrGoodsNotFound)
	}
	return fmt.Errorf("read goods %d: %w", id, err)
}
