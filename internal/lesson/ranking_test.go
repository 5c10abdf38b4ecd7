package lesson

import (
	"strings"
	"testing"

	"github.com/seckill-lab/seckill/bench"
	"github.com/seckill-lab/seckill/stock/catalog"
)

// st is a median and its range over the repeats.
func st(median, lo, hi float64) bench.Stat { return bench.Stat{Median: median, Min: lo, Max: hi} }

// TestRankingVerdict: the source's order is judged pair by pair on the
// ranges over the repeats (overlapping ranges are within noise, not a
// break), the lock alone decides the verdict, and a broken pair is named
// with its figures.
func TestRankingVerdict(t *testing.T) {
	// The whole purchase of the first two conditions, the same in every
	// case: one within noise, one holding.
	noisy := map[string]bench.Stat{catalog.Redis: st(90, 62, 91), catalog.ZooKeeper: st(69, 62, 70), catalog.Etcd: st(80, 75, 82), catalog.MySQLUnique: st(52, 51, 58)}
	clean := map[string]bench.Stat{catalog.Redis: st(71, 69, 73), catalog.ZooKeeper: st(54, 52, 55), catalog.Etcd: st(52, 49, 55), catalog.MySQLUnique: st(39, 38, 40),
		catalog.Consul: st(21, 19, 23), catalog.SQLAtomic: st(854, 680, 900)}
	tests := []struct {
		name     string
		alone    map[string]bench.Stat
		want     Verdict
		says     []string // in the verdict's why
		notSays  []string
		noise    int
		broken   int
		lineSays string // in rankingLine(alone)
	}{
		{name: "the source's order, apart", alone: clean, want: Reproduced,
			says:     []string{"holds for the lock alone", "redis 90 (62–91) ≈ zookeeper 69 (62–70)"},
			lineSays: "redis 71 (69–73) > zookeeper 54 (52–55) ≈ etcd 52 (49–55) > mysql-unique 39 (38–40) > consul 21 (19–23)"},
		{name: "ZooKeeper and etcd in either order: not a pair of the source's", want: Reproduced,
			alone: map[string]bench.Stat{catalog.Redis: st(71, 69, 73), catalog.ZooKeeper: st(45, 44, 46), catalog.Etcd: st(60, 58, 62), catalog.MySQLUnique: st(39, 38, 40)}},
		{name: "ranges overlap: within noise", want: InKind, noise: 1,
			alone:    map[string]bench.Stat{catalog.Redis: st(71, 60, 73), catalog.ZooKeeper: st(58, 52, 61), catalog.Etcd: st(52, 49, 55), catalog.MySQLUnique: st(39, 38, 40)},
			says:     []string{"no pair breaks", "redis 71 (60–73) ≈ zookeeper 58 (52–61)"},
			lineSays: "redis 71 (60–73) ≈ zookeeper 58 (52–61)"},
		{name: "a touching range is within noise", want: InKind, noise: 1,
			alone: map[string]bench.Stat{catalog.Redis: st(71, 69, 73), catalog.ZooKeeper: st(54, 52, 55), catalog.Etcd: st(52, 49, 55), catalog.MySQLUnique: st(45, 40, 49)},
			says:  []string{"etcd 52 (49–55) ≈ mysql-unique 45 (40–49)"}},
		{name: "the database above etcd: that pair named", want: NotReproduced, broken: 1,
			alone:   map[string]bench.Stat{catalog.Redis: st(71, 69, 73), catalog.ZooKeeper: st(54, 52, 55), catalog.Etcd: st(30, 28, 33), catalog.MySQLUnique: st(39, 38, 40)},
			says:    []string{"the source's order breaks: etcd 30 (28–33) below mysql-unique 39 (38–40)"},
			notSays: []string{"redis 71 (69–73) below"}},
		{name: "a break and a tie: both said", want: NotReproduced, broken: 1, noise: 1,
			alone: map[string]bench.Stat{catalog.Redis: st(50, 48, 56), catalog.ZooKeeper: st(54, 52, 55), catalog.Etcd: st(60, 58, 62), catalog.MySQLUnique: st(39, 38, 40)},
			says:  []string{"redis 50 (48–56) below etcd 60 (58–62)", "within noise: redis 50 (48–56) ≈ zookeeper 54 (52–55)"}},
		{name: "one run: a range of one value", want: Reproduced,
			alone:    map[string]bench.Stat{catalog.Redis: st(71, 71, 71), catalog.ZooKeeper: st(54, 54, 54), catalog.Etcd: st(52, 52, 52), catalog.MySQLUnique: st(39, 39, 39)},
			lineSays: "redis 71 > zookeeper 54 > etcd 52 > mysql-unique 39"},
	}
	labels := []string{"loopback purchase", "2 ms purchase", "2 ms lock alone"}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			js := []orderJudgement{judgeOrder(clean), judgeOrder(noisy), judgeOrder(tt.alone)}
			last := js[2]
			if len(last.noise) != tt.noise || len(last.broken) != tt.broken {
				t.Errorf("lock alone: within noise %q, broken %q; want %d and %d", last.noise, last.broken, tt.noise, tt.broken)
			}
			v, why := rankingVerdict(labels, js)
			if v != tt.want {
				t.Errorf("verdict %s (%s), want %s", v, why, tt.want)
			}
			for _, s := range append(tt.says, "loopback purchase: the source's order holds", "2 ms purchase: the source's order holds within noise") {
				if !strings.Contains(why, s) {
					t.Errorf("why lacks %q:\n%s", s, why)
				}
			}
			for _, s := range tt.notSays {
				if strings.Contains(why, s) {
					t.Errorf("why says %q:\n%s", s, why)
				}
			}
			if line := rankingLine(tt.alone); tt.lineSays != "" && !strings.Contains(line, tt.lineSays) {
				t.Errorf("ranking %q, want it to contain %q", line, tt.lineSays)
			}
		})
	}
}

// TestLockFreeLead: the best strategy without a lock service against the
// best lock, and nothing when one side did not run (the lock alone).
func TestLockFreeLead(t *testing.T) {
	tests := []struct {
		ranges map[string]bench.Stat
		want   string
	}{
		{map[string]bench.Stat{catalog.SQLAtomic: st(854, 680, 900), catalog.MySQLForUpdate: st(102, 92, 110), catalog.Redis: st(51, 50, 54), catalog.Consul: st(16, 16, 18)},
			"sql-atomic 854 (680–900) is 16.7x the best lock, redis 51 (50–54)"},
		{map[string]bench.Stat{catalog.Redis: st(71, 69, 73)}, ""},
		{map[string]bench.Stat{catalog.SQLAtomic: st(854, 680, 900)}, ""},
	}
	for _, tt := range tests {
		if got := lockFreeLead(tt.ranges); got != tt.want {
			t.Errorf("lockFreeLead(%v) = %q, want %q", tt.ranges, got, tt.want)
		}
	}
}

// TestLimitsLine: each condition's line names what bounded its rows,
// grouped by the bound, and says nothing without CPU figures.
func TestLimitsLine(t *testing.T) {
	row := func(name, by string) bench.Summary {
		s := bench.Summary{Strategy: name}
		if by != "" {
			s.Limit = &bench.Limit{By: by}
		}
		return s
	}
	tests := []struct {
		name string
		sum  []bench.Summary
		want string
	}{
		{"grouped", []bench.Summary{row(catalog.SQLAtomic, bench.LimitLab), row(catalog.Redis, bench.LimitServer), row(catalog.Etcd, bench.LimitServer), row(catalog.MySQLForUpdate, bench.LimitDatabase)},
			"limited by the lock server: etcd, redis; the database: mysql-forupdate; the lab's CPU: sql-atomic"},
		{"no CPU figures", []bench.Summary{row(catalog.Redis, "")}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := limitsLine(tt.sum); got != tt.want {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}
