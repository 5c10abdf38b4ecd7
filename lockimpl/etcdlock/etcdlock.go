// Package etcdlock is the `etcd` strategy: the algorithm of etcd's
// client/v3/concurrency Mutex (a key "<prefix><key>/<lease id>" attached to
// a concurrency.Session lease; the oldest create revision under the prefix
// holds the lock; each waiter watches the deletion of the newest key created
// before its own, so the lock is FIFO by revision without a herd). The
// acquisition is a local copy of concurrency.Mutex.Lock with the same keys
// and transaction, differing only in how the predecessor watch starts:
// concurrency.Mutex watches from an already-seen revision, which etcd serves
// from its 100ms "unsynced watchers" loop, and measured ~100ms per handoff;
// watching from where etcd is, and checking once for a deletion in between,
// hands off in about a millisecond (see waitDelete).
//
// A Mutex key derives from its session's lease, so two holders that shared a
// session would share one key and both "hold" the lock. This package
// therefore never lets a session serve more than one acquisition at a time:
// each Lock/TryLock takes a session from the Locker's idle pool (or grants a
// new lease), and Unlock puts it back. Options.TTL becomes the session lease
// TTL in whole seconds (at least 1); the session keeps the lease alive at
// TTL/3 while the process lives, and a held lease is marked lost when its
// session ends (lease expired or revoked, keep-alive failed).
//
// A key left behind by a failed unlock or a timed-out wait (the cluster had
// no quorum) would stay first in the lock's queue for a whole TTL after the
// quorum's return; its session is discarded instead and its lease revoked,
// retried in the background until the cluster answers. See ServerFlags for
// what the etcd members need for a quick return.
//
// The fencing token is the lock key's create revision, which strictly
// increases per key (indeed across the whole etcd store).
package etcdlock

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/concurrency"

	"github.com/seckill-lab/seckill/lockimpl"
)

// DefaultPrefix namespaces the etcd keys when Options.Prefix is empty.
const DefaultPrefix = "/seckill/locks/"

// maxIdle bounds the idle sessions kept for reuse; extra ones are closed.
const maxIdle = 64

// cleanupTimeout bounds one attempt at cleaning up (a delete, a revoke).
const cleanupTimeout = 2 * time.Second

// A clean-up that failed (the cluster had no quorum) is retried every
// cleanupBackoff (default 100 ms), doubling up to cleanupMaxBackoff (1 s),
// for cleanupBudget (1 min), so that the key leaves the lock's queue as
// soon as the quorum answers again. A key whose clean-up is given up stays
// in the queue until its lease expires: a whole TTL after the quorum's
// return, since the new leader restarts every lease's clock.
const (
	cleanupBackoff    = 100 * time.Millisecond
	cleanupMaxBackoff = time.Second
	cleanupBudget     = time.Minute
)

// Locker is the etcd lock. Build it with New; it is safe for concurrent
// use. Close revokes its idle sessions.
type Locker struct {
	client *clientv3.Client
	ttl    int
	prefix string
	onErr  func(op string, err error)

	mu     sync.Mutex
	idle   []*concurrency.Session
	closed bool
	held   map[*lockimpl.Lease]*concurrency.Session
}

var _ lockimpl.Locker = (*Locker)(nil)

// New returns a Locker over client (owned by the caller). Options: TTL
// (default lockimpl.DefaultTTL) is rounded up to whole seconds, minimum 1,
// for the session leases; Prefix defaults to DefaultPrefix.
func New(client *clientv3.Client, opts lockimpl.Options) *Locker {
	ttl := int((opts.TTLOrDefault() + time.Second - 1) / time.Second)
	if ttl < 1 {
		ttl = 1
	}
	return &Locker{
		client: client,
		ttl:    ttl,
		prefix: opts.PrefixOr(DefaultPrefix),
		onErr:  opts.CleanupErrorOrDrop(),
		held:   make(map[*lockimpl.Lease]*concurrency.Session),
	}
}

// Prefix returns the etcd key prefix under which the lock named key keeps
// its holder's and waiters' keys.
func (l *Locker) Prefix(key string) string { return l.prefix + key + "/" }

// LeaseID returns the etcd lease of the session that holds lease, while it
// is held.
func (l *Locker) LeaseID(lease *lockimpl.Lease) (clientv3.LeaseID, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	s, ok := l.held[lease]
	if !ok {
		return clientv3.NoLease, false
	}
	return s.Lease(), true
}

// Close revokes the idle sessions, each within cleanupTimeout. Leases still
// held keep their sessions until they are unlocked; those sessions are then
// closed.
func (l *Locker) Close() error {
	l.mu.Lock()
	idle := l.idle
	l.idle = nil
	l.closed = true
	l.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), cleanupTimeout)
	defer cancel()
	var errs []error
	for _, s := range idle {
		if err := l.closeSession(ctx, s); err != nil {
			errs = append(errs, err)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("etcdlock: close sessions: %w", err)
	}
	return nil
}

// closeSession stops s's keep-alive and revokes its lease within ctx
// (concurrency.Session.Close would wait up to the lease TTL on its own
// clock). Once the keep-alive stopped, the lease expires within its TTL even
// when the revoke fails.
func (l *Locker) closeSession(ctx context.Context, s *concurrency.Session) error {
	s.Orphan()
	if _, err := l.client.Revoke(ctx, s.Lease()); err != nil {
		err = fmt.Errorf("etcdlock: revoke lease %x: %w", s.Lease(), err)
		l.onErr("etcd_revoke", err)
		return err
	}
	return nil
}

// discard gives s up for good, in the background: it stops s's keep-alive
// at once and revokes s's lease (deleting every key attached to it),
// retrying until the revoke succeeds or finds the lease gone, for
// cleanupBudget at most. The lease expires within its TTL of the quorum's
// return if every attempt fails.
func (l *Locker) discard(s *concurrency.Session) {
	s.Orphan()
	go func() {
		failed := false
		err := retry(l.client.Ctx(), func(ctx context.Context) error {
			_, err := l.client.Revoke(ctx, s.Lease())
			if errors.Is(err, rpctypes.ErrLeaseNotFound) {
				return nil // expired already: its keys are gone
			}
			if err != nil && !failed {
				// Counted once, at the first failure (then retried
				// quietly): the clean-up failed while the cluster did
				// not answer.
				failed = true
				l.onErr("etcd_revoke", fmt.Errorf("etcdlock: revoke lease %x (retried until the cluster answers): %w", s.Lease(), err))
			}
			return err
		})
		if err != nil {
			l.onErr("etcd_revoke", fmt.Errorf("etcdlock: revoke lease %x: gave up: %w", s.Lease(), err))
		}
	}()
}

// retry runs op, each attempt within cleanupTimeout, until it succeeds,
// ctx is done or cleanupBudget ran out; it returns the last error.
func retry(ctx context.Context, op func(context.Context) error) error {
	ctx, cancel := context.WithTimeout(ctx, cleanupBudget)
	defer cancel()
	backoff := cleanupBackoff
	for {
		actx, acancel := context.WithTimeout(ctx, cleanupTimeout)
		err := op(actx)
		acancel()
		if err == nil {
			return nil
		}
		t := time.NewTimer(backoff)
		select {
		case <-ctx.Done():
			t.Stop()
			return err
		case <-t.C:
		}
		backoff = min(2*backoff, cleanupMaxBackoff)
	}
}

// session takes an idle live session or starts a new one. The lease grant
// honours ctx; the session's keep-alive does not depend on it.
func (l *Locker) session(ctx context.Context) (*concurrency.Session, error) {
	l.mu.Lock()
	for len(l.idle) > 0 {
		s := l.idle[len(l.idle)-1]
		l.idle = l.idle[:len(l.idle)-1]
		select {
		case <-s.Done():
			continue
		default:
			l.mu.Unlock()
			return s, nil
		}
	}
	l.mu.Unlock()
	grant, err := l.client.Grant(ctx, int64(l.ttl))
	if err != nil {
		return nil, fmt.Errorf("etcdlock: grant lease: %w", err)
	}
	s, err := concurrency.NewSession(l.client, concurrency.WithLease(grant.ID), concurrency.WithTTL(l.ttl))
	if err != nil {
		go func() { // the lease expires on its own if this fails too
			rctx, cancel := context.WithTimeout(context.Background(), cleanupTimeout)
			defer cancel()
			if _, rerr := l.client.Revoke(rctx, grant.ID); rerr != nil {
				l.onErr("etcd_revoke", fmt.Errorf("etcdlock: revoke lease %x: %w", grant.ID, rerr))
			}
		}()
		return nil, fmt.Errorf("etcdlock: new session: %w", err)
	}
	return s, nil
}

// put returns a session that serves nobody any more to the idle pool.
func (l *Locker) put(s *concurrency.Session) {
	select {
	case <-s.Done():
		return
	default:
	}
	l.mu.Lock()
	if !l.closed && len(l.idle) < maxIdle {
		l.idle = append(l.idle, s)
		l.mu.Unlock()
		return
	}
	l.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), cleanupTimeout)
	defer cancel()
	_ = l.closeSession(ctx, s)
}

// abandon deletes, in the background, whatever key the failed acquisition
// may have left (the Mutex deletes its key on a failed wait, but a request
// cut by ctx may have been applied anyway) and returns the session to the
// pool; the caller, whose ctx may be done, does not wait for it. When the
// delete fails, the session is discarded: its lease's revoke, retried
// until the cluster answers, removes the key.
func (l *Locker) abandon(s *concurrency.Session, key string) {
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), cleanupTimeout)
		defer cancel()
		if _, err := l.client.Delete(ctx, fmt.Sprintf("%s%x", l.Prefix(key), s.Lease())); err != nil {
			l.onErr("etcd_delete", fmt.Errorf("etcdlock: abandon %q: %w", key, err))
			l.discard(s)
			return
		}
		l.put(s)
	}()
}

// TryLock makes one attempt and returns lockimpl.ErrLocked when another
// session holds the lock.
func (l *Locker) TryLock(ctx context.Context, key string) (*lockimpl.Lease, error) {
	return l.acquire(ctx, key, true)
}

// Lock waits in revision order until the lock is held or ctx is done.
func (l *Locker) Lock(ctx context.Context, key string) (*lockimpl.Lease, error) {
	return l.acquire(ctx, key, false)
}

func (l *Locker) acquire(ctx context.Context, key string, try bool) (*lockimpl.Lease, error) {
	op := "lock"
	if try {
		op = "trylock"
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("etcdlock: %s %q: %w", op, key, err)
	}
	s, err := l.session(ctx)
	if err != nil {
		if ctxErr := ctx.Err(); ctxErr != nil {
			return nil, fmt.Errorf("etcdlock: %s %q: %w", op, key, ctxErr)
		}
		return nil, err
	}
	myKey := fmt.Sprintf("%s%x", l.Prefix(key), s.Lease())
	token, err := l.mutex(ctx, s, l.Prefix(key), myKey, try)
	if err != nil {
		if errors.Is(err, errTryRefused) {
			l.put(s) // its key is gone already
		} else {
			l.abandon(s, key)
		}
		switch {
		case errors.Is(err, lockimpl.ErrLocked):
			return nil, fmt.Errorf("etcdlock: %s %q: %w", op, key, lockimpl.ErrLocked)
		case ctx.Err() != nil:
			return nil, fmt.Errorf("etcdlock: %s %q: %w", op, key, ctx.Err())
		}
		return nil, fmt.Errorf("etcdlock: %s %q: %w", op, key, err)
	}

	stop := make(chan struct{})
	done := make(chan struct{})
	lease := lockimpl.NewLease(key, uint64(token), func(ctx context.Context) error {
		close(stop)
		<-done
		resp, err := l.client.Delete(ctx, myKey)
		if err != nil {
			l.discard(s) // the caller's ctx may be done: revoke on our own clock
			return fmt.Errorf("etcdlock: unlock %q: %w", key, err)
		}
		l.put(s)
		if resp.Deleted == 0 {
			return fmt.Errorf("etcdlock: unlock %q: key %s gone: %w", key, myKey, lockimpl.ErrNotHeld)
		}
		return nil
	})
	l.mu.Lock()
	l.held[lease] = s
	l.mu.Unlock()
	go func() {
		defer close(done)
		defer func() {
			l.mu.Lock()
			delete(l.held, lease)
			l.mu.Unlock()
		}()
		select {
		case <-stop:
		case <-s.Done():
			lease.MarkLost(fmt.Errorf("etcdlock: session lease %x ended", s.Lease()))
		}
	}()
	return lease, nil
}

// errSessionGone reports that the waiter's own key vanished while it waited
// (its session lease expired or was revoked).
var errSessionGone = errors.New("etcdlock: own key gone while waiting (session expired)")

// errTryRefused is a TryLock refused by a holder, its key already deleted.
var errTryRefused = fmt.Errorf("etcdlock: %w (the attempt's key deleted)", lockimpl.ErrLocked)

// mutex is concurrency.Mutex's algorithm (same keys, same transaction, so it
// interoperates with concurrency.Mutex users of the same prefix) with one
// change: the watch on the predecessor starts where etcd is when it
// registers it (waitDelete). concurrency.Mutex watches from the Get's own
// revision, which makes the server treat the watcher as "unsynced" and
// deliver the delete only on its 100ms sync loop: a measured ~100ms
// handoff instead of about a millisecond. It returns the create revision of
// myKey.
func (l *Locker) mutex(ctx context.Context, s *concurrency.Session, pfx, myKey string, try bool) (int64, error) {
	cmp := clientv3.Compare(clientv3.CreateRevision(myKey), "=", 0)
	put := clientv3.OpPut(myKey, "", clientv3.WithLease(s.Lease()))
	get := clientv3.OpGet(myKey)
	getOwner := clientv3.OpGet(pfx, clientv3.WithFirstCreate()...)
	resp, err := l.client.Txn(ctx).If(cmp).Then(put, getOwner).Else(get, getOwner).Commit()
	if err != nil {
		return 0, fmt.Errorf("acquire txn: %w", err)
	}
	myRev := resp.Header.Revision
	if !resp.Succeeded {
		myRev = resp.Responses[0].GetResponseRange().Kvs[0].CreateRevision
	}
	owner := resp.Responses[1].GetResponseRange().Kvs
	if len(owner) == 0 || owner[0].CreateRevision == myRev {
		return myRev, nil
	}
	if try {
		// Refused: the key goes before the answer, as in
		// concurrency.Mutex.TryLock. Left to abandon's goroutine, it could
		// still be there when the holder unlocked and another TryLock came,
		// which it then refused too (CI's conformance TryLockWhileHeld).
		if _, err := l.client.Delete(ctx, myKey); err != nil {
			return 0, fmt.Errorf("delete the refused attempt's key: %w", err) // abandon retries it
		}
		return 0, errTryRefused
	}
	// Wait until every key created before ours is gone, watching only the
	// newest of them each time (no herd). concurrency.Mutex reads the
	// predecessor, and once none is left reads its own key (is the session
	// still alive?): two round trips after the last delete. Both reads go
	// in one read-only transaction here, so the handoff costs one.
	getPred := clientv3.OpGet(pfx, append(clientv3.WithLastCreate(), clientv3.WithMaxCreateRev(myRev-1))...)
	for {
		resp, err := l.client.Txn(ctx).Then(getPred, get).Commit()
		if err != nil {
			return 0, fmt.Errorf("get predecessor and own key: %w", err)
		}
		if len(resp.Responses[1].GetResponseRange().Kvs) == 0 {
			return 0, errSessionGone
		}
		pred := resp.Responses[0].GetResponseRange().Kvs
		if len(pred) == 0 {
			return myRev, nil
		}
		if err := waitDelete(ctx, l.client, pred[0], resp.Header.Revision); err != nil {
			return 0, err
		}
	}
}

// waitDelete waits until kv, read at revision read, is deleted.
//
// Its watch starts where etcd is when it registers it, never at a revision
// etcd has passed: such a watch is "unsynced", and etcd delivers its events
// only on its 100ms sync loop. Started at read+1 (as it was, and as
// concurrency.Mutex starts at read), the watch was unsynced whenever any
// other write reached etcd in the half round trip between the read and the
// registration; with 50 clients the handoffs then had a p90 of 68 ms
// against a p50 of 2.8 ms at a 2 ms round trip. When the created
// notification says etcd moved past read meanwhile, one Get tells whether
// kv went in between (gone, or created again with another create
// revision: a session's key is reused once the session is idle).
func waitDelete(ctx context.Context, client *clientv3.Client, kv *mvccpb.KeyValue, read int64) error {
	cctx, cancel := context.WithCancel(ctx)
	defer cancel()
	key := string(kv.Key)
	var wr clientv3.WatchResponse
	for wr = range client.Watch(cctx, key, clientv3.WithCreatedNotify()) {
		if wr.Created {
			if wr.Header.Revision > read {
				resp, err := client.Get(ctx, key)
				if err != nil {
					return fmt.Errorf("get %s: %w", key, err)
				}
				if len(resp.Kvs) == 0 || resp.Kvs[0].CreateRevision != kv.CreateRevision {
					return nil
				}
			}
			continue
		}
		for _, ev := range wr.Events {
			if ev.Type == mvccpb.DELETE {
				return nil
			}
		}
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := wr.Err(); err != nil {
		return fmt.Errorf("watch %s: %w", key, err)
	}
	return errors.New("watch closed while waiting for delete")
}

// Backend is what the service needs of the etcd lock: a Locker per setting,
// Ping and Clear.
type Backend struct {
	client *clientv3.Client
}

// NewBackend returns the backend over client (owned by the caller).
func NewBackend(client *clientv3.Client) *Backend { return &Backend{client: client} }

// NewLocker returns a Locker for opts. Close it when the setting it serves
// is replaced: it keeps idle sessions alive.
func (b *Backend) NewLocker(_ context.Context, opts lockimpl.Options) (lockimpl.Locker, error) {
	return New(b.client, opts), nil
}

// Ping reads a key: it succeeds only when a quorum of the cluster answers.
func (b *Backend) Ping(ctx context.Context) error {
	if _, err := b.client.Get(ctx, DefaultPrefix+"health"); err != nil {
		return fmt.Errorf("etcdlock: ping: %w", err)
	}
	return nil
}

// Clear does nothing: lock keys belong to session leases and go with them.
func (b *Backend) Clear(context.Context, string) error { return nil }

// Close does nothing: the client belongs to the caller.
func (b *Backend) Close() error { return nil }
