package stock_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/seckill-lab/seckill/internal/sqltest"
	"github.com/seckill-lab/seckill/internal/testenv"
	"github.com/seckill-lab/seckill/lockimpl"
	"github.com/seckill-lab/seckill/lockimpl/redislock"
	. "github.com/seckill-lab/seckill/stock"
	"github.com/seckill-lab/seckill/stock/catalog"
)

// batchBuy is one purchase of a batch test: its qty, its idempotency key
// (a name shared by purchases that reuse it; "" = its own), and whether it
// is cancelled while queued.
type batchBuy struct {
	qty    int64
	key    string
	cancel bool
}

// batchWant is one purchase's answer: the error it wraps (nil = sold), and
// when sold the stock it reports left and whether it was a replay.
type batchWant struct {
	err       error
	remaining int64
	replayed  bool
}

// redisBackend opens the redis strategy's backend on the test Redis.
func redisBackend(t *testing.T) LockBackend {
	t.Helper()
	rdb := testenv.RedisClient(t)
	b := redislock.NewBackend(rdb)
	t.Cleanup(func() { b.Close() })
	return b
}

// waitQueued waits until n purchases are queued for key (failing after a
// generous minute rather than hanging).
func waitQueued(t *testing.T, svc *Service, key string, n int) {
	t.Helper()
	for deadline := time.Now().Add(time.Minute); QueuedFor(svc, key) != n; time.Sleep(2 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%d purchases queued for %s, want %d", QueuedFor(svc, key), key, n)
		}
	}
}

// TestBatchPurchases queues purchases behind a lock held elsewhere, in a
// known order, then lets them go: the leader drains up to Batch of them
// per lock hold and sells them in one transaction; every purchase gets its
// own answer, with the stock left after its own sale in arrival order.
func TestBatchPurchases(t *testing.T) {
	st := sqltest.Store(t)
	backend := redisBackend(t)
	ctx := context.Background()
	sold := func(remaining int64) batchWant { return batchWant{remaining: remaining} }
	ones := func(n int) []batchBuy {
		out := make([]batchBuy, n)
		for i := range out {
			out[i].qty = 1
		}
		return out
	}
	countdown := func(from int64, n int) []batchWant {
		out := make([]batchWant, n)
		for i := range out {
			out[i] = sold(from - int64(i) - 1)
		}
		return out
	}
	cases := []struct {
		name  string
		batch int
		stock int64
		// presold is a key sold (qty 1) before the batch, so that
		// purchases can reuse it; it counts in the orders and stock.
		presold     string
		buys        []batchBuy
		want        []batchWant
		wantBatches int
		wantStock   int64
		wantOrders  int64
	}{
		{name: "one purchase per hold", batch: 8, stock: 10, buys: ones(1), want: countdown(10, 1), wantBatches: 1, wantStock: 9, wantOrders: 1},
		{name: "two purchases per hold", batch: 8, stock: 10, buys: ones(2), want: countdown(10, 2), wantBatches: 1, wantStock: 8, wantOrders: 2},
		{name: "B purchases per hold", batch: 8, stock: 10, buys: ones(8), want: countdown(10, 8), wantBatches: 1, wantStock: 2, wantOrders: 8},
		{name: "10 purchases, B=4: holds of 4, 4 and 2", batch: 4, stock: 20, buys: ones(10), want: countdown(20, 10), wantBatches: 3, wantStock: 10, wantOrders: 10},
		{name: "mixed quantities", batch: 8, stock: 10, buys: []batchBuy{{qty: 3}, {qty: 1}, {qty: 5}},
			want: []batchWant{sold(7), sold(6), sold(1)}, wantBatches: 1, wantStock: 1, wantOrders: 3},
		{name: "reused key with another qty is refused, the others sold", batch: 8, stock: 10, presold: "k",
			buys:        []batchBuy{{qty: 1}, {qty: 2, key: "k"}, {qty: 1}},
			want:        []batchWant{sold(8), {err: ErrIdempotencyKeyReused}, sold(7)},
			wantBatches: 1, wantStock: 7, wantOrders: 3},
		{name: "one key twice in a batch: the second is replayed", batch: 8, stock: 10,
			buys:        []batchBuy{{qty: 1, key: "k"}, {qty: 1, key: "k"}, {qty: 1}},
			want:        []batchWant{sold(9), {remaining: 8, replayed: true}, sold(8)},
			wantBatches: 1, wantStock: 8, wantOrders: 2},
		{name: "the last purchase finds the stock short", batch: 8, stock: 3, buys: []batchBuy{{qty: 1}, {qty: 1}, {qty: 2}},
			want: []batchWant{sold(2), sold(1), {err: ErrSoldOut}}, wantBatches: 1, wantStock: 1, wantOrders: 2},
		{name: "a short purchase does not stop a smaller one after it", batch: 8, stock: 3, buys: []batchBuy{{qty: 2}, {qty: 2}, {qty: 1}},
			want: []batchWant{sold(1), {err: ErrSoldOut}, sold(0)}, wantBatches: 1, wantStock: 0, wantOrders: 2},
		{name: "a purchase cancelled while queued is not sold", batch: 8, stock: 5, buys: []batchBuy{{qty: 1}, {qty: 1, cancel: true}, {qty: 1}},
			want: []batchWant{sold(4), {err: context.Canceled}, sold(3)}, wantBatches: 1, wantStock: 3, wantOrders: 2},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			events := NewEvents(10_000)
			cfg := Config{Name: catalog.Redis}
			cfg.Batch = tc.batch
			svc, err := NewService(ServiceOptions{Instance: "test", Store: st, Backends: map[string]LockBackend{catalog.Redis: backend}, Events: events, Initial: cfg})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { svc.Close() })
			goods := 2_000_000_000 + rand.Int64N(1_000_000_000)
			key := LockKey(goods)
			if _, err := svc.Reset(ctx, goods, tc.stock); err != nil {
				t.Fatal(err)
			}
			rid := func(i int, b batchBuy) string {
				if b.key != "" {
					return fmt.Sprintf("%d-%s", goods, b.key)
				}
				return fmt.Sprintf("%d-%d", goods, i)
			}
			if tc.presold != "" {
				if _, err := svc.Purchase(ctx, PurchaseRequest{GoodsID: goods, Qty: 1, UserID: "u", RequestID: rid(-1, batchBuy{key: tc.presold})}); err != nil {
					t.Fatal(err)
				}
			}

			// Hold the lock elsewhere, so that the purchases queue up.
			holder, err := backend.NewLocker(ctx, lockimpl.Options{TTL: time.Minute})
			if err != nil {
				t.Fatal(err)
			}
			if c, ok := holder.(io.Closer); ok {
				t.Cleanup(func() { c.Close() })
			}
			lease, err := holder.Lock(ctx, key)
			if err != nil {
				t.Fatal(err)
			}
			type answer struct {
				rc  Receipt
				err error
			}
			answers := make([]chan answer, len(tc.buys))
			queued := 0
			for i, b := range tc.buys {
				pctx, cancel := context.WithCancel(ctx)
				defer cancel()
				answers[i] = make(chan answer, 1)
				go func() {
					rc, err := svc.Purchase(pctx, PurchaseRequest{GoodsID: goods, Qty: b.qty, UserID: "u", RequestID: rid(i, b)})
					answers[i] <- answer{rc, err}
				}()
				queued++
				waitQueued(t, svc, key, queued)
				if b.cancel {
					cancel()
					if a := <-answers[i]; !errors.Is(a.err, context.Canceled) {
						t.Fatalf("cancelled purchase %d: %+v, %v; want context.Canceled", i, a.rc, a.err)
					}
					answers[i] <- answer{err: context.Canceled}
					queued--
					waitQueued(t, svc, key, queued)
				}
			}
			if err := lease.Unlock(ctx); err != nil {
				t.Fatal(err)
			}

			for i, w := range tc.want {
				a := <-answers[i]
				if w.err != nil {
					if !errors.Is(a.err, w.err) {
						t.Errorf("purchase %d: %+v, %v; want %v", i, a.rc, a.err, w.err)
					}
					continue
				}
				if a.err != nil || a.rc.Remaining != w.remaining || a.rc.Replayed != w.replayed || a.rc.Qty != tc.buys[i].qty {
					t.Errorf("purchase %d: %+v, %v; want remaining %d, replayed %v", i, a.rc, a.err, w.remaining, w.replayed)
				}
			}
			au, err := svc.Audit(ctx, goods)
			if err != nil {
				t.Fatal(err)
			}
			if au.Stock != tc.wantStock || au.Orders != tc.wantOrders || au.Oversold != 0 || au.LostUpdates != 0 {
				t.Errorf("audit %+v; want stock %d, %d orders, nothing oversold or lost", au, tc.wantStock, tc.wantOrders)
			}
			for i, b := range tc.buys {
				if _, found, err := st.OrderByRequest(ctx, rid(i, b)); b.cancel && (err != nil || found) {
					t.Errorf("cancelled purchase %d: order found %v (%v)", i, found, err)
				}
			}

			// One lock hold per batch: the committed purchases carry the
			// leader's id; each batch has at most Batch of them.
			past := events.Kept(0, math.MaxUint64, math.MaxInt)
			perBatch := map[string]int{}
			for _, ev := range past {
				if ev.Key == key && ev.Kind == EventCommitted {
					if ev.Batch == "" {
						t.Errorf("purchase %s committed without a batch id", ev.Purchase)
					}
					perBatch[ev.Batch]++
				}
			}
			if tc.presold != "" {
				delete(perBatch, rid(-1, batchBuy{key: tc.presold}))
			}
			if len(perBatch) != tc.wantBatches {
				t.Errorf("%d batches committed %v, want %d", len(perBatch), perBatch, tc.wantBatches)
			}
			for b, n := range perBatch {
				if n > tc.batch {
					t.Errorf("batch %s sold %d purchases, more than Batch %d", b, n, tc.batch)
				}
			}
		})
	}
}

// TestBatchConcurrent: many purchases at once on a short stock, batched:
// exactly the stock is sold, every sale reports a distinct remaining stock.
func TestBatchConcurrent(t *testing.T) {
	st := sqltest.Store(t)
	backend := redisBackend(t)
	ctx := context.Background()
	cases := []struct {
		batch, buyers int
		stock         int64
	}{{2, 40, 25}, {16, 120, 100}, {256, 60, 60}}
	for _, tc := range cases {
		t.Run(fmt.Sprintf("B=%d", tc.batch), func(t *testing.T) {
			cfg := Config{Name: catalog.Redis}
			cfg.Batch = tc.batch
			svc, err := NewService(ServiceOptions{Instance: "test", Store: st, Backends: map[string]LockBackend{catalog.Redis: backend}, Initial: cfg})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { svc.Close() })
			goods := 2_000_000_000 + rand.Int64N(1_000_000_000)
			if _, err := svc.Reset(ctx, goods, tc.stock); err != nil {
				t.Fatal(err)
			}
			type answer struct {
				rc  Receipt
				err error
			}
			answers := make(chan answer, tc.buyers)
			for range tc.buyers {
				go func() {
					rc, err := svc.Purchase(ctx, PurchaseRequest{GoodsID: goods, Qty: 1, UserID: "u"})
					answers <- answer{rc, err}
				}()
			}
			remaining := map[int64]bool{}
			var ok, soldOut int64
			for range tc.buyers {
				a := <-answers
				switch {
				case a.err == nil:
					ok++
					if remaining[a.rc.Remaining] {
						t.Errorf("two sales reported remaining %d", a.rc.Remaining)
					}
					remaining[a.rc.Remaining] = true
				case errors.Is(a.err, ErrSoldOut):
					soldOut++
				default:
					t.Errorf("purchase: %v", a.err)
				}
			}
			want := min(tc.stock, int64(tc.buyers))
			au, err := svc.Audit(ctx, goods)
			if err != nil {
				t.Fatal(err)
			}
			if ok != want || au.SoldQty != want || au.Oversold != 0 || au.LostUpdates != 0 || au.Stock != tc.stock-want {
				t.Fatalf("%d sold (%d sold out), audit %+v; want %d sold, nothing oversold or lost", ok, soldOut, au, want)
			}
		})
	}
}
