package stock

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/seckill-lab/seckill/lockimpl"
)

// Batching (Config.Batch): the purchases of one goods queue up in the
// instance, per setting. The first one that finds no leader leads: it takes
// the lock (the purchases that arrive meanwhile queue behind it), drains up
// to Batch queued purchases in arrival order, sells
// them in one transaction, releases the lock, answers each of them and
// hands the lead to the first purchase still queued, which takes the lock
// again (so other instances get their turns between batches). A purchase
// whose context ends while it is still queued leaves the queue with its
// context's error and is never sold; once drained into a batch it gets
// the batch's answer. The batch runs while at least one of its purchases
// still waits for it.

// batchKey identifies one queue: a setting and a goods' lock key.
type batchKey struct {
	a   *active
	key string
}

// batchQueue is one key's queue. leader is the purchase that runs (or was
// handed) the next batch; nil when none runs.
type batchQueue struct {
	pending []*batchItem
	leader  *batchItem
}

// batchItem is one queued purchase.
type batchItem struct {
	ctx context.Context
	d   Deduction
	tr  trace
	// queued is when it joined the queue (its lock wait starts there).
	queued time.Time
	// msg receives the purchase's answer, or the lead (lead true). It is
	// sent to at most once while queued and once when answered.
	msg chan batchMsg
}

type batchMsg struct {
	lead bool
	res  Result
	err  error
}

// batcher holds the queues of a Service.
type batcher struct {
	mu     sync.Mutex
	queues map[batchKey]*batchQueue
}

// batching reports whether a's purchases are sold in batches.
func (a *active) batching() bool {
	return a.cfg.Batch > 1 && a.locker != nil && a.info.Batches()
}

// enqueue queues it under k; lead is true when no batch runs for k, so it
// leads the next one.
func (b *batcher) enqueue(k batchKey, it *batchItem) (lead bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.queues == nil {
		b.queues = map[batchKey]*batchQueue{}
	}
	q := b.queues[k]
	if q == nil {
		q = &batchQueue{}
		b.queues[k] = q
	}
	q.pending = append(q.pending, it)
	if q.leader == nil {
		q.leader = it
		return true
	}
	return false
}

// withdraw takes it out of k's queue if it is still there (removed); leads
// says it was handed the lead, which it must then run or pass on.
func (b *batcher) withdraw(k batchKey, it *batchItem) (removed, leads bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	q := b.queues[k]
	if q == nil {
		return false, false
	}
	i := slices.Index(q.pending, it)
	if i < 0 {
		return false, false
	}
	q.pending = slices.Delete(q.pending, i, i+1)
	return true, q.leader == it
}

// drain takes up to n queued purchases of k, oldest first. Those whose
// context already ended are answered with its error and not taken.
func (b *batcher) drain(k batchKey, n int) []*batchItem {
	b.mu.Lock()
	defer b.mu.Unlock()
	q := b.queues[k]
	var out []*batchItem
	for len(q.pending) > 0 && len(out) < n {
		it := q.pending[0]
		q.pending = q.pending[1:]
		if err := it.ctx.Err(); err != nil {
			it.msg <- batchMsg{err: err}
			continue
		}
		out = append(out, it)
	}
	return out
}

// passOn hands k's lead to the first queued purchase, or drops the queue
// when none is left.
func (b *batcher) passOn(k batchKey) {
	b.mu.Lock()
	defer b.mu.Unlock()
	q := b.queues[k]
	if len(q.pending) == 0 {
		delete(b.queues, k)
		return
	}
	q.leader = q.pending[0]
	q.leader.msg <- batchMsg{lead: true}
}

// head returns the first queued purchase of k, nil when none is queued.
func (b *batcher) head(k batchKey) *batchItem {
	b.mu.Lock()
	defer b.mu.Unlock()
	if q := b.queues[k]; q != nil && len(q.pending) > 0 {
		return q.pending[0]
	}
	return nil
}

// batched sells d in a batch of a's queue for tr.key and returns its own
// answer.
func (s *Service) batched(ctx context.Context, a *active, d Deduction, tr trace) (Result, error) {
	k := batchKey{a, tr.key}
	it := &batchItem{ctx: ctx, d: d, tr: tr, queued: time.Now(), msg: make(chan batchMsg, 1)}
	tr.emit(EventRequested, nil)
	lead := s.batches.enqueue(k, it)
	done := ctx.Done()
	for {
		if lead {
			s.leadBatch(a, k)
			lead = false
		}
		select {
		case m := <-it.msg:
			if m.lead {
				lead = true
				continue
			}
			return m.res, m.err
		case <-done:
			removed, leads := s.batches.withdraw(k, it)
			if !removed {
				// Drained into a batch (or answered): its answer comes.
				done = nil
				continue
			}
			if leads {
				s.leadBatch(a, k)
			}
			return Result{}, ctx.Err()
		}
	}
}

// leadBatch takes the lock for k, drains up to Batch queued purchases,
// sells them in one transaction, answers each and passes the lead on. The
// lock wait is the first queued purchase's (bounded by LockWait); the
// purchases queued behind it join when the lock is taken. A lock that
// cannot be taken fails every drained purchase.
func (s *Service) leadBatch(a *active, k batchKey) {
	defer s.batches.passOn(k)
	head := s.batches.head(k)
	if head == nil {
		return
	}
	cfg := a.cfg
	leader := head.d.Order.RequestID
	group := &traceGroup{}
	gtr := trace{events: s.opts.Events, instance: s.opts.Instance, strategy: cfg.Name, purchase: leader, key: k.key, batch: leader, group: group}
	head.tr.batch = leader
	group.add(head.tr)
	lease, err := s.acquire(context.WithoutCancel(head.ctx), a, k.key, gtr)
	items := s.batches.drain(k, cfg.Batch)
	if err != nil {
		for _, it := range items {
			it.msg <- batchMsg{res: Result{Order: it.d.Order}, err: err}
		}
		return
	}
	held := time.Now()
	for _, it := range items {
		if it == head {
			continue
		}
		it.tr.batch = leader
		group.add(it.tr)
		it.tr.emit(EventAcquired, func(ev *Event) { ev.Token, ev.WaitedNS = lease.Token, time.Since(it.queued).Nanoseconds() })
	}
	// The release does not hold up the answers (as in runTraced); it
	// follows the commit.
	defer s.bg.Go(func() { s.release(context.Background(), cfg, lease, held, gtr) })
	if len(items) == 0 {
		return
	}
	// The batch runs while any of its purchases still waits for it.
	ctx, cancel := context.WithCancel(context.WithoutCancel(items[0].ctx)) // held: from deduct
	defer cancel()
	var waiting atomic.Int64
	waiting.Store(int64(len(items)))
	for _, it := range items {
		stop := context.AfterFunc(it.ctx, func() {
			if waiting.Add(-1) == 0 {
				cancel()
			}
		})
		defer stop()
	}
	results, errs := s.sellBatch(ctx, cfg, lease, items)
	for i, it := range items {
		it.tr.outcome(errs[i])
		it.msg <- batchMsg{res: results[i], err: errs[i]}
	}
}

// sellBatch sells items in one transaction under lease.
func (s *Service) sellBatch(ctx context.Context, cfg Config, lease *lockimpl.Lease, items []*batchItem) ([]Result, []error) {
	ds := make([]Deduction, len(items))
	for i, it := range items {
		ds[i] = it.d
		ds[i].Trace = it.tr.value
	}
	var fence uint64
	if cfg.Fencing {
		fence = lease.Token
		for i := range ds {
			ds[i].Order.FenceToken = lease.Token
		}
	}
	var beforeCommit func() error
	if !cfg.NoLeaseCheck {
		beforeCommit = func() error {
			if err := lease.Err(); err != nil {
				return fmt.Errorf("%w: %w", ErrLeaseLost, err)
			}
			return nil
		}
	}
	db, err := s.database(ds[0].Order.GoodsID)
	if err != nil {
		return eachFails(ds, err)
	}
	results, errs, _ := db.ReadModifyWriteBatch(ctx, ds, fence, beforeCommit)
	return results, errs
}
