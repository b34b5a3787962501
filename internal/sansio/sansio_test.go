// Package sansio holds the test that keeps Sluice's cores sans-I/O.
package sansio

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strings"
	"testing"
)

// cores are the packages the simulator runs single-threaded in virtual time.
var cores = []string{"../../sequencer", "../../sequencer/group", "../../sequencer/discovery", "../../server/core"}

// TestCoresDoNoIO enforces the sans-I/O rule: no network, files, clock,
// randomness, locks, goroutines, gnet, aws or object store. A seed replays a
// simulated run exactly only if this holds.
func TestCoresDoNoIO(t *testing.T) {
	forbiddenImports := []string{"net", "os", "math/rand", "math/rand/v2", "crypto/rand", "syscall", "sync",
		"github.com/panjf2000/gnet", "github.com/aws", "github.com/sluicedb/sluice/objectio"}
	forbiddenCalls := map[string]bool{"time.Now": true, "time.Since": true, "time.Until": true,
		"time.Sleep": true, "time.After": true, "time.AfterFunc": true, "time.NewTimer": true,
		"time.NewTicker": true, "time.Tick": true}
	for _, dir := range cores {
		files, err := filepath.Glob(filepath.Join(dir, "*.go"))
		if err != nil || len(files) == 0 {
			t.Fatalf("no Go files in %s: %v", dir, err)
		}
		for _, f := range files {
			if strings.HasSuffix(f, "_test.go") {
				continue
			}
			file, err := parser.ParseFile(token.NewFileSet(), f, nil, 0)
			if err != nil {
				t.Fatal(err)
			}
			for _, imp := range file.Imports {
				path := strings.Trim(imp.Path.Value, `"`)
				for _, bad := range forbiddenImports {
					if path == bad || strings.HasPrefix(path, bad+"/") {
						t.Errorf("%s imports %s: the cores do no I/O", f, path)
					}
				}
			}
			ast.Inspect(file, func(n ast.Node) bool {
				if sel, ok := n.(*ast.SelectorExpr); ok {
					if x, ok := sel.X.(*ast.Ident); ok && forbiddenCalls[x.Name+"."+sel.Sel.Name] {
						t.Errorf("%s uses %s.%s: the cores take time as an argument", f, x.Name, sel.Sel.Name)
					}
				}
				if _, ok := n.(*ast.GoStmt); ok {
					t.Errorf("%s starts a goroutine", f)
				}
				return true
			})
		}
	}
}
