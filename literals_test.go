package seckill_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/seckill-lab/seckill/internal/server"
	"github.com/seckill-lab/seckill/stock/catalog"
)

// TestNoStrategyLiterals: outside the registry (and tests), strategy names
// appear only as the constants. Names that are also server names (redis,
// etcd, zookeeper) or link groups of the server descriptions (redlock: the
// five servers of the Redlock set) are left out: the stack names its
// processes and links after the servers.
func TestNoStrategyLiterals(t *testing.T) {
	servers := map[string]bool{}
	for _, s := range []catalog.Server{catalog.ServerProcess, catalog.ServerRedis, catalog.ServerRedlock, catalog.ServerZooKeeper, catalog.ServerEtcd, catalog.ServerMySQL} {
		servers[string(s)] = true
	}
	for _, l := range server.LinkNames(true) {
		servers[l] = true
	}
	names := map[string]bool{}
	for _, n := range catalog.StrategyNames() {
		if !servers[n] {
			names[n] = true
		}
	}
	root := "."
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (strings.HasPrefix(d.Name(), ".") && path != root || d.Name() == "testdata") {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") || filepath.ToSlash(path) == "stock/catalog/catalog.go" {
			return nil
		}
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		ast.Inspect(f, func(n ast.Node) bool {
			// The durability levels (server.Durabilities) are another
			// vocabulary that also has a "none".
			if vs, ok := n.(*ast.ValueSpec); ok && len(vs.Names) == 1 && strings.HasPrefix(vs.Names[0].Name, "Durability") {
				return false
			}
			lit, ok := n.(*ast.BasicLit)
			if !ok || lit.Kind != token.STRING {
				return true
			}
			if v, err := strconv.Unquote(lit.Value); err == nil && names[v] {
				t.Errorf("%s: strategy name %s as a literal; use the catalog constant or the registry", path, lit.Value)
			}
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
