package main

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestCmdHasNoSQL holds cmd/ingestd to parsing flags, wiring and printing:
// no SQL text and no query call in its Go files (tests aside). A statement
// belongs to the package that owns its table.
func TestCmdHasNoSQL(t *testing.T) {
	sql := regexp.MustCompile(`\b(SELECT|INSERT INTO|UPDATE \w+ SET|DELETE FROM)\b`)
	queryCalls := map[string]bool{"Query": true, "QueryRow": true, "Exec": true, "SendBatch": true, "CopyFrom": true}
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	for _, file := range files {
		if strings.HasSuffix(file, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, file, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(f, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.BasicLit:
				if n.Kind == token.STRING && sql.MatchString(n.Value) {
					t.Errorf("%s: SQL in cmd/ingestd; move it to the package that owns the table", fset.Position(n.Pos()))
				}
			case *ast.SelectorExpr:
				if queryCalls[n.Sel.Name] {
					t.Errorf("%s: %s called in cmd/ingestd; move the query to the package that owns the table",
						fset.Position(n.Pos()), n.Sel.Name)
				}
			}
			return true
		})
	}
}
