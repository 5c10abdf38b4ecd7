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
	"github.com/seckill-lab/seckill/lockimpl"
	"github.com/seckill-lab/seckill/lockimpl/mutexlock"
	. "github.com/seckill-lab/seckill/stock"
	"github.com/seckill-lab/seckill/stock/catalog"
	"github.com/seckill-lab/seckill/stock/counterstore"
)

// TestLockAloneGoods: a goods from CounterGoodsBase is a Redis counter
// with the database's read-modify-write. Under a lock it sells exactly its
// stock; without one, concurrent purchases lose updates and oversell as in
// the database; the audit, the order list and a replayed key read it back;
// the strategies that deduct in the database itself refuse it; an instance
// without the counter answers backend_unavailable.
func TestLockAloneGoods(t *testing.T) {
	rdb := testenv.RedisClient(t)
	ctx := context.Background()
	st := sqltest.Store(t)
	mutex := map[string]LockBackend{catalog.Mutex: mutexlock.NewBackend(mutexlock.New(lockimpl.Options{}))}
	tests := []struct {
		strategy    string
		stock, buys int
		correct     bool
	}{
		{catalog.Mutex, 40, 60, true},
		{catalog.None, 40, 60, false},
	}
	for _, tc := range tests {
		t.Run(tc.strategy, func(t *testing.T) {
			cfg := Config{Name: tc.strategy}
			cfg.WorkDelay = 2e6 // 2 ms: wide enough for an unprotected race
			svc, err := NewService(ServiceOptions{Instance: "t", Store: st, Counter: counterstore.New(rdb), Backends: mutex, Initial: cfg})
			if err != nil {
				t.Fatal(err)
			}
			defer svc.Close()
			goods := CounterGoodsBase + rand.Int64N(1_000_000_000)
			if _, err := svc.Reset(ctx, goods, int64(tc.stock)); err != nil {
				t.Fatal(err)
			}
			var wg sync.WaitGroup
			for i := range tc.buys {
				wg.Go(func() {
					_, _ = svc.Purchase(ctx, PurchaseRequest{GoodsID: goods, Qty: 1, UserID: "u", RequestID: fmt.Sprintf("la-%d-%d", goods, i)})
				})
			}
			wg.Wait()
			a, err := svc.Audit(ctx, goods)
			if err != nil {
				t.Fatal(err)
			}
			if tc.correct && (a.SoldQty != int64(tc.stock) || a.Stock != 0 || a.Oversold != 0 || a.LostUpdates != 0) {
				t.Errorf("%s on a lock-alone goods: %+v, want exactly the stock sold", tc.strategy, a)
			}
			if !tc.correct && a.LostUpdates == 0 {
				t.Errorf("%s on a lock-alone goods lost no update: %+v (the counter must race as the database does)", tc.strategy, a)
			}
			ids, err := svc.RequestIDs(ctx, goods)
			if err != nil || int64(len(ids)) != a.Orders {
				t.Errorf("request ids: %d (%v), want the audit's %d orders", len(ids), err, a.Orders)
			}
			if len(ids) > 0 {
				rc, err := svc.Purchase(ctx, PurchaseRequest{GoodsID: goods, Qty: 1, UserID: "u", RequestID: ids[0]})
				if err != nil || !rc.Replayed {
					t.Errorf("a sold key again: %+v, %v, want the original order replayed", rc, err)
				}
			}
		})
	}
	for _, name := range []string{catalog.SQLAtomic, catalog.MySQLForUpdate, catalog.MySQLOptimistic} {
		svc, err := NewService(ServiceOptions{Instance: "t", Store: st, Counter: counterstore.New(rdb), Initial: Config{Name: name}})
		if err != nil {
			t.Fatal(err)
		}
		goods := CounterGoodsBase + rand.Int64N(1_000_000_000)
		if _, err := svc.Reset(ctx, goods, 5); err != nil {
			t.Fatal(err)
		}
		if _, err := svc.Purchase(ctx, PurchaseRequest{GoodsID: goods, Qty: 1, UserID: "u"}); !errors.Is(err, ErrInvalid) {
			t.Errorf("%s on a lock-alone goods: %v, want ErrInvalid (it has no row)", name, err)
		}
		svc.Close()
	}
	svc, err := NewService(ServiceOptions{Instance: "t", Store: st, Backends: mutex, Initial: Config{Name: catalog.Mutex}})
	if err != nil {
		t.Fatal(err)
	}
	defer svc.Close()
	if _, err := svc.Reset(ctx, CounterGoodsBase+1, 5); !errors.Is(err, ErrBackendUnavailable) {
		t.Errorf("reset of a lock-alone goods without a counter: %v, want ErrBackendUnavailable", err)
	}
}
