package scenario

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	seckill "github.com/seckill-lab/seckill"
	"github.com/seckill-lab/seckill/stock/catalog"
)

// flagValue is the value of --name in args ("" when absent; "true" for a
// bool flag).
func flagValue(args []string, name string) string {
	i := slices.Index(args, "--"+name)
	if i < 0 {
		return ""
	}
	if i+1 < len(args) && !strings.HasPrefix(args[i+1], "--") {
		return args[i+1]
	}
	return "true"
}

// TestClusterRuns: each scenario with a cluster form has an unfenced run
// and, for a lock with tokens, a fenced one, of its first strategy only,
// with its load's lock timings, the experiment named, and enough requests
// to outlast the experiment's span.
func TestClusterRuns(t *testing.T) {
	for _, tc := range []struct {
		name     string
		strategy string
		fenced   bool
		duration time.Duration
	}{
		{"pause-holder", catalog.Redis, true, 0},
		{"slow-db", catalog.Redis, true, 3 * time.Second},
		{"partition-holder", catalog.Redis, true, 2500 * time.Millisecond},
		{"zk-session", catalog.ZooKeeper, true, 8 * time.Second},
		{"redlock-clock", catalog.Redlock, false, 30 * time.Second},
		{"redlock-restart", catalog.Redlock, false, 0},
		{"majority-loss", catalog.Etcd, true, 4 * time.Second},
		{"instance-crash", catalog.Redis, true, 0},
		{"consul-leader", catalog.Consul, true, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sc, err := Find(tc.name)
			if err != nil {
				t.Fatal(err)
			}
			exp, _ := seckill.ChaosExperiment(tc.name)
			if d, err := ChaosDuration(exp); err != nil || d != tc.duration {
				t.Errorf("experiment duration %v (%v), want %v", d, err, tc.duration)
			}
			runs, err := sc.ClusterRuns()
			if err != nil {
				t.Fatal(err)
			}
			want := []Protection{ProtectNone}
			if tc.fenced {
				want = append(want, ProtectFencing)
			}
			if len(runs) != len(want) {
				t.Fatalf("%d runs, want %d", len(runs), len(want))
			}
			for i, r := range runs {
				if r.Protection != want[i] || r.Strategy != tc.strategy || flagValue(r.Args, "strategies") != tc.strategy {
					t.Errorf("run %d: %s %s %v", i, r.Protection, r.Strategy, r.Args)
				}
				if got := flagValue(r.Args, "fencing") == "true"; got != (r.Protection == ProtectFencing) {
					t.Errorf("%s: --fencing %v", r.Job, got)
				}
				if flagValue(r.Args, "no-lease-check") != "true" || flagValue(r.Args, "experiment") != tc.name {
					t.Errorf("%s: args %v", r.Job, r.Args)
				}
				if (flagValue(r.Args, "no-watchdog") == "true") != sc.Load.NoWatchdog || flagValue(r.Args, "lock-ttl") != sc.Load.LockTTL.String() ||
					flagValue(r.Args, "work-delay") != sc.Load.WorkDelay.String() {
					t.Errorf("%s: the load is not the scenario's: %v", r.Job, r.Args)
				}
				if d := flagValue(r.Args, "experiment-duration"); (d != "") != (tc.duration > 0) {
					t.Errorf("%s: --experiment-duration %q", r.Job, d)
				}
				span := ClusterLead + tc.duration + ClusterTail
				n, stock := flagValue(r.Args, "requests"), flagValue(r.Args, "stock")
				var requests int
				if _, err := fmt.Sscan(n, &requests); err != nil || time.Duration(requests)*sc.Load.WorkDelay < span || stock != n {
					t.Errorf("%s: %s requests of %s stock, work %s: under the span %s", r.Job, n, stock, sc.Load.WorkDelay, span)
				}
				if !strings.HasPrefix(r.Dir, ChaosDir+"/"+tc.name+"/") || !strings.HasPrefix(r.Job, "seckill-chaos-"+tc.name+"-") || len(r.Job) > 52 {
					t.Errorf("job %s in %s", r.Job, r.Dir)
				}
			}
		})
	}
	if _, err := (Scenario{Name: "etcd-lease", Strategies: []string{catalog.Etcd}}).ClusterRuns(); err == nil {
		t.Error("a scenario without a cluster form has cluster runs")
	}
}

// TestClusterCommands: the runbook applies each run's Job, waits for its
// bench, applies the experiment, reads the bench and its report and cleans
// up, the unfenced run first.
func TestClusterCommands(t *testing.T) {
	sc, err := Find("slow-db")
	if err != nil {
		t.Fatal(err)
	}
	cmds, err := sc.ClusterCommands("lab-1")
	if err != nil {
		t.Fatal(err)
	}
	all := strings.Join(cmds, "\n")
	for _, want := range []string{
		"kubectl -n lab-1 apply -k deploy/k8s/chaos/slow-db/unfenced\n",
		"kubectl -n lab-1 wait --for=jsonpath='{.status.ready}'=1 --timeout=10m job/seckill-chaos-slow-db-unfenced\nsleep 30\nkubectl -n lab-1 apply -f deploy/chaos/slow-db.yaml\n",
		"kubectl -n lab-1 logs -f job/seckill-chaos-slow-db-unfenced -c bench\n",
		"kubectl -n lab-1 logs job/seckill-chaos-slow-db-unfenced -c report > slow-db-unfenced.json\n",
		"kubectl -n lab-1 delete -f deploy/chaos/slow-db.yaml\nkubectl -n lab-1 delete -k deploy/k8s/chaos/slow-db/unfenced\nkubectl -n lab-1 apply -k deploy/k8s/chaos/slow-db/fenced\n",
		"kubectl -n lab-1 logs job/seckill-chaos-slow-db-fenced -c report > slow-db-fenced.json\n",
	} {
		if !strings.Contains(all, want) {
			t.Errorf("no %q in\n%s", want, all)
		}
	}
}
