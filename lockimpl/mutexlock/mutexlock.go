// Package mutexlock is the in-process lock backend: one channel-based mutex
// per key, so Lock honours ctx while it waits.
//
// It is single-process only. Two Lockers (or two service instances) do NOT
// exclude each other: that is the point of the `mutex` strategy, which shows
// that a local lock cannot protect a resource shared by several instances.
// Tokens are always 0.
package mutexlock

import (
	"context"
	"fmt"
	"sync"

	"github.com/seckill-lab/seckill/lockimpl"
)

// Locker hands out in-process locks per key. The zero value is not usable;
// build it with New. It is safe for concurrent use.
type Locker struct {
	mu   sync.Mutex
	keys map[string]*entry
}

// entry is one key's mutex: holding it means owning the single slot of ch.
// refs counts holders and waiters so idle entries are dropped from the map.
type entry struct {
	ch   chan struct{}
	refs int
}

var _ lockimpl.Locker = (*Locker)(nil)

// New returns an in-process Locker. Options are accepted for symmetry with
// the other backends and ignored: an in-process lock has no TTL or prefix.
func New(_ lockimpl.Options) *Locker {
	return &Locker{keys: make(map[string]*entry)}
}

func (l *Locker) ref(key string) *entry {
	l.mu.Lock()
	defer l.mu.Unlock()
	e, ok := l.keys[key]
	if !ok {
		e = &entry{ch: make(chan struct{}, 1)}
		l.keys[key] = e
	}
	e.refs++
	return e
}

func (l *Locker) unref(key string, e *entry) {
	l.mu.Lock()
	defer l.mu.Unlock()
	e.refs--
	if e.refs == 0 {
		delete(l.keys, key)
	}
}

func (l *Locker) lease(key string, e *entry) *lockimpl.Lease {
	return lockimpl.NewLease(key, 0, func(context.Context) error {
		<-e.ch
		l.unref(key, e)
		return nil
	})
}

// Lock waits until the lock for key is free or ctx is done.
func (l *Locker) Lock(ctx context.Context, key string) (*lockimpl.Lease, error) {
	e := l.ref(key)
	select {
	case e.ch <- struct{}{}:
		return l.lease(key, e), nil
	case <-ctx.Done():
		l.unref(key, e)
		return nil, fmt.Errorf("mutexlock: lock %q: %w", key, ctx.Err())
	}
}

// TryLock takes the lock if it is free and returns lockimpl.ErrLocked
// otherwise.
func (l *Locker) TryLock(ctx context.Context, key string) (*lockimpl.Lease, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("mutexlock: trylock %q: %w", key, err)
	}
	e := l.ref(key)
	select {
	case e.ch <- struct{}{}:
		return l.lease(key, e), nil
	default:
		l.unref(key, e)
		return nil, fmt.Errorf("mutexlock: trylock %q: %w", key, lockimpl.ErrLocked)
	}
}

// Held reports how many keys currently have a holder or waiter. Tests use it
// to check that nothing is left behind.
func (l *Locker) Held() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.keys)
}

// Backend serves one in-process lock table to every setting: an
// in-process lock has no server to ping and no state to clear.
type Backend struct {
	l *Locker
}

// NewBackend returns the backend over l, the instance's lock table.
func NewBackend(l *Locker) *Backend { return &Backend{l: l} }

// NewLocker returns the shared lock table (options do not apply to it).
func (b *Backend) NewLocker(context.Context, lockimpl.Options) (lockimpl.Locker, error) {
	return b.l, nil
}

// Ping always succeeds: the lock lives in this process.
func (b *Backend) Ping(context.Context) error { return nil }

// Clear does nothing: an unheld in-process lock leaves no state.
func (b *Backend) Clear(context.Context, string) error { return nil }

// Close does nothing.
func (b *Backend) Close() error { return nil }

// Prototype is the DELIBERATELY FLAWED `mutex-prototype` lock (Chapter 1,
// "多例模式"): a prototype-scoped Spring bean, so every request gets a new
// lock object and locks its own, fresh mutex. Nothing is ever excluded,
// not even within one instance. Do not use it to protect anything.
type Prototype struct{}

var _ lockimpl.Locker = Prototype{}

// Lock locks a new Locker of its own: it never waits for anyone.
func (Prototype) Lock(ctx context.Context, key string) (*lockimpl.Lease, error) {
	return New(lockimpl.Options{}).Lock(ctx, key)
}

// TryLock tries a new Locker of its own: it always succeeds (unless ctx
// is done).
func (Prototype) TryLock(ctx context.Context, key string) (*lockimpl.Lease, error) {
	return New(lockimpl.Options{}).TryLock(ctx, key)
}

// PrototypeBackend serves the Prototype lock: no server, no state.
type PrototypeBackend struct{}

// NewPrototypeBackend returns the backend of the Prototype lock.
func NewPrototypeBackend() PrototypeBackend { return PrototypeBackend{} }

// NewLocker returns the Prototype lock (options do not apply to it).
func (PrototypeBackend) NewLocker(context.Context, lockimpl.Options) (lockimpl.Locker, error) {
	return Prototype{}, nil
}

// Ping always succeeds: the lock lives in this process.
func (PrototypeBackend) Ping(context.Context) error { return nil }

// Clear does nothing: a Prototype lock leaves no state.
func (PrototypeBackend) Clear(context.Context, string) error { return nil }

// Close does nothing.
func (PrototypeBackend) Close() error { return nil }
