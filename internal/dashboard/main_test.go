package dashboard

import (
	"os"
	"testing"

	"github.com/seckill-lab/seckill/internal/stack"
	"github.com/seckill-lab/seckill/internal/stack/stacktest"
)

// TestMain gives the package a stack of its own (Redis and MySQL, base
// port 26400): the browser test needs a strategy with lock events while
// other packages' tests switch the shared stack's strategy.
func TestMain(m *testing.M) {
	os.Exit(stacktest.Main(m, stack.Options{BasePort: 26400, Backends: []stack.Backend{stack.BackendRedis, stack.BackendMySQL}}))
}
