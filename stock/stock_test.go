package stock

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/seckill-lab/seckill/stock/catalog"
)

func TestNewAudit(t *testing.T) {
	cases := []struct {
		name                        string
		initial, stock, sold        int64
		wantOversold, wantLostUpdts int64
	}{
		{"exact", 10, 0, 10, 0, 0},
		{"partial", 10, 4, 6, 0, 0},
		{"oversold with lost updates", 10, 0, 14, 4, 4},
		{"lost updates, stock left", 10, 5, 9, 0, 4},
		{"oversold, negative stock", 10, -2, 12, 2, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			a := NewAudit(1, tc.initial, tc.stock, tc.sold, tc.sold, nil)
			if a.Oversold != tc.wantOversold || a.LostUpdates != tc.wantLostUpdts || a.PerInstance == nil {
				t.Fatalf("got oversold %d lost %d, want %d %d", a.Oversold, a.LostUpdates, tc.wantOversold, tc.wantLostUpdts)
			}
		})
	}
}

func TestConfigJSONAndValidate(t *testing.T) {
	cases := []struct {
		in      string
		wantErr string
		want    Config
	}{
		{`{"name":"redis"}`, "", Config{Name: catalog.Redis}},
		{`{"name":"etcd","work_delay":"250ms","lock_ttl":"2s","lock_wait":"1s","fencing":true}`, "", Config{Name: catalog.Etcd, WorkDelay: 250 * time.Millisecond, LockTTL: 2 * time.Second, LockWait: time.Second, Fencing: true}},
		{`{"name":"mysql-unique","watchdog":false,"fencing":true}`, "", Config{Name: catalog.MySQLUnique, Fencing: true, NoWatchdog: true}},
		{`{"name":"etcd","watchdog":false}`, "watchdog can be turned off only", Config{}},
		{`{"name":"redis-ttl","watchdog":false}`, "watchdog can be turned off only", Config{}},
		{`{"name":"magic"}`, "unknown strategy", Config{}},
		{`{"name":"redis","lock_ttl":"1ms"}`, "lock_ttl", Config{}},
		{`{"name":"redis","lock_wait":"0s"}`, "lock_wait", Config{}},
		{`{"name":"redis","work_delay":"-1s"}`, "work_delay", Config{}},
		{`{"name":"redlock","fencing":true}`, "fencing", Config{}},
		{`{"name":"redis","lock_ttl":"ten"}`, "not a Go duration", Config{}},
		{`{"name":"redis-owner","release_pause":"300ms","lock_ttl":"100ms"}`, "", Config{Name: catalog.RedisOwner, LockTTL: 100 * time.Millisecond, ReleasePause: 300 * time.Millisecond}},
		{`{"name":"redis","release_pause":"300ms"}`, "release_pause applies only to redis-owner", Config{}},
		{`{"name":"redis-owner","release_pause":"5s"}`, "release_pause 5s out of range", Config{}},
		{`{"name":"redis-owner","release_pause":"-1ms"}`, "release_pause -1ms out of range", Config{}},
		{`{"name":"redis-owner","release_pause":"soon"}`, "release_pause: \"soon\" is not a Go duration", Config{}},
		{`{"name":"redis","batch":16}`, "", Config{Name: catalog.Redis, Batch: 16}},
		{`{"name":"sql-atomic","batch":1}`, "", Config{Name: catalog.SQLAtomic, Batch: 1}},
		{`{"name":"sql-atomic","batch":4}`, "batch applies only to", Config{}},
		{`{"name":"mutex-tx","batch":2}`, "batch applies only to", Config{}},
		{`{"name":"redis","batch":257}`, "batch 257 out of range", Config{}},
		{`{"name":"redis","batch":-1}`, "out of range", Config{}},
		{`{"name":"redis","batch":"many"}`, "cannot unmarshal", Config{}},
	}
	for _, tc := range cases {
		t.Run(tc.in, func(t *testing.T) {
			var c Config
			err := json.Unmarshal([]byte(tc.in), &c)
			if err == nil {
				err = c.Validate()
			}
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err %v, want one mentioning %q", err, tc.wantErr)
				}
				return
			}
			if err != nil || c != tc.want {
				t.Fatalf("got %+v, %v; want %+v", c, err, tc.want)
			}
			back, _ := json.Marshal(c)
			var again Config
			if err := json.Unmarshal(back, &again); err != nil || !again.Equal(c) {
				t.Fatalf("round trip %s -> %+v (%v)", back, again, err)
			}
		})
	}
	// The 18 of STRATEGIES.md that run, consul-nodelay (the consul lock
	// with lock-delay 0) and redis-stream (the asynchronous orders of lesson 28).
	if len(catalog.StrategyNames()) != 20 {
		t.Fatalf("catalogue has %d strategies, want 20", len(catalog.StrategyNames()))
	}
}
