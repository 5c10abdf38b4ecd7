package cluster

import (
	"bytes"
	"fmt"
	"path"
	"reflect"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/yaml"

	seckill "github.com/seckill-lab/seckill"
	"github.com/seckill-lab/seckill/internal/config"
	"github.com/seckill-lab/seckill/internal/scenario"
	"github.com/seckill-lab/seckill/internal/server"
	"github.com/seckill-lab/seckill/internal/stack"
)

// Topologies are the overlays, as the local stack names its topologies.
var Topologies = []string{stack.TopologySingle, stack.TopologyHA}

// localBase is the base port the local layout is read at: any works, the
// addresses are mapped to pods by their port.
const localBase = 17000

// Sets lays out the StatefulSets of topology: one per workload the local
// stack's components map to, each with as many pods as it has components.
func Sets(topology string) ([]set, error) {
	ha := topology == stack.TopologyHA
	l := server.Layout{Dir: "/nonexistent", Base: localBase, HA: ha}
	var out []set
	for _, sp := range server.All {
		if sp.Nodes == nil {
			continue
		}
		for _, n := range sp.Nodes(l) {
			w, ok := workloadOf(n.Kind)
			if !ok {
				return nil, fmt.Errorf("%s (%s) runs in the local %s topology but has no cluster workload", n.Name, n.Kind, topology)
			}
			name := w.set(n.Name)
			i := slices.IndexFunc(out, func(s set) bool { return s.name == name })
			if i < 0 {
				out = append(out, set{name: name, kind: n.Kind, spec: sp, w: w})
				i = len(out) - 1
			}
			out[i].nodes = append(out[i].nodes, n.Name)
		}
	}
	return out, nil
}

var loopback = regexp.MustCompile(`127\.0\.0\.1:(\d+)`)

// ServerEnv is every server variable of an instance in topology, with
// the local stack's values (server.Spec.Env) mapped to the pods: each
// 127.0.0.1:PORT becomes the address of the pod that plays the component
// on PORT.
func ServerEnv(topology string) ([][2]string, error) {
	ha := topology == stack.TopologyHA
	sets, err := Sets(topology)
	if err != nil {
		return nil, err
	}
	l := server.Layout{Dir: "/nonexistent", Base: localBase, HA: ha}
	byPort := map[string]string{}
	for _, sp := range server.All {
		if sp.Nodes == nil {
			continue
		}
		for _, n := range sp.Nodes(l) {
			for _, s := range sets {
				if i := slices.Index(s.nodes, n.Name); i >= 0 {
					byPort[strconv.Itoa(n.Port)] = s.addr(i)
				}
			}
		}
	}
	var out [][2]string
	for _, sp := range server.All {
		if sp.Env == nil {
			continue
		}
		for _, kv := range sp.Env(localBase, ha, true) {
			var bad []string
			v := loopback.ReplaceAllStringFunc(kv[1], func(a string) string {
				p := loopback.FindStringSubmatch(a)[1]
				if c, ok := byPort[p]; ok {
					return c
				}
				bad = append(bad, a)
				return a
			})
			if len(bad) > 0 {
				return nil, fmt.Errorf("%s: %v is no component's client port in the %s topology", kv[0], bad, topology)
			}
			out = append(out, [2]string{kv[0], v})
		}
	}
	return out, nil
}

func meta(name string, labels map[string]string) metav1.ObjectMeta {
	return metav1.ObjectMeta{Name: name, Labels: labels}
}

func labelsOf(name, role string, kind server.Kind) map[string]string {
	m := map[string]string{LabelPartOf: PartOf, LabelName: name, LabelRole: role}
	if kind != "" {
		m[LabelKind] = string(kind)
	}
	return m
}

// spread prefers one pod of app per node: one node still runs them all.
func spread(app string) *corev1.Affinity { return spreadBy(map[string]string{LabelName: app}) }

// spreadBy prefers one pod that matches labels per node (preferred
// anti-affinity, not required: one node still runs them all).
func spreadBy(labels map[string]string) *corev1.Affinity {
	return &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{
		PreferredDuringSchedulingIgnoredDuringExecution: []corev1.WeightedPodAffinityTerm{{Weight: 100,
			PodAffinityTerm: corev1.PodAffinityTerm{TopologyKey: "kubernetes.io/hostname",
				LabelSelector: &metav1.LabelSelector{MatchLabels: labels}}}}}}
}

// volumeSize is each server's PVC.
var volumeSize = resource.MustParse("1Gi")

// objects renders set s at durability d: its headless Service, the
// StatefulSet and, for a quorum of 3 or more, its PodDisruptionBudget.
func (s set) objects(d string) []any {
	labels := labelsOf(s.name, RoleServer, s.kind)
	sel := map[string]string{LabelName: s.name}
	replicas := int32(len(s.nodes))
	c := s.w.container(s, d)
	c.Ports = s.w.ports
	c.Resources = resources(s.w.cpu, s.w.mem)
	c.VolumeMounts = []corev1.VolumeMount{{Name: dataVolume, MountPath: s.w.mount}}
	var svcPorts []corev1.ServicePort
	for _, p := range s.w.ports {
		svcPorts = append(svcPorts, corev1.ServicePort{Name: p.Name, Port: p.ContainerPort, Protocol: p.Protocol, TargetPort: intstr.FromString(p.Name)})
	}
	svc := &corev1.Service{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Service"}, ObjectMeta: meta(s.name, labels),
		Spec: corev1.ServiceSpec{ClusterIP: corev1.ClusterIPNone, Selector: sel, Ports: svcPorts,
			// Members find one another by DNS before they are ready.
			PublishNotReadyAddresses: true}}
	pod := corev1.PodSpec{Containers: []corev1.Container{c}, TerminationGracePeriodSeconds: ptr(int64(10))}
	switch {
	case s.w.spreadKind:
		pod.Affinity = spreadBy(map[string]string{LabelKind: string(s.kind)})
	case replicas > 1:
		pod.Affinity = spread(s.name)
	}
	sts := &appsv1.StatefulSet{TypeMeta: metav1.TypeMeta{APIVersion: "apps/v1", Kind: "StatefulSet"}, ObjectMeta: meta(s.name, labels),
		Spec: appsv1.StatefulSetSpec{ServiceName: s.name, Replicas: &replicas, PodManagementPolicy: appsv1.ParallelPodManagement,
			Selector: &metav1.LabelSelector{MatchLabels: sel},
			Template: podTemplate(labels, pod, s.w.sec),
			VolumeClaimTemplates: []corev1.PersistentVolumeClaim{{ObjectMeta: metav1.ObjectMeta{Name: dataVolume},
				Spec: corev1.PersistentVolumeClaimSpec{AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
					Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: volumeSize}}}}}}}
	out := []any{svc, sts}
	if s.w.quorum && replicas >= 3 {
		out = append(out, &policyv1.PodDisruptionBudget{TypeMeta: metav1.TypeMeta{APIVersion: "policy/v1", Kind: "PodDisruptionBudget"},
			ObjectMeta: meta(s.name, labels),
			Spec: policyv1.PodDisruptionBudgetSpec{MinAvailable: ptr(intstr.FromInt32(replicas/2 + 1)),
				Selector: &metav1.LabelSelector{MatchLabels: sel}}})
	}
	return out
}

// pod is the pod spec of set s's StatefulSet at the default durability.
func (s set) pod() corev1.PodSpec {
	for _, o := range s.objects(server.DurabilityDefault) {
		if sts, ok := o.(*appsv1.StatefulSet); ok {
			return sts.Spec.Template.Spec
		}
	}
	return corev1.PodSpec{}
}

func ptr[T any](v T) *T { return &v }

// instances is the instances' Deployment and their headless Service (the
// bench reaches each instance's admin API by its A records).
func instances() []any {
	labels := labelsOf(InstanceApp, RoleInstance, "")
	sel := map[string]string{LabelName: InstanceApp}
	// Readiness is /readyz (the HTTP server and MySQL, never a lock
	// server: a chaos experiment on one lock server must not empty the
	// Service); liveness is /livez (the process answers).
	probe := func(path string, threshold int32) *corev1.Probe {
		return &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: path, Port: intstr.FromInt32(InstancePort)}},
			PeriodSeconds: 5, TimeoutSeconds: 3, FailureThreshold: threshold}
	}
	c := corev1.Container{Name: InstanceApp, Image: InstanceImage, Args: []string{"serve"},
		Ports: []corev1.ContainerPort{tcp("http", InstancePort)},
		Env:   instanceEnv(),
		EnvFrom: []corev1.EnvFromSource{{ConfigMapRef: &corev1.ConfigMapEnvSource{
			LocalObjectReference: corev1.LocalObjectReference{Name: ServersConfig}}}},
		ReadinessProbe: probe("/readyz", 2),
		// A paused instance (pause-holder, up to 24 s in consul-session)
		// must not be restarted by its liveness probe: 60 s.
		LivenessProbe: probe("/livez", 12),
		Resources:     resources([2]string{"100m", "1"}, [2]string{"64Mi", "256Mi"})}
	// The pauser shares the pod's process namespace: `kill -STOP` from it
	// is the cluster's process pause (deploy/chaos/pause-holder.yaml). It
	// runs as the instance's user (the pod's), which may signal the
	// instance without any capability.
	pauser := corev1.Container{Name: "pauser", Image: BusyboxImage,
		Command:   []string{"sh", "-c", "trap 'exit 0' TERM; while :; do sleep 3600 & wait $!; done"},
		Resources: resources([2]string{"5m", "50m"}, [2]string{"8Mi", "16Mi"})}
	replicas := int32(Instances)
	dep := &appsv1.Deployment{TypeMeta: metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"}, ObjectMeta: meta(InstanceApp, labels),
		Spec: appsv1.DeploymentSpec{Replicas: &replicas, Selector: &metav1.LabelSelector{MatchLabels: sel},
			Template: podTemplate(labels, corev1.PodSpec{Containers: []corev1.Container{c, pauser}, ShareProcessNamespace: ptr(true),
				Affinity: spread(InstanceApp), TerminationGracePeriodSeconds: ptr(int64(10))}, seckillSecurity)}}
	svc := &corev1.Service{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Service"}, ObjectMeta: meta(InstancesHL, labels),
		Spec: corev1.ServiceSpec{ClusterIP: corev1.ClusterIPNone, Selector: sel,
			Ports: []corev1.ServicePort{{Name: "http", Port: InstancePort, Protocol: corev1.ProtocolTCP, TargetPort: intstr.FromString("http")}}}}
	return []any{dep, svc}
}

// nginxConfigMap is the ConfigMap the base's generator makes of
// base/nginx/.
const nginxConfigMap = "nginx"

// NginxImage is nginx on a cluster: nginx-unprivileged (uid 101, no port
// below 1024) at the version of the table's nginx (server.Nginx.Image).
func NginxImage() string {
	_, tag, _ := strings.Cut(server.Nginx.Image, ":")
	return "nginxinc/nginx-unprivileged:" + tag
}

// nginx is the load balancer: the lab's nginx.conf verbatim, its two
// includes rendered from templates by the image's envsubst at start, its
// pid file in /tmp (the temporary files' paths are in http.conf).
func nginx() []any {
	labels := labelsOf("nginx", RoleNginx, "")
	sel := map[string]string{LabelName: "nginx"}
	c := corev1.Container{Name: "nginx", Image: NginxImage(), Args: []string{"nginx", "-g", "daemon off; pid /tmp/nginx.pid;"},
		Ports: []corev1.ContainerPort{tcp("http", NginxPort)},
		Env: []corev1.EnvVar{podEnv("POD_NAMESPACE", "metadata.namespace"),
			{Name: "NGINX_ENVSUBST_OUTPUT_DIR", Value: "/etc/nginx/seckill.d"}},
		VolumeMounts: []corev1.VolumeMount{
			{Name: "conf", MountPath: "/etc/nginx/nginx.conf", SubPath: "nginx.conf", ReadOnly: true},
			{Name: "templates", MountPath: "/etc/nginx/templates", ReadOnly: true},
			{Name: "includes", MountPath: "/etc/nginx/seckill.d"}},
		// nginx's own /livez: its readiness does not go through to the
		// instances.
		ReadinessProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/livez", Port: intstr.FromInt32(NginxPort)}},
			PeriodSeconds: 5, TimeoutSeconds: 3, FailureThreshold: 3},
		LivenessProbe: tcpProbe(NginxPort, 5),
		Resources:     resources([2]string{"50m", "1"}, [2]string{"32Mi", "128Mi"})}
	cm := func(items ...string) corev1.VolumeSource {
		var ks []corev1.KeyToPath
		for _, it := range items {
			ks = append(ks, corev1.KeyToPath{Key: it, Path: it})
		}
		return corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: nginxConfigMap}, Items: ks}}
	}
	replicas := int32(1)
	dep := &appsv1.Deployment{TypeMeta: metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"}, ObjectMeta: meta("nginx", labels),
		Spec: appsv1.DeploymentSpec{Replicas: &replicas, Selector: &metav1.LabelSelector{MatchLabels: sel},
			Template: podTemplate(labels, corev1.PodSpec{Containers: []corev1.Container{c}, Volumes: []corev1.Volume{
				{Name: "conf", VolumeSource: cm("nginx.conf")},
				{Name: "templates", VolumeSource: cm(nginxTemplates...)},
				{Name: "includes", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}}}, nginxSecurity)}}
	svc := &corev1.Service{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Service"}, ObjectMeta: meta("nginx", labels),
		Spec: corev1.ServiceSpec{Selector: sel,
			Ports: []corev1.ServicePort{{Name: "http", Port: NginxServicePort, Protocol: corev1.ProtocolTCP, TargetPort: intstr.FromString("http")}}}}
	return []any{dep, svc}
}

var nginxTemplates = []string{"http.conf.template", "listen.conf.template"}

// NginxHTTPConf is seckill.d/http.conf on a cluster, before envsubst.
func NginxHTTPConf() string {
	return `# seckill.d/http.conf on a cluster (deploy/k8s; generated by internal/cluster):
# the instances are the A records of their headless Service, re-resolved
# through the cluster's DNS every 5 s (` + "`resolve`" + `, open source since nginx
# 1.27.3), so a killed instance's new pod is found. ${POD_NAMESPACE} is
# filled in at start by the nginx image's envsubst (the lab's namespace).
# The server parameters are internal/stack's UpstreamServerParams.
resolver kube-dns.kube-system.svc.cluster.local valid=5s ipv6=off;
upstream seckill {
    ` + stack.UpstreamZone + `
    server ` + InstancesHL + `.${POD_NAMESPACE}.svc.cluster.local:` + strconv.Itoa(InstancePort) + ` resolve ` + stack.UpstreamServerParams + `;
    keepalive 128;
}
access_log /dev/stdout seckill;
# The root filesystem is read-only: the temporary files go to /tmp.
client_body_temp_path /tmp/client_temp;
proxy_temp_path /tmp/proxy_temp;
fastcgi_temp_path /tmp/fastcgi_temp;
uwsgi_temp_path /tmp/uwsgi_temp;
scgi_temp_path /tmp/scgi_temp;
`
}

// NginxListenConf is seckill.d/listen.conf on a cluster.
func NginxListenConf() string { return "listen " + strconv.Itoa(NginxPort) + ";\n" }

// networkPolicies: only the instances (and the servers' own peers) reach
// the servers; only nginx and the bench reach the instances.
func networkPolicies() []any {
	from := func(roles ...string) []networkingv1.NetworkPolicyPeer {
		var out []networkingv1.NetworkPolicyPeer
		for _, r := range roles {
			out = append(out, networkingv1.NetworkPolicyPeer{PodSelector: &metav1.LabelSelector{MatchLabels: map[string]string{LabelRole: r}}})
		}
		return out
	}
	np := func(name, role string, port *int32, roles ...string) *networkingv1.NetworkPolicy {
		rule := networkingv1.NetworkPolicyIngressRule{From: from(roles...)}
		if port != nil {
			rule.Ports = []networkingv1.NetworkPolicyPort{{Port: ptr(intstr.FromInt32(*port))}}
		}
		return &networkingv1.NetworkPolicy{TypeMeta: metav1.TypeMeta{APIVersion: "networking.k8s.io/v1", Kind: "NetworkPolicy"},
			ObjectMeta: meta(name, map[string]string{LabelPartOf: PartOf}),
			Spec: networkingv1.NetworkPolicySpec{PodSelector: metav1.LabelSelector{MatchLabels: map[string]string{LabelRole: role}},
				PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeIngress},
				Ingress:     []networkingv1.NetworkPolicyIngressRule{rule}}}
	}
	return []any{
		np("servers", RoleServer, nil, RoleInstance, RoleServer),
		np("instances", RoleInstance, ptr(int32(InstancePort)), RoleNginx, RoleBench),
	}
}

// BenchArgs are the bench Job's arguments: the in-cluster nginx, the
// instances found by their headless Service's DNS.
var BenchArgs = []string{"bench", "--target", "http://nginx", "--instances-dns", InstancesHL + ":" + strconv.Itoa(InstancePort), "--out", "/results/report"}

// benchJob is the bench as a Job (benchObjects, with BenchArgs): every
// strategy, fencing off.
func benchJob() []any { return benchObjects(benchJobName, BenchArgs) }

// benchJobName is the bench Job's, and its ServiceAccount's, name.
const benchJobName = "seckill-bench"

// benchObjects is `seckill bench ARGS...` as Job name, with a
// ServiceAccount that may list the namespace's pods (the report records
// their nodes). The Job ends with the bench: its status is the bench's exit
// status (no retry). Kubernetes deletes the finished Job, its pod and their
// logs after BenchTTL; a rerun before that needs `kubectl delete job NAME`.
// Its pod is benchPod's.
func benchObjects(name string, args []string) []any {
	labels := labelsOf(name, RoleBench, "")
	sa := &corev1.ServiceAccount{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ServiceAccount"}, ObjectMeta: meta(name, labels)}
	role := &rbacv1.Role{TypeMeta: metav1.TypeMeta{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "Role"}, ObjectMeta: meta(name, labels),
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"get", "list"}}}}
	rb := &rbacv1.RoleBinding{TypeMeta: metav1.TypeMeta{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "RoleBinding"}, ObjectMeta: meta(name, labels),
		RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: name},
		Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Name: name}}}
	job := &batchv1.Job{TypeMeta: metav1.TypeMeta{APIVersion: "batch/v1", Kind: "Job"}, ObjectMeta: meta(name, labels),
		Spec: batchv1.JobSpec{BackoffLimit: ptr(int32(0)), ActiveDeadlineSeconds: ptr(int64(3 * 3600)), TTLSecondsAfterFinished: ptr(BenchTTL),
			Template: benchPod(name, labels, args)}}
	return []any{sa, role, rb, job}
}

// benchPod is the pod of a bench Job: `seckill bench ARGS...` in container
// bench, run as ServiceAccount name, with the admin token and the
// downward-API variables. The report is in the log of container bench (the
// tables) and of container report, a native sidecar that prints
// report.json once it is written and is stopped when the bench ends (a
// bench that dies first leaves nothing waiting).
func benchPod(name string, labels map[string]string, args []string) corev1.PodTemplateSpec {
	results := []corev1.VolumeMount{{Name: "results", MountPath: "/results"}}
	bench := corev1.Container{Name: "bench", Image: InstanceImage, Args: args,
		Env: []corev1.EnvVar{
			{Name: config.EnvAdminToken, ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
				LocalObjectReference: corev1.LocalObjectReference{Name: AdminSecret}, Key: config.EnvAdminToken}}},
			podEnv(EnvNodeName, "spec.nodeName"), podEnv(EnvPodName, "metadata.name"), podEnv(EnvPodNamespace, "metadata.namespace")},
		VolumeMounts: results,
		Resources:    resources([2]string{"500m", "2"}, [2]string{"128Mi", "1Gi"})}
	report := corev1.Container{Name: "report", Image: BusyboxImage, RestartPolicy: ptr(corev1.ContainerRestartPolicyAlways),
		Command: []string{"sh", "-c", "until [ -f /results/report/report.json ]; do sleep 2; done; sleep 2; cat /results/report/report.json; " +
			"echo; exec tail -f /dev/null"},
		VolumeMounts: results,
		Resources:    resources([2]string{"5m", "50m"}, [2]string{"8Mi", "32Mi"})}
	return benchPodTemplate(name, labels, corev1.PodSpec{
		InitContainers: []corev1.Container{report},
		Containers:     []corev1.Container{bench},
		Volumes:        []corev1.Volume{{Name: "results", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}}})
}

// chaosJobs adds to files, for each scenario with a cluster form, the
// kustomization of each of its bench Jobs (scenario.ClusterRuns: its
// strategy unfenced and fenced, under chaos/NAME/unfenced and
// chaos/NAME/fenced): benchObjects with BenchArgs and the run's flags. The
// experiment is applied apart (deploy/chaos/NAME.yaml), once the bench
// runs: scenario.ClusterCommands is the runbook.
func chaosJobs(files map[string][]byte) error {
	for _, sc := range scenario.All() {
		if _, ok := seckill.ChaosExperiment(sc.Name); !ok {
			continue
		}
		runs, err := sc.ClusterRuns()
		if err != nil {
			return fmt.Errorf("chaos jobs: %w", err)
		}
		for _, r := range runs {
			dir, ok := strings.CutPrefix(r.Dir, "deploy/k8s/")
			if !ok {
				return fmt.Errorf("chaos jobs: %s is not under deploy/k8s", r.Dir)
			}
			if err := put(files, dir+"/job.yaml", benchObjects(r.Job, append(slices.Clone(BenchArgs), r.Args...))); err != nil {
				return err
			}
			files[dir+"/kustomization.yaml"] = []byte(header + `# The bench of scenario ` + sc.Name + ` on a cluster: ` + r.Strategy + `, ` + string(r.Protection) + `, while
# deploy/chaos/` + sc.Name + `.yaml is applied (a lab of the ` + sc.Topology + ` topology). The runbook:
#   seckill scenario chaos ` + sc.Name + `
apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
resources:
- job.yaml
`)
		}
	}
	return nil
}

// benchPodTemplate is the pod template of a Job of the lab's image (the
// bench): spec run once (restartPolicy Never) under ServiceAccount sa, as
// the lab's image's user with the security contexts of every pod
// (restricted).
func benchPodTemplate(sa string, labels map[string]string, spec corev1.PodSpec) corev1.PodTemplateSpec {
	spec.ServiceAccountName = sa
	spec.RestartPolicy = corev1.RestartPolicyNever
	return podTemplate(labels, spec, seckillSecurity)
}

// BenchTTL is how long a finished bench Job (its pod and their logs, the
// report among them) stays before Kubernetes deletes it: an hour.
const BenchTTL int32 = 3600

// The downward-API variables the bench Job passes to `seckill bench`
// (fleet.ClusterFromEnv reads them).
const (
	EnvNodeName     = "SECKILL_NODE_NAME"
	EnvPodName      = "SECKILL_POD_NAME"
	EnvPodNamespace = "SECKILL_POD_NAMESPACE"
)

// header opens every generated file.
const header = "# Generated by internal/cluster (go generate ./internal/cluster, or make manifests): do not edit.\n"

// marshal writes objects as one YAML stream.
func marshal(objs []any) ([]byte, error) {
	var b bytes.Buffer
	b.WriteString(header)
	for _, o := range objs {
		y, err := yaml.Marshal(o)
		if err != nil {
			return nil, fmt.Errorf("marshal %T: %w", o, err)
		}
		b.WriteString("---\n")
		b.Write(dropCreationTimestamps(y))
	}
	return b.Bytes(), nil
}

// dropCreationTimestamps removes the `creationTimestamp: null` lines the
// typed objects marshal with.
func dropCreationTimestamps(y []byte) []byte {
	var out []string
	for _, l := range strings.Split(string(y), "\n") {
		if strings.TrimSpace(l) == "creationTimestamp: null" {
			continue
		}
		out = append(out, l)
	}
	return []byte(strings.Join(out, "\n"))
}

// Render returns every file of deploy/k8s, by path under it.
func Render() (map[string][]byte, error) {
	setsOf, common, err := topologySets()
	if err != nil {
		return nil, err
	}
	files := map[string][]byte{}
	if err := renderBase(files, setsOf[Topologies[0]], common); err != nil {
		return nil, err
	}
	for _, t := range Topologies {
		if err := renderOverlay(files, t, setsOf[t], common); err != nil {
			return nil, err
		}
	}
	if err := durabilityComponents(files, setsOf); err != nil {
		return nil, err
	}
	if err := put(files, "bench/job.yaml", benchJob()); err != nil {
		return nil, err
	}
	files["bench/kustomization.yaml"] = []byte(header + `# The bench as a Job in a lab's namespace (after the lab is up):
#   kubectl apply -n NS -k deploy/k8s/bench
apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
resources:
- job.yaml
`)
	if err := chaosJobs(files); err != nil {
		return nil, err
	}
	return files, nil
}

// put adds objs to files as one YAML stream at p.
func put(files map[string][]byte, p string, objs []any) error {
	b, err := marshal(objs)
	if err != nil {
		return err
	}
	files[p] = b
	return nil
}

// topologySets returns each topology's sets, and the names of the sets
// that render the same in every topology: those are the base's, the
// others each overlay's.
func topologySets() (map[string][]set, map[string]bool, error) {
	rendered := map[string]map[string][]byte{}
	setsOf := map[string][]set{}
	for _, t := range Topologies {
		sets, err := Sets(t)
		if err != nil {
			return nil, nil, err
		}
		setsOf[t] = sets
		rendered[t] = map[string][]byte{}
		for _, s := range sets {
			b, err := marshal(s.objects(server.DurabilityDefault))
			if err != nil {
				return nil, nil, err
			}
			rendered[t][s.name] = b
		}
	}
	common := map[string]bool{}
	for _, s := range setsOf[Topologies[0]] {
		common[s.name] = true
		for _, t := range Topologies {
			if b, ok := rendered[t][s.name]; !ok || !bytes.Equal(b, rendered[Topologies[0]][s.name]) {
				common[s.name] = false
			}
		}
	}
	return setsOf, common, nil
}

// renderBase writes deploy/k8s/base: the sets common to every topology, the
// instances, nginx and its configuration, the network policies and the
// kustomization.
func renderBase(files map[string][]byte, sets []set, common map[string]bool) error {
	var baseServers []any
	for _, s := range sets {
		if common[s.name] {
			baseServers = append(baseServers, s.objects(server.DurabilityDefault)...)
		}
	}
	for _, f := range []struct {
		path string
		objs []any
	}{
		{"base/servers.yaml", baseServers},
		{"base/instances.yaml", instances()},
		{"base/nginx.yaml", nginx()},
		{"base/network-policy.yaml", networkPolicies()},
	} {
		if err := put(files, f.path, f.objs); err != nil {
			return err
		}
	}
	files["base/nginx/nginx.conf"] = []byte(seckill.NginxConf())
	files["base/nginx/http.conf.template"] = []byte(NginxHTTPConf())
	files["base/nginx/listen.conf.template"] = []byte(NginxListenConf())
	files["base/kustomization.yaml"] = []byte(header + `# The part of the lab both topologies share: the instances, nginx, MariaDB
# and the five Redlock Redis servers, the network policies. The admin token
# comes from admin-token.env, which is never committed: write it first,
#   echo "SECKILL_ADMIN_TOKEN=$(openssl rand -hex 24)" > deploy/k8s/base/admin-token.env
apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
labels:
- pairs:
    ` + LabelPartOf + `: ` + PartOf + `
resources:
- instances.yaml
- nginx.yaml
- servers.yaml
- network-policy.yaml
configMapGenerator:
- name: ` + nginxConfigMap + `
  files:
  - nginx/nginx.conf
  - nginx/http.conf.template
  - nginx/listen.conf.template
secretGenerator:
- name: ` + AdminSecret + `
  envs:
  - admin-token.env
  options:
    disableNameSuffixHash: true
`)
	return nil
}

// renderOverlay writes topology t's overlay: its own sets and a
// kustomization over the base with the instances' server variables.
func renderOverlay(files map[string][]byte, t string, sets []set, common map[string]bool) error {
	var objs []any
	for _, s := range sets {
		if !common[s.name] {
			objs = append(objs, s.objects(server.DurabilityDefault)...)
		}
	}
	if err := put(files, t+"/servers.yaml", objs); err != nil {
		return err
	}
	env, err := ServerEnv(t)
	if err != nil {
		return err
	}
	var lits []string
	for _, kv := range env {
		lits = append(lits, "  - "+kv[0]+"="+kv[1])
	}
	files[t+"/kustomization.yaml"] = []byte(header + `# The ` + t + ` topology: the servers ` + "`seckill up --topology " + t + "`" + ` runs, each
# component a pod. The instances' server variables are the local stack's,
# mapped to the pods. The durability of every server is the default
# (` + "`seckill up --durability default`" + `); for another level, uncomment one line:
apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
resources:
- ../base
- servers.yaml
configMapGenerator:
- name: ` + ServersConfig + `
  literals:
` + strings.Join(lits, "\n") + `
# components:
# - ../durability/fsync
# - ../durability/none
`)
	return nil
}

// durabilityComponents writes a kustomize Component per durability level
// other than the default: for each StatefulSet whose container differs at
// that level, a patch of its container (arguments the level appends are
// appended, so one patch serves every topology), and for a server without
// a switch for its fsync its data on tmpfs.
func durabilityComponents(files map[string][]byte, setsOf map[string][]set) error {
	for _, d := range server.Durabilities() {
		if d == server.DurabilityDefault {
			continue
		}
		seen := map[string]bool{}
		var patches []string
		addPatch := func(name, f string, body []byte) {
			files[path.Join("durability", d, f)] = append([]byte(header), body...)
			patches = append(patches, "- path: "+f+"\n  target:\n    kind: StatefulSet\n    name: "+name)
		}
		for _, t := range Topologies {
			for _, s := range setsOf[t] {
				if seen[s.name] {
					continue
				}
				seen[s.name] = true
				appended, merge, err := durabilityPatch(s.name, setsOf, d)
				if err != nil {
					return fmt.Errorf("durability %s: %w", d, err)
				}
				if merge != nil {
					p := map[string]any{"apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": map[string]any{"name": s.name},
						"spec": map[string]any{"template": map[string]any{"spec": map[string]any{"containers": []any{merge}}}}}
					y, err := yaml.Marshal(p)
					if err != nil {
						return fmt.Errorf("durability %s: %s patch: %w", d, s.name, err)
					}
					addPatch(s.name, s.name+".yaml", y)
				}
				if len(appended) > 0 {
					var ops []map[string]any
					for _, a := range appended {
						ops = append(ops, map[string]any{"op": "add", "path": "/spec/template/spec/containers/0/args/-", "value": a})
					}
					y, err := yaml.Marshal(ops)
					if err != nil {
						return fmt.Errorf("durability %s: %s args patch: %w", d, s.name, err)
					}
					addPatch(s.name, s.name+"-args.yaml", append([]byte("# "+s.name+" at durability "+d+": these arguments after its own, in every topology.\n"), y...))
				}
				if slices.Contains(s.w.tmpfsAt, d) {
					// The data volume joins the pod's volumes, or is its only one.
					add := "/spec/template/spec/volumes\n  value:\n  -"
					if len(s.pod().Volumes) > 0 {
						add = "/spec/template/spec/volumes/-\n  value:\n   "
					}
					addPatch(s.name, s.name+"-tmpfs.yaml", []byte(`# `+s.name+` has no switch for its fsync: its data goes to tmpfs (a
# memory-backed emptyDir), where an fsync costs nothing.
- op: remove
  path: /spec/volumeClaimTemplates
- op: add
  path: `+add+` name: `+dataVolume+`
    emptyDir:
      medium: Memory
      sizeLimit: 256Mi
`))
				}
			}
		}
		sort.Strings(patches)
		files[path.Join("durability", d, "kustomization.yaml")] = []byte(header + `# Every server at durability level ` + d + ` (` + "`seckill up --durability " + d + "`" + `):
# add ../durability/` + d + ` to an overlay's components.
apiVersion: kustomize.config.k8s.io/v1alpha1
kind: Component
patches:
` + strings.Join(patches, "\n") + "\n")
	}
	return nil
}

// durabilityPatch is how StatefulSet name's container at level d differs
// from the default, the same in every topology that runs it: the
// arguments d appends to the default's, and a strategic-merge patch of the
// rest (nil when nothing else differs). A difference that depends on the
// topology is an error: one component serves every overlay.
func durabilityPatch(name string, setsOf map[string][]set, d string) (appended []string, merge map[string]any, err error) {
	first := true
	for _, t := range Topologies {
		for _, s := range setsOf[t] {
			if s.name != name {
				continue
			}
			base, at := s.w.container(s, server.DurabilityDefault), s.w.container(s, d)
			var a []string
			if len(at.Args) > len(base.Args) && slices.Equal(at.Args[:len(base.Args)], base.Args) {
				a = at.Args[len(base.Args):]
				at.Args = base.Args
			}
			m := containerPatch(base, at)
			if len(m) == 1 { // its name only
				m = nil
			}
			if first {
				appended, merge, first = a, m, false
				continue
			}
			if !slices.Equal(a, appended) || !reflect.DeepEqual(m, merge) {
				return nil, nil, fmt.Errorf("%s differs between the topologies at %s", name, d)
			}
		}
	}
	return appended, merge, nil
}

func envEqual(a, b corev1.EnvVar) bool { return a.Name == b.Name && a.Value == b.Value }

// containerPatch is a strategic-merge patch of container at: its name,
// its command and args when they differ from base's, and its variables
// that differ.
func containerPatch(base, at corev1.Container) map[string]any {
	p := map[string]any{"name": at.Name}
	if !slices.Equal(base.Command, at.Command) {
		p["command"] = at.Command
	}
	if !slices.Equal(base.Args, at.Args) {
		p["args"] = at.Args
	}
	var env []any
	for _, e := range at.Env {
		if !slices.ContainsFunc(base.Env, func(b corev1.EnvVar) bool { return envEqual(b, e) }) {
			env = append(env, map[string]any{"name": e.Name, "value": e.Value})
		}
	}
	if len(env) > 0 {
		p["env"] = env
	}
	return p
}

// Unrendered are the files under deploy/k8s that Render does not write
// and the generator keeps: the admin token a user writes (never
// committed).
var Unrendered = []string{"base/admin-token.env"}
