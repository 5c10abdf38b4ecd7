package bench_test

import (
	"os"
	"testing"

	"github.com/seckill-lab/seckill/internal/stack"
	"github.com/seckill-lab/seckill/internal/stack/stacktest"
)

// TestMain gives the package a stack of its own, with every backend and 3
// instances like the make test stack: its tests kill one of its servers
// (redis-1) and re-scale its fleet, which the packages testing beside it
// must never see.
func TestMain(m *testing.M) {
	os.Exit(stacktest.Main(m, stack.Options{BasePort: 25600, Instances: 3}))
}
