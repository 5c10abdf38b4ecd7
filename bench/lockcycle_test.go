package bench

import (
	"strings"
	"testing"

	"github.com/seckill-lab/seckill/bench/lockcheck"
)

// TestLockCycle: a run's lock cycle summarised from its holds, and the
// report's table and note that show it (only for runs with holds).
func TestLockCycle(t *testing.T) {
	ms := int64(1e6)
	c := newLockCycle(lockcheck.Cycle{
		Held:    []int64{9 * ms, 9 * ms, 10 * ms, 9 * ms},
		Handoff: []int64{3 * ms, 3 * ms, 70 * ms},
		Cycle:   []int64{12 * ms, 12 * ms, 80 * ms},
		Read:    []int64{2 * ms, 3 * ms, 3 * ms, 2 * ms},
		Write:   []int64{4 * ms, 4 * ms, 5 * ms, 4 * ms},
		Release: []int64{3 * ms, 2 * ms, 2 * ms, 3 * ms},
	})
	if c == nil || c.Holds != 4 || c.CycleMS.P50 != 12 || c.HeldMS.P50 != 9 || c.HandoffMS.P50 != 3 || c.HandoffMS.Max != 70 || c.HandoffMS.P90 != 70 {
		t.Fatalf("lock cycle %+v", c)
	}
	if c.ReadMS == nil || c.ReadMS.P50 != 3 || c.WriteMS.P50 != 4 || c.ReleaseMS.P50 != 3 {
		t.Fatalf("held's steps: read %+v write %+v release %+v", c.ReadMS, c.WriteMS, c.ReleaseMS)
	}
	if nc := newLockCycle(lockcheck.Cycle{Held: []int64{ms, ms}, Handoff: []int64{ms}, Cycle: []int64{2 * ms}}); nc == nil || nc.ReadMS != nil {
		t.Errorf("no hold with its read and commit seen: %+v, want no steps", nc)
	}
	if newLockCycle(lockcheck.Cycle{Held: []int64{ms}}) != nil {
		t.Error("one hold: want no lock cycle")
	}
	runs := []RunResult{{Strategy: "etcd", Repeat: 1, LockCycle: c}, {Strategy: "sql-atomic", Repeat: 1}}
	tab := lockCycleTable(runs)
	if len(tab.Rows) != 1 || tab.Rows[0][0] != "etcd #1" || tab.Rows[0][2] != "12.00" || tab.Rows[0][4] != "3.00" || tab.Rows[0][5] != "4.00" ||
		tab.Rows[0][6] != "3.00" || tab.Rows[0][8] != "70.00" {
		t.Errorf("table rows %v", tab.Rows)
	}
	v := buildView(&Report{Runs: runs})
	found := false
	for _, tb := range v.Tables {
		found = found || tb.Title == "Lock cycle"
	}
	if !found || !strings.Contains(strings.Join(v.Notes, " "), "handoff") {
		t.Errorf("the report has no lock cycle table or note: %d tables", len(v.Tables))
	}
}
