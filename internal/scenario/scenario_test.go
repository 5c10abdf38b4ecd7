package scenario

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/seckill-lab/seckill/bench"
	"github.com/seckill-lab/seckill/bench/fleet"
	"github.com/seckill-lab/seckill/internal/fault"
	"github.com/seckill-lab/seckill/internal/stack"
	"github.com/seckill-lab/seckill/internal/testenv"
	"github.com/seckill-lab/seckill/stock/catalog"
)

// basePort is this package's own stack: scenarios pause and kill
// instances, which must never touch the stack other packages test against.
var basePort = testenv.Port(31500)

var seckillBin string

func TestMain(m *testing.M) {
	bin, cleanup, err := testenv.BuildSeckill()
	if err != nil {
		fmt.Fprintln(os.Stderr, "scenario test:", err)
		os.Exit(1)
	}
	seckillBin = bin
	code := m.Run()
	cleanup()
	os.Exit(code)
}

// haBasePort is the ha stack's (its ports reach B+103).
var haBasePort = testenv.Port(31700)

// ownStack starts a stack of 3 instances of the given topology, with the
// fault proxy, for the test.
func ownStack(t *testing.T, topology string, base int) (*stack.State, fleet.Fleet) {
	t.Helper()
	testenv.Binary(t, "redis-server")
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	// The optional servers (Consul) too: make deps builds them into bin/.
	f := stack.SystemFinder()
	f.Lab = testenv.LabBin()
	st, err := stack.Up(ctx, stack.Options{Dir: dir, BasePort: base, Instances: 3, Binary: seckillBin, Out: io.Discard, Topology: topology, Proxy: true, Finder: &f})
	if err != nil {
		testenv.Unavailable(t, "the scenario stack", err)
	}
	t.Cleanup(func() { _ = stack.Down(context.Background(), dir, io.Discard) })
	return st, fleet.Fleet{Target: st.NginxURL(), Instances: st.InstanceURLs(), AdminToken: st.AdminToken}
}

func row(t *testing.T, res *Result, strategy string, p Protection) Row {
	t.Helper()
	for _, r := range res.Rows {
		if r.Strategy == strategy && r.Protection == p {
			return r
		}
	}
	t.Fatalf("no row %s/%s in %+v", strategy, p, res.Rows)
	return Row{}
}

// TestScenariosShort runs the short, seeded versions against real servers
// and asserts safety, not timing: fenced strategies never oversell, every
// 2xx has its order, and the unfenced pause-holder oversells in a seeded
// repeat.
func TestScenariosShort(t *testing.T) {
	st, fl := ownStack(t, stack.TopologySingle, basePort)
	ctx := context.Background()
	t.Run("pause-holder", func(t *testing.T) {
		sc, err := Find("pause-holder")
		if err != nil {
			t.Fatal(err)
		}
		res, err := Run(ctx, sc, Options{Dir: st.Dir, Fleet: fl, Strategies: []string{catalog.Redis},
			Protections: []Protection{ProtectNone, ProtectFencing}, Repeat: 3, Seed: 7, Short: true})
		if err != nil {
			t.Fatalf("%v (rows %+v)", err, res)
		}
		if r := row(t, res, catalog.Redis, ProtectFencing); r.Oversold != 0 || r.StaleRefused == 0 || r.Strikes == 0 {
			t.Errorf("fenced redis: %+v, want oversold 0 and stale holders refused", r)
		}
		if r := row(t, res, catalog.Redis, ProtectNone); r.RunsOversold == 0 || r.Strikes == 0 {
			t.Errorf("unfenced redis never oversold in %d runs with %d pauses: %+v", r.Runs, r.Strikes, r)
		}
	})
	// Consul's session invalidated in a pause, with lock-delay 0: two
	// holders unfenced, none fenced (the key's ModifyIndex as the token).
	t.Run("consul-session", func(t *testing.T) {
		if _, ok := st.Component(string(catalog.ServerConsul)); !ok {
			testenv.Unavailable(t, "consul", errors.New("the stack runs without it: `make deps` builds bin/consul"))
		}
		sc, _ := Find("consul-session")
		res, err := Run(ctx, sc, Options{Dir: st.Dir, Fleet: fl, Strategies: []string{catalog.ConsulNoDelay},
			Protections: []Protection{ProtectNone, ProtectFencing}, Repeat: 1, Seed: 7, Short: true})
		if err != nil {
			t.Fatalf("%v (rows %+v)", err, res)
		}
		if r := row(t, res, catalog.ConsulNoDelay, ProtectFencing); r.Oversold != 0 || r.OKWithout != 0 || r.Strikes == 0 {
			t.Errorf("fenced consul-nodelay: %+v, want a strike, oversold 0 and every 2xx with its order", r)
		}
		if r := row(t, res, catalog.ConsulNoDelay, ProtectNone); r.LostUpdates == 0 && r.RunsOversold == 0 || r.Strikes == 0 {
			t.Errorf("unfenced consul-nodelay: %+v, want the stale holder's write to show (a lost update or an oversell)", r)
		}
	})
	// The link faults, through the proxy: the fenced holder that lost its
	// lease to a partition or a slow database is refused.
	for _, name := range []string{"partition-holder", "slow-db"} {
		t.Run(name, func(t *testing.T) {
			sc, _ := Find(name)
			res, err := Run(ctx, sc, Options{Dir: st.Dir, Fleet: fl, Protections: []Protection{ProtectFencing}, Repeat: 1, Seed: 7, Short: true})
			if err != nil {
				t.Fatalf("%v (rows %+v)", err, res)
			}
			if r := row(t, res, catalog.Redis, ProtectFencing); r.Oversold != 0 || r.OKWithout != 0 || r.Strikes == 0 || r.Errors[bench.OutcomeError] != 0 {
				t.Errorf("fenced redis, %s: %+v, want strikes, oversold 0 and no errors", name, r)
			}
		})
	}
	t.Run("instance-crash", func(t *testing.T) {
		sc, _ := Find("instance-crash")
		res, err := Run(ctx, sc, Options{Dir: st.Dir, Fleet: fl, Strategies: []string{catalog.Redis},
			Protections: []Protection{ProtectLeaseCheck}, Repeat: 1, Seed: 7, Short: true})
		if err != nil {
			t.Fatalf("%v (rows %+v)", err, res)
		}
		if r := row(t, res, catalog.Redis, ProtectLeaseCheck); r.Oversold != 0 || r.OKWithout != 0 || r.Strikes != 1 {
			t.Errorf("instance-crash: %+v, want 1 crash, no oversell, no 2xx lost", r)
		}
	})
	// A striker stops on its ctx, and still undoes its fault. Before, a
	// pause ran its whole length after its run was cancelled.
	t.Run("striker stops on ctx", func(t *testing.T) {
		tests := []struct {
			name   string
			strike func(ctx context.Context, inst string) (string, time.Duration, error)
		}{
			{"pause", pauseHolder(st.Dir, time.Minute)},
			{"kill", killHolder(st.Dir, time.Minute)},
			{"partition", linkHolder(st.Dir, fault.Partition, "redis", 0, time.Minute)},
			// A restart begun is finished: the load ended while one ran
			// (lesson 14 in CI: "striker: redis-1: context canceled").
			{"restart", restartComponent(st.Dir, "redis-3")},
		}
		for _, tc := range tests {
			t.Run(tc.name, func(t *testing.T) {
				ctx, cancel := context.WithCancel(context.Background())
				cancel()
				start := time.Now()
				what, d, err := tc.strike(ctx, "inst-1")
				if err != nil {
					t.Fatal(err)
				}
				if el := time.Since(start); el > 20*time.Second+testenv.LoadSlack || d >= time.Minute {
					t.Errorf("%s: returned after %s (strike %s): the cancelled ctx did not end its wait", what, el, d)
				}
				// Undone: inst-1 answers again.
				if err := stack.Start(context.Background(), st.Dir, "inst-1"); err != nil {
					t.Fatalf("inst-1 after the strike: %v", err)
				}
				// ... and the whole stack is healthy again (an instance
				// resumed or restarted answers within the start timeout).
				var sick []string
				for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); {
					_, cs, err := stack.Status(context.Background(), st.Dir)
					if err != nil {
						t.Fatal(err)
					}
					sick = sick[:0]
					for _, c := range cs {
						if !c.Healthy {
							sick = append(sick, c.Name+": "+c.Health)
						}
					}
					if len(sick) == 0 {
						break
					}
					time.Sleep(100 * time.Millisecond)
				}
				if len(sick) > 0 {
					t.Errorf("after %s, still unhealthy: %v", what, sick)
				}
			})
		}
	})
}

func TestSleepCtx(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if d := sleepCtx(ctx, time.Hour); d >= time.Minute {
		t.Errorf("sleepCtx on a done ctx waited %s", d)
	}
	if d := sleepCtx(context.Background(), time.Millisecond); d < time.Millisecond {
		t.Errorf("sleepCtx(1ms) waited %s", d)
	}
	if got := shown(1500*time.Millisecond, time.Second); got != time.Second {
		t.Errorf("shown after the full wait: %s", got)
	}
	if got := shown(1234567*time.Microsecond, 5*time.Second); got != 1235*time.Millisecond {
		t.Errorf("shown after a cut wait: %s", got)
	}
}

func TestFindAndParse(t *testing.T) {
	if _, err := Find("nope"); !errors.Is(err, ErrUnknown) {
		t.Errorf("Find(nope) = %v", err)
	}
	for _, s := range All() {
		if s.Seed == "" || s.Story == "" || s.Predicts == "" || s.Strike == nil || len(s.Strategies) == 0 || s.Short.Requests == 0 {
			t.Errorf("scenario %s is incomplete", s.Name)
		}
		for _, n := range s.Strategies {
			if info, ok := catalog.Lookup(n); !ok || info.Kind != catalog.KindLocker {
				t.Errorf("scenario %s: %s is not a locker strategy", s.Name, n)
			}
		}
	}
	// Fits names what a scenario needs and how to get it.
	single := &stack.State{Dir: "/run/x", Topology: stack.TopologySingle}
	for _, tc := range []struct {
		name string
		st   *stack.State
		want string
	}{
		{"pause-holder", single, ""},
		{"redis-failover", single, "needs the ha topology: seckill down --dir /run/x, then seckill up --dir /run/x --topology ha"},
		{"partition-holder", single, "needs the fault proxy: seckill down --dir /run/x, then seckill up --dir /run/x --proxy"},
		{"partition-holder", &stack.State{Dir: "/run/x", Topology: stack.TopologySingle, Proxy: true}, ""},
		// On ha the redis lock is on the primary: restarting redis-1
		// would prove nothing (0 oversold in every row, verdict ok).
		{"redis-restart-fencing", &stack.State{Dir: "/run/x", Topology: stack.TopologyHA}, "proves nothing on the ha topology"},
		{"redis-restart-fencing", single, ""},
		{"pause-holder", &stack.State{Dir: "/run/x", Topology: stack.TopologyHA}, ""},
	} {
		sc, _ := Find(tc.name)
		err := sc.Fits(tc.st)
		if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("%s.Fits: %v, want %q", tc.name, err, tc.want)
		}
	}
	for in, ok := range map[string]bool{"all": true, "unprotected,fencing": true, "lease-check": true, "fenced": false} {
		if _, err := ParseProtections(in); (err == nil) != ok {
			t.Errorf("ParseProtections(%q): %v", in, err)
		}
	}
}

// TestHAScenariosShort runs the short redis-failover and majority-loss on
// an ha stack of the test's own, asserting safety: fenced redis never
// oversells through a failover, and losing the etcd quorum makes the lock
// unavailable without overselling.
func TestHAScenariosShort(t *testing.T) {
	testenv.Binary(t, "etcd")
	st, fl := ownStack(t, stack.TopologyHA, haBasePort)
	ctx := context.Background()
	t.Run("redis-failover", func(t *testing.T) {
		sc, _ := Find("redis-failover")
		res, err := Run(ctx, sc, Options{Dir: st.Dir, Fleet: fl, Protections: []Protection{ProtectFencing}, Repeat: 1, Seed: 7, Short: true})
		if err != nil {
			t.Fatalf("%v (rows %+v)", err, res)
		}
		if r := row(t, res, catalog.Redis, ProtectFencing); r.Oversold != 0 || r.OKWithout != 0 || r.Strikes != 1 {
			t.Errorf("fenced redis through a failover: %+v, want 1 failover and oversold 0", r)
		}
	})
	t.Run("majority-loss", func(t *testing.T) {
		sc, _ := Find("majority-loss")
		res, err := Run(ctx, sc, Options{Dir: st.Dir, Fleet: fl, Strategies: []string{catalog.Etcd},
			Protections: []Protection{ProtectNone}, Repeat: 1, Seed: 7, Short: true})
		if err != nil {
			t.Fatalf("%v (rows %+v)", err, res)
		}
		r := row(t, res, catalog.Etcd, ProtectNone)
		if r.Oversold != 0 || r.OKWithout != 0 || r.Strikes != 1 {
			t.Errorf("etcd without a quorum: %+v, want oversold 0", r)
		}
		if r.Errors[bench.OutcomeLockTimeout]+r.Errors[bench.OutcomeError] == 0 {
			t.Errorf("etcd without a quorum answered every purchase: %+v", r)
		}
	})
	// The Consul cluster loses its leader while locks are held and wanted.
	t.Run("consul-leader", func(t *testing.T) {
		if _, ok := st.Component("consul-1"); !ok {
			testenv.Unavailable(t, "consul", errors.New("the stack runs without it: `make deps` builds bin/consul"))
		}
		sc, _ := Find("consul-leader")
		res, err := Run(ctx, sc, Options{Dir: st.Dir, Fleet: fl, Protections: []Protection{ProtectNone}, Repeat: 1, Seed: 7, Short: true})
		if err != nil {
			t.Fatalf("%v (rows %+v)", err, res)
		}
		if r := row(t, res, catalog.Consul, ProtectNone); r.Oversold != 0 || r.OKWithout != 0 || r.Strikes != 1 {
			t.Errorf("consul through a leader kill: %+v, want 1 kill, oversold 0, every 2xx with its order", r)
		}
	})
}

// TestMostlyErrorsFails: a run that lost most of its purchases to errors
// proves nothing, and the row says so (4 of 15 instance-crash runs once
// lost 36-39 of 40 purchases to 502 and got the verdict ok).
func TestMostlyErrorsFails(t *testing.T) {
	for _, tc := range []struct {
		outcomes map[string]int
		mostly   int
	}{
		{map[string]int{bench.OutcomeOK: 1, bench.OutcomeError: 39}, 1},
		{map[string]int{bench.OutcomeOK: 30, bench.OutcomeError: 10}, 0},
		{map[string]int{bench.OutcomeOK: 20, bench.OutcomeError: 20}, 0},
		{map[string]int{}, 0},
	} {
		r := Row{Errors: map[string]int{}}
		r.add(bench.RunResult{Outcomes: tc.outcomes})
		if r.RunsMostlyErrors != tc.mostly {
			t.Errorf("%v: runs mostly errors %d, want %d", tc.outcomes, r.RunsMostlyErrors, tc.mostly)
		}
	}
}
