package cluster

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/compose-spec/compose-go/v2/cli"
	"github.com/compose-spec/compose-go/v2/types"

	"github.com/seckill-lab/seckill/internal/config"
	"github.com/seckill-lab/seckill/internal/server"
)

// The compose file's side of the offline validation: docker-compose.yml
// loaded by the compose-spec loader (compose-go, the library `docker
// compose` itself parses with), schema-validated, then cross-checked
// against internal/server's table and internal/config as the cluster's
// objects are.

// composeProfileHA is the profile of the ha topology; compose-ha.env is
// the env file that points the instances at its servers.
const (
	composeProfileHA = "ha"
	composeHAEnv     = "compose-ha.env"
)

// composeInstances are the instance services, composeNginx nginx's.
var composeInstances = []string{"inst1", "inst2", "inst3"}

const composeNginx = "nginx"

// loadCompose loads dir/docker-compose.yml with the compose-spec loader:
// schema validation (an unknown field fails), interpolation, consistency
// checks (a depends_on naming no service fails). Its environment is only
// the env files given, never the process's, so the file's documented
// defaults apply.
func loadCompose(ctx context.Context, dir string, envFiles []string, profiles ...string) (*types.Project, error) {
	opts, err := cli.NewProjectOptions([]string{filepath.Join(dir, "docker-compose.yml")},
		cli.WithName("seckill"),
		cli.WithWorkingDirectory(dir),
		cli.WithEnv(nil),
		cli.WithEnvFiles(envFiles...),
		cli.WithDotEnv,
		cli.WithProfiles(profiles),
	)
	if err != nil {
		return nil, fmt.Errorf("compose options: %w", err)
	}
	p, err := opts.LoadProject(ctx)
	if err != nil {
		return nil, fmt.Errorf("load %s: %w", filepath.Join(dir, "docker-compose.yml"), err)
	}
	return p, nil
}

// composeCase is one way the README runs the compose file.
type composeCase struct {
	topology string
	envFiles []string
	profiles []string
}

func composeCases() []composeCase {
	return []composeCase{
		{topology: "single"},
		{topology: "ha", envFiles: []string{filepath.Join(repoRoot, composeHAEnv)}, profiles: []string{composeProfileHA}},
	}
}

// crossCheckCompose checks a loaded project against the lab's
// description, as crossCheck does a cluster overlay: every server kind
// the local stack runs in topology is there with as many services, and
// each service's image is its server's in the table; the instances set
// exactly the variables `seckill serve` reads, and every address they get
// names a service of a kind the local topology runs; nginx runs the
// table's image; every image is pinned.
//
// The ha profile adds the ha servers to the single topology's (a service
// may not depend on one of a profile, so the instances wait for the single
// etcd, ZooKeeper and Consul too); those extra services must be the
// single topology's, and no instance may address them.
func crossCheckCompose(p *types.Project, topology string) error {
	var errs []error
	fail := func(format string, a ...any) { errs = append(errs, fmt.Errorf(format, a...)) }
	kindOf := map[string]server.Kind{} // service -> kind, for the servers
	got := map[server.Kind]int{}
	for _, name := range slices.Sorted(maps.Keys(p.Services)) {
		s := p.Services[name]
		if err := imagePinned(s.Image); err != nil {
			fail("service %s: %w", name, err)
		}
		label, ok := s.Labels[LabelKind]
		if !ok {
			continue
		}
		k := server.Kind(label)
		sp, _, ok := server.KindOf(k)
		if !ok {
			fail("service %s: kind %q is no server's", name, k)
			continue
		}
		kindOf[name] = k
		got[k]++
		if s.Image != sp.Image {
			fail("service %s: image %s, the table's is %s", name, s.Image, sp.Image)
		}
		if s.HealthCheck == nil || len(s.HealthCheck.Test) == 0 {
			fail("service %s: no healthcheck", name)
		}
	}
	local := localKinds(topology)
	for k, n := range local {
		if got[k] != n {
			fail("%s: the local %s topology runs %d %s, the compose file %d", topology, topology, n, k, got[k])
		}
	}
	single := localKinds("single")
	for k, n := range got {
		if _, ok := local[k]; ok {
			continue
		}
		if _, ok := single[k]; topology == "single" || !ok || single[k] != n {
			fail("%s: the compose file runs %d %s, the local stack none", topology, n, k)
		}
	}

	// The instances.
	want := slices.Sorted(slices.Values(config.EnvVars()))
	for _, name := range composeInstances {
		s, ok := p.Services[name]
		if !ok {
			fail("no service %s", name)
			continue
		}
		if s.Image != InstanceImage || s.Build == nil {
			fail("service %s: image %q built %v, want %s built from the Dockerfile", name, s.Image, s.Build != nil, InstanceImage)
		}
		env := map[string]string{}
		for k, v := range s.Environment {
			if v != nil {
				env[k] = *v
			}
		}
		var names []string
		for k := range env {
			if strings.HasPrefix(k, "SECKILL_") {
				names = append(names, k)
			}
		}
		slices.Sort(names)
		if !slices.Equal(names, want) {
			fail("service %s sets %v, `seckill serve` reads %v", name, names, want)
		}
		if env[config.EnvInstance] != name {
			fail("service %s: %s=%q", name, config.EnvInstance, env[config.EnvInstance])
		}
		if env[config.EnvRedisMaster] != server.SentinelMaster {
			fail("service %s: %s=%q, the Sentinels monitor %q", name, config.EnvRedisMaster, env[config.EnvRedisMaster], server.SentinelMaster)
		}
		if dsn := server.MySQLDSN(serviceOf(env[config.EnvMySQLDSN])+":3306", server.DatabaseName); env[config.EnvMySQLDSN] != dsn {
			fail("service %s: %s=%q, want %q", name, config.EnvMySQLDSN, env[config.EnvMySQLDSN], dsn)
		}
		for _, v := range config.ServerVars() {
			if v == config.EnvRedisMaster {
				continue
			}
			addrs := config.SplitList(env[v])
			if v == config.EnvMySQLDSN {
				addrs = []string{serviceOf(env[v]) + ":"}
			}
			for _, a := range addrs {
				host, _, _ := strings.Cut(a, ":")
				k, ok := kindOf[host]
				if !ok {
					fail("service %s: %s names %q, no server service", name, v, host)
					continue
				}
				if _, ok := local[k]; !ok {
					fail("service %s: %s names %s, of kind %s, which the local %s topology does not run", name, v, host, k, topology)
				}
				// A service may not depend on one of a profile (docker-compose
				// 1.29 knows no `required: false`): the instances of the ha
				// profile restart until its servers answer.
				if _, ok := s.DependsOn[host]; !ok && len(p.Services[host].Profiles) == 0 {
					fail("service %s: %s names %s, which it does not wait for", name, v, host)
				}
			}
		}
	}
	if ng, ok := p.Services[composeNginx]; !ok {
		fail("no service %s", composeNginx)
	} else if ng.Image != server.Nginx.Image {
		fail("service %s: image %s, the table's is %s", composeNginx, ng.Image, server.Nginx.Image)
	}
	return errors.Join(errs...)
}

// serviceOf is the host of a DSN's tcp(host:port).
func serviceOf(dsn string) string {
	_, after, _ := strings.Cut(dsn, "tcp(")
	host, _, _ := strings.Cut(after, ":")
	return host
}

// TestCompose: docker-compose.yml loads with the compose-spec loader, in
// each topology, and agrees with the table.
func TestCompose(t *testing.T) {
	for _, tc := range composeCases() {
		t.Run(tc.topology, func(t *testing.T) {
			p, err := loadCompose(t.Context(), repoRoot, tc.envFiles, tc.profiles...)
			if err != nil {
				t.Fatal(err)
			}
			if err := crossCheckCompose(p, tc.topology); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestComposeCatches: a copy of docker-compose.yml with an unknown field,
// a dropped variable, a missing server, an unpinned or foreign image fails
// the loading or the cross-check.
func TestComposeCatches(t *testing.T) {
	orig, err := os.ReadFile(filepath.Join(repoRoot, "docker-compose.yml"))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name     string
		topology string
		old, new string
		want     string
	}{
		{"unknown field", "single", "\n  etcd:\n    image:", "\n  etcd:\n    imagee: x\n    image:", "imagee"},
		{"unknown top-level field", "single", "\nservices:\n", "\nservice_defaults: {}\nservices:\n", "service_defaults"},
		{"dropped variable", "single", "  SECKILL_MAX_QTY: \"100\"\n", "", config.EnvListen + " " + config.EnvMySQLDSN + " "},
		{"missing server", "single", "  redis5: *redis\n", "  redis5:\n    <<: *redis\n    labels: {}\n", "the local single topology runs 5 redis, the compose file 4"},
		{"missing dependency", "single", "  redis5: *redis\n", "", `depends on undefined service "redis5"`},
		{"missing ha member", "ha", "  sentinel3: *sentinel\n", "", "the local ha topology runs 3 sentinel, the compose file 2"},
		{"latest image", "single", "image: nginx:1.28.0", "image: nginx:latest", "not pinned"},
		{"foreign image", "single", "image: mariadb:10.11", "image: mysql:8.0", "the table's is " + server.MariaDB.Image},
		{"wrong service name", "single", `"${SECKILL_ZK_SERVERS:-zookeeper:2181}"`, `"${SECKILL_ZK_SERVERS:-zk:2181}"`, `names "zk", no server service`},
		{"ha instance on a single server", "ha", `"${SECKILL_ETCD_ENDPOINTS:-etcd:2379}"`, `"etcd:2379"`, "of kind etcd, which the local ha topology does not run"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if !strings.Contains(string(orig), tc.old) {
				t.Fatalf("docker-compose.yml has no %q", tc.old)
			}
			dir := t.TempDir()
			mutated := strings.Replace(string(orig), tc.old, tc.new, 1)
			if err := os.WriteFile(filepath.Join(dir, "docker-compose.yml"), []byte(mutated), 0o644); err != nil {
				t.Fatal(err)
			}
			var c composeCase
			for _, cc := range composeCases() {
				if cc.topology == tc.topology {
					c = cc
				}
			}
			p, err := loadCompose(t.Context(), dir, c.envFiles, c.profiles...)
			if err == nil {
				err = crossCheckCompose(p, tc.topology)
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("want an error with %q, got %v", tc.want, err)

			}
		})
	}
}
