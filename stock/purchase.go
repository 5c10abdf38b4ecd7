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
// errDuplicateRequest: the server stops at the failed INSERT, and the open
// transaction (with its deduction) is rolled back before it returns.
func ExecPurchase(ctx context.Context, db *sql.DB, o *Order, remaining *int64) (sold bool, err error) {
	if o.CreatedAt.IsZero() {
		o.CreatedAt = time.Now()
	}
	conn, err := db.Conn(ctx)
	if err != nil {
		return false, fmt.Errorf("purchase: connection: %w", err)
	}
	defer conn.Close()
	args := []driver.NamedValue{
		{Ordinal: 1, Value: o.Qty}, {Ordinal: 2, Value: o.GoodsID}, {Ordinal: 3, Value: o.Qty},
		{Ordinal: 4, Value: o.GoodsID}, {Ordinal: 5, Value: o.Qty}, {Ordinal: 6, Value: o.UserID}, {Ordinal: 7, Value: o.RequestID},
		{Ordinal: 8, Value: o.Instance}, {Ordinal: 9, Value: o.Strategy}, {Ordinal: 10, Value: o.FenceToken}, {Ordinal: 11, Value: o.CreatedAt},
	}
	var affected, ids []int64
	err = conn.Raw(func(dc any) error {
		ex, ok := dc.(driver.ExecerContext)
		if !ok {
			return fmt.Errorf("purchase: the MySQL connection (%T) cannot execute directly", dc)
		}
		r, err := ex.ExecContext(ctx, SQLPurchase, args)
		if err != nil {
			return err
		}
		mr, ok := r.(mysql.Result)
		if !ok {
			return fmt.Errorf("purchase: the driver's result (%T) has no per-statement counts", r)
		}
		affected, ids = mr.AllRowsAffected(), mr.AllLastInsertIds()
		return nil
	})
	if err != nil {
		// The server stops a batch at its first error: a failed INSERT
		// leaves the transaction open with its deduction applied.
		_, _ = conn.ExecContext(context.WithoutCancel(ctx), "ROLLBACK")
		var me *mysql.MySQLError
		switch {
		case mysqlerr.IsDuplicate(err):
			return false, errDuplicateRequest
		case errors.As(err, &me) && me.Number == 1064:
			return false, fmt.Errorf("purchase: the server refused the batched statement; the DSN needs multiStatements=true: %w", err)
		}
		return false, fmt.Errorf("purchase: %w", err)
	}
	if len(affected) != 4 || len(ids) != 4 {
		return false, fmt.Errorf("purchase: expected 4 statement results, got %d", len(affected))
	}
	if affected[1] == 0 {
		return false, nil
	}
	*remaining, o.ID = ids[1], ids[2]
	return true, nil
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
