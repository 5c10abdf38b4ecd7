package bench

import (
	"errors"
	"strings"
	"testing"
)

func TestCheckReset(t *testing.T) {
	skipped := []ResetSkip{
		{Strategy: "redis", Server: "redis", Reason: "connection refused"},
		{Strategy: "redis-atomic", Server: "redis", Reason: "connection refused"},
		{Strategy: "etcd", Server: "etcd", Reason: "deadline exceeded"},
	}
	tests := []struct {
		name     string
		strategy string
		skipped  []ResetSkip
		wantErr  error
		want     []string
	}{
		{"nothing skipped", "redis", nil, nil, nil},
		{"other strategies skipped: one warning per server", "sql-atomic", skipped, nil,
			[]string{"reset skipped redis, redis-atomic (on redis: connection refused); sql-atomic does not use it",
				"reset skipped etcd (on etcd: deadline exceeded); sql-atomic does not use it"}},
		{"the strategy to run skipped", "redis-atomic", skipped, ErrResetSkipped, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := checkReset(tc.strategy, tc.skipped)
			if !errors.Is(err, tc.wantErr) {
				t.Fatalf("err = %v, want %v", err, tc.wantErr)
			}
			if tc.wantErr != nil {
				if !strings.Contains(err.Error(), tc.strategy) {
					t.Errorf("error %q does not name %s", err, tc.strategy)
				}
				return
			}
			if len(got) != len(tc.want) {
				t.Fatalf("warnings %q, want %d", got, len(tc.want))
			}
			for i := range got {
				if !strings.HasPrefix(got[i], tc.want[i]) {
					t.Errorf("warning %q, want prefix %q", got[i], tc.want[i])
				}
			}
		})
	}
}
