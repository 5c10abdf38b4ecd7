package cluster

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	psaapi "k8s.io/pod-security-admission/api"
	"k8s.io/pod-security-admission/policy"

	"github.com/seckill-lab/seckill/internal/server"
)

// podsOf is the pod template of every workload of a build (Deployment,
// StatefulSet, Job), by "Kind name".
func podsOf(o *objects) map[string]corev1.PodTemplateSpec {
	out := map[string]corev1.PodTemplateSpec{}
	for n, d := range o.deployments {
		out["Deployment "+n] = d.Spec.Template
	}
	for n, s := range o.statefulSets {
		out["StatefulSet "+n] = s.Spec.Template
	}
	for n, j := range o.jobs {
		out["Job "+n] = j.Spec.Template
	}
	return out
}

// restrictedViolations evaluates every pod template of o with the
// upstream Pod Security library (k8s.io/pod-security-admission, the
// admission controller's own checks) at level restricted, latest version,
// and checks the lab's own promise on top: every container on a read-only
// root filesystem. Each error names the object and the reasons.
func restrictedViolations(o *objects) (int, error) {
	eval, err := policy.NewEvaluator(policy.DefaultChecks(), nil)
	if err != nil {
		return 0, fmt.Errorf("pod security evaluator: %w", err)
	}
	lv := psaapi.LevelVersion{Level: psaapi.LevelRestricted, Version: psaapi.LatestVersion()}
	pods := podsOf(o)
	var errs []error
	for _, name := range slices.Sorted(maps.Keys(pods)) {
		tpl := pods[name]
		res := policy.AggregateCheckResults(eval.EvaluatePod(lv, &tpl.ObjectMeta, &tpl.Spec))
		if !res.Allowed {
			var rs []string
			for i, r := range res.ForbiddenReasons {
				rs = append(rs, r+" ("+res.ForbiddenDetails[i]+")")
			}
			errs = append(errs, fmt.Errorf("%s violates Pod Security restricted: %s", name, strings.Join(rs, "; ")))
		}
		for _, c := range append(slices.Clone(tpl.Spec.InitContainers), tpl.Spec.Containers...) {
			if sc := c.SecurityContext; sc == nil || sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem {
				errs = append(errs, fmt.Errorf("%s: container %s's root filesystem is writable", name, c.Name))
			}
		}
	}
	return len(pods), errors.Join(errs...)
}

// TestPodSecurityRestricted: every workload of every overlay at every
// durability level, of the bench kustomization and of every chaos Job, passes Pod Security
// "restricted".
func TestPodSecurityRestricted(t *testing.T) {
	files, err := committed()
	if err != nil {
		t.Fatal(err)
	}
	type target struct {
		name, dir string
		extra     map[string]string
	}
	var builds []target
	for _, topology := range Topologies {
		for _, d := range server.Durabilities() {
			dir, extra := overlay(topology, d)
			builds = append(builds, target{topology + "/" + d, dir, extra})
		}
	}
	builds = append(builds, target{"bench", "bench", nil})
	for p := range files {
		if dir, ok := strings.CutSuffix(p, "/kustomization.yaml"); ok && strings.HasPrefix(dir, "chaos/") {
			builds = append(builds, target{dir, dir, nil})
		}
	}
	for _, b := range builds {
		t.Run(b.name, func(t *testing.T) {
			o := buildObjects(t, files, b.dir, b.extra)
			n, err := restrictedViolations(o)
			if err != nil {
				t.Fatal(err)
			}
			if n == 0 {
				t.Fatal("no workload evaluated")
			}
		})
	}
}

// buildObjects builds dir and decodes it strictly.
func buildObjects(t *testing.T, files map[string][]byte, dir string, extra map[string]string) *objects {
	t.Helper()
	docs, err := build(files, dir, extra)
	if err != nil {
		t.Fatal(err)
	}
	o, err := decodeStrict(docs)
	if err != nil {
		t.Fatal(err)
	}
	return o
}

// TestPodSecurityCatches mutates a copy of the built ha overlay and bench:
// each loosened security context must fail, naming the object and the
// reason.
func TestPodSecurityCatches(t *testing.T) {
	files, err := committed()
	if err != nil {
		t.Fatal(err)
	}
	ha, err := build(files, "test-bench", map[string]string{"test-bench/kustomization.yaml": "resources:\n- ../ha\n- ../bench\n"})
	if err != nil {
		t.Fatal(err)
	}
	podSpec := func(d doc) map[string]any {
		return d["spec"].(map[string]any)["template"].(map[string]any)["spec"].(map[string]any)
	}
	nth := func(d doc, field string, i int) map[string]any {
		return podSpec(d)[field].([]any)[i].(map[string]any)
	}
	sc := func(c map[string]any) map[string]any { return c["securityContext"].(map[string]any) }
	for _, tc := range []struct {
		name   string
		mutate func(docs []doc)
		want   []string
	}{
		{"privilege escalation allowed", func(docs []doc) {
			sc(container(find(docs, "Deployment", InstanceApp)))["allowPrivilegeEscalation"] = true
		}, []string{"Deployment " + InstanceApp, "allowPrivilegeEscalation != false"}},
		{"runAsNonRoot removed", func(docs []doc) {
			delete(podSpec(find(docs, "StatefulSet", "etcd"))["securityContext"].(map[string]any), "runAsNonRoot")
		}, []string{"StatefulSet etcd", "runAsNonRoot != true"}},
		{"root user", func(docs []doc) {
			podSpec(find(docs, "StatefulSet", server.RedisPrimary))["securityContext"].(map[string]any)["runAsUser"] = 0
		}, []string{"StatefulSet " + server.RedisPrimary, "runAsUser=0"}},
		{"pauser gains a capability", func(docs []doc) {
			sc(nth(find(docs, "Deployment", InstanceApp), "containers", 1))["capabilities"] = map[string]any{"drop": []any{"ALL"}, "add": []any{"SYS_PTRACE"}}
		}, []string{"Deployment " + InstanceApp, "unrestricted capabilities", "pauser"}},
		{"capabilities kept", func(docs []doc) {
			delete(sc(container(find(docs, "StatefulSet", "zookeeper"))), "capabilities")
		}, []string{"StatefulSet zookeeper", "unrestricted capabilities"}},
		{"no seccomp profile", func(docs []doc) {
			delete(podSpec(find(docs, "Deployment", "nginx"))["securityContext"].(map[string]any), "seccompProfile")
		}, []string{"Deployment nginx", "seccompProfile"}},
		{"bench sidecar privileged", func(docs []doc) {
			sc(nth(find(docs, "Job", "seckill-bench"), "initContainers", 0))["privileged"] = true
		}, []string{"Job seckill-bench", "privileged", "report"}},
		{"writable root filesystem", func(docs []doc) {
			sc(container(find(docs, "StatefulSet", "mariadb")))["readOnlyRootFilesystem"] = false
		}, []string{"StatefulSet mariadb", "container mariadb's root filesystem is writable"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			docs := clone(t, ha)
			tc.mutate(docs)
			o, err := decodeStrict(docs)
			if err != nil {
				t.Fatal(err)
			}
			_, err = restrictedViolations(o)
			if err == nil {
				t.Fatalf("no error, want one naming %q", tc.want)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %v\nwant one naming %q", err, w)
				}
			}
		})
	}
	// The unmutated copy passes: the mutations are what fails.
	o, err := decodeStrict(clone(t, ha))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := restrictedViolations(o); err != nil {
		t.Fatal(err)
	}
}

// TestPauser: the pauser can stop the instance as the instance's own
// non-root user, without a capability: a shared process namespace, the
// pod's user for both containers (neither overrides it), nothing added.
func TestPauser(t *testing.T) {
	files, err := committed()
	if err != nil {
		t.Fatal(err)
	}
	o := buildObjects(t, files, "single", nil)
	dep, ok := o.deployments[InstanceApp]
	if !ok {
		t.Fatalf("no Deployment %s", InstanceApp)
	}
	spec := dep.Spec.Template.Spec
	if spec.ShareProcessNamespace == nil || !*spec.ShareProcessNamespace {
		t.Error("the instances' pod does not share its process namespace")
	}
	if spec.SecurityContext == nil || spec.SecurityContext.RunAsUser == nil || *spec.SecurityContext.RunAsUser == 0 {
		t.Fatal("the instances' pod has no non-root runAsUser")
	}
	names := map[string]bool{}
	for _, c := range spec.Containers {
		names[c.Name] = true
		if sc := c.SecurityContext; sc != nil && (sc.RunAsUser != nil || sc.RunAsGroup != nil || (sc.Capabilities != nil && len(sc.Capabilities.Add) > 0)) {
			t.Errorf("container %s runs as another user or with a capability: %+v", c.Name, sc)
		}
	}
	if !names["pauser"] || !names[InstanceApp] {
		t.Errorf("containers %v: want %s and pauser", names, InstanceApp)
	}
}
