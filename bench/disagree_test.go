package bench

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/seckill-lab/seckill/internal/testenv"
	"github.com/seckill-lab/seckill/stock"
)

// TestVerifyStrategyDisagree switches two real instances of the test stack
// to different strategies and checks the harness's one-line error names
// each instance's strategy. It restores them afterwards.
func TestVerifyStrategyDisagree(t *testing.T) {
	instances := testenv.List(t, testenv.InstanceURLs)
	if len(instances) < 2 {
		t.Fatalf("%s lists %d instances; the test stack has 3", testenv.InstanceURLs, len(instances))
	}
	a := newAdmin(testenv.Get(t, testenv.AdminToken))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	two := instances[:2]
	t.Cleanup(func() { _, _ = a.setStrategy(context.Background(), instances, stock.Config{Name: "none"}) })
	for i, name := range []string{"sql-atomic", "redis"} {
		if _, err := a.setStrategy(ctx, two[i:i+1], stock.Config{Name: name}); err != nil {
			t.Fatal(err)
		}
	}
	_, err := a.verifyStrategy(ctx, two, "sql-atomic")
	if !errors.Is(err, ErrDisagree) || !strings.Contains(err.Error(), "=sql-atomic") || !strings.Contains(err.Error(), "=redis") {
		t.Fatalf("err = %v, want ErrDisagree naming both instances' strategies", err)
	}
	if _, err := a.verifyStrategy(ctx, two[:1], "sql-atomic"); err != nil {
		t.Fatalf("one instance agrees with itself: %v", err)
	}
}
