package cost

import (
	"context"
	"errors"

	"github.com/seckill-lab/seckill/stock/catalog"
	"github.com/seckill-lab/seckill/stock/phase"

	"github.com/redis/go-redis/v9"
)

// The meter counts Redis's client with a go-redis hook (RedisHook). A command is one round trip, a
// pipeline (or MULTI/EXEC) one round trip for all its commands. A write
// is a command of the writes table (SET, DEL, PEXPIRE, EVAL, ...); a
// pipeline with any write counts one write, since Redis appends the
// whole batch to its AOF before one fsync. A failed command (NOSCRIPT,
// for one) writes nothing. A script (EVAL, EVALSHA, FCALL) is counted
// as a write: the lab's scripts are lock steps that write when they
// succeed; a failed try that changed nothing is an over-count, off the
// critical path. Pub/sub runs on go-redis's own connections and is not
// seen.

// redisWrites are the Redis commands that change the data set: appended to
// the AOF, so fsynced before the reply under appendfsync always. Kept to
// what a lock or a stock counter uses; PUBLISH is not one (nothing is
// stored). Scripts are writes (see the package doc).
var redisWrites = map[string]bool{
	"set": true, "setnx": true, "setex": true, "psetex": true, "getset": true, "getdel": true, "mset": true,
	"del": true, "unlink": true,
	"expire": true, "pexpire": true, "expireat": true, "pexpireat": true, "persist": true,
	"incr": true, "incrby": true, "decr": true, "decrby": true,
	"hset": true, "hsetnx": true, "hdel": true, "hincrby": true,
	"eval": true, "evalsha": true, "fcall": true,
	"flushdb": true, "flushall": true,
}

// redisSetup are the commands go-redis sends to set up a new connection
// (through the hooks, under the context of the request that needed it):
// counted as Other, whatever the phase.
var redisSetup = map[string]bool{"hello": true, "client": true, "auth": true, "select": true, "readonly": true}

// RedisHook returns the go-redis hook that counts a client's commands
// (redis.Client.AddHook).
func (m *Meter) RedisHook() redis.Hook { return redisHook{m} }

type redisHook struct{ m *Meter }

// DialHook counts nothing: a connection's set-up commands are counted by
// ProcessHook.
func (redisHook) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h redisHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		mk := phase.Of(ctx)
		overlapped := mk.Begin()
		err := next(ctx, cmd)
		mk.End()
		if redisSetup[cmd.Name()] {
			h.m.recordIn(catalog.ServerRedis, phase.Mark{Phase: Other}, op{})
			return err
		}
		h.m.recordIn(catalog.ServerRedis, mk, op{write: redisWrote(err, cmd), overlapped: overlapped})
		return err
	}
}

func (h redisHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		mk := phase.Of(ctx)
		overlapped := mk.Begin()
		err := next(ctx, cmds)
		mk.End()
		wrote, setup := false, true
		for _, c := range cmds {
			wrote = wrote || redisWrote(c.Err(), c)
			setup = setup && redisSetup[c.Name()]
		}
		if setup {
			h.m.recordIn(catalog.ServerRedis, phase.Mark{Phase: Other}, op{})
			return err
		}
		h.m.recordIn(catalog.ServerRedis, mk, op{write: wrote, overlapped: overlapped})
		return err
	}
}

// redisWrote reports whether cmd, answered with err, wrote: a write
// command that did not fail (redis.Nil is an answer, not a failure).
func redisWrote(err error, cmd redis.Cmder) bool {
	return (err == nil || errors.Is(err, redis.Nil)) && redisWrites[cmd.Name()]
}
