// Package exercises owns the workshop's exercises as data: for each, the
// student's package (exercises/NAME), the strategy name the lab knows the
// student's lock by, the answer key (one of the project's own strategies),
// the properties the exercise requires, the bench and fault scenarios that
// grade it, and the lesson and hint for every check. `seckill grade`
// (internal/grade) reads this table; nothing here runs a check.
//
// The students' locks join the lab through catalog.Extend (Register), not
// the registry: they resolve by name in the service, the bench and the
// scenarios, while the lab's own tables, reports and tests stay as they
// are.
package exercises

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/seckill-lab/seckill/exercises/fencing"
	"github.com/seckill-lab/seckill/exercises/redislock"
	"github.com/seckill-lab/seckill/exercises/watchdog"
	"github.com/seckill-lab/seckill/internal/lockwire"
	"github.com/seckill-lab/seckill/internal/server"
	"github.com/seckill-lab/seckill/lockimpl"
	"github.com/seckill-lab/seckill/lockimpl/etcdlock"
	rl "github.com/seckill-lab/seckill/lockimpl/redislock"
	"github.com/seckill-lab/seckill/stock"
	"github.com/seckill-lab/seckill/stock/catalog"
)

// Text is a sentence in both of the course's languages.
type Text struct{ ZH, EN string }

// Required are the conformance properties (lockimpl/locktest's cases) an
// exercise requires beyond exclusion, TryLock, cancellation and a double
// Unlock, which every exercise requires. The exercise decides them, not
// the student's lock.
type Required struct {
	// Tokens: Lease.Token strictly increases (TokensIncrease).
	Tokens bool
	// Watchdog: a held lock outlives its TTL (HeldPastTTL).
	Watchdog bool
	// LostLease: a lease broken at the server is reported (LostLease).
	LostLease bool
	// NoRenew: without renewal the lock expires and a stale holder's
	// release must not delete the next holder's lock
	// (ExpiresWithoutRenewal).
	NoRenew bool
	// Acquire: the student writes the acquisition and the release of a
	// Redis lock: the expiry comes with the SET (ExpiryInOneCommand) and
	// the release deletes only its own key (ReleaseOnlyOwn).
	Acquire bool
	// Renewal: the student writes a Redis renewal: it extends only its own
	// key (RenewsOnlyOwn) and stops at the release (RenewalStops).
	Renewal bool
}

// Load is the grader's bench of an exercise: the invariants and the
// linearizability check of one seeded run of the student's lock.
type Load struct {
	Stock, Requests, Concurrency int
	// WorkDelay and LockTTL: work longer than the TTL is what renewal is
	// for (0: the service defaults).
	WorkDelay, LockTTL time.Duration
	// Fencing: the store checks the lock's tokens.
	Fencing bool
	// NoLeaseCheck: a holder whose lease ran out commits anyway, so the
	// bench shows what the lock alone does (with the check, a lock that
	// is not renewed loses its purchases instead of overselling).
	NoLeaseCheck bool
}

// Fault is one fault scenario (internal/scenario) the exercise is graded
// under, and the protections (scenario.Protection names) under which the
// student's lock must not oversell.
type Fault struct {
	Scenario    string
	Protections []string
}

// Exercise is one workshop exercise.
type Exercise struct {
	// N orders the exercises (the sources' order); Name is what `seckill
	// grade` takes and the package directory under exercises/.
	N     int
	Name  string
	Title Text
	// Strategy is the name the lab knows the student's lock by; Key is the
	// answer key's strategy and KeyPath where its code is.
	Strategy, Key, KeyPath string
	// Server is what the lock needs.
	Server catalog.Server
	// Lesson explains the exercise; Seed names the source passage.
	Lesson int
	Seed   string
	// Required, Load and Faults decide the grade.
	Required Required
	Load     Load
	Faults   []Fault
	// Student builds the student's lock.
	Student func(c lockwire.Clients, opts lockimpl.Options) (lockimpl.Locker, error)
}

// All lists the exercises in the sources' order.
func All() []Exercise {
	return []Exercise{
		{
			N: 1, Name: "redislock",
			Title:    Text{ZH: "Redis 锁：SET NX PX + 归属 + 安全释放", EN: "A Redis lock: SET NX PX, an owner, a safe release"},
			Strategy: "ex-redislock", Key: catalog.Redis, KeyPath: "lockimpl/redislock/redislock.go",
			Server: catalog.ServerRedis, Lesson: 9, Seed: "Chapter 1 steps 1-3 (SETNX, 过期时间, 锁误删, Lua)",
			Required: Required{NoRenew: true, Acquire: true},
			Load:     Load{Stock: 100, Requests: 200, Concurrency: 30},
			Faults:   []Fault{{Scenario: "instance-crash", Protections: []string{"unprotected"}}},
			Student:  onRedis(func(c redis.UniversalClient, o lockimpl.Options) lockimpl.Locker { return redislock.New(c, o) }),
		},
		{
			N: 2, Name: "watchdog",
			Title:    Text{ZH: "看门狗：持锁期间续期", EN: "The watchdog: renew while held"},
			Strategy: "ex-watchdog", Key: catalog.Redis, KeyPath: "lockimpl/redislock/redislock.go (newHold, renewScript)",
			Server: catalog.ServerRedis, Lesson: 10, Seed: "Chapter 1 锁续期 (Redisson watchdog)",
			Required: Required{Watchdog: true, LostLease: true, NoRenew: true, Renewal: true},
			Load:     Load{Stock: 10, Requests: 20, Concurrency: 10, WorkDelay: 400 * time.Millisecond, LockTTL: 300 * time.Millisecond, NoLeaseCheck: true},
			Faults:   []Fault{{Scenario: "instance-crash", Protections: []string{"unprotected"}}},
			Student:  onRedis(func(c redis.UniversalClient, o lockimpl.Options) lockimpl.Locker { return watchdog.New(c, o) }),
		},
		{
			N: 3, Name: "fencing",
			Title:    Text{ZH: "Fencing token：etcd 锁 + 存储端校验", EN: "Fencing tokens: an etcd lock the store checks"},
			Strategy: "ex-fencing", Key: catalog.Etcd, KeyPath: "lockimpl/etcdlock/etcdlock.go (mutex: the create revision)",
			Server: catalog.ServerEtcd, Lesson: 22, Seed: "Chapter 1 Fencing token (Kleppmann); Overview, etcd article etcd revision",
			Required: Required{Tokens: true},
			Load:     Load{Stock: 60, Requests: 120, Concurrency: 20, Fencing: true},
			Faults:   []Fault{{Scenario: "etcd-lease", Protections: []string{"fencing"}}},
			Student:  onEtcd(func(c *clientv3.Client, o lockimpl.Options) lockimpl.Locker { return fencing.New(c, o) }),
		},
	}
}

// keyLockers are the answer keys' lockers, by strategy.
var keyLockers = map[string]func(c lockwire.Clients, opts lockimpl.Options) (lockimpl.Locker, error){
	catalog.Redis: onRedis(func(c redis.UniversalClient, o lockimpl.Options) lockimpl.Locker { return rl.New(c, o) }),
	catalog.Etcd:  onEtcd(func(c *clientv3.Client, o lockimpl.Options) lockimpl.Locker { return etcdlock.New(c, o) }),
}

// Locker builds the student's lock, or with key the answer key's.
func (e Exercise) Locker(key bool, c lockwire.Clients, opts lockimpl.Options) (lockimpl.Locker, error) {
	if key {
		return keyLockers[e.Key](c, opts)
	}
	return e.Student(c, opts)
}

// Find returns the exercise named name, or an error listing the names.
func Find(name string) (Exercise, error) {
	all := All()
	if i := slices.IndexFunc(all, func(e Exercise) bool { return e.Name == name }); i >= 0 {
		return all[i], nil
	}
	return Exercise{}, fmt.Errorf("no exercise %q; the exercises are %s", name, strings.Join(Names(), ", "))
}

// ForAll is the name that stands for every exercise (`seckill lab new
// --for all`).
const ForAll = "all"

// Servers lists what grading exercise name needs besides MySQL (ForAll:
// every exercise's), in the exercises' order: a lab sized to it starts
// those alone (`seckill lab new --for`).
func Servers(name string) ([]catalog.Server, error) {
	exs := All()
	if name != ForAll {
		e, err := Find(name)
		if err != nil {
			return nil, err
		}
		exs = []Exercise{e}
	}
	var out []catalog.Server
	for _, e := range exs {
		if !slices.Contains(out, e.Server) {
			out = append(out, e.Server)
		}
	}
	return out, nil
}

// Names lists the exercises' names in order.
func Names() []string {
	var out []string
	for _, e := range All() {
		out = append(out, e.Name)
	}
	return out
}

// AsStrategy is e's lock as a strategy: a locker the exercise requires to be
// correct (never flawed), with the tokens and renewal the exercise
// requires; its backend (opened by open) builds the student's Locker.
func (e Exercise) AsStrategy() catalog.Strategy {
	return catalog.Strategy{
		Name: e.Strategy, Kind: catalog.KindLocker, Breaks: catalog.BreaksNever,
		Tokens: e.Required.Tokens, Renews: e.Required.Watchdog, Server: e.Server,
		Summary: fmt.Sprintf("workshop exercise %d (exercises/%s): %s", e.N, e.Name, e.Title.EN),
		Source:  e.Seed,
	}
}

// open is the opener of e's lock backend (lockwire.Opener).
func (e Exercise) open(_ context.Context, c lockwire.Clients) (stock.LockBackend, error) {
	if _, err := e.Student(c, lockimpl.Options{}); err != nil {
		return nil, err
	}
	return backend{e: e, c: c}, nil
}

var registerOnce = sync.OnceValue(func() error {
	for _, e := range All() {
		if err := lockwire.Extend(e.AsStrategy(), e.open); err != nil {
			return err
		}
	}
	return nil
})

// Register adds every exercise's strategy to the lab with its opener
// (lockwire.Extend), once.
func Register() error { return registerOnce() }

func onRedis(build func(redis.UniversalClient, lockimpl.Options) lockimpl.Locker) func(lockwire.Clients, lockimpl.Options) (lockimpl.Locker, error) {
	return func(c lockwire.Clients, o lockimpl.Options) (lockimpl.Locker, error) {
		if c.Redis == nil {
			return nil, fmt.Errorf("%s: %w", catalog.ServerRedis, stock.ErrNotConfigured)
		}
		return build(c.Redis, o), nil
	}
}

func onEtcd(build func(*clientv3.Client, lockimpl.Options) lockimpl.Locker) func(lockwire.Clients, lockimpl.Options) (lockimpl.Locker, error) {
	return func(c lockwire.Clients, o lockimpl.Options) (lockimpl.Locker, error) {
		cli := server.EtcdClient(c)
		if cli == nil {
			return nil, fmt.Errorf("%s: %w", catalog.ServerEtcd, stock.ErrNotConfigured)
		}
		return build(cli, o), nil
	}
}

// EnvGradeTarget names whose lock the exercises' conformance test grades:
// TargetStudent (the packages under exercises/) or, by default, the
// answer keys.
const (
	EnvGradeTarget = "SECKILL_GRADE_TARGET"
	TargetStudent  = "student"
)
