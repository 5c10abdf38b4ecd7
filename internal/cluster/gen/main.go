// Command gen writes deploy/k8s from internal/cluster.Render: run by
// `go generate ./internal/cluster` (or `make manifests`) from the module's
// root or from internal/cluster.
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"

	"github.com/seckill-lab/seckill/internal/cluster"
)

func main() {
	out := flag.String("out", "deploy/k8s", "directory to write")
	flag.Parse()
	if err := write(*out); err != nil {
		fmt.Fprintln(os.Stderr, "gen:", err)
		os.Exit(1)
	}
}

func write(dir string) error {
	files, err := cluster.Render()
	if err != nil {
		return err
	}
	// Files of an earlier rendering that Render no longer produces go.
	if err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		if _, ok := files[filepath.ToSlash(rel)]; !ok && !slices.Contains(cluster.Unrendered, filepath.ToSlash(rel)) {
			return os.Remove(p)
		}
		return nil
	}); err != nil && !os.IsNotExist(err) {
		return err
	}
	for p, b := range files {
		full := filepath.Join(dir, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(full, b, 0o644); err != nil {
			return err
		}
	}
	return nil
}
