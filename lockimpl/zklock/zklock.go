// Package zklock is the `zookeeper` strategy, with its own lock recipe on
// github.com/go-zookeeper/zk (not zk.Lock):
//
//   - each acquisition creates a protected ephemeral sequential node
//     "<prefix><key>/_c_<guid>-lock-<seq>" (parents are created as needed);
//     "protected" means the name carries a per-node GUID, so a create whose
//     answer was lost (a connection loss, a caller that stopped waiting)
//     is found among the children and deleted instead of leaving an orphan
//     that would hold the lock for as long as the session lives (Curator's
//     protected mode);
//   - the node with the lowest sequence holds the lock; every waiter watches
//     only its immediate predecessor (GetW), so a release wakes one waiter:
//     FIFO without a herd effect;
//   - Lock honours ctx: on cancellation the waiter deletes its own node and
//     returns the ctx error;
//   - a delete (a release, or a waiter leaving) whose request is lost with
//     the connection is retried until it is applied or the session is gone
//     (Curator's guaranteed delete): the session usually outlives a short
//     stall, and its node would otherwise hold the lock for ever;
//   - the fencing token is the node's Czxid (the zxid of its creation),
//     which strictly increases;
//   - while held, the node is watched: its deletion, or the session's
//     expiry (the watch ends with EventNotWatching), marks the lease lost.
//
// NewHerd (the `zookeeper-herd` strategy) is the same lock with the waiting
// done the way the sources warn against (羊群效应, the herd effect): every
// waiter watches the lock's PARENT (getChildren with a watch) and re-lists
// the children on every change, instead of watching its predecessor. It is
// still correct (the lowest sequence holds the lock) but wasteful: each
// release, and each new waiter's create, wakes every waiter, about N/2
// watch events per acquisition with N waiters instead of 1.
// Options.OnWatchEvent counts the watch events a waiter receives, in both
// variants.
//
// The lock lives as long as the ZooKeeper session, so the TTL is the
// session timeout: Dial connects with sessionTimeout = Options.TTL (the
// server clamps it to [2, 20] x tickTime). A holder that goes silent loses
// its node when the session expires; there is no watchdog to run, the
// client's heartbeats keep the session alive. A session that is merely
// disconnected (not yet expired) keeps its nodes, and the lease is not
// reported lost until the server expires the session.
package zklock

import (
	"context"
	"errors"
	"fmt"
	"net"
	"path"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/google/uuid"

	"github.com/seckill-lab/seckill/lockimpl"
)

// DefaultPrefix is the parent of the lock nodes when Options.Prefix is
// empty. Each key gets a child directory under it.
const DefaultPrefix = "/seckill/locks/"

// nodeName is the base name of the sequential lock nodes.
const nodeName = "lock-"

// Locker is the ZooKeeper lock. Build it with New; it is safe for
// concurrent use.
type Locker struct {
	conn   *zk.Conn
	owned  bool // Close closes conn (a Locker built by a Backend)
	prefix string
	ttl    time.Duration
	acl    []zk.ACL
	onErr  func(op string, err error)
	// herd: waiters watch the parent's children, not their predecessor.
	herd    bool
	onWatch func()

	mu      sync.Mutex
	parents map[string]bool // key directories known to exist
}

var _ lockimpl.Locker = (*Locker)(nil)

// New returns a Locker over conn (owned by the caller; see Dial). Options:
// Prefix defaults to DefaultPrefix; TTL (default lockimpl.DefaultTTL) should
// equal the session timeout conn was connected with: a held node that could
// not be watched for longer than TTL is reported lost.
func New(conn *zk.Conn, opts lockimpl.Options) *Locker {
	prefix := opts.PrefixOr(DefaultPrefix)
	if !strings.HasSuffix(prefix, "/") {
		prefix += "/"
	}
	return &Locker{conn: conn, prefix: prefix, ttl: opts.TTLOrDefault(), acl: zk.WorldACL(zk.PermAll), onErr: opts.CleanupErrorOrDrop(),
		onWatch: opts.WatchEventOrDrop(), parents: make(map[string]bool)}
}

// NewHerd returns the herd-effect variant over conn (see the package
// comment): every waiter watches the lock's children and re-checks on
// every change. Correct but wasteful. Options as for New.
func NewHerd(conn *zk.Conn, opts lockimpl.Options) *Locker {
	l := New(conn, opts)
	l.herd = true
	return l
}

// Close closes the connection when the Locker owns it (one built by a
// Backend); a Locker built with New leaves conn to its caller.
func (l *Locker) Close() error {
	if l.owned {
		l.conn.Close()
	}
	return nil
}

// call runs a ZooKeeper request, which takes no context, and stops waiting
// for it when ctx is done. The request itself finishes on its own (the
// client bounds it by the session timeout); undo, when not nil, is then
// given its result, so the caller can take back what a request it stopped
// waiting for did.
func call[T any](ctx context.Context, f func() (T, error), undo func(T, error)) (T, error) {
	type result struct {
		v   T
		err error
	}
	ch := make(chan result, 1)
	go func() {
		v, err := f()
		ch <- result{v, err}
	}()
	select {
	case r := <-ch:
		return r.v, r.err
	case <-ctx.Done():
		if undo != nil {
			go func() {
				r := <-ch
				undo(r.v, r.err)
			}()
		}
		var zero T
		return zero, ctx.Err()
	}
}

// Dial connects to servers with the session timeout set to opts.TTL
// (default lockimpl.DefaultTTL), waits until the session is established or
// ctx is done, and discards the connection's event stream (the lock watches
// its own nodes). The caller closes the connection.
func Dial(ctx context.Context, servers []string, opts lockimpl.Options) (*zk.Conn, error) {
	connected := make(chan struct{})
	var once sync.Once
	conn, events, err := zk.Connect(servers, opts.TTLOrDefault(),
		zk.WithLogInfo(false),
		zk.WithEventCallback(func(ev zk.Event) {
			if ev.State == zk.StateHasSession {
				once.Do(func() { close(connected) })
			}
		}))
	if err != nil {
		return nil, fmt.Errorf("zklock: connect %v: %w", servers, err)
	}
	go func() {
		for range events { // drained until Close closes it
		}
	}()
	select {
	case <-connected:
		return conn, nil
	case <-ctx.Done():
		conn.Close()
		return nil, fmt.Errorf("zklock: connect %v: %w", servers, ctx.Err())
	}
}

// Dir returns the znode under which the lock named key keeps its nodes.
func (l *Locker) Dir(key string) string { return l.prefix + key }

// ensureDir creates the key's directory and its parents once per Locker.
func (l *Locker) ensureDir(ctx context.Context, dir string) error {
	l.mu.Lock()
	ok := l.parents[dir]
	l.mu.Unlock()
	if ok {
		return nil
	}
	p := ""
	for _, part := range strings.Split(strings.Trim(dir, "/"), "/") {
		p += "/" + part
		_, err := call(ctx, func() (string, error) { return l.conn.Create(p, nil, 0, l.acl) }, nil)
		if err != nil && !errors.Is(err, zk.ErrNodeExists) {
			return fmt.Errorf("zklock: create %s: %w", p, err)
		}
	}
	l.mu.Lock()
	l.parents[dir] = true
	l.mu.Unlock()
	return nil
}

// forgetDir drops the cached existence of dir (someone deleted it).
func (l *Locker) forgetDir(dir string) {
	l.mu.Lock()
	delete(l.parents, dir)
	l.mu.Unlock()
}

// seq returns the sequence suffix of a lock node name.
func seq(name string) string {
	if i := strings.LastIndex(name, nodeName); i >= 0 {
		return name[i+len(nodeName):]
	}
	return name
}

// create makes our protected ephemeral sequential node and returns its
// path, its czxid and a watch on it (set by the same request that reads the
// czxid, so holding costs no extra round trip).
func (l *Locker) create(ctx context.Context, dir string) (string, int64, <-chan zk.Event, error) {
	var node string
	var err error
	for i := 0; i < 2; i++ {
		if err = l.ensureDir(ctx, dir); err != nil {
			return "", 0, nil, err
		}
		// The node's name carries a GUID of ours: after a connection loss,
		// or when we stop waiting, a create that was applied anyway is found
		// among the children and deleted (sweep). An orphan would queue a
		// waiter nobody serves, and its live session would hold the lock
		// for ever.
		guid := uuid.NewString()
		node, err = call(ctx, func() (string, error) {
			return l.conn.Create(dir+"/"+protectedPrefix+guid+"-"+nodeName, nil, zk.FlagEphemeral|zk.FlagSequence, l.acl)
		}, func(string, error) { l.sweep(dir, guid) })
		if err != nil && ctx.Err() == nil && !errors.Is(err, zk.ErrNoNode) {
			go l.sweep(dir, guid)
		}
		if errors.Is(err, zk.ErrNoNode) { // the directory was deleted meanwhile
			l.forgetDir(dir)
			continue
		}
		break
	}
	if err != nil {
		return "", 0, nil, fmt.Errorf("zklock: create lock node in %s: %w", dir, err)
	}
	type exists struct {
		ok   bool
		stat *zk.Stat
		ch   <-chan zk.Event
	}
	ex, err := call(ctx, func() (exists, error) {
		ok, stat, ch, err := l.conn.ExistsW(node)
		return exists{ok, stat, ch}, err
	}, nil)
	if err != nil || !ex.ok {
		l.remove(node)
		if err == nil {
			err = zk.ErrNoNode
		}
		return "", 0, nil, fmt.Errorf("zklock: stat %s: %w", node, err)
	}
	return node, ex.stat.Czxid, ex.ch, nil
}

// protectedPrefix marks the lock nodes that carry a GUID (Curator's
// protected mode).
const protectedPrefix = "_c_"

// sweep deletes every child of dir that carries guid: a node whose create
// was applied after its caller gave up. It retries for a while, because it
// runs when the connection is in trouble.
func (l *Locker) sweep(dir, guid string) {
	for attempt := 0; attempt < 20; attempt++ {
		children, _, err := l.conn.Children(dir)
		if err == nil {
			for _, c := range children {
				if strings.Contains(c, guid) {
					l.removeNow(dir + "/" + c)
				}
			}
			return
		}
		if errors.Is(err, zk.ErrNoNode) || errors.Is(err, zk.ErrClosing) {
			return
		}
		time.Sleep(250 * time.Millisecond)
	}
	l.onErr("zookeeper_delete", fmt.Errorf("zklock: could not sweep %s for %s", dir, guid))
}

// remove deletes our node in the background: the caller does not wait for
// it (see removeNow).
func (l *Locker) remove(node string) { go l.removeNow(node) }

// removeNow deletes our node, and keeps trying while the answer is lost
// with the connection (see deleteNode). Its errors go to
// Options.OnCleanupError.
func (l *Locker) removeNow(node string) {
	if err := l.deleteNode(node); err != nil && !errors.Is(err, zk.ErrNoNode) {
		l.onErr("zookeeper_delete", fmt.Errorf("zklock: delete %s: %w", node, err))
	}
}

// deleteNode deletes node. When the request is lost with the connection
// (the link stalled or broke: the session, and so the node, may well
// survive it), it keeps retrying in the background until the delete is
// applied, the node or the session is gone, or the Locker is closed:
// Curator's "guaranteed" delete. Without it, a release lost with the
// connection would leave an ephemeral node whose live session holds the
// lock for ever. It returns the first attempt's error.
func (l *Locker) deleteNode(node string) error {
	first := l.conn.Delete(node, -1)
	if lostWithConnection(first) {
		go func() {
			wait, err := 50*time.Millisecond, first
			for lostWithConnection(err) {
				time.Sleep(wait)
				wait = min(2*wait, time.Second)
				err = l.conn.Delete(node, -1)
			}
			if err != nil && !errors.Is(err, zk.ErrNoNode) && !errors.Is(err, zk.ErrClosing) && !errors.Is(err, zk.ErrSessionExpired) {
				l.onErr("zookeeper_delete", fmt.Errorf("zklock: retried delete %s: %w", node, err))
			}
		}()
		return fmt.Errorf("%w (retried until the node or the session is gone)", first)
	}
	return first
}

// lostWithConnection reports whether a request failed because its
// connection went away (so it may or may not have been applied, and the
// session may live on), rather than being answered.
func lostWithConnection(err error) bool {
	return errors.Is(err, zk.ErrConnectionClosed) || errors.Is(err, zk.ErrNoServer) || errors.Is(err, zk.ErrSessionMoved)
}

// predecessor returns the node just before ours ("" when ours is first).
func (l *Locker) predecessor(ctx context.Context, dir, node string) (string, error) {
	children, err := l.children(ctx, dir)
	if err != nil {
		return "", fmt.Errorf("zklock: children of %s: %w", dir, err)
	}
	return predecessorIn(children, dir, node)
}

// predecessorIn returns the node of children just before ours ("" when
// ours is first).
func predecessorIn(children []string, dir, node string) (string, error) {
	sort.Slice(children, func(i, j int) bool { return seq(children[i]) < seq(children[j]) })
	me := path.Base(node)
	for i, c := range children {
		if c == me {
			if i == 0 {
				return "", nil
			}
			return dir + "/" + children[i-1], nil
		}
	}
	return "", fmt.Errorf("zklock: own node %s vanished while waiting: %w", node, lockimpl.ErrLeaseLost)
}

// children lists dir's children within ctx.
func (l *Locker) children(ctx context.Context, dir string) ([]string, error) {
	return call(ctx, func() ([]string, error) {
		c, _, err := l.conn.Children(dir)
		return c, err
	}, nil)
}

// TryLock returns lockimpl.ErrLocked when any node (holder or waiter)
// exists; otherwise it creates its node and keeps it if it is the first.
func (l *Locker) TryLock(ctx context.Context, key string) (*lockimpl.Lease, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("zklock: trylock %q: %w", key, err)
	}
	dir := l.Dir(key)
	if children, err := l.children(ctx, dir); err == nil && len(children) > 0 {
		return nil, fmt.Errorf("zklock: trylock %q: %w", key, lockimpl.ErrLocked)
	}
	node, czxid, watch, err := l.create(ctx, dir)
	if err != nil {
		return nil, err
	}
	pred, err := l.predecessor(ctx, dir, node)
	if err != nil {
		l.remove(node)
		return nil, err
	}
	if pred != "" {
		l.remove(node)
		return nil, fmt.Errorf("zklock: trylock %q: %w", key, lockimpl.ErrLocked)
	}
	return l.hold(key, node, czxid, watch), nil
}

// Lock queues a node and waits, watching only its predecessor, until it is
// first or ctx is done (then it deletes its node).
func (l *Locker) Lock(ctx context.Context, key string) (*lockimpl.Lease, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("zklock: lock %q: %w", key, err)
	}
	dir := l.Dir(key)
	node, czxid, watch, err := l.create(ctx, dir)
	if err != nil {
		return nil, err
	}
	next := l.watchPredecessor
	if l.herd {
		next = l.watchChildren
	}
	for {
		first, ch, err := next(ctx, dir, node)
		if err != nil {
			l.remove(node)
			if ctxErr := ctx.Err(); ctxErr != nil {
				return nil, fmt.Errorf("zklock: lock %q: %w", key, ctxErr)
			}
			return nil, err
		}
		if first {
			return l.hold(key, node, czxid, watch), nil
		}
		if ch == nil {
			continue // the predecessor is gone already: look again
		}
		select {
		case ev := <-ch:
			if ev.Type == zk.EventNotWatching {
				l.remove(node)
				return nil, fmt.Errorf("zklock: lock %q: watch ended: %w", key, ev.Err)
			}
			l.onWatch()
		case <-ctx.Done():
			l.remove(node)
			return nil, fmt.Errorf("zklock: lock %q: %w", key, ctx.Err())
		}
	}
}

// watchPredecessor is the recipe's wait step: it reports whether node is
// first, and otherwise watches only its predecessor (nil channel when the
// predecessor went away before the watch was set).
func (l *Locker) watchPredecessor(ctx context.Context, dir, node string) (bool, <-chan zk.Event, error) {
	pred, err := l.predecessor(ctx, dir, node)
	if err != nil || pred == "" {
		return err == nil, nil, err
	}
	ch, err := call(ctx, func() (<-chan zk.Event, error) {
		_, _, ch, err := l.conn.GetW(pred)
		return ch, err
	}, nil)
	switch {
	case errors.Is(err, zk.ErrNoNode):
		return false, nil, nil
	case err != nil:
		return false, nil, fmt.Errorf("zklock: watch %s: %w", pred, err)
	}
	return false, ch, nil
}

// watchChildren is the herd variant's wait step: it lists the children
// with a watch on the parent, so any create or delete under the lock wakes
// this waiter, and reports whether node is first. DELIBERATELY wasteful.
func (l *Locker) watchChildren(ctx context.Context, dir, node string) (bool, <-chan zk.Event, error) {
	type listing struct {
		children []string
		ch       <-chan zk.Event
	}
	r, err := call(ctx, func() (listing, error) {
		c, _, ch, err := l.conn.ChildrenW(dir)
		return listing{c, ch}, err
	}, nil)
	if err != nil {
		return false, nil, fmt.Errorf("zklock: watch children of %s: %w", dir, err)
	}
	pred, err := predecessorIn(r.children, dir, node)
	if err != nil {
		return false, nil, err
	}
	return pred == "", r.ch, nil
}

// hold builds the lease and watches our node while it is held, starting
// with the watch set at creation. A node that cannot be watched again for
// longer than the TTL (the session timeout) is reported lost.
func (l *Locker) hold(key, node string, czxid int64, watch <-chan zk.Event) *lockimpl.Lease {
	stop := make(chan struct{})
	done := make(chan struct{})
	lease := lockimpl.NewLease(key, uint64(czxid), func(ctx context.Context) error {
		close(stop)
		<-done
		_, err := call(ctx, func() (struct{}, error) { return struct{}{}, l.deleteNode(node) }, func(_ struct{}, err error) {
			if err != nil && !errors.Is(err, zk.ErrNoNode) {
				l.onErr("zookeeper_delete", fmt.Errorf("zklock: unlock delete %s: %w", node, err))
			}
		})
		if err != nil {
			if errors.Is(err, zk.ErrNoNode) {
				return fmt.Errorf("zklock: unlock %q: node %s gone: %w", key, node, lockimpl.ErrNotHeld)
			}
			return fmt.Errorf("zklock: unlock %q: delete %s: %w", key, node, err)
		}
		return nil
	})
	go func() {
		defer close(done)
		ch := watch
		var since time.Time // first failed re-arm of the watch
		for ch == nil {
			var err error
			_, _, ch, err = l.conn.GetW(node)
			switch {
			case errors.Is(err, zk.ErrNoNode):
				lease.MarkLost(fmt.Errorf("zklock: node %s deleted", node))
				return
			case errors.Is(err, zk.ErrSessionExpired), errors.Is(err, zk.ErrClosing):
				lease.MarkLost(fmt.Errorf("zklock: watch %s: %w", node, err))
				return
			case err != nil:
				// Disconnected: the node lives while the session does,
				// which the server keeps for the session timeout.
				if since.IsZero() {
					since = time.Now()
				} else if time.Since(since) > l.ttl {
					lease.MarkLost(fmt.Errorf("zklock: no watch on %s for %v: %w", node, l.ttl, err))
					return
				}
				ch = nil
				select {
				case <-stop:
					return
				case <-time.After(100 * time.Millisecond):
				}
				continue
			}
			since = time.Time{}
		}
		for {
			select {
			case <-stop:
				return
			case ev := <-ch:
				select {
				case <-stop:
					return // our own Delete fired it
				default:
				}
				switch ev.Type {
				case zk.EventNodeDeleted:
					lease.MarkLost(fmt.Errorf("zklock: node %s deleted", node))
					return
				case zk.EventNotWatching:
					lease.MarkLost(fmt.Errorf("zklock: watch on %s ended: %w", node, ev.Err))
					return
				}
			}
			// Data changed or similar: watch again.
			_, _, next, err := l.conn.GetW(node)
			if err != nil {
				lease.MarkLost(fmt.Errorf("zklock: re-watch %s: %w", node, err))
				return
			}
			ch = next
		}
	}()
	return lease
}

// Backend is what the service needs of the ZooKeeper lock: a Locker per
// setting, each over its own session whose timeout is the setting's TTL
// (ZooKeeper fixes the timeout per session), a Ping and Clear.
type Backend struct {
	servers []string
	herd    bool      // build NewHerd Lockers
	dialer  zk.Dialer // nil: go-zookeeper's own

	mu     sync.Mutex
	health *zk.Conn // the Ping's own session, opened on first use
}

// BackendOption configures a Backend.
type BackendOption func(*Backend)

// WithDialer makes the backend's sessions connect with d (one that counts
// the requests written, say) instead of go-zookeeper's own dialer.
func WithDialer(d zk.Dialer) BackendOption { return func(b *Backend) { b.dialer = d } }

// NewBackend returns the backend for servers. It connects nothing yet.
func NewBackend(servers []string, opts ...BackendOption) *Backend {
	b := &Backend{servers: servers}
	for _, o := range opts {
		o(b)
	}
	return b
}

// NewHerdBackend returns the backend of the herd variant (NewHerd) for
// servers. It connects nothing yet.
func NewHerdBackend(servers []string, opts ...BackendOption) *Backend {
	b := NewBackend(servers, opts...)
	b.herd = true
	return b
}

// quiet drops go-zookeeper's log lines: failures reach the user as errors.
type quiet struct{}

func (quiet) Printf(string, ...any) {}

// connect opens a session with the given timeout without waiting for it:
// requests wait for it, each within its caller's ctx.
func (b *Backend) connect(timeout time.Duration) (*zk.Conn, error) {
	dialer := b.dialer
	if dialer == nil {
		dialer = net.DialTimeout
	}
	conn, _, err := zk.Connect(b.servers, timeout, zk.WithLogger(quiet{}), zk.WithDialer(dialer))
	if err != nil {
		return nil, fmt.Errorf("zklock: connect %v: %w", b.servers, err)
	}
	return conn, nil
}

// NewLocker returns a Locker over a new session whose timeout is opts.TTL.
// Close the Locker to end the session when the setting is replaced.
func (b *Backend) NewLocker(_ context.Context, opts lockimpl.Options) (lockimpl.Locker, error) {
	conn, err := b.connect(opts.TTLOrDefault())
	if err != nil {
		return nil, err
	}
	l := New(conn, opts)
	l.herd = b.herd
	l.owned = true
	return l, nil
}

// Ping waits, until ctx is done, for the backend's own session to be
// established: a client that is still connecting is not down yet.
func (b *Backend) Ping(ctx context.Context) error {
	b.mu.Lock()
	if b.health == nil {
		conn, err := b.connect(lockimpl.DefaultTTL)
		if err != nil {
			b.mu.Unlock()
			return err
		}
		b.health = conn
	}
	conn := b.health
	b.mu.Unlock()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		st := conn.State()
		if st == zk.StateHasSession {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("zklock: ZooKeeper session state %s: %w", st, ctx.Err())
		case <-tick.C:
		}
	}
}

// Clear does nothing: lock nodes are ephemeral and go with their sessions.
func (b *Backend) Clear(context.Context, string) error { return nil }

// Close ends the Ping's session.
func (b *Backend) Close() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.health != nil {
		b.health.Close()
		b.health = nil
	}
	return nil
}
