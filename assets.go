// Package seckill holds the files at the root of the lab that its parts
// share at run time: the nginx configuration, used verbatim by docker
// compose and by the local stack (internal/stack), and the Chaos Mesh
// experiments of deploy/chaos that `seckill scenario chaos` prints.
package seckill

import (
	"embed"
	"strings"
)

//go:embed nginx.conf
var nginxConf string

// NginxConf returns nginx.conf, the one nginx configuration of the lab.
func NginxConf() string { return nginxConf }

//go:embed deploy/chaos/*.yaml
var chaosFS embed.FS

// ChaosExperiment returns deploy/chaos/NAME.yaml: the cluster form of lab
// scenario NAME (a Chaos Mesh experiment, or for pause-holder a Job).
func ChaosExperiment(name string) ([]byte, bool) {
	b, err := chaosFS.ReadFile("deploy/chaos/" + name + ".yaml")
	return b, err == nil
}

// ChaosExperiments lists the scenarios that have a cluster form, sorted.
func ChaosExperiments() []string {
	entries, _ := chaosFS.ReadDir("deploy/chaos")
	var out []string
	for _, e := range entries {
		out = append(out, strings.TrimSuffix(e.Name(), ".yaml"))
	}
	return out
}
