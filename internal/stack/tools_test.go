package stack

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// layout builds a fake file tree under root: each path ending in "/" is a
// directory, each path starting with "x " an executable, the others plain
// files.
func layout(t *testing.T, root string, paths ...string) {
	t.Helper()
	for _, p := range paths {
		mode := os.FileMode(0o644)
		if rest, ok := strings.CutPrefix(p, "x "); ok {
			p, mode = rest, 0o755
		}
		full := filepath.Join(root, p)
		if strings.HasSuffix(p, "/") {
			if err := os.MkdirAll(full, 0o755); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte("#!/bin/sh\n"), mode); err != nil {
			t.Fatal(err)
		}
	}
}

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
			want: map[string]string{toolRedis: "usr/bin/redis-server", toolEtcd: "usr/bin/etcd", toolJava: "usr/bin/java",
				toolMariaDB: "usr/sbin/mariadbd", toolInstallDB: "usr/bin/mariadb-install-db", toolNginx: "usr/sbin/nginx"},
			zk: "usr/share/java/zookeeper.jar", zkConf: "etc/zookeeper/conf", log4j: "etc/zookeeper/conf/log4j.properties",
		},
		{
			name: "fedora",
			files: []string{"x usr/bin/redis-server", "x usr/bin/etcd", "x usr/bin/java", "x usr/libexec/mariadbd",
				"x usr/bin/mysql_install_db", "x usr/sbin/nginx",
				"x usr/share/zookeeper/bin/zkServer.sh", "usr/share/zookeeper/lib/zookeeper-3.8.4.jar",
				"usr/share/zookeeper/lib/zookeeper-jute-3.8.4.jar", "usr/share/zookeeper/conf/logback.xml"},
			want: map[string]string{toolRedis: "usr/bin/redis-server", toolEtcd: "usr/bin/etcd", toolJava: "usr/bin/java",
				toolMariaDB: "usr/libexec/mariadbd", toolInstallDB: "usr/bin/mysql_install_db", toolNginx: "usr/sbin/nginx"},
			zk: "usr/share/zookeeper/lib/zookeeper-jute-3.8.4.jar", zkConf: "usr/share/zookeeper/conf",
		},
		{
			name: "macos-homebrew-arm",
			files: []string{"x opt/homebrew/bin/redis-server", "x opt/homebrew/bin/etcd", "x opt/homebrew/bin/nginx",
				"x opt/homebrew/opt/openjdk/bin/java", "x opt/homebrew/opt/mariadb/bin/mariadbd",
				"x opt/homebrew/opt/mariadb/bin/mariadb-install-db",
				"x opt/homebrew/opt/zookeeper/libexec/bin/zkServer.sh", "opt/homebrew/opt/zookeeper/libexec/lib/zookeeper-3.9.2.jar",
				"opt/homebrew/opt/zookeeper/libexec/lib/slf4j-api-1.7.36.jar", "opt/homebrew/opt/zookeeper/libexec/etc/zookeeper/zoo.cfg"},
			want: map[string]string{toolRedis: "opt/homebrew/bin/redis-server", toolEtcd: "opt/homebrew/bin/etcd",
				toolJava: "opt/homebrew/opt/openjdk/bin/java", toolMariaDB: "opt/homebrew/opt/mariadb/bin/mariadbd",
				toolInstallDB: "opt/homebrew/opt/mariadb/bin/mariadb-install-db", toolNginx: "opt/homebrew/bin/nginx"},
			zk: "opt/homebrew/opt/zookeeper/libexec/lib/zookeeper-3.9.2.jar", zkConf: "opt/homebrew/opt/zookeeper/libexec/etc/zookeeper",
		},
		{
			name: "macos-homebrew-intel",
			files: []string{"x usr/local/bin/redis-server", "x usr/local/bin/etcd", "x usr/local/bin/nginx",
				"x usr/local/opt/openjdk/bin/java", "x usr/local/opt/mariadb/bin/mysqld",
				"x usr/local/opt/mariadb/bin/mysql_install_db",
				"x usr/local/opt/zookeeper/libexec/bin/zkServer.sh", "usr/local/opt/zookeeper/libexec/lib/zookeeper-3.9.2.jar",
				"usr/local/opt/zookeeper/libexec/conf/log4j.properties"},
			want: map[string]string{toolRedis: "usr/local/bin/redis-server", toolEtcd: "usr/local/bin/etcd",
				toolJava: "usr/local/opt/openjdk/bin/java", toolMariaDB: "usr/local/opt/mariadb/bin/mysqld",
				toolInstallDB: "usr/local/opt/mariadb/bin/mysql_install_db", toolNginx: "usr/local/bin/nginx"},
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
			want: map[string]string{toolRedis: "home/me/bin/redis-server", toolEtcd: "home/me/bin/etcd", toolJava: "home/me/jdk/bin/java",
				toolMariaDB: "home/me/bin/mariadbd", toolInstallDB: "home/me/bin/mariadb-install-db", toolNginx: "home/me/bin/nginx"},
			zk: "home/me/apache-zookeeper-3.9.2-bin/lib/zookeeper-jute-3.9.2.jar", zkConf: "home/me/apache-zookeeper-3.9.2-bin/conf",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			root := t.TempDir()
			layout(t, root, tc.files...)
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
			got, err := f.Find(AllBackends)
			if err != nil {
				t.Fatalf("Find: %v", err)
			}
			for k, want := range tc.want {
				if got.Bin[k] != filepath.Join(root, want) {
					t.Errorf("%s = %q, want %q", k, got.Bin[k], filepath.Join(root, want))
				}
			}
			cp := got.ZK.Classpath
			if len(cp) < 2 || cp[len(cp)-1] != filepath.Join(root, tc.zk) || cp[0] != filepath.Join(root, tc.zkConf) {
				t.Errorf("zookeeper classpath %v: want %s first and %s last", cp, tc.zkConf, tc.zk)
			}
			wantLog4j := ""
			if tc.log4j != "" {
				wantLog4j = filepath.Join(root, tc.log4j)
			}
			if got.ZK.Log4j != wantLog4j {
				t.Errorf("log4j = %q, want %q", got.ZK.Log4j, wantLog4j)
			}
			args := zkArgs(got.ZK, "/logs", "/zoo.cfg")
			if args[len(args)-1] != "/zoo.cfg" || args[2] != got.ZK.ClasspathArg() {
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
		backends []Backend
		wantErr  []string // substrings; none = no error
	}{
		{"nothing, apt", []string{"x usr/bin/apt-get"}, AllBackends,
			[]string{"redis-server", "etcd", "java", "zookeeper", "mariadbd/mysqld", "nginx", "sudo apt-get install redis-server etcd-server default-jre-headless mariadb-server nginx-light zookeeper"}},
		{"nothing, dnf", []string{"x usr/bin/dnf"}, AllBackends,
			[]string{"sudo dnf install redis etcd java-21-openjdk-headless mariadb-server nginx zookeeper"}},
		{"nothing, brew", []string{"x opt/homebrew/bin/brew"}, AllBackends,
			[]string{"brew install redis etcd openjdk mariadb nginx zookeeper"}},
		{"no package manager", nil, AllBackends, []string{"no apt-get, dnf or brew found"}},
		{"zookeeper jars missing, only mysql wanted", []string{"x usr/sbin/mariadbd", "x usr/bin/mariadb-install-db", "x usr/sbin/nginx"},
			[]Backend{BackendMySQL}, nil},
		{"mysql wanted, nginx missing", []string{"x usr/bin/apt-get", "x usr/sbin/mariadbd", "x usr/bin/mariadb-install-db"},
			[]Backend{BackendMySQL}, []string{"nginx not found", "sudo apt-get install nginx-light"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			root := t.TempDir()
			layout(t, root, append([]string{"usr/bin/"}, tc.files...)...)
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
	layout(t, root, "x opt/zookeeper/bin/zkServer.sh", "opt/zookeeper/lib/zookeeper-jute-3.9.2.jar")
	_, err := Finder{Root: root}.FindZooKeeper()
	if !errors.Is(err, fs.ErrNotExist) || !strings.Contains(err.Error(), "ZOOKEEPER_HOME") {
		t.Fatalf("FindZooKeeper: %v, want ErrNotExist naming ZOOKEEPER_HOME", err)
	}
}

func TestParseBackends(t *testing.T) {
	tests := []struct {
		in      string
		want    string
		wantErr string
	}{
		{"", "redis,etcd,zookeeper,mysql", ""},
		{"mysql,redis", "redis,mysql", ""},
		{" MySQL , zookeeper ", "zookeeper,mysql", ""},
		{"redis,etcd", "", "mysql is always needed"},
		{"redis,mongo,mysql", "", `unknown backend "mongo"`},
	}
	for _, tc := range tests {
		got, err := ParseBackends(tc.in)
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("ParseBackends(%q) = %v, %v; want error containing %q", tc.in, got, err, tc.wantErr)
			}
			continue
		}
		if err != nil || joinBackends(got) != tc.want {
			t.Errorf("ParseBackends(%q) = %v, %v; want %s", tc.in, got, err, tc.want)
		}
	}
}

// TestDoctorFake runs Doctor over a fake layout: found items carry their
// path, missing ones the install line, and OK follows the needed ones.
func TestDoctorFake(t *testing.T) {
	tests := []struct {
		name     string
		files    []string
		backends []Backend
		ok       bool
		missing  string
		install  string
	}{
		{"all there (debian)", []string{"x usr/bin/apt-get", "x usr/bin/redis-server", "x usr/bin/etcd", "x usr/bin/java",
			"x usr/sbin/mariadbd", "x usr/bin/mariadb-install-db", "x usr/sbin/nginx", "usr/share/java/zookeeper.jar"}, nil, true, "", ""},
		{"etcd missing (fedora)", []string{"x usr/bin/dnf", "x usr/bin/redis-server", "x usr/bin/java",
			"x usr/libexec/mariadbd", "x usr/bin/mariadb-install-db", "x usr/sbin/nginx",
			"x opt/zookeeper/bin/zkServer.sh", "opt/zookeeper/lib/zookeeper-3.8.4.jar"}, nil, false, "etcd", "sudo dnf install etcd"},
		{"etcd missing but not needed (brew)", []string{"x opt/homebrew/bin/brew", "x opt/homebrew/bin/redis-server", "x opt/homebrew/opt/openjdk/bin/java",
			"x opt/homebrew/opt/mariadb/bin/mariadbd", "x opt/homebrew/opt/mariadb/bin/mariadb-install-db", "x opt/homebrew/bin/nginx",
			"x opt/homebrew/opt/zookeeper/libexec/bin/zkServer.sh", "opt/homebrew/opt/zookeeper/libexec/lib/zookeeper-3.9.2.jar"},
			[]Backend{BackendRedis, BackendZooKeeper, BackendMySQL}, true, "etcd", "brew install etcd"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			root := t.TempDir()
			layout(t, root, append([]string{"usr/bin/"}, tc.files...)...)
			f := Finder{Root: root, Path: filepath.Join(root, "usr/bin")}
			rep, err := Doctor(context.Background(), DoctorOptions{Finder: &f, Backends: tc.backends, Dir: filepath.Join(root, "run"), NoVersions: true})
			if err != nil {
				t.Fatal(err)
			}
			if rep.OK() != tc.ok {
				t.Errorf("OK = %v, want %v: %+v", rep.OK(), tc.ok, rep.Items)
			}
			for _, it := range rep.Items {
				switch {
				case it.Name == tc.missing:
					if it.Found() || it.Install != installLine(rep.PackageManager, strings.Fields(tc.install)[len(strings.Fields(tc.install))-1:]) {
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
			if !strings.Contains(b.String(), "no stack") {
				t.Errorf("doctor output does not describe the run directory:\n%s", b.String())
			}
		})
	}
}
