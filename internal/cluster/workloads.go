// Package cluster renders the lab for a Kubernetes cluster: the kustomize
// tree under deploy/k8s (a base, the overlays single and ha, a component
// per durability level, the bench Job, and the bench Jobs of each
// scenario with a cluster form, unfenced and fenced), from the lab's own description
// of its servers (internal/server's table All) and of an instance's
// settings (internal/config). Nothing here is written by hand twice: every
// server the local stack starts in a topology becomes the pods of a
// StatefulSet, every SECKILL_* variable an instance reads gets its value
// from the same Spec.Env, with each local address mapped to the pod that
// plays that component, and the images are the table's (Spec.Image;
// nginx's unprivileged build at the same version).
// Every pod is built by one function (podTemplate), which makes it pass
// Pod Security "restricted" as its image's own non-root user.
//
// `go generate ./internal/cluster` (or `make manifests`) writes the tree;
// the tests check that the committed files are exactly what Render
// produces, build every overlay with kustomize in Go, decode each object
// strictly into its Kubernetes type and cross-check the result against the
// table, and evaluate every pod with the upstream Pod Security library.
// The package is not linked into the seckill binary.
package cluster

import (
	"fmt"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/seckill-lab/seckill/internal/config"
	"github.com/seckill-lab/seckill/internal/server"
	"github.com/seckill-lab/seckill/stock/catalog"
)

// Label keys of every object.
const (
	LabelPartOf  = "app.kubernetes.io/part-of"
	LabelName    = "app.kubernetes.io/name"
	LabelRole    = "seckill.lab/role"
	LabelKind    = "seckill.lab/kind"
	PartOf       = "seckill-lab"
	RoleServer   = "server"
	RoleInstance = "instance"
	RoleNginx    = "nginx"
	RoleBench    = "bench"
	InstanceApp  = "seckill"
	InstancesHL  = "seckill-instances"
	InstancePort = 8080
	// NginxPort is nginx's container port (nginx-unprivileged binds no
	// port below 1024), NginxServicePort its Service's: the bench's
	// http://nginx.
	NginxPort        = 8080
	NginxServicePort = 80
	AdminSecret      = "seckill-admin"
	ServersConfig    = "seckill-servers"
	InstanceImage    = "seckill-lab/seckill:dev"
	BusyboxImage     = "busybox:1.36.1"
	dataVolume       = "data"
	defaultReplica   = 3
)

// Instances is the instances' Deployment's replicas: the local stack's
// default fleet.
const Instances = defaultReplica

// set is one StatefulSet: the pods that play the components of one kind
// (or one component) of the local stack.
type set struct {
	name  string
	kind  server.Kind
	spec  *server.Spec
	nodes []string // the local components, in order: pod ordinal i plays nodes[i]
	w     *workload
}

// addr is the cluster address of pod ordinal i.
func (s set) addr(i int) string {
	return fmt.Sprintf("%s-%d.%s:%d", s.name, i, s.name, s.w.port)
}

// workload is how the cluster runs the components of one kind.
type workload struct {
	kind server.Kind
	// set names the StatefulSet of a local component (the kind's one
	// name, or the component's own for redis-primary and redis-replica).
	set  func(node string) string
	port int
	// ports are the container's ports, the client's first.
	ports []corev1.ContainerPort
	// mount is where its data lives (the PVC, or tmpfs).
	mount string
	// tmpfsAt: the durability levels at which the data is on tmpfs (the
	// server has no switch for its fsync).
	tmpfsAt []string
	// quorum: a PodDisruptionBudget keeps a majority of a set of 3 or more.
	quorum bool
	// stateOnly: it keeps no write of the lab's (a Sentinel's own state):
	// the durability levels do not apply to it.
	stateOnly bool
	// container is the container of set s at durability d.
	container func(s set, d string) corev1.Container
	cpu, mem  [2]string // requests, limits
	// sec is who its pods run as (restricted).
	sec podSecurity
	// spreadKind: its pods prefer nodes apart from every other pod of
	// the kind, whatever their set (redis-primary and redis-replica);
	// otherwise the pods of a set of 2 or more prefer nodes apart.
	spreadKind bool
}

func named(n string) func(string) string { return func(string) string { return n } }
func self(node string) string            { return node }

func tcp(name string, port int) corev1.ContainerPort {
	return corev1.ContainerPort{Name: name, ContainerPort: int32(port), Protocol: corev1.ProtocolTCP}
}

func execProbe(period int32, cmd ...string) *corev1.Probe {
	return &corev1.Probe{ProbeHandler: corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: cmd}},
		PeriodSeconds: period, TimeoutSeconds: 5, FailureThreshold: 3}
}

func tcpProbe(port int, initial int32) *corev1.Probe {
	return &corev1.Probe{ProbeHandler: corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromInt32(int32(port))}},
		InitialDelaySeconds: initial, PeriodSeconds: 10, TimeoutSeconds: 5, FailureThreshold: 6}
}

func podEnv(name, path string) corev1.EnvVar {
	return corev1.EnvVar{Name: name, ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: path}}}
}

func resources(cpu, mem [2]string) corev1.ResourceRequirements {
	return corev1.ResourceRequirements{
		Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu[0]), corev1.ResourceMemory: resource.MustParse(mem[0])},
		Limits:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu[1]), corev1.ResourceMemory: resource.MustParse(mem[1])},
	}
}

// redisServer is a Redis server's container: the local stack's persistence
// at d, listening on every address of the pod.
func redisServer(extra ...string) func(s set, d string) corev1.Container {
	return func(s set, d string) corev1.Container {
		args := append([]string{"redis-server", "--port", "6379", "--bind", "0.0.0.0", "--protected-mode", "no"}, server.RedisPersistence(d)...)
		args = append(append(args, "--dir", "/data", "--maxclients", "10000"), extra...)
		return corev1.Container{Name: "redis", Image: server.Redis.Image, Args: args,
			ReadinessProbe: execProbe(5, "redis-cli", "ping"), LivenessProbe: tcpProbe(6379, 10)}
	}
}

// replicaReady: a primary, or a replica linked to its master (the local
// check, checkRedisHA).
var replicaReady = execProbe(5, "sh", "-c", `redis-cli info replication | grep -qE '^(role:master|master_link_status:up)'`)

// sentinelConf is the Sentinel's configuration, the local stack's
// settings, monitoring the primary's pod by its DNS name.
func sentinelConf() string {
	lines := []string{
		"port 26379",
		"sentinel resolve-hostnames yes",
		"sentinel announce-hostnames yes",
		"sentinel announce-ip ${HOSTNAME}.sentinel",
		fmt.Sprintf("sentinel monitor %s redis-primary-0.redis-primary 6379 %d", server.SentinelMaster, server.SentinelQuorum),
		fmt.Sprintf("sentinel down-after-milliseconds %s %d", server.SentinelMaster, server.SentinelDownAfterMs),
		fmt.Sprintf("sentinel failover-timeout %s %d", server.SentinelMaster, server.SentinelFailoverTimeMs),
		fmt.Sprintf("sentinel parallel-syncs %s 1", server.SentinelMaster),
	}
	q := make([]string, len(lines))
	for i, l := range lines {
		q[i] = `"` + l + `"`
	}
	return "printf '%s\\n' " + strings.Join(q, " ") + " > /data/sentinel.conf\nexec redis-server /data/sentinel.conf --sentinel\n"
}

// memberURLs are the peer URLs of every pod of s: NAME-i=http://NAME-i.NAME:port.
func memberURLs(s set, port int) string {
	var out []string
	for i := range s.nodes {
		out = append(out, fmt.Sprintf("%s-%d=http://%s-%d.%s:%d", s.name, i, s.name, i, s.name, port))
	}
	return strings.Join(out, ",")
}

// workloads are the lab's workloads; each lock server's file here adds
// its own (addWorkloads).
var workloads = []*workload{
	{kind: server.KindRedis, set: named("redis"), port: 6379, ports: []corev1.ContainerPort{tcp("redis", 6379)}, mount: "/data", quorum: true,
		container: redisServer(), cpu: [2]string{"50m", "500m"}, mem: [2]string{"64Mi", "256Mi"}, sec: redisSecurity},
	// The primary and its replica prefer different nodes (preferred, not
	// required: a one-node cluster still runs both).
	{kind: server.KindRedisHA, set: self, port: 6379, ports: []corev1.ContainerPort{tcp("redis", 6379)}, mount: "/data", spreadKind: true, sec: redisSecurity,
		container: func(s set, d string) corev1.Container {
			extra := []string{"--replica-announce-ip", s.name + "-0." + s.name}
			if s.name == server.RedisReplica {
				extra = append(extra, "--replicaof", server.RedisPrimary+"-0."+server.RedisPrimary, "6379")
			}
			c := redisServer(extra...)(s, d)
			c.ReadinessProbe = replicaReady
			return c
		}, cpu: [2]string{"50m", "500m"}, mem: [2]string{"64Mi", "256Mi"}},
	{kind: server.KindSentinel, set: named("sentinel"), port: 26379, ports: []corev1.ContainerPort{tcp("sentinel", 26379)}, mount: "/data", quorum: true, stateOnly: true,
		container: func(s set, d string) corev1.Container {
			return corev1.Container{Name: "sentinel", Image: server.Redis.Image, Command: []string{"sh", "-c", sentinelConf()},
				ReadinessProbe: execProbe(5, "sh", "-c", "redis-cli -p 26379 sentinel ckquorum "+server.SentinelMaster+" | grep -q '^OK'"),
				LivenessProbe:  tcpProbe(26379, 10)}
		}, cpu: [2]string{"20m", "200m"}, mem: [2]string{"32Mi", "128Mi"}, sec: redisSecurity},
	{kind: server.KindMySQL, set: named("mariadb"), port: 3306, ports: []corev1.ContainerPort{tcp("mysql", 3306)}, mount: "/var/lib/mysql",
		container: func(s set, d string) corev1.Container {
			return corev1.Container{Name: "mariadb", Image: server.MariaDB.Image, Args: server.MariaDBArgs(d),
				Env:            []corev1.EnvVar{{Name: "MARIADB_ALLOW_EMPTY_ROOT_PASSWORD", Value: "1"}, {Name: "MARIADB_DATABASE", Value: server.DatabaseName}},
				ReadinessProbe: execProbe(5, "healthcheck.sh", "--connect", "--innodb_initialized"),
				LivenessProbe:  tcpProbe(3306, 30)}
		}, cpu: [2]string{"200m", "2"}, mem: [2]string{"256Mi", "1Gi"}, sec: mariadbSecurity},
}

// addWorkloads adds a server's workloads, one per kind.
func addWorkloads(ws ...*workload) { workloads = append(workloads, ws...) }

// workloadOf returns the workload of kind k.
func workloadOf(k server.Kind) (*workload, bool) {
	for _, w := range workloads {
		if w.kind == k {
			return w, true
		}
	}
	return nil, false
}

// instanceEnv is the instance's own settings (the servers' addresses come
// from the overlay's ConfigMap): every config.EnvVars variable that is not
// a server's.
func instanceEnv() []corev1.EnvVar {
	return []corev1.EnvVar{
		{Name: config.EnvListen, Value: ":" + strconv.Itoa(InstancePort)},
		podEnv(config.EnvInstance, "metadata.name"),
		{Name: config.EnvAdminToken, ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
			LocalObjectReference: corev1.LocalObjectReference{Name: AdminSecret}, Key: config.EnvAdminToken}}},
		{Name: config.EnvStrategy, Value: catalog.None},
		{Name: config.EnvMaxQty, Value: strconv.Itoa(config.DefaultMaxQty)},
		{Name: config.EnvDBInflight, Value: strconv.Itoa(config.DefaultDBInflight)},
		{Name: config.EnvStreamGather, Value: config.DefaultStreamGather.String()},
		// redis-stream answers once the primary has a sale, as `seckill up`
		// does at the default durability.
		{Name: config.EnvStreamReplicas, Value: "0"},
		// No fault proxy on a cluster: Chaos Mesh injects the faults.
		{Name: config.EnvProxyShift, Value: ""},
	}
}
