package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/seckill-lab/seckill/internal/democli"
	"github.com/seckill-lab/seckill/internal/stack"
	"github.com/seckill-lab/seckill/internal/testenv"
	"github.com/seckill-lab/seckill/stock"
	"github.com/seckill-lab/seckill/stock/catalog"
)

// These tests use the package's own stack (TestMain); they re-scale it and
// switch its strategy, and put both back.

func testStack(t *testing.T) (string, democli.Fleet) {
	t.Helper()
	dir := testenv.Get(t, testenv.StackDir)
	f, err := democli.FromStack(dir)
	if err != nil {
		testenv.Unavailable(t, "the test stack", err)
	}
	return dir, f
}

// status shows the strategy each instance runs now, not the one it
// started with.
func TestStatusShowsCurrentStrategy(t *testing.T) {
	dir, f := testStack(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	t.Cleanup(func() { _, _ = f.SetStrategy(context.Background(), stock.Config{Name: catalog.None}) })
	fenced := stock.Config{Name: catalog.Redis}
	fenced.Fencing = true
	tests := []struct {
		cfg  stock.Config
		want string
	}{
		{stock.Config{Name: catalog.SQLAtomic}, catalog.SQLAtomic},
		{fenced, catalog.Redis + " (fencing)"},
	}
	for _, tt := range tests {
		if _, err := f.SetStrategy(ctx, tt.cfg); err != nil {
			t.Fatal(err)
		}
		st, cs, err := stack.Status(ctx, dir)
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, c := range cs {
			if c.Kind != stack.KindInstance {
				if c.Strategy != "" {
					t.Errorf("%s has a strategy %q", c.Name, c.Strategy)
				}
				continue
			}
			n++
			if c.Strategy != tt.want {
				t.Errorf("%s: strategy %q, want %q", c.Name, c.Strategy, tt.want)
			}
		}
		if n == 0 {
			t.Fatal("no instances in the status")
		}
		var b bytes.Buffer
		if err := stack.WriteTable(&b, st, cs); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(b.String(), "STRATEGY") || strings.Count(b.String(), tt.want) < n {
			t.Errorf("table lacks the current strategy %q:\n%s", tt.want, b.String())
		}
	}
}

// up re-scales a running stack to --instances, and without it back to
// the default, saying so; an up that changes nothing says nothing.
func TestUpRescales(t *testing.T) {
	dir, _ := testStack(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	st, err := stack.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if _, err := stack.Scale(context.Background(), dir, stack.DefaultInstances); err != nil {
			t.Errorf("scale back: %v", err)
		}
	})
	if n := len(st.Instances()); n != stack.DefaultInstances {
		t.Fatalf("the test stack runs %d instances; start it with the default %d", n, stack.DefaultInstances)
	}
	tests := []struct {
		name      string
		instances int // Options.Instances: 0 = not given
		want      int
		notice    string // "" = nothing changed (ErrAlreadyRunning)
	}{
		{"as it is", 0, stack.DefaultInstances, ""},
		{"--instances 2", 2, 2, fmt.Sprintf("from %d to 2 instances", stack.DefaultInstances)},
		{"--instances 2 again", 2, 2, ""},
		{"no --instances restores the default", 0, stack.DefaultInstances, fmt.Sprintf("from 2 to %d instances", stack.DefaultInstances)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var notice bytes.Buffer
			got, err := stack.Ensure(ctx, stack.Options{Dir: dir, BasePort: st.BasePort, Topology: st.Topology, Instances: tt.instances, Binary: st.Binary}, &notice)
			if tt.notice == "" {
				if !errors.Is(err, stack.ErrAlreadyRunning) || notice.Len() > 0 {
					t.Fatalf("err = %v, notice %q; want ErrAlreadyRunning and silence", err, notice.String())
				}
			} else if err != nil || !strings.Contains(notice.String(), tt.notice) {
				t.Fatalf("err = %v, notice %q; want one naming %q", err, notice.String(), tt.notice)
			}
			if n := len(got.Instances()); n != tt.want {
				t.Errorf("%d instances, want %d", n, tt.want)
			}
			loaded, err := stack.Load(dir)
			if err != nil {
				t.Fatal(err)
			}
			if n := len(loaded.Instances()); n != tt.want {
				t.Errorf("state.json: %d instances, want %d", n, tt.want)
			}
		})
	}
}
