package server

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"hash/fnv"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	_ "github.com/go-sql-driver/mysql" // MySQL driver for the health check

	"github.com/seckill-lab/seckill/internal/config"
	"github.com/seckill-lab/seckill/internal/idleprobe"
	"github.com/seckill-lab/seckill/stock/catalog"
)

// KindMySQL is the MariaDB server.
const KindMySQL Kind = "mysql"

// DatabaseName is the database the stack creates.
const DatabaseName = "seckill"

// offMySQL: MariaDB listens on B+40.
const offMySQL = 40

// MySQLDSN is the go-sql-driver DSN of database db at hostport.
func MySQLDSN(hostport, db string) string {
	return "root@tcp(" + hostport + ")/" + db + "?parseTime=true&loc=UTC"
}

// MySQLPort is MariaDB's port for base port base.
func MySQLPort(base int) int { return base + offMySQL }

// MariaDB is the MariaDB description: the goods and the orders live there,
// so every stack runs it. Its datadir is kept between runs (initialising
// it is the slow part); the database is created when missing.
var MariaDB = Spec{
	Position: 4,
	Group:    "mysql",
	Idle:     &idleMySQL,
	Required: true,
	Tools: []Tool{
		{Key: "mariadbd", Names: []string{"mariadbd", "mysqld"}, Version: []string{"--version"},
			Pkgs: map[string]string{pmApt: "mariadb-server", pmDnf: "mariadb-server", pmBrew: "mariadb"}},
		{Key: "mysql_install_db", Names: []string{"mariadb-install-db", "mysql_install_db"},
			Pkgs: map[string]string{pmApt: "mariadb-server", pmDnf: "mariadb-server", pmBrew: "mariadb"}},
	},
	// The 10.11 LTS line, Debian 12's.
	Image: "mariadb:10.11",
	Kinds: []KindSpec{{Kind: KindMySQL, Rank: 5, Check: func(ctx context.Context, addr string) error {
		return checkMySQL(ctx, MySQLDSN(addr, DatabaseName))
	}}},
	Ports: func(base int, _ bool) []PortUse { return []PortUse{{base + offMySQL, "mariadb"}} },
	Nodes: func(l Layout) []Node {
		const name = "mariadb"
		base := filepath.Join(l.Dir, name)
		dataDir, tmpDir := filepath.Join(base, "data"), filepath.Join(base, "tmp")
		root := os.Geteuid() == 0
		args := []string{"--no-defaults"}
		if root {
			args = append(args, "--user=root")
		}
		args = append(args, "--datadir="+dataDir, "--tmpdir="+tmpDir, "--port="+itoa(l.Base+offMySQL), "--bind-address=127.0.0.1",
			"--socket="+mysqlSocket(base), "--pid-file="+filepath.Join(base, "mariadb.pid"))
		args = append(append(args, MariaDBArgs(l.Durability)...),
			"--log-error="+filepath.Join(l.Dir, "logs", name+".log"))
		return []Node{{Name: name, Kind: KindMySQL, Port: l.Base + offMySQL, Bin: l.Tools.Bin["mariadbd"], Args: args,
			Prepare: func(ctx context.Context) error {
				if _, err := os.Stat(filepath.Join(dataDir, "mysql")); errors.Is(err, fs.ErrNotExist) {
					if err := installMariaDB(ctx, l.Tools.Bin["mysql_install_db"], base, dataDir, root); err != nil {
						return err
					}
				}
				if err := os.MkdirAll(tmpDir, 0o755); err != nil {
					return fmt.Errorf("mariadb: %w", err)
				}
				return nil
			},
			Ready: createDatabase}}
	},
	Env: func(base int, _, _ bool) [][2]string {
		return [][2]string{{config.EnvMySQLDSN, MySQLDSN(Addr(base+offMySQL), DatabaseName)}}
	},
	Links:  func(bool) []Link { return []Link{{Name: "mysql", Kinds: []Kind{KindMySQL}}} },
	Serves: map[string]string{"mysql": "mysql"},
	Durability: map[string]string{
		DurabilityDefault: "innodb_flush_log_at_trx_commit=1 (as shipped): the redo log is fsynced at every commit",
		DurabilityFsync:   "innodb_flush_log_at_trx_commit=1 (as shipped): the redo log is fsynced at every commit",
		DurabilityNone:    "innodb_flush_log_at_trx_commit=2: the redo log is written at commit and fsynced once a second",
	},
	Fsyncs: map[string]bool{DurabilityDefault: true, DurabilityFsync: true, DurabilityNone: false},
}

// MariaDBFlush is the redo log's flush argument at durability level d:
// fsynced at every commit, or with DurabilityNone written at commit and
// fsynced once a second.
func MariaDBFlush(d string) string {
	return "--innodb-flush-log-at-trx-commit=" + map[bool]string{true: "2", false: "1"}[d == DurabilityNone]
}

// MariaDBArgs are the server's settings beyond its paths and port, at
// durability level d: the local stack and the cluster's manifests share
// them.
func MariaDBArgs(d string) []string {
	return []string{"--skip-name-resolve", "--max-connections=1000", "--innodb-buffer-pool-size=128M", MariaDBFlush(d)}
}

// mysqlSocket returns the socket path, moved to the temp dir when the run
// dir is too deep for a unix socket path (108 bytes).
func mysqlSocket(base string) string {
	s := filepath.Join(base, "mysql.sock")
	if len(s) < 100 {
		return s
	}
	h := fnv.New32a()
	h.Write([]byte(base))
	return filepath.Join(os.TempDir(), fmt.Sprintf("seckill-%08x.sock", h.Sum32()))
}

// checkMySQL: SELECT 1 answers.
func checkMySQL(ctx context.Context, dsn string) error {
	db, err := sql.Open("mysql", dsn+"&timeout=2s")
	if err != nil {
		return fmt.Errorf("mysql: %w", err)
	}
	defer db.Close()
	var one int
	if err := db.QueryRowContext(ctx, "SELECT 1").Scan(&one); err != nil {
		return fmt.Errorf("mysql SELECT 1: %w", err)
	}
	return nil
}

// createDatabase creates the lab's database when missing.
func createDatabase(ctx context.Context, hostport string) error {
	db, err := sql.Open("mysql", "root@tcp("+hostport+")/?timeout=2s")
	if err != nil {
		return fmt.Errorf("mysql: %w", err)
	}
	defer db.Close()
	if _, err := db.ExecContext(ctx, "CREATE DATABASE IF NOT EXISTS `"+DatabaseName+"`"); err != nil {
		return fmt.Errorf("create database %s: %w", DatabaseName, err)
	}
	return nil
}

// installMariaDB initialises a datadir (in a temporary directory renamed
// on success, so a failed install leaves nothing half-done).
func installMariaDB(ctx context.Context, bin, base, dataDir string, root bool) error {
	tmp := dataDir + ".init"
	if err := os.RemoveAll(tmp); err != nil {
		return fmt.Errorf("mariadb: %w", err)
	}
	if err := os.MkdirAll(tmp, 0o755); err != nil {
		return fmt.Errorf("mariadb: %w", err)
	}
	logPath := filepath.Join(base, "..", "logs", "mariadb-install.log")
	if err := os.MkdirAll(filepath.Dir(logPath), 0o755); err != nil {
		return fmt.Errorf("mariadb: %w", err)
	}
	lf, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o644)
	if err != nil {
		return fmt.Errorf("mariadb: %w", err)
	}
	defer lf.Close()
	// A private tmpdir: concurrent installs sharing /tmp collide on their
	// temporary table names and fail.
	tmpDir := filepath.Join(base, "tmp")
	if err := os.MkdirAll(tmpDir, 0o755); err != nil {
		return fmt.Errorf("mariadb: %w", err)
	}
	args := []string{"--no-defaults", "--datadir=" + tmp, "--tmpdir=" + tmpDir, "--auth-root-authentication-method=normal", "--skip-test-db"}
	if root {
		args = append(args, "--user=root")
	}
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Stdout, cmd.Stderr = lf, lf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 5 * time.Second
	if err := cmd.Run(); err != nil {
		// Killed (ctx done): wait until its group (the bootstrap mariadbd)
		// is gone, so nothing outlives `up`.
		if cmd.Process != nil {
			for i := 0; i < 100 && syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) == nil; i++ {
				time.Sleep(50 * time.Millisecond)
			}
		}
		if ctx.Err() != nil {
			return fmt.Errorf("mariadb: mysql_install_db: %w", ctx.Err())
		}
		return fmt.Errorf("mariadb: mysql_install_db failed (%v): %s (see %s)", err, errorLines(logPath), filepath.Clean(logPath))
	}
	if err := os.RemoveAll(dataDir); err != nil {
		return fmt.Errorf("mariadb: %w", err)
	}
	if err := os.Rename(tmp, dataDir); err != nil {
		return fmt.Errorf("mariadb: %w", err)
	}
	return nil
}

// errorLines returns the lines of path that mention an error (at most 3).
func errorLines(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	var out []string
	for _, l := range strings.Split(string(b), "\n") {
		if strings.Contains(strings.ToLower(l), "error") && len(out) < 3 {
			out = append(out, strings.TrimSpace(l))
		}
	}
	return strings.Join(out, " | ")
}

func init() { register(&MariaDB) }

// The idle probes of MySQL (internal/idleprobe): a point UPDATE in a transaction (the statement alone), and the
// COMMIT of such a transaction (the UPDATE untimed first), on a table of
// the probes' own, dropped after.

// mysqlTable is the probes' table.
const mysqlTable = "`seckill_idleprobe`"

// mysqlTx begins a transaction, untimed.
func mysqlTx(ctx context.Context, db *sql.DB) (*sql.Tx, error) {
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return nil, fmt.Errorf("begin: %w", err)
	}
	return tx, nil
}

const mysqlUpdate = "UPDATE " + mysqlTable + " SET n = n + 1 WHERE id = 1"

var mysqlOps = []idleprobe.Op[*sql.DB]{
	{Op: "update", Sample: func(ctx context.Context, db *sql.DB, _ string) (time.Duration, error) {
		tx, err := mysqlTx(ctx, db)
		if err != nil {
			return 0, err
		}
		defer tx.Rollback()
		t0 := time.Now()
		if _, err := tx.ExecContext(ctx, mysqlUpdate); err != nil {
			return 0, fmt.Errorf("update: %w", err)
		}
		d := time.Since(t0)
		return d, tx.Commit()
	}},
	{Op: "commit", Sample: func(ctx context.Context, db *sql.DB, _ string) (time.Duration, error) {
		tx, err := mysqlTx(ctx, db)
		if err != nil {
			return 0, err
		}
		defer tx.Rollback()
		if _, err := tx.ExecContext(ctx, mysqlUpdate); err != nil {
			return 0, fmt.Errorf("update: %w", err)
		}
		t0 := time.Now()
		if err := tx.Commit(); err != nil {
			return 0, fmt.Errorf("commit: %w", err)
		}
		return time.Since(t0), nil
	}},
}

func dialMySQL(ctx context.Context, dsn string) (*sql.DB, func(context.Context) error, error) {
	db, err := sql.Open("mysql", dsn)
	if err != nil {
		return nil, nil, err
	}
	db.SetMaxOpenConns(1)
	for _, q := range []string{
		"CREATE TABLE IF NOT EXISTS " + mysqlTable + " (id INT PRIMARY KEY, n BIGINT NOT NULL) ENGINE=InnoDB",
		"INSERT IGNORE INTO " + mysqlTable + " (id, n) VALUES (1, 0)",
	} {
		if _, err := db.ExecContext(ctx, q); err != nil {
			_ = db.Close()
			return nil, nil, fmt.Errorf("%s: %w", q, err)
		}
	}
	return db, func(ctx context.Context) error {
		defer db.Close()
		_, err := db.ExecContext(ctx, "DROP TABLE IF EXISTS "+mysqlTable)
		return err
	}, nil
}

// idleMySQL is the server's entry of IdleProbes.
var idleMySQL = idleprobe.For(catalog.ServerMySQL, dialMySQL, mysqlOps)
