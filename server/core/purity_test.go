package core

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strings"
	"testing"
)

// TestCoresDoNoIO enforces the sans-I/O rule on the sequencer and the agent
// core: no network, files, clock, global randomness, gnet or aws. The
// simulator can only replay a seed exactly if this holds.
func TestCoresDoNoIO(t *testing.T) {
	forbiddenImports := []string{"net", "os", "math/rand", "math/rand/v2", "crypto/rand", "syscall",
		"github.com/panjf2000/gnet", "github.com/aws", "github.com/sluicedb/sluice/objectio"}
	forbiddenCalls := map[string]bool{"time.Now": true, "time.Since": true, "time.Until": true,
		"time.Sleep": true, "time.After": true, "time.AfterFunc": true, "time.NewTimer": true, "time.NewTicker": true, "time.Tick": true}
	for _, dir := range []string{".", "../../sequencer"} {
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
				sel, ok := n.(*ast.SelectorExpr)
				if !ok {
					return true
				}
				if x, ok := sel.X.(*ast.Ident); ok && forbiddenCalls[x.Name+"."+sel.Sel.Name] {
					t.Errorf("%s uses %s.%s: the cores take time as an argument", f, x.Name, sel.Sel.Name)
				}
				return true
			})
		}
	}
}
