package nemesis

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/seckill-lab/seckill/bench"
	"github.com/seckill-lab/seckill/internal/fault"
	"github.com/seckill-lab/seckill/internal/stack"
	"github.com/seckill-lab/seckill/internal/testenv"
	"github.com/seckill-lab/seckill/stock/catalog"
)

// basePort is this package's own ha stack (with the proxy: B..B+350):
// the nemesis kills and pauses its servers, which must never touch the
// stack other packages test against.
var basePort = testenv.Port(32100)

var seckillBin string

func TestMain(m *testing.M) {
	bin, cleanup, err := testenv.BuildSeckill()
	if err != nil {
		fmt.Fprintln(os.Stderr, "nemesis test:", err)
		os.Exit(1)
	}
	seckillBin = bin
	code := m.Run()
	cleanup()
	os.Exit(code)
}

// TestNemesisShort runs a short seeded nemesis (50 s, a fault every 6 s)
// on an ha stack with the proxy under redis with fencing, its pauses of
// instances aimed at the lock's holder (PauseHolder: past the lock's TTL,
// so the lock expires under it and only its fencing token stops its
// stale write), and asserts safety, not timing: nothing oversold, no
// update lost, every 2xx has its order, every order's request was
// answered 2xx, every fault made healed and has its sales gap, every
// pause of an instance paused the holder past the TTL, and the faults
// were of at least three kinds.
func TestNemesisShort(t *testing.T) {
	testenv.Binary(t, "redis-server")
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	f := stack.SystemFinder()
	f.Lab = testenv.LabBin()
	_, err := stack.Up(ctx, stack.Options{Dir: dir, BasePort: basePort, Instances: 3, Binary: seckillBin, Out: io.Discard,
		Topology: stack.TopologyHA, Proxy: true, Finder: &f, Backends: []stack.Backend{stack.BackendRedis, stack.BackendMySQL}})
	if err != nil {
		testenv.Unavailable(t, "the nemesis's ha stack", err)
	}
	t.Cleanup(func() { _ = stack.Down(context.Background(), dir, io.Discard) })

	out := t.TempDir()
	res, err := Run(ctx, Options{Dir: dir, Strategy: catalog.Redis, Fencing: true, PauseHolder: true, For: 50 * time.Second,
		Every: 6 * time.Second, Seed: 1, OutDir: out, Progress: testWriter{t}})
	if err != nil {
		t.Fatal(err)
	}
	if fs := res.Failures(); len(fs) > 0 {
		t.Errorf("failures: %s", strings.Join(fs, "; "))
	}
	if res.Oversold != 0 {
		t.Errorf("oversold %d", res.Oversold)
	}
	for _, name := range []string{bench.InvOKHasOrder, bench.InvOrderAnswered, bench.InvNoLostUpdate} {
		if inv, ok := invariant(res, name); !ok || !inv.Pass {
			t.Errorf("%s: %+v (found %v)", name, inv, ok)
		}
	}
	if res.Made < 3 || len(res.Kinds) < 3 {
		t.Errorf("%d faults made of %d kinds (%v); want at least 3 of 3", res.Made, len(res.Kinds), res.Kinds)
	}
	if 2*res.NeededMade < res.Made {
		t.Errorf("%d of %d faults on redis; want at least half", res.NeededMade, res.Made)
	}
	held := 0
	for _, r := range res.Faults {
		if r.Made && (!r.Healed || r.HealedS < r.StartS || r.SalesGapS < 0) {
			t.Errorf("fault %s: healed %v at %.1f s (began %.1f s), sales gap %.1f s", r.describe(), r.Healed, r.HealedS, r.StartS, r.SalesGapS)
		}
		if r.Made && r.Kind == fault.Pause && strings.HasPrefix(r.Target, "inst-") {
			if held++; !strings.Contains(r.Hit, "holding the lock") || r.HealedS-r.StartS < (HolderTTL+HolderOvershoot).Seconds() {
				t.Errorf("pause of an instance %s (%s) for %.1f s; want the lock's holder, past the %s TTL", r.Target, r.Hit, r.HealedS-r.StartS, HolderTTL)
			}
		}
	}
	if held == 0 {
		t.Errorf("no pause of an instance was made: seed 1's schedule has one; the holder pauses were not tried")
	}
	for _, name := range []string{"nemesis.json", "nemesis.md", "nemesis.svg"} {
		if _, err := os.Stat(filepath.Join(out, name)); err != nil {
			t.Error(err)
		}
	}
	if active, err := stack.ActiveFaults(dir); err != nil || len(active) > 0 {
		t.Errorf("faults still on after the run: %v (%v)", active, err)
	}
}

func invariant(r *Result, name string) (bench.Invariant, bool) {
	for _, inv := range r.Invariants {
		if inv.Name == name {
			return inv, true
		}
	}
	return bench.Invariant{}, false
}

// testWriter writes progress lines to the test's log.
type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}
