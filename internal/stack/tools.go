package stack

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"strings"
)

// Backend is a server group `up --backends` can leave out.
type Backend string

// Backends. MySQL (MariaDB) is always needed: the goods and the orders live
// there.
const (
	BackendRedis     = Backend(KindRedis)
	BackendEtcd      = Backend(KindEtcd)
	BackendZooKeeper = Backend(KindZooKeeper)
	BackendMySQL     = Backend(KindMySQL)
)

// AllBackends are the backends in start order; the default of --backends.
var AllBackends = []Backend{BackendRedis, BackendEtcd, BackendZooKeeper, BackendMySQL}

// ErrUnknownBackend is returned for a --backends name that is not one of
// AllBackends.
var ErrUnknownBackend = errors.New("unknown backend")

// ParseBackends parses a comma-separated --backends list ("" = all); the
// result is in AllBackends order. MySQL must be in it.
func ParseBackends(s string) ([]Backend, error) {
	if strings.TrimSpace(s) == "" {
		return slices.Clone(AllBackends), nil
	}
	want := map[Backend]bool{}
	for _, p := range strings.Split(s, ",") {
		b := Backend(strings.ToLower(strings.TrimSpace(p)))
		if b == "" {
			continue
		}
		if !slices.Contains(AllBackends, b) {
			return nil, fmt.Errorf("--backends: %w %q; valid: %s", ErrUnknownBackend, b, joinBackends(AllBackends))
		}
		want[b] = true
	}
	if !want[BackendMySQL] {
		return nil, fmt.Errorf("--backends %s: mysql is always needed (the goods and orders live in MariaDB); add it: --backends %s,mysql", s, strings.TrimSpace(s))
	}
	var out []Backend
	for _, b := range AllBackends {
		if want[b] {
			out = append(out, b)
		}
	}
	return out, nil
}

func joinBackends(bs []Backend) string {
	parts := make([]string, len(bs))
	for i, b := range bs {
		parts[i] = string(b)
	}
	return strings.Join(parts, ",")
}

// Tool keys of Tools.Bin: the programs `up` runs. Each is found under one
// of several names (toolSpecs).
const (
	toolRedis     = "redis-server"
	toolEtcd      = "etcd"
	toolMariaDB   = "mariadbd"
	toolInstallDB = "mysql_install_db"
	toolNginx     = "nginx"
	toolJava      = "java"
)

// toolSpec is one program: the names it goes by, in order of preference,
// the backend that needs it ("" = always needed) and its package per
// package manager.
type toolSpec struct {
	key     string
	names   []string
	backend Backend
	pkgs    map[string]string // package manager -> package
}

// Package managers Doctor and `make deps` know.
const (
	pmApt  = "apt-get"
	pmDnf  = "dnf"
	pmBrew = "brew"
)

var toolSpecs = []toolSpec{
	{key: toolRedis, names: []string{"redis-server"}, backend: BackendRedis,
		pkgs: map[string]string{pmApt: "redis-server", pmDnf: "redis", pmBrew: "redis"}},
	{key: toolEtcd, names: []string{"etcd"}, backend: BackendEtcd,
		pkgs: map[string]string{pmApt: "etcd-server", pmDnf: "etcd", pmBrew: "etcd"}},
	{key: toolJava, names: []string{"java"}, backend: BackendZooKeeper,
		pkgs: map[string]string{pmApt: "default-jre-headless", pmDnf: "java-21-openjdk-headless", pmBrew: "openjdk"}},
	{key: toolMariaDB, names: []string{"mariadbd", "mysqld"}, backend: BackendMySQL,
		pkgs: map[string]string{pmApt: "mariadb-server", pmDnf: "mariadb-server", pmBrew: "mariadb"}},
	{key: toolInstallDB, names: []string{"mariadb-install-db", "mysql_install_db"}, backend: BackendMySQL,
		pkgs: map[string]string{pmApt: "mariadb-server", pmDnf: "mariadb-server", pmBrew: "mariadb"}},
	{key: toolNginx, names: []string{"nginx"},
		pkgs: map[string]string{pmApt: "nginx-light", pmDnf: "nginx", pmBrew: "nginx"}},
}

// zkPkgs are ZooKeeper's packages.
var zkPkgs = map[string]string{pmApt: "zookeeper", pmDnf: "zookeeper", pmBrew: "zookeeper"}

// Finder locates the stack's servers: first on the command search path,
// then in the places the Debian, Ubuntu, Fedora and Homebrew packages put
// them (mariadbd and nginx in /usr/sbin on Debian, mariadbd in
// /usr/libexec on Fedora, keg-only formulae under opt/*/bin on Homebrew).
//
// Its fields are the search roots, so tests build fake layouts of each
// platform in a temporary directory and check what is found. macOS itself
// cannot run in the tests (they run on Linux): its Homebrew layouts are
// only faked as directory trees.
type Finder struct {
	// Root prefixes every well-known location ("" = "/").
	Root string
	// Path is the command search path, a PATH-style list, searched first.
	Path string
	// Getenv reads ZOOKEEPER_HOME and JAVA_HOME; nil reads none.
	Getenv func(string) string
}

// SystemFinder searches this machine: $PATH, then the well-known places.
func SystemFinder() Finder {
	return Finder{Path: os.Getenv("PATH"), Getenv: os.Getenv}
}

func (f Finder) at(p string) string { return filepath.Join(f.rootDir(), p) }

func (f Finder) rootDir() string {
	if f.Root == "" {
		return "/"
	}
	return f.Root
}

func (f Finder) env(k string) string {
	if f.Getenv == nil {
		return ""
	}
	return f.Getenv(k)
}

// wellKnownDirs are the directories besides PATH where packages put
// commands, relative to the root, in search order. Entries with a * are
// globs (Homebrew's keg-only formulae: mariadb, openjdk).
var wellKnownDirs = []string{
	"usr/local/sbin", "usr/local/bin", "usr/sbin", "usr/bin", "sbin", "bin",
	"usr/libexec",
	"opt/homebrew/bin", "opt/homebrew/sbin",
	"opt/homebrew/opt/*/bin", "opt/homebrew/opt/*/sbin", "opt/homebrew/opt/*/libexec/bin",
	"usr/local/opt/*/bin", "usr/local/opt/*/sbin", "usr/local/opt/*/libexec/bin",
}

// searchDirs returns PATH's directories then the well-known ones (globs
// expanded, sorted).
func (f Finder) searchDirs(extra ...string) []string {
	var dirs []string
	for _, d := range filepath.SplitList(f.Path) {
		if d != "" {
			dirs = append(dirs, d)
		}
	}
	dirs = append(dirs, extra...)
	for _, d := range wellKnownDirs {
		p := f.at(d)
		if !strings.Contains(d, "*") {
			dirs = append(dirs, p)
			continue
		}
		m, _ := filepath.Glob(p) // the pattern is valid: Glob fails only on a bad one
		sort.Strings(m)
		dirs = append(dirs, m...)
	}
	return dirs
}

func isExecutable(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && !fi.IsDir() && fi.Mode()&0o111 != 0
}

// Command finds the first of names (in order of preference) in the search
// directories.
func (f Finder) Command(names ...string) (string, error) {
	var extra []string
	if slices.Contains(names, toolJava) {
		if jh := f.env("JAVA_HOME"); jh != "" {
			extra = append(extra, filepath.Join(jh, "bin"))
		}
	}
	dirs := f.searchDirs(extra...)
	for _, n := range names {
		for _, d := range dirs {
			if p := filepath.Join(d, n); isExecutable(p) {
				return p, nil
			}
		}
	}
	return "", fmt.Errorf("%s: %w", strings.Join(names, " or "), fs.ErrNotExist)
}

// ZooKeeper is how to run a ZooKeeper server: java with a classpath.
type ZooKeeper struct {
	// Layout says which installation was found, for doctor.
	Layout string
	// Classpath lists the configuration directory first (log4j or logback
	// configuration), then the jars.
	Classpath []string
	// Log4j is the log4j.properties to pass, "" when the install has none
	// (ZooKeeper 3.8+ tarballs configure logback from the classpath).
	Log4j string
}

// ClasspathArg is Classpath joined for java -cp.
func (z ZooKeeper) ClasspathArg() string {
	return strings.Join(z.Classpath, string(os.PathListSeparator))
}

// Debian's `zookeeper` package: one jar whose manifest names its lib jars
// (Class-Path), and the configuration in /etc/zookeeper/conf.
const (
	debianZKJar  = "usr/share/java/zookeeper.jar"
	debianZKConf = "etc/zookeeper/conf"
)

// zkHomes are where a zkServer.sh installation (the Apache tarball layout:
// bin/zkServer.sh, lib/*.jar, conf/) lives, relative to the root, after
// $ZOOKEEPER_HOME.
var zkHomes = []string{
	"usr/share/zookeeper",                      // Fedora
	"opt/zookeeper",                            // a tarball unpacked by hand
	"opt/homebrew/opt/zookeeper/libexec",       // Homebrew, Apple silicon
	"usr/local/opt/zookeeper/libexec",          // Homebrew, Intel
	"usr/local/zookeeper", "usr/lib/zookeeper", // other hand installs
}

// FindZooKeeper finds a ZooKeeper install: Debian's jar layout first, then
// a zkServer.sh install ($ZOOKEEPER_HOME, then zkHomes), whose classpath is
// its conf directory and its lib/*.jar (and the top-level zookeeper-*.jar
// older tarballs have).
func (f Finder) FindZooKeeper() (ZooKeeper, error) {
	if jar := f.at(debianZKJar); fileExists(jar) {
		conf := f.at(debianZKConf)
		z := ZooKeeper{Layout: "Debian jar " + jar, Classpath: []string{conf, jar}}
		if p := filepath.Join(conf, "log4j.properties"); fileExists(p) {
			z.Log4j = p
		}
		return z, nil
	}
	var homes []string
	if h := f.env("ZOOKEEPER_HOME"); h != "" {
		homes = append(homes, h)
	}
	for _, h := range zkHomes {
		homes = append(homes, f.at(h))
	}
	var tried []string
	for _, h := range homes {
		tried = append(tried, h)
		if !fileExists(filepath.Join(h, "bin", "zkServer.sh")) {
			continue
		}
		z, ok := zkFromHome(h)
		if ok {
			return z, nil
		}
	}
	return ZooKeeper{}, fmt.Errorf("zookeeper: neither %s nor a zkServer.sh install with lib/*.jar (looked in %s; set ZOOKEEPER_HOME): %w",
		f.at(debianZKJar), strings.Join(tried, ", "), fs.ErrNotExist)
}

// zkFromHome builds the classpath of a zkServer.sh install at home; ok is
// false when it has no ZooKeeper server jar.
func zkFromHome(home string) (ZooKeeper, bool) {
	jars, _ := filepath.Glob(filepath.Join(home, "lib", "*.jar"))
	top, _ := filepath.Glob(filepath.Join(home, "zookeeper-*.jar"))
	jars = append(top, jars...)
	sort.Strings(jars)
	server := false
	for _, j := range jars {
		b := filepath.Base(j)
		if strings.HasPrefix(b, "zookeeper-") && !strings.HasPrefix(b, "zookeeper-jute") || b == "zookeeper.jar" {
			server = true
		}
	}
	if !server {
		return ZooKeeper{}, false
	}
	conf := filepath.Join(home, "conf")
	if !fileExists(conf) && fileExists(filepath.Join(home, "etc", "zookeeper")) {
		conf = filepath.Join(home, "etc", "zookeeper")
	}
	z := ZooKeeper{Layout: "zkServer.sh install " + home, Classpath: append([]string{conf}, jars...)}
	if p := filepath.Join(conf, "log4j.properties"); fileExists(p) {
		z.Log4j = p
	}
	return z, true
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

// Tools are the programs `up` runs, found by a Finder.
type Tools struct {
	// Bin maps a tool key (redis-server, etcd, java, mariadbd,
	// mysql_install_db, nginx) to its path.
	Bin map[string]string
	// ZK is the ZooKeeper install (set when java is).
	ZK ZooKeeper
}

// PackageManager returns the first of apt-get, dnf and brew the finder
// finds ("" when none).
func (f Finder) PackageManager() string {
	for _, pm := range []string{pmApt, pmDnf, pmBrew} {
		if _, err := f.Command(pm); err == nil {
			return pm
		}
	}
	return ""
}

// installLine is the command that installs pkgs with pm.
func installLine(pm string, pkgs []string) string {
	switch pm {
	case pmApt:
		return "sudo apt-get install " + strings.Join(pkgs, " ")
	case pmDnf:
		return "sudo dnf install " + strings.Join(pkgs, " ")
	case pmBrew:
		return "brew install " + strings.Join(pkgs, " ")
	}
	return "install " + strings.Join(pkgs, ", ") + " with your package manager (no apt-get, dnf or brew found)"
}

// Find resolves the tools the given backends need (and nginx); when some
// are missing the error names them and the install line of this
// platform's package manager.
func (f Finder) Find(backends []Backend) (Tools, error) {
	t := Tools{Bin: map[string]string{}}
	var missing, pkgs []string
	pm := f.PackageManager()
	need := func(b Backend) bool { return b == "" || slices.Contains(backends, b) }
	addPkg := func(m map[string]string) {
		p := m[pm]
		if p == "" {
			p = m[pmApt]
		}
		if !slices.Contains(pkgs, p) {
			pkgs = append(pkgs, p)
		}
	}
	for _, s := range toolSpecs {
		if !need(s.backend) {
			continue
		}
		p, err := f.Command(s.names...)
		if err != nil {
			missing = append(missing, strings.Join(s.names, "/"))
			addPkg(s.pkgs)
			continue
		}
		t.Bin[s.key] = p
	}
	if need(BackendZooKeeper) {
		z, err := f.FindZooKeeper()
		if err != nil {
			missing = append(missing, "zookeeper")
			addPkg(zkPkgs)
		}
		t.ZK = z
	}
	if len(missing) > 0 {
		return t, fmt.Errorf("%s not found: run 'make deps' or '%s' (`seckill doctor` shows what was looked for)",
			strings.Join(missing, ", "), installLine(pm, pkgs))
	}
	return t, nil
}

// findTools resolves the tools of the given backends on this machine.
func findTools(backends []Backend) (Tools, error) { return SystemFinder().Find(backends) }

// platform names the OS for doctor.
func platform(root string) string {
	if runtime.GOOS != "linux" {
		return runtime.GOOS
	}
	b, err := os.ReadFile(filepath.Join(root, "etc/os-release"))
	if err != nil {
		return runtime.GOOS
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "PRETTY_NAME="); ok {
			return strings.Trim(v, `"`)
		}
	}
	return runtime.GOOS
}

// zkArgs are java's arguments to run a ZooKeeper server of install z with
// config cfg, logging to the console (the component's log).
func zkArgs(z ZooKeeper, logDir, cfg string) []string {
	args := []string{"-Xmx256m", "-cp", z.ClasspathArg(),
		"-Dzookeeper.log.dir=" + logDir, "-Dzookeeper.root.logger=INFO,CONSOLE"}
	if z.Log4j != "" {
		args = append(args, "-Dlog4j.configuration=file:"+z.Log4j)
	}
	return append(args, "org.apache.zookeeper.server.quorum.QuorumPeerMain", cfg)
}
