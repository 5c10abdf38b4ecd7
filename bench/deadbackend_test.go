package bench_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/seckill-lab/seckill/bench"
	"github.com/seckill-lab/seckill/bench/fleet"
	"github.com/seckill-lab/seckill/internal/stack"
	"github.com/seckill-lab/seckill/internal/testenv"
	"github.com/seckill-lab/seckill/stock/catalog"
)

// TestIntegrationDeadRedisBlocksOnlyItsStrategies starts a stack of its own
// (Redis and MariaDB, 2 instances: it kills one of the stack's servers,
// which no other package's test may find dead) and kills its redis-1. With
// redis-1 down, POST /admin/reset still answers 200 and lists the Redis
// strategies it could not clear; a sql-atomic bench warns and runs; a
// redis bench fails at the reset, saying why.
func TestIntegrationDeadRedisBlocksOnlyItsStrategies(t *testing.T) {
	testenv.Binary(t, "redis-server")
	bin, cleanup, err := testenv.BuildSeckill()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cleanup)
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	f := stack.SystemFinder()
	f.Lab = testenv.LabBin()
	// Its base port is in internal/ports.Suite.
	st, err := stack.Up(ctx, stack.Options{Dir: dir, BasePort: testenv.Port(28600), Instances: 2, Binary: bin, Out: io.Discard,
		Backends: []stack.Backend{stack.BackendRedis, stack.BackendMySQL}, Finder: &f})
	t.Cleanup(func() { _ = stack.Down(context.Background(), dir, io.Discard) })
	if err != nil {
		testenv.Unavailable(t, "a stack of Redis and MariaDB", err)
	}
	fl := fleet.Fleet{Target: st.NginxURL(), Instances: st.InstanceURLs(), AdminToken: st.AdminToken}
	if err := stack.Signal(dir, "redis-1", syscall.SIGKILL); err != nil {
		t.Fatalf("kill redis-1: %v", err)
	}

	t.Run("admin reset lists the skipped backends", func(t *testing.T) {
		body, _ := json.Marshal(map[string]any{"goods_id": 4242, "stock": 5})
		req, err := http.NewRequest(http.MethodPost, fl.Instances[0]+"/admin/reset", bytes.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer "+fl.AdminToken)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var got struct {
			Stock   int64             `json:"stock"`
			Skipped []bench.ResetSkip `json:"skipped"`
		}
		if err := json.NewDecoder(resp.Body).Decode(&got); err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("POST /admin/reset: %s, %v", resp.Status, err)
		}
		skipped := map[string]bench.ResetSkip{}
		for _, sk := range got.Skipped {
			skipped[sk.Strategy] = sk
		}
		for _, s := range []string{catalog.Redis, catalog.RedisSpin, catalog.RedisTTL, catalog.RedisAtomic} {
			if sk, ok := skipped[s]; !ok || sk.Server != string(catalog.ServerRedis) || sk.Reason == "" {
				t.Errorf("%s: skip %+v, want one on redis with a reason; got %v", s, sk, got.Skipped)
			}
		}
		// Redlock keeps a quorum (4 of 5); mysql-unique does not use redis-1.
		for _, s := range []string{catalog.Redlock, catalog.MySQLUnique} {
			if sk, ok := skipped[s]; ok {
				t.Errorf("%s skipped: %+v", s, sk)
			}
		}
	})

	tests := []struct {
		strategy string
		wantErr  error // nil: the run goes on with a warning
	}{
		{catalog.SQLAtomic, nil},
		{catalog.Redis, bench.ErrResetSkipped},
	}
	for _, tc := range tests {
		t.Run(tc.strategy, func(t *testing.T) {
			var progress bytes.Buffer
			o := bench.Options{Fleet: fl, Strategies: []string{tc.strategy}, Seed: 5, Progress: &progress}
			if tc.wantErr == nil {
				r := runOne(t, o)
				t.Log(describe(r))
				if r.Oversold != 0 || r.FinalStock != 0 || r.OK == 0 {
					t.Errorf("want sales, oversold 0, final stock 0; got %s", describe(r))
				}
				// The skipped strategies are listed by name (the workshop's
				// exercises on Redis among them): redis is one of them.
				if w := strings.Join(r.Warnings, "\n"); !strings.Contains(w, "reset skipped ") || !strings.Contains(w, " "+catalog.Redis+", ") {
					t.Errorf("run warnings %q: want the skipped redis reset", r.Warnings)
				}
				if !strings.Contains(progress.String(), "warning:") {
					t.Errorf("progress output lacks the warning:\n%s", progress.String())
				}
				return
			}
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			o.CalibrateRequests, o.Requests, o.Stock = -1, 10, 5
			_, err := bench.Run(ctx, o)
			if !errors.Is(err, tc.wantErr) || !strings.Contains(err.Error(), "redis") {
				t.Fatalf("bench %s: %v, want %v naming redis", tc.strategy, err, tc.wantErr)
			}
			t.Log(err)
		})
	}
}
