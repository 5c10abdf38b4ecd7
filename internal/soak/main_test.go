package soak

import (
	"os"
	"testing"

	"github.com/seckill-lab/seckill/internal/stack"
	"github.com/seckill-lab/seckill/internal/stack/stacktest"
)

// TestMain gives the package a stack of its own (Redis and MariaDB): the
// soak's load switches the fleet's strategy, which must never touch the
// stack other packages test against.
func TestMain(m *testing.M) {
	os.Exit(stacktest.Main(m, stack.Options{BasePort: 25400, Instances: 3, Backends: []stack.Backend{stack.BackendRedis, stack.BackendMySQL}}))
}
