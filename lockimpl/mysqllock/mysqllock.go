// Package mysqllock is the `mysql-unique` strategy: a lock is a row of the
// table seckill_locks whose name column is UNIQUE.
//
//   - acquire INSERTs (name, owner uuid, expires_at = now + TTL); a duplicate
//     key (MySQL error 1062) means someone holds it;
//   - a row whose expires_at has passed belongs to a dead holder and is
//     reclaimed (DELETE ... WHERE name = ? AND expires_at < NOW(6), then
//     INSERT again), so a crashed holder blocks the key for at most a TTL;
//   - Lock retries with capped, jittered exponential backoff (2ms doubling
//     to 50ms) until ctx is done; there is no wake-up, so it is slow under
//     contention by design;
//   - release is DELETE ... WHERE name = ? AND owner = ? (0 rows: the lock
//     was no longer ours, lockimpl.ErrNotHeld);
//   - while held, expires_at is renewed every TTL/3 (UPDATE ... WHERE id = ?
//     AND owner = ?; 0 rows marks the lease lost);
//   - the token comes from a per-key fence counter (table
//     seckill_lock_fences), bumped by the new holder right after its insert
//     succeeded, i.e. while it holds the lock, so tokens strictly increase
//     in acquisition order. (The lock row's AUTO_INCREMENT id does not: an
//     INSERT allocates its id before it waits on the unique-key lock, so a
//     waiter with an older id can get in after a later one. The conformance
//     suite caught exactly that.)
//
// Times are the database server's (NOW(6)), so client clocks do not matter.
// Create the table with EnsureSchema.
package mysqllock

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"

	"github.com/seckill-lab/seckill/lockimpl"
	"github.com/seckill-lab/seckill/lockimpl/mysqlerr"
)

// Table is the lock table's name.
const Table = "seckill_locks"

// FenceTable holds the per-key fencing-token counters.
const FenceTable = "seckill_lock_fences"

const (
	backoffMin = 2 * time.Millisecond
	backoffMax = 16 * time.Millisecond
)

// EnsureSchema creates the lock table if it does not exist.
func EnsureSchema(ctx context.Context, db *sql.DB) error {
	_, err := db.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS `+Table+` (
  id BIGINT NOT NULL AUTO_INCREMENT PRIMARY KEY,
  name VARCHAR(191) NOT NULL,
  owner VARCHAR(64) NOT NULL,
  expires_at DATETIME(6) NOT NULL,
  UNIQUE KEY uk_seckill_locks_name (name)
) ENGINE=InnoDB`)
	if err != nil {
		return fmt.Errorf("mysqllock: create table %s: %w", Table, err)
	}
	_, err = db.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS `+FenceTable+` (
  name VARCHAR(191) NOT NULL PRIMARY KEY,
  fence BIGINT UNSIGNED NOT NULL
) ENGINE=InnoDB`)
	if err != nil {
		return fmt.Errorf("mysqllock: create table %s: %w", FenceTable, err)
	}
	return nil
}

// fence bumps and returns the key's fencing token. Only the holder calls
// it, so the bumps are serialized by the lock itself.
func (l *Locker) fence(ctx context.Context, name string) (uint64, error) {
	res, err := l.execRetry(ctx, `INSERT INTO `+FenceTable+` (name, fence) VALUES (?, LAST_INSERT_ID(1))
ON DUPLICATE KEY UPDATE fence = LAST_INSERT_ID(fence + 1)`, name)
	if err != nil {
		return 0, fmt.Errorf("mysqllock: fence %q: %w", name, err)
	}
	n, err := res.LastInsertId()
	if err != nil {
		return 0, fmt.Errorf("mysqllock: fence %q: %w", name, err)
	}
	return uint64(n), nil
}

// Locker is the unique-row lock. Build it with New; it is safe for
// concurrent use.
type Locker struct {
	db      *sql.DB
	ttl     time.Duration
	prefix  string
	noRenew bool
}

var _ lockimpl.Locker = (*Locker)(nil)

// New returns a Locker over db (owned by the caller; the table must exist,
// see EnsureSchema). Options: TTL (default lockimpl.DefaultTTL) is how far
// expires_at is set ahead, renewed at TTL/3; Prefix (default "") is
// prepended to the key to form the row name.
func New(db *sql.DB, opts lockimpl.Options) *Locker {
	return &Locker{db: db, ttl: opts.TTLOrDefault(), prefix: opts.PrefixOr(""), noRenew: opts.NoRenew}
}

// Name returns the row name of the lock named key.
func (l *Locker) Name(key string) string { return l.prefix + key }

func isDuplicate(err error) bool { return mysqlerr.IsDuplicate(err) }

func isContention(err error) bool { return mysqlerr.IsContention(err) }

// execRetry runs a statement, retrying it on contention (an InnoDB deadlock
// victim is rolled back and safe to repeat) for up to retryFor, 2 ms more
// apart each time up to 20 ms: waiters that keep inserting can make a
// release the victim again and again on a loaded machine.
func (l *Locker) execRetry(ctx context.Context, query string, args ...any) (sql.Result, error) {
	start := time.Now()
	for i := 0; ; i++ {
		res, err := l.db.ExecContext(ctx, query, args...)
		if err == nil || !isContention(err) || time.Since(start) >= retryFor {
			return res, err
		}
		if err := lockimpl.Sleep(ctx, time.Duration(2*min(i+1, 10))*time.Millisecond); err != nil {
			return nil, err
		}
	}
}

// retryFor bounds execRetry's retries of a statement that lost to
// contention.
const retryFor = time.Second

// attempt inserts the row, reclaiming an expired one first if the insert
// hits a live-looking duplicate. It returns the id, or ok=false when held.
func (l *Locker) attempt(ctx context.Context, name, owner string) (id int64, ok bool, err error) {
	ttlUS := l.ttl.Microseconds()
	insert := func() (int64, bool, error) {
		res, err := l.db.ExecContext(ctx,
			`INSERT INTO `+Table+` (name, owner, expires_at) VALUES (?, ?, NOW(6) + INTERVAL ? MICROSECOND)`,
			name, owner, ttlUS)
		if err != nil {
			if isDuplicate(err) || isContention(err) {
				return 0, false, nil
			}
			return 0, false, fmt.Errorf("mysqllock: insert %q: %w", name, err)
		}
		id, err := res.LastInsertId()
		if err != nil {
			return 0, false, fmt.Errorf("mysqllock: insert id %q: %w", name, err)
		}
		return id, true, nil
	}
	if id, ok, err = insert(); ok || err != nil {
		return id, ok, err
	}
	// A plain (non-locking) read first: only an expired row is worth a
	// locking DELETE.
	var expired bool
	err = l.db.QueryRowContext(ctx, `SELECT expires_at < NOW(6) FROM `+Table+` WHERE name = ?`, name).Scan(&expired)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return insert() // released meanwhile
	case err != nil:
		return 0, false, fmt.Errorf("mysqllock: read %q: %w", name, err)
	case !expired:
		return 0, false, nil
	}
	res, err := l.db.ExecContext(ctx, `DELETE FROM `+Table+` WHERE name = ? AND expires_at < NOW(6)`, name)
	if isContention(err) {
		return 0, false, nil
	}
	if err != nil {
		return 0, false, fmt.Errorf("mysqllock: reclaim %q: %w", name, err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return 0, false, nil
	}
	return insert()
}

// TryLock makes one attempt (including the reclaim of an expired row) and
// returns lockimpl.ErrLocked when a live row exists.
func (l *Locker) TryLock(ctx context.Context, key string) (*lockimpl.Lease, error) {
	name, owner := l.Name(key), uuid.NewString()
	start := time.Now()
	id, ok, err := l.attempt(ctx, name, owner)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, fmt.Errorf("mysqllock: trylock %q: %w", key, lockimpl.ErrLocked)
	}
	return l.acquired(ctx, key, name, owner, id, start)
}

// Lock retries with capped, jittered exponential backoff until the row is
// inserted or ctx is done.
func (l *Locker) Lock(ctx context.Context, key string) (*lockimpl.Lease, error) {
	name, owner := l.Name(key), uuid.NewString()
	lease, err := lockimpl.Poll(ctx, lockimpl.Backoff{Base: backoffMin, Max: backoffMax}, func(ctx context.Context) (*lockimpl.Lease, error) {
		start := time.Now()
		id, ok, err := l.attempt(ctx, name, owner)
		if err != nil {
			return nil, err
		}
		if !ok {
			return nil, lockimpl.ErrLocked
		}
		return l.acquired(ctx, key, name, owner, id, start)
	})
	if err != nil && ctx.Err() != nil {
		// An insert may have landed before the cancellation cut the
		// reply: make sure no row of ours stays.
		l.cleanup(name, owner)
		return nil, fmt.Errorf("mysqllock: lock %q: %w", key, ctx.Err())
	}
	return lease, err
}

// acquired fetches the token for a freshly inserted row and builds the
// lease; if that fails it gives the lock back.
func (l *Locker) acquired(ctx context.Context, key, name, owner string, id int64, start time.Time) (*lockimpl.Lease, error) {
	token, err := l.fence(ctx, name)
	if err != nil {
		l.cleanup(name, owner)
		if ctxErr := ctx.Err(); ctxErr != nil {
			return nil, fmt.Errorf("mysqllock: lock %q: %w", key, ctxErr)
		}
		return nil, err
	}
	return l.hold(key, name, owner, id, token, start), nil
}

// cleanup deletes a row of owner left by an interrupted insert.
func (l *Locker) cleanup(name, owner string) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_, _ = l.execRetry(ctx, `DELETE FROM `+Table+` WHERE name = ? AND owner = ?`, name, owner)
}

// hold builds the lease and starts the renewal of expires_at.
func (l *Locker) hold(key, name, owner string, id int64, token uint64, start time.Time) *lockimpl.Lease {
	stopRenew := func() {}
	lease := lockimpl.NewLease(key, token, func(ctx context.Context) error {
		stopRenew()
		// A plain (consistent, lock-free) read first: a stale holder learns
		// that its row is gone without locking the new holder's index entry,
		// where it would wait behind, or deadlock with, the lockers inserting
		// around it. Only our own row is then deleted, by primary key.
		var mine int
		err := l.db.QueryRowContext(ctx, `SELECT COUNT(*) FROM `+Table+` WHERE id = ? AND owner = ?`, id, owner).Scan(&mine)
		if err != nil {
			return fmt.Errorf("mysqllock: unlock %q: read row: %w", key, err)
		}
		if mine == 0 {
			return fmt.Errorf("mysqllock: unlock %q: row gone: %w", key, lockimpl.ErrNotHeld)
		}
		res, err := l.execRetry(ctx, `DELETE FROM `+Table+` WHERE id = ? AND owner = ?`, id, owner)
		if err != nil {
			return fmt.Errorf("mysqllock: unlock %q: %w", key, err)
		}
		if n, err := res.RowsAffected(); err != nil {
			return fmt.Errorf("mysqllock: unlock %q: %w", key, err)
		} else if n == 0 {
			return fmt.Errorf("mysqllock: unlock %q: row gone: %w", key, lockimpl.ErrNotHeld)
		}
		return nil
	})
	lease.SetValidUntil(start.Add(l.ttl))
	if l.noRenew { // Options.NoRenew: the row expires after TTL; the holder knows it
		stopRenew = lockimpl.ExpireAfter(lease, l.ttl)
		return lease
	}
	stopRenew = lockimpl.KeepAlive(l.ttl, func(ctx context.Context) error {
		start := time.Now()
		res, err := l.execRetry(ctx,
			`UPDATE `+Table+` SET expires_at = NOW(6) + INTERVAL ? MICROSECOND WHERE id = ? AND owner = ?`,
			l.ttl.Microseconds(), id, owner)
		if err != nil {
			return fmt.Errorf("mysqllock: renew %q: %w", name, err)
		}
		if n, err := res.RowsAffected(); err != nil {
			return fmt.Errorf("mysqllock: renew %q: %w", name, err)
		} else if n == 0 {
			return fmt.Errorf("mysqllock: row %d of %q gone: %w", id, name, lockimpl.ErrNotHeld)
		}
		lease.SetValidUntil(start.Add(l.ttl))
		return nil
	}, lease.MarkLost)
	return lease
}

// Backend is what the service needs of the MySQL lock: a Locker per
// setting, Ping and Clear of a key's lock row and fence counter.
type Backend struct {
	db *sql.DB
}

// NewBackend creates the lock tables if needed and returns the backend over
// db (owned by the caller).
func NewBackend(ctx context.Context, db *sql.DB) (*Backend, error) {
	if err := EnsureSchema(ctx, db); err != nil {
		return nil, err
	}
	return &Backend{db: db}, nil
}

// NewLocker returns a Locker for opts.
func (b *Backend) NewLocker(_ context.Context, opts lockimpl.Options) (lockimpl.Locker, error) {
	return New(b.db, opts), nil
}

// Ping checks the database.
func (b *Backend) Ping(ctx context.Context) error {
	if err := b.db.PingContext(ctx); err != nil {
		return fmt.Errorf("mysqllock: ping: %w", err)
	}
	return nil
}

// Clear deletes key's lock row and its fence counter.
func (b *Backend) Clear(ctx context.Context, key string) error {
	for _, table := range []string{Table, FenceTable} {
		if _, err := b.db.ExecContext(ctx, "DELETE FROM "+table+" WHERE name = ?", key); err != nil {
			return fmt.Errorf("mysqllock: clear %q in %s: %w", key, table, err)
		}
	}
	return nil
}

// Close does nothing: the handle belongs to the caller.
func (b *Backend) Close() error { return nil }
