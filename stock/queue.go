package stock

import (
	"context"
	"fmt"
	"sync"
)

// keyQueue is the instance's local queue (unless Config.NoLocalQueue): one turn per
// key at a time, waited for in arrival order. The zero value is ready.
type keyQueue struct {
	mu    sync.Mutex
	turns map[string]*turn
}

// turn is one key's turn: holding it is holding ch's single place; users
// counts the holder and the waiters, so an idle key is dropped.
type turn struct {
	ch    chan struct{}
	users int
}

// wait takes key's turn, or returns ctx's error (wrapped); done gives the
// turn back.
func (q *keyQueue) wait(ctx context.Context, key string) (done func(), err error) {
	q.mu.Lock()
	if q.turns == nil {
		q.turns = map[string]*turn{}
	}
	t := q.turns[key]
	if t == nil {
		t = &turn{ch: make(chan struct{}, 1)}
		q.turns[key] = t
	}
	t.users++
	q.mu.Unlock()
	leave := func() {
		q.mu.Lock()
		defer q.mu.Unlock()
		if t.users--; t.users == 0 {
			delete(q.turns, key)
		}
	}
	select {
	case t.ch <- struct{}{}:
		return func() { <-t.ch; leave() }, nil
	case <-ctx.Done():
		leave()
		return nil, fmt.Errorf("the turn for %q: %w", key, ctx.Err())
	}
}
