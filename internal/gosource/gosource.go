// Package gosource reads a package's own Go files for the tests that hold
// the package to its shape: where its SQL may live, how long a function may
// grow. It is for tests only.
package gosource

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// SQL matches a string literal that holds an SQL statement.
var SQL = regexp.MustCompile(`\b(SELECT|INSERT INTO|UPDATE \w+ SET|DELETE FROM|CREATE|ALTER|DROP|COPY|SET LOCAL|RESET)\b`)

// Parse parses the Go files of the test's working directory (its package),
// test files too when tests is true, less the files named in skip.
func Parse(t testing.TB, tests bool, skip ...string) (*token.FileSet, map[string]*ast.File) {
	t.Helper()
	names, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	files := make(map[string]*ast.File)
	for _, name := range names {
		if (!tests && strings.HasSuffix(name, "_test.go")) || contains(skip, name) {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		files[name] = f
	}
	return fset, files
}

// SQLLiterals calls fn for each string literal holding SQL in the files'
// non-test code, with its position and its number of lines.
func SQLLiterals(fset *token.FileSet, files map[string]*ast.File, fn func(pos token.Position, lines int)) {
	for name, f := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		ast.Inspect(f, func(n ast.Node) bool {
			if lit, ok := n.(*ast.BasicLit); ok && lit.Kind == token.STRING && SQL.MatchString(lit.Value) {
				fn(fset.Position(lit.Pos()), strings.Count(lit.Value, "\n")+1)
			}
			return true
		})
	}
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}
