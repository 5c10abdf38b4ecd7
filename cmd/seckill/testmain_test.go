package main

import (
	"os"
	"testing"

	"github.com/seckill-lab/seckill/internal/stack"
	"github.com/seckill-lab/seckill/internal/stack/stacktest"
)

// TestMain gives the package a stack of its own (Redis and MySQL, base
// port 26000): its tests switch the fleet's strategy and re-scale it,
// which would change the results of the benches other packages run on the
// shared stack.
func TestMain(m *testing.M) {
	os.Exit(stacktest.Main(m, stack.Options{BasePort: 26000, Backends: []stack.Backend{stack.BackendRedis, stack.BackendMySQL}}))
}
