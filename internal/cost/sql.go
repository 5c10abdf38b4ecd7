package cost

import (
	"context"
	"database/sql/driver"
	"errors"
	"strings"
	"sync"

	"github.com/seckill-lab/seckill/stock/catalog"
	"github.com/seckill-lab/seckill/stock/phase"
)

// The meter counts MySQL/MariaDB's client with a wrapping driver.Connector (Connector). Exec, Query,
// Begin, Commit, Rollback and Prepare are one round trip each; the
// Commit of a transaction that wrote (an INSERT, UPDATE, DELETE or
// REPLACE ran in it), or a write outside a transaction, is one write:
// with innodb_flush_log_at_trx_commit=1 one redo-log fsync.

// Connector wraps c so that every connection it opens counts its round
// trips against MySQL (sql.OpenDB(m.Connector(c))). A new connection's
// handshake is not counted, nor a statement's close (it has no reply).
func (m *Meter) Connector(c driver.Connector) driver.Connector { return &connector{Connector: c, m: m} }

type connector struct {
	driver.Connector
	m *Meter
}

func (c *connector) Connect(ctx context.Context) (driver.Conn, error) {
	conn, err := c.Connector.Connect(ctx)
	if err != nil {
		return nil, err
	}
	return &sqlConn{Conn: conn, m: c.m}, nil
}

// sqlConn counts one connection's requests. database/sql uses a
// connection from one goroutine at a time, so its state needs no lock.
type sqlConn struct {
	driver.Conn
	m  *Meter
	tx *sqlTx // the open transaction, nil outside one
}

// sqlTx is one transaction's state: whether it wrote, whether it holds row
// locks, and the mark of its last statement (its COMMIT has no context).
type sqlTx struct {
	driver.Tx
	c      *sqlConn
	wrote  bool
	locked bool
	mark   phase.Mark
}

// statement classifies a statement: whether it writes and whether it takes
// row locks (a write, or a locking read). A MariaDB `SET STATEMENT ... FOR`
// prefix is skipped. A batch (statements joined by ";", as
// sqlstore.SQLPurchase) writes when one of them writes, and holds its locks
// past the round trip only when it does not end its transaction.
func statement(query string) (write, locks bool) {
	parts := strings.Split(strings.TrimRight(strings.TrimSpace(query), ";"), ";")
	if len(parts) > 1 {
		for _, p := range parts {
			w, l := statement(p)
			write, locks = write || w, locks || l
		}
		switch end := strings.ToUpper(strings.TrimSpace(parts[len(parts)-1])); end {
		case "COMMIT", "ROLLBACK":
			locks = false
		}
		return write, locks
	}
	q := strings.ToUpper(strings.TrimSpace(query))
	if strings.HasPrefix(q, "SET STATEMENT") {
		if i := strings.Index(q, " FOR "); i >= 0 {
			q = strings.TrimSpace(q[i+len(" FOR "):])
		}
	}
	verb, _, _ := strings.Cut(q, " ")
	switch verb {
	case "INSERT", "UPDATE", "DELETE", "REPLACE":
		return true, true
	case "SELECT":
		return false, strings.Contains(q, " FOR UPDATE") || strings.Contains(q, " FOR SHARE") || strings.Contains(q, " LOCK IN SHARE MODE")
	}
	return false, false
}

// kind is a statement's classification (statement).
type kind struct{ write, locks bool }

// kinds caches statement's answer by query text: the purchase paths send
// the same few texts (with "?" placeholders: the driver below interpolates
// the values), and classifying splits and upper-cases the whole batch on
// every purchase.
var kinds struct {
	sync.RWMutex
	m map[string]kind
}

// maxKinds bounds the cache; texts beyond it are classified each time.
const maxKinds = 256

// classify is statement, cached for the texts seen first.
func classify(query string) (write, locks bool) {
	kinds.RLock()
	k, ok := kinds.m[query]
	kinds.RUnlock()
	if ok {
		return k.write, k.locks
	}
	write, locks = statement(query)
	kinds.Lock()
	if kinds.m == nil {
		kinds.m = map[string]kind{}
	}
	if len(kinds.m) < maxKinds {
		kinds.m[query] = kind{write, locks}
	}
	kinds.Unlock()
	return write, locks
}

// counted counts one statement that reached the server under ctx and was
// answered with err: a failed statement (a duplicate key) wrote nothing
// and locked nothing.
func (c *sqlConn) counted(ctx context.Context, query string, err error) {
	write, locks := classify(query)
	write, locks = write && err == nil, locks && err == nil
	mk := phase.Of(ctx)
	t := c.tx
	if t == nil {
		c.m.recordIn(catalog.ServerMySQL, mk, op{write: write})
		return
	}
	t.mark = mk
	c.m.recordIn(catalog.ServerMySQL, mk, op{})
	if t.locked {
		c.m.add(catalog.ServerMySQL, RowLocked, op{})
	}
	t.wrote = t.wrote || write
	t.locked = t.locked || locks
}

func (c *sqlConn) ExecContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Result, error) {
	e, ok := c.Conn.(driver.ExecerContext)
	if !ok {
		return nil, driver.ErrSkip
	}
	r, err := e.ExecContext(ctx, query, args)
	if !errors.Is(err, driver.ErrSkip) {
		c.counted(ctx, query, err)
	}
	return r, err
}

func (c *sqlConn) QueryContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Rows, error) {
	q, ok := c.Conn.(driver.QueryerContext)
	if !ok {
		return nil, driver.ErrSkip
	}
	r, err := q.QueryContext(ctx, query, args)
	if !errors.Is(err, driver.ErrSkip) {
		c.counted(ctx, query, err)
	}
	return r, err
}

func (c *sqlConn) PrepareContext(ctx context.Context, query string) (driver.Stmt, error) {
	var s driver.Stmt
	var err error
	if p, ok := c.Conn.(driver.ConnPrepareContext); ok {
		s, err = p.PrepareContext(ctx, query)
	} else {
		s, err = c.Conn.Prepare(query)
	}
	c.m.record(ctx, catalog.ServerMySQL, op{})
	if err != nil {
		return nil, err
	}
	return &sqlStmt{Stmt: s, c: c, query: query}, nil
}

func (c *sqlConn) BeginTx(ctx context.Context, opts driver.TxOptions) (driver.Tx, error) {
	b, ok := c.Conn.(driver.ConnBeginTx)
	if !ok {
		return nil, errors.New("cost: the MySQL driver's connection has no BeginTx")
	}
	tx, err := b.BeginTx(ctx, opts)
	mk := phase.Of(ctx)
	c.m.recordIn(catalog.ServerMySQL, mk, op{})
	if err != nil {
		return nil, err
	}
	c.tx = &sqlTx{Tx: tx, c: c, mark: mk}
	return c.tx, nil
}

func (c *sqlConn) Ping(ctx context.Context) error {
	p, ok := c.Conn.(driver.Pinger)
	if !ok {
		return nil
	}
	err := p.Ping(ctx)
	c.m.record(ctx, catalog.ServerMySQL, op{})
	return err
}

func (c *sqlConn) ResetSession(ctx context.Context) error {
	if r, ok := c.Conn.(driver.SessionResetter); ok {
		return r.ResetSession(ctx)
	}
	return nil
}

func (c *sqlConn) IsValid() bool {
	if v, ok := c.Conn.(driver.Validator); ok {
		return v.IsValid()
	}
	return true
}

func (c *sqlConn) CheckNamedValue(nv *driver.NamedValue) error {
	if ch, ok := c.Conn.(driver.NamedValueChecker); ok {
		return ch.CheckNamedValue(nv)
	}
	return driver.ErrSkip
}

// end counts the transaction's COMMIT (commit) or ROLLBACK: one round
// trip, and for a COMMIT of a transaction that wrote, one write.
func (t *sqlTx) end(commit bool, err error) {
	t.c.tx = nil
	w := commit && err == nil && t.wrote
	t.c.m.recordIn(catalog.ServerMySQL, t.mark, op{write: w})
	if t.locked {
		t.c.m.add(catalog.ServerMySQL, RowLocked, op{write: w})
	}
}

func (t *sqlTx) Commit() error {
	err := t.Tx.Commit()
	t.end(true, err)
	return err
}

func (t *sqlTx) Rollback() error {
	err := t.Tx.Rollback()
	t.end(false, err)
	return err
}

// sqlStmt counts a prepared statement's executions.
type sqlStmt struct {
	driver.Stmt
	c     *sqlConn
	query string
}

func (s *sqlStmt) ExecContext(ctx context.Context, args []driver.NamedValue) (driver.Result, error) {
	e, ok := s.Stmt.(driver.StmtExecContext)
	if !ok {
		return nil, errors.New("cost: the MySQL driver's statement has no ExecContext")
	}
	r, err := e.ExecContext(ctx, args)
	s.c.counted(ctx, s.query, err)
	return r, err
}

func (s *sqlStmt) QueryContext(ctx context.Context, args []driver.NamedValue) (driver.Rows, error) {
	q, ok := s.Stmt.(driver.StmtQueryContext)
	if !ok {
		return nil, errors.New("cost: the MySQL driver's statement has no QueryContext")
	}
	r, err := q.QueryContext(ctx, args)
	s.c.counted(ctx, s.query, err)
	return r, err
}

func (s *sqlStmt) CheckNamedValue(nv *driver.NamedValue) error {
	if ch, ok := s.Stmt.(driver.NamedValueChecker); ok {
		return ch.CheckNamedValue(nv)
	}
	return driver.ErrSkip
}
