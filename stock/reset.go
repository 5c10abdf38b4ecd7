package stock

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/seckill-lab/seckill/stock/catalog"
)

// SkippedBackend is a lock backend Reset could not clear: it did not
// answer (or failed) within resetClearTimeout.
type SkippedBackend struct {
	// Strategy is the strategy whose lock state (or, for redis-atomic,
	// stock mirror) was not cleared.
	Strategy string `json:"strategy"`
	// Server is the server it lives on.
	Server string `json:"server"`
	// Reason says what happened in words a client may see; Detail is the
	// backend's own error, for the instance's log only (it carries
	// addresses).
	Reason string `json:"reason"`
	Detail string `json:"-"`
}

// ResetReport says what Reset could not clear.
type ResetReport struct {
	// Skipped are the strategies whose lock state or mirror was left as
	// it was, sorted by strategy name: they must not run on this goods
	// until a reset clears them.
	Skipped []SkippedBackend `json:"skipped,omitempty"`
}

// resetClearTimeout bounds the clearing at one backend: a server that is
// down (or hangs) is skipped after it, not waited for.
const resetClearTimeout = 3 * time.Second

// Reset sets goods id's stock and deletes its orders (MySQL: an error
// when that fails), then clears its lock state at every lock backend (lock
// keys, fencing counters, lock rows) and re-seeds the Redis mirror,
// concurrently, each within resetClearTimeout. A backend that is down does
// not fail the reset: it is skipped and listed in the report with the
// reason, so a dead server blocks only the strategies that use it.
func (s *Service) Reset(ctx context.Context, goodsID, stock int64) (ResetReport, error) {
	if goodsID <= 0 || stock < 0 {
		return ResetReport{}, fmt.Errorf("%w: goods_id must be positive and stock not negative", ErrInvalid)
	}
	st, err := s.store(goodsID)
	if err == nil {
		err = st.Reset(ctx, goodsID, stock)
	}
	if err != nil {
		return ResetReport{}, fmt.Errorf("%w: %w", ErrBackendUnavailable, err)
	}
	key := LockKey(goodsID)
	type clear struct {
		strategy string
		run      func(ctx context.Context) error
	}
	var clears []clear
	for _, name := range slices.Sorted(maps.Keys(s.opts.Backends)) {
		b := s.opts.Backends[name]
		clears = append(clears, clear{name, func(ctx context.Context) error { return b.Clear(ctx, key) }})
	}
	if m := s.opts.Mirror; m != nil {
		clears = append(clears, clear{catalog.RedisAtomic, func(ctx context.Context) error { return m.Set(ctx, goodsID, stock) }})
	}
	if q := s.opts.Stream; q != nil {
		clears = append(clears, clear{catalog.RedisStream, func(ctx context.Context) error { return q.Reset(ctx, goodsID) }})
	}
	errs := make([]error, len(clears))
	var wg sync.WaitGroup
	for i, c := range clears {
		wg.Go(func() {
			cctx, cancel := context.WithTimeout(ctx, resetClearTimeout)
			defer cancel()
			errs[i] = c.run(cctx)
		})
	}
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return ResetReport{}, fmt.Errorf("reset goods %d: %w", goodsID, err)
	}
	var rep ResetReport
	for i, c := range clears {
		if errs[i] == nil {
			continue
		}
		info, _ := catalog.Lookup(c.strategy)
		reason := "the server refused or failed (the instance log has the error)"
		if errors.Is(errs[i], context.DeadlineExceeded) {
			reason = fmt.Sprintf("the server did not answer within %s", resetClearTimeout)
		}
		rep.Skipped = append(rep.Skipped, SkippedBackend{Strategy: c.strategy, Server: string(info.Server), Reason: reason, Detail: errs[i].Error()})
	}
	slices.SortFunc(rep.Skipped, func(a, b SkippedBackend) int { return strings.Compare(a.Strategy, b.Strategy) })
	return rep, nil
}

// Audit returns goods id's safety summary.
func (s *Service) Audit(ctx context.Context, goodsID int64) (Audit, error) {
	st, err := s.store(goodsID)
	if err != nil {
		return Audit{}, s.classify(ctx, err)
	}
	a, err := st.Audit(ctx, goodsID)
	return a, s.classify(ctx, err)
}

// RequestIDs returns the request ids of goods id's persisted orders.
func (s *Service) RequestIDs(ctx context.Context, goodsID int64) ([]string, error) {
	st, err := s.store(goodsID)
	if err == nil {
		_, err = st.Goods(ctx, goodsID)
	}
	if err != nil {
		return nil, s.classify(ctx, err)
	}
	ids, err := st.RequestIDs(ctx, goodsID)
	return ids, s.classify(ctx, err)
}
