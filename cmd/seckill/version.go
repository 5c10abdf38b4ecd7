package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"runtime/debug"
	"strings"
)

// runVersion prints which seckill this is: the module and its version,
// the commit it was built from and the Go that built it, as the Go
// toolchain stamped them into the binary (`go build` in a git checkout
// records the commit; `go run` and test binaries do not).
func runVersion(_ context.Context, args []string) error {
	fs := newFlagSet("version")
	if err := parse(fs, args); err != nil {
		return err
	}
	if err := noArgs(fs); err != nil {
		return err
	}
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return fmt.Errorf("version: the binary carries no build information (built without module support)")
	}
	return writeVersion(os.Stdout, bi)
}

// writeVersion writes bi as `seckill version` prints it: one "key value"
// line each for the module, its version, the commit, the commit's time,
// whether the work tree had changes, and the Go version.
func writeVersion(w io.Writer, bi *debug.BuildInfo) error {
	settings := map[string]string{}
	for _, s := range bi.Settings {
		settings[s.Key] = s.Value
	}
	version := bi.Main.Version
	if version == "" {
		version = "(unknown)"
	}
	commit, when, modified := settings["vcs.revision"], settings["vcs.time"], settings["vcs.modified"]
	if commit == "" {
		commit = "(not stamped: built by go run or go test, with -buildvcs=false, or outside a git checkout)"
	}
	switch modified {
	case "true":
		modified = "yes (the work tree had uncommitted changes)"
	case "false":
		modified = "no"
	default:
		modified = "(unknown)"
	}
	if when == "" {
		when = "(unknown)"
	}
	var b strings.Builder
	for _, kv := range [][2]string{
		{"module", bi.Main.Path},
		{"version", version},
		{"commit", commit},
		{"time", when},
		{"modified", modified},
		{"go", bi.GoVersion},
	} {
		fmt.Fprintf(&b, "%-9s%s\n", kv[0], kv[1])
	}
	if _, err := io.WriteString(w, b.String()); err != nil {
		return fmt.Errorf("version: %w", err)
	}
	return nil
}
