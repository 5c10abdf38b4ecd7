package server

import (
	"slices"
	"strings"
	"testing"

	"github.com/seckill-lab/seckill/bench/costmodel"
	"github.com/seckill-lab/seckill/bench/fleet"
	"github.com/seckill-lab/seckill/stock/catalog"
)

// TestDescribeDurability: which servers' writes cost an fsync comes from
// the server descriptions, per durability level; a level not given is
// taken as the default and said so.
func TestDescribeDurability(t *testing.T) {
	cases := []struct {
		level string
		want  []costmodel.Server
	}{
		{DurabilityDefault, []costmodel.Server{catalog.ServerEtcd, catalog.ServerZooKeeper, catalog.ServerMySQL, catalog.ServerConsul}},
		{"", []costmodel.Server{catalog.ServerEtcd, catalog.ServerZooKeeper, catalog.ServerMySQL, catalog.ServerConsul}},
		{"unknown", []costmodel.Server{catalog.ServerEtcd, catalog.ServerZooKeeper, catalog.ServerMySQL, catalog.ServerConsul}},
		{DurabilityFsync, costmodel.Servers()},
		{DurabilityNone, nil},
	}
	for _, tc := range cases {
		f := fleet.Fleet{Durability: tc.level}
		DescribeDurability(&f)
		if f.DurabilityMeans == "" || (tc.level == "" || tc.level == "unknown") != strings.Contains(f.DurabilityMeans, "assumes the default") {
			t.Errorf("level %q: means %q", tc.level, f.DurabilityMeans)
		}
		for _, s := range costmodel.Servers() {
			want := false
			for _, w := range tc.want {
				want = want || w == s
			}
			if got := slices.Contains(f.Fsyncs, string(s)); got != want {
				t.Errorf("level %q: %s fsyncs %v, want %v", tc.level, s, got, want)
			}
		}
	}
	// Every server the meter counts is described, at every level.
	for _, s := range costmodel.Servers() {
		sp, ok := ByGroup(Group(s))
		if !ok {
			t.Errorf("no server description of group %q", s)
			continue
		}
		for _, l := range Durabilities() {
			if _, ok := sp.Fsyncs[l]; !ok {
				t.Errorf("%s: Fsyncs says nothing at level %s", s, l)
			}
		}
	}
}
