package orderstream

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/seckill-lab/seckill/internal/testenv"
)

// gate is a go-redis hook that holds every command and pipeline until
// open is closed, and records the size of each pipeline sent.
type gate struct {
	open    chan struct{}
	held    atomic.Int64 // commands or pipelines waiting at the gate
	mu      sync.Mutex
	batches []int // calls per round trip, in order
}

func (g *gate) DialHook(next redis.DialHook) redis.DialHook { return next }

func (g *gate) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		g.wait()
		g.record(1)
		return next(ctx, cmd)
	}
}

func (g *gate) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		g.wait()
		g.record(len(cmds))
		return next(ctx, cmds)
	}
}

func (g *gate) wait() {
	g.held.Add(1)
	<-g.open
}

func (g *gate) record(n int) {
	g.mu.Lock()
	g.batches = append(g.batches, n)
	g.mu.Unlock()
}

// TestPipeliner: calls that arrive while every sender waits for Redis
// leave together in one pipeline, each gets its own script's answer, a
// script Redis lost (SCRIPT FLUSH) is sent again with EVAL, and a caller
// whose context ends stops waiting.
func TestPipeliner(t *testing.T) {
	rdb := testenv.RedisClient(t)
	g := &gate{open: make(chan struct{})}
	rdb.AddHook(g)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	key := fmt.Sprintf("test:pipeliner:%d", rand.Int64())
	t.Cleanup(func() { testenv.RedisClient(t).Del(context.Background(), key) })
	if err := testenv.RedisClient(t).ScriptFlush(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	incr := redis.NewScript(`return redis.call('INCRBY', KEYS[1], ARGV[1])`)
	p := newPipeliner(rdb, 0)

	// maxSenders calls take the senders, one at a time, and wait at the
	// gate; the rest queue behind them.
	const calls = maxSenders + 20
	var wg sync.WaitGroup
	got := make([]int64, calls)
	errs := make([]error, calls)
	until := func(what string, cond func() bool) {
		t.Helper()
		for !cond() {
			select {
			case <-ctx.Done():
				t.Fatalf("never %s", what)
			case <-time.After(time.Millisecond):
			}
		}
	}
	for i := range calls {
		wg.Add(1)
		go func() {
			defer wg.Done()
			got[i], errs[i] = p.run(ctx, incr, []string{key}, 1).Int64()
		}()
		if i < maxSenders {
			until(fmt.Sprintf("%d senders at the gate", i+1), func() bool { return g.held.Load() == int64(i+1) })
		}
	}
	until("queued the calls behind the senders", func() bool {
		p.mu.Lock()
		defer p.mu.Unlock()
		return len(p.queue) == calls-maxSenders
	})
	// A caller that gives up while queued gets its context's error.
	gone, stop := context.WithCancel(ctx)
	stop()
	if err := p.run(gone, incr, []string{key}, 1000).Err(); err != context.Canceled {
		t.Errorf("a cancelled caller: %v, want context.Canceled", err)
	}
	close(g.open)
	wg.Wait()

	seen := map[int64]bool{}
	for i := range calls {
		if errs[i] != nil {
			t.Fatalf("call %d: %v", i, errs[i])
		}
		seen[got[i]] = true
	}
	if len(seen) != calls {
		t.Errorf("%d distinct answers from %d INCRBY 1 calls, want one each (1..%d)", len(seen), calls, calls)
	}
	total, err := testenv.RedisClient(t).Get(ctx, key).Int64()
	if err != nil || total != calls {
		t.Errorf("counter %d (%v), want %d: the cancelled call ran, or a call ran twice", total, err, calls)
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	biggest := 0
	for _, n := range g.batches {
		biggest = max(biggest, n)
	}
	if biggest < 2 {
		t.Errorf("round trips of %v calls each: the queued calls never shared a pipeline", g.batches)
	}
}

// TestPipelinerNoScript: a pipeline of a script Redis does not have (a
// restarted Redis) answers each call all the same, through EVAL.
func TestPipelinerNoScript(t *testing.T) {
	rdb := testenv.RedisClient(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := rdb.ScriptFlush(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	echo := redis.NewScript(`return ARGV[1] .. '!'`)
	batch := []*scriptCall{
		{ctx: ctx, script: echo, args: []any{"a"}, done: make(chan struct{})},
		{ctx: ctx, script: echo, args: []any{"b"}, done: make(chan struct{})},
	}
	newPipeliner(rdb, 0).exec(batch)
	for i, want := range []string{"a!", "b!"} {
		<-batch[i].done
		if got, err := batch[i].cmd.Text(); err != nil || got != want {
			t.Errorf("call %d: %q, %v; want %q", i, got, err, want)
		}
	}
}
