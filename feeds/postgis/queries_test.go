package postgis

import (
	"github.com/ingestd/ingestd/internal/gosource"
	"github.com/ingestd/ingestd/internal/namedsql"
	"go/ast"
	"go/token"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"testing/fstest"
)

// parsePackage parses the package's Go files, test files too if tests.
func parsePackage(t *testing.T, tests bool) (*token.FileSet, map[string]*ast.File) {
	t.Helper()
	return gosource.Parse(t, tests)
}

// TestNoLongSQLInGo holds the package to its shape: SQL lives in sql/*.sql
// (no SQL string literal over 3 lines in the Go files; tests may query as
// they like) and no function, test or not, is over 80 lines, so that the
// apply path reads as its named steps.
func TestNoLongSQLInGo(t *testing.T) {
	const maxSQLLines, maxFuncLines = 3, 80
	fset, files := parsePackage(t, true)
	longestSQL, longestFunc, longestName := 0, 0, ""
	gosource.SQLLiterals(fset, files, func(pos token.Position, lines int) {
		longestSQL = max(longestSQL, lines)
		if lines > maxSQLLines {
			t.Errorf("%s: an SQL literal of %d lines (at most %d; put it in sql/*.sql)", pos, lines, maxSQLLines)
		}
	})
	for name, f := range files {
		ast.Inspect(f, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.FuncDecl:
				lines := fset.Position(n.End()).Line - fset.Position(n.Pos()).Line + 1
				if lines > longestFunc {
					longestFunc, longestName = lines, name+": "+n.Name.Name
				}
				if lines > maxFuncLines {
					t.Errorf("%s: func %s has %d lines (at most %d)", fset.Position(n.Pos()), n.Name.Name, lines, maxFuncLines)
				}
			}
			return true
		})
	}
	t.Logf("%d Go files: longest SQL literal %d lines, longest function %d lines (%s)",
		len(files), longestSQL, longestFunc, longestName)
}

// TestQueriesExist checks that every query name the Go code passes to
// sqlQuery or feedTable.sql is defined, and that every defined query is used
// by the Go code or included by another query.
func TestQueriesExist(t *testing.T) {
	_, files := parsePackage(t, false)
	used := make(map[string]bool)
	for name, f := range files {
		ast.Inspect(f, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok || len(call.Args) != 1 {
				return true
			}
			var fn string
			switch f := call.Fun.(type) {
			case *ast.Ident:
				fn = f.Name
			case *ast.SelectorExpr:
				fn = f.Sel.Name
			}
			if fn != "sqlQuery" && fn != "sql" {
				return true
			}
			lit, ok := call.Args[0].(*ast.BasicLit)
			if !ok {
				// A name chosen at run time: its candidates are
				// string literals of the same file, taken below.
				return true
			}
			q, _ := strconv.Unquote(lit.Value)
			used[q] = true
			if _, ok := queries[q]; !ok {
				t.Errorf("%s: no query named %s", name, q)
			}
			return true
		})
		ast.Inspect(f, func(n ast.Node) bool {
			if lit, ok := n.(*ast.BasicLit); ok && lit.Kind == token.STRING {
				if q, err := strconv.Unquote(lit.Value); err == nil {
					if _, ok := queries[q]; ok {
						used[q] = true
					}
				}
			}
			return true
		})
	}
	var raw []string
	names, _ := filepath.Glob("sql/*.sql")
	for _, file := range names {
		blocks, err := namedsql.Load(os.DirFS("."), file)
		if err != nil {
			t.Fatal(err)
		}
		for _, body := range blocks {
			raw = append(raw, body)
		}
	}
	for _, body := range raw {
		for _, m := range includeRef.FindAllStringSubmatch(body, -1) {
			used[m[1]] = true
		}
	}
	for q := range queries {
		if !used[q] {
			t.Errorf("query %s is neither used nor included", q)
		}
	}
}

func TestLoadQueries(t *testing.T) {
	good := fstest.MapFS{"sql/a.sql": {Data: []byte(`-- a file comment

-- name: Frag
-- a doc comment, dropped
x = 1

-- name: Whole
-- its doc comment
SELECT {{Frag}} -- kept
FROM {{table}}
`)}}
	q, err := loadQueries(good)
	if err != nil {
		t.Fatal(err)
	}
	if want := "SELECT x = 1 -- kept\nFROM {{table}}"; q["Whole"] != want {
		t.Errorf("Whole = %q, want %q", q["Whole"], want)
	}
	for name, text := range map[string]string{
		"before a marker":  "SELECT 1\n-- name: A\nSELECT 2\n",
		"defined twice":    "-- name: A\nSELECT 1\n-- name: A\nSELECT 2\n",
		"empty":            "-- name: A\n-- only a comment\n",
		"unknown include":  "-- name: A\nSELECT {{B}}\n",
		"cycle":            "-- name: A\nSELECT {{B}}\n-- name: B\nSELECT {{A}}\n",
		"trailing comment": "-- name: A\nSELECT {{B}} FROM t\n-- name: B\nx -- a comment\n",
	} {
		if _, err := loadQueries(fstest.MapFS{"sql/a.sql": {Data: []byte(text)}}); err == nil {
			t.Errorf("%s: loaded", name)
		}
	}
}

func TestFeedTableSQL(t *testing.T) {
	tb := feedTable{name: `f"x`, jurisdiction: "j", feedJurisdiction: "o'brien", feedName: "roads"}
	got := tb.sql("StoredIDs")
	if want := `FROM "f""x" t`; !strings.Contains(got, want) {
		t.Errorf("StoredIDs for %q lacks %s:\n%s", tb.name, want, got)
	}
	if strings.Contains(got, "{{") {
		t.Errorf("a placeholder is left:\n%s", got)
	}
}
