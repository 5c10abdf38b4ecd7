// Package sqltest opens the test database (testenv.MySQLDSN) as a migrated
// sqlstore.Store, for the tests of the packages built on it.
package sqltest

import (
	"context"
	"testing"

	gormmysql "gorm.io/driver/mysql"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"

	"github.com/seckill-lab/seckill/internal/testenv"
	"github.com/seckill-lab/seckill/stock/sqlstore"
)

// Store opens the test database (closed at the test's end) as an unbounded
// store and migrates the schema; the test is skipped or failed as testenv
// says when MySQL does not answer.
func Store(t testing.TB) *sqlstore.Store {
	t.Helper()
	return StoreOf(t, sqlstore.New)
}

// StoreOf is Store with the store built by open.
func StoreOf(t testing.TB, open func(*gorm.DB) *sqlstore.Store) *sqlstore.Store {
	t.Helper()
	dsn, err := sqlstore.PurchaseDSN(testenv.Get(t, testenv.MySQLDSN))
	if err != nil {
		t.Fatal(err)
	}
	db, err := gorm.Open(gormmysql.Open(dsn), &gorm.Config{Logger: logger.Discard})
	if err != nil {
		testenv.Unavailable(t, "MySQL", err)
	}
	sqlDB, _ := db.DB()
	t.Cleanup(func() { sqlDB.Close() })
	st := open(db)
	if err := st.Migrate(context.Background()); err != nil {
		testenv.Unavailable(t, "MySQL", err)
	}
	return st
}
