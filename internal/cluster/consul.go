package cluster

import (
	"fmt"
	"strconv"

	"github.com/seckill-lab/seckill/internal/server"
	corev1 "k8s.io/api/core/v1"
)

// Consul's workloads on a cluster, one per kind (standalone and ha member),
// and its pods' identity.
func init() { addWorkloads(consulWorkload(server.KindConsul), consulWorkload(server.KindConsulMember)) }

// consulSecurity: the hashicorp/consul image's user consul (uid 100,
// group consul 1000); the container runs `consul agent` itself, not
// the entrypoint, which would chown and su-exec as root.
var consulSecurity = podSecurity{user: 100, group: 1000, scratch: []string{"/tmp"}}

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
