package stack

import (
	"strings"
	"testing"
)

func TestParseBackends(t *testing.T) {
	tests := []struct {
		in      string
		want    string
		wantErr string
	}{
		{"", "redis,etcd,zookeeper,mysql,consul", ""},
		{"mysql,redis", "redis,mysql", ""},
		{" MySQL , zookeeper ", "zookeeper,mysql", ""},
		{"redis,etcd", "", "mysql is always needed"},
		{"redis,mongo,mysql", "", `unknown backend "mongo"`},
	}
	for _, tc := range tests {
		got, err := ParseBackends(tc.in)
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("ParseBackends(%q) = %v, %v; want error containing %q", tc.in, got, err, tc.wantErr)
			}
			continue
		}
		if err != nil || joinBackends(got) != tc.want {
			t.Errorf("ParseBackends(%q) = %v, %v; want %s", tc.in, got, err, tc.want)
		}
	}
}
