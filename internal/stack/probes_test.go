package stack

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/seckill-lab/seckill/internal/server"
	"github.com/seckill-lab/seckill/internal/testenv"
)

// TestIdleProbes starts a stack with every server found (Consul included:
// under CI a missing one fails) and checks that the idle probes of every
// running server came back positive for each of its operations, and that
// state.json, status and status --json carry them.
func TestIdleProbes(t *testing.T) {
	requireTools(t)
	backends := packagedBackends()
	if _, err := SystemFinder().Find([]Backend{"consul"}); err != nil {
		if testenv.InCI() {
			t.Fatalf("%v (CI=true: a missing server is a failure)", err)
		}
		t.Logf("consul not found, probed without it: %v", err)
	} else {
		backends = append(backends, "consul")
	}
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	t.Setenv("SECKILL_ADMIN_TOKEN", "")
	var progress bytes.Buffer
	st, err := Up(ctx, Options{Dir: dir, BasePort: testenv.Port(28300), Instances: 1, Binary: seckillBin, Out: &progress, Backends: backends})
	t.Cleanup(func() { _ = Down(context.Background(), dir, io.Discard) })
	if err != nil {
		t.Fatalf("up: %v\n%s", err, progress.String())
	}
	loaded, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	if loaded.Probes == nil || loaded.Probes.LoopbackRTTMS <= 0 || loaded.Probes.FsyncMS <= 0 {
		t.Fatalf("state.json server_probes: %+v", loaded.Probes)
	}
	var status bytes.Buffer
	if err := WriteTable(&status, st, nil); err != nil {
		t.Fatal(err)
	}
	_, cs, err := Status(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	var js bytes.Buffer
	if err := WriteJSON(&js, cs); err != nil {
		t.Fatal(err)
	}
	var comps []statusJSON
	if err := json.Unmarshal(js.Bytes(), &comps); err != nil {
		t.Fatal(err)
	}
	for _, e := range server.IdleProbes() {
		t.Run(string(e.Server), func(t *testing.T) {
			if !st.Has(Backend(e.Server)) {
				t.Skipf("the stack runs no %s", e.Server)
			}
			sp, ok := loaded.Probes.Servers[string(e.Server)]
			if !ok || sp.Error != "" || sp.Component == "" {
				t.Fatalf("state.json: %s: %+v", e.Server, sp)
			}
			for _, op := range e.Ops {
				if o := sp.Ops[string(op)]; o.MS <= 0 || o.N <= 0 {
					t.Errorf("%s %s: %+v, want a positive median", e.Server, op, o)
				}
			}
			if want := string(e.Server) + " (" + sp.Component + "): " + string(e.Ops[0]) + " "; !strings.Contains(status.String(), want) {
				t.Errorf("status lacks %q:\n%s", want, status.String())
			}
			found := false
			for _, c := range comps {
				if c.Name == sp.Component {
					found = c.IdleProbe != nil && len(c.IdleProbe.Ops) == len(e.Ops)
				}
			}
			if !found {
				t.Errorf("status --json: %s has no idle_probe with %d operations", sp.Component, len(e.Ops))
			}
		})
	}
}
