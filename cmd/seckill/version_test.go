package main

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/debug"
	"strings"
	"testing"

	"github.com/seckill-lab/seckill/internal/testenv"
)

// TestWriteVersion: `seckill version` prints the module, its version, the
// commit and its time, whether the tree was modified and the Go version,
// and says so when the build was not stamped.
func TestWriteVersion(t *testing.T) {
	const mod = "github.com/seckill-lab/seckill"
	tests := []struct {
		name string
		bi   debug.BuildInfo
		want []string
	}{
		{
			name: "stamped, clean",
			bi: debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Path: mod, Version: "v0.0.0-20260415100000-25f37ff1234a"},
				Settings: []debug.BuildSetting{{Key: "vcs", Value: "git"}, {Key: "vcs.revision", Value: "25f37ff1234a5678"},
					{Key: "vcs.time", Value: "2026-04-15T10:00:00Z"}, {Key: "vcs.modified", Value: "false"}}},
			want: []string{"module   " + mod + "\n", "version  v0.0.0-20260415100000-25f37ff1234a\n", "commit   25f37ff1234a5678\n",
				"time     2026-04-15T10:00:00Z\n", "modified no\n", "go       go1.26.8\n"},
		},
		{
			name: "stamped, modified",
			bi: debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Path: mod, Version: "v0.0.0-20260415100000-25f37ff1234a+dirty"},
				Settings: []debug.BuildSetting{{Key: "vcs.revision", Value: "25f37ff1234a5678"}, {Key: "vcs.modified", Value: "true"}}},
			want: []string{"version  v0.0.0-20260415100000-25f37ff1234a+dirty\n", "modified yes (the work tree had uncommitted changes)\n", "time     (unknown)\n"},
		},
		{
			name: "not stamped",
			bi:   debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Path: mod}},
			want: []string{"version  (unknown)\n", "commit   (not stamped: built by go run or go test, with -buildvcs=false, or outside a git checkout)\n", "modified (unknown)\n"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var b strings.Builder
			if err := writeVersion(&b, &tt.bi); err != nil {
				t.Fatal(err)
			}
			if n := strings.Count(b.String(), "\n"); n != 6 {
				t.Errorf("%d lines, want 6:\n%s", n, b.String())
			}
			for _, w := range tt.want {
				if !strings.Contains(b.String(), w) {
					t.Errorf("output lacks %q:\n%s", w, b.String())
				}
			}
		})
	}
}

// TestVersionArgs: `seckill version` takes no argument.
func TestVersionArgs(t *testing.T) {
	err := run(context.Background(), []string{"version", "extra"})
	var ee exitError
	if !errors.As(err, &ee) || ee.code != 2 || !strings.Contains(ee.msg, `unexpected argument "extra"`) {
		t.Errorf("seckill version extra: %v; want a usage error naming the argument", err)
	}
}

// skipOutsideCI skips t, but fails it under CI=true: CI tests a fresh clone,
// where the commit must be stamped.
func skipOutsideCI(t *testing.T, format string, args ...any) {
	t.Helper()
	if testenv.InCI() {
		t.Fatalf(format, args...)
	}
	t.Skipf(format, args...)
}

// TestVersionStamped: a binary built with 'go build' in this git checkout
// prints the checkout's commit. Skips outside a git checkout, and in a
// linked work tree (git worktree add), whose .git is a file: the go
// command stamps only checkouts whose .git is a directory.
func TestVersionStamped(t *testing.T) {
	top, err := exec.Command("git", "rev-parse", "--show-toplevel").Output()
	if err != nil {
		skipOutsideCI(t, "not in a git checkout: %v", err)
	}
	if fi, err := os.Stat(filepath.Join(strings.TrimSpace(string(top)), ".git")); err != nil || !fi.IsDir() {
		skipOutsideCI(t, "a linked git work tree: the go command stamps no commit there")
	}
	head, err := exec.Command("git", "rev-parse", "HEAD").Output()
	if err != nil {
		t.Fatalf("git rev-parse HEAD: %v", err)
	}
	bin := filepath.Join(t.TempDir(), "seckill")
	build := exec.Command("go", "build", "-o", bin, ".")
	build.Env = append(os.Environ(), "GOFLAGS=-buildvcs=true")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	out, err := exec.Command(bin, "version").Output()
	if err != nil {
		t.Fatalf("seckill version: %v", err)
	}
	if want := "commit   " + strings.TrimSpace(string(head)) + "\n"; !strings.Contains(string(out), want) {
		t.Errorf("seckill version printed\n%s\nwant the line %q", out, want)
	}
}
