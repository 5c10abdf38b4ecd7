package scenario

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	seckill "github.com/seckill-lab/seckill"
	"github.com/seckill-lab/seckill/stock/catalog"
)

// ClusterRun is one bench Job of a scenario's cluster form: the
// scenario's strategy under one protection, while the scenario's
// experiment (deploy/chaos/NAME.yaml) is applied.
type ClusterRun struct {
	Protection Protection
	Strategy   string
	// Job is the Job's name, Dir its kustomization (from the module's
	// root) and Report the file the runbook saves its report.json to.
	Job, Dir, Report string
	// Args are the flags of `seckill bench` after the fleet's (--target,
	// --instances-dns, --out).
	Args []string
}

// The span of a cluster run's load around its experiment: the runbook
// applies the experiment ClusterLead after the bench's pod is ready, and
// the load lasts at least ClusterLead + the experiment's duration +
// ClusterTail (the recovery).
const (
	ClusterLead = 30 * time.Second
	ClusterTail = 60 * time.Second
)

// ChaosDir is where the cluster runs' kustomizations are, from the
// module's root: ChaosDir/NAME/unfenced and ChaosDir/NAME/fenced.
const ChaosDir = "deploy/k8s/chaos"

// clusterProtections are the protections a cluster form compares, and the
// name of each one's Job and directory.
var clusterProtections = []struct {
	p    Protection
	name string
}{{ProtectNone, "unfenced"}, {ProtectFencing, "fenced"}}

// ChaosDuration is the duration an experiment declares (its spec's
// `duration:`), 0 for a one-shot one (a pod kill, the pause Job).
func ChaosDuration(experiment []byte) (time.Duration, error) {
	for _, l := range strings.Split(string(experiment), "\n") {
		if v, ok := strings.CutPrefix(l, "  duration: "); ok {
			d, err := time.ParseDuration(strings.Trim(strings.TrimSpace(v), `"`))
			if err != nil {
				return 0, fmt.Errorf("experiment duration %q: %w", v, err)
			}
			return d, nil
		}
	}
	return 0, nil
}

// ClusterRuns returns the bench Jobs of sc's cluster form: its first
// strategy (one strategy per run, so the fault hits the one it is about),
// unprotected and then fenced (fenced only for a lock with tokens, as Run
// does), each with sc's load at the same concurrency, work and lock
// timings, stretched to last the experiment's span (see ClusterLead); the
// stock covers every purchase, so the load runs to its end. An error when
// sc has no cluster form.
func (sc Scenario) ClusterRuns() ([]ClusterRun, error) {
	exp, ok := seckill.ChaosExperiment(sc.Name)
	if !ok {
		return nil, fmt.Errorf("scenario %s has no cluster form (deploy/chaos/%s.yaml)", sc.Name, sc.Name)
	}
	d, err := ChaosDuration(exp)
	if err != nil {
		return nil, fmt.Errorf("scenario %s: %w", sc.Name, err)
	}
	if len(sc.Strategies) == 0 {
		return nil, fmt.Errorf("scenario %s has no strategy", sc.Name)
	}
	strategy := sc.Strategies[0]
	info, ok := catalog.Lookup(strategy)
	if !ok {
		return nil, fmt.Errorf("scenario %s: unknown strategy %q", sc.Name, strategy)
	}
	load := sc.Load
	// A lock serializes the purchases of one goods: the load lasts at
	// least its requests times the work each does under the lock.
	requests := load.Requests
	if load.WorkDelay > 0 {
		span := ClusterLead + d + ClusterTail
		requests = max(requests, int(math.Ceil(float64(span)/float64(load.WorkDelay))))
	}
	var out []ClusterRun
	for _, cp := range clusterProtections {
		if cp.p == ProtectFencing && !info.Tokens {
			continue
		}
		c := load.config(cp.p)
		args := []string{"--strategies", strategy, "--goods", strconv.FormatInt(goodsBase(sc.Name), 10),
			"--stock", strconv.Itoa(requests), "--requests", strconv.Itoa(requests), "--concurrency", strconv.Itoa(load.Concurrency),
			"--work-delay", c.WorkDelay.String(), "--lock-ttl", c.LockTTL.String(), "--lock-wait", c.LockWait.String()}
		if c.NoWatchdog {
			args = append(args, "--no-watchdog")
		}
		if c.Fencing {
			args = append(args, "--fencing")
		}
		if c.NoLeaseCheck {
			args = append(args, "--no-lease-check")
		}
		// The load starts at once: no calibration, no warm-up.
		args = append(args, "--warmup", "0", "--calibrate-requests", "-1", "--experiment", sc.Name)
		if d > 0 {
			args = append(args, "--experiment-duration", d.String())
		}
		out = append(out, ClusterRun{Protection: cp.p, Strategy: strategy,
			Job: "seckill-chaos-" + sc.Name + "-" + cp.name, Dir: ChaosDir + "/" + sc.Name + "/" + cp.name,
			Report: sc.Name + "-" + cp.name + ".json", Args: args})
	}
	return out, nil
}

// ClusterCommands is the runbook of sc's cluster form in namespace ns, one
// command a line, for a lab of sc's topology that is up: for each run of
// ClusterRuns, start its Job, wait until its bench runs, apply the
// experiment ClusterLead later, follow the bench to its end, save the
// report, show the Job's status (Complete or Failed: the bench's exit
// status) and delete the experiment and the Job (a rerun applies the
// experiment afresh).
func (sc Scenario) ClusterCommands(ns string) ([]string, error) {
	runs, err := sc.ClusterRuns()
	if err != nil {
		return nil, err
	}
	exp := "deploy/chaos/" + sc.Name + ".yaml"
	var out []string
	for _, r := range runs {
		k := "kubectl -n " + ns + " "
		out = append(out,
			k+"apply -k "+r.Dir,
			k+"wait --for=jsonpath='{.status.ready}'=1 --timeout=10m job/"+r.Job,
			"sleep "+strconv.Itoa(int(ClusterLead.Seconds())),
			k+"apply -f "+exp,
			k+"logs -f job/"+r.Job+" -c bench",
			k+"logs job/"+r.Job+" -c report > "+r.Report,
			k+"get job "+r.Job,
			k+"delete -f "+exp,
			k+"delete -k "+r.Dir,
		)
	}
	return out, nil
}
