package exercises_test

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/seckill-lab/seckill/lockimpl"
)

// pauser is a go-redis hook that, while paused, holds every command of its
// client until the pause ends or the command's context is done (then the
// command fails and never reaches the server): what a SIGSTOPped process's
// commands do, its watchdog's included.
type pauser struct {
	mu      sync.Mutex
	resumed chan struct{} // nil: not paused; closed at resume
}

func (p *pauser) DialHook(next redis.DialHook) redis.DialHook { return next }

func (p *pauser) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if err := p.wait(ctx); err != nil {
			cmd.SetErr(err)
			return err
		}
		return next(ctx, cmd)
	}
}

func (p *pauser) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		if err := p.wait(ctx); err != nil {
			for _, cmd := range cmds {
				cmd.SetErr(err)
			}
			return err
		}
		return next(ctx, cmds)
	}
}

// wait returns at once when not paused, else when the pause ends (nil) or
// ctx is done (an error wrapping ctx's).
func (p *pauser) wait(ctx context.Context) error {
	p.mu.Lock()
	ch := p.resumed
	p.mu.Unlock()
	if ch == nil {
		return nil
	}
	select {
	case <-ch:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("injected: the holder is paused: %w", ctx.Err())
	}
}

// pause holds the client's commands until the returned resume is called
// (idempotent).
func (p *pauser) pause() (resume func()) {
	ch := make(chan struct{})
	p.mu.Lock()
	p.resumed = ch
	p.mu.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			p.mu.Lock()
			p.resumed = nil
			p.mu.Unlock()
			close(ch)
		})
	}
}

// pausers finds the pauser of each Locker built on a pausable client.
type pausers struct {
	mu sync.Mutex
	by map[lockimpl.Locker]*pauser
}

// add records l's pauser.
func (ps *pausers) add(l lockimpl.Locker, p *pauser) {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	if ps.by == nil {
		ps.by = map[lockimpl.Locker]*pauser{}
	}
	ps.by[l] = p
}

// Pause is locktest.Factory.Pause: it pauses l's client.
func (ps *pausers) Pause(t testing.TB, l lockimpl.Locker) (resume func()) {
	ps.mu.Lock()
	p := ps.by[l]
	ps.mu.Unlock()
	if p == nil {
		t.Fatalf("the lock %T was not built on a pausable client", l)
	}
	return p.pause()
}
