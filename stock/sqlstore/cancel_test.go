package sqlstore_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/seckill-lab/seckill/internal/sqltest"
	"github.com/seckill-lab/seckill/stock"
)

// TestCancelledWriteAllOrNothing: a purchase whose context ends while its
// write is on the wire (the client gave up on a paused instance) either
// sells (the stock taken and the order written) or changes nothing: the
// stock column and the orders agree whatever the moment of the cut.
func TestCancelledWriteAllOrNothing(t *testing.T) {
	st := sqltest.Store(t)
	const n = 300
	for _, tc := range []struct {
		name   string
		fenced bool
		inside func(context.Context) (func(), error) // a lock taken inside the transaction
	}{
		{"one batch", false, nil},
		{"one batch, fenced", true, nil},
		{"a transaction", false, func(context.Context) (func(), error) { return func() {}, nil }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			goods := 2_000_000_000 + rand.Int64N(1_000_000_000)
			if err := st.Reset(context.Background(), goods, n); err != nil {
				t.Fatal(err)
			}
			for i := range n {
				ctx, cancel := context.WithCancel(context.Background())
				time.AfterFunc(time.Duration(rand.Int64N(int64(1500*time.Microsecond))), cancel)
				d := stock.Deduction{Order: order(goods, fmt.Sprintf("%d-%d", goods, i))}
				if tc.fenced {
					d.Fence = uint64(i + 1)
				}
				_, _ = st.ReadModifyWrite(ctx, d, tc.inside)
				cancel()
			}
			a, err := st.Audit(context.Background(), goods)
			if err != nil {
				t.Fatal(err)
			}
			if int64(a.Orders) != n-a.Stock {
				t.Fatalf("%d orders but the stock went from %d to %d: %d units taken without an order", a.Orders, n, a.Stock, n-a.Stock-int64(a.Orders))
			}
			t.Logf("%d of %d sold", a.Orders, n)
		})
	}
}
