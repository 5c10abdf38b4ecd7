package cost

import (
	"fmt"
	"testing"
)

// TestClassify checks the statement classes, served first by statement and
// then from the cache, and that texts beyond the cache's bound are still
// classified.
func TestClassify(t *testing.T) {
	cases := []struct {
		query        string
		write, locks bool
	}{
		{"SELECT stock FROM goods WHERE id = ?", false, false},
		{"SELECT stock FROM goods WHERE id = ? FOR UPDATE", false, true},
		{"UPDATE goods SET stock = ? WHERE id = ?", true, true},
		{"BEGIN; UPDATE goods SET stock = stock - ? WHERE id = ?; INSERT INTO orders VALUES (?); COMMIT", true, false},
		{"BEGIN; SELECT stock FROM goods WHERE id = ? FOR UPDATE", false, true},
		{"SET STATEMENT max_statement_time=1 FOR SELECT 1 FOR UPDATE", false, true},
	}
	for round := range 2 {
		for _, tc := range cases {
			w, l := classify(tc.query)
			if w != tc.write || l != tc.locks {
				t.Errorf("round %d: classify(%q) = write %v locks %v, want %v %v", round, tc.query, w, l, tc.write, tc.locks)
			}
		}
	}
	for i := range maxKinds + 10 {
		q := fmt.Sprintf("UPDATE t%d SET x = ?", i)
		if w, l := classify(q); !w || !l {
			t.Fatalf("classify(%q) = %v %v, want a locking write", q, w, l)
		}
	}
	kinds.RLock()
	n := len(kinds.m)
	kinds.RUnlock()
	if n > maxKinds {
		t.Errorf("the cache holds %d texts, bound %d", n, maxKinds)
	}
}
