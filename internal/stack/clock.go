package stack

import (
	"context"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/seckill-lab/seckill/internal/server"
)

// clockJumpScript applies a forward clock jump of ARGV[1] ms to one Redis
// node's keys, atomically: every key with a TTL loses offset from it, and
// a key whose TTL was no longer than offset is deleted, as the node's own
// expiry would after the jump. Returns {shortened, expired}.
var clockJumpScript = redis.NewScript(`
local off = tonumber(ARGV[1])
local cut, gone = 0, 0
for _, k in ipairs(redis.call('KEYS', '*')) do
  local ttl = redis.call('PTTL', k)
  if ttl > 0 then
    if ttl <= off then
      redis.call('DEL', k)
      gone = gone + 1
    else
      redis.call('PEXPIRE', k, ttl - off)
      cut = cut + 1
    end
  end
end
return {cut, gone}
`)

// ClockJump emulates a forward jump of offset on the clock of the Redis
// node name: Redis expires keys by its wall clock, so after a jump every
// key's remaining TTL is offset shorter, and the keys with less left are
// gone. The lab never changes a clock, and libfaketime does not start
// Debian's redis-server (jemalloc: "Unexpected recursive calls to
// clock_gettime()"), so the jump's effect is applied instead: an
// EMULATION, and labelled so. It returns how many keys were shortened and
// how many expired.
func ClockJump(ctx context.Context, st *State, name string, offset time.Duration) (shortened, expired int, err error) {
	c, err := st.find(name)
	if err != nil {
		return 0, 0, err
	}
	if c.Kind != server.KindRedis && c.Kind != server.KindRedisHA {
		return 0, 0, fmt.Errorf("a clock jump applies to a Redis node (redis-1..redis-%d), not %s", RedisCount, name)
	}
	if offset <= 0 {
		return 0, 0, fmt.Errorf("clock jump of %s: want a forward jump > 0 such as 2s", offset)
	}
	rc := redis.NewClient(&redis.Options{Addr: c.Addr, DialTimeout: time.Second, ReadTimeout: 5 * time.Second})
	defer rc.Close()
	n, err := clockJumpScript.Run(ctx, rc, nil, offset.Milliseconds()).Int64Slice()
	if err != nil {
		return 0, 0, fmt.Errorf("clock jump on %s: %w", name, err)
	}
	return int(n[0]), int(n[1]), nil
}
