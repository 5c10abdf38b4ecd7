package stock_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/seckill-lab/seckill/internal/sqltest"
	"github.com/seckill-lab/seckill/internal/testenv"
	. "github.com/seckill-lab/seckill/stock"
	"github.com/seckill-lab/seckill/stock/catalog"
	"github.com/seckill-lab/seckill/stock/orderstream"
)

// TestRedisAtomicReturnsUnitOnFailure: when the MySQL half fails, the unit
// goes back to Redis.
func TestRedisAtomicReturnsUnitOnFailure(t *testing.T) {
	st := sqltest.Store(t)
	rdb := testenv.RedisClient(t)
	ctx := context.Background()
	mirror := orderstream.NewMirror(rdb)
	svc, err := NewService(ServiceOptions{Instance: "test", Store: st, Mirror: mirror, Initial: Config{Name: catalog.RedisAtomic}})
	if err != nil {
		t.Fatal(err)
	}
	goods := 2_000_000_000 + rand.Int64N(1_000_000_000)
	if rep, err := svc.Reset(ctx, goods, 3); err != nil || len(rep.Skipped) > 0 {
		t.Fatalf("reset: %v, skipped %v", err, rep.Skipped)
	}
	rid := fmt.Sprintf("dup-%d", goods)
	if _, err := svc.Purchase(ctx, PurchaseRequest{GoodsID: goods, Qty: 1, UserID: "u", RequestID: rid}); err != nil {
		t.Fatal(err)
	}
	// Make the MySQL half fail: the goods row vanishes after Redis said yes.
	if err := st.DB().Exec("DELETE FROM goods WHERE id = ?", goods).Error; err != nil {
		t.Fatal(err)
	}
	_, err = svc.Purchase(ctx, PurchaseRequest{GoodsID: goods, Qty: 1, UserID: "u"})
	if err == nil {
		t.Fatal("purchase succeeded without a goods row")
	}
	n, err := rdb.Get(ctx, orderstream.MirrorKey(goods)).Int64()
	if err != nil || n != 2 {
		t.Fatalf("mirror holds %d (%v) after a failed insert, want 2: the unit must go back", n, err)
	}
}
