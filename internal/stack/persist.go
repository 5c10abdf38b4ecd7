package stack

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/seckill-lab/seckill/internal/server"
)

// Persistence is a Redis node's durability setting.
type Persistence string

const (
	// PersistNone is the lab's default: no RDB, no AOF. A restarted node
	// comes back empty (the Redlock restart story).
	PersistNone Persistence = "off"
	// PersistAlways is AOF with appendfsync always: every write is on
	// disk before the node answers, so a node killed with SIGKILL comes
	// back with every lock it granted (Chapter 1's fix, with a restart
	// delay longer than the TTL).
	PersistAlways Persistence = "always"
)

// aofArgs are appended to a node's command line under PersistAlways; the
// last occurrence of a Redis option wins over the --appendonly no before.
var aofArgs = []string{"--appendonly", "yes", "--appendfsync", "always"}

// SetRedisPersistence switches the Redis node name of the stack in dir to
// p: the running node at once (CONFIG SET; turning AOF on waits for its
// first rewrite, so every key already set is in the file), and its
// recorded command line, so a restart or a start after a kill keeps it.
func SetRedisPersistence(ctx context.Context, dir, name string, p Persistence) error {
	if p != PersistNone && p != PersistAlways {
		return fmt.Errorf("persistence %q: want %s or %s", p, PersistNone, PersistAlways)
	}
	return withComponent(ctx, dir, name, func(st *State, c Component) error {
		if c.Kind != server.KindRedis {
			return fmt.Errorf("%s is a %s, not a Redlock node (redis-1..5)", name, c.Kind)
		}
		rc := redis.NewClient(&redis.Options{Addr: c.Addr, DialTimeout: time.Second, ReadTimeout: 2 * time.Second})
		defer rc.Close()
		on := "no"
		if p == PersistAlways {
			on = "yes"
			if err := rc.ConfigSet(ctx, "appendfsync", "always").Err(); err != nil {
				return fmt.Errorf("%s: appendfsync always: %w", name, err)
			}
		}
		if err := rc.ConfigSet(ctx, "appendonly", on).Err(); err != nil {
			return fmt.Errorf("%s: appendonly %s: %w", name, on, err)
		}
		if p == PersistAlways {
			if err := waitAOF(ctx, rc); err != nil {
				return fmt.Errorf("%s: %w", name, err)
			}
		}
		cmd := withoutAOFArgs(c.Cmdline)
		if p == PersistAlways {
			cmd = append(cmd, aofArgs...)
		}
		for i := range st.Components {
			if st.Components[i].Name == name {
				st.Components[i].Cmdline = cmd
			}
		}
		return nil
	})
}

// RedisPersistence reports the recorded persistence of the node name.
func (s *State) RedisPersistence(name string) Persistence {
	c, ok := s.Component(name)
	if ok && len(c.Cmdline) > len(aofArgs) && slices.Equal(c.Cmdline[len(c.Cmdline)-len(aofArgs):], aofArgs) {
		return PersistAlways
	}
	return PersistNone
}

// withoutAOFArgs returns cmd without a trailing aofArgs.
func withoutAOFArgs(cmd []string) []string {
	out := slices.Clone(cmd)
	if len(out) > len(aofArgs) && slices.Equal(out[len(out)-len(aofArgs):], aofArgs) {
		out = out[:len(out)-len(aofArgs)]
	}
	return out
}

// waitAOF waits until the node has AOF on and no rewrite in progress.
func waitAOF(ctx context.Context, rc *redis.Client) error {
	deadline := time.Now().Add(10 * time.Second)
	for {
		info, err := rc.Info(ctx, "persistence").Result()
		if err != nil {
			return fmt.Errorf("INFO persistence: %w", err)
		}
		if strings.Contains(info, "aof_enabled:1") && strings.Contains(info, "aof_rewrite_in_progress:0") &&
			!strings.Contains(info, "aof_rewrite_scheduled:1") {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("AOF not on after 10s")
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
}
