package seckill

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// TestCheckGo runs scripts/check-go.sh (the first step of make deps and
// make build) with a fake go first on PATH: a Go older than go.mod's `go`
// line stops it with exit 1, naming the Go found, the version needed and
// how to get it (the toolchain switch from Go 1.21 on, the release archive
// before); one at least as new passes silently.
func TestCheckGo(t *testing.T) {
	mod, err := os.ReadFile("go.mod")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^go (([0-9]+)\.([0-9]+)(\.[0-9]+)?)$`).FindSubmatch(mod)
	if m == nil {
		t.Fatal("go.mod has no go line")
	}
	need := string(m[1])
	major, _ := strconv.Atoi(string(m[2]))
	minor, _ := strconv.Atoi(string(m[3]))
	toolchain := "go" + need
	if len(m[4]) == 0 {
		toolchain += ".0"
	}
	prev := fmt.Sprintf("go%d.%d.9", major, minor-1)
	next := fmt.Sprintf("go%d.%d.0", major, minor+1)
	needed := "the lab needs Go >= " + need + " (go.mod's 'go' line)"
	tests := []struct {
		name    string
		version string // what the fake go version prints; "" for no go at all
		ok      bool
		want    []string // substrings of stderr
	}{
		{"Debian 12's Go", "go version go1.19.8 linux/amd64", false,
			[]string{"found go version go1.19.8 linux/amd64 (", needed, "https://go.dev/dl/" + toolchain + ".linux-amd64.tar.gz", "/usr/local/go", "PATH=/usr/local/go/bin:"}},
		{"Go 1.20 on a Mac", "go version go1.20.14 darwin/arm64", false,
			[]string{needed, toolchain + ".darwin-arm64.tar.gz"}},
		{"Go 1.21, which switches toolchains", "go version go1.21.0 linux/amd64", false,
			[]string{needed, "export GOTOOLCHAIN=" + toolchain, "golang.org/dl/" + toolchain + "@latest"}},
		{"the minor before", "go version " + prev + " linux/amd64", false, []string{"found go version " + prev, needed, "GOTOOLCHAIN=" + toolchain}},
		{"a release candidate of the version needed", fmt.Sprintf("go version go%d.%drc1 linux/amd64", major, minor), false, []string{needed}},
		{"the version needed", "go version " + toolchain + " linux/amd64", true, nil},
		{"a later patch", fmt.Sprintf("go version go%d.%d.8 linux/amd64", major, minor), true, nil},
		{"a later minor", "go version " + next + " linux/amd64", true, nil},
		{"a development build after it", "go version devel " + next[:strings.LastIndex(next, ".")] + "-abc123 Mon Jan 5 10:00:00 2026 +0000 linux/amd64", true, nil},
		{"a development build before it", "go version devel " + prev[:strings.LastIndex(prev, ".")] + "-abc123 Mon Jan 5 10:00:00 2026 +0000 linux/amd64", false, []string{needed}},
		{"a development build that names no release", "go version devel +abc123 Mon Jan 5 10:00:00 2026 +0000 linux/amd64", true, []string{"a development build"}},
		{"no go", "", false, []string{"found no 'go-not-installed' on PATH", needed, "go.dev/dl/" + toolchain}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			bin := t.TempDir()
			env := append(os.Environ(), "PATH="+bin+string(os.PathListSeparator)+os.Getenv("PATH"))
			if tt.version == "" {
				env = append(env, "GO=go-not-installed")
			} else {
				script := "#!/bin/sh\necho '" + tt.version + "'\n"
				if err := os.WriteFile(filepath.Join(bin, "go"), []byte(script), 0o755); err != nil {
					t.Fatal(err)
				}
				env = append(env, "GO=go")
			}
			cmd := exec.Command(filepath.Join("scripts", "check-go.sh"))
			cmd.Env = env
			var stdout, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			err := cmd.Run()
			var ee *exec.ExitError
			switch {
			case tt.ok && err != nil:
				t.Errorf("exit %v, want 0; stderr:\n%s", err, stderr.String())
			case !tt.ok && (!errors.As(err, &ee) || ee.ExitCode() != 1):
				t.Errorf("err = %v, want exit 1; stderr:\n%s", err, stderr.String())
			}
			if stdout.Len() > 0 {
				t.Errorf("stdout %q: messages go to stderr", stdout.String())
			}
			if tt.ok && len(tt.want) == 0 && stderr.Len() > 0 {
				t.Errorf("stderr %q: a new enough Go passes silently", stderr.String())
			}
			for _, w := range tt.want {
				if !strings.Contains(stderr.String(), w) {
					t.Errorf("stderr lacks %q:\n%s", w, stderr.String())
				}
			}
		})
	}
}

// TestCheckGoFirst: make deps and make build run scripts/check-go.sh
// before anything else (go-version is their first prerequisite, and the
// recipes that build with Go wait for it).
func TestCheckGoFirst(t *testing.T) {
	mk, err := os.ReadFile("Makefile")
	if err != nil {
		t.Fatal(err)
	}
	for _, rule := range []string{"deps: go-version ", "build: go-version\n", "packages: | go-version\n", "go-version:\n\t@GO=\"$(GO)\" scripts/check-go.sh\n"} {
		if !bytes.Contains(mk, []byte(rule)) {
			t.Errorf("the Makefile has no %q", rule)
		}
	}
	for _, target := range []string{"$(CONSUL)", "$(ETCD)"} {
		if !regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(target) + `: .*\| go-version$`).Match(mk) {
			t.Errorf("the Makefile's %s rule does not wait for go-version", target)
		}
	}
}
