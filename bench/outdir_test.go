package bench

import (
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"
)

// Benches started at the same moment get directories of their own.
func TestNewOutDirUnique(t *testing.T) {
	now := time.Date(2026, 11, 23, 10, 4, 5, 123e6, time.UTC)
	tests := []struct {
		name       string
		concurrent int
		prefix     string
	}{
		{"one", 1, ""},
		{"two at once", 2, ""},
		{"many at once, prefixed", 16, "scenario-x-"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			parent := filepath.Join(t.TempDir(), "results") // created by NewOutDir
			dirs := make([]string, tt.concurrent)
			errs := make([]error, tt.concurrent)
			var wg sync.WaitGroup
			for i := range tt.concurrent {
				wg.Go(func() { dirs[i], errs[i] = NewOutDir(parent, tt.prefix, now) })
			}
			wg.Wait()
			seen := map[string]bool{}
			for i, d := range dirs {
				if errs[i] != nil {
					t.Fatalf("NewOutDir #%d: %v", i, errs[i])
				}
				if seen[d] {
					t.Fatalf("two benches got %s", d)
				}
				seen[d] = true
				if fi, err := os.Stat(d); err != nil || !fi.IsDir() {
					t.Errorf("%s: not a directory: %v", d, err)
				}
			}
			want := filepath.Join(parent, tt.prefix+"20261123-100405.123")
			if !seen[want] {
				t.Errorf("dirs %v lack the unsuffixed %s", dirs, want)
			}
			if tt.concurrent > 1 && !seen[want+"-2"] {
				t.Errorf("dirs %v lack %s-2", dirs, want)
			}
		})
	}
}

func TestNewOutDirUnwritable(t *testing.T) {
	file := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := NewOutDir(file, "", time.Now()); err == nil {
		t.Fatal("NewOutDir under a regular file: no error")
	}
}
