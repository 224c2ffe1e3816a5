package statuspage

import (
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/ingestd/ingestd/internal/gosource"
)

// TestQueriesExist checks sql/status.sql against the Go that runs it: every
// statement the code names exists, and every statement is named by the code.
func TestQueriesExist(t *testing.T) {
	q := New(nil, nil).sql
	files, _ := filepath.Glob("*.go")
	used := map[string]bool{}
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range regexp.MustCompile(`(?:sql\.Get\(|collect\[\w+\]\(ctx, h, |h\.counts\(ctx, )"([a-z_]+)"`).FindAllStringSubmatch(string(src), -1) {
			used[m[1]] = true
			if _, ok := q[m[1]]; !ok {
				t.Errorf("%s runs statement %q, which sql/status.sql lacks", f, m[1])
			}
		}
	}
	for name := range q {
		if !used[name] {
			t.Errorf("statement %q of sql/status.sql is never run", name)
		}
	}
}

// TestNoLongSQLInGo keeps the package's SQL in sql/status.sql.
func TestNoLongSQLInGo(t *testing.T) {
	fset, files := gosource.Parse(t, false)
	gosource.SQLLiterals(fset, files, func(pos token.Position, lines int) {
		t.Errorf("%s: an SQL literal of %d lines in Go; put it in sql/status.sql", pos, lines)
	})
}
