package stock

import (
	"encoding/json"
	"flag"
	"slices"
	"testing"
	"time"
)

// TestKnobTable: the one table of knobs gives the setting's JSON, String,
// Knobs and flags in the forms the wire, the status line and the CLI have
// always had, and every knob survives a round trip through each.
func TestKnobTable(t *testing.T) {
	c := Config{Name: "redis-owner", WorkDelay: time.Millisecond, LockTTL: 3 * time.Second, LockWait: 5 * time.Second,
		NoWatchdog: true, ReleasePause: 40 * time.Millisecond, Batch: 4, PerUserLimit: 2}
	b, err := json.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	const wantJSON = `{"name":"redis-owner","work_delay":"1ms","lock_ttl":"3s","lock_wait":"5s","fencing":false,"watchdog":false,"local_queue":true,"lease_check":true,"batch":4,"release_pause":"40ms","per_user_limit":2}`
	if string(b) != wantJSON {
		t.Errorf("JSON\n%s\nwant\n%s", b, wantJSON)
	}
	if b, _ := json.Marshal(InstanceConfig{Config: Config{Name: "sql-atomic"}, Instance: "inst-1"}); string(b) != `{"name":"sql-atomic","work_delay":"0s","lock_ttl":"10s","lock_wait":"`+DefaultLockWait.String()+`","fencing":false,"watchdog":true,"local_queue":true,"lease_check":true,"release_pause":"0s","instance":"inst-1"}` {
		t.Errorf("instance JSON %s", b)
	}
	var back Config
	if err := json.Unmarshal(b, &back); err != nil || back != c {
		t.Errorf("round trip: %+v, %v; want %+v", back, err, c)
	}
	if got, want := c.String(), "redis-owner work_delay=1ms lock_ttl=3s lock_wait=5s fencing=false watchdog=false local_queue=true lease_check=true batch=4 release_pause=40ms"; got != want {
		t.Errorf("String %q, want %q", got, want)
	}
	var names []string
	for _, k := range c.Knobs() {
		names = append(names, k.String())
	}
	want := []string{"work 1ms", "ttl 3s", "no watchdog", "batch 4", "release pause 40ms", "per-user limit 2"}
	if c.LockWait != DefaultLockWait {
		want = slices.Insert(want, 2, "wait 5s")
	}
	if !slices.Equal(names, want) {
		t.Errorf("Knobs %q, want %q", names, want)
	}
	fs := flag.NewFlagSet("t", flag.ContinueOnError)
	fc := BindKnobFlags(fs)
	fc.Name = c.Name
	if err := fs.Parse([]string{"--work-delay", "1ms", "--lock-ttl", "3s", "--lock-wait", "5s", "--no-watchdog", "--release-pause", "40ms", "--batch", "4", "--per-user-limit", "2"}); err != nil || *fc != c {
		t.Errorf("flags: %+v, %v; want %+v", *fc, err, c)
	}
	if got := ConfigFields(); len(got) != len(KnobFlags())+1 || got[0] != "name" {
		t.Errorf("ConfigFields %v", got)
	}
}
