package stack

import "testing"

// TestDashboardPort: the dashboard takes B+88 when asked for, in either
// topology, a port no other component uses.
func TestDashboardPort(t *testing.T) {
	const base = 20900
	for _, tc := range []struct {
		topology  string
		dashboard bool
		want      bool
	}{
		{TopologySingle, true, true},
		{TopologyHA, true, true},
		{TopologySingle, false, false},
	} {
		t.Run(tc.topology, func(t *testing.T) {
			seen := map[int]string{}
			found := false
			for _, p := range stackPorts(tc.topology, base, 3, true, tc.dashboard) {
				if prev, dup := seen[p.port]; dup {
					t.Errorf("port %d used by %s and %s", p.port, prev, p.name)
				}
				seen[p.port] = p.name
				found = found || (p.port == base+88 && p.name == DashboardName)
			}
			if found != tc.want {
				t.Errorf("dashboard on B+88: %v, want %v", found, tc.want)
			}
		})
	}
	if got := (&State{BasePort: base}).DashboardAddr(); got != "127.0.0.1:20988" {
		t.Errorf("DashboardAddr %s, want 127.0.0.1:20988", got)
	}
}
