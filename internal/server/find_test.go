package server

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/seckill-lab/seckill/internal/testenv"
)

// TestFinderLayouts builds each platform's package layout in a temporary
// root and checks what the Finder finds. macOS cannot run in these tests
// (they run on Linux): the Homebrew layouts are directory trees only, with
// the paths the formulae install.
func TestFinderLayouts(t *testing.T) {
	tests := []struct {
		name string
		// files of the layout (see layout); PATH is "usr/bin" under the
		// root plus path.
		files []string
		path  []string
		env   map[string]string
		want  map[string]string // tool key -> path under the root
		// zk is the last classpath entry (the server jar or the last lib
		// jar), conf the first.
		zk, zkConf, log4j string
	}{
		{
			name: "debian",
			files: []string{"x usr/bin/redis-server", "x usr/bin/etcd", "x usr/bin/java", "x usr/sbin/mariadbd",
				"x usr/bin/mariadb-install-db", "x usr/bin/mysql_install_db", "x usr/sbin/nginx",
				"usr/share/java/zookeeper.jar", "etc/zookeeper/conf/log4j.properties",
				"x usr/share/zookeeper/bin/zkServer.sh"},
			want: map[string]string{"redis-server": "usr/bin/redis-server", "etcd": "usr/bin/etcd", "java": "usr/bin/java",
				"mariadbd": "usr/sbin/mariadbd", "mysql_install_db": "usr/bin/mariadb-install-db", "nginx": "usr/sbin/nginx"},
			zk: "usr/share/java/zookeeper.jar", zkConf: "etc/zookeeper/conf", log4j: "etc/zookeeper/conf/log4j.properties",
		},
		{
			name: "fedora",
			files: []string{"x usr/bin/redis-server", "x usr/bin/etcd", "x usr/bin/java", "x usr/libexec/mariadbd",
				"x usr/bin/mysql_install_db", "x usr/sbin/nginx",
				"x usr/share/zookeeper/bin/zkServer.sh", "usr/share/zookeeper/lib/zookeeper-3.8.4.jar",
				"usr/share/zookeeper/lib/zookeeper-jute-3.8.4.jar", "usr/share/zookeeper/conf/logback.xml"},
			want: map[string]string{"redis-server": "usr/bin/redis-server", "etcd": "usr/bin/etcd", "java": "usr/bin/java",
				"mariadbd": "usr/libexec/mariadbd", "mysql_install_db": "usr/bin/mysql_install_db", "nginx": "usr/sbin/nginx"},
			zk: "usr/share/zookeeper/lib/zookeeper-jute-3.8.4.jar", zkConf: "usr/share/zookeeper/conf",
		},
		{
			name: "macos-homebrew-arm",
			files: []string{"x opt/homebrew/bin/redis-server", "x opt/homebrew/bin/etcd", "x opt/homebrew/bin/nginx",
				"x opt/homebrew/opt/openjdk/bin/java", "x opt/homebrew/opt/mariadb/bin/mariadbd",
				"x opt/homebrew/opt/mariadb/bin/mariadb-install-db",
				"x opt/homebrew/opt/zookeeper/libexec/bin/zkServer.sh", "opt/homebrew/opt/zookeeper/libexec/lib/zookeeper-3.9.2.jar",
				"opt/homebrew/opt/zookeeper/libexec/lib/slf4j-api-1.7.36.jar", "opt/homebrew/opt/zookeeper/libexec/etc/zookeeper/zoo.cfg"},
			want: map[string]string{"redis-server": "opt/homebrew/bin/redis-server", "etcd": "opt/homebrew/bin/etcd",
				"java": "opt/homebrew/opt/openjdk/bin/java", "mariadbd": "opt/homebrew/opt/mariadb/bin/mariadbd",
				"mysql_install_db": "opt/homebrew/opt/mariadb/bin/mariadb-install-db", "nginx": "opt/homebrew/bin/nginx"},
			zk: "opt/homebrew/opt/zookeeper/libexec/lib/zookeeper-3.9.2.jar", zkConf: "opt/homebrew/opt/zookeeper/libexec/etc/zookeeper",
		},
		{
			name: "macos-homebrew-intel",
			files: []string{"x usr/local/bin/redis-server", "x usr/local/bin/etcd", "x usr/local/bin/nginx",
				"x usr/local/opt/openjdk/bin/java", "x usr/local/opt/mariadb/bin/mysqld",
				"x usr/local/opt/mariadb/bin/mysql_install_db",
				"x usr/local/opt/zookeeper/libexec/bin/zkServer.sh", "usr/local/opt/zookeeper/libexec/lib/zookeeper-3.9.2.jar",
				"usr/local/opt/zookeeper/libexec/conf/log4j.properties"},
			want: map[string]string{"redis-server": "usr/local/bin/redis-server", "etcd": "usr/local/bin/etcd",
				"java": "usr/local/opt/openjdk/bin/java", "mariadbd": "usr/local/opt/mariadb/bin/mysqld",
				"mysql_install_db": "usr/local/opt/mariadb/bin/mysql_install_db", "nginx": "usr/local/bin/nginx"},
			zk: "usr/local/opt/zookeeper/libexec/lib/zookeeper-3.9.2.jar", zkConf: "usr/local/opt/zookeeper/libexec/conf",
			log4j: "usr/local/opt/zookeeper/libexec/conf/log4j.properties",
		},
		{
			name: "zkServer.sh tarball in ZOOKEEPER_HOME, java in JAVA_HOME, servers on PATH",
			files: []string{"x home/me/bin/redis-server", "x home/me/bin/etcd", "x home/me/bin/nginx",
				"x home/me/bin/mariadbd", "x home/me/bin/mariadb-install-db", "x home/me/jdk/bin/java",
				"x home/me/apache-zookeeper-3.9.2-bin/bin/zkServer.sh",
				"home/me/apache-zookeeper-3.9.2-bin/lib/zookeeper-3.9.2.jar",
				"home/me/apache-zookeeper-3.9.2-bin/lib/zookeeper-jute-3.9.2.jar",
				"home/me/apache-zookeeper-3.9.2-bin/conf/logback.xml",
				// a decoy without jars: ZOOKEEPER_HOME comes first anyway
				"x opt/zookeeper/bin/zkServer.sh"},
			path: []string{"home/me/bin"},
			env:  map[string]string{"ZOOKEEPER_HOME": "home/me/apache-zookeeper-3.9.2-bin", "JAVA_HOME": "home/me/jdk"},
			want: map[string]string{"redis-server": "home/me/bin/redis-server", "etcd": "home/me/bin/etcd", "java": "home/me/jdk/bin/java",
				"mariadbd": "home/me/bin/mariadbd", "mysql_install_db": "home/me/bin/mariadb-install-db", "nginx": "home/me/bin/nginx"},
			zk: "home/me/apache-zookeeper-3.9.2-bin/lib/zookeeper-jute-3.9.2.jar", zkConf: "home/me/apache-zookeeper-3.9.2-bin/conf",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			root := t.TempDir()
			testenv.Tree(t, root, tc.files...)
			path := []string{filepath.Join(root, "usr/bin")}
			for _, p := range tc.path {
				path = append(path, filepath.Join(root, p))
			}
			f := Finder{Root: root, Path: strings.Join(path, string(os.PathListSeparator)), Getenv: func(k string) string {
				if v := tc.env[k]; v != "" {
					return filepath.Join(root, v)
				}
				return ""
			}}
			got, err := f.Find(packaged())
			if err != nil {
				t.Fatalf("Find: %v", err)
			}
			for k, want := range tc.want {
				if got.Bin[k] != filepath.Join(root, want) {
					t.Errorf("%s = %q, want %q", k, got.Bin[k], filepath.Join(root, want))
				}
			}
			cp := got.Java[zkKey].Classpath
			if len(cp) < 2 || cp[len(cp)-1] != filepath.Join(root, tc.zk) || cp[0] != filepath.Join(root, tc.zkConf) {
				t.Errorf("zookeeper classpath %v: want %s first and %s last", cp, tc.zkConf, tc.zk)
			}
			wantLog4j := ""
			if tc.log4j != "" {
				wantLog4j = filepath.Join(root, tc.log4j)
			}
			if got.Java[zkKey].Log4j != wantLog4j {
				t.Errorf("log4j = %q, want %q", got.Java[zkKey].Log4j, wantLog4j)
			}
			args := zkArgs(got.Java[zkKey], "/logs", "/zoo.cfg")
			if args[len(args)-1] != "/zoo.cfg" || args[2] != got.Java[zkKey].ClasspathArg() {
				t.Errorf("zkArgs = %v", args)
			}
		})
	}
}

// TestFinderMissing checks the error names what is missing and the install
// line of the package manager found, and that a backend left out needs
// none of its tools.
func TestFinderMissing(t *testing.T) {
	tests := []struct {
		name     string
		files    []string
		backends []Group
		wantErr  []string // substrings; none = no error
	}{
		{"nothing, apt", []string{"x usr/bin/apt-get"}, Groups(),
			[]string{"redis-server", "etcd", "java", "zookeeper", "mariadbd/mysqld", "nginx", "sudo apt-get install redis-server etcd-server default-jre-headless zookeeper mariadb-server nginx-light'",
				"consul: Consul " + ConsulVersion + " (MPL-2.0; no distribution packages it): `make deps` builds it"}},
		{"nothing, dnf", []string{"x usr/bin/dnf"}, Groups(),
			[]string{"sudo dnf install redis etcd java-21-openjdk-headless zookeeper mariadb-server nginx"}},
		{"nothing, brew", []string{"x opt/homebrew/bin/brew"}, Groups(),
			[]string{"brew install redis etcd openjdk zookeeper mariadb nginx"}},
		{"no package manager", nil, Groups(), []string{"no apt-get, dnf or brew found"}},
		{"zookeeper jars missing, only mysql wanted", []string{"x usr/sbin/mariadbd", "x usr/bin/mariadb-install-db", "x usr/sbin/nginx"},
			[]Group{"mysql"}, nil},
		{"mysql wanted, nginx missing", []string{"x usr/bin/apt-get", "x usr/sbin/mariadbd", "x usr/bin/mariadb-install-db"},
			[]Group{"mysql"}, []string{"nginx not found", "sudo apt-get install nginx-light"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			root := t.TempDir()
			testenv.Tree(t, root, append([]string{"usr/bin/"}, tc.files...)...)
			f := Finder{Root: root, Path: filepath.Join(root, "usr/bin")}
			_, err := f.Find(tc.backends)
			if len(tc.wantErr) == 0 {
				if err != nil {
					t.Fatalf("Find: %v", err)
				}
				return
			}
			if err == nil {
				t.Fatal("Find: no error")
			}
			for _, w := range tc.wantErr {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
		})
	}
}

func TestFindZooKeeperNotFound(t *testing.T) {
	root := t.TempDir()
	// zkServer.sh without a server jar is not an install.
	testenv.Tree(t, root, "x opt/zookeeper/bin/zkServer.sh", "opt/zookeeper/lib/zookeeper-jute-3.9.2.jar")
	_, err := Finder{Root: root}.FindZooKeeper()
	if !errors.Is(err, fs.ErrNotExist) || !strings.Contains(err.Error(), "ZOOKEEPER_HOME") {
		t.Fatalf("FindZooKeeper: %v, want ErrNotExist naming ZOOKEEPER_HOME", err)
	}
}

// packaged are the groups whose servers a package manager installs (the
// optional Consul is built by make deps).
func packaged() []Group {
	var out []Group
	for _, s := range All {
		if s.Group != "" && !s.Optional && !slices.Contains(out, s.Group) {
			out = append(out, s.Group)
		}
	}
	return out
}

// TestFinderLab: the servers make deps builds are found in the lab's bin/
// (next to seckill, else the bin/ of the checkout the command runs in),
// before a distribution's copy on PATH; Pin runs another.
func TestFinderLab(t *testing.T) {
	root := t.TempDir()
	testenv.Tree(t, root, "x usr/bin/nginx", "x usr/bin/etcd", "x lab/bin/consul", "x lab/bin/etcd",
		"checkout/go.mod", "x checkout/bin/consul", "checkout/cmd/seckill/")
	if err := os.WriteFile(filepath.Join(root, "checkout/go.mod"), []byte(labModule+"\n\ngo 1.26.0\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	at := func(p string) string { return filepath.Join(root, p) }
	tests := []struct {
		name   string
		f      Finder
		group  Group
		want   string // the path found, "" for an error
		errHas string
	}{
		{"lab bin/ before PATH", Finder{Root: root, Path: at("usr/bin"), Lab: at("lab/bin")}, "etcd", at("lab/bin/etcd"), ""},
		{"PATH without a lab bin/", Finder{Root: root, Path: at("usr/bin")}, "etcd", at("usr/bin/etcd"), ""},
		{"consul in the lab's bin/", Finder{Root: root, Path: at("usr/bin"), Lab: at("lab/bin")}, "consul", at("lab/bin/consul"), ""},
		{"consul in the checkout's bin/ (go run)", Finder{Root: root, Path: at("usr/bin"), Lab: at("tmp/go-build"), Checkout: CheckoutBin(at("checkout/cmd/seckill"))}, "consul", at("checkout/bin/consul"), ""},
		{"consul nowhere", Finder{Root: root, Path: at("usr/bin")}, "consul", "", "make deps"},
		{"pinned", Finder{Root: root, Path: at("usr/bin"), Lab: at("lab/bin"), Pin: map[string]string{"etcd": at("usr/bin/etcd")}}, "etcd", at("usr/bin/etcd"), ""},
		{"pinned to nothing", Finder{Root: root, Path: at("usr/bin"), Lab: at("lab/bin"), Pin: map[string]string{"etcd": at("nowhere/etcd")}}, "etcd", "", "not an executable"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := tc.f.Find([]Group{tc.group})
			if tc.want == "" {
				if err == nil || !strings.Contains(err.Error(), tc.errHas) {
					t.Fatalf("Find %s: %v, %v; want an error containing %q", tc.group, got.Bin, err, tc.errHas)
				}
				return
			}
			if err != nil || got.Bin[string(tc.group)] != tc.want {
				t.Fatalf("Find %s: %v, %v; want %s", tc.group, got.Bin, err, tc.want)
			}
		})
	}
	if all := (Finder{Root: root, Path: at("usr/bin"), Lab: at("lab/bin")}).All("etcd"); !slices.Equal(all, []string{at("lab/bin/etcd"), at("usr/bin/etcd")}) {
		t.Errorf("All etcd: %v, want the lab's then PATH's", all)
	}
}

// TestCheckoutBin: the bin/ of the nearest directory whose go.mod is the
// lab's, from the root or below it; none outside, or under another module.
func TestCheckoutBin(t *testing.T) {
	root := t.TempDir()
	testenv.Tree(t, root, "lab/cmd/seckill/", "other/sub/", "lab/go.mod", "other/go.mod")
	for p, mod := range map[string]string{"lab/go.mod": labModule + "\n", "other/go.mod": "module example.com/other\n"} {
		if err := os.WriteFile(filepath.Join(root, p), []byte(mod), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct{ dir, want string }{
		{"lab", "lab/bin"},
		{"lab/cmd/seckill", "lab/bin"},
		{"other/sub", ""},
		{".", ""},
	} {
		want := tc.want
		if want != "" {
			want = filepath.Join(root, want)
		}
		if got := CheckoutBin(filepath.Join(root, tc.dir)); got != want {
			t.Errorf("CheckoutBin(%s) = %q, want %q", tc.dir, got, want)
		}
	}
}
