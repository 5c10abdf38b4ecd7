package stock_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"

	"github.com/seckill-lab/seckill/internal/sqltest"
	"github.com/seckill-lab/seckill/internal/testenv"
	. "github.com/seckill-lab/seckill/stock"
	"github.com/seckill-lab/seckill/stock/catalog"
	"github.com/seckill-lab/seckill/stock/orderstream"
)

// TestPerUserLimit: with PerUserLimit, every correct strategy sells a user
// at most that many orders, however many of the user's purchases race;
// each of the others is refused with ErrUserLimit and takes no stock. A
// replayed request is answered with its order, not refused.
func TestPerUserLimit(t *testing.T) {
	st := sqltest.Store(t)
	rdb := testenv.RedisClient(t)
	ctx := context.Background()
	backends := map[string]LockBackend{catalog.Redis: redisBackend(t)}
	for _, tc := range []struct {
		name  string
		limit int
		batch int
	}{
		{catalog.SQLAtomic, 1, 0},
		{catalog.SQLAtomic, 3, 0},
		{catalog.MySQLForUpdate, 2, 0},
		{catalog.MySQLOptimistic, 1, 0},
		{catalog.RedisAtomic, 1, 0},
		{catalog.RedisAtomic, 2, 0},
		{catalog.Redis, 1, 0},
		{catalog.Redis, 2, 8},
	} {
		t.Run(fmt.Sprintf("%s/limit-%d/batch-%d", tc.name, tc.limit, tc.batch), func(t *testing.T) {
			cfg := Config{Name: tc.name}
			cfg.PerUserLimit, cfg.Batch = tc.limit, tc.batch
			svc, err := NewService(ServiceOptions{Instance: "test", Store: st, Backends: backends, Mirror: orderstream.NewMirror(rdb), Initial: cfg})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { svc.Close() })
			goods := 2_000_000_000 + rand.Int64N(1_000_000_000)
			if _, err := svc.Reset(ctx, goods, 100); err != nil {
				t.Fatal(err)
			}
			const users, each = 3, 8
			var mu sync.Mutex
			ok := map[string]int{}
			var wg sync.WaitGroup
			for u := range users {
				for i := range each {
					wg.Go(func() {
						user := fmt.Sprintf("user-%d", u)
						_, err := svc.Purchase(ctx, PurchaseRequest{GoodsID: goods, Qty: 1, UserID: user, RequestID: fmt.Sprintf("%d-%d-%d", goods, u, i)})
						mu.Lock()
						defer mu.Unlock()
						switch {
						case err == nil:
							ok[user]++
						case !errors.Is(err, ErrUserLimit):
							t.Errorf("%s: %v, want a sale or %v", user, err, ErrUserLimit)
						}
					})
				}
			}
			wg.Wait()
			for u := range users {
				if n := ok[fmt.Sprintf("user-%d", u)]; n != tc.limit {
					t.Errorf("user-%d bought %d times, want exactly the limit %d", u, n, tc.limit)
				}
			}
			a, err := svc.Audit(ctx, goods)
			if err != nil {
				t.Fatal(err)
			}
			if want := int64(users * tc.limit); a.Orders != want || a.Stock != 100-want {
				t.Errorf("audit: %d orders, stock %d; want %d orders, stock %d", a.Orders, a.Stock, want, 100-want)
			}
			// The first request again: its order, not a refusal.
			rc, err := svc.Purchase(ctx, PurchaseRequest{GoodsID: goods, Qty: 1, UserID: "user-0", RequestID: fmt.Sprintf("%d-0-0", goods)})
			if err == nil && !rc.Replayed {
				t.Errorf("a request already sold was sold again: %+v", rc)
			}
			if err != nil && !errors.Is(err, ErrUserLimit) {
				t.Errorf("replay: %v", err)
			}
		})
	}
}
