// Package counterstore keeps the lock-alone goods (stock.LockAlone): a
// stock.Store whose stock is a counter in Redis, for `seckill bench --mode
// lock`.
package counterstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/seckill-lab/seckill/stock"
)

// Store is the stock.Store of the lock-alone goods: the same
// read-modify-write as the database's (read the stock, check it, work,
// write stock-qty, record the order), as separate Redis commands on a
// connection of its own, so the lock alone keeps it correct and a broken
// lock shows lost updates and oversold units as in the database. Keys:
// seckill:counter:ID:{stock,initial,orders} (orders: request id -> order
// JSON), seckill:counter:requests (every lock-alone order by request id)
// and seckill:counter:seq (order ids).
type Store struct {
	rdb redis.UniversalClient
}

var _ stock.Store = (*Store)(nil) // and no Database: a lock-alone goods has no row

// New keeps the lock-alone goods in rdb. The stack hands the
// instances a Redis reached directly, not through the links' round trip:
// the counter's own commands then cost what a loopback command costs.
func New(rdb redis.UniversalClient) *Store { return &Store{rdb: rdb} }

const counterRequests, counterSeq = "seckill:counter:requests", "seckill:counter:seq"

func counterKey(id int64, part string) string {
	return "seckill:counter:" + strconv.FormatInt(id, 10) + ":" + part
}

// Ping checks the Redis.
func (c *Store) Ping(ctx context.Context) error {
	if err := c.rdb.Ping(ctx).Err(); err != nil {
		return fmt.Errorf("lock-alone counter: %w", err)
	}
	return nil
}

// Goods returns the counter as a goods row.
func (c *Store) Goods(ctx context.Context, id int64) (stock.Goods, error) {
	vs, err := c.rdb.MGet(ctx, counterKey(id, "stock"), counterKey(id, "initial")).Result()
	if err != nil {
		return stock.Goods{}, fmt.Errorf("lock-alone goods %d: %w", id, err)
	}
	if vs[0] == nil {
		return stock.Goods{}, fmt.Errorf("%w: lock-alone goods %d (reset it first)", stock.ErrGoodsNotFound, id)
	}
	inStock, _ := strconv.ParseInt(fmt.Sprint(vs[0]), 10, 64)
	initial, _ := strconv.ParseInt(fmt.Sprint(vs[1]), 10, 64)
	return stock.Goods{ID: id, Name: "lock-alone counter", Stock: inStock, InitialStock: initial}, nil
}

// Reset sets the counter and deletes its orders.
func (c *Store) Reset(ctx context.Context, id, inStock int64) error {
	ids, err := c.rdb.HKeys(ctx, counterKey(id, "orders")).Result()
	if err != nil {
		return fmt.Errorf("lock-alone goods %d: reset: %w", id, err)
	}
	_, err = c.rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		if len(ids) > 0 {
			p.HDel(ctx, counterRequests, ids...)
		}
		p.Del(ctx, counterKey(id, "orders"))
		p.Set(ctx, counterKey(id, "stock"), inStock, 0)
		p.Set(ctx, counterKey(id, "initial"), inStock, 0)
		return nil
	})
	if err != nil {
		return fmt.Errorf("lock-alone goods %d: reset: %w", id, err)
	}
	return nil
}

// orders reads the goods' orders.
func (c *Store) orders(ctx context.Context, id int64) ([]stock.Order, error) {
	vs, err := c.rdb.HVals(ctx, counterKey(id, "orders")).Result()
	if err != nil {
		return nil, fmt.Errorf("lock-alone goods %d: orders: %w", id, err)
	}
	out := make([]stock.Order, 0, len(vs))
	for _, v := range vs {
		var o stock.Order
		if err := json.Unmarshal([]byte(v), &o); err != nil {
			return nil, fmt.Errorf("lock-alone goods %d: an order: %w", id, err)
		}
		out = append(out, o)
	}
	return out, nil
}

// Audit summarises the counter and its orders.
func (c *Store) Audit(ctx context.Context, id int64) (stock.Audit, error) {
	g, err := c.Goods(ctx, id)
	if err != nil {
		return stock.Audit{}, err
	}
	os, err := c.orders(ctx, id)
	if err != nil {
		return stock.Audit{}, err
	}
	var sold int64
	per := map[string]int64{}
	for _, o := range os {
		sold += o.Qty
		per[o.Instance] += o.Qty
	}
	return stock.NewAudit(id, g.InitialStock, g.Stock, int64(len(os)), sold, per), nil
}

// RequestIDs returns the request ids of the goods' orders.
func (c *Store) RequestIDs(ctx context.Context, id int64) ([]string, error) {
	ids, err := c.rdb.HKeys(ctx, counterKey(id, "orders")).Result()
	if err != nil {
		return nil, fmt.Errorf("lock-alone goods %d: request ids: %w", id, err)
	}
	return ids, nil
}

// OrderByRequest returns the lock-alone order of a request id, if any.
func (c *Store) OrderByRequest(ctx context.Context, requestID string) (stock.Order, bool, error) {
	v, err := c.rdb.HGet(ctx, counterRequests, requestID).Result()
	if errors.Is(err, redis.Nil) {
		return stock.Order{}, false, nil
	}
	if err != nil {
		return stock.Order{}, false, fmt.Errorf("lock-alone order %q: %w", requestID, err)
	}
	var o stock.Order
	if err := json.Unmarshal([]byte(v), &o); err != nil {
		return stock.Order{}, false, fmt.Errorf("lock-alone order %q: %w", requestID, err)
	}
	return o, true, nil
}

// ReadModifyWrite is Chapter 1's reductStock on the counter: GET, check,
// work, SET stock-qty, record the order; correct only under a lock. inside
// (the locks released before COMMIT) is acquired first and released after
// the stock write, before the order is recorded.
func (c *Store) ReadModifyWrite(ctx context.Context, d stock.Deduction, inside func(context.Context) (release func(), err error)) (stock.Result, error) {
	if d.Fence != 0 {
		return stock.Result{}, fmt.Errorf("%w: fencing claims the database row, which a lock-alone goods has not", stock.ErrInvalid)
	}
	id, qty := d.Order.GoodsID, d.Order.Qty
	var release func()
	if inside != nil {
		var err error
		if release, err = inside(ctx); err != nil {
			return stock.Result{}, err
		}
	}
	defer func() {
		if release != nil {
			release()
		}
	}()
	g, err := c.Goods(ctx, id)
	if err != nil {
		return stock.Result{}, err
	}
	d.Note(stock.EventRead, g.Stock)
	if g.Stock < qty {
		return stock.Result{}, stock.ErrSoldOut
	}
	if d.WorkDelay > 0 {
		t := time.NewTimer(d.WorkDelay)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return stock.Result{}, ctx.Err()
		}
	}
	if d.BeforeCommit != nil {
		if err := d.BeforeCommit(); err != nil {
			return stock.Result{}, err
		}
	}
	seq, err := c.rdb.Incr(ctx, counterSeq).Result()
	if err != nil {
		return stock.Result{}, fmt.Errorf("lock-alone goods %d: order id: %w", id, err)
	}
	o := d.Order
	o.ID, o.CreatedAt = seq, time.Now().UTC()
	js, err := json.Marshal(o)
	if err != nil {
		return stock.Result{}, fmt.Errorf("lock-alone goods %d: %w", id, err)
	}
	fresh, err := c.rdb.HSetNX(ctx, counterRequests, o.RequestID, js).Result()
	if err != nil {
		return stock.Result{}, fmt.Errorf("lock-alone goods %d: record the order: %w", id, err)
	}
	if !fresh {
		return stock.Result{}, stock.ErrDuplicateRequest
	}
	remaining := g.Stock - qty
	if err := c.rdb.Set(ctx, counterKey(id, "stock"), remaining, 0).Err(); err != nil {
		return stock.Result{}, fmt.Errorf("lock-alone goods %d: write the stock: %w", id, err)
	}
	d.Note(stock.EventWritten, remaining)
	if release != nil { // released before the order is recorded, as Chapter 1's "transaction mode"
		release()
		release = nil
	}
	if err := c.rdb.HSet(ctx, counterKey(id, "orders"), o.RequestID, js).Err(); err != nil {
		return stock.Result{}, fmt.Errorf("lock-alone goods %d: record the order: %w", id, err)
	}
	return stock.Result{Order: o, Remaining: remaining}, nil
}
