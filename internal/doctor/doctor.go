// Package doctor checks what `seckill up` needs on this machine: each
// server description's programs (internal/server), found (path, version)
// or missing with the line that installs it with this platform's package
// manager, and the state of the run directory (`seckill doctor`).
package doctor

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

	"github.com/seckill-lab/seckill/internal/server"
	"github.com/seckill-lab/seckill/internal/stack"
)

// Options configure Run.
type Options struct {
	// Finder searches for the servers (zero value: stack.SystemFinder).
	Finder *stack.Finder
	// Backends are the backends that must be there (default all): a
	// missing tool of another backend is reported, not an error.
	Backends []stack.Backend
	// Dir is the run directory to report on ("" = DefaultDir).
	Dir string
	// NoVersions skips running each program for its version.
	NoVersions bool
}

// Item is one server or tool.
type Item struct {
	// Name is the program (a server description's tool key).
	Name    string        `json:"name"`
	Backend stack.Backend `json:"backend,omitempty"`
	// Needed: a backend that must be there uses it.
	Needed  bool   `json:"needed"`
	Path    string `json:"path,omitempty"`
	Version string `json:"version,omitempty"`
	// Install is the command that installs it on this platform (missing
	// ones only).
	Install string `json:"install,omitempty"`
	// Note says what else was looked for, or how else to provide it.
	Note string `json:"note,omitempty"`
	// Also names the other copies found of a tool `up` can be told to run
	// instead (Tool.PinFlag), with their versions.
	Also string `json:"also,omitempty"`
}

// Found reports whether the item was found.
func (it Item) Found() bool { return it.Path != "" }

// Report is what Run found.
type Report struct {
	Platform       string `json:"platform"`
	PackageManager string `json:"package_manager"`
	Items          []Item `json:"items"`
	Dir            string `json:"dir"`
	// DirState says whether a stack runs in Dir and which backends.
	DirState string `json:"dir_state"`
}

// OK reports whether everything needed was found.
func (r Report) OK() bool {
	for _, it := range r.Items {
		if it.Needed && !it.Found() {
			return false
		}
	}
	return true
}

// Run lists each server and tool the stack runs: where it was found
// and its version, or that it is missing and the line that installs it
// with this platform's package manager.
func Run(ctx context.Context, o Options) (Report, error) {
	f := stack.SystemFinder()
	if o.Finder != nil {
		f = *o.Finder
	}
	backends := o.Backends
	if len(backends) == 0 {
		// The default: every backend, an optional one only when
		// it is there.
		for _, b := range stack.AllBackends {
			if sp, ok := server.ByGroup(b); !ok || !sp.Optional {
				backends = append(backends, b)
			}
		}
	}
	pm := f.PackageManager()
	rep := Report{Platform: server.Platform(f.RootDir()), PackageManager: pm}
	if pm == "" {
		rep.PackageManager = "none found (apt-get, dnf, brew)"
	}
	l := lookup{f: f, pm: pm, noVersions: o.NoVersions}
	for _, sp := range server.All {
		for _, tool := range sp.Tools {
			rep.Items = append(rep.Items, l.item(ctx, sp, tool, sp.Group == "" || slices.Contains(backends, sp.Group)))
		}
	}
	d, err := stack.AbsDir(o.Dir)
	if err != nil {
		return rep, err
	}
	rep.Dir = d
	rep.DirState = dirState(d)
	return rep, nil
}

// lookup is how Run looks for the tools: with f, naming pm's packages
// for what is missing, and asking each tool found for its version unless
// noVersions.
type lookup struct {
	f          stack.Finder
	pm         string
	noVersions bool
}

// item looks for one tool of a server description.
func (l lookup) item(ctx context.Context, sp *server.Spec, tool server.Tool, needed bool) Item {
	f, pm := l.f, l.pm
	it := Item{Name: tool.Key, Backend: sp.Group, Needed: needed}
	if tool.Locate != nil {
		in, err := tool.Locate(f)
		if err == nil {
			it.Path, it.Note = in.Classpath[len(in.Classpath)-1], in.Layout
			return it
		}
		it.Install = server.InstallLine(pm, []string{tool.Package(pm)})
		it.Note = tool.Hint + " (" + err.Error() + ")"
		return it
	}
	p, err := f.Program(tool)
	if err != nil {
		it.Note = "looked for " + strings.Join(tool.Names, ", ") + " in the lab's bin/, on PATH and in /usr/sbin, /usr/libexec, Homebrew's bin, sbin and opt/*/bin"
		if pkg := tool.Package(pm); pkg != "" {
			it.Install = server.InstallLine(pm, []string{pkg})
		} else {
			it.Install, it.Note = "make deps", tool.Hint+"; "+it.Note
		}
		if sp.Optional && !needed {
			it.Note += "; optional: the lab runs without it"
		}
		return it
	}
	it.Path = p
	if tool.Version != nil && !l.noVersions {
		it.Version = toolVersion(ctx, p, tool.Version)
	}
	it.Also = l.others(ctx, tool, p)
	return it
}

// others names the copies of tool found besides the one used (p), with
// their versions and the flag that runs one: "" when there are none, or
// when tool has no such flag.
func (l lookup) others(ctx context.Context, tool server.Tool, p string) string {
	if tool.PinFlag == "" {
		return ""
	}
	var also, seen []string
	for _, o := range l.f.All(tool.Names...) {
		real, err := filepath.EvalSymlinks(o)
		if err != nil {
			real = o
		}
		if o == p || slices.Contains(seen, real) {
			continue
		}
		seen = append(seen, real)
		if tool.Version != nil && !l.noVersions {
			o += " (" + toolVersion(ctx, o, tool.Version) + ")"
		}
		also = append(also, o)
	}
	if len(also) == 0 {
		return ""
	}
	return "also " + strings.Join(also, ", ") + "; `seckill up " + tool.PinFlag + " PATH` runs another"
}

// dirState describes the run directory: a stack in it, or whether one can
// be started there.
func dirState(d string) string {
	st, err := stack.Load(d)
	switch {
	case err == nil:
		running := 0
		for _, c := range st.Components {
			if stack.Alive(c) {
				running++
			}
		}
		absent := ""
		if a := st.Absent(); len(a) > 0 {
			absent = "; not started: " + stack.JoinBackends(a)
		}
		return fmt.Sprintf("a stack: %d of %d components running (topology %s, base port %d%s)", running, len(st.Components), st.Topology, st.BasePort, absent)
	case errors.Is(err, stack.ErrNotRunning):
		parent := d
		for !exists(parent) && filepath.Dir(parent) != parent {
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
func (r Report) Write(w io.Writer) error {
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
		switch {
		case !it.Found():
			fmt.Fprintf(w, "%s: %s\n", it.Name, it.Note)
		case it.Also != "":
			fmt.Fprintf(w, "%s: %s\n", it.Name, it.Also)
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

func exists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}
