package bench

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/seckill-lab/seckill/bench/fleet"
)

// TestEnvironmentCluster: a bench on Kubernetes states where it ran, in
// the conditions line and in report.json (environment.cluster).
func TestEnvironmentCluster(t *testing.T) {
	c := &fleet.Cluster{Namespace: "lab-1", Pod: "seckill-bench-x", Node: "node-a", PodsError: "no API server"}
	e := Environment{Hostname: "seckill-bench-x", Cluster: c}
	if !strings.Contains(e.Conditions(), "on Kubernetes, namespace lab-1, bench on node node-a") {
		t.Errorf("conditions %q", e.Conditions())
	}
	b, err := json.Marshal(e)
	if err != nil || !strings.Contains(string(b), `"cluster":{"namespace":"lab-1"`) {
		t.Errorf("report.json environment %s: %v", b, err)
	}
}
