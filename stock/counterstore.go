package stock

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
)

// CounterGoodsBase is where the lock-alone goods start: a goods id at or
// above it is kept by the CounterStore (a counter in Redis) instead of the
// database, so a purchase under a lock measures the lock, not the
// database's transaction (`seckill bench --mode lock`).
const CounterGoodsBase int64 = 1_000_000_000_000_000

// LockAlone reports whether goods id is a lock-alone goods.
func LockAlone(goodsID int64) bool { return goodsID >= CounterGoodsBase }

// ErrLockAloneOnly is the answer of a strategy that deducts in the
// database itself (row lock, version, conditional UPDATE, batch) on a
// lock-alone goods, which has no row.
var ErrLockAloneOnly = fmt.Errorf("%w: a lock-alone goods (id >= %d) is a Redis counter with no database row: only the read-modify-write under a lock (or none) deducts it", ErrInvalid, CounterGoodsBase)

// CounterStore is the Store of the lock-alone goods: the same
// read-modify-write as the database's (read the stock, check it, work,
// write stock-qty, record the order), as separate Redis commands on a
// connection of its own, so the lock alone keeps it correct and a broken
// lock shows lost updates and oversold units as in the database. Keys:
// seckill:counter:ID:{stock,initial,orders} (orders: request id -> order
// JSON), seckill:counter:requests (every lock-alone order by request id)
// and seckill:counter:seq (order ids).
type CounterStore struct {
	rdb redis.UniversalClient
}

var _ Store = (*CounterStore)(nil) // and no Database: a lock-alone goods has no row

// NewCounterStore keeps the lock-alone goods in rdb. The stack hands the
// instances a Redis reached directly, not through the links' round trip:
// the counter's own commands then cost what a loopback command costs.
func NewCounterStore(rdb redis.UniversalClient) *CounterStore { return &CounterStore{rdb: rdb} }

const counterRequests, counterSeq = "seckill:counter:requests", "seckill:counter:seq"

func counterKey(id int64, part string) string {
	return "seckill:counter:" + strconv.FormatInt(id, 10) + ":" + part
}

// Ping checks the Redis.
func (c *CounterStore) Ping(ctx context.Context) error {
	if err := c.rdb.Ping(ctx).Err(); err != nil {
		return fmt.Errorf("lock-alone counter: %w", err)
	}
	return nil
}

// Goods returns the counter as a goods row.
func (c *CounterStore) Goods(ctx context.Context, id int64) (Goods, error) {
	vs, err := c.rdb.MGet(ctx, counterKey(id, "stock"), counterKey(id, "initial")).Result()
	if err != nil {
		return Goods{}, fmt.Errorf("lock-alone goods %d: %w", id, err)
	}
	if vs[0] == nil {
		return Goods{}, fmt.Errorf("%w: lock-alone goods %d (reset it first)", ErrGoodsNotFound, id)
	}
	stock, _ := strconv.ParseInt(fmt.Sprint(vs[0]), 10, 64)
	initial, _ := strconv.ParseInt(fmt.Sprint(vs[1]), 10, 64)
	return Goods{ID: id, Name: "lock-alone counter", Stock: stock, InitialStock: initial}, nil
}

// Reset sets the counter and deletes its orders.
func (c *CounterStore) Reset(ctx context.Context, id, stock int64) error {
	ids, err := c.rdb.HKeys(ctx, counterKey(id, "orders")).Result()
	if err != nil {
		return fmt.Errorf("lock-alone goods %d: reset: %w", id, err)
	}
	_, err = c.rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		if len(ids) > 0 {
			p.HDel(ctx, counterRequests, ids...)
		}
		p.Del(ctx, counterKey(id, "orders"))
		p.Set(ctx, counterKey(id, "stock"), stock, 0)
		p.Set(ctx, counterKey(id, "initial"), stock, 0)
		return nil
	})
	if err != nil {
		return fmt.Errorf("lock-alone goods %d: reset: %w", id, err)
	}
	return nil
}

// orders reads the goods' orders.
func (c *CounterStore) orders(ctx context.Context, id int64) ([]Order, error) {
	vs, err := c.rdb.HVals(ctx, counterKey(id, "orders")).Result()
	if err != nil {
		return nil, fmt.Errorf("lock-alone goods %d: orders: %w", id, err)
	}
	out := make([]Order, 0, len(vs))
	for _, v := range vs {
		var o Order
		if err := json.Unmarshal([]byte(v), &o); err != nil {
			return nil, fmt.Errorf("lock-alone goods %d: an order: %w", id, err)
		}
		out = append(out, o)
	}
	return out, nil
}

// Audit summarises the counter and its orders.
func (c *CounterStore) Audit(ctx context.Context, id int64) (Audit, error) {
	g, err := c.Goods(ctx, id)
	if err != nil {
		return Audit{}, err
	}
	os, err := c.orders(ctx, id)
	if err != nil {
		return Audit{}, err
	}
	var sold int64
	per := map[string]int64{}
	for _, o := range os {
		sold += o.Qty
		per[o.Instance] += o.Qty
	}
	return NewAudit(id, g.InitialStock, g.Stock, int64(len(os)), sold, per), nil
}

// RequestIDs returns the request ids of the goods' orders.
func (c *CounterStore) RequestIDs(ctx context.Context, id int64) ([]string, error) {
	ids, err := c.rdb.HKeys(ctx, counterKey(id, "orders")).Result()
	if err != nil {
		return nil, fmt.Errorf("lock-alone goods %d: request ids: %w", id, err)
	}
	return ids, nil
}

// OrderByRequest returns the lock-alone order of a request id, if any.
func (c *CounterStore) OrderByRequest(ctx context.Context, requestID string) (Order, bool, error) {
	v, err := c.rdb.HGet(ctx, counterRequests, requestID).Result()
	if errors.Is(err, redis.Nil) {
		return Order{}, false, nil
	}
	if err != nil {
		return Order{}, false, fmt.Errorf("lock-alone order %q: %w", requestID, err)
	}
	var o Order
	if err := json.Unmarshal([]byte(v), &o); err != nil {
		return Order{}, false, fmt.Errorf("lock-alone order %q: %w", requestID, err)
	}
	return o, true, nil
}

// ReadModifyWrite is the seeds' reductStock on the counter: GET, check,
// work, SET stock-qty, record the order; correct only under a lock. inside
// (the locks released before COMMIT) is acquired first and released after
// the stock write, before the order is recorded.
func (c *CounterStore) ReadModifyWrite(ctx context.Context, d Deduction, inside func(context.Context) (release func(), err error)) (Result, error) {
	if d.Fence != 0 {
		return Result{}, fmt.Errorf("%w: fencing claims the database row, which a lock-alone goods has not", ErrInvalid)
	}
	id, qty := d.Order.GoodsID, d.Order.Qty
	var release func()
	if inside != nil {
		var err error
		if release, err = inside(ctx); err != nil {
			return Result{}, err
		}
	}
	defer func() {
		if release != nil {
			release()
		}
	}()
	g, err := c.Goods(ctx, id)
	if err != nil {
		return Result{}, err
	}
	d.trace(EventRead, g.Stock)
	if g.Stock < qty {
		return Result{}, ErrSoldOut
	}
	if d.WorkDelay > 0 {
		t := time.NewTimer(d.WorkDelay)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return Result{}, ctx.Err()
		}
	}
	if d.BeforeCommit != nil {
		if err := d.BeforeCommit(); err != nil {
			return Result{}, err
		}
	}
	seq, err := c.rdb.Incr(ctx, counterSeq).Result()
	if err != nil {
		return Result{}, fmt.Errorf("lock-alone goods %d: order id: %w", id, err)
	}
	o := d.Order
	o.ID, o.CreatedAt = seq, time.Now().UTC()
	js, err := json.Marshal(o)
	if err != nil {
		return Result{}, fmt.Errorf("lock-alone goods %d: %w", id, err)
	}
	fresh, err := c.rdb.HSetNX(ctx, counterRequests, o.RequestID, js).Result()
	if err != nil {
		return Result{}, fmt.Errorf("lock-alone goods %d: record the order: %w", id, err)
	}
	if !fresh {
		return Result{}, errDuplicateRequest
	}
	remaining := g.Stock - qty
	if err := c.rdb.Set(ctx, counterKey(id, "stock"), remaining, 0).Err(); err != nil {
		return Result{}, fmt.Errorf("lock-alone goods %d: write the stock: %w", id, err)
	}
	d.trace(EventWritten, remaining)
	if release != nil { // released before the order is recorded, as seed 003's "transaction mode"
		release()
		release = nil
	}
	if err := c.rdb.HSet(ctx, counterKey(id, "orders"), o.RequestID, js).Err(); err != nil {
		return Result{}, fmt.Errorf("lock-alone goods %d: record the order: %w", id, err)
	}
	return Result{Order: o, Remaining: remaining}, nil
}

// errNoCounter answers for the lock-alone goods of an instance without a
// counter.
var errNoCounter = fmt.Errorf("%w: the lock-alone goods (id >= %d) need the counter's Redis ($SECKILL_COUNTER_REDIS), which this instance was not given", ErrBackendUnavailable, CounterGoodsBase)

// eachFails fails every deduction of a batch with err.
func eachFails(ds []Deduction, err error) ([]Result, []error) {
	errs := make([]error, len(ds))
	for i := range errs {
		errs[i] = err
	}
	return make([]Result, len(ds)), errs
}
