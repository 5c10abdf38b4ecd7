// Package consullock is the `consul` strategy: Consul's lock recipe (the
// api package's Lock) on the lab's terms. Each acquisition creates a
// session with a TTL and behaviour "release", and acquires the lock key
// (Prefix + key) with it through a KV acquire; a waiter waits on a blocking
// query on the key (its index), which returns when the holder releases it,
// never in a sleep loop. While held, the session is renewed every TTL/3
// (not with Options.NoRenew), and a blocking query watches the key: a
// session that Consul invalidated (its TTL ran out: a paused holder, a
// partition) or a key taken away marks the lease lost, and the service then
// aborts before COMMIT (lease_lost). Unlock deletes the key in a
// transaction that first checks the session still holds it, then destroys
// the session.
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
const lockDelayRetry = 250 * time.Millisecond

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
}

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

// acquire tries once to take name with session id. held reports whether
// another session holds it; index is the key's index to wait from.
func (l *Locker) acquire(ctx context.Context, name, id string) (ok, held bool, index uint64, err error) {
	ok, _, err = l.client.KV().Acquire(&api.KVPair{Key: name, Session: id}, (&api.WriteOptions{}).WithContext(ctx))
	if err != nil {
		return false, false, 0, fmt.Errorf("consullock: acquire %q: %w", name, err)
	}
	if ok {
		return true, false, 0, nil
	}
	pair, meta, err := l.client.KV().Get(name, (&api.QueryOptions{}).WithContext(ctx))
	if err != nil {
		return false, false, 0, fmt.Errorf("consullock: read %q: %w", name, err)
	}
	return false, pair != nil && pair.Session != "", meta.LastIndex, nil
}

// TryLock makes one attempt: lockimpl.ErrLocked when another session holds
// the key (or a lock-delay keeps it).
func (l *Locker) TryLock(ctx context.Context, key string) (*lockimpl.Lease, error) {
	name := l.Name(key)
	id, err := l.session(ctx)
	if err != nil {
		return nil, err
	}
	ok, _, _, err := l.acquire(ctx, name, id)
	if err != nil || !ok {
		go l.destroy(id)
		if err != nil {
			return nil, err
		}
		return nil, fmt.Errorf("consullock: trylock %q: %w", key, lockimpl.ErrLocked)
	}
	return l.hold(ctx, key, name, id, time.Now())
}

// Lock waits for the key until ctx is done: a blocking query on the key
// while another session holds it; a short retry while a lock-delay keeps
// a free key.
func (l *Locker) Lock(ctx context.Context, key string) (*lockimpl.Lease, error) {
	name := l.Name(key)
	var id string
	var renewed time.Time
	for {
		// The waiting session is renewed too: a wait longer than its TTL
		// would otherwise acquire with a session Consul is about to
		// invalidate (the lease lost at once).
		if id == "" || time.Since(renewed) >= l.ttl/3 {
			nid, err := l.refresh(ctx, id)
			if err != nil {
				if l.retry(ctx, err) {
					continue
				}
				if id != "" {
					go l.destroy(id)
				}
				return nil, l.gaveUp(ctx, key, err)
			}
			id, renewed = nid, time.Now()
		}
		ok, held, index, err := l.acquire(ctx, name, id)
		switch {
		case err != nil && l.retry(ctx, err):
			continue
		case err != nil:
			go l.destroy(id)
			return nil, l.gaveUp(ctx, key, err)
		case ok:
			return l.hold(ctx, key, name, id, renewed)
		case held:
			// Wait for the key to change (released, its session gone),
			// at most until the session is due for renewal.
			_, _, err = l.client.KV().Get(name, (&api.QueryOptions{WaitIndex: index, WaitTime: l.ttl / 3}).WithContext(ctx))
			if err != nil && l.retry(ctx, err) {
				err = nil
			}
		default:
			// Free but refused: the lock-delay of an invalidated session.
			_ = lockimpl.Sleep(ctx, lockDelayRetry)
		}
		if ctx.Err() != nil {
			go l.destroy(id)
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

// hold reads the token (the key's ModifyIndex), then starts the renewal
// and the watch of the key.
func (l *Locker) hold(ctx context.Context, key, name, id string, start time.Time) (*lockimpl.Lease, error) {
	pair, meta, err := l.client.KV().Get(name, (&api.QueryOptions{RequireConsistent: true}).WithContext(ctx))
	if err != nil || pair == nil || pair.Session != id {
		go l.destroy(id)
		if err == nil {
			err = fmt.Errorf("the key changed hands at once: %w", lockimpl.ErrNotHeld)
		}
		return nil, fmt.Errorf("consullock: read the token of %q: %w", name, err)
	}
	watchCtx, stopWatch := context.WithCancel(context.Background())
	var stopRenew func()
	var once sync.Once
	stop := func() {
		once.Do(func() {
			stopWatch()
			stopRenew()
		})
	}
	lease := lockimpl.NewLease(key, pair.ModifyIndex, func(ctx context.Context) error {
		stop()
		ok, err := l.release(ctx, name, id)
		switch {
		case err != nil:
			// No leader (an election), or the agent is gone: the key would
			// stay held until the session expires (up to twice its TTL)
			// and then the lock-delay ran out, a stall of 35 s after a
			// leader kill. The release is retried until the cluster
			// answers; the caller sees the first failure.
			go l.retryRelease(name, id)
			return fmt.Errorf("consullock: unlock %q: %w", key, err)
		case !ok:
			go l.destroy(id)
			return fmt.Errorf("consullock: unlock %q: the session no longer holds it: %w", key, lockimpl.ErrNotHeld)
		}
		go l.destroy(id)
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
			return nil
		}, lease.MarkLost)
	}
	go l.watch(watchCtx, lease, name, id, meta.LastIndex)
	return lease, nil
}

// watch marks lease lost when name is no longer held by session id: the
// session was invalidated (its key released) or the key deleted.
func (l *Locker) watch(ctx context.Context, lease *lockimpl.Lease, name, id string, index uint64) {
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
