package cluster

import (
	"fmt"
	"strings"

	"github.com/seckill-lab/seckill/internal/server"
	corev1 "k8s.io/api/core/v1"
)

// ZooKeeper's workloads on a cluster, one per kind (standalone and ha member),
// and its pods' identity.
func init() { addWorkloads(zkWorkload(server.KindZooKeeper), zkWorkload(server.KindZKMember)) }

// zookeeperSecurity: the official zookeeper image's user zookeeper
// (1000). Its entrypoint writes zoo.cfg into the configuration
// directory, which the container copies to zkConfDir first.
var zookeeperSecurity = podSecurity{user: 1000, group: 1000, scratch: []string{zkConfDir, "/logs", "/tmp"}}

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
