package cluster

import (
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// podSecurity is who a pod runs as: its image's own non-root user and
// group, and the directories its containers write outside their volumes.
type podSecurity struct {
	// user and group are the numeric uid and gid the image's entrypoint
	// runs its server as; group is also the pod's fsGroup, so the PVC and
	// the emptyDirs are writable by it.
	user, group int64
	// scratch are the directories written outside the pod's volumes: an
	// emptyDir each, mounted in every container, since the root
	// filesystem is read-only.
	scratch []string
}

// The identities of the lab's pods, each its image's own user.
var (
	// redisSecurity: the official redis image's user redis (999); its
	// entrypoint switches users only when started as root.
	redisSecurity = podSecurity{user: 999, group: 999}
	// mariadbSecurity: the official mariadb image's user mysql (999); the
	// server's socket and the init's temporary files need /run/mysqld
	// and /tmp.
	mariadbSecurity = podSecurity{user: 999, group: 999, scratch: []string{"/run/mysqld", "/tmp"}}
	// seckillSecurity: the lab's image (the Dockerfile's USER 65532:65532,
	// distroless's nonroot), for the instances and the bench Jobs; their
	// busybox helpers (the pauser, the report printer) run as the same
	// user, which lets the pauser stop the instance without a capability.
	seckillSecurity = podSecurity{user: 65532, group: 65532, scratch: []string{"/tmp"}}
	// nginxSecurity: nginx-unprivileged's user nginx (101), its pid file
	// and temporary files in /tmp.
	nginxSecurity = podSecurity{user: 101, group: 101, scratch: []string{"/tmp"}}
)

// podTemplate is the pod template of every workload of the lab: spec
// with labels, made to pass Pod Security "restricted" as sec (restricted).
func podTemplate(labels map[string]string, spec corev1.PodSpec, sec podSecurity) corev1.PodTemplateSpec {
	return corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: restricted(spec, sec)}
}

// restricted returns spec with the security contexts of Pod Security
// "restricted", the one place the lab's pods get them: the pod runs as
// sec's non-root user and group (fsGroup too) under the runtime's default
// seccomp profile; every container, init containers included, without
// privilege escalation, without any capability, on a read-only root
// filesystem with an emptyDir at each of sec's scratch directories.
func restricted(spec corev1.PodSpec, sec podSecurity) corev1.PodSpec {
	spec.SecurityContext = &corev1.PodSecurityContext{
		RunAsNonRoot: ptr(true), RunAsUser: ptr(sec.user), RunAsGroup: ptr(sec.group), FSGroup: ptr(sec.group),
		// A PVC's ownership is changed once, not at each start.
		FSGroupChangePolicy: ptr(corev1.FSGroupChangeOnRootMismatch),
		SeccompProfile:      &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
	}
	var mounts []corev1.VolumeMount
	for _, dir := range sec.scratch {
		name := scratchVolume(dir)
		spec.Volumes = append(spec.Volumes, corev1.Volume{Name: name, VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}})
		mounts = append(mounts, corev1.VolumeMount{Name: name, MountPath: dir})
	}
	secure := func(cs []corev1.Container) []corev1.Container {
		out := make([]corev1.Container, len(cs))
		for i, c := range cs {
			c.SecurityContext = &corev1.SecurityContext{
				AllowPrivilegeEscalation: ptr(false),
				Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
				ReadOnlyRootFilesystem:   ptr(true),
			}
			c.VolumeMounts = append(append([]corev1.VolumeMount(nil), c.VolumeMounts...), mounts...)
			out[i] = c
		}
		return out
	}
	spec.InitContainers = secure(spec.InitContainers)
	if len(spec.InitContainers) == 0 {
		spec.InitContainers = nil
	}
	spec.Containers = secure(spec.Containers)
	return spec
}

// scratchVolume names the emptyDir of scratch directory dir: /run/mysqld
// is scratch-run-mysqld.
func scratchVolume(dir string) string {
	return "scratch-" + strings.ReplaceAll(strings.Trim(dir, "/"), "/", "-")
}
