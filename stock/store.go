package stock

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"github.com/seckill-lab/seckill/internal/mysqlerr"
)

// Store reads and writes goods and orders. It is safe for concurrent use.
type Store struct {
	db *gorm.DB
	flavor
}

// NewStore wraps db.
func NewStore(db *gorm.DB) *Store { return &Store{db: db} }

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
	if err := db.AutoMigrate(&Goods{}, &Order{}); err != nil {
		return fmt.Errorf("migrate schema: %w", err)
	}
	g := Goods{ID: 1, Name: "demo"}
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
func (s *Store) Goods(ctx context.Context, id int64) (Goods, error) {
	var g Goods
	err := s.db.WithContext(ctx).Take(&g, id).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return g, fmt.Errorf("goods %d: %w", id, ErrGoodsNotFound)
	}
	if err != nil {
		return g, fmt.Errorf("read goods %d: %w", id, err)
	}
	return g, nil
}

// Reset sets the stock (creating the goods if needed) and deletes the
// goods' orders, in one transaction.
func (s *Store) Reset(ctx context.Context, id, stock int64) error {
	return s.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		g := Goods{ID: id, Name: fmt.Sprintf("goods-%d", id), Stock: stock, InitialStock: stock}
		err := tx.Clauses(clause.OnConflict{
			DoUpdates: clause.Assignments(map[string]any{"stock": stock, "initial_stock": stock, "version": 0, "fence": 0}),
		}).Create(&g).Error
		if err != nil {
			return fmt.Errorf("reset goods %d: %w", id, err)
		}
		if err := tx.Where("goods_id = ?", id).Delete(&Order{}).Error; err != nil {
			return fmt.Errorf("delete orders of goods %d: %w", id, err)
		}
		return nil
	})
}

// Audit summarises goods id: stock, orders, sold quantity, per instance.
func (s *Store) Audit(ctx context.Context, id int64) (Audit, error) {
	g, err := s.Goods(ctx, id)
	if err != nil {
		return Audit{}, err
	}
	var rows []struct {
		Instance string
		N        int64
		Qty      int64
	}
	err = s.db.WithContext(ctx).Model(&Order{}).
		Select("instance, COUNT(*) AS n, COALESCE(SUM(qty),0) AS qty").
		Where("goods_id = ?", id).Group("instance").Scan(&rows).Error
	if err != nil {
		return Audit{}, fmt.Errorf("audit orders of goods %d: %w", id, err)
	}
	per := make(map[string]int64, len(rows))
	var orders, sold int64
	for _, r := range rows {
		per[r.Instance] = r.Qty
		orders += r.N
		sold += r.Qty
	}
	return NewAudit(id, g.InitialStock, g.Stock, orders, sold, per), nil
}

// RequestIDs returns the request ids of goods id's persisted orders.
func (s *Store) RequestIDs(ctx context.Context, id int64) ([]string, error) {
	ids := []string{}
	if err := s.db.WithContext(ctx).Model(&Order{}).Where("goods_id = ?", id).Order("id").Pluck("request_id", &ids).Error; err != nil {
		return nil, fmt.Errorf("list orders of goods %d: %w", id, err)
	}
	return ids, nil
}

// OrderByRequest returns the order persisted for requestID, if any.
func (s *Store) OrderByRequest(ctx context.Context, requestID string) (Order, bool, error) {
	var o Order
	err := s.db.WithContext(ctx).Where("request_id = ?", requestID).Take(&o).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return o, false, nil
	}
	if err != nil {
		return o, false, fmt.Errorf("look up request %q: %w", requestID, err)
	}
	return o, true, nil
}

// errDuplicateRequest is returned when the order's request id already
// exists; the service answers with the original order.
var errDuplicateRequest = errors.New("request already sold")

// Deduction is one unit of work: the order to insert and the knobs of the
// critical section.
type Deduction struct {
	Order     Order
	WorkDelay time.Duration
	// Fence, when non-zero, is the lock's token: the holder claims the row
	// with it before reading and writes only while the claim stands (see
	// ReadModifyWrite).
	Fence uint64
	// BeforeCommit, when set, runs after the order insert and right before
	// COMMIT; an error rolls the whole deduction back (the lease check).
	BeforeCommit func() error
	// Trace, when set, is told the stock read (EventRead) and the stock
	// written (EventWritten), for the lock event stream.
	Trace func(kind EventKind, value int64)
}

func (d Deduction) trace(kind EventKind, v int64) {
	if d.Trace != nil {
		d.Trace(kind, v)
	}
}

// Result is a committed deduction.
type Result struct {
	Order     Order
	Remaining int64
}

// ReadModifyWrite runs the seeds' reductStock in one transaction: a plain
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
// That is the deliberately flawed mutex-tx ordering of seed 003's
// "transaction mode": a @Transactional service whose synchronized stock
// method returns (unlocks) while the transaction, and the order insert that
// follows in it, have not committed yet.
func (s *Store) ReadModifyWrite(ctx context.Context, d Deduction, inside func(context.Context) (release func(), err error)) (Result, error) {
	res := Result{Order: d.Order}
	if d.Fence != 0 {
		if err := s.claim(ctx, d.Order.GoodsID, d.Fence); err != nil {
			return res, err
		}
	}
	err := s.inTx(ctx, func(tx *sql.Tx) error {
		release := func() {}
		if inside != nil {
			r, err := inside(ctx)
			if err != nil {
				return err
			}
			var once sync.Once
			release = func() { once.Do(r) }
			defer release()
		}
		stock, err := readStock(ctx, tx, d.Order.GoodsID, false)
		if err != nil {
			return err
		}
		d.trace(EventRead, stock)
		if stock < d.Order.Qty {
			return ErrSoldOut
		}
		if err := sleepCtx(ctx, d.WorkDelay); err != nil {
			return err
		}
		remaining := stock - d.Order.Qty
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
			return ErrStaleLock
		}
		res.Remaining = remaining
		d.trace(EventWritten, remaining)
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
		return fmt.Errorf("token %d is older than the goods' fence: %w", token, ErrStaleLock)
	}
	return nil
}

// ForUpdate runs the unit with SELECT ... FOR UPDATE: the row lock is the
// lock. lockWait bounds the row-lock wait (InnoDB counts whole seconds).
func (s *Store) ForUpdate(ctx context.Context, d Deduction, lockWait time.Duration) (Result, error) {
	res := Result{Order: d.Order}
	secs := max(int(lockWait.Round(time.Second)/time.Second), 1)
	prefix, perTx := s.lockWaitPrefix(ctx, secs)
	err := s.inTx(ctx, func(tx *sql.Tx) error {
		if perTx {
			if _, err := tx.ExecContext(ctx, "SET SESSION innodb_lock_wait_timeout = ?", secs); err != nil {
				return fmt.Errorf("set lock wait: %w", err)
			}
		}
		var stock int64
		if err := tx.QueryRowContext(ctx, prefix+sqlReadStockLocked, d.Order.GoodsID).Scan(&stock); err != nil {
			return goodsErr(d.Order.GoodsID, err)
		}
		if stock < d.Order.Qty {
			return ErrSoldOut
		}
		if err := sleepCtx(ctx, d.WorkDelay); err != nil {
			return err
		}
		res.Remaining = stock - d.Order.Qty
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
func (s *Store) Optimistic(ctx context.Context, d Deduction, maxRetries int, budget time.Duration) (Result, error) {
	deadline := time.Now().Add(budget)
	for attempt := 0; ; attempt++ {
		res, err := s.optimisticOnce(ctx, d)
		if !errors.Is(err, errVersionConflict) {
			return res, err
		}
		if attempt >= maxRetries || time.Now().After(deadline) {
			return res, fmt.Errorf("optimistic: %d attempts lost the version race: %w", attempt+1, ErrLockTimeout)
		}
		backoff := time.Duration(1+rand.IntN(1+min(attempt, 8))) * time.Millisecond
		if err := sleepCtx(ctx, backoff); err != nil {
			return res, err
		}
	}
}

var errVersionConflict = errors.New("version conflict")

func (s *Store) optimisticOnce(ctx context.Context, d Deduction) (Result, error) {
	res := Result{Order: d.Order}
	db, err := s.sqlDB()
	if err != nil {
		return res, err
	}
	var stock, version int64
	if err := db.QueryRowContext(ctx, sqlReadVersioned, d.Order.GoodsID).Scan(&stock, &version); err != nil {
		return res, goodsErr(d.Order.GoodsID, err)
	}
	if stock < d.Order.Qty {
		return res, ErrSoldOut
	}
	if err := sleepCtx(ctx, d.WorkDelay); err != nil {
		return res, err
	}
	res.Remaining = stock - d.Order.Qty
	err = s.inTx(ctx, func(tx *sql.Tx) error {
		r, err := tx.ExecContext(ctx, sqlWriteVersioned, res.Remaining, d.Order.GoodsID, version)
		if err != nil {
			return fmt.Errorf("write stock: %w", err)
		}
		if n, err := r.RowsAffected(); err != nil {
			return fmt.Errorf("write stock: %w", err)
		} else if n == 0 {
			return errVersionConflict
		}
		return insertOrderTx(ctx, tx, &res.Order)
	})
	return res, err
}

// Atomic runs the lock-free deduction: one conditional UPDATE
// `stock = stock - qty WHERE stock >= qty` (SQLDeduct, which also returns
// the new stock), then the order, in one transaction: BEGIN, two
// statements, COMMIT. It is the sql-atomic strategy and the MySQL half of
// redis-atomic.
func (s *Store) Atomic(ctx context.Context, d Deduction) (Result, error) {
	res := Result{Order: d.Order}
	err := s.inTx(ctx, func(tx *sql.Tx) error {
		if err := sleepCtx(ctx, d.WorkDelay); err != nil {
			return err
		}
		r, err := tx.ExecContext(ctx, SQLDeduct, d.Order.Qty, d.Order.GoodsID, d.Order.Qty)
		if err != nil {
			return fmt.Errorf("deduct stock: %w", err)
		}
		n, err := r.RowsAffected()
		if err != nil {
			return fmt.Errorf("deduct stock: %w", err)
		}
		if n == 0 {
			return soldOutOrMissing(ctx, tx, d.Order.GoodsID)
		}
		if res.Remaining, err = r.LastInsertId(); err != nil {
			return fmt.Errorf("deduct stock: %w", err)
		}
		return insertOrderTx(ctx, tx, &res.Order)
	})
	return res, err
}

func classifyLockWait(err error) error {
	if mysqlerr.IsContention(err) {
		return fmt.Errorf("row lock: %w: %w", ErrLockTimeout, err)
	}
	return err
}

// sleepCtx waits d or until ctx is done.
func sleepCtx(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
