package orderstream

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/seckill-lab/seckill/internal/sqltest"
	"github.com/seckill-lab/seckill/internal/testenv"
	"github.com/seckill-lab/seckill/stock"
	"github.com/seckill-lab/seckill/stock/catalog"
	"github.com/seckill-lab/seckill/stock/sqlstore"
)

// streamFixture is a redis-stream service on a stream of the test's own
// (the stack's instances consume the lab's stream), and a fresh goods.
type streamFixture struct {
	st    *sqlstore.Store
	rdb   *redis.Client
	q     *Stream
	svc   *stock.Service
	goods int64
}

func newStreamFixture(t *testing.T, inStock int64, limit int) streamFixture {
	t.Helper()
	st := sqltest.Store(t)
	rdb := testenv.RedisClient(t)
	ctx := context.Background()
	q := &Stream{rdb: rdb, key: fmt.Sprintf("test:orders:%d", rand.Int64()), pipe: newPipeliner(rdb, 0)}
	t.Cleanup(func() { rdb.Del(context.Background(), q.key) })
	cfg := stock.Config{Name: catalog.RedisStream}
	cfg.PerUserLimit = limit
	svc, err := stock.NewService(stock.ServiceOptions{Instance: "test", Store: st, Mirror: NewMirror(rdb), Stream: q, Initial: cfg})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { svc.Close() })
	goods := 2_000_000_000 + rand.Int64N(1_000_000_000)
	if rep, err := svc.Reset(ctx, goods, inStock); err != nil || len(rep.Skipped) > 0 {
		t.Fatalf("reset: %v, skipped %v", err, rep.Skipped)
	}
	if err := rdb.XGroupCreateMkStream(ctx, q.key, Group, "0").Err(); err != nil {
		t.Fatal(err)
	}
	return streamFixture{st: st, rdb: rdb, q: q, svc: svc, goods: goods}
}

// await polls cond until it holds or the deadline passes.
func await(t *testing.T, within time.Duration, what string, cond func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		ok, state := cond()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s not within %s: %s", what, within, state)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestStreamDeadConsumer: redis-stream accepts purchases in Redis (202,
// with an order id), a consumer reads them and dies before its XACK (as a
// kill -9 leaves them: pending in its name), and a live consumer takes
// them over with XAUTOCLAIM after ClaimIdle and writes every order once:
// orders equal units sold, the stock in MySQL follows, nothing oversold.
// A replayed request gets its first order; an entry written twice is a
// duplicate, skipped.
func TestStreamDeadConsumer(t *testing.T) {
	f := newStreamFixture(t, 20, 0)
	ctx := context.Background()
	ids := map[int64]bool{}
	for i := range 25 {
		rc, err := f.svc.Purchase(ctx, stock.PurchaseRequest{GoodsID: f.goods, Qty: 1, UserID: fmt.Sprintf("u%d", i), RequestID: fmt.Sprintf("%d-%d", f.goods, i)})
		switch {
		case i < 20 && (err != nil || !rc.Accepted || rc.OrderID <= 0 || rc.Remaining != int64(19-i)):
			t.Fatalf("purchase %d: %+v, %v; want accepted with an order id and %d left", i, rc, err, 19-i)
		case i >= 20 && !errors.Is(err, stock.ErrSoldOut):
			t.Fatalf("purchase %d past the stock: %+v, %v; want %v", i, rc, err, stock.ErrSoldOut)
		}
		if err == nil {
			ids[rc.OrderID] = true
		}
	}
	if len(ids) != 20 {
		t.Fatalf("%d distinct order ids for 20 accepted purchases", len(ids))
	}
	rc, err := f.svc.Purchase(ctx, stock.PurchaseRequest{GoodsID: f.goods, Qty: 1, UserID: "u3", RequestID: fmt.Sprintf("%d-3", f.goods)})
	if err != nil || !rc.Replayed || !ids[rc.OrderID] || rc.Remaining != 16 {
		t.Fatalf("replay: %+v, %v; want the first order again, with the 16 left by its sale", rc, err)
	}
	// The dead consumer: it read every entry and never acknowledged one.
	// Its read is the entries' delivery, after this moment: none may be
	// claimed before read + ClaimIdle.
	read := time.Now()
	res, err := f.rdb.XReadGroup(ctx, &redis.XReadGroupArgs{Group: Group, Consumer: "killed", Streams: []string{f.q.key, ">"}, Count: 100}).Result()
	if err != nil || len(res) != 1 || len(res[0].Messages) != 20 {
		t.Fatalf("the dead consumer read %v, %v; want the 20 entries", res, err)
	}
	if st, err := f.q.Status(ctx, f.goods); err != nil || st.Pending != 20 || st.Drained() {
		t.Fatalf("status %+v, %v; want 20 pending", st, err)
	}
	live := startConsumer(f.rdb, f.q.key, f.st, "live", ConsumerOptions{})
	t.Cleanup(func() { live.Close() })
	var st stock.QueueStatus
	await(t, 15*time.Second, "the queue drained", func() (bool, string) {
		st, err = f.q.Status(ctx, f.goods)
		return err == nil && st.Drained(), fmt.Sprintf("%+v, %v", st, err)
	})
	if took := time.Since(read); took < ClaimIdle-time.Millisecond { // Redis counts idle time in whole ms
		t.Errorf("drained %s after the dead consumer's read: the entries were taken before they were idle for %s", took, ClaimIdle)
	}
	if st.Accepted != 20 || st.Written != 20 || st.Reclaimed != 20 || st.Duplicates != 0 || len(st.LagUS) != 20 || st.Batches != 1 {
		t.Errorf("status %+v; want 20 accepted, written and reclaimed, 20 lags, in 1 batch", st)
	}
	a, err := f.svc.Audit(ctx, f.goods)
	if err != nil {
		t.Fatal(err)
	}
	if a.Orders != 20 || a.SoldQty != 20 || a.Stock != 0 || a.Oversold != 0 || a.LostUpdates != 0 {
		t.Errorf("audit %+v; want 20 orders, stock 0", a)
	}
	status, o, err := f.svc.OrderStatus(ctx, f.goods, fmt.Sprintf("%d-7", f.goods))
	if err != nil || status != "written" || !ids[o.ID] {
		t.Errorf("order status %q %+v %v; want written with its accepted order id", status, o, err)
	}
	// An entry delivered again after its order was written is skipped.
	e, err := parseEntry(res[0].Messages[0])
	if err != nil {
		t.Fatal(err)
	}
	outs, err := f.st.WriteQueued(ctx, []stock.Order{e.order}, 0)
	if err != nil || len(outs) != 1 || outs[0] != sqlstore.Duplicate {
		t.Errorf("writing an entry again: %v, %v; want a duplicate", outs, err)
	}
	if a2, _ := f.svc.Audit(ctx, f.goods); a2.Orders != 20 || a2.Stock != 0 {
		t.Errorf("after a duplicate delivery: %+v", a2)
	}
	// A batch delivered again: its one multi-row INSERT meets the
	// duplicates, inserts nothing, and the entries are sorted out one by
	// one.
	var batch []stock.Order
	for _, m := range res[0].Messages[:3] {
		e, err := parseEntry(m)
		if err != nil {
			t.Fatal(err)
		}
		batch = append(batch, e.order)
	}
	outs, err = f.st.WriteQueued(ctx, batch, 0)
	if err != nil || !slices.Equal(outs, []sqlstore.Outcome{sqlstore.Duplicate, sqlstore.Duplicate, sqlstore.Duplicate}) {
		t.Errorf("writing a batch again: %v, %v; want 3 duplicates", outs, err)
	}
	if a3, _ := f.svc.Audit(ctx, f.goods); a3.Orders != 20 || a3.Stock != 0 {
		t.Errorf("after a duplicate batch: %+v", a3)
	}
}

// TestStreamPerUserLimit: the per-user limit is checked in the accept
// script: a user's purchases past it are refused, the stock untouched.
func TestStreamPerUserLimit(t *testing.T) {
	f := newStreamFixture(t, 10, 2)
	ctx := context.Background()
	ok := 0
	for i := range 5 {
		_, err := f.svc.Purchase(ctx, stock.PurchaseRequest{GoodsID: f.goods, Qty: 1, UserID: "same", RequestID: fmt.Sprintf("%d-%d", f.goods, i)})
		switch {
		case err == nil:
			ok++
		case !errors.Is(err, stock.ErrUserLimit):
			t.Fatalf("purchase %d: %v", i, err)
		}
	}
	left, err := f.rdb.Get(ctx, MirrorKey(f.goods)).Int64()
	if ok != 2 || err != nil || left != 8 {
		t.Errorf("%d accepted, %d left in Redis (%v); want 2 and 8", ok, left, err)
	}
}

// TestStreamGather: a consumer that waits after a short batch (Gather)
// writes the purchases accepted meanwhile in one batch, one MySQL
// transaction, instead of reading each as it comes.
func TestStreamGather(t *testing.T) {
	f := newStreamFixture(t, 50, 0)
	ctx := context.Background()
	c := startConsumer(f.rdb, f.q.key, f.st, "gather", ConsumerOptions{Gather: 2 * time.Second})
	t.Cleanup(func() { c.Close() })
	buy := func(i int) {
		t.Helper()
		rc, err := f.svc.Purchase(ctx, stock.PurchaseRequest{GoodsID: f.goods, Qty: 1, UserID: fmt.Sprintf("u%d", i), RequestID: fmt.Sprintf("%d-%d", f.goods, i)})
		if err != nil || !rc.Accepted {
			t.Fatalf("purchase %d: %+v, %v; want accepted", i, rc, err)
		}
	}
	written := func(n int64) func() (bool, string) {
		return func() (bool, string) {
			st, err := f.q.Status(ctx, f.goods)
			return err == nil && st.Written >= n && st.Drained(), fmt.Sprintf("%+v, %v", st, err)
		}
	}
	buy(0)
	await(t, 15*time.Second, "the first order written", written(1))
	// The consumer wrote a batch of one and waits: these gather.
	for i := 1; i <= 10; i++ {
		buy(i)
	}
	await(t, 15*time.Second, "the 10 orders written", written(11))
	st, err := f.q.Status(ctx, f.goods)
	if err != nil || st.Written != 11 || st.Batches != 2 {
		t.Errorf("status %+v, %v; want 11 written in 2 batches (1, then the 10 that gathered)", st, err)
	}
	if a, err := f.svc.Audit(ctx, f.goods); err != nil || a.Orders != 11 || a.Stock != 39 || a.Oversold != 0 {
		t.Errorf("audit %+v, %v; want 11 orders, stock 39", a, err)
	}
}

// TestStreamStatusStaleEntriesRead: a replica promoted by a Sentinel
// failover can carry a group whose entries-read counter is behind its
// last-delivered id, so Redis's XINFO lag counts entries every consumer
// has read (seen under the nemesis: "0 pending and 4527 not read" for a
// queue that was empty). Status counts the entries past the last
// delivered id instead, so a read queue is drained whatever the counter
// says, and one still unread is not.
func TestStreamStatusStaleEntriesRead(t *testing.T) {
	f := newStreamFixture(t, 30, 0)
	ctx := context.Background()
	for i := range 30 {
		if _, err := f.svc.Purchase(ctx, stock.PurchaseRequest{GoodsID: f.goods, Qty: 1, UserID: fmt.Sprintf("u%d", i), RequestID: fmt.Sprintf("%d-%d", f.goods, i)}); err != nil {
			t.Fatalf("purchase %d: %v", i, err)
		}
	}
	res, err := f.rdb.XReadGroup(ctx, &redis.XReadGroupArgs{Group: Group, Consumer: "c", Streams: []string{f.q.key, ">"}, Count: 20}).Result()
	if err != nil || len(res) != 1 || len(res[0].Messages) != 20 {
		t.Fatalf("read %v, %v; want 20 entries", res, err)
	}
	ids := make([]string, 0, 20)
	for _, m := range res[0].Messages {
		ids = append(ids, m.ID)
	}
	if err := f.rdb.XAck(ctx, f.q.key, Group, ids...).Err(); err != nil {
		t.Fatal(err)
	}
	last := ids[len(ids)-1]
	for _, tc := range []struct {
		name        string
		entriesRead int64
		read        int // entries read past the first 20
		lag         int64
	}{
		{"10 unread, the counter right", 20, 0, 10},
		{"10 unread, the counter stale", 0, 0, 10},
		{"all read, the counter stale", 0, 10, 0},
		{"all read, the counter ahead", 100, 10, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			id := last
			if tc.read > 0 {
				msgs, err := f.rdb.XRangeN(ctx, f.q.key, "-", "+", 30).Result()
				if err != nil || len(msgs) != 30 {
					t.Fatalf("xrange: %d, %v", len(msgs), err)
				}
				id = msgs[19+tc.read].ID
			}
			if err := f.rdb.Do(ctx, "XGROUP", "SETID", f.q.key, Group, id, "ENTRIESREAD", tc.entriesRead).Err(); err != nil {
				t.Fatal(err)
			}
			st, err := f.q.Status(ctx, f.goods)
			if err != nil {
				t.Fatal(err)
			}
			if st.Lag != tc.lag || st.Pending != 0 || st.Drained() != (tc.lag == 0) {
				t.Errorf("status lag %d, pending %d, drained %v; want lag %d, pending 0", st.Lag, st.Pending, st.Drained(), tc.lag)
			}
		})
	}
}

// TestStreamAcceptWaitsForReplica: with replicas 1, a sale is answered
// only once the replica has it (WAIT), so a failover that promotes the
// replica keeps every answered sale. With the replica down the accept
// fails as backend_unavailable (the primary took the stock), and the
// client's resend with the same key, once the replica is back, is
// answered that sale. A primary without replicas answers at once with 0.
func TestStreamAcceptWaitsForReplica(t *testing.T) {
	ctx := context.Background()
	primary := testenv.StartRedis(t)
	replica := testenv.StartRedis(t)
	pc := redis.NewClient(&redis.Options{Addr: primary.Addr})
	rc := redis.NewClient(&redis.Options{Addr: replica.Addr})
	t.Cleanup(func() { pc.Close(); rc.Close() })
	follow := func() {
		t.Helper()
		host, port, _ := strings.Cut(primary.Addr, ":")
		if err := rc.ReplicaOf(ctx, host, port).Err(); err != nil {
			t.Fatal(err)
		}
		await(t, 10*time.Second, "the replica in sync", func() (bool, string) {
			info, err := rc.Info(ctx, "replication").Result()
			return err == nil && strings.Contains(info, "master_link_status:up"), info
		})
	}
	follow()
	const goods = 7
	q := New(pc, 1)
	if err := q.Init(ctx, goods, 10); err != nil {
		t.Fatal(err)
	}
	order := func(i int) stock.Order {
		return stock.Order{GoodsID: goods, Qty: 1, UserID: fmt.Sprintf("u%d", i), RequestID: fmt.Sprintf("r%d", i), Instance: "test"}
	}
	left, id, _, err := q.Accept(ctx, order(1), 0)
	if err != nil || left != 9 {
		t.Fatalf("accept with the replica up: %d left, %v; want 9", left, err)
	}
	if n, err := rc.XLen(ctx, Key).Result(); err != nil || n != 1 {
		t.Fatalf("the replica has %d entries, %v, once the sale was answered; want 1", n, err)
	}
	replica.Stop(t)
	began := time.Now()
	if _, _, _, err := q.Accept(ctx, order(2), 0); !errors.Is(err, stock.ErrBackendUnavailable) {
		t.Fatalf("accept with the replica down: %v; want %v", err, stock.ErrBackendUnavailable)
	}
	if took := time.Since(began); took < ReplicaWait-50*time.Millisecond {
		t.Errorf("the accept failed after %s, before WAIT's %s", took, ReplicaWait)
	}
	if s, err := pc.Get(ctx, MirrorKey(goods)).Int64(); err != nil || s != 8 {
		t.Fatalf("the primary's stock %d, %v; want 8 (the unanswered sale took its unit)", s, err)
	}
	replica.Start(t)
	rc = redis.NewClient(&redis.Options{Addr: replica.Addr})
	follow()
	left, id2, replayed, err := q.Accept(ctx, order(2), 0)
	if err != nil || !replayed || left != 8 || id2 == id {
		t.Fatalf("the resend: %d left, order %d (first sale's %d), replayed %v, %v; want the sale's outcome, 8 left", left, id2, id, replayed, err)
	}
	alone := New(redis.NewClient(&redis.Options{Addr: testenv.StartRedis(t).Addr}), 0)
	if err := alone.Init(ctx, goods, 1); err != nil {
		t.Fatal(err)
	}
	if left, _, _, err := alone.Accept(ctx, order(3), 0); err != nil || left != 0 {
		t.Fatalf("accept without replicas to wait for: %d left, %v", left, err)
	}
}
