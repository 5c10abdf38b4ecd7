package seckill_test

import (
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

const modulePath = "github.com/seckill-lab/seckill/"

// TestLayers: the packages under a folder import none of the module's
// packages the folder must not reach (tests aside). bench/ stands alone:
// what the lab adds reaches a run through bench/fleet and the options the
// lab fills in, so a bench of any service links nothing of the lab. The
// core (stock/, lockimpl/) links nothing of the lab either: the backend
// wiring is the service's start-up's (internal/lockwire), the phase tag a
// leaf (stock/phase), the test helpers the lab's (internal/testenv,
// internal/sqltest).
func TestLayers(t *testing.T) {
	rules := []struct {
		dir, forbidden string
	}{
		{"bench", "internal/"},
		{"stock", "internal/"},
		{"lockimpl", "internal/"},
	}
	for _, r := range rules {
		bad := importsUnder(t, r.dir, r.forbidden)
		for _, b := range bad {
			t.Errorf("%s imports %s%s: nothing under %s/ may (a layer below importing one above)", b[0], modulePath, b[1], r.dir)
		}
	}
}

// importsUnder lists, for every non-test Go file under dir, the module's
// imports that start with forbidden: pairs of file and import.
func importsUnder(t *testing.T, dir, forbidden string) [][2]string {
	t.Helper()
	var out [][2]string
	fset := token.NewFileSet()
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return err
		}
		f, err := parser.ParseFile(fset, path, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		for _, imp := range f.Imports {
			p, _ := strconv.Unquote(imp.Path.Value)
			if rest, ok := strings.CutPrefix(p, modulePath); ok && strings.HasPrefix(rest, forbidden) {
				out = append(out, [2]string{path, rest})
			}
		}
		return nil
	})
	if err != nil {
		t.Fatalf("walk %s: %v", dir, err)
	}
	return out
}
