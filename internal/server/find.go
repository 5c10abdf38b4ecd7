package server

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"strings"
)

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
	// Getenv reads the variables that point at an install (JAVA_HOME, and
	// the *_HOME a description reads); nil reads none.
	Getenv func(string) string
	// Lab is the lab's own bin/ directory, searched first: `make deps`
	// builds there the servers no distribution packages, or packages only
	// past their end of life. "" for none.
	Lab string
	// Checkout is the bin/ of the lab checkout the command runs in,
	// searched after Lab: `go run ./cmd/seckill` and `go install` put the
	// running seckill elsewhere, but `make deps` built the servers there.
	// "" for none.
	Checkout string
	// Pin maps a tool key (Tool.Key) to the path to run instead of
	// searching (`up`'s flag of a server's binary). Default nil: every
	// tool is searched.
	Pin map[string]string
}

// SystemFinder searches this machine: the directory of the running
// seckill (the lab's bin/), the bin/ of the checkout the working directory
// is in (CheckoutBin), $PATH, then the well-known places.
func SystemFinder() Finder {
	f := Finder{Path: os.Getenv("PATH"), Getenv: os.Getenv}
	if exe, err := os.Executable(); err == nil {
		f.Lab = filepath.Dir(exe)
	}
	if wd, err := os.Getwd(); err == nil {
		f.Checkout = CheckoutBin(wd)
	}
	return f
}

// labModule is the module line of the lab's go.mod.
const labModule = "module github.com/seckill-lab/seckill"

// CheckoutBin returns the bin/ directory of the lab checkout that holds
// dir: the nearest directory at or above dir whose go.mod declares the
// lab's module. "" when dir is in none.
func CheckoutBin(dir string) string {
	for d := filepath.Clean(dir); ; d = filepath.Dir(d) {
		if b, err := os.ReadFile(filepath.Join(d, "go.mod")); err == nil {
			first, _, _ := strings.Cut(string(b), "\n")
			if strings.TrimSpace(first) == labModule {
				return filepath.Join(d, "bin")
			}
		}
		if filepath.Dir(d) == d {
			return ""
		}
	}
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

// searchDirs returns the lab's bin/ directories, PATH's directories, extra,
// then the well-known ones (globs expanded, sorted).
func (f Finder) searchDirs(extra ...string) []string {
	var dirs []string
	for _, d := range append([]string{f.Lab, f.Checkout}, filepath.SplitList(f.Path)...) {
		if d != "" && !slices.Contains(dirs, d) {
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
	if slices.Contains(names, "java") {
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

// Program finds tool's program: its Pin when set (an error when that is
// not an executable), else the first of its Names.
func (f Finder) Program(tool Tool) (string, error) {
	p := f.Pin[tool.Key]
	if p == "" {
		return f.Command(tool.Names...)
	}
	if !isExecutable(p) {
		return "", fmt.Errorf("%s %s: not an executable file: %w", tool.Key, p, fs.ErrNotExist)
	}
	return p, nil
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

// All lists every executable called one of names in the search
// directories, in the order Command prefers them.
func (f Finder) All(names ...string) []string {
	var all []string
	for _, n := range names {
		for _, d := range f.searchDirs() {
			if p := filepath.Join(d, n); isExecutable(p) && !slices.Contains(all, p) {
				all = append(all, p)
			}
		}
	}
	return all
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

// Platform names the OS for doctor.
func Platform(root string) string {
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

// Package managers Doctor and `make deps` know.
const (
	pmApt  = "apt-get"
	pmDnf  = "dnf"
	pmBrew = "brew"
)

// RootDir is the finder's root ("/" unless a test moved it).
func (f Finder) RootDir() string { return f.rootDir() }

// InstallLine is the command that installs pkgs with pm.
func InstallLine(pm string, pkgs []string) string { return installLine(pm, pkgs) }

// Package is t's package for package manager pm (apt-get's name when pm
// has none listed).
func (t Tool) Package(pm string) string {
	if p := t.Pkgs[pm]; p != "" {
		return p
	}
	return t.Pkgs[pmApt]
}

// Tools are the programs `up` runs, found by a Finder.
type Tools struct {
	// Bin maps a tool key (Tool.Key) to its path.
	Bin map[string]string
	// Java maps the key of a tool found by its own Locate (a Java server's
	// jars) to its install.
	Java map[string]JavaInstall
}

// JavaInstall is how to run a Java server: java with a classpath.
type JavaInstall struct {
	// Layout says which installation was found, for doctor.
	Layout string
	// Classpath lists the configuration directory first (log4j or logback
	// configuration), then the jars.
	Classpath []string
	// Log4j is the log4j.properties to pass, "" when the install has none.
	Log4j string
}

// ClasspathArg is Classpath joined for java -cp.
func (z JavaInstall) ClasspathArg() string {
	return strings.Join(z.Classpath, string(os.PathListSeparator))
}

// Find resolves the tools of the specs whose group is in groups (and of
// those of no group); when some are missing the error names them and the
// install line of this platform's package manager.
func (f Finder) Find(groups []Group) (Tools, error) {
	t := Tools{Bin: map[string]string{}, Java: map[string]JavaInstall{}}
	var missing, pkgs, hints []string
	pm := f.PackageManager()
	for _, tool := range ToolsOf(groups) {
		var err error
		if tool.Locate != nil {
			var in JavaInstall
			in, err = tool.Locate(f)
			t.Java[tool.Key] = in
		} else {
			t.Bin[tool.Key], err = f.Program(tool)
		}
		if err != nil && f.Pin[tool.Key] != "" {
			return t, fmt.Errorf("%w (the path given for %s)", err, tool.Key)
		}
		if err != nil {
			missing = append(missing, tool.Label())
			switch p := tool.Package(pm); {
			case p == "":
				hints = append(hints, tool.Label()+": "+tool.Hint)
			case !slices.Contains(pkgs, p):
				pkgs = append(pkgs, p)
			}
		}
	}
	if len(missing) > 0 {
		how := "run 'make deps'"
		if len(pkgs) > 0 {
			how += " or '" + installLine(pm, pkgs) + "'"
		}
		if len(hints) > 0 {
			how += "; " + strings.Join(hints, "; ")
		}
		return t, fmt.Errorf("%s not found: %s (`seckill doctor` shows what was looked for)", strings.Join(missing, ", "), how)
	}
	return t, nil
}
