package cluster

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	"sigs.k8s.io/yaml"

	seckill "github.com/seckill-lab/seckill"
	"github.com/seckill-lab/seckill/internal/config"
	"github.com/seckill-lab/seckill/internal/server"
)

// repoRoot is the module's root, from this package's directory.
const repoRoot = "../.."

// k8sDir is deploy/k8s.
var k8sDir = filepath.Join(repoRoot, "deploy", "k8s")

// doc is one object of a build, as YAML decodes it.
type doc = map[string]any

// build runs kustomize (krusty, in Go) on an in-memory copy of
// deploy/k8s with a test admin token, at dir under it; extra files
// (path: content) are added first.
func build(files map[string][]byte, dir string, extra map[string]string) ([]doc, error) {
	mem := filesys.MakeFsInMemory()
	for p, b := range files {
		if err := mem.WriteFile(path.Join("/k8s", p), b); err != nil {
			return nil, err
		}
	}
	if err := mem.WriteFile("/k8s/base/admin-token.env", []byte(config.EnvAdminToken+"=test-token\n")); err != nil {
		return nil, err
	}
	for p, c := range extra {
		if err := mem.WriteFile(path.Join("/k8s", p), []byte(c)); err != nil {
			return nil, err
		}
	}
	return kustomize(mem, path.Join("/k8s", dir))
}

// kustomize builds dir of fsys and splits the output into its objects.
func kustomize(fsys filesys.FileSystem, dir string) ([]doc, error) {
	rm, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(fsys, dir)
	if err != nil {
		return nil, fmt.Errorf("kustomize build %s: %w", dir, err)
	}
	y, err := rm.AsYaml()
	if err != nil {
		return nil, fmt.Errorf("kustomize build %s: %w", dir, err)
	}
	return splitDocs(y)
}

// splitDocs decodes a YAML stream into its objects.
func splitDocs(y []byte) ([]doc, error) {
	var out []doc
	for _, part := range bytes.Split(y, []byte("\n---\n")) {
		if len(bytes.TrimSpace(part)) == 0 {
			continue
		}
		var d doc
		if err := yaml.Unmarshal(part, &d); err != nil {
			return nil, err
		}
		if d != nil {
			out = append(out, d)
		}
	}
	return out, nil
}

// committed reads deploy/k8s as Render's map (the files a user writes
// left out).
func committed() (map[string][]byte, error) {
	out := map[string][]byte{}
	err := filepath.WalkDir(k8sDir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, err := filepath.Rel(k8sDir, p)
		if err != nil {
			return err
		}
		if slices.Contains(Unrendered, filepath.ToSlash(rel)) {
			return nil
		}
		b, err := os.ReadFile(p)
		out[filepath.ToSlash(rel)] = b
		return err
	})
	return out, err
}

// objects are the typed objects of a build.
type objects struct {
	deployments  map[string]*appsv1.Deployment
	statefulSets map[string]*appsv1.StatefulSet
	services     map[string]*corev1.Service
	configMaps   map[string]*corev1.ConfigMap
	secrets      map[string]*corev1.Secret
	jobs         map[string]*batchv1.Job
	pdbs         map[string]*policyv1.PodDisruptionBudget
	policies     map[string]*networkingv1.NetworkPolicy
	// serviceAccounts are the ServiceAccounts bound to a Role, by name.
	serviceAccounts map[string]*rbacv1.Role
	other           int
}

// decodeStrict decodes every object strictly into its Kubernetes type: an
// unknown field, a wrong type or an unknown kind is an error.
func decodeStrict(docs []doc) (*objects, error) {
	o := &objects{deployments: map[string]*appsv1.Deployment{}, statefulSets: map[string]*appsv1.StatefulSet{},
		services: map[string]*corev1.Service{}, configMaps: map[string]*corev1.ConfigMap{}, secrets: map[string]*corev1.Secret{},
		jobs: map[string]*batchv1.Job{}, pdbs: map[string]*policyv1.PodDisruptionBudget{}, policies: map[string]*networkingv1.NetworkPolicy{},
		serviceAccounts: map[string]*rbacv1.Role{}}
	var errs []error
	sas, roles := map[string]bool{}, map[string]*rbacv1.Role{}
	var bindings []*rbacv1.RoleBinding
	for _, d := range docs {
		b, err := yaml.Marshal(d)
		if err != nil {
			return nil, err
		}
		kind, _ := d["kind"].(string)
		api, _ := d["apiVersion"].(string)
		name := ""
		if m, ok := d["metadata"].(map[string]any); ok {
			name, _ = m["name"].(string)
		}
		var into any
		switch api + " " + kind {
		case "apps/v1 Deployment":
			v := &appsv1.Deployment{}
			o.deployments[name], into = v, v
		case "apps/v1 StatefulSet":
			v := &appsv1.StatefulSet{}
			o.statefulSets[name], into = v, v
		case "v1 Service":
			v := &corev1.Service{}
			o.services[name], into = v, v
		case "v1 ConfigMap":
			v := &corev1.ConfigMap{}
			o.configMaps[name], into = v, v
		case "v1 Secret":
			v := &corev1.Secret{}
			o.secrets[name], into = v, v
		case "batch/v1 Job":
			v := &batchv1.Job{}
			o.jobs[name], into = v, v
		case "policy/v1 PodDisruptionBudget":
			v := &policyv1.PodDisruptionBudget{}
			o.pdbs[name], into = v, v
		case "networking.k8s.io/v1 NetworkPolicy":
			v := &networkingv1.NetworkPolicy{}
			o.policies[name], into = v, v
		case "v1 ServiceAccount":
			into, o.other, sas[name] = &corev1.ServiceAccount{}, o.other+1, true
		case "rbac.authorization.k8s.io/v1 Role":
			v := &rbacv1.Role{}
			into, o.other, roles[name] = v, o.other+1, v
		case "rbac.authorization.k8s.io/v1 RoleBinding":
			v := &rbacv1.RoleBinding{}
			into, o.other = v, o.other+1
			bindings = append(bindings, v)
		default:
			errs = append(errs, fmt.Errorf("%s %s %s: no Kubernetes type known here", api, kind, name))
			continue
		}
		if err := yaml.UnmarshalStrict(b, into); err != nil {
			errs = append(errs, fmt.Errorf("%s %s: %w", kind, name, err))
		}
	}
	for _, b := range bindings {
		for _, sub := range b.Subjects {
			if sub.Kind == "ServiceAccount" && sas[sub.Name] && roles[b.RoleRef.Name] != nil {
				o.serviceAccounts[sub.Name] = roles[b.RoleRef.Name]
			}
		}
	}
	return o, errors.Join(errs...)
}

// envOf is the variables container c of a pod gets, by name: its env and
// the keys of the ConfigMaps its envFrom names.
func envOf(o *objects, c corev1.Container) (map[string]string, error) {
	out := map[string]string{}
	for _, ef := range c.EnvFrom {
		if ef.ConfigMapRef == nil {
			continue
		}
		cm, ok := o.configMaps[ef.ConfigMapRef.Name]
		if !ok {
			return nil, fmt.Errorf("envFrom names ConfigMap %s, which the build does not hold", ef.ConfigMapRef.Name)
		}
		for k, v := range cm.Data {
			out[k] = v
		}
	}
	for _, e := range c.Env {
		switch {
		case e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil:
			s, ok := o.secrets[e.ValueFrom.SecretKeyRef.Name]
			if !ok {
				return nil, fmt.Errorf("%s names Secret %s, which the build does not hold", e.Name, e.ValueFrom.SecretKeyRef.Name)
			}
			if _, ok := s.Data[e.ValueFrom.SecretKeyRef.Key]; !ok {
				if _, ok := s.StringData[e.ValueFrom.SecretKeyRef.Key]; !ok {
					return nil, fmt.Errorf("%s: Secret %s has no key %s", e.Name, s.Name, e.ValueFrom.SecretKeyRef.Key)
				}
			}
			out[e.Name] = "<secret>"
		case e.ValueFrom != nil:
			out[e.Name] = "<field>"
		default:
			out[e.Name] = e.Value
		}
	}
	return out, nil
}

// resolveAddr checks that host:port is a pod of a StatefulSet behind its
// headless Service, on a port of both: NAME-i.SVC:PORT.
func resolveAddr(o *objects, addr string) error {
	host, port, ok := strings.Cut(addr, ":")
	if !ok {
		return fmt.Errorf("%q: no port", addr)
	}
	pod, svcName, ok := strings.Cut(host, ".")
	if !ok {
		return fmt.Errorf("%q: not POD.SERVICE", addr)
	}
	svc, ok := o.services[svcName]
	if !ok {
		return fmt.Errorf("%q: no Service %s", addr, svcName)
	}
	if svc.Spec.ClusterIP != corev1.ClusterIPNone {
		return fmt.Errorf("%q: Service %s is not headless", addr, svcName)
	}
	i := strings.LastIndex(pod, "-")
	ord, err := strconv.Atoi(pod[i+1:])
	if i < 0 || err != nil {
		return fmt.Errorf("%q: %s is not a StatefulSet's pod", addr, pod)
	}
	sts, ok := o.statefulSets[pod[:i]]
	if !ok || sts.Spec.ServiceName != svcName {
		return fmt.Errorf("%q: no StatefulSet %s behind Service %s", addr, pod[:i], svcName)
	}
	if sts.Spec.Replicas == nil || int32(ord) >= *sts.Spec.Replicas {
		return fmt.Errorf("%q: StatefulSet %s has no pod %d", addr, sts.Name, ord)
	}
	p, _ := strconv.Atoi(port)
	if !slices.ContainsFunc(svc.Spec.Ports, func(sp corev1.ServicePort) bool { return int(sp.Port) == p }) {
		return fmt.Errorf("%q: Service %s has no port %d", addr, svcName, p)
	}
	if !slices.ContainsFunc(sts.Spec.Template.Spec.Containers[0].Ports, func(cp corev1.ContainerPort) bool { return int(cp.ContainerPort) == p }) {
		return fmt.Errorf("%q: StatefulSet %s's container has no port %d", addr, sts.Name, p)
	}
	return nil
}

// imagePinned: an image with a tag other than latest; a server's or a
// helper's (not the lab's own, which the user builds) with a version.
func imagePinned(img string) error {
	i := strings.LastIndex(img, ":")
	if i < 0 || strings.Contains(img[i:], "/") {
		return fmt.Errorf("image %q has no tag", img)
	}
	tag := img[i+1:]
	if tag == "latest" || (img != InstanceImage && !strings.ContainsAny(tag, "0123456789")) {
		return fmt.Errorf("image %q is not pinned to a version", img)
	}
	return nil
}

// localKinds counts the components of each kind the local stack runs in
// topology.
func localKinds(topology string) map[server.Kind]int {
	out := map[server.Kind]int{}
	l := server.Layout{Dir: "/nonexistent", Base: localBase, HA: topology == "ha"}
	for _, sp := range server.All {
		if sp.Nodes == nil {
			continue
		}
		for _, n := range sp.Nodes(l) {
			out[n.Kind]++
		}
	}
	return out
}

// crossCheck checks a built overlay against the lab's description: every
// server the local stack runs in topology is there with as many pods,
// the instances get exactly the variables `seckill serve` reads, every
// address names a pod and port that exist, the images are pinned and the
// table's, the durability is d's.
func crossCheck(o *objects, topology, d string) error {
	var errs []error
	fail := func(format string, a ...any) { errs = append(errs, fmt.Errorf(format, a...)) }
	// Servers: the pods of each local kind.
	got := map[server.Kind]int{}
	for _, sts := range o.statefulSets {
		k := server.Kind(sts.Spec.Template.Labels[LabelKind])
		sp, _, ok := server.KindOf(k)
		if !ok {
			fail("StatefulSet %s: kind %q is no server's", sts.Name, k)
			continue
		}
		got[k] += int(*sts.Spec.Replicas)
		for _, c := range sts.Spec.Template.Spec.Containers {
			if c.Image != sp.Image {
				fail("StatefulSet %s: image %s, the table's is %s", sts.Name, c.Image, sp.Image)
			}
		}
		if _, ok := o.services[sts.Spec.ServiceName]; !ok {
			fail("StatefulSet %s: no Service %s", sts.Name, sts.Spec.ServiceName)
		}
		if err := durabilityOf(sts, sp, d); err != nil {
			errs = append(errs, err)
		}
	}
	for k, n := range localKinds(topology) {
		if got[k] != n {
			fail("%s: the local %s topology runs %d %s, the cluster %d", topology, topology, n, k, got[k])
		}
	}
	for k, n := range got {
		if _, ok := localKinds(topology)[k]; !ok {
			fail("%s: the cluster runs %d %s, the local stack none", topology, n, k)
		}
	}
	// The instances.
	dep, ok := o.deployments[InstanceApp]
	if !ok {
		fail("no Deployment %s", InstanceApp)
	} else {
		c := dep.Spec.Template.Spec.Containers[0]
		env, err := envOf(o, c)
		if err != nil {
			errs = append(errs, err)
		}
		var names []string
		for k := range env {
			if strings.HasPrefix(k, "SECKILL_") {
				names = append(names, k)
			}
		}
		slices.Sort(names)
		want := slices.Sorted(slices.Values(config.EnvVars()))
		if !slices.Equal(names, want) {
			fail("instances get %v, `seckill serve` reads %v", names, want)
		}
		for _, v := range config.ServerVars() {
			val := env[v]
			if v == config.EnvMySQLDSN {
				if _, after, ok := strings.Cut(val, "tcp("); ok {
					val, _, _ = strings.Cut(after, ")")
				}
			}
			for _, a := range config.SplitList(val) {
				if v == config.EnvRedisMaster {
					continue
				}
				if err := resolveAddr(o, a); err != nil {
					fail("%s: %w", v, err)
				}
			}
		}
		// Readiness and liveness never probe a lock server (/healthz
		// does): a fault on one must not take every instance out.
		if c.ReadinessProbe == nil || c.ReadinessProbe.HTTPGet == nil || c.ReadinessProbe.HTTPGet.Path != "/readyz" {
			fail("instances: no readiness on /readyz")
		}
		if c.LivenessProbe == nil || c.LivenessProbe.HTTPGet == nil || c.LivenessProbe.HTTPGet.Path != "/livez" {
			fail("instances: no liveness on /livez")
		}
		hl, ok := o.services[InstancesHL]
		if !ok || hl.Spec.ClusterIP != corev1.ClusterIPNone {
			fail("no headless Service %s", InstancesHL)
		}
	}
	// nginx runs the lab's nginx.conf.
	if ng, ok := o.deployments["nginx"]; !ok {
		fail("no Deployment nginx")
	} else {
		var conf string
		for _, v := range ng.Spec.Template.Spec.Volumes {
			if v.ConfigMap != nil && o.configMaps[v.ConfigMap.Name] != nil {
				conf += o.configMaps[v.ConfigMap.Name].Data["nginx.conf"]
			}
		}
		if !strings.Contains(conf, seckill.NginxConf()) {
			fail("nginx: its ConfigMap does not hold the lab's nginx.conf")
		}
	}
	// Every image is pinned.
	pods := map[string]corev1.PodSpec{}
	for n, d := range o.deployments {
		pods["Deployment "+n] = d.Spec.Template.Spec
	}
	for n, s := range o.statefulSets {
		pods["StatefulSet "+n] = s.Spec.Template.Spec
	}
	for n, j := range o.jobs {
		pods["Job "+n] = j.Spec.Template.Spec
	}
	for n, p := range pods {
		for _, c := range append(p.InitContainers, p.Containers...) {
			if err := imagePinned(c.Image); err != nil {
				fail("%s: %w", n, err)
			}
			if c.Resources.Limits == nil || c.Resources.Requests == nil {
				fail("%s: container %s has no requests or limits", n, c.Name)
			}
		}
	}
	return errors.Join(errs...)
}

// durabilityOf: a server that pays an fsync per write at level d (the
// table's Fsyncs) keeps its data on its volume and runs as at
// DurabilityFsync; one that does not either runs differently (its own
// switch) or keeps its data on tmpfs.
func durabilityOf(sts *appsv1.StatefulSet, sp *server.Spec, d string) error {
	tmpfs := len(sts.Spec.VolumeClaimTemplates) == 0 && slices.ContainsFunc(sts.Spec.Template.Spec.Volumes, func(v corev1.Volume) bool {
		return v.Name == dataVolume && v.EmptyDir != nil && v.EmptyDir.Medium == corev1.StorageMediumMemory
	})
	w, _ := workloadOf(server.Kind(sts.Spec.Template.Labels[LabelKind]))
	if w.stateOnly {
		return nil
	}
	s := set{name: sts.Name, kind: w.kind, spec: sp, w: w, nodes: make([]string, *sts.Spec.Replicas)}
	fsync := w.container(s, server.DurabilityFsync)
	c := sts.Spec.Template.Spec.Containers[0]
	same := slices.Equal(c.Args, fsync.Args) && slices.EqualFunc(c.Env, fsync.Env, func(a, b corev1.EnvVar) bool {
		return a.Name == b.Name && a.Value == b.Value
	})
	switch {
	case sp.Fsyncs[d] && (tmpfs || !same):
		return fmt.Errorf("%s at %s: the table says it fsyncs, but its data is on tmpfs (%v) or it runs unlike at %s", sts.Name, d, tmpfs, server.DurabilityFsync)
	case !sp.Fsyncs[d] && !tmpfs && same:
		return fmt.Errorf("%s at %s: the table says it does not fsync, but it runs as at %s on its volume", sts.Name, d, server.DurabilityFsync)
	}
	return nil
}
