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
	"github.com/seckill-lab/seckill/lockimpl/etcdlock"
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
	etcdWorkload(server.KindEtcd), etcdWorkload(server.KindEtcdMember),
	zkWorkload(server.KindZooKeeper), zkWorkload(server.KindZKMember),
	consulWorkload(server.KindConsul), consulWorkload(server.KindConsulMember),
	{kind: server.KindMySQL, set: named("mariadb"), port: 3306, ports: []corev1.ContainerPort{tcp("mysql", 3306)}, mount: "/var/lib/mysql",
		container: func(s set, d string) corev1.Container {
			return corev1.Container{Name: "mariadb", Image: server.MariaDB.Image, Args: server.MariaDBArgs(d),
				Env:            []corev1.EnvVar{{Name: "MARIADB_ALLOW_EMPTY_ROOT_PASSWORD", Value: "1"}, {Name: "MARIADB_DATABASE", Value: server.DatabaseName}},
				ReadinessProbe: execProbe(5, "healthcheck.sh", "--connect", "--innodb_initialized"),
				LivenessProbe:  tcpProbe(3306, 30)}
		}, cpu: [2]string{"200m", "2"}, mem: [2]string{"256Mi", "1Gi"}, sec: mariadbSecurity},
}

// etcdNoFsync is etcd's switch for its fsync (etcd 3.5 and later; the
// image is 3.7).
const etcdNoFsync = "--unsafe-no-fsync"

func etcdWorkload(k server.Kind) *workload {
	return &workload{kind: k, set: named("etcd"), port: 2379, ports: []corev1.ContainerPort{tcp("client", 2379), tcp("peer", 2380)},
		mount: "/var/lib/etcd", quorum: true,
		container: func(s set, d string) corev1.Container {
			args := []string{"--name=$(POD_NAME)", "--data-dir=/var/lib/etcd/data",
				"--listen-client-urls=http://0.0.0.0:2379", "--advertise-client-urls=http://$(POD_NAME).etcd:2379",
				"--listen-peer-urls=http://0.0.0.0:2380", "--initial-advertise-peer-urls=http://$(POD_NAME).etcd:2380",
				"--initial-cluster=" + memberURLs(s, 2380), "--initial-cluster-state=new", "--initial-cluster-token=seckill"}
			if k == server.KindEtcdMember {
				args = append(args, etcdlock.ServerFlags()...)
			}
			// Durability none keeps the data on the PVC and turns etcd's
			// fsync off (etcd 3.5 and later): a member whose pod is
			// replaced comes back with its data and rejoins, where
			// --initial-cluster-state is ignored. The flag comes last, so
			// the durability component appends it to either topology's
			// arguments.
			if d == server.DurabilityNone {
				args = append(args, etcdNoFsync)
			}
			return corev1.Container{Name: "etcd", Image: server.Etcd.Image, Command: []string{"/usr/local/bin/etcd"}, Args: args,
				Env:            []corev1.EnvVar{podEnv("POD_NAME", "metadata.name")},
				ReadinessProbe: execProbe(5, "/usr/local/bin/etcdctl", "--endpoints=http://127.0.0.1:2379", "endpoint", "health"),
				LivenessProbe:  tcpProbe(2379, 10)}
		}, cpu: [2]string{"100m", "1"}, mem: [2]string{"128Mi", "512Mi"}, sec: etcdSecurity}
}

func zkWorkload(k server.Kind) *workload {
	return &workload{kind: k, set: named("zookeeper"), port: 2181,
		ports: []corev1.ContainerPort{tcp("client", 2181), tcp("peer", 2888), tcp("election", 3888)},
		mount: "/data", quorum: true,
		container: func(s set, d string) corev1.Container {
			env := []corev1.EnvVar{
				{Name: "ZOO_TICK_TIME", Value: "2000"}, {Name: "ZOO_INIT_LIMIT", Value: "10"}, {Name: "ZOO_SYNC_LIMIT", Value: "5"},
				{Name: "ZOO_DATA_LOG_DIR", Value: "/data/log"},
				{Name: "ZOO_4LW_COMMANDS_WHITELIST", Value: "ruok,srvr,stat,mntr"},
				{Name: "ZOO_ADMINSERVER_ENABLED", Value: "false"}, {Name: "ZOO_MAX_CLIENT_CNXNS", Value: "0"},
				{Name: "ZOO_CFG_EXTRA", Value: "forceSync=" + server.ZKForceSync(d) + " quorumListenOnAllIPs=true"},
				{Name: "JVMFLAGS", Value: "-Xmx256m"},
				// The entrypoint writes zoo.cfg there, zkServer.sh (the
				// probe's too) reads it there.
				{Name: "ZOO_CONF_DIR", Value: zkConfDir}, {Name: "ZOOCFGDIR", Value: zkConfDir},
			}
			if k == server.KindZKMember {
				var servers []string
				for i := range s.nodes {
					servers = append(servers, fmt.Sprintf("server.%d=%s-%d.%s:2888:3888;2181", i+1, s.name, i, s.name))
				}
				env = append(env, corev1.EnvVar{Name: "ZOO_SERVERS", Value: strings.Join(servers, " ")})
			}
			return corev1.Container{Name: "zookeeper", Image: server.ZooKeeper.Image,
				// The image's configuration (logback.xml) is copied to the
				// writable zkConfDir; myid is the pod's ordinal plus one.
				Command: []string{"sh", "-c", "cp /conf/* " + zkConfDir + "/ && export ZOO_MY_ID=$((${HOSTNAME##*-}+1)) && " +
					"exec /docker-entrypoint.sh zkServer.sh start-foreground"},
				Env:            env,
				ReadinessProbe: execProbe(10, "zkServer.sh", "status"),
				LivenessProbe:  tcpProbe(2181, 20)}
		}, cpu: [2]string{"100m", "1"}, mem: [2]string{"384Mi", "512Mi"}, sec: zookeeperSecurity}
}

// zkConfDir is ZooKeeper's configuration directory on a cluster: an
// emptyDir (the image's /conf is on the read-only root filesystem).
const zkConfDir = "/zk-conf"

func consulWorkload(k server.Kind) *workload {
	return &workload{kind: k, set: named("consul"), port: 8500,
		ports: []corev1.ContainerPort{tcp("http", 8500), tcp("server", 8300), tcp("serf-lan", 8301),
			{Name: "serf-lan-udp", ContainerPort: 8301, Protocol: corev1.ProtocolUDP}},
		mount: "/consul/data", tmpfsAt: []string{server.DurabilityNone}, quorum: true,
		container: func(s set, d string) corev1.Container {
			args := []string{"agent", "-server", "-bootstrap-expect=" + strconv.Itoa(len(s.nodes)), "-node=$(POD_NAME)",
				"-data-dir=/consul/data", "-bind=0.0.0.0", "-advertise=$(POD_IP)", "-client=0.0.0.0", "-log-level=warn",
				"-disable-host-node-id=true", "-hcl=performance { raft_multiplier = 1 }", "-hcl=disable_update_check = true"}
			if len(s.nodes) > 1 {
				for i := range s.nodes {
					args = append(args, fmt.Sprintf("-retry-join=%s-%d.%s", s.name, i, s.name))
				}
			}
			// `consul agent` itself: the image's entrypoint chowns the data
			// directory and su-execs, which a non-root container cannot.
			return corev1.Container{Name: "consul", Image: server.Consul.Image, Command: []string{"consul"}, Args: args,
				Env:            []corev1.EnvVar{podEnv("POD_NAME", "metadata.name"), podEnv("POD_IP", "status.podIP")},
				ReadinessProbe: execProbe(5, "consul", "operator", "raft", "list-peers"),
				LivenessProbe:  tcpProbe(8500, 10)}
		}, cpu: [2]string{"100m", "1"}, mem: [2]string{"128Mi", "512Mi"}, sec: consulSecurity}
}

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
		// No fault proxy on a cluster: Chaos Mesh injects the faults.
		{Name: config.EnvProxyShift, Value: ""},
	}
}
