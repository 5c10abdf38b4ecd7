package doctor

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/seckill-lab/seckill/internal/server"
	"github.com/seckill-lab/seckill/internal/stack"
	"github.com/seckill-lab/seckill/internal/testenv"
)

// TestDoctorFake runs Doctor over a fake layout: found items carry their
// path, missing ones the install line, and OK follows the needed ones.
func TestDoctorFake(t *testing.T) {
	tests := []struct {
		name     string
		files    []string
		backends []stack.Backend
		ok       bool
		missing  string
		install  string
		also     string // a line of the output naming the other etcd
	}{
		{"all there (debian)", []string{"x usr/bin/apt-get", "x usr/bin/redis-server", "x usr/bin/etcd", "x usr/bin/java",
			"x usr/sbin/mariadbd", "x usr/bin/mariadb-install-db", "x usr/sbin/nginx", "usr/share/java/zookeeper.jar", "x lab/bin/consul"}, nil, true, "", "", ""},
		{"the lab's etcd and the distribution's", []string{"x usr/bin/apt-get", "x usr/bin/redis-server", "x usr/bin/etcd", "x lab/bin/etcd", "x usr/bin/java",
			"x usr/sbin/mariadbd", "x usr/bin/mariadb-install-db", "x usr/sbin/nginx", "usr/share/java/zookeeper.jar"}, nil, true, "", "",
			"etcd: also ROOT/usr/bin/etcd; `seckill up --etcd PATH` runs another"},
		{"etcd missing (fedora)", []string{"x usr/bin/dnf", "x usr/bin/redis-server", "x usr/bin/java",
			"x usr/libexec/mariadbd", "x usr/bin/mariadb-install-db", "x usr/sbin/nginx",
			"x opt/zookeeper/bin/zkServer.sh", "opt/zookeeper/lib/zookeeper-3.8.4.jar"}, nil, false, "etcd", "sudo dnf install etcd", ""},
		{"etcd missing but not needed (brew)", []string{"x opt/homebrew/bin/brew", "x opt/homebrew/bin/redis-server", "x opt/homebrew/opt/openjdk/bin/java",
			"x opt/homebrew/opt/mariadb/bin/mariadbd", "x opt/homebrew/opt/mariadb/bin/mariadb-install-db", "x opt/homebrew/bin/nginx",
			"x opt/homebrew/opt/zookeeper/libexec/bin/zkServer.sh", "opt/homebrew/opt/zookeeper/libexec/lib/zookeeper-3.9.2.jar"},
			[]stack.Backend{stack.BackendRedis, stack.Backend("zookeeper"), stack.BackendMySQL}, true, "etcd", "brew install etcd", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			root := t.TempDir()
			testenv.Tree(t, root, append([]string{"usr/bin/"}, tc.files...)...)
			f := stack.Finder{Root: root, Path: filepath.Join(root, "usr/bin"), Lab: filepath.Join(root, "lab/bin")}
			rep, err := Run(context.Background(), Options{Finder: &f, Backends: tc.backends, Dir: filepath.Join(root, "run"), NoVersions: true})
			if err != nil {
				t.Fatal(err)
			}
			if rep.OK() != tc.ok {
				t.Errorf("OK = %v, want %v: %+v", rep.OK(), tc.ok, rep.Items)
			}
			for _, it := range rep.Items {
				switch {
				case it.Name == "consul" && !it.Found():
					// Optional, and no package has it: make deps builds it.
					if it.Needed || it.Install != "make deps" || !strings.Contains(it.Note, "optional") {
						t.Errorf("consul: %+v, want not needed, installed by make deps", it)
					}
				case it.Name == tc.missing:
					if it.Found() || it.Install != server.InstallLine(rep.PackageManager, strings.Fields(tc.install)[len(strings.Fields(tc.install))-1:]) {
						t.Errorf("%s: %+v, want missing with %q", it.Name, it, tc.install)
					}
				case !it.Found() || !strings.HasPrefix(it.Path, root):
					t.Errorf("%s: %+v, want found under %s", it.Name, it, root)
				}
			}
			var b strings.Builder
			if err := rep.Write(&b); err != nil {
				t.Fatal(err)
			}
			if tc.install != "" && !strings.Contains(b.String(), tc.install) {
				t.Errorf("doctor output lacks %q:\n%s", tc.install, b.String())
			}
			if also := strings.ReplaceAll(tc.also, "ROOT", root); also != "" && !strings.Contains(b.String(), also) {
				t.Errorf("doctor output lacks %q:\n%s", also, b.String())
			}
			if !strings.Contains(b.String(), "no stack") {
				t.Errorf("doctor output does not describe the run directory:\n%s", b.String())
			}
		})
	}
}
