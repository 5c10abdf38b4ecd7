package orderstream

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// pipeliner sends the script calls of concurrent purchases to Redis
// together (auto-pipelining, as Lettuce and rueidis do): a call that finds
// a sender free goes at once, alone; calls that arrive while every sender
// waits for Redis queue and leave together in the next pipeline, one
// write and one read here and at Redis for all of them. Redis runs each
// script whole, one after the other, as it does calls sent one by one: a
// purchase's outcome does not depend on its neighbours in a pipeline.
//
// With replicas > 0 every pipeline ends with WAIT replicas, on the
// connection that sent its scripts, and a call whose pipeline fewer
// replicas acknowledged within ReplicaWait gets errUnreplicated instead
// of its answer.
//
// The zero value is not usable: build it with newPipeliner.
type pipeliner struct {
	rdb      redis.UniversalClient
	replicas int

	mu      sync.Mutex
	queue   []*scriptCall
	senders int // goroutines sending, at most maxSenders
}

// maxSenders bounds the pipelines in flight at once; maxPipeline the calls
// in one.
const (
	maxSenders  = 4
	maxPipeline = 64
)

// scriptCall is one caller's script, its answer once done is closed.
type scriptCall struct {
	ctx    context.Context
	script *redis.Script
	keys   []string
	args   []any
	cmd    *redis.Cmd
	done   chan struct{}
}

func newPipeliner(rdb redis.UniversalClient, replicas int) *pipeliner {
	return &pipeliner{rdb: rdb, replicas: replicas}
}

// ReplicaWait bounds the WAIT of a pipeline for its replicas.
const ReplicaWait = time.Second

// errUnreplicated is a call whose writes fewer replicas than asked for
// acknowledged: the primary may have them, a failover may lose them.
var errUnreplicated = errors.New("not acknowledged by the replicas in time")

// run runs script with keys and args, as script.Run does, in the next
// pipeline; it returns when Redis answered or ctx is done (the script may
// still run then, as a call cut off on the wire may).
func (p *pipeliner) run(ctx context.Context, script *redis.Script, keys []string, args ...any) *redis.Cmd {
	c := &scriptCall{ctx: ctx, script: script, keys: keys, args: args, done: make(chan struct{})}
	p.mu.Lock()
	p.queue = append(p.queue, c)
	start := p.senders < maxSenders
	if start {
		p.senders++
	}
	p.mu.Unlock()
	if start {
		go p.send()
	}
	select {
	case <-c.done:
		return c.cmd
	case <-ctx.Done():
		cmd := redis.NewCmd(ctx)
		cmd.SetErr(ctx.Err())
		return cmd
	}
}

// send sends the queue, maxPipeline calls at a time, until it is empty.
func (p *pipeliner) send() {
	for {
		p.mu.Lock()
		n := min(len(p.queue), maxPipeline)
		if n == 0 {
			p.senders--
			p.mu.Unlock()
			return
		}
		batch := p.queue[:n:n]
		p.queue = p.queue[n:]
		p.mu.Unlock()
		p.exec(batch)
	}
}

// exec sends batch's calls whose callers still wait in one pipeline, and
// again with EVAL in a second one those Redis did not know the script of
// (NOSCRIPT: EVALSHA first, EVAL when Redis lost it). A lone call without
// replicas to wait for goes with script.Run.
func (p *pipeliner) exec(batch []*scriptCall) {
	live := batch[:0:0]
	for _, c := range batch {
		if err := c.ctx.Err(); err != nil {
			c.cmd = redis.NewCmd(c.ctx)
			c.cmd.SetErr(err)
			close(c.done)
			continue
		}
		live = append(live, c)
	}
	if len(live) == 0 {
		return
	}
	// The round trip is the first caller's (the cost meter counts it in
	// its purchase), without its cancellation: the others wait on it too.
	ctx := context.WithoutCancel(live[0].ctx)
	if len(live) == 1 && p.replicas == 0 {
		c := live[0]
		c.cmd = c.script.Run(ctx, p.rdb, c.keys, c.args...)
		close(c.done)
		return
	}
	p.pipeline(ctx, live, false)
	var again []*scriptCall
	for _, c := range live {
		if err := c.cmd.Err(); err != nil && strings.HasPrefix(err.Error(), "NOSCRIPT") {
			again = append(again, c)
		}
	}
	if len(again) > 0 {
		p.pipeline(ctx, again, true)
	}
	for _, c := range live {
		close(c.done)
	}
}

// pipeline sends calls in one pipeline (EVALSHA, or EVAL when eval), with
// WAIT after them when the pipeliner asks for replicas.
func (p *pipeliner) pipeline(ctx context.Context, calls []*scriptCall, eval bool) {
	pipe := p.rdb.Pipeline()
	for _, c := range calls {
		if eval {
			c.cmd = c.script.Eval(ctx, pipe, c.keys, c.args...)
		} else {
			c.cmd = c.script.EvalSha(ctx, pipe, c.keys, c.args...)
		}
	}
	var wait *redis.Cmd
	if p.replicas > 0 {
		wait = pipe.Do(ctx, "WAIT", p.replicas, ReplicaWait.Milliseconds())
	}
	_, _ = pipe.Exec(ctx) // each call's own error is in its cmd
	if wait == nil {
		return
	}
	acked, err := wait.Int64()
	if err == nil && acked >= int64(p.replicas) {
		return
	}
	if err == nil {
		err = fmt.Errorf("%w: %d of %d within %s", errUnreplicated, acked, p.replicas, ReplicaWait)
	}
	for _, c := range calls {
		if c.cmd.Err() == nil {
			c.cmd = redis.NewCmd(ctx)
			c.cmd.SetErr(err)
		}
	}
}
