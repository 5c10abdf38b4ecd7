package cluster

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8slabels "k8s.io/apimachinery/pkg/labels"

	"github.com/seckill-lab/seckill/internal/config"
	"github.com/seckill-lab/seckill/internal/server"
	"github.com/seckill-lab/seckill/internal/testenv"
)

// TestCommittedIsRendered: deploy/k8s is exactly what Render writes (run
// `go generate ./internal/cluster` after changing the lab's description).
func TestCommittedIsRendered(t *testing.T) {
	want, err := Render()
	if err != nil {
		t.Fatal(err)
	}
	got, err := committed()
	if err != nil {
		t.Fatal(err)
	}
	for p, b := range want {
		if g, ok := got[p]; !ok {
			t.Errorf("deploy/k8s/%s missing: run go generate ./internal/cluster", p)
		} else if !bytes.Equal(g, b) {
			t.Errorf("deploy/k8s/%s differs from what internal/cluster renders: run go generate ./internal/cluster", p)
		}
	}
	for p := range got {
		if _, ok := want[p]; !ok {
			t.Errorf("deploy/k8s/%s is not rendered: remove it or render it", p)
		}
	}
}

// overlay is the kustomization that runs topology at durability d.
func overlay(topology, d string) (dir string, extra map[string]string) {
	if d == server.DurabilityDefault {
		return topology, nil
	}
	dir = "test-" + topology + "-" + d
	return dir, map[string]string{dir + "/kustomization.yaml": "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n- ../" + topology +
		"\ncomponents:\n- ../durability/" + d + "\n"}
}

// TestOverlays builds every overlay at every durability level with
// kustomize, decodes each object strictly and checks it against the lab's
// description.
func TestOverlays(t *testing.T) {
	files, err := committed()
	if err != nil {
		t.Fatal(err)
	}
	for _, topology := range Topologies {
		for _, d := range server.Durabilities() {
			t.Run(topology+"/"+d, func(t *testing.T) {
				dir, extra := overlay(topology, d)
				o := buildObjects(t, files, dir, extra)
				if err := crossCheck(o, topology, d); err != nil {
					t.Fatal(err)
				}
			})
		}
	}
}

// TestHAOverlay: what the issue asks of the ha overlay, by count.
func TestHAOverlay(t *testing.T) {
	files, err := committed()
	if err != nil {
		t.Fatal(err)
	}
	o := buildObjects(t, files, "ha", nil)
	for name, want := range map[string]int32{"etcd": 3, "zookeeper": 3, "consul": 3, "redis": 5, "sentinel": 3, "redis-primary": 1, "redis-replica": 1, "mariadb": 1} {
		sts, ok := o.statefulSets[name]
		if !ok || *sts.Spec.Replicas != want {
			t.Errorf("StatefulSet %s: want %d replicas", name, want)
			continue
		}
		if len(sts.Spec.VolumeClaimTemplates) == 0 || sts.Spec.Template.Spec.Containers[0].ReadinessProbe == nil {
			t.Errorf("StatefulSet %s: no PVC or no readiness probe", name)
		}
	}
	for name, want := range map[string]int32{InstanceApp: Instances, "nginx": 1} {
		if d, ok := o.deployments[name]; !ok || *d.Spec.Replicas != want {
			t.Errorf("Deployment %s: want %d replicas", name, want)
		}
	}
	for _, name := range []string{"etcd", "zookeeper", "consul", "sentinel", "redis"} {
		if _, ok := o.pdbs[name]; !ok {
			t.Errorf("no PodDisruptionBudget for %s", name)
		}
	}
	if len(o.policies) != 2 {
		t.Errorf("%d NetworkPolicies, want 2", len(o.policies))
	}
	if s := o.secrets[AdminSecret]; s == nil || len(s.Data[config.EnvAdminToken]) == 0 {
		t.Errorf("no generated admin Secret")
	}
}

// TestBenchJob: the Job runs `seckill bench` against the in-cluster nginx
// and the instances' headless Service, both in the overlay.
func TestBenchJob(t *testing.T) {
	files, err := committed()
	if err != nil {
		t.Fatal(err)
	}
	o := buildObjects(t, files, "test-bench", map[string]string{"test-bench/kustomization.yaml": "resources:\n- ../single\n- ../bench\n"})
	if err := checkBenchJob(o, "seckill-bench"); err != nil {
		t.Error(err)
	}
}

// checkBenchJob checks Job name of build o as a bench Job: the bench
// against the in-cluster nginx and the instances' headless Service, with
// the admin token and the downward-API variables, in a pod the instances'
// NetworkPolicy admits; the bench the Job's only regular container (its
// exit status is the Job's, no retry); the report printer a native sidecar
// (an init container that restarts Always), which Kubernetes stops once
// the bench ends; the finished Job deleted after BenchTTL.
func checkBenchJob(o *objects, name string) error {
	job, ok := o.jobs[name]
	if !ok {
		return fmt.Errorf("no Job %s", name)
	}
	var errs []error
	spec := job.Spec.Template.Spec
	if len(spec.Containers) != 1 || spec.Containers[0].Name != "bench" {
		return fmt.Errorf("%s: containers %d: the bench must be the Job's only regular container", name, len(spec.Containers))
	}
	c := spec.Containers[0]
	args := strings.Join(c.Args, " ")
	if !strings.HasPrefix(args, "bench --target http://nginx ") || !strings.Contains(args, "--instances-dns "+InstancesHL+":8080") {
		errs = append(errs, fmt.Errorf("bench args %q", args))
	}
	if svc, ok := o.services["nginx"]; !ok || svc.Spec.Ports[0].Port != NginxServicePort {
		errs = append(errs, errors.New("no Service nginx on port 80"))
	}
	if _, ok := o.services[InstancesHL]; !ok {
		errs = append(errs, fmt.Errorf("no Service %s", InstancesHL))
	}
	env, err := envOf(o, c)
	if err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	for _, k := range []string{config.EnvAdminToken, EnvNodeName, EnvPodName, EnvPodNamespace} {
		if _, ok := env[k]; !ok {
			errs = append(errs, fmt.Errorf("bench: no %s", k))
		}
	}
	if job.Spec.Template.Labels[LabelRole] != RoleBench {
		errs = append(errs, errors.New("the bench's pods do not carry the role the instances' NetworkPolicy admits"))
	}
	if job.Spec.BackoffLimit == nil || *job.Spec.BackoffLimit != 0 {
		errs = append(errs, errors.New("the bench is retried: its exit status is not the Job's"))
	}
	if job.Spec.TTLSecondsAfterFinished == nil || *job.Spec.TTLSecondsAfterFinished != BenchTTL {
		errs = append(errs, fmt.Errorf("ttlSecondsAfterFinished %v, want %d", job.Spec.TTLSecondsAfterFinished, BenchTTL))
	}
	if len(spec.InitContainers) != 1 || spec.InitContainers[0].Name != "report" ||
		spec.InitContainers[0].RestartPolicy == nil || *spec.InitContainers[0].RestartPolicy != corev1.ContainerRestartPolicyAlways {
		errs = append(errs, errors.New("the report printer is not a native sidecar (init container, restartPolicy Always)"))
	}
	for _, c := range append(spec.InitContainers, spec.Containers...) {
		if cmd := strings.Join(append(c.Command, c.Args...), " "); strings.Contains(cmd, "sleep 3600") {
			errs = append(errs, fmt.Errorf("container %s sleeps an hour: %q", c.Name, cmd))
		}
	}
	if sa := spec.ServiceAccountName; sa != name || o.serviceAccounts[sa] == nil {
		errs = append(errs, fmt.Errorf("service account %q is not the Job's own", sa))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	return nil
}

// clone deep-copies docs.
func clone(t *testing.T, docs []doc) []doc {
	b, err := json.Marshal(docs)
	if err != nil {
		t.Fatal(err)
	}
	var out []doc
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

// find returns the object of kind and name in docs.
func find(docs []doc, kind, name string) doc {
	for _, d := range docs {
		if d["kind"] == kind && d["metadata"].(map[string]any)["name"] == name {
			return d
		}
	}
	return nil
}

func container(d doc) map[string]any {
	return d["spec"].(map[string]any)["template"].(map[string]any)["spec"].(map[string]any)["containers"].([]any)[0].(map[string]any)
}

// TestValidationCatches mutates a copy of the built single overlay: each
// mistake must fail the strict decoding or the cross-check.
func TestValidationCatches(t *testing.T) {
	files, err := committed()
	if err != nil {
		t.Fatal(err)
	}
	docs, err := build(files, "single", nil)
	if err != nil {
		t.Fatal(err)
	}
	serversCM := func(docs []doc) map[string]any {
		for _, d := range docs {
			if d["kind"] == "ConfigMap" && strings.HasPrefix(d["metadata"].(map[string]any)["name"].(string), ServersConfig) {
				return d["data"].(map[string]any)
			}
		}
		t.Fatal("no servers ConfigMap")
		return nil
	}
	for _, tc := range []struct {
		name   string
		mutate func(docs []doc) []doc
		want   string
	}{
		{"unknown field in a container", func(docs []doc) []doc {
			container(find(docs, "Deployment", InstanceApp))["imagePullPolicyy"] = "Always"
			return docs
		}, "unknown field"},
		{"unknown field at the top", func(docs []doc) []doc {
			find(docs, "StatefulSet", "etcd")["specs"] = map[string]any{}
			return docs
		}, "unknown field"},
		{"wrong type", func(docs []doc) []doc {
			find(docs, "StatefulSet", "redis")["spec"].(map[string]any)["replicas"] = "five"
			return docs
		}, "replicas"},
		{"instances lose a server variable", func(docs []doc) []doc {
			delete(serversCM(docs), testenv.EtcdEndpoints)
			return docs
		}, testenv.EtcdEndpoints},
		{"instances lose their own variable", func(docs []doc) []doc {
			c := container(find(docs, "Deployment", InstanceApp))
			env := c["env"].([]any)
			c["env"] = slices.DeleteFunc(env, func(e any) bool { return e.(map[string]any)["name"] == config.EnvMaxQty })
			return docs
		}, config.EnvMaxQty},
		{"a server missing in the cluster", func(docs []doc) []doc {
			return slices.DeleteFunc(docs, func(d doc) bool {
				return d["kind"] == "StatefulSet" && d["metadata"].(map[string]any)["name"] == "consul"
			})
		}, "runs 1 consul"},
		{"one Redlock node short", func(docs []doc) []doc {
			find(docs, "StatefulSet", "redis")["spec"].(map[string]any)["replicas"] = 4
			return docs
		}, "redis-4.redis"},
		{"a wrong port", func(docs []doc) []doc {
			serversCM(docs)[testenv.ZKServers] = "zookeeper-0.zookeeper:2182"
			return docs
		}, "no port 2182"},
		{"a wrong service name", func(docs []doc) []doc {
			serversCM(docs)[testenv.ConsulAddrs] = "consul-0.consul-servers:8500"
			return docs
		}, "no Service consul-servers"},
		{"an unpinned image", func(docs []doc) []doc {
			container(find(docs, "Deployment", "nginx"))["image"] = "nginx:latest"
			return docs
		}, "not pinned"},
		{"another version than the table's", func(docs []doc) []doc {
			container(find(docs, "StatefulSet", "mariadb"))["image"] = "mariadb:11.4"
			return docs
		}, "the table's is " + server.MariaDB.Image},
		{"fsync lost where the table says it fsyncs", func(docs []doc) []doc {
			c := container(find(docs, "StatefulSet", "mariadb"))
			c["args"] = []any{"--innodb-flush-log-at-trx-commit=2"}
			return docs
		}, "the table says it fsyncs"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mutated := tc.mutate(clone(t, docs))
			o, err := decodeStrict(mutated)
			if err == nil {
				err = crossCheck(o, "single", server.DurabilityDefault)
			}
			if err == nil {
				t.Fatalf("no error, want one naming %q", tc.want)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v\nwant one naming %q", err, tc.want)
			}
		})
	}
	// The unmutated copy passes: the mutations are what fails.
	o, err := decodeStrict(clone(t, docs))
	if err == nil {
		err = crossCheck(o, "single", server.DurabilityDefault)
	}
	if err != nil {
		t.Fatal(err)
	}
}

// TestRenderNeedsEveryServer: a local component kind without a cluster
// workload fails the rendering (the table grows a server, the cluster must
// follow).
func TestRenderNeedsEveryServer(t *testing.T) {
	saved := workloads
	defer func() { workloads = saved }()
	workloads = slices.DeleteFunc(slices.Clone(saved), func(w *workload) bool { return w.kind == server.KindSentinel })
	if _, err := Sets("ha"); err == nil || !strings.Contains(err.Error(), "no cluster workload") {
		t.Fatalf("Sets(ha) without a Sentinel workload: %v", err)
	}
	if _, err := Render(); err == nil {
		t.Fatal("Render without a Sentinel workload: no error")
	}
}

// TestServerEnv: the instances' variables per topology, each server's.
func TestServerEnv(t *testing.T) {
	for _, tc := range []struct {
		topology string
		want     map[string]string
	}{
		{"single", map[string]string{testenv.EtcdEndpoints: "etcd-0.etcd:2379", config.EnvSentinels: "",
			config.EnvMySQLDSN: server.MySQLDSN("mariadb-0.mariadb:3306", server.DatabaseName)}},
		{"ha", map[string]string{testenv.EtcdEndpoints: "etcd-0.etcd:2379,etcd-1.etcd:2379,etcd-2.etcd:2379",
			config.EnvSentinels:  "sentinel-0.sentinel:26379,sentinel-1.sentinel:26379,sentinel-2.sentinel:26379",
			testenv.ZKServers:    "zookeeper-0.zookeeper:2181,zookeeper-1.zookeeper:2181,zookeeper-2.zookeeper:2181",
			testenv.ConsulAddrs:  "consul-0.consul:8500,consul-1.consul:8500,consul-2.consul:8500",
			config.EnvRedisAddrs: "redis-0.redis:6379,redis-1.redis:6379,redis-2.redis:6379,redis-3.redis:6379,redis-4.redis:6379"}},
	} {
		env, err := ServerEnv(tc.topology)
		if err != nil {
			t.Fatal(err)
		}
		got := map[string]string{}
		for _, kv := range env {
			got[kv[0]] = kv[1]
		}
		for k, v := range tc.want {
			if got[k] != v {
				t.Errorf("%s: %s=%q, want %q", tc.topology, k, got[k], v)
			}
		}
		if fmt.Sprint(len(got)) != fmt.Sprint(len(config.ServerVars())) {
			t.Errorf("%s: %d server variables, config.ServerVars has %d", tc.topology, len(got), len(config.ServerVars()))
		}
	}
}

// TestTableImages: every server of the table names a pinned image.
func TestTableImages(t *testing.T) {
	for _, sp := range server.All {
		if sp.Image == "" {
			t.Errorf("a server of position %d has no Image", sp.Position)
			continue
		}
		if err := imagePinned(sp.Image); err != nil {
			t.Error(err)
		}
	}
}

// TestEtcdDurability: at every level etcd keeps its data on its PVC (a
// replaced member comes back with it and rejoins); at none it runs with
// --unsafe-no-fsync, appended to its own topology's arguments (the ha
// overlay keeps its three-member --initial-cluster).
func TestEtcdDurability(t *testing.T) {
	files, err := committed()
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		topology, d string
		members     int
		noFsync     bool
	}{
		{"single", server.DurabilityDefault, 1, false},
		{"single", server.DurabilityFsync, 1, false},
		{"single", server.DurabilityNone, 1, true},
		{"ha", server.DurabilityDefault, 3, false},
		{"ha", server.DurabilityFsync, 3, false},
		{"ha", server.DurabilityNone, 3, true},
	} {
		t.Run(tc.topology+"/"+tc.d, func(t *testing.T) {
			dir, extra := overlay(tc.topology, tc.d)
			o := buildObjects(t, files, dir, extra)
			sts, ok := o.statefulSets["etcd"]
			if !ok {
				t.Fatal("no StatefulSet etcd")
			}
			if len(sts.Spec.VolumeClaimTemplates) != 1 || len(sts.Spec.Template.Spec.Volumes) != 0 {
				t.Errorf("etcd: %d PVCs and volumes %v, want its data on its PVC", len(sts.Spec.VolumeClaimTemplates), sts.Spec.Template.Spec.Volumes)
			}
			args := sts.Spec.Template.Spec.Containers[0].Args
			if n := slices.Index(args, etcdNoFsync); (n >= 0) != tc.noFsync || (n >= 0 && n != len(args)-1) {
				t.Errorf("etcd args %v: want %s last: %v", args, etcdNoFsync, tc.noFsync)
			}
			var urls []string
			for i := range tc.members {
				urls = append(urls, fmt.Sprintf("etcd-%d=http://etcd-%d.etcd:2380", i, i))
			}
			if want := "--initial-cluster=" + strings.Join(urls, ","); !slices.Contains(args, want) {
				t.Errorf("etcd args %v: want %s", args, want)
			}
		})
	}
}

// TestRedisHAApart: in the ha overlay, redis-primary and redis-replica
// each have a podAntiAffinity term (preferred: a one-node cluster still
// runs both) that selects the other's pods, per node.
func TestRedisHAApart(t *testing.T) {
	files, err := committed()
	if err != nil {
		t.Fatal(err)
	}
	o := buildObjects(t, files, "ha", nil)
	for _, tc := range []struct{ name, other string }{
		{server.RedisPrimary, server.RedisReplica},
		{server.RedisReplica, server.RedisPrimary},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sts, other := o.statefulSets[tc.name], o.statefulSets[tc.other]
			if sts == nil || other == nil {
				t.Fatalf("no StatefulSet %s or %s", tc.name, tc.other)
			}
			if !avoids(sts.Spec.Template.Spec.Affinity, other.Spec.Template.Labels) {
				t.Errorf("%s has no podAntiAffinity per node selecting %s's pods %v", tc.name, tc.other, other.Spec.Template.Labels)
			}
		})
	}
}

// avoids: affinity has a podAntiAffinity term, required or preferred, per
// node (kubernetes.io/hostname), whose selector matches labels.
func avoids(a *corev1.Affinity, labels map[string]string) bool {
	if a == nil || a.PodAntiAffinity == nil {
		return false
	}
	terms := a.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution
	for _, w := range a.PodAntiAffinity.PreferredDuringSchedulingIgnoredDuringExecution {
		terms = append(terms, w.PodAffinityTerm)
	}
	for _, term := range terms {
		sel, err := metav1.LabelSelectorAsSelector(term.LabelSelector)
		if err == nil && term.TopologyKey == "kubernetes.io/hostname" && !sel.Empty() && sel.Matches(k8slabels.Set(labels)) {
			return true
		}
	}
	return false
}
