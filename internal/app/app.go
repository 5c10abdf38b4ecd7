// Package app wires one `seckill serve` instance: it builds the backend
// clients from config.Config, the lock backends, the stock service and the
// HTTP handler, and serves until the context is done.
package app

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/redis/go-redis/v9"
	gormmysql "gorm.io/driver/mysql"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"

	"github.com/seckill-lab/seckill/internal/api"
	"github.com/seckill-lab/seckill/internal/config"
	"github.com/seckill-lab/seckill/internal/cost"
	"github.com/seckill-lab/seckill/stock"
	"github.com/seckill-lab/seckill/stock/catalog"
	"github.com/seckill-lab/seckill/stock/counterstore"
	"github.com/seckill-lab/seckill/stock/orderstream"
	"github.com/seckill-lab/seckill/stock/sqlstore"
)

// eventsKept is how many lock events an instance keeps for a late
// subscriber (GET /admin/events?replay=true).
const eventsKept = 20000

// Timeouts bound what one client may hold of the server. A slow client
// (headers or body trickling in) is cut off; zero fields take the defaults.
type Timeouts struct {
	// ReadHeader bounds reading the request headers. Default 5s.
	ReadHeader time.Duration
	// Read bounds reading the whole request, body included. Default 10s.
	Read time.Duration
	// Write bounds the handler and the response: longer than the longest
	// purchase (lock_wait up to 2m, work_delay up to 30s, plus the
	// database). Default 3m. The event stream (/admin/events) moves its
	// own deadline at each write, so it outlives this.
	Write time.Duration
	// Idle bounds a keep-alive connection between requests. Default 60s.
	Idle time.Duration
}

func (t Timeouts) withDefaults() Timeouts {
	def := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	def(&t.ReadHeader, 5*time.Second)
	def(&t.Read, 10*time.Second)
	def(&t.Write, 3*time.Minute)
	def(&t.Idle, 60*time.Second)
	return t
}

// Instance is one wired service instance.
type Instance struct {
	Config  config.Config
	Service *stock.Service
	Handler http.Handler
	// Timeouts of Serve; set before it is called.
	Timeouts Timeouts
	// MySQLRTT is the round trip to MySQL measured at start, which scales
	// the bound on lock-free purchases (DBInflight).
	MySQLRTT time.Duration
	// Cost counts the instance's requests to its servers (GET /admin/cost).
	Cost *cost.Meter

	backends *backends
	// stream is the instance's consumer of redis-stream's order queue,
	// on a client of its own (streamRedis, not metered: the cost model
	// prices the purchase path); nil without Redis.
	stream      *orderstream.Consumer
	streamRedis redis.UniversalClient
}

// New connects to the backends named in cfg, creates the schema and
// returns the wired instance. MySQL must answer within startTimeout;
// the other backends connect lazily and are reported by /healthz.
func New(ctx context.Context, cfg config.Config, startTimeout time.Duration) (*Instance, error) {
	if cfg.Strategy == "" {
		cfg.Strategy = catalog.None
	}
	initial := stock.Config{Name: cfg.Strategy}
	if cfg.Setting != "" {
		if err := json.Unmarshal([]byte(cfg.Setting), &initial); err != nil {
			return nil, fmt.Errorf("%s: %w", config.EnvSetting, err)
		}
	}
	if err := errors.Join(cfg.Validate(), initial.Validate()); err != nil {
		return nil, err
	}
	meter := cost.NewMeter()
	db, err := openMySQL(ctx, cfg.MySQLDSN, startTimeout, meter)
	if err != nil {
		return nil, err
	}
	b, err := newBackends(ctx, cfg, db, meter)
	if err != nil {
		return nil, err
	}
	rtt, err := mysqlRTT(ctx, db, 5)
	if err != nil {
		b.Close()
		return nil, err
	}
	store := sqlstore.NewBounded(db, sqlstore.ScaledInflight(cfg.DBInflight, rtt))
	if err := store.Migrate(ctx); err != nil {
		b.Close()
		return nil, err
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	metrics := api.NewMetrics(reg)
	events := stock.NewEvents(eventsKept)
	opts := stock.ServiceOptions{
		Instance: cfg.Instance,
		Store:    store,
		Backends: b.locks,
		Observer: metrics,
		Events:   events,
		MaxQty:   cfg.MaxQty,
		Initial:  initial,
	}
	if b.clients.Redis != nil {
		opts.Mirror = orderstream.NewMirror(b.clients.Redis)
		opts.Stream = orderstream.New(b.clients.Redis, cfg.StreamReplicas)
	}
	if b.counter != nil {
		opts.Counter = counterstore.New(b.counter)
	}
	svc, err := stock.NewService(opts)
	if err != nil {
		b.Close()
		return nil, err
	}
	h := api.New(api.Options{Service: svc, AdminToken: cfg.AdminToken, Checks: b.checks(store), Registry: reg, Metrics: metrics, Events: events, Cost: meter})
	in := &Instance{Config: cfg, Service: svc, Handler: h, Cost: meter, backends: b, MySQLRTT: rtt}
	if opts.Stream != nil {
		in.streamRedis = b.failover
		if b.failover == nil {
			in.streamRedis = newRedis(cfg.RedisAddrs[0], nil)
		}
		// redis-stream's work_delay is the work of writing the orders.
		work := func() time.Duration {
			if c := svc.Config(); c.Name == catalog.RedisStream {
				return c.WorkDelay
			}
			return 0
		}
		in.stream = orderstream.StartConsumer(in.streamRedis, store, cfg.Instance,
			orderstream.ConsumerOptions{OnError: metrics.Error, Work: work, Gather: cfg.StreamGather})
	}
	return in, nil
}

// Close stops the order stream's consumer, closes the service's lockers,
// then the backends and their clients.
func (in *Instance) Close() error {
	var errs []error
	if in.stream != nil {
		errs = append(errs, in.stream.Close())
		if in.streamRedis != in.backends.failover {
			errs = append(errs, in.streamRedis.Close())
		}
	}
	return errors.Join(append(errs, in.Service.Close(), in.backends.Close())...)
}

// Serve listens on cfg.Listen until ctx is done, then shuts down
// gracefully. ready, if not nil, is called with the bound address.
func (in *Instance) Serve(ctx context.Context, ready func(addr string)) error {
	ln, err := net.Listen("tcp", in.Config.Listen)
	if err != nil {
		return fmt.Errorf("listen on %s: %w (is the port taken? pass --listen)", in.Config.Listen, err)
	}
	t := in.Timeouts.withDefaults()
	srv := &http.Server{
		Handler:           in.Handler,
		ReadHeaderTimeout: t.ReadHeader,
		ReadTimeout:       t.Read,
		WriteTimeout:      t.Write,
		IdleTimeout:       t.Idle,
		ErrorLog:          log.New(io.Discard, "", 0),
	}
	if ready != nil {
		ready(ln.Addr().String())
	}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return fmt.Errorf("serve: %w", err)
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("shutdown: %w", err)
	}
	return nil
}

// DBInflight is how many lock-free purchases the instance runs against
// MySQL at once (0: no bound): config.DBInflight scaled by MySQLRTT
// (sqlstore.ScaledInflight).
func (in *Instance) DBInflight() int {
	return sqlstore.ScaledInflight(in.Config.DBInflight, in.MySQLRTT)
}

// mysqlRTT returns the shortest of n pings of db: the round trip to
// MySQL, without the queueing a busy moment adds.
func mysqlRTT(ctx context.Context, db *gorm.DB, n int) (time.Duration, error) {
	sqlDB, err := db.DB()
	if err != nil {
		return 0, fmt.Errorf("MySQL round trip: %w", err)
	}
	var least time.Duration
	for i := range n {
		t0 := time.Now()
		if err := sqlDB.PingContext(ctx); err != nil {
			return 0, fmt.Errorf("MySQL round trip: %w", err)
		}
		if d := time.Since(t0); i == 0 || d < least {
			least = d
		}
	}
	return least, nil
}

// openMySQL opens the DSN with bounded timeouts and waits for SELECT 1.
// meter counts the round trips of every connection.
func openMySQL(ctx context.Context, dsn string, wait time.Duration, meter *cost.Meter) (*gorm.DB, error) {
	mc, err := mysql.ParseDSN(dsn)
	if err != nil {
		return nil, fmt.Errorf("MySQL DSN %q: %w", dsn, err)
	}
	// utf8mb4 end to end (CJK, emoji); binary collation like the tables'.
	mc.Collation = "utf8mb4_bin"
	// Parameters interpolated on the client (MariaDB counted a prepare,
	// an execute and a close per statement without) and multiStatements
	// for the one-round-trip purchase (sqlstore.SQLPurchase).
	sqlstore.ConfigureMySQL(mc)
	if mc.Timeout == 0 {
		mc.Timeout = 2 * time.Second
	}
	if mc.ReadTimeout == 0 {
		mc.ReadTimeout = 3 * time.Minute
	}
	if mc.WriteTimeout == 0 {
		mc.WriteTimeout = 30 * time.Second
	}
	connector, err := mysql.NewConnector(mc)
	if err != nil {
		return nil, fmt.Errorf("MySQL DSN %q: %w", dsn, err)
	}
	sqlDB := sql.OpenDB(meter.Connector(connector))
	sqlDB.SetMaxOpenConns(256)
	sqlDB.SetMaxIdleConns(128)
	sqlDB.SetConnMaxLifetime(30 * time.Minute)
	deadline := time.Now().Add(wait)
	for {
		pctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		err = sqlDB.PingContext(pctx)
		cancel()
		if err == nil {
			break
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			_ = sqlDB.Close()
			return nil, fmt.Errorf("MySQL at %s did not answer within %s: %w (is the stack up? `seckill up`)", mc.Addr, wait, err)
		}
		select {
		case <-ctx.Done():
		case <-time.After(250 * time.Millisecond):
		}
	}
	db, err := gorm.Open(gormmysql.New(gormmysql.Config{Conn: sqlDB}), &gorm.Config{
		Logger:                 logger.Discard,
		SkipDefaultTransaction: true,
	})
	if err != nil {
		_ = sqlDB.Close()
		return nil, fmt.Errorf("open MySQL: %w", err)
	}
	return db, nil
}

// newRedis builds a client with bounded timeouts, its commands counted by
// meter (nil: not counted). (go-redis's own pool log lines are silenced by the command's
// main: failures reach the user as errors and /healthz.)
func newRedis(addr string, meter *cost.Meter) *redis.Client {
	c := redis.NewClient(&redis.Options{
		Addr:         addr,
		DialTimeout:  time.Second,
		ReadTimeout:  3 * time.Second,
		WriteTimeout: 3 * time.Second,
		PoolSize:     256,
		MaxRetries:   1,
	})
	if meter != nil {
		c.AddHook(meter.RedisHook())
	}
	return c
}
