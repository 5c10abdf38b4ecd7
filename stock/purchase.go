package stock

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/seckill-lab/seckill/internal/mysqlerr"
)

// SQLPurchase is the whole lock-free purchase as one transaction in one
// round trip (args: SQLDeduct's qty, goods id, qty, then SQLInsertOrder's
// eight): BEGIN, the conditional deduction, the order inserted only when
// the deduction matched a row (ROW_COUNT() > 0), COMMIT.
//
// Why one round trip: every sale of one goods updates the same row, and
// InnoDB holds that row's lock from the UPDATE to the COMMIT. Sent as four
// statements, the lock is held across two of the client's turnarounds
// (answer the UPDATE, send the INSERT; answer the INSERT, send the
// COMMIT), and on a loaded machine each turnaround waits for the client to
// be scheduled. Sent as one, the lock is held only while the server runs
// the statements. It needs a connection with multiStatements=true
// (go-sql-driver/mysql); the instances' and the bench's ceiling open theirs
// so.
const SQLPurchase = "BEGIN; " + SQLDeduct + "; " + sqlInsertOrderIfDeducted + "; COMMIT"

// sqlInsertOrderIfDeducted is SQLInsertOrder that inserts nothing when the
// statement before it changed no row (a sold-out deduction).
const sqlInsertOrderIfDeducted = "INSERT INTO orders (goods_id, qty, user_id, request_id, instance, strategy, fence_token, created_at) " +
	"SELECT ?, ?, ?, ?, ?, ?, ?, ? FROM DUAL WHERE ROW_COUNT() > 0"

// ExecPurchase runs SQLPurchase for o on one connection of db. sold is
// false when the deduction matched no row (sold out, or no such goods) and
// nothing was written. When sold, o.ID is the new order's id and remaining
// the stock left. A request id that was already sold is
// errDuplicateRequest, and nothing is written.
func ExecPurchase(ctx context.Context, db *sql.DB, o *Order, remaining *int64) (sold bool, err error) {
	sold, left, err := execWrite(ctx, db, writeDeduct, o, o.Qty, o.GoodsID, o.Qty)
	if err != nil {
		return false, fmt.Errorf("purchase: %w", err)
	}
	if sold {
		*remaining = left
	}
	return sold, nil
}

// txWrite is a stock write that goes in one transaction with the order:
// the write, the order's insert, COMMIT.
type txWrite struct {
	stmt string
	// conditional: the order is inserted only when the write matched a
	// row (a conditional deduction, a fenced or versioned write). An
	// unconditional write sells whatever it changed: two unprotected
	// writers of the same value both sell, the lost update the lab shows.
	conditional bool
}

// The purchase paths' writes.
var (
	writeDeduct    = txWrite{SQLDeduct, true}
	writeStock     = txWrite{sqlWriteStock, false}
	writeFenced    = txWrite{sqlWriteFenced, true}
	writeVersioned = txWrite{sqlWriteVersioned, true}
)

// batch is w's transaction as one batch: BEGIN, the write, the insert
// (SQLInsertOrder, or sqlInsertOrderIfDeducted when conditional), COMMIT.
func (w txWrite) batch() string {
	insert := SQLInsertOrder
	if w.conditional {
		insert = sqlInsertOrderIfDeducted
	}
	return "BEGIN; " + w.stmt + "; " + insert + "; COMMIT"
}

// execWrite runs w (args) and o's insert in one transaction. written is
// false when a conditional write matched no row (nothing was written).
// When written, o has its id, and writeID is the write's LAST_INSERT_ID
// (the stock left, for SQLDeduct).
//
// It is one round trip (w.batch()), but for an order under a per-user rule
// (o.Rule): the rule's check and slot (checkUser) run between the write and
// the insert, so that transaction goes statement by statement.
func execWrite(ctx context.Context, db *sql.DB, w txWrite, o *Order, args ...any) (written bool, writeID int64, err error) {
	if o.CreatedAt.IsZero() {
		o.CreatedAt = time.Now()
	}
	if o.Rule.Limit > 0 {
		return execWriteTx(ctx, db, w, o, args...)
	}
	args = append(args, o.GoodsID, o.Qty, o.UserID, o.RequestID, o.Instance, o.Strategy, o.FenceToken, o.CreatedAt)
	affected, ids, err := execBatch(ctx, db, w.batch(), args...)
	if err != nil {
		return false, 0, err
	}
	if affected[2] == 0 {
		return false, 0, nil
	}
	o.ID = ids[2]
	return true, ids[1], nil
}

// execWriteTx is execWrite statement by statement: BEGIN, the write, the
// order's insert with its per-user check (insertOrderTx), COMMIT.
func execWriteTx(ctx context.Context, db *sql.DB, w txWrite, o *Order, args ...any) (written bool, writeID int64, err error) {
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return false, 0, fmt.Errorf("begin: %w", err)
	}
	defer func() {
		if !written || err != nil {
			_ = tx.Rollback()
		}
	}()
	r, err := tx.ExecContext(ctx, w.stmt, args...)
	if err != nil {
		return false, 0, fmt.Errorf("write stock: %w", err)
	}
	n, err := r.RowsAffected()
	if err != nil {
		return false, 0, fmt.Errorf("write stock: %w", err)
	}
	if n == 0 && w.conditional {
		return false, 0, nil
	}
	if writeID, err = r.LastInsertId(); err != nil {
		return false, 0, fmt.Errorf("write stock: %w", err)
	}
	if err := insertOrderTx(ctx, tx, o); err != nil {
		return false, 0, err
	}
	if err := tx.Commit(); err != nil {
		return false, 0, fmt.Errorf("commit: %w", err)
	}
	return true, writeID, nil
}

// execBatch sends query, four statements (BEGIN, two, COMMIT), in one
// round trip on one connection of db and returns each statement's
// affected rows and last insert id. The server stops a batch at its first
// error, which leaves the transaction open with what ran before: it is
// rolled back before execBatch returns. A duplicate order (the request id
// was sold before) is errDuplicateRequest.
func execBatch(ctx context.Context, db *sql.DB, query string, args ...any) (affected, ids []int64, err error) {
	nv := make([]driver.NamedValue, len(args))
	for i, a := range args {
		v, err := driver.DefaultParameterConverter.ConvertValue(a)
		if err != nil {
			return nil, nil, fmt.Errorf("argument %d: %w", i+1, err)
		}
		nv[i] = driver.NamedValue{Ordinal: i + 1, Value: v}
	}
	conn, err := db.Conn(ctx)
	if err != nil {
		return nil, nil, fmt.Errorf("connection: %w", err)
	}
	defer conn.Close()
	err = conn.Raw(func(dc any) error {
		ex, ok := dc.(driver.ExecerContext)
		if !ok {
			return fmt.Errorf("the MySQL connection (%T) cannot execute directly", dc)
		}
		r, err := ex.ExecContext(ctx, query, nv)
		if err != nil {
			return err
		}
		mr, ok := r.(mysql.Result)
		if !ok {
			return fmt.Errorf("the driver's result (%T) has no per-statement counts", r)
		}
		affected, ids = mr.AllRowsAffected(), mr.AllLastInsertIds()
		return nil
	})
	if err != nil {
		_, _ = conn.ExecContext(context.WithoutCancel(ctx), "ROLLBACK")
		var me *mysql.MySQLError
		switch {
		case mysqlerr.IsDuplicate(err):
			return nil, nil, errDuplicateRequest
		case errors.As(err, &me) && me.Number == 1064:
			return nil, nil, fmt.Errorf("the server refused the batched statement; the DSN needs multiStatements=true: %w", err)
		}
		return nil, nil, err
	}
	if len(affected) != 4 || len(ids) != 4 {
		return nil, nil, fmt.Errorf("expected 4 statement results, got %d", len(affected))
	}
	return affected, ids, nil
}

// ConfigureMySQL sets what the purchase path needs on a connection
// configuration: parameters interpolated on the client (one round trip per
// statement instead of prepare, execute and close; safe with utf8mb4, the
// only charset used) and multiStatements, for SQLPurchase.
func ConfigureMySQL(mc *mysql.Config) {
	mc.InterpolateParams = true
	mc.MultiStatements = true
	mc.ParseTime = true
}

// PurchaseDSN is dsn with ConfigureMySQL's settings, for code that opens
// the database from a DSN string (gorm's dialector, tests).
func PurchaseDSN(dsn string) (string, error) {
	mc, err := mysql.ParseDSN(dsn)
	if err != nil {
		return "", fmt.Errorf("MySQL DSN: %w", err)
	}
	ConfigureMySQL(mc)
	return mc.FormatDSN(), nil
}
