package exercises_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/seckill-lab/seckill/exercises"
	"github.com/seckill-lab/seckill/internal/lockwire"
	"github.com/seckill-lab/seckill/internal/testenv"
	"github.com/seckill-lab/seckill/lockimpl"
	"github.com/seckill-lab/seckill/lockimpl/locktest"
)

// The cases below watch the commands a Redis exercise's lock sends for its
// key (spy, a go-redis hook on a client of the lock's own) and act between
// two of them, as a crash or another holder would: what the student's code
// does at the server decides, not what it claims.

// otherOwner is the owner a case writes into a key as "another holder".
const otherOwner = "another-holder"

// spied is one command the lock sent for the key.
type spied struct {
	name string
	at   time.Time
}

// spy is a go-redis hook that sees every command naming key. before, when
// set, runs before such a command and may fail it (an injected crash).
type spy struct {
	key    string
	mu     sync.Mutex
	before func(ctx context.Context, name string) error
	seen   []spied
	sent   chan spied
}

func newSpy(key string) *spy { return &spy{key: key, sent: make(chan spied, 64)} }

func (s *spy) DialHook(next redis.DialHook) redis.DialHook { return next }

func (s *spy) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if err := s.see(ctx, cmd); err != nil {
			cmd.SetErr(err)
			return err
		}
		return next(ctx, cmd)
	}
}

func (s *spy) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		for _, cmd := range cmds {
			if err := s.see(ctx, cmd); err != nil {
				cmd.SetErr(err)
				return err
			}
		}
		return next(ctx, cmds)
	}
}

// see records cmd when it names the key and runs before on it.
func (s *spy) see(ctx context.Context, cmd redis.Cmder) error {
	args := cmd.Args()
	if !slices.ContainsFunc(args[min(1, len(args)):], func(a any) bool { v, ok := a.(string); return ok && v == s.key }) {
		return nil
	}
	name := strings.ToLower(cmd.Name())
	s.mu.Lock()
	before := s.before
	s.seen = append(s.seen, spied{name: name, at: time.Now()})
	s.mu.Unlock()
	select {
	case s.sent <- spied{name: name, at: time.Now()}:
	default:
	}
	if before != nil {
		return before(ctx, name)
	}
	return nil
}

// arm sets before.
func (s *spy) arm(before func(ctx context.Context, name string) error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.before = before
}

// names are the commands seen so far.
func (s *spy) names() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for _, c := range s.seen {
		out = append(out, c.name)
	}
	return out
}

// spiedLocker builds e's lock (the key's with key) on a Redis client of
// its own that spy watches, for the lock named name; it returns the lock,
// the spy, a plain client and the full Redis key.
func spiedLocker(t *testing.T, e exercises.Exercise, key bool, opts lockimpl.Options) (lockimpl.Locker, *spy, *redis.Client, string, string) {
	t.Helper()
	name := locktest.Key(t)
	full := e.Prefix() + name
	plain := testenv.RedisClient(t)
	hooked := testenv.RedisClient(t)
	s := newSpy(full)
	hooked.AddHook(s)
	opts.Prefix = e.Prefix()
	l, err := e.Locker(key, lockwire.Clients{Redis: hooked}, opts)
	if err != nil {
		t.Fatalf("build the lock: %v", err)
	}
	t.Cleanup(func() { _ = plain.Del(context.Background(), full).Err() })
	return l, s, plain, name, full
}

// pttl observes key: its remaining expiry (negative: none) and whether it
// exists.
func pttl(tb testing.TB, c redis.UniversalClient, key string) (time.Duration, bool) {
	tb.Helper()
	ms, err := c.Do(context.Background(), "PTTL", key).Int64()
	if err != nil {
		tb.Fatalf("PTTL %s: %v", key, err)
	}
	switch ms {
	case -2:
		return 0, false
	case -1:
		return -1, true
	}
	return time.Duration(ms) * time.Millisecond, true
}

// swapOwner makes key another holder's, of the same type (a hash for a
// reentrant lock, a string otherwise), expiring in ttl: what the server
// holds once the key expired and someone else took it.
func swapOwner(ctx context.Context, c redis.UniversalClient, key string, ttl time.Duration) error {
	typ, err := c.Type(ctx, key).Result()
	if err != nil {
		return fmt.Errorf("TYPE %s: %w", key, err)
	}
	_, err = c.TxPipelined(ctx, func(p redis.Pipeliner) error {
		p.Del(ctx, key)
		if typ == "hash" {
			p.HSet(ctx, key, otherOwner, 1)
			p.PExpire(ctx, key, ttl)
		} else {
			p.Set(ctx, key, otherOwner, ttl)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("swap the owner of %s: %w", key, err)
	}
	return nil
}

// errStopped is the injected crash: the holder stops before the command.
var errStopped = errors.New("injected: the holder stopped before this command")

// expiryInOneCommand: the holder stops (crashes) before any expiry command
// (EXPIRE, PEXPIRE, ...) it sends after its SET; the key must still
// expire. A lock that sets the expiry with the SET sends none.
func expiryInOneCommand(t *testing.T, e exercises.Exercise, key bool) {
	l, s, plain, name, full := spiedLocker(t, e, key, lockimpl.Options{TTL: 5 * time.Second})
	var stoppedAt string
	var mu sync.Mutex
	s.arm(func(_ context.Context, cmd string) error {
		if strings.Contains(cmd, "expire") {
			mu.Lock()
			stoppedAt = cmd
			mu.Unlock()
			return errStopped
		}
		return nil
	})
	ctx := context.Background()
	lease, err := l.TryLock(ctx, name)
	mu.Lock()
	cmd := stoppedAt
	mu.Unlock()
	ttl, exists := pttl(t, plain, full)
	switch {
	case exists && ttl < 0 && cmd != "":
		t.Fatalf("the key was left with no expiry (PTTL -1) when the holder stopped between its SET and its %s (commands: %s): "+
			"a holder that dies there keeps the lock for ever", strings.ToUpper(cmd), strings.Join(s.names(), ", "))
	case exists && ttl < 0:
		t.Fatalf("the lock key has no expiry (PTTL -1 right after TryLock; commands: %s): a holder that dies keeps the lock for ever",
			strings.Join(s.names(), ", "))
	case err != nil && cmd == "":
		t.Fatalf("TryLock: %v", err)
	}
	if err == nil {
		s.arm(nil)
		_ = lease.Unlock(ctx)
	}
}

// releaseOnlyOwn: right before the release's first DEL or script for the
// key, the key becomes another holder's (ours expired, someone took it).
// The release must leave that key alone and return ErrNotHeld.
func releaseOnlyOwn(t *testing.T, e exercises.Exercise, key bool) {
	l, s, plain, name, full := spiedLocker(t, e, key, lockimpl.Options{TTL: 5 * time.Second})
	ctx := context.Background()
	lease, err := l.TryLock(ctx, name)
	if err != nil {
		t.Fatalf("TryLock: %v", err)
	}
	var mu sync.Mutex
	var swapped, read bool
	s.arm(func(ctx context.Context, cmd string) error {
		mu.Lock()
		defer mu.Unlock()
		if swapped {
			return nil
		}
		switch cmd {
		case "del", "unlink", "eval", "evalsha", "eval_ro", "evalsha_ro", "fcall":
			swapped = true
			return swapOwner(ctx, plain, full, 5*time.Second)
		}
		read = true // an owner check in Go: GET, HGET, WATCH...
		return nil
	})
	uerr := lease.Unlock(ctx)
	mu.Lock()
	sw, rd := swapped, read
	mu.Unlock()
	if !sw {
		t.Fatalf("the release sent no DEL and no script for the key (commands: %s)", strings.Join(s.names(), ", "))
	}
	if _, exists := pttl(t, plain, full); !exists {
		how := "it DELs without looking at the owner"
		if rd {
			how = "it compared the owner, then DELed in a second command, and another holder took the key in between"
		}
		t.Fatalf("the release deleted a key it did not own: %s (commands: %s)", how, strings.Join(s.names(), ", "))
	}
	if !errors.Is(uerr, lockimpl.ErrNotHeld) {
		t.Fatalf("Unlock once another holder took the key: err = %v, want ErrNotHeld", uerr)
	}
}

// renewsOnlyOwn: while the lock is held, its key becomes another holder's
// (expiring in the TTL). The renewal must notice (the lease is lost) and
// must not extend the other holder's key.
func renewsOnlyOwn(t *testing.T, e exercises.Exercise, key bool) {
	ttl := 900 * time.Millisecond
	l, _, plain, name, full := spiedLocker(t, e, key, lockimpl.Options{TTL: ttl})
	ctx := context.Background()
	lease, err := l.Lock(ctx, name)
	if err != nil {
		t.Fatalf("Lock: %v", err)
	}
	if err := swapOwner(ctx, plain, full, ttl); err != nil {
		t.Fatal(err)
	}
	swappedAt := time.Now()
	select {
	case <-lease.Lost():
		return
	case <-time.After(ttl + locktest.DefaultExpirySlack):
	}
	if left, exists := pttl(t, plain, full); exists {
		t.Fatalf("the renewal extended a key it did not own: another holder's key set to expire in %v is still there %v later (PTTL %d ms), and the lease was not reported lost",
			ttl, time.Since(swappedAt).Round(10*time.Millisecond), left.Milliseconds())
	}
	t.Fatalf("the holder did not notice that another holder took its key within %v: a renewal that finds the key not its own must call lease.MarkLost",
		ttl+locktest.DefaultExpirySlack)
}

// renewalStops: once Unlock returned, the lock sends nothing more for the
// key (watched for twice the TTL: six renewal periods).
func renewalStops(t *testing.T, e exercises.Exercise, key bool) {
	ttl := 600 * time.Millisecond
	l, s, _, name, _ := spiedLocker(t, e, key, lockimpl.Options{TTL: ttl})
	ctx := context.Background()
	lease, err := l.Lock(ctx, name)
	if err != nil {
		t.Fatalf("Lock: %v", err)
	}
	if err := lease.Unlock(ctx); err != nil {
		t.Fatalf("Unlock: %v", err)
	}
	released := time.Now()
	for len(s.sent) > 0 { // what was sent before Unlock returned
		<-s.sent
	}
	window := time.NewTimer(2 * ttl)
	defer window.Stop()
	var after []spied
	for len(after) < 2 {
		select {
		case c := <-s.sent:
			// go-redis retries an EVALSHA the server does not know as an
			// EVAL: one renewal, not two.
			if n := len(after); n > 0 && c.name == "eval" && after[n-1].name == "evalsha" && c.at.Sub(after[n-1].at) < 50*time.Millisecond {
				continue
			}
			after = append(after, c)
			continue
		case <-window.C:
		}
		break
	}
	switch len(after) {
	case 0:
	case 1:
		t.Fatalf("a renewal ran after release: %s %v after Unlock returned, then stopped: stop the watchdog before the release, and wait for a renewal in flight",
			strings.ToUpper(after[0].name), after[0].at.Sub(released).Round(time.Millisecond))
	default:
		t.Fatalf("renewals went on after Unlock returned (%s at %v, %s at %v): the watchdog never stops",
			strings.ToUpper(after[0].name), after[0].at.Sub(released).Round(time.Millisecond),
			strings.ToUpper(after[1].name), after[1].at.Sub(released).Round(time.Millisecond))
	}
}
