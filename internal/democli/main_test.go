package democli

import (
	"os"
	"testing"

	"github.com/seckill-lab/seckill/internal/stack"
	"github.com/seckill-lab/seckill/internal/stack/stacktest"
)

// TestMain gives the package a stack of its own (Redis and MySQL, base
// port 26200): its tests switch the fleet's strategy, which would change
// the results of the benches other packages run on the shared stack.
func TestMain(m *testing.M) {
	os.Exit(stacktest.Main(m, stack.Options{BasePort: 26200, Backends: []stack.Backend{stack.BackendRedis, stack.BackendMySQL}}))
}
