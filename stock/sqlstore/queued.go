package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/seckill-lab/seckill/lockimpl/mysqlerr"
	"github.com/seckill-lab/seckill/stock"
)

// Outcome is what WriteQueued made of one queued order.
type Outcome int

// The outcomes of a queued order.
const (
	Written   Outcome = iota // its row and its deduction are committed
	Duplicate                // its request id was already written: skipped
	Rejected                 // the stock did not cover it (or the goods is gone)
)

const (
	sqlInsertOrderWithID = "INSERT INTO orders (id, goods_id, qty, user_id, request_id, instance, strategy, fence_token, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)"
	sqlRequestWritten    = "SELECT COUNT(*) FROM orders WHERE request_id = ?"
)

// WriteQueued writes the orders redis-stream queued (read by package
// orderstream's consumer) to MySQL: every order row and one
// stock deduction per goods, in one transaction. An order whose request id
// is already written is a duplicate (skipped). When the stock of a goods
// does not cover the batch, each entry is written in a transaction of its
// own and the ones it does not cover are rejected. work is the simulated
// business work of writing them (the setting's work_delay), done once per
// batch inside the transaction. An error (MySQL down) wrote nothing: the
// entries stay pending.
func (s *Store) WriteQueued(ctx context.Context, es []stock.Order, work time.Duration) ([]Outcome, error) {
	out := make([]Outcome, len(es))
	err := s.inTx(ctx, func(tx *sql.Tx) error {
		if err := sleepCtx(ctx, work); err != nil {
			return err
		}
		clear(out)
		per := map[int64]int64{}
		whole, err := insertStreamOrders(ctx, tx, es)
		if err != nil {
			return err
		}
		for i := range es {
			if !whole {
				dup, err := insertStreamOrder(ctx, tx, &es[i])
				if err != nil {
					return err
				}
				if dup {
					out[i] = Duplicate
					continue
				}
			}
			per[es[i].GoodsID] += es[i].Qty
		}
		for goods, qty := range per {
			r, err := tx.ExecContext(ctx, SQLDeduct, qty, goods, qty)
			if err != nil {
				return fmt.Errorf("deduct stock: %w", err)
			}
			if n, err := r.RowsAffected(); err != nil {
				return fmt.Errorf("deduct stock: %w", err)
			} else if n == 0 {
				return stock.ErrSoldOut
			}
		}
		return nil
	})
	if !errors.Is(err, stock.ErrSoldOut) {
		return out, err
	}
	// One goods' stock did not cover the batch: one by one.
	for i := range es {
		err := s.inTx(ctx, func(tx *sql.Tx) error {
			dup, err := insertStreamOrder(ctx, tx, &es[i])
			if err != nil || dup {
				out[i] = Duplicate
				return err
			}
			out[i] = Written
			r, err := tx.ExecContext(ctx, SQLDeduct, es[i].Qty, es[i].GoodsID, es[i].Qty)
			if err != nil {
				return fmt.Errorf("deduct stock: %w", err)
			}
			if n, err := r.RowsAffected(); err != nil {
				return fmt.Errorf("deduct stock: %w", err)
			} else if n == 0 {
				out[i] = Rejected
				return stock.ErrSoldOut
			}
			return nil
		})
		if err != nil && !errors.Is(err, stock.ErrSoldOut) {
			return out, err
		}
	}
	return out, nil
}

// insertStreamOrders inserts every entry's order in one statement (one
// round trip for the batch) and reports whether it did. A duplicate
// request id or order id among them fails the statement and inserts
// nothing (MySQL rolls back only the statement): ok is false, and the
// caller goes entry by entry (insertStreamOrder), which sorts them out.
func insertStreamOrders(ctx context.Context, tx *sql.Tx, es []stock.Order) (ok bool, err error) {
	if len(es) < 2 {
		return false, nil
	}
	args := make([]any, 0, len(es)*9)
	for _, e := range es {
		o := e
		args = append(args, o.ID, o.GoodsID, o.Qty, o.UserID, o.RequestID, o.Instance, o.Strategy, o.FenceToken, o.CreatedAt)
	}
	if _, err := tx.ExecContext(ctx, multiRow(sqlInsertOrderWithID, len(es)), args...); err != nil {
		if mysqlerr.IsDuplicate(err) {
			return false, nil
		}
		return false, fmt.Errorf("insert %d orders: %w", len(es), err)
	}
	return true, nil
}

// multiRow returns stmt, a one-row INSERT ... VALUES (?, ...), with n
// rows of the same placeholders.
func multiRow(stmt string, n int) string {
	row := stmt[strings.LastIndex(stmt, "("):]
	var b strings.Builder
	b.Grow(len(stmt) + (n-1)*(len(row)+2))
	b.WriteString(stmt)
	for range n - 1 {
		b.WriteString(", ")
		b.WriteString(row)
	}
	return b.String()
}

// insertStreamOrder inserts o with its stream order id in tx; dup is true
// when its request id is already written. An id taken by another row (an
// order of another strategy numbered by AUTO_INCREMENT) gives way to a
// fresh one.
func insertStreamOrder(ctx context.Context, tx *sql.Tx, o *stock.Order) (dup bool, err error) {
	_, err = tx.ExecContext(ctx, sqlInsertOrderWithID, o.ID, o.GoodsID, o.Qty, o.UserID, o.RequestID, o.Instance, o.Strategy, o.FenceToken, o.CreatedAt)
	if err == nil {
		return false, nil
	}
	if !mysqlerr.IsDuplicate(err) {
		return false, fmt.Errorf("insert order: %w", err)
	}
	var n int
	if err := tx.QueryRowContext(ctx, sqlRequestWritten, o.RequestID).Scan(&n); err != nil {
		return false, fmt.Errorf("insert order: look up its request id: %w", err)
	}
	if n > 0 {
		return true, nil
	}
	fresh := *o
	fresh.ID = 0
	if err := insertOrderTx(ctx, tx, &fresh); err != nil {
		return false, err
	}
	o.ID = fresh.ID
	return false, nil
}
