package nemesis

import (
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/seckill-lab/seckill/internal/fault"
	"github.com/seckill-lab/seckill/internal/server"
	"github.com/seckill-lab/seckill/internal/stack"
	"github.com/seckill-lab/seckill/stock/catalog"
)

// haLayout is the layout of an ha stack with three instances for the
// redis strategy.
var haLayout = Layout{
	Instances: []string{"inst-1", "inst-2", "inst-3"},
	Needed:    Group{Link: "redis", Members: []string{"redis-primary", "redis-replica", "sentinel-1", "sentinel-2", "sentinel-3"}, Leads: true, Failover: true},
	Others: []Group{
		{Link: "redlock", Members: []string{"redis-1", "redis-2", "redis-3", "redis-4", "redis-5"}},
		{Link: "etcd", Members: []string{"etcd-1", "etcd-2", "etcd-3"}, Leads: true},
	},
}

// TestPlan: the schedule is the seed's; at least half of its faults hit
// the needed group; they fit between the quiet lead and tail; at most
// MaxOn are on at once and overlapping ones never share a scope; a long
// run has at least 30 faults of at least four kinds, some overlapping.
func TestPlan(t *testing.T) {
	tests := []struct {
		name           string
		seed           int64
		d, every       time.Duration
		layout         Layout
		minN, minKinds int
		overlap        bool
	}{
		{"done-when: 10m seed 1", 1, 10 * time.Minute, 15 * time.Second, haLayout, 30, 4, true},
		{"10m seed 2", 2, 10 * time.Minute, 15 * time.Second, haLayout, 30, 4, true},
		{"short", 1, 50 * time.Second, 5 * time.Second, haLayout, 4, 3, false},
		{"no other group", 7, 5 * time.Minute, 10 * time.Second, Layout{Instances: haLayout.Instances, Needed: haLayout.Needed}, 15, 4, false},
		{"a group without a leader", 3, 5 * time.Minute, 10 * time.Second, Layout{Instances: haLayout.Instances, Needed: haLayout.Others[0]}, 15, 4, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			plan, err := Plan(tt.seed, tt.d, tt.every, tt.layout)
			if err != nil {
				t.Fatal(err)
			}
			again, _ := Plan(tt.seed, tt.d, tt.every, tt.layout)
			if !reflect.DeepEqual(plan, again) {
				t.Fatal("the same seed drew another schedule")
			}
			other, _ := Plan(tt.seed+1, tt.d, tt.every, tt.layout)
			if reflect.DeepEqual(plan, other) {
				t.Error("another seed drew the same schedule")
			}
			kinds := Kinds(plan)
			if len(plan) < tt.minN || len(kinds) < tt.minKinds {
				t.Fatalf("%d faults of %d kinds (%s); want at least %d of %d", len(plan), len(kinds), kindList(kinds), tt.minN, tt.minKinds)
			}
			if n := needed(plan); 2*n < len(plan) {
				t.Errorf("%d of %d faults on the needed group; want at least half", n, len(plan))
			}
			if tt.overlap && Overlaps(plan) == 0 {
				t.Error("no fault begins while another is on")
			}
			for i, f := range plan {
				if f.Start < lead(tt.d) || f.Start+span(f) > tt.d-tail(tt.d)+FailoverSpan {
					t.Errorf("%s: outside the run's middle", f)
				}
				if f.Kind == fault.Failover && !tt.layout.Needed.Failover {
					t.Errorf("%s: a failover without Sentinels", f)
				}
				if strings.HasPrefix(f.Target, LeaderPrefix) && !tt.layout.Needed.Leads {
					t.Errorf("%s: a leader of a group without one", f)
				}
				on := 0
				for _, g := range plan[:i] {
					if g.Start < f.Start+span(f) && f.Start < g.Start+span(g) {
						on++
						if g.scope == f.scope {
							t.Errorf("%s overlaps %s on the same scope", f, g)
						}
					}
				}
				if on >= MaxOn {
					t.Errorf("%s begins while %d others are on", f, on)
				}
			}
		})
	}
}

func TestPlanInvalid(t *testing.T) {
	tests := []struct {
		name     string
		d, every time.Duration
		layout   Layout
		want     string
	}{
		{"too short", 20 * time.Second, 15 * time.Second, haLayout, "too short"},
		{"every under 1s", time.Minute, 500 * time.Millisecond, haLayout, "at least 1s"},
		{"no instances", time.Minute, 5 * time.Second, Layout{Needed: haLayout.Needed}, "no instances"},
		{"nothing needed", time.Minute, 5 * time.Second, Layout{Instances: haLayout.Instances, Needed: Group{Link: "etcd"}}, "etcd"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := Plan(1, tt.d, tt.every, tt.layout); err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("err = %v; want one saying %q", err, tt.want)
			}
		})
	}
}

// TestLayoutOf: the needed group is the catalogue's server's link group;
// MariaDB is no other group; a single stack, or one without the proxy,
// is refused with the fix.
func TestLayoutOf(t *testing.T) {
	comps := []stack.Component{
		{Name: "redis-1", Kind: server.KindRedis}, {Name: "redis-primary", Kind: server.KindRedisHA},
		{Name: "redis-replica", Kind: server.KindRedisHA}, {Name: "sentinel-1", Kind: server.KindSentinel},
		{Name: "etcd-1", Kind: server.KindEtcdMember}, {Name: "etcd-2", Kind: server.KindEtcdMember},
		{Name: "mariadb", Kind: server.KindMySQL}, {Name: "inst-1", Kind: stack.KindInstance}, {Name: "nginx", Kind: stack.KindNginx},
	}
	ha := &stack.State{Topology: stack.TopologyHA, Proxy: true, Components: comps}
	tests := []struct {
		name     string
		st       *stack.State
		strategy string
		needed   Group
		others   []string
		err      error
	}{
		{"redis", ha, catalog.Redis, Group{Link: "redis", Members: []string{"redis-primary", "redis-replica", "sentinel-1"}, Leads: true, Failover: true}, []string{"redlock", "etcd"}, nil},
		{"etcd", ha, catalog.Etcd, Group{Link: "etcd", Members: []string{"etcd-1", "etcd-2"}, Leads: true}, []string{"redis", "redlock"}, nil},
		{"sql-atomic needs MariaDB alone", ha, catalog.SQLAtomic, Group{Link: "mysql", Members: []string{"mariadb"}}, []string{"redis", "redlock", "etcd"}, nil},
		{"single", &stack.State{Topology: stack.TopologySingle, Proxy: true, Components: comps}, catalog.Redis, Group{}, nil, ErrNotHA},
		{"no proxy", &stack.State{Topology: stack.TopologyHA, Components: comps}, catalog.Redis, Group{}, nil, ErrNotHA},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l, err := LayoutOf(tt.st, tt.strategy)
			if !errors.Is(err, tt.err) {
				t.Fatalf("err = %v; want %v", err, tt.err)
			}
			if err != nil {
				return
			}
			var others []string
			for _, g := range l.Others {
				others = append(others, g.Link)
			}
			if !reflect.DeepEqual(l.Needed, tt.needed) || !reflect.DeepEqual(others, tt.others) {
				t.Errorf("needed %+v, others %v; want %+v, %v", l.Needed, others, tt.needed, tt.others)
			}
		})
	}
}
