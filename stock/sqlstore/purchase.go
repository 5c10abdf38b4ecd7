package sqlstore

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/go-sql-driver/mysql"
	"gorm.io/gorm"

	"github.com/seckill-lab/seckill/lockimpl"
	"github.com/seckill-lab/seckill/lockimpl/mysqlerr"
	"github.com/seckill-lab/seckill/stock"
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

// ReadModifyWrite runs Chapter 1's reductStock in one transaction: a plain
// read of the stock, the check, the work, an unconditional write of
// stock-qty and the order insert. It is correct only when the caller
// serialises it.
//
// With d.Fence set (fencing), the holder first claims the row with its
// token, in its own statement: `SET fence = token WHERE fence < token`,
// and the stock write becomes `... AND fence = token`. A holder whose lock
// expired and went to a newer token finds its claim refused or overtaken
// and is rolled back with ErrStaleLock. A check on the write alone
// (`fence < token`) is not enough for a read-modify-write: the stale
// holder may write first, with the older token, after the new holder has
// already read the old stock; both writes then pass in token order and one
// sale is lost.
//
// inside, when not nil, runs after BEGIN and before the read; its release
// runs right after the stock write, before the order insert and COMMIT.
// That is the deliberately flawed mutex-tx ordering of Chapter 1's
// "transaction mode": a @Transactional service whose synchronized stock
// method returns (unlocks) while the transaction, and the order insert that
// follows in it, have not committed yet.
//
// Without inside, it takes two round trips after the claim: the read, then
// the write, the order and COMMIT in one batch (execWrite), sent after
// BeforeCommit passed. A lease that lapses while the batch travels is the
// same exposure as one that lapses while a lone COMMIT travels.
func (s *Store) ReadModifyWrite(ctx context.Context, d stock.Deduction, inside func(context.Context) (release func(), err error)) (stock.Result, error) {
	res := stock.Result{Order: d.Order}
	if d.Fence != 0 {
		if err := s.claim(ctx, d.Order.GoodsID, d.Fence); err != nil {
			return res, err
		}
	}
	if inside == nil {
		return s.readThenWrite(ctx, d)
	}
	err := s.inTx(ctx, func(tx *sql.Tx) error {
		unlock, err := inside(ctx)
		if err != nil {
			return err
		}
		var once sync.Once
		release := func() { once.Do(unlock) }
		defer release()
		inStock, err := readStock(ctx, tx, d.Order.GoodsID, false)
		if err != nil {
			return err
		}
		d.Note(stock.EventRead, inStock)
		if inStock < d.Order.Qty {
			return stock.ErrSoldOut
		}
		if err := sleepCtx(ctx, d.WorkDelay); err != nil {
			return err
		}
		remaining := inStock - d.Order.Qty
		var r sql.Result
		if d.Fence == 0 {
			r, err = tx.ExecContext(ctx, sqlWriteStock, remaining, d.Order.GoodsID)
		} else {
			r, err = tx.ExecContext(ctx, sqlWriteFenced, remaining, d.Order.GoodsID, d.Fence)
		}
		if err != nil {
			return fmt.Errorf("write stock: %w", err)
		}
		if n, err := r.RowsAffected(); err != nil {
			return fmt.Errorf("write stock: %w", err)
		} else if n == 0 && d.Fence != 0 {
			return stock.ErrStaleLock
		}
		res.Remaining = remaining
		d.Note(stock.EventWritten, remaining)
		release()
		if err := insertOrderTx(ctx, tx, &res.Order); err != nil {
			return err
		}
		if d.BeforeCommit != nil {
			return d.BeforeCommit()
		}
		return nil
	})
	return res, err
}

// readThenWrite is ReadModifyWrite without inside: a plain read, the
// check, the work, BeforeCommit, then the write batch.
func (s *Store) readThenWrite(ctx context.Context, d stock.Deduction) (stock.Result, error) {
	res := stock.Result{Order: d.Order}
	db, err := s.sqlDB()
	if err != nil {
		return res, err
	}
	inStock, err := readStock(ctx, db, d.Order.GoodsID, false)
	if err != nil {
		return res, err
	}
	d.Note(stock.EventRead, inStock)
	if inStock < d.Order.Qty {
		return res, stock.ErrSoldOut
	}
	// A check-then-insert per-user rule checks where the naive code does,
	// with the stock read and before the work: its race spans the work.
	if r := d.Order.Rule; r.Limit > 0 && r.CheckThenInsert {
		if err := countUser(ctx, db, &d.Order); err != nil {
			return res, err
		}
		res.Order.Rule = stock.UserRule{}
	}
	if err := sleepCtx(ctx, d.WorkDelay); err != nil {
		return res, err
	}
	if d.BeforeCommit != nil {
		if err := d.BeforeCommit(); err != nil {
			return res, err
		}
	}
	remaining := inStock - d.Order.Qty
	var written bool
	if d.Fence == 0 {
		written, _, err = execWrite(ctx, db, writeStock, &res.Order, remaining, d.Order.GoodsID)
	} else {
		written, _, err = execWrite(ctx, db, writeFenced, &res.Order, remaining, d.Order.GoodsID, d.Fence)
	}
	if err != nil {
		if errors.Is(err, stock.ErrDuplicateRequest) {
			return res, err
		}
		return res, fmt.Errorf("write stock and order: %w", err)
	}
	if !written {
		return res, stock.ErrStaleLock
	}
	res.Remaining = remaining
	d.Note(stock.EventWritten, remaining)
	return res, nil
}

// ReadModifyWriteBatch is ReadModifyWrite for a batch of deductions of one
// goods, in one transaction, under one lock hold: with fence set, the row
// is claimed once with it (see ReadModifyWrite); the stock is read once,
// the work (ds[0].WorkDelay) done once; then, in order, each deduction
// whose qty the stock left covers inserts its order (a request id already
// sold is that deduction's ErrDuplicateRequest and deducts nothing: MySQL
// rolls back only the failed statement) and each other one is ErrSoldOut;
// the stock is written once (`AND fence = ?` with fence), beforeCommit runs
// and the transaction commits. Each deduction's Result has the stock left
// after its own sale, in batch order. err, when not nil, failed the whole
// batch (goods missing, stale lock, lease lost, MySQL down) and is also in
// every errs slot.
func (s *Store) ReadModifyWriteBatch(ctx context.Context, ds []stock.Deduction, fence uint64, beforeCommit func() error) (results []stock.Result, errs []error, err error) {
	results, errs = make([]stock.Result, len(ds)), make([]error, len(ds))
	for i := range ds {
		results[i].Order = ds[i].Order
	}
	fail := func(err error) ([]stock.Result, []error, error) {
		for i := range errs {
			errs[i] = err
		}
		return results, errs, err
	}
	if len(ds) == 0 {
		return results, errs, nil
	}
	goods := ds[0].Order.GoodsID
	for _, d := range ds {
		if d.Order.GoodsID != goods {
			return fail(fmt.Errorf("%w: a batch sells one goods, got %d and %d", stock.ErrInvalid, goods, d.Order.GoodsID))
		}
	}
	if fence != 0 {
		if err := s.claim(ctx, goods, fence); err != nil {
			return fail(err)
		}
	}
	err = s.inTx(ctx, func(tx *sql.Tx) error {
		clear(errs)
		inStock, err := readStock(ctx, tx, goods, false)
		if err != nil {
			return err
		}
		if slices.ContainsFunc(ds, func(d stock.Deduction) bool { return d.Order.Qty <= inStock }) {
			if err := sleepCtx(ctx, ds[0].WorkDelay); err != nil {
				return err
			}
		}
		left := inStock
		sold := make([]bool, len(ds))
		inserted, err := s.insertBatchOrders(ctx, tx, ds, inStock)
		if err != nil {
			return err
		}
		for i := range ds {
			d := &ds[i]
			d.Note(stock.EventRead, left)
			if d.Order.Qty > left {
				errs[i] = stock.ErrSoldOut
				continue
			}
			if !inserted { // else insertBatchOrders wrote it
				if err := insertOrderTx(ctx, tx, &d.Order); err != nil {
					if !errors.Is(err, stock.ErrDuplicateRequest) && !errors.Is(err, stock.ErrUserLimit) {
						return err
					}
					errs[i] = err
					continue
				}
			}
			left -= d.Order.Qty
			results[i].Order, results[i].Remaining, sold[i] = d.Order, left, true
		}
		if left == inStock {
			return nil // nothing sold: nothing to write
		}
		var r sql.Result
		if fence == 0 {
			r, err = tx.ExecContext(ctx, sqlWriteStock, left, goods)
		} else {
			r, err = tx.ExecContext(ctx, sqlWriteFenced, left, goods, fence)
		}
		if err != nil {
			return fmt.Errorf("write stock: %w", err)
		}
		if n, err := r.RowsAffected(); err != nil {
			return fmt.Errorf("write stock: %w", err)
		} else if n == 0 && fence != 0 {
			return stock.ErrStaleLock
		}
		for i := range ds {
			if sold[i] {
				ds[i].Note(stock.EventWritten, results[i].Remaining)
			}
		}
		if beforeCommit != nil {
			return beforeCommit()
		}
		return nil
	})
	if err != nil {
		return fail(err)
	}
	return results, errs, nil
}

// insertBatchOrders inserts, in one multi-row INSERT, the orders of the
// deductions of ds that a stock of stock covers, taken in order (those
// ReadModifyWriteBatch sells when none is a duplicate), and sets their ids:
// one round trip for the batch instead of one per order, which is what a
// batch's lock hold costs at a cross-zone round trip. inserted is false,
// with nothing written, when it does not apply and the caller inserts
// order by order:
//   - fewer than two orders, or a per-user limit (its slots are taken row
//     by row);
//   - a request id already sold (the statement fails whole; the order by
//     order path tells which one);
//   - a server that does not number the rows of one INSERT consecutively
//     (innodb_autoinc_lock_mode 2, MySQL 8's default; MariaDB's is 1), so
//     that the ids could not be told from the first one.
func (s *Store) insertBatchOrders(ctx context.Context, tx *sql.Tx, ds []stock.Deduction, inStock int64) (inserted bool, err error) {
	var rows []int
	for i, left := 0, inStock; i < len(ds); i++ {
		if ds[i].Order.Rule.Limit > 0 {
			return false, nil
		}
		if ds[i].Order.Qty <= left {
			left -= ds[i].Order.Qty
			rows = append(rows, i)
		}
	}
	if len(rows) < 2 || len(rows)*orderColumns > maxPlaceholders {
		return false, nil
	}
	step, err := s.idStep(ctx, tx)
	if err != nil || step == 0 {
		return false, err
	}
	args := make([]any, 0, len(rows)*orderColumns)
	for _, i := range rows {
		o := &ds[i].Order
		if o.CreatedAt.IsZero() {
			o.CreatedAt = time.Now()
		}
		args = append(args, o.GoodsID, o.Qty, o.UserID, o.RequestID, o.Instance, o.Strategy, o.FenceToken, o.CreatedAt)
	}
	r, err := tx.ExecContext(ctx, multiRow(SQLInsertOrder, len(rows)), args...)
	if err != nil {
		if mysqlerr.IsDuplicate(err) {
			return false, nil // the statement wrote nothing
		}
		return false, fmt.Errorf("insert %d orders: %w", len(rows), err)
	}
	first, err := r.LastInsertId() // the first row's id
	if err != nil {
		return false, fmt.Errorf("insert %d orders: %w", len(rows), err)
	}
	for n, i := range rows {
		ds[i].Order.ID = first + int64(n)*step
	}
	return true, nil
}

// orderColumns are SQLInsertOrder's placeholders; maxPlaceholders is the
// protocol's bound on one statement's.
const (
	orderColumns    = 8
	maxPlaceholders = 65535
)

// idStep returns the step between the ids of the rows of one multi-row
// INSERT (auto_increment_increment), or 0 when the server does not number
// them consecutively (innodb_autoinc_lock_mode 2). It asks the server once
// per store.
func (s *Store) idStep(ctx context.Context, q rowQuerier) (int64, error) {
	s.idsMu.Lock()
	defer s.idsMu.Unlock()
	if s.idsKnown {
		return s.idStepV, nil
	}
	var mode, inc int64
	if err := q.QueryRowContext(ctx, "SELECT @@innodb_autoinc_lock_mode, @@auto_increment_increment").Scan(&mode, &inc); err != nil {
		return 0, fmt.Errorf("read the server's auto-increment mode: %w", err)
	}
	if mode <= 1 {
		s.idStepV = inc
	}
	s.idsKnown = true
	return s.idStepV, nil
}

// claim marks goods id as being worked on by the holder of token, unless
// a holder with a token at least as new already claimed it.
func (s *Store) claim(ctx context.Context, id int64, token uint64) error {
	db, err := s.sqlDB()
	if err != nil {
		return err
	}
	r, err := db.ExecContext(ctx, sqlClaim, token, id, token)
	if err != nil {
		return fmt.Errorf("claim goods %d with token %d: %w", id, token, err)
	}
	if n, err := r.RowsAffected(); err != nil {
		return fmt.Errorf("claim goods %d with token %d: %w", id, token, err)
	} else if n == 0 {
		if _, err := s.Goods(ctx, id); err != nil {
			return err
		}
		return fmt.Errorf("token %d is older than the goods' fence: %w", token, stock.ErrStaleLock)
	}
	return nil
}

// ForUpdate runs the unit with SELECT ... FOR UPDATE: the row lock is the
// lock. lockWait bounds the row-lock wait (InnoDB counts whole seconds).
func (s *Store) ForUpdate(ctx context.Context, d stock.Deduction, lockWait time.Duration) (stock.Result, error) {
	res := stock.Result{Order: d.Order}
	secs := max(int(lockWait.Round(time.Second)/time.Second), 1)
	prefix, perTx := s.lockWaitPrefix(ctx, secs)
	err := s.inTx(ctx, func(tx *sql.Tx) error {
		if perTx {
			if _, err := tx.ExecContext(ctx, "SET SESSION innodb_lock_wait_timeout = ?", secs); err != nil {
				return fmt.Errorf("set lock wait: %w", err)
			}
		}
		var inStock int64
		if err := tx.QueryRowContext(ctx, prefix+sqlReadStockLocked, d.Order.GoodsID).Scan(&inStock); err != nil {
			return goodsErr(d.Order.GoodsID, err)
		}
		if inStock < d.Order.Qty {
			return stock.ErrSoldOut
		}
		if err := sleepCtx(ctx, d.WorkDelay); err != nil {
			return err
		}
		res.Remaining = inStock - d.Order.Qty
		if _, err := tx.ExecContext(ctx, sqlWriteStock, res.Remaining, d.Order.GoodsID); err != nil {
			return fmt.Errorf("write stock: %w", err)
		}
		return insertOrderTx(ctx, tx, &res.Order)
	})
	return res, classifyLockWait(err)
}

// Optimistic runs the unit as a version compare-and-swap: read stock and
// version, work, then UPDATE ... WHERE version = read version. A lost race
// retries after a short jittered backoff, at most maxRetries times and
// within budget; then it gives up with ErrLockTimeout.
func (s *Store) Optimistic(ctx context.Context, d stock.Deduction, maxRetries int, budget time.Duration) (stock.Result, error) {
	deadline := time.Now().Add(budget)
	for attempt := 0; ; attempt++ {
		res, err := s.optimisticOnce(ctx, d)
		if !errors.Is(err, errVersionConflict) {
			return res, err
		}
		if attempt >= maxRetries || time.Now().After(deadline) {
			return res, fmt.Errorf("optimistic: %d attempts lost the version race: %w", attempt+1, stock.ErrLockTimeout)
		}
		backoff := time.Duration(1+rand.IntN(1+min(attempt, 8))) * time.Millisecond
		if err := sleepCtx(ctx, backoff); err != nil {
			return res, err
		}
	}
}

var errVersionConflict = errors.New("version conflict")

func (s *Store) optimisticOnce(ctx context.Context, d stock.Deduction) (stock.Result, error) {
	res := stock.Result{Order: d.Order}
	db, err := s.sqlDB()
	if err != nil {
		return res, err
	}
	var inStock, version int64
	if err := db.QueryRowContext(ctx, sqlReadVersioned, d.Order.GoodsID).Scan(&inStock, &version); err != nil {
		return res, goodsErr(d.Order.GoodsID, err)
	}
	if inStock < d.Order.Qty {
		return res, stock.ErrSoldOut
	}
	if err := sleepCtx(ctx, d.WorkDelay); err != nil {
		return res, err
	}
	res.Remaining = inStock - d.Order.Qty
	// The compare-and-swap, the order and COMMIT in one round trip.
	written, _, err := execWrite(ctx, db, writeVersioned, &res.Order, res.Remaining, d.Order.GoodsID, version)
	switch {
	case errors.Is(err, stock.ErrDuplicateRequest):
		return res, err
	case err != nil:
		return res, fmt.Errorf("write stock and order: %w", err)
	case !written:
		return res, errVersionConflict
	}
	return res, nil
}

// Atomic runs the lock-free deduction: SQLPurchase, the conditional
// UPDATE `stock = stock - qty WHERE stock >= qty` (SQLDeduct, which also
// returns the new stock) and the order in one transaction sent as one
// round trip (ExecPurchase). It is the sql-atomic strategy and the MySQL
// half of redis-atomic. A bounded store (NewBounded) runs at most its
// bound of them at once; a purchase whose context ends while it waits
// writes nothing.
func (s *Store) Atomic(ctx context.Context, d stock.Deduction) (stock.Result, error) {
	res := stock.Result{Order: d.Order}
	if err := sleepCtx(ctx, d.WorkDelay); err != nil {
		return res, err
	}
	db, err := s.sqlDB()
	if err != nil {
		return res, err
	}
	if err := s.atomic.enter(ctx); err != nil {
		return res, err
	}
	ok, err := ExecPurchase(ctx, db, &res.Order, &res.Remaining)
	s.atomic.leave()
	if err != nil || ok {
		return res, err
	}
	return res, soldOutOrMissing(ctx, db, d.Order.GoodsID)
}

// sqlDB is the store's database/sql handle (the one gorm wraps).
func (s *Store) sqlDB() (*sql.DB, error) {
	db, err := s.db.DB()
	if err != nil {
		return nil, fmt.Errorf("mysql: the store's gorm handle has no database/sql pool: %w", err)
	}
	return db, nil
}

// WriteTimeout bounds a transaction once it has begun, and a write batch
// once it is sent: the end of the purchase's request does not cut them.
// A write cut on the wire leaves its outcome unknown to the instance while
// the server may still commit it, after the instance has let its lock go
// and the next holder has read the stock (measured: a client's timeout
// during a paused instance's write left a unit taken without its order).
// So a transaction ends by COMMIT or ROLLBACK, and the instance knows
// which, before the purchase returns.
const WriteTimeout = 10 * time.Second

// uncut is ctx without its cancellation, bounded by WriteTimeout.
func uncut(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.WithoutCancel(ctx), WriteTimeout)
}

// inTx runs f in one transaction: committed when f returns nil, rolled back
// otherwise. The transaction runs on uncut(ctx): f's statements still end
// with ctx, the COMMIT or ROLLBACK does not.
func (s *Store) inTx(ctx context.Context, f func(*sql.Tx) error) error {
	db, err := s.sqlDB()
	if err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("begin: %w", err)
	}
	tctx, cancel := uncut(ctx)
	defer cancel()
	tx, err := db.BeginTx(tctx, nil)
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

// insertOrderTx inserts o in tx and sets its id and creation time, after
// o.Rule's per-user check (ErrUserLimit; peruser.go). A request id that
// was already sold is ErrDuplicateRequest (MySQL rolls back only that
// statement; the caller decides about the transaction).
func insertOrderTx(ctx context.Context, tx *sql.Tx, o *stock.Order) error {
	if o.CreatedAt.IsZero() {
		o.CreatedAt = time.Now()
	}
	slot, err := checkUser(ctx, tx, o)
	if err != nil {
		return err
	}
	r, err := tx.ExecContext(ctx, SQLInsertOrder, o.GoodsID, o.Qty, o.UserID, o.RequestID, o.Instance, o.Strategy, o.FenceToken, o.CreatedAt)
	if err != nil {
		if mysqlerr.IsDuplicate(err) {
			return errors.Join(stock.ErrDuplicateRequest, freeUserSlot(ctx, tx, o, slot))
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
func readStock(ctx context.Context, tx rowQuerier, id int64, locked bool) (int64, error) {
	q := sqlReadStock
	if locked {
		q = sqlReadStockLocked
	}
	var inStock int64
	if err := tx.QueryRowContext(ctx, q, id).Scan(&inStock); err != nil {
		return 0, goodsErr(id, err)
	}
	return inStock, nil
}

// rowQuerier is what reads one row: a *sql.DB, a *sql.Conn or a *sql.Tx.
type rowQuerier interface {
	QueryRowContext(context.Context, string, ...any) *sql.Row
}

// soldOutOrMissing tells why a conditional deduction matched no row.
func soldOutOrMissing(ctx context.Context, q rowQuerier, id int64) error {
	var n int64
	if err := q.QueryRowContext(ctx, sqlGoodsExists, id).Scan(&n); err != nil {
		return fmt.Errorf("check goods %d: %w", id, err)
	}
	if n == 0 {
		return fmt.Errorf("goods %d: %w", id, stock.ErrGoodsNotFound)
	}
	return stock.ErrSoldOut
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

// flavor caches whether the server is MariaDB (see lockWaitPrefix) and how
// it numbers the rows of one INSERT (see idStep).
type flavor struct {
	flavorOnce sync.Once
	mariadb    bool

	// idStep's answer, once known.
	idsMu    sync.Mutex
	idsKnown bool
	idStepV  int64
}

// goodsErr maps a failed read of goods id (sql.ErrNoRows: no such goods).
func goodsErr(id int64, err error) error {
	if errors.Is(err, sql.ErrNoRows) || errors.Is(err, gorm.ErrRecordNotFound) {
		return fmt.Errorf("goods %d: %w", id, stock.ErrGoodsNotFound)
	}
	return fmt.Errorf("read goods %d: %w", id, err)
}

func classifyLockWait(err error) error {
	if mysqlerr.IsContention(err) {
		return fmt.Errorf("row lock: %w: %w", stock.ErrLockTimeout, err)
	}
	return err
}

// sleepCtx waits d or until ctx is done.
func sleepCtx(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return nil
	}
	return lockimpl.Sleep(ctx, d)
}

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
// ErrDuplicateRequest, and nothing is written.
func ExecPurchase(ctx context.Context, db *sql.DB, o *stock.Order, remaining *int64) (sold bool, err error) {
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
func execWrite(ctx context.Context, db *sql.DB, w txWrite, o *stock.Order, args ...any) (written bool, writeID int64, err error) {
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
func execWriteTx(ctx context.Context, db *sql.DB, w txWrite, o *stock.Order, args ...any) (written bool, writeID int64, err error) {
	if err := ctx.Err(); err != nil {
		return false, 0, fmt.Errorf("begin: %w", err)
	}
	tctx, cancel := uncut(ctx) // the COMMIT is not cut (WriteTimeout)
	defer cancel()
	tx, err := db.BeginTx(tctx, nil)
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
// was sold before) is ErrDuplicateRequest.
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
	if err := ctx.Err(); err != nil {
		return nil, nil, fmt.Errorf("connection: %w", err)
	}
	// Sent, the batch runs to its COMMIT or its error: not cut (WriteTimeout).
	wctx, cancel := uncut(ctx)
	defer cancel()
	err = conn.Raw(func(dc any) error {
		ex, ok := dc.(driver.ExecerContext)
		if !ok {
			return fmt.Errorf("the MySQL connection (%T) cannot execute directly", dc)
		}
		r, err := ex.ExecContext(wctx, query, nv)
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
			return nil, nil, stock.ErrDuplicateRequest
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
