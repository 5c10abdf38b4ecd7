package stock

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/seckill-lab/seckill/stock/catalog"
)

// TestRegistryNames pins the names users type: a rename is a breaking
// change of the API, the CLI and every report.
func TestRegistryNames(t *testing.T) {
	want := []string{"none", "mutex", "mutex-tx", "mutex-prototype", "redis-spin", "redis-ttl", "redis-owner", "redis", "redlock",
		"zookeeper", "zookeeper-herd", "etcd", "consul", "consul-nodelay",
		"mysql-unique", "mysql-forupdate", "mysql-optimistic", "sql-atomic", "redis-atomic", "redis-stream"}
	if got := catalog.StrategyNames(); !slices.Equal(got, want) {
		t.Fatalf("StrategyNames() = %v, want %v", got, want)
	}
}

// TestRegistryConsistent checks what each entry claims against its kind.
func TestRegistryConsistent(t *testing.T) {
	seen := map[string]bool{}
	for _, s := range catalog.Strategies() {
		t.Run(s.Name, func(t *testing.T) {
			if seen[s.Name] {
				t.Fatal("duplicate name")
			}
			seen[s.Name] = true
			if s.Summary == "" || s.Source == "" {
				t.Error("summary and source passage are required")
			}
			if (s.Tokens || s.Renews || s.ReleaseBeforeCommit || s.ReleasePause) && s.Kind != catalog.KindLocker {
				t.Errorf("tokens, renewal or lock placement on a %s strategy", s.Kind)
			}
			if !s.Flawed && s.Breaks != catalog.BreaksNever {
				t.Errorf("a correct strategy that breaks (%v)", s.Breaks)
			}
			got, ok := catalog.Lookup(s.Name)
			if !ok || got.Name != s.Name {
				t.Errorf("Lookup(%q) = %v, %v", s.Name, got.Name, ok)
			}
		})
	}
	if _, ok := catalog.Lookup("magic"); ok {
		t.Error("Lookup of an unknown name succeeded")
	}
}

func TestExpectedCorrect(t *testing.T) {
	type setting struct {
		instances int
		c         Config
	}
	outlasts := Config{WorkDelay: 200 * time.Millisecond, LockTTL: 100 * time.Millisecond}
	one := setting{1, Config{}}
	three := setting{3, Config{}}
	staleCfg := outlasts
	staleCfg.NoWatchdog = true
	stale := setting{3, staleCfg}
	staleCfg.Fencing = true
	staleFenced := setting{3, staleCfg}
	cases := []struct {
		name string
		st   setting
		want bool
	}{
		{catalog.None, one, false},
		{catalog.MutexTx, one, false},
		{catalog.Mutex, one, true},
		{catalog.Mutex, three, false},
		{catalog.MutexPrototype, one, false}, // a new mutex per request
		{catalog.RedisOwner, three, true},
		{catalog.RedisOwner, setting{3, Config{WorkDelay: 20 * time.Millisecond, LockTTL: 100 * time.Millisecond, ReleasePause: 90 * time.Millisecond}}, false}, // work + release pause >= TTL
		{catalog.ZooKeeperHerd, stale, true}, // slow, not unsafe
		{catalog.RedisTTL, three, true},
		{catalog.RedisTTL, setting{3, outlasts}, false},
		{catalog.RedisSpin, setting{3, outlasts}, true},
		{catalog.Redis, setting{3, outlasts}, true}, // the watchdog renews
		{catalog.Redis, stale, false},
		{catalog.Redis, staleFenced, true},
		{catalog.MySQLUnique, staleFenced, true},
		{catalog.Redlock, stale, false},
		{catalog.Redlock, staleFenced, false}, // no tokens to fence with
		{catalog.Etcd, stale, true},           // keeps its session alive on its own
		{catalog.SQLAtomic, three, true},
		{catalog.RedisAtomic, three, true},
	}
	for _, tc := range cases {
		s, _ := catalog.Lookup(tc.name)
		if got := ExpectedCorrect(s, tc.st.instances, tc.st.c); got != tc.want {
			t.Errorf("%s under %+v: ExpectedCorrect = %v, want %v", tc.name, tc.st, got, tc.want)
		}
	}
}

// TestREADMETable: the README's strategy table is the registry's, so the
// two cannot drift. Regenerate with `bin/seckill strategies --markdown`.
func TestREADMETable(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "docs", "strategies.md"))
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	begin := strings.Index(s, "<!-- strategies:begin")
	end := strings.Index(s, "<!-- strategies:end -->")
	if begin < 0 || end < begin {
		t.Fatal("docs/strategies.md has no <!-- strategies:begin ... --> / <!-- strategies:end --> section")
	}
	got := s[strings.Index(s[begin:], "\n")+begin+1 : end]
	if got != catalog.MarkdownTable() {
		t.Fatalf("docs/strategies.md's strategy table differs from the registry; regenerate it with `bin/seckill strategies --markdown`.\nREADME:\n%s\nregistry:\n%s", got, catalog.MarkdownTable())
	}
}

// TestConfigWire: a setting survives its wire form (Config → JSON →
// Config, and through InstanceConfig, GET's answer), and "instance", which
// a GET answers with, is not a field a PUT takes.
func TestConfigWire(t *testing.T) {
	for _, name := range catalog.StrategyNames() {
		c := Config{Name: name}
		c.LockWait, c.LockTTL = 1500*time.Millisecond, 3*time.Second
		c.NoLocalQueue = !c.NoLocalQueue
		b, err := json.Marshal(c)
		if err != nil {
			t.Fatal(err)
		}
		var back Config
		if err := json.Unmarshal(b, &back); err != nil || back != c {
			t.Errorf("%s: %s decodes to %+v (%v), want %+v", name, b, back, err, c)
		}
		b, _ = json.Marshal(InstanceConfig{Config: c, Instance: "inst-1"})
		back = Config{}
		if err := json.Unmarshal(b, &back); err != nil || back != c {
			t.Errorf("%s: wire %s decodes to %+v (%v)", name, b, back, err)
		}
		var got InstanceConfig
		if err := json.Unmarshal(b, &got); err != nil || got.Config != c || got.Instance != "inst-1" {
			t.Errorf("%s: the wire form read back (%v) is not the same setting: %s vs %s", name, err, got, c)
		}
		def, _ := json.Marshal(Config{Name: name})
		if want := `"lock_ttl":"10s","lock_wait":"5s","fencing":false,"watchdog":true,"local_queue":true,"lease_check":true`; !strings.Contains(string(def), want) {
			t.Errorf("%s: the zero setting writes %s, want the defaults %s", name, def, want)
		}
	}
	if slices.Contains(ConfigFields(), "instance") {
		t.Errorf("ConfigFields %v: a PUT must not take instance", ConfigFields())
	}
}

// TestOwnDeductions: the strategies that bring their own protection
// (KindStore, KindLockFree) are exactly those with an ownDeduction; every
// other one runs the read-modify-write (unprotected or under a lock).
func TestOwnDeductions(t *testing.T) {
	for _, st := range catalog.Strategies() {
		own := ownDeduction[st.Name] != nil
		if want := st.Kind == catalog.KindStore || st.Kind == catalog.KindLockFree; own != want {
			t.Errorf("%s (kind %s): has an own deduction = %v, want %v", st.Name, st.Kind, own, want)
		}
	}
	for name := range ownDeduction {
		if _, ok := catalog.Lookup(name); !ok {
			t.Errorf("ownDeduction names %q, which is not a registered strategy", name)
		}
	}
}
