// Package consullock is the `consul` strategy: Consul's lock recipe (the
// api package's Lock) on the lab's terms. Each acquisition takes a session
// with a TTL and behaviour "release" (one a released lease left, renewed
// when due, or a new one; a session serves one acquisition at a time), and
// acquires the lock key (Prefix + key) with it in a transaction that locks
// the key and reads its index back; a waiter waits on a blocking query on
// the key (its index), which returns when the holder releases it, never in
// a sleep loop. While held, the session is renewed every TTL/3
// (not with Options.NoRenew), and a blocking query watches the key: a
// session that Consul invalidated (its TTL ran out: a paused holder, a
// partition) or a key taken away marks the lease lost, and the service then
// aborts before COMMIT (lease_lost). Unlock deletes the key in a
// transaction that first checks the session still holds it, and keeps the
// session for the next acquisition, as does an attempt refused or given up
// (Close destroys the idle ones; with NoRenew each acquisition has a
// session of its own, destroyed at Unlock or when the attempt ends).
//
// Consul's sessions have a TTL of at least 10 s (MinTTL: a shorter
// Options.TTL is raised to it; EffectiveTTL says so), and Consul may take up
// to twice the TTL to invalidate a session. A session also has a
// lock-delay (Config.LockDelay, 15 s by default as in Consul): once it is
// invalidated, nobody may acquire its locks for that long, which gives a
// paused holder time to notice its loss before anyone else writes, without
// fencing. The lab runs it with the default and with NoLockDelay.
//
// The fencing token is the key's ModifyIndex after the acquire: a raft
// index, which only grows, per key and across the store.
package consullock

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/consul/api"

	"github.com/seckill-lab/seckill/lockimpl"
)

// DefaultPrefix namespaces the lock keys when Options.Prefix is empty.
const DefaultPrefix = "seckill/locks/"

// MinTTL is Consul's minimum session TTL.
const MinTTL = 10 * time.Second

// DefaultLockDelay is Consul's default session lock-delay.
const DefaultLockDelay = 15 * time.Second

// NoLockDelay, as Config.LockDelay, runs sessions without a lock-delay: the
// key is free the moment the session is invalidated.
const NoLockDelay = time.Duration(-1)

// lockDelayRetry is how often a free key is tried again while a lock-delay
// keeps it (the key does not change then, so there is nothing to wait on).
var lockDelayRetry = 250 * time.Millisecond

// watchGrace bounds the wait of a released lease's watch for the delete's
// answer before it is cancelled.
const watchGrace = 5 * time.Second

// cleanupTimeout bounds the clean-up of an abandoned acquisition.
const cleanupTimeout = 2 * time.Second

// Config is what a Consul lock takes besides lockimpl.Options.
type Config struct {
	// LockDelay is the sessions' lock-delay. Default (0) DefaultLockDelay;
	// NoLockDelay for none.
	LockDelay time.Duration
}

func (c Config) lockDelay() time.Duration {
	switch {
	case c.LockDelay == NoLockDelay:
		return 0
	case c.LockDelay == 0:
		return DefaultLockDelay
	}
	return c.LockDelay
}

// EffectiveTTL is the session TTL a requested TTL gives: at least MinTTL,
// in whole seconds.
func EffectiveTTL(ttl time.Duration) time.Duration {
	return max(ttl.Round(time.Second), MinTTL)
}

// Locker is the Consul lock. Build it with New; it is safe for concurrent
// use.
type Locker struct {
	client    *api.Client
	prefix    string
	ttl       time.Duration
	noRenew   bool
	lockDelay time.Duration
	onErr     func(op string, err error)

	mu     sync.Mutex
	idle   []idleSession // sessions holding nothing (released, refused), for the next acquisition
	closed bool
}

// idleSession is a session a released lease left, with the time it was
// last renewed (Consul keeps it until at least TTL after that).
type idleSession struct {
	id      string
	renewed time.Time
}

// maxIdle bounds the idle sessions kept for reuse; extra ones are destroyed.
const maxIdle = 64

var _ lockimpl.Locker = (*Locker)(nil)

// New returns a Locker over client. Options: TTL (default lockimpl.
// DefaultTTL, at least MinTTL) is the session TTL, renewed at TTL/3 unless
// NoRenew; Prefix (default DefaultPrefix) is prepended to the key.
func New(client *api.Client, opts lockimpl.Options, cfg Config) *Locker {
	return &Locker{client: client, prefix: opts.PrefixOr(DefaultPrefix), ttl: EffectiveTTL(opts.TTLOrDefault()),
		noRenew: opts.NoRenew, lockDelay: cfg.lockDelay(), onErr: opts.CleanupErrorOrDrop()}
}

// Name is the Consul key of the lock on key.
func (l *Locker) Name(key string) string { return l.prefix + key }

// TTL is the session TTL the locker runs with (see EffectiveTTL).
func (l *Locker) TTL() time.Duration { return l.ttl }

// session creates the session of one acquisition.
func (l *Locker) session(ctx context.Context) (string, error) {
	// Written raw: the api package leaves a zero LockDelay out of the
	// request, and Consul then applies its default 15 s.
	body := map[string]any{"Name": "seckill-lock", "TTL": l.ttl.String(), "Behavior": api.SessionBehaviorRelease,
		"LockDelay": fmt.Sprintf("%dms", l.lockDelay.Milliseconds())}
	var out struct{ ID string }
	if _, err := l.client.Raw().Write("/v1/session/create", body, &out, (&api.WriteOptions{}).WithContext(ctx)); err != nil {
		return "", fmt.Errorf("consullock: create session: %w", err)
	}
	return out.ID, nil
}

// destroy ends session id, in the background of a caller that gave up.
func (l *Locker) destroy(id string) {
	ctx, cancel := context.WithTimeout(context.Background(), cleanupTimeout)
	defer cancel()
	if _, err := l.client.Session().Destroy(id, (&api.WriteOptions{}).WithContext(ctx)); err != nil {
		l.onErr("consul_session_destroy", err)
	}
}

// take returns an idle session and when it was last renewed, or "" when
// there is none (always with NoRenew: put keeps none).
func (l *Locker) take() (string, time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.idle) == 0 {
		return "", time.Time{}
	}
	s := l.idle[len(l.idle)-1]
	l.idle = l.idle[:len(l.idle)-1]
	return s.id, s.renewed
}

// put keeps session id, renewed at renewed and holding nothing, for the
// next acquisition, or destroys it in the background (NoRenew, the pool
// full or closed, or its TTL as good as run out).
func (l *Locker) put(id string, renewed time.Time) {
	l.mu.Lock()
	keep := !l.closed && !l.noRenew && len(l.idle) < maxIdle && time.Since(renewed) < l.ttl/2
	if keep {
		l.idle = append(l.idle, idleSession{id, renewed})
	}
	l.mu.Unlock()
	if !keep {
		go l.destroy(id)
	}
}

// Close destroys the idle sessions, each within cleanupTimeout. A lease
// still held destroys its session when it is unlocked.
func (l *Locker) Close() error {
	l.mu.Lock()
	idle := l.idle
	l.idle, l.closed = nil, true
	l.mu.Unlock()
	for _, s := range idle {
		l.destroy(s.id)
	}
	return nil
}

// ready returns session id renewed when it is due (a third of its TTL
// since renewed), or a new session when id is "" or Consul no longer has
// it, with the time of that renewal.
func (l *Locker) ready(ctx context.Context, id string, renewed time.Time) (string, time.Time, error) {
	if id != "" && time.Since(renewed) < l.ttl/3 {
		return id, renewed, nil
	}
	at := time.Now()
	nid, err := l.refresh(ctx, id)
	return nid, at, err
}

// acquire tries once to take name with session id, in one transaction
// that locks the key and reads it back: on success pair is the key as the
// lock left it (its ModifyIndex is the token), one round trip. Otherwise
// held reports whether another session holds it, and index is the key's
// index to wait from.
func (l *Locker) acquire(ctx context.Context, name, id string) (pair *api.KVPair, held bool, index uint64, err error) {
	ok, resp, _, err := l.client.Txn().Txn(api.TxnOps{
		{KV: &api.KVTxnOp{Verb: api.KVLock, Key: name, Session: id}},
		{KV: &api.KVTxnOp{Verb: api.KVGet, Key: name}},
	}, (&api.QueryOptions{}).WithContext(ctx))
	if err != nil {
		return nil, false, 0, fmt.Errorf("consullock: acquire %q: %w", name, err)
	}
	if ok && len(resp.Results) == 2 && resp.Results[1].KV != nil && resp.Results[1].KV.Session == id {
		return resp.Results[1].KV, false, 0, nil
	}
	cur, meta, err := l.client.KV().Get(name, (&api.QueryOptions{}).WithContext(ctx))
	if err != nil {
		return nil, false, 0, fmt.Errorf("consullock: read %q: %w", name, err)
	}
	return nil, cur != nil && cur.Session != "", meta.LastIndex, nil
}

// TryLock makes one attempt: lockimpl.ErrLocked when another session holds
// the key (or a lock-delay keeps it).
func (l *Locker) TryLock(ctx context.Context, key string) (*lockimpl.Lease, error) {
	name := l.Name(key)
	id, renewed := l.take()
	id, renewed, err := l.ready(ctx, id, renewed)
	if err != nil {
		return nil, err
	}
	pair, _, _, err := l.acquire(ctx, name, id)
	if err != nil {
		// The transaction's outcome is unknown: the session may hold the
		// key, and ending it frees the key.
		go l.destroy(id)
		return nil, err
	}
	if pair == nil {
		l.put(id, renewed) // refused: the session holds nothing
		return nil, fmt.Errorf("consullock: trylock %q: %w", key, lockimpl.ErrLocked)
	}
	return l.hold(key, name, id, pair, renewed), nil
}

// Lock waits for the key until ctx is done: a blocking query on the key
// while another session holds it; a short retry while a lock-delay keeps
// a free key.
func (l *Locker) Lock(ctx context.Context, key string) (*lockimpl.Lease, error) {
	name := l.Name(key)
	id, renewed := l.take()
	freeRefused := false // the last attempt found the key free yet was refused
	for {
		// The waiting session is renewed too: a wait longer than its TTL
		// would otherwise acquire with a session Consul is about to
		// invalidate (the lease lost at once).
		nid, at, err := l.ready(ctx, id, renewed)
		if err != nil {
			if l.retry(ctx, err) {
				continue
			}
			if id != "" {
				go l.destroy(id)
			}
			return nil, l.gaveUp(ctx, key, err)
		}
		id, renewed = nid, at
		pair, held, index, err := l.acquire(ctx, name, id)
		refused := freeRefused
		freeRefused = false
		switch {
		case err != nil && l.retry(ctx, err):
			continue
		case err != nil:
			go l.destroy(id)
			return nil, l.gaveUp(ctx, key, err)
		case pair != nil:
			return l.hold(key, name, id, pair, renewed), nil
		case held:
			// Wait for the key to change (released, its session gone),
			// at most until the session is due for renewal.
			_, _, err = l.client.KV().Get(name, (&api.QueryOptions{WaitIndex: index, WaitTime: l.ttl / 3}).WithContext(ctx))
			if err != nil && l.retry(ctx, err) {
				err = nil
			}
		case !refused:
			// Free but refused: most often the holder released it between
			// the refusal and the read, so it is tried again at once.
			freeRefused = true
			continue
		default:
			// Free but refused twice in a row: the lock-delay of an
			// invalidated session.
			_ = lockimpl.Sleep(ctx, lockDelayRetry)
		}
		if ctx.Err() != nil {
			// Every attempt was refused: the session holds nothing.
			l.put(id, renewed)
			return nil, fmt.Errorf("consullock: lock %q: %w", key, ctx.Err())
		}
		if err != nil {
			go l.destroy(id)
			return nil, fmt.Errorf("consullock: wait for %q: %w", name, err)
		}
	}
}

// refresh renews the waiting session id, or creates one when there is
// none or Consul no longer has it.
func (l *Locker) refresh(ctx context.Context, id string) (string, error) {
	if id != "" {
		entry, _, err := l.client.Session().Renew(id, (&api.WriteOptions{}).WithContext(ctx))
		if err != nil {
			return id, fmt.Errorf("consullock: renew the waiting session: %w", err)
		}
		if entry != nil {
			return id, nil
		}
	}
	return l.session(ctx)
}

// retry waits a moment and reports true when err is one Consul answers
// while it elects a leader or an agent is down (a 500, a refused
// connection) and ctx has time left: the lock waits through an election
// within the caller's lock wait, as the other locks wait through theirs.
func (l *Locker) retry(ctx context.Context, err error) bool {
	if !retryable(err) || ctx.Err() != nil {
		return false
	}
	return lockimpl.Sleep(ctx, lockDelayRetry) == nil
}

// retryable reports a connection error or a 500 (no leader, an invalid
// session being replaced): what api.IsRetryableError accepts, looked for
// through the wrapping of this package's errors.
func retryable(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) || strings.Contains(err.Error(), "Unexpected response code: 500")
}

// gaveUp is the error of a Lock that stopped on err.
func (l *Locker) gaveUp(ctx context.Context, key string, err error) error {
	if ctx.Err() != nil {
		return fmt.Errorf("consullock: lock %q: %w (last: %v)", key, ctx.Err(), err)
	}
	return err
}

// release deletes name in one transaction that first checks session id
// holds it, so a stale holder never removes the next one's lock (and the
// key, deleted rather than released, is not held back by a lock-delay).
// ok is false when the session no longer holds it.
func (l *Locker) release(ctx context.Context, name, id string) (ok bool, err error) {
	ok, _, _, err = l.client.Txn().Txn(api.TxnOps{
		{KV: &api.KVTxnOp{Verb: api.KVCheckSession, Key: name, Session: id}},
		{KV: &api.KVTxnOp{Verb: api.KVDelete, Key: name}},
	}, (&api.QueryOptions{}).WithContext(ctx))
	return ok, err
}

// Retries of a release that failed: every releaseBackoff, doubling up to
// a second, for releaseBudget; then the session is destroyed.
const (
	releaseBackoff = 100 * time.Millisecond
	releaseBudget  = time.Minute
)

// retryRelease retries the release of name by session id until the
// cluster answers (or releaseBudget runs out), then ends the session.
func (l *Locker) retryRelease(name, id string) {
	defer l.destroy(id)
	deadline := time.Now().Add(releaseBudget)
	for wait := releaseBackoff; time.Now().Before(deadline); wait = min(2*wait, time.Second) {
		time.Sleep(wait)
		ctx, cancel := context.WithTimeout(context.Background(), cleanupTimeout)
		_, err := l.release(ctx, name, id)
		cancel()
		if err == nil {
			return
		}
	}
	l.onErr("consul_release", fmt.Errorf("consullock: release %q: gave up after %v", name, releaseBudget))
}

// hold starts the renewal and the watch of the key pair that session id
// acquired; the token is its ModifyIndex.
func (l *Locker) hold(key, name, id string, pair *api.KVPair, start time.Time) *lockimpl.Lease {
	watchCtx, stopWatch := context.WithCancel(context.Background())
	var releasing atomic.Bool
	var renewedAt atomic.Int64 // the session's last renewal, in UnixNano
	renewedAt.Store(start.UnixNano())
	var stopRenew func()
	lease := lockimpl.NewLease(key, pair.ModifyIndex, func(ctx context.Context) error {
		// The watch is not cancelled before the release: the delete
		// answers its blocking query, so its connection stays open for
		// the next request (a cancelled request closes it). It is
		// cancelled when the release fails, and at the latest after
		// watchGrace.
		releasing.Store(true)
		stopRenew()
		ok, err := l.release(ctx, name, id)
		switch {
		case err != nil:
			// No leader (an election), or the agent is gone: the key would
			// stay held until the session expires (up to twice its TTL)
			// and then the lock-delay ran out, a stall of 35 s after a
			// leader kill. The release is retried until the cluster
			// answers; the caller sees the first failure.
			stopWatch()
			go l.retryRelease(name, id)
			return fmt.Errorf("consullock: unlock %q: %w", key, err)
		case !ok:
			stopWatch()
			go l.destroy(id)
			return fmt.Errorf("consullock: unlock %q: the session no longer holds it: %w", key, lockimpl.ErrNotHeld)
		}
		time.AfterFunc(watchGrace, stopWatch)
		l.put(id, time.Unix(0, renewedAt.Load()))
		return nil
	})
	lease.SetValidUntil(start.Add(l.ttl))
	if l.noRenew {
		stopRenew = lockimpl.ExpireAfter(lease, l.ttl)
	} else {
		stopRenew = lockimpl.KeepAlive(l.ttl, func(ctx context.Context) error {
			at := time.Now()
			entry, _, err := l.client.Session().Renew(id, (&api.WriteOptions{}).WithContext(ctx))
			switch {
			case err != nil && strings.Contains(err.Error(), "404"):
				return fmt.Errorf("consullock: session of %q invalidated: %w", key, lockimpl.ErrNotHeld)
			case err != nil:
				return fmt.Errorf("consullock: renew the session of %q: %w", key, err)
			case entry == nil:
				return fmt.Errorf("consullock: session of %q invalidated: %w", key, lockimpl.ErrNotHeld)
			}
			lease.SetValidUntil(at.Add(l.ttl))
			renewedAt.Store(at.UnixNano())
			return nil
		}, lease.MarkLost)
	}
	go l.watch(watchCtx, lease, &releasing, name, id, pair.ModifyIndex)
	return lease
}

// watch marks lease lost when name is no longer held by session id: the
// session was invalidated (its key released) or the key deleted, but not
// by the holder's own release (releasing).
func (l *Locker) watch(ctx context.Context, lease *lockimpl.Lease, releasing *atomic.Bool, name, id string, index uint64) {
	for {
		pair, meta, err := l.client.KV().Get(name, (&api.QueryOptions{WaitIndex: index, WaitTime: time.Minute}).WithContext(ctx))
		if ctx.Err() != nil {
			return
		}
		if err != nil {
			// The server may be gone for a while: the renewal decides
			// then; look again shortly.
			if lockimpl.Sleep(ctx, time.Second) != nil {
				return
			}
			continue
		}
		if pair == nil || pair.Session != id {
			if releasing.Load() {
				return
			}
			lease.MarkLost(fmt.Errorf("consullock: %q is no longer held by its session (session invalidated or key removed): %w", name, lockimpl.ErrLeaseLost))
			return
		}
		index = meta.LastIndex
	}
}

// NewClient is a Consul client of the agents at addrs (host:port): a
// request goes to the first that answers, and moves on to the next when a
// connection to it fails. dial, when set, makes the connections (the fault
// proxy's shift). Each wrap, in order, wraps the transport of every
// attempt (one that counts the requests, say).
func NewClient(addrs []string, dial func(ctx context.Context, network, addr string) (net.Conn, error), wrap ...func(http.RoundTripper) http.RoundTripper) (*api.Client, error) {
	if len(addrs) == 0 {
		return nil, errors.New("consullock: no Consul address")
	}
	base := &http.Transport{MaxIdleConnsPerHost: 256, IdleConnTimeout: 90 * time.Second}
	if dial != nil {
		base.DialContext = dial
	} else {
		base.DialContext = (&net.Dialer{Timeout: time.Second}).DialContext
	}
	var next http.RoundTripper = base
	for _, w := range wrap {
		next = w(next)
	}
	rt := &failover{addrs: addrs, next: next}
	c, err := api.NewClient(&api.Config{Address: addrs[0], Scheme: "http", HttpClient: &http.Client{Transport: rt}})
	if err != nil {
		return nil, fmt.Errorf("consullock: client: %w", err)
	}
	return c, nil
}

// failover sends each request to the current agent and moves to the next
// one when the connection fails.
type failover struct {
	mu    sync.Mutex
	cur   int
	addrs []string
	next  http.RoundTripper
}

func (f *failover) RoundTrip(req *http.Request) (*http.Response, error) {
	var err error
	for range f.addrs {
		f.mu.Lock()
		i := f.cur
		f.mu.Unlock()
		r := req.Clone(req.Context())
		r.URL.Host, r.Host = f.addrs[i], f.addrs[i]
		var resp *http.Response
		if resp, err = f.next.RoundTrip(r); err == nil {
			return resp, nil
		}
		var op *net.OpError
		if req.Context().Err() != nil || !errors.As(err, &op) || op.Op != "dial" || req.Body != nil && req.GetBody == nil {
			return nil, err
		}
		if req.GetBody != nil {
			body, berr := req.GetBody()
			if berr != nil {
				return nil, berr
			}
			req.Body = body
		}
		f.mu.Lock()
		if f.cur == i {
			f.cur = (i + 1) % len(f.addrs)
		}
		f.mu.Unlock()
	}
	return nil, err
}

// Backend is what the service needs of the Consul lock: a Locker per
// setting, Ping and Clear.
type Backend struct {
	client *api.Client
	cfg    Config
}

// NewBackend is the lock on client with cfg.
func NewBackend(client *api.Client, cfg Config) *Backend { return &Backend{client: client, cfg: cfg} }

// NewLocker builds the Locker of one setting.
func (b *Backend) NewLocker(_ context.Context, opts lockimpl.Options) (lockimpl.Locker, error) {
	return New(b.client, opts, b.cfg), nil
}

// Ping reports whether the cluster has a leader (writes need one).
func (b *Backend) Ping(ctx context.Context) error {
	var leader string
	_, err := b.client.Raw().Query("/v1/status/leader", &leader, (&api.QueryOptions{}).WithContext(ctx))
	switch {
	case err != nil:
		return fmt.Errorf("consul: %w", err)
	case leader == "":
		return errors.New("consul: no leader (no quorum)")
	}
	return nil
}

// Clear deletes the lock key of key (a held one too: its holder's next
// look finds it gone).
func (b *Backend) Clear(ctx context.Context, key string) error {
	if _, err := b.client.KV().Delete(DefaultPrefix+key, (&api.WriteOptions{}).WithContext(ctx)); err != nil {
		return fmt.Errorf("consul: clear %q: %w", key, err)
	}
	return nil
}

// Close does nothing: the client holds no session between acquisitions.
func (b *Backend) Close() error { return nil }
