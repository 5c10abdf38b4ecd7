package stock

import (
	"strings"
	"testing"
	"time"

	"github.com/seckill-lab/seckill/stock/catalog"
)

// TestKnobs: a setting lists every knob that differs from its strategy's
// defaults, the lease check included, and none for the defaults.
func TestKnobs(t *testing.T) {
	tests := []struct {
		name string
		c    Config
		want string
	}{
		{"defaults", Config{Name: catalog.Redis}, ""},
		{"ttl given as the default", Config{Name: catalog.Redis, LockTTL: DefaultLockTTL}, ""},
		{"lease check", Config{Name: catalog.Redis, NoLeaseCheck: true}, "no lease check"},
		{"all", Config{Name: catalog.Redis, WorkDelay: 5 * time.Millisecond, LockTTL: time.Second, LockWait: time.Second,
			Fencing: true, NoWatchdog: true, NoLocalQueue: true, NoLeaseCheck: true, Batch: 4, PerUserLimit: 1},
			"work 5ms, ttl 1s, wait 1s, fencing, no watchdog, no local queue, no lease check, batch 4, per-user limit 1"},
		{"release pause", Config{Name: catalog.RedisOwner, ReleasePause: 300 * time.Millisecond}, "release pause 300ms"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []string
			for _, k := range tt.c.Knobs() {
				got = append(got, k.String())
			}
			if g := strings.Join(got, ", "); g != tt.want {
				t.Errorf("Knobs() = %q, want %q", g, tt.want)
			}
		})
	}
}
