package sqlstore

import (
	"fmt"

	"github.com/go-sql-driver/mysql"
)

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
