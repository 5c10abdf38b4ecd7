// Package mysqlerr classifies MySQL/MariaDB server errors for the packages
// that talk to the database directly (the store and the MySQL lock).
package mysqlerr

import (
	"errors"

	"github.com/go-sql-driver/mysql"
)

// Server error numbers the lab classifies.
const (
	DuplicateKey    = 1062 // ER_DUP_ENTRY: a UNIQUE key already holds the value
	LockWaitTimeout = 1205 // ER_LOCK_WAIT_TIMEOUT: innodb_lock_wait_timeout ran out
	Deadlock        = 1213 // ER_LOCK_DEADLOCK: InnoDB chose this transaction as the victim
)

// Number returns the server error number in err's chain, or 0.
func Number(err error) uint16 {
	var me *mysql.MySQLError
	if errors.As(err, &me) {
		return me.Number
	}
	return 0
}

// IsDuplicate reports a duplicate-key error.
func IsDuplicate(err error) bool { return Number(err) == DuplicateKey }

// IsContention reports an InnoDB deadlock or lock wait timeout: the
// statement was rolled back and may simply be tried again.
func IsContention(err error) bool {
	n := Number(err)
	return n == Deadlock || n == LockWaitTimeout
}
