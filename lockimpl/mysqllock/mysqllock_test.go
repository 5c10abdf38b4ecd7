package mysqllock_test

import (
	"context"
	"database/sql"
	"errors"
	"testing"
	"time"

	_ "github.com/go-sql-driver/mysql"

	"github.com/seckill-lab/seckill/internal/testenv"
	"github.com/seckill-lab/seckill/lockimpl"
	"github.com/seckill-lab/seckill/lockimpl/locktest"
	"github.com/seckill-lab/seckill/lockimpl/mysqllock"
)

// db opens a new connection pool (an independent "instance"), with the lock
// table in place.
func db(tb testing.TB) *sql.DB {
	tb.Helper()
	d, err := sql.Open("mysql", testenv.Get(tb, testenv.MySQLDSN))
	if err != nil {
		tb.Fatalf("open: %v", err)
	}
	tb.Cleanup(func() { _ = d.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := d.PingContext(ctx); err != nil {
		testenv.Unavailable(tb, "mysql", err)
	}
	if err := mysqllock.EnsureSchema(ctx, d); err != nil {
		tb.Fatal(err)
	}
	return d
}

func rows(tb testing.TB, name string) int {
	var n int
	if err := db(tb).QueryRow(`SELECT COUNT(*) FROM `+mysqllock.Table+` WHERE name = ?`, name).Scan(&n); err != nil {
		tb.Fatalf("count: %v", err)
	}
	return n
}

func TestConformance(t *testing.T) {
	locktest.Run(t, locktest.Factory{
		New: func(tb testing.TB, opts lockimpl.Options) lockimpl.Locker {
			return mysqllock.New(db(tb), opts)
		},
		Caps: locktest.Capabilities{Distributed: true, Tokens: true, Watchdog: true, LostLease: true, NoRenew: true},
		Break: func(tb testing.TB, l lockimpl.Locker, lease *lockimpl.Lease) {
			if _, err := db(tb).Exec(`DELETE FROM `+mysqllock.Table+` WHERE name = ?`, l.(*mysqllock.Locker).Name(lease.Key)); err != nil {
				tb.Fatalf("delete row: %v", err)
			}
		},
		AssertClean: func(tb testing.TB, l lockimpl.Locker, key string) {
			if n := rows(tb, l.(*mysqllock.Locker).Name(key)); n != 0 {
				tb.Errorf("%d lock rows left for %q", n, key)
			}
		},
		Goroutines: 32,
		Iterations: 5,
	})
}

// TestExpiredRowReclaimed: a holder that died (its row expired, nobody
// renews it) does not block the key for longer than the TTL.
func TestExpiredRowReclaimed(t *testing.T) {
	ctx := context.Background()
	d := db(t)
	l := mysqllock.New(d, lockimpl.Options{})
	key := locktest.Key(t)
	if _, err := d.ExecContext(ctx, `INSERT INTO `+mysqllock.Table+` (name, owner, expires_at) VALUES (?, 'dead-holder', NOW(6) - INTERVAL 1 SECOND)`, l.Name(key)); err != nil {
		t.Fatal(err)
	}
	lease, err := l.TryLock(ctx, key)
	if err != nil {
		t.Fatalf("TryLock over an expired row: %v", err)
	}
	if err := lease.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	// A live row of someone else is not reclaimed.
	if _, err := d.ExecContext(ctx, `INSERT INTO `+mysqllock.Table+` (name, owner, expires_at) VALUES (?, 'live-holder', NOW(6) + INTERVAL 1 MINUTE)`, l.Name(key)); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _, _ = d.Exec(`DELETE FROM `+mysqllock.Table+` WHERE name = ?`, l.Name(key)) })
	if _, err := l.TryLock(ctx, key); !errors.Is(err, lockimpl.ErrLocked) {
		t.Fatalf("TryLock over a live row: err = %v, want ErrLocked", err)
	}
}
