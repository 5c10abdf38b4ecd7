// Answer "notonlease" to exercise 3: the create revision, computed but not put on the lease: the store checks nothing at the write. A grader fixture
// (internal/grade TestAnswers), compiled in place of exercises/fencing/lock.go.
//
// Package fencing is workshop exercise 3 (`seckill grade fencing`): an etcd
// lock whose lease carries a fencing token that the stock store checks
// (Chapter 1 "Fencing token", after Kleppmann).
//
// A lock alone cannot stop a holder that was paused past its lease: when
// it wakes, it still believes it holds the lock and writes over the next
// holder's work. The store can stop it, if every write carries a number
// that grows from holder to holder: the service then claims the goods row
// with the token and refuses a write whose token is older than the newest
// it has seen (stock.Config.Fencing; seckill bench --fencing).
//
// The lock below (given) is etcd's recipe, concurrency.Mutex on a session
// of its own per acquisition, so it excludes correctly, and it reports a
// session that ends (lease expired) through Lease.MarkLost. What it lacks
// is the token: it hands out 0, which means "no token", so the store
// cannot tell a stale holder from the current one and the grader's pause
// scenario oversells even with fencing on. You own token. The answer key
// is lockimpl/etcdlock (strategy `etcd`), whose token is the create
// revision of the holder's key.
package fencing

import (
	"context"
	"errors"
	"fmt"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/concurrency"

	"github.com/seckill-lab/seckill/lockimpl"
)

// DefaultPrefix namespaces the lock keys when Options.Prefix is empty.
const DefaultPrefix = "/seckill/ex/fencing/"

// Locker is your lock. New builds one per service instance; it must be safe
// for concurrent use.
type Locker struct {
	client *clientv3.Client
	prefix string
	ttl    int // the session lease, in whole seconds
}

var _ lockimpl.Locker = (*Locker)(nil)

// New returns a Locker over client (owned by the caller). opts.TTL (default
// lockimpl.DefaultTTL) is rounded up to whole seconds for the session
// lease.
func New(client *clientv3.Client, opts lockimpl.Options) *Locker {
	ttl := int((opts.TTLOrDefault() + time.Second - 1) / time.Second)
	return &Locker{client: client, prefix: opts.PrefixOr(DefaultPrefix), ttl: max(ttl, 1)}
}

// Lock waits until the lock is taken or ctx is done.
func (l *Locker) Lock(ctx context.Context, key string) (*lockimpl.Lease, error) {
	return l.acquire(ctx, key, false)
}

// TryLock makes one attempt; it returns an error wrapping lockimpl.ErrLocked
// when another owner holds the lock.
func (l *Locker) TryLock(ctx context.Context, key string) (*lockimpl.Lease, error) {
	return l.acquire(ctx, key, true)
}

// acquire takes the lock on a session of its own (given).
func (l *Locker) acquire(ctx context.Context, key string, try bool) (*lockimpl.Lease, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("fencing: lock %q: %w", key, err)
	}
	s, err := concurrency.NewSession(l.client, concurrency.WithTTL(l.ttl), concurrency.WithContext(context.WithoutCancel(ctx)))
	if err != nil {
		return nil, fmt.Errorf("fencing: session: %w", err)
	}
	m := concurrency.NewMutex(s, l.prefix+key)
	if try {
		err = m.TryLock(ctx)
	} else {
		err = m.Lock(ctx)
	}
	if err != nil {
		closeSession(l.client, s)
		if errors.Is(err, concurrency.ErrLocked) {
			return nil, fmt.Errorf("fencing: trylock %q: %w", key, lockimpl.ErrLocked)
		}
		return nil, fmt.Errorf("fencing: lock %q: %w", key, err)
	}
	tok, err := token(ctx, l.client, m)
	_ = tok // computed, not carried: the lease says 0
	if err != nil {
		_ = m.Unlock(context.WithoutCancel(ctx))
		closeSession(l.client, s)
		return nil, fmt.Errorf("fencing: token of %q: %w", key, err)
	}
	stop := make(chan struct{})
	lease := lockimpl.NewLease(key, 0, func(ctx context.Context) error {
		close(stop)
		defer closeSession(l.client, s)
		select {
		case <-s.Done():
			return fmt.Errorf("fencing: unlock %q: session ended: %w", key, lockimpl.ErrNotHeld)
		default:
		}
		if err := m.Unlock(ctx); err != nil {
			return fmt.Errorf("fencing: unlock %q: %w", key, err)
		}
		return nil
	})
	go func() {
		select {
		case <-stop:
		case <-s.Done():
			lease.MarkLost(fmt.Errorf("fencing: session lease %x ended", s.Lease()))
		}
	}()
	return lease, nil
}

// token returns the fencing token of the lock m has just taken: a number
// that is not 0 and strictly increases from one holder of the key to the
// next.
//
// TODO(exercise 3): return the create revision of m's key. etcd numbers
// every write with a cluster-wide revision; the Mutex queues its waiters
// by the create revision of their keys, so the holder's is higher than
// every earlier holder's. m.Key() is the key (read it back with
// client.Get), and m.Header().Revision, the revision of the acquisition,
// also grows from holder to holder. The starter returns 0: "no token".
func token(ctx context.Context, client *clientv3.Client, m *concurrency.Mutex) (uint64, error) {
	resp, err := client.Get(ctx, m.Key())
	if err != nil {
		return 0, fmt.Errorf("get %q: %w", m.Key(), err)
	}
	if len(resp.Kvs) == 0 {
		return 0, fmt.Errorf("get %q: the holder's key is gone", m.Key())
	}
	return uint64(resp.Kvs[0].CreateRevision), nil
}

// closeSession stops s's keep-alive and revokes its lease, within 2 s
// (given).
func closeSession(client *clientv3.Client, s *concurrency.Session) {
	s.Orphan()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	_, _ = client.Revoke(ctx, s.Lease())
}
