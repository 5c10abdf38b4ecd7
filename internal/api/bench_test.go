package api_test

import (
	"context"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/seckill-lab/seckill/internal/api"
	"github.com/seckill-lab/seckill/stock"
	"github.com/seckill-lab/seckill/stock/catalog"
)

// memStore is a stock.Database that sells from memory: the handler's and
// the Service's own cost, with no database behind them.
type memStore struct {
	next atomic.Int64
}

func (m *memStore) Goods(_ context.Context, id int64) (stock.Goods, error) {
	return stock.Goods{ID: id, Stock: 1 << 40}, nil
}
func (m *memStore) Reset(context.Context, int64, int64) error         { return nil }
func (m *memStore) Audit(context.Context, int64) (stock.Audit, error) { return stock.Audit{}, nil }
func (m *memStore) RequestIDs(context.Context, int64) ([]string, error) {
	return nil, nil
}
func (m *memStore) OrderByRequest(context.Context, string) (stock.Order, bool, error) {
	return stock.Order{}, false, nil
}
func (m *memStore) ReadModifyWrite(ctx context.Context, d stock.Deduction, _ func(context.Context) (func(), error)) (stock.Result, error) {
	return m.Atomic(ctx, d)
}
func (m *memStore) ReadModifyWriteBatch(context.Context, []stock.Deduction, uint64, func() error) ([]stock.Result, []error, error) {
	return nil, nil, nil
}
func (m *memStore) ForUpdate(ctx context.Context, d stock.Deduction, _ time.Duration) (stock.Result, error) {
	return m.Atomic(ctx, d)
}
func (m *memStore) Optimistic(ctx context.Context, d stock.Deduction, _ int, _ time.Duration) (stock.Result, error) {
	return m.Atomic(ctx, d)
}
func (m *memStore) Atomic(_ context.Context, d stock.Deduction) (stock.Result, error) {
	o := d.Order
	o.ID = m.next.Add(1)
	return stock.Result{Order: o, Remaining: 1 << 40}, nil
}

// BenchmarkPurchase is one purchase through the handler (routing,
// middleware, the body, the Service, metrics, the answer) on sql-atomic
// over a store in memory: the instance's own CPU and allocations per
// purchase (-benchmem).
func BenchmarkPurchase(b *testing.B) {
	gin.SetMode(gin.ReleaseMode)
	svc, err := stock.NewService(stock.ServiceOptions{Instance: "bench-1", Store: &memStore{},
		Initial: stock.Config{Name: catalog.SQLAtomic}})
	if err != nil {
		b.Fatal(err)
	}
	defer svc.Close()
	h := api.New(api.Options{Service: svc, Events: stock.NewEvents(1024), Log: log.New(io.Discard, "", 0)})
	body := `{"goods_id":1,"qty":1,"user_id":"u-1"}`
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		req := httptest.NewRequest(http.MethodPost, "/api/v1/purchase", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Idempotency-Key", "bench-"+strconv.Itoa(i))
		w := httptest.NewRecorder()
		h.ServeHTTP(w, req)
		if w.Code != http.StatusOK {
			b.Fatalf("status %d: %s", w.Code, w.Body)
		}
	}
}
