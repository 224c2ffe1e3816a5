package main

import (
	"go/ast"
	"go/token"
	"testing"

	"github.com/ingestd/ingestd/internal/gosource"
)

// TestCmdHasNoSQL holds cmd/ingestd to parsing flags, wiring and printing:
// no SQL text and no query call in its Go files (tests aside). A statement
// belongs to the package that owns its table.
func TestCmdHasNoSQL(t *testing.T) {
	queryCalls := map[string]bool{"Query": true, "QueryRow": true, "Exec": true, "SendBatch": true, "CopyFrom": true}
	fset, files := gosource.Parse(t, false)
	gosource.SQLLiterals(fset, files, func(pos token.Position, _ int) {
		t.Errorf("%s: SQL in cmd/ingestd; move it to the package that owns the table", pos)
	})
	for _, f := range files {
		ast.Inspect(f, func(n ast.Node) bool {
			if n, ok := n.(*ast.SelectorExpr); ok && queryCalls[n.Sel.Name] {
				t.Errorf("%s: %s called in cmd/ingestd; move the query to the package that owns the table",
					fset.Position(n.Pos()), n.Sel.Name)
			}
			return true
		})
	}
}
