// Package orderstream keeps redis-stream's and redis-atomic's stock in Redis.
// redis-stream is the answer production flash sales give (for example the
// hm-dianping Redis course's 异步秒杀): the purchase is decided in Redis and
// the order is written later.
//
//   - Accept: one Lua script checks that the request id is new, the stock
//     and the per-user limit, takes the stock, counts the user and XADDs the
//     order to the stream Key, all in one step. The purchase is
//     answered 202 "accepted" with the order id (the entry's id as a
//     number) before MySQL sees it.
//   - Write: a consumer of the group Group runs inside each instance
//     (Consumer). It reads entries, writes their orders to MySQL (the
//     order row and the stock deduction, in one transaction per batch;
//     idempotent: the request id is unique, so an entry delivered twice is
//     written once) and XACKs them only after the COMMIT. An instance
//     killed between its read and its XACK leaves the entries pending in
//     its name: another instance's consumer takes them over with XAUTOCLAIM
//     once they have been idle for ClaimIdle, and the killed instance, when
//     it comes back, first re-reads its own.
//   - Status: GET /admin/queue says what is left (pending, not yet read) and
//     what was written, duplicated or rejected per goods, and the order lag
//     (accept to commit) of every order written; GET
//     /api/v1/orders/:request_id says whether one order is written.
//
// What it risks is Redis itself: an entry that Redis acknowledged and lost
// (a restart without an fsynced AOF) is an order accepted and never written.
//
// Mirror is redis-atomic's stock mirror, which the stream's script shares.
package orderstream

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/seckill-lab/seckill/lockimpl"
	"github.com/seckill-lab/seckill/stock"
	"github.com/seckill-lab/seckill/stock/catalog"
	"github.com/seckill-lab/seckill/stock/sqlstore"
)

// The stream and its consumer group.
const (
	Key   = "seckill:orders"
	Group = "seckill-orders"
	// ClaimIdle is how long an entry stays pending with a consumer before
	// another consumer takes it over (XAUTOCLAIM).
	ClaimIdle = 2 * time.Second
	// streamBatch is the most entries a consumer reads, writes in one
	// transaction and acknowledges at once.
	streamBatch = 128
	// maxLagSamples bounds the lag samples kept per goods.
	maxLagSamples = 1_000_000
)

func streamRequestsKey(goods int64) string {
	return "seckill:stream:req:" + strconv.FormatInt(goods, 10)
}
func streamStatsKey(goods int64) string {
	return "seckill:stream:stats:" + strconv.FormatInt(goods, 10)
}
func streamLagKey(goods int64) string { return "seckill:stream:lag:" + strconv.FormatInt(goods, 10) }

// acceptScript: KEYS stock, buyers, requests, stream, stats; ARGV qty,
// user, limit, request id, goods, instance, accepted at (unix ns). It
// returns {remaining, entry id}, or {code, ""}: -1 sold out, -2 mirror
// missing, -3 the user at the limit; or {-4, "id|qty|user|remaining"} when
// the request id was accepted before (the stock that sale left, so a
// replay answers the original outcome). A replay counts itself in the
// stats: that write makes the WAIT after it (Stream's replicas) cover the
// sale it replays, which an earlier answer may not have seen replicated.
var acceptScript = redis.NewScript(`
local prev = redis.call('HGET', KEYS[3], ARGV[4])
if prev then
  redis.call('HINCRBY', KEYS[5], 'replays', 1)
  return {-4, prev}
end
local s = redis.call('GET', KEYS[1])
if not s then return {-2, ''} end
local q = tonumber(ARGV[1])
if tonumber(s) < q then return {-1, ''} end
local lim = tonumber(ARGV[3])
if lim > 0 and tonumber(redis.call('HGET', KEYS[2], ARGV[2]) or '0') >= lim then return {-3, ''} end
if lim > 0 then redis.call('HINCRBY', KEYS[2], ARGV[2], 1) end
local left = redis.call('DECRBY', KEYS[1], q)
local id = redis.call('XADD', KEYS[4], '*', 'goods', ARGV[5], 'qty', ARGV[1], 'user', ARGV[2], 'req', ARGV[4], 'inst', ARGV[6], 'at', ARGV[7])
redis.call('HSET', KEYS[3], ARGV[4], id .. '|' .. ARGV[1] .. '|' .. ARGV[2] .. '|' .. left)
redis.call('HINCRBY', KEYS[5], 'accepted', 1)
return {left, id}
`)

// Stream is the accepting side of redis-stream: the Lua script on the
// purchase path, the reset and the status of the queue.
type Stream struct {
	rdb  redis.UniversalClient
	key  string     // the stream: Key (a test's own otherwise)
	pipe *pipeliner // Accept's scripts, pipelined
}

// New uses rdb (the primary Redis, the one the mirror is on). With
// replicas > 0 a purchase is answered only once that many replicas have
// its accept (WAIT, up to ReplicaWait); otherwise Accept fails with
// stock.ErrBackendUnavailable, and the client's resend with the same
// Idempotency-Key is answered the sale's outcome once it is replicated.
func New(rdb redis.UniversalClient, replicas int) *Stream {
	return &Stream{rdb: rdb, key: Key, pipe: newPipeliner(rdb, replicas)}
}

// OrderIDOf is the order id of a stream entry "ms-seq": ms<<12 | seq, so
// ids grow with time, no two entries of up to 4096 a millisecond share one,
// and they stay below 2^53 (a JSON number a JavaScript client reads
// exactly) until 2039. The consumer inserts the order with it; the orders
// of the other strategies, numbered by AUTO_INCREMENT, continue above the
// last one. An id that is taken all the same (more than 4096 entries in
// one millisecond) gives way to a fresh one when the order is written
// (insertStreamOrder).
func OrderIDOf(entryID string) (int64, error) {
	ms, seq, ok := strings.Cut(entryID, "-")
	m, err1 := strconv.ParseInt(ms, 10, 64)
	s, err2 := strconv.ParseInt(seq, 10, 64)
	if !ok || err1 != nil || err2 != nil || m < 0 || s < 0 {
		return 0, fmt.Errorf("stream entry id %q is not ms-seq", entryID)
	}
	return m<<12 | s&(1<<12-1), nil
}

// Accept runs acceptScript for o (stock.Queue), in a pipeline with the
// concurrent purchases' (pipeliner). It returns the stock left and the order
// id, or, for a request id accepted before, the earlier order and the stock
// its sale left, with replayed set.
func (q *Stream) Accept(ctx context.Context, o stock.Order, limit int) (left, orderID int64, replayed bool, err error) {
	keys := []string{MirrorKey(o.GoodsID), UserLimitKey(o.GoodsID), streamRequestsKey(o.GoodsID), q.key, streamStatsKey(o.GoodsID)}
	v, err := q.pipe.run(ctx, acceptScript, keys, o.Qty, o.UserID, limit, o.RequestID, o.GoodsID, o.Instance, time.Now().UnixNano()).Slice()
	if errors.Is(err, errUnreplicated) {
		return 0, 0, false, fmt.Errorf("redis stream accept: %w: %w", err, stock.ErrBackendUnavailable)
	}
	if err != nil {
		return 0, 0, false, fmt.Errorf("redis stream accept: %w", err)
	}
	if len(v) != 2 {
		return 0, 0, false, fmt.Errorf("redis stream accept: answer %v", v)
	}
	code, _ := v[0].(int64)
	id, _ := v[1].(string)
	if code == -4 {
		prev := strings.Split(id, "|")
		if len(prev) != 4 || prev[1] != strconv.FormatInt(o.Qty, 10) || prev[2] != o.UserID {
			return 0, 0, false, fmt.Errorf("%w: Idempotency-Key %q was accepted for another purchase (qty or user)", stock.ErrIdempotencyKeyReused, o.RequestID)
		}
		left, err := strconv.ParseInt(prev[3], 10, 64)
		if err != nil {
			return 0, 0, false, fmt.Errorf("redis stream accept: accepted request %q: %w", o.RequestID, err)
		}
		oid, err := OrderIDOf(prev[0])
		return left, oid, true, err
	}
	if code < 0 {
		_, err := mirrorResult(code, o.UserID, limit)
		return 0, 0, false, err
	}
	oid, err := OrderIDOf(id)
	return code, oid, false, err
}

// Init sets the stock in Redis when it is missing (after a Redis restart).
func (q *Stream) Init(ctx context.Context, goodsID, stock int64) error {
	if err := q.rdb.SetNX(ctx, MirrorKey(goodsID), stock, 0).Err(); err != nil {
		return fmt.Errorf("redis stream: init the stock: %w", err)
	}
	return nil
}

// Reset forgets goods' accepted request ids, counts and lag samples (the
// stock and the per-user counts are the mirror's, reset with it).
func (q *Stream) Reset(ctx context.Context, goodsID int64) error {
	if err := q.rdb.Del(ctx, streamRequestsKey(goodsID), streamStatsKey(goodsID), streamLagKey(goodsID)).Err(); err != nil {
		return fmt.Errorf("redis stream reset: %w", err)
	}
	return nil
}

// Status reads the queue's state for goods.
func (q *Stream) Status(ctx context.Context, goodsID int64) (stock.QueueStatus, error) {
	st := stock.QueueStatus{GoodsID: goodsID, LagUS: []int64{}}
	info, err := q.rdb.XInfoStream(ctx, q.key).Result()
	if err != nil && !isNoStream(err) {
		return st, fmt.Errorf("redis stream status: %w", err)
	}
	var groups []redis.XInfoGroup
	if err == nil { // no stream: no entries, no group
		st.Length = info.Length
		if groups, err = q.rdb.XInfoGroups(ctx, q.key).Result(); err != nil && !isNoStream(err) {
			return st, fmt.Errorf("redis stream status: %w", err)
		}
	}
	st.Lag = st.Length // nothing has read the stream yet
	for _, g := range groups {
		if g.Name == Group {
			st.Pending, st.Consumers = g.Pending, g.Consumers
			if st.Lag, err = q.unread(ctx, info.LastGeneratedID, g.LastDeliveredID); err != nil {
				return st, fmt.Errorf("redis stream status: %w", err)
			}
		}
	}
	counts, err := q.rdb.HGetAll(ctx, streamStatsKey(goodsID)).Result()
	if err != nil {
		return st, fmt.Errorf("redis stream status: %w", err)
	}
	for name, dst := range map[string]*int64{"accepted": &st.Accepted, "written": &st.Written, "duplicates": &st.Duplicates, "rejected": &st.Rejected, "reclaimed": &st.Reclaimed, "batches": &st.Batches} {
		*dst, _ = strconv.ParseInt(counts[name], 10, 64)
	}
	lags, err := q.rdb.LRange(ctx, streamLagKey(goodsID), 0, -1).Result()
	if err != nil {
		return st, fmt.Errorf("redis stream status: %w", err)
	}
	for _, l := range lags {
		if v, err := strconv.ParseInt(l, 10, 64); err == nil {
			st.LagUS = append(st.LagUS, v)
		}
	}
	return st, nil
}

// maxUnreadCount bounds the entries Status counts past the last delivered
// one; a queue further behind reports this many.
const maxUnreadCount = 10_000

// unread counts the stream's entries after the group's last delivered id
// (up to maxUnreadCount), none when it is the stream's last generated id.
// It does not use XINFO's lag: a replica promoted by a failover can hold
// the group with an entries-read counter behind its last delivered id,
// and Redis then counts entries every consumer read.
func (q *Stream) unread(ctx context.Context, lastGenerated, lastDelivered string) (int64, error) {
	if lastGenerated == lastDelivered {
		return 0, nil
	}
	msgs, err := q.rdb.XRangeN(ctx, q.key, "("+lastDelivered, "+", maxUnreadCount).Result()
	if err != nil {
		return 0, fmt.Errorf("the entries after %s: %w", lastDelivered, err)
	}
	return int64(len(msgs)), nil
}

// Accepted reports whether goods' request id was accepted by the script.
func (q *Stream) Accepted(ctx context.Context, goodsID int64, requestID string) (bool, error) {
	ok, err := q.rdb.HExists(ctx, streamRequestsKey(goodsID), requestID).Result()
	if err != nil {
		return false, fmt.Errorf("redis stream: %w", err)
	}
	return ok, nil
}

func isNoStream(err error) bool {
	return err != nil && (strings.Contains(err.Error(), "no such key") || strings.Contains(err.Error(), "NOGROUP"))
}

// streamEntry is one order read from the stream.
type streamEntry struct {
	id    string
	order stock.Order
	at    time.Time
}

// parseEntry reads an entry's fields.
func parseEntry(m redis.XMessage) (streamEntry, error) {
	e := streamEntry{id: m.ID}
	str := func(k string) string { v, _ := m.Values[k].(string); return v }
	goods, err1 := strconv.ParseInt(str("goods"), 10, 64)
	qty, err2 := strconv.ParseInt(str("qty"), 10, 64)
	at, err3 := strconv.ParseInt(str("at"), 10, 64)
	oid, err4 := OrderIDOf(m.ID)
	if err := errors.Join(err1, err2, err3, err4); err != nil {
		return e, fmt.Errorf("stream entry %s: %w", m.ID, err)
	}
	e.at = time.Unix(0, at)
	e.order = stock.Order{ID: oid, GoodsID: goods, Qty: qty, UserID: str("user"), RequestID: str("req"), Instance: str("inst"),
		Strategy: catalog.RedisStream, CreatedAt: e.at}
	return e, nil
}

// ConsumerOptions tune a Consumer. The zero value is a consumer
// that counts no errors, simulates no work and reads again at once.
type ConsumerOptions struct {
	// OnError, when not nil, counts an error of the loop (the instance's
	// metrics).
	OnError func(op string)
	// Work, when not nil, is the simulated work of writing one batch of
	// orders, done inside its transaction (a consumer killed meanwhile
	// leaves the batch pending).
	Work func() time.Duration
	// Gather is how long the consumer waits after a batch shorter than
	// streamBatch (128) before it reads again, so that the next batch
	// gathers more orders per MySQL transaction (each pays the
	// transaction's round trips, its COMMIT and the read and acknowledge
	// in Redis). A full batch never waits, and an idle consumer still
	// blocks in XREADGROUP until an entry comes. The cost is up to Gather
	// more order lag. 0 reads again at once; the instance's default is
	// config.DefaultStreamGather (20 ms).
	Gather time.Duration
}

// Consumer is one instance's consumer of the order stream.
type Consumer struct {
	rdb    redis.UniversalClient
	key    string // the stream: Key (a test's own otherwise)
	store  *sqlstore.Store
	name   string
	cancel context.CancelFunc
	done   chan struct{}
	opts   ConsumerOptions

	mu     sync.Mutex
	lastOK time.Time
}

// StartConsumer starts the consumer name (the instance's name) of
// the group on rdb, writing through store, until Close.
func StartConsumer(rdb redis.UniversalClient, store *sqlstore.Store, name string, opts ConsumerOptions) *Consumer {
	return startConsumer(rdb, Key, store, name, opts)
}

func startConsumer(rdb redis.UniversalClient, key string, store *sqlstore.Store, name string, opts ConsumerOptions) *Consumer {
	ctx, cancel := context.WithCancel(context.Background())
	if opts.Work == nil {
		opts.Work = func() time.Duration { return 0 }
	}
	c := &Consumer{rdb: rdb, key: key, store: store, name: name, cancel: cancel, done: make(chan struct{}), opts: opts}
	go c.run(ctx)
	return c
}

// Close stops the consumer and waits for it. Entries it read and did not
// acknowledge stay pending in its name.
func (c *Consumer) Close() error {
	c.cancel()
	<-c.done
	return nil
}

func (c *Consumer) fail(op string, err error) {
	if c.opts.OnError != nil && err != nil {
		c.opts.OnError(op)
	}
}

// run is the consumer's loop: its own pending entries first (after a
// start or an error), then new ones, waiting Gather after a short batch;
// every ClaimIdle/4 it takes over entries idle for ClaimIdle at another
// consumer.
func (c *Consumer) run(ctx context.Context) {
	defer close(c.done)
	own := true // read this consumer's pending entries first
	lastClaim := time.Time{}
	for ctx.Err() == nil {
		if err := c.ensureGroup(ctx); err != nil {
			c.fail("stream_group", err)
			_ = lockimpl.Sleep(ctx, 200*time.Millisecond)
			continue
		}
		if time.Since(lastClaim) >= ClaimIdle/4 {
			lastClaim = time.Now()
			if err := c.claim(ctx); err != nil {
				c.fail("stream_claim", err)
				_ = lockimpl.Sleep(ctx, 200*time.Millisecond)
				continue
			}
		}
		start := ">"
		if own {
			start = "0"
		}
		res, err := c.rdb.XReadGroup(ctx, &redis.XReadGroupArgs{Group: Group, Consumer: c.name, Streams: []string{c.key, start},
			Count: streamBatch, Block: ClaimIdle / 4}).Result()
		if errors.Is(err, redis.Nil) {
			own = false
			continue
		}
		if err != nil {
			if ctx.Err() == nil {
				c.fail("stream_read", err)
				own = true
				_ = lockimpl.Sleep(ctx, 200*time.Millisecond)
			}
			continue
		}
		n := 0
		for _, st := range res {
			n += len(st.Messages)
			if err := c.process(ctx, st.Messages, own); err != nil {
				c.fail("stream_write", err)
				own = true
				_ = lockimpl.Sleep(ctx, 200*time.Millisecond)
			}
		}
		if own && n == 0 {
			own = false // no pending entries of its own are left
		}
		if n > 0 && n < streamBatch && c.opts.Gather > 0 {
			_ = lockimpl.Sleep(ctx, c.opts.Gather) // let the next batch gather
		}
	}
}

// ensureGroup creates the stream and its group when they are missing (a
// fresh Redis, or one restarted without its data).
func (c *Consumer) ensureGroup(ctx context.Context) error {
	c.mu.Lock()
	fresh := time.Since(c.lastOK) < time.Second
	c.mu.Unlock()
	if fresh {
		return nil
	}
	err := c.rdb.XGroupCreateMkStream(ctx, c.key, Group, "0").Err()
	if err != nil && !strings.Contains(err.Error(), "BUSYGROUP") {
		return fmt.Errorf("create the stream's group: %w", err)
	}
	c.mu.Lock()
	c.lastOK = time.Now()
	c.mu.Unlock()
	return nil
}

// claim takes over the entries idle for ClaimIdle at any consumer (a
// killed instance's) and writes them.
func (c *Consumer) claim(ctx context.Context) error {
	start := "0-0"
	for {
		msgs, next, err := c.rdb.XAutoClaim(ctx, &redis.XAutoClaimArgs{Stream: c.key, Group: Group, MinIdle: ClaimIdle,
			Start: start, Count: streamBatch, Consumer: c.name}).Result()
		if err != nil {
			return fmt.Errorf("claim idle entries: %w", err)
		}
		if len(msgs) > 0 {
			if err := c.process(ctx, msgs, true); err != nil {
				return err
			}
		}
		if next == "0-0" || next == "" {
			return nil
		}
		start = next
	}
}

// process writes msgs' orders and acknowledges them after the COMMIT,
// with each goods' counts and lags; reclaimed says the entries were
// delivered before (taken over from another consumer, or this one's own
// pending entries read again after a restart or an error).
func (c *Consumer) process(ctx context.Context, msgs []redis.XMessage, reclaimed bool) error {
	var es []streamEntry
	var bad []string
	for _, m := range msgs {
		if len(m.Values) == 0 {
			continue // deleted since it was delivered
		}
		e, err := parseEntry(m)
		if err != nil {
			bad = append(bad, m.ID)
			continue
		}
		es = append(es, e)
	}
	var outs []sqlstore.Outcome
	if len(es) > 0 {
		orders := make([]stock.Order, len(es))
		for i, e := range es {
			orders[i] = e.order
		}
		var err error
		if outs, err = c.store.WriteQueued(ctx, orders, c.opts.Work()); err != nil {
			return fmt.Errorf("write %d orders: %w", len(es), err)
		}
	}
	committed := time.Now()
	p := c.rdb.Pipeline()
	ids := bad
	counts := map[int64]map[string]int64{}
	lags := map[int64][]any{}
	for i, e := range es {
		ids = append(ids, e.id)
		g := e.order.GoodsID
		if counts[g] == nil {
			counts[g] = map[string]int64{"batches": 1}
		}
		if reclaimed {
			counts[g]["reclaimed"]++
		}
		switch outs[i] {
		case sqlstore.Written:
			counts[g]["written"]++
			lags[g] = append(lags[g], committed.Sub(e.at).Microseconds())
		case sqlstore.Duplicate:
			counts[g]["duplicates"]++
		case sqlstore.Rejected:
			counts[g]["rejected"]++
		}
	}
	if len(ids) > 0 {
		p.XAck(ctx, c.key, Group, ids...)
	}
	goods := make([]int64, 0, len(counts))
	for g := range counts {
		goods = append(goods, g)
	}
	sort.Slice(goods, func(i, j int) bool { return goods[i] < goods[j] })
	for _, g := range goods {
		for name, n := range counts[g] {
			p.HIncrBy(ctx, streamStatsKey(g), name, n)
		}
		if len(lags[g]) > 0 {
			p.RPush(ctx, streamLagKey(g), lags[g]...)
			p.LTrim(ctx, streamLagKey(g), -maxLagSamples, -1)
		}
	}
	if _, err := p.Exec(ctx); err != nil {
		return fmt.Errorf("acknowledge %d entries: %w", len(ids), err)
	}
	return nil
}
