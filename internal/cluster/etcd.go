package cluster

import (
	"github.com/seckill-lab/seckill/internal/server"
	"github.com/seckill-lab/seckill/lockimpl/etcdlock"
	corev1 "k8s.io/api/core/v1"
)

// etcd's workloads on a cluster, one per kind (standalone and ha member),
// and its pods' identity.
func init() { addWorkloads(etcdWorkload(server.KindEtcd), etcdWorkload(server.KindEtcdMember)) }

// etcdSecurity: etcd's image is distroless without a user of its own;
// distroless's nonroot (65532), the PVC made writable by fsGroup.
var etcdSecurity = podSecurity{user: 65532, group: 65532}

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
