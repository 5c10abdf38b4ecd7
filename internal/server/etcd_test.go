package server

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"testing"
)

// TestParseEtcdVersion reads `etcd --version` of the releases the lab meets.
func TestParseEtcdVersion(t *testing.T) {
	for _, tc := range []struct {
		out  string
		want [2]int
		ok   bool
	}{
		{"etcd Version: 3.7.3\nGit SHA: Not provided\nGo Version: go1.26.8\n", [2]int{3, 7}, true},
		{"etcd Version: 3.4.23\nGit SHA: c8b7831\nGo Version: go1.19.8\nGo OS/Arch: linux/amd64\n", [2]int{3, 4}, true},
		{"etcd Version: x.y\n", [2]int{}, false},
		{"no version here\n", [2]int{}, false},
	} {
		got, ok := parseEtcdVersion(tc.out)
		if got != tc.want || ok != tc.ok {
			t.Errorf("parseEtcdVersion(%q) = %v, %v; want %v, %v", tc.out, got, ok, tc.want, tc.ok)
		}
	}
}

// TestEtcdDurabilityNone: at durability none a current etcd keeps its
// data in the stack's directory and runs with --unsafe-no-fsync; an etcd
// before 3.5 (no such switch) gets its data on tmpfs instead.
func TestEtcdDurabilityNone(t *testing.T) {
	dir := t.TempDir()
	fake := func(version string) string {
		p := filepath.Join(dir, "etcd-"+version)
		script := "#!/bin/sh\necho 'etcd Version: " + version + "'\n"
		if err := os.WriteFile(p, []byte(script), 0o755); err != nil {
			t.Fatal(err)
		}
		return p
	}
	for _, tc := range []struct {
		version, durability string
		ha                  bool
		noFsync, tmpfs      bool
	}{
		{"3.7.3", DurabilityNone, false, true, false},
		{"3.7.3", DurabilityNone, true, true, false},
		{"3.7.3", DurabilityDefault, false, false, false},
		{"3.4.23", DurabilityNone, false, false, true},
		{"3.4.23", DurabilityNone, true, false, true},
		{"3.4.23", DurabilityFsync, false, false, false},
	} {
		bin := fake(tc.version)
		l := Layout{Dir: filepath.Join(dir, "run"), Base: 17000, HA: tc.ha, Durability: tc.durability, Tools: Tools{Bin: map[string]string{"etcd": bin}}}
		for _, n := range Etcd.Nodes(l) {
			dataDir := n.Args[slices.Index(n.Args, "--data-dir")+1]
			if got := slices.Contains(n.Args, "--unsafe-no-fsync"); got != tc.noFsync {
				t.Errorf("etcd %s %s ha=%v %s: --unsafe-no-fsync %v, want %v (%v)", tc.version, tc.durability, tc.ha, n.Name, got, tc.noFsync, n.Args)
			}
			if got := filepath.Dir(filepath.Dir(dataDir)) == Tmpfs; got != tc.tmpfs {
				t.Errorf("etcd %s %s ha=%v %s: data dir %s, on tmpfs %v, want %v", tc.version, tc.durability, tc.ha, n.Name, dataDir, got, tc.tmpfs)
			}
		}
	}
}

// TestEtcdVersionPinned: the version the code names is the one make deps
// builds (Makefile) and tools/etcd requires.
func TestEtcdVersionPinned(t *testing.T) {
	for file, re := range map[string]string{
		"../../Makefile":          `(?m)^ETCD_VERSION := (\S+)$`,
		"../../tools/etcd/go.mod": `(?m)^require go\.etcd\.io/etcd/server/v3 v(\S+)$`,
	} {
		b, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		m := regexp.MustCompile(re).FindSubmatch(b)
		if m == nil || string(m[1]) != EtcdVersion {
			t.Errorf("%s: %q, want etcd %s (EtcdVersion)", file, m, EtcdVersion)
		}
	}
}
