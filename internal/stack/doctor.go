package stack

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"text/tabwriter"
	"time"
)

// DoctorOptions configure Doctor.
type DoctorOptions struct {
	// Finder searches for the servers (zero value: SystemFinder).
	Finder *Finder
	// Backends are the backends that must be there (default all): a
	// missing tool of another backend is reported, not an error.
	Backends []Backend
	// Dir is the run directory to report on ("" = DefaultDir).
	Dir string
	// NoVersions skips running each program for its version.
	NoVersions bool
}

// DoctorItem is one server or tool.
type DoctorItem struct {
	// Name is the program (redis-server, etcd, java, zookeeper, mariadbd,
	// mysql_install_db, nginx).
	Name    string  `json:"name"`
	Backend Backend `json:"backend,omitempty"`
	// Needed: a backend that must be there uses it.
	Needed  bool   `json:"needed"`
	Path    string `json:"path,omitempty"`
	Version string `json:"version,omitempty"`
	// Install is the command that installs it on this platform (missing
	// ones only).
	Install string `json:"install,omitempty"`
	// Note says what else was looked for, or how else to provide it.
	Note string `json:"note,omitempty"`
}

// Found reports whether the item was found.
func (it DoctorItem) Found() bool { return it.Path != "" }

// DoctorReport is what Doctor found.
type DoctorReport struct {
	Platform       string       `json:"platform"`
	PackageManager string       `json:"package_manager"`
	Items          []DoctorItem `json:"items"`
	Dir            string       `json:"dir"`
	// DirState says whether a stack runs in Dir and which backends.
	DirState string `json:"dir_state"`
}

// OK reports whether everything needed was found.
func (r DoctorReport) OK() bool {
	for _, it := range r.Items {
		if it.Needed && !it.Found() {
			return false
		}
	}
	return true
}

// versionArgs are the cheap version flags, by tool key; nginx and java
// print theirs on stderr.
var versionArgs = map[string][]string{
	toolRedis: {"--version"}, toolEtcd: {"--version"}, toolMariaDB: {"--version"},
	toolNginx: {"-v"}, toolJava: {"-version"},
}

// Doctor lists each server and tool the stack runs: where it was found
// and its version, or that it is missing and the line that installs it
// with this platform's package manager.
func Doctor(ctx context.Context, o DoctorOptions) (DoctorReport, error) {
	f := SystemFinder()
	if o.Finder != nil {
		f = *o.Finder
	}
	backends := o.Backends
	if len(backends) == 0 {
		backends = AllBackends
	}
	pm := f.PackageManager()
	rep := DoctorReport{Platform: platform(f.rootDir()), PackageManager: pm}
	if pm == "" {
		rep.PackageManager = "none found (apt-get, dnf, brew)"
	}
	needed := func(b Backend) bool { return b == "" || slices.Contains(backends, b) }
	install := func(m map[string]string) string {
		if p := m[pm]; p != "" {
			return installLine(pm, []string{p})
		}
		return installLine(pm, []string{m[pmApt]})
	}
	for _, s := range toolSpecs {
		it := DoctorItem{Name: s.key, Backend: s.backend, Needed: needed(s.backend)}
		if p, err := f.Command(s.names...); err == nil {
			it.Path = p
			if args, ok := versionArgs[s.key]; ok && !o.NoVersions {
				it.Version = toolVersion(ctx, p, args)
			}
		} else {
			it.Install = install(s.pkgs)
			it.Note = "looked for " + strings.Join(s.names, ", ") + " on PATH and in /usr/sbin, /usr/libexec, Homebrew's bin, sbin and opt/*/bin"
		}
		rep.Items = append(rep.Items, it)
		if s.key == toolJava { // ZooKeeper's jars next to its java
			zi := DoctorItem{Name: "zookeeper", Backend: BackendZooKeeper, Needed: needed(BackendZooKeeper)}
			if z, err := f.FindZooKeeper(); err == nil {
				zi.Path, zi.Note = z.Classpath[len(z.Classpath)-1], z.Layout
			} else {
				zi.Install = install(zkPkgs)
				zi.Note = "or unpack the Apache tarball and set ZOOKEEPER_HOME (" + err.Error() + ")"
			}
			rep.Items = append(rep.Items, zi)
		}
	}
	d, err := absDir(o.Dir)
	if err != nil {
		return rep, err
	}
	rep.Dir = d
	rep.DirState = dirState(d)
	return rep, nil
}

// dirState describes the run directory: a stack in it, or whether one can
// be started there.
func dirState(d string) string {
	st, err := Load(d)
	switch {
	case err == nil:
		running := 0
		for _, c := range st.Components {
			if alive(c) {
				running++
			}
		}
		absent := ""
		if a := st.Absent(); len(a) > 0 {
			absent = "; not started: " + joinBackends(a)
		}
		return fmt.Sprintf("a stack: %d of %d components running (topology %s, base port %d%s)", running, len(st.Components), st.Topology, st.BasePort, absent)
	case errors.Is(err, ErrNotRunning):
		parent := d
		for !fileExists(parent) && filepath.Dir(parent) != parent {
			parent = filepath.Dir(parent)
		}
		probe, perr := os.CreateTemp(parent, ".seckill-doctor-")
		if perr != nil {
			return fmt.Sprintf("no stack; %s is not writable (%v): pass --dir", parent, perr)
		}
		probe.Close()
		os.Remove(probe.Name())
		return "no stack (start one with `seckill up --dir " + d + "`)"
	}
	return "unreadable: " + err.Error()
}

// toolVersion runs bin args (within 3s) and returns the first line of its
// output that says something; "" when it fails.
func toolVersion(ctx context.Context, bin string, args []string) string {
	ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	out, _ := exec.CommandContext(ctx, bin, args...).CombinedOutput()
	for _, l := range strings.Split(string(out), "\n") {
		if l = strings.TrimSpace(l); l != "" {
			if len(l) > 80 {
				l = l[:80] + "..."
			}
			return l
		}
	}
	return ""
}

// Write prints the report as a table, then the install lines of what is
// missing.
func (r DoctorReport) Write(w io.Writer) error {
	fmt.Fprintf(w, "platform:        %s\npackage manager: %s\n\n", r.Platform, r.PackageManager)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "TOOL\tBACKEND\tSTATUS\tPATH\tVERSION / LAYOUT")
	var lines []string
	for _, it := range r.Items {
		b := string(it.Backend)
		if b == "" {
			b = "(front)"
		}
		status := "found"
		if !it.Found() {
			status = "MISSING"
			if !it.Needed {
				status = "missing (not needed)"
			}
			if !slices.Contains(lines, it.Install) {
				lines = append(lines, it.Install)
			}
		}
		detail := it.Version
		if detail == "" && it.Found() {
			detail = it.Note
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", it.Name, b, status, it.Path, detail)
	}
	if err := tw.Flush(); err != nil {
		return fmt.Errorf("write doctor table: %w", err)
	}
	fmt.Fprintf(w, "\nrun directory:   %s: %s\n", r.Dir, r.DirState)
	for _, it := range r.Items {
		if !it.Found() {
			fmt.Fprintf(w, "%s: %s\n", it.Name, it.Note)
		}
	}
	if len(lines) > 0 {
		fmt.Fprintln(w, "\nto install what is missing (or run `make deps`):")
		for _, l := range lines {
			fmt.Fprintln(w, "  "+l)
		}
	}
	if r.OK() {
		fmt.Fprintln(w, "\neverything `seckill up` needs is here")
	} else {
		fmt.Fprintln(w, "\nsomething `seckill up` needs is missing (see above)")
	}
	return nil
}
