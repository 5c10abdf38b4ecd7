package stock

import (
	"context"
	"errors"

	"github.com/seckill-lab/seckill/lockimpl"
	"github.com/seckill-lab/seckill/stock/catalog"
)

// LockBackend is what the service needs of one lock implementation on its
// server. Each lockimpl adapter package provides one.
type LockBackend interface {
	// NewLocker builds the Locker for one setting's options. When the
	// Locker is also an io.Closer, the service closes it once the setting
	// is replaced and no purchase uses it any more.
	NewLocker(ctx context.Context, opts lockimpl.Options) (lockimpl.Locker, error)
	// Ping reports whether the server answers (for a quorum lock: whether
	// a quorum does).
	Ping(ctx context.Context) error
	// Clear drops key's lock state at the server (lock keys, fencing
	// counters, lock rows) for a reset.
	Clear(ctx context.Context, key string) error
	// Close releases what the backend opened itself (not the clients it
	// was given).
	Close() error
}

// ErrNotConfigured is returned when a strategy's server has no address.
var ErrNotConfigured = errors.New("backend not configured")

// ExpectedCorrect reports whether strategy s is expected never to oversell on a
// fleet of instances under c, without faults: by s.Breaks, and for a lock
// that renews, by whether its renewal is off while the work outlasts its
// TTL (then only fencing with tokens saves it). The work that counts
// against the TTL is c.WorkDelay plus, for a lock with ReleasePause, the
// release pause.
func ExpectedCorrect(s catalog.Strategy, instances int, c Config) bool {
	c = c.WithDefaults()
	hold := c.WorkDelay
	if s.ReleasePause {
		hold += c.ReleasePause
	}
	outlasts := hold >= c.LockTTL
	switch s.Breaks {
	case catalog.BreaksAlways:
		return false
	case catalog.BreaksMultiInstance:
		return instances <= 1
	case catalog.BreaksWorkOutlastsTTL:
		return !outlasts
	}
	if s.Renews && c.NoWatchdog && outlasts {
		return c.Fencing && s.Tokens
	}
	return true
}
