package deadletter

import (
	"github.com/ingestd/ingestd/internal/gosource"
	"go/token"
	"os"
	"regexp"
	"strings"
	"testing"
)

// TestQueueSQL checks sql/queue.sql against the Go that runs it: every
// statement the code names exists, every statement is named by the code (or
// included), and the only placeholder left after loading is {{filter}}, in
// the statements that take a Filter.
func TestQueueSQL(t *testing.T) {
	q := loadQueueSQL().Statements
	src, err := os.ReadFile("queue.go")
	if err != nil {
		t.Fatal(err)
	}
	used := map[string]bool{"letter_columns": true} // included by the others
	for _, m := range regexp.MustCompile(`sql\.(?:Get|withFilter)\("([a-z_]+)"`).FindAllStringSubmatch(string(src), -1) {
		used[m[1]] = true
		if _, ok := q[m[1]]; !ok {
			t.Errorf("queue.go runs statement %q, which sql/queue.sql lacks", m[1])
		}
	}
	for name, sql := range q {
		if !used[name] {
			t.Errorf("statement %q of sql/queue.sql is never run", name)
		}
		left := regexp.MustCompile(`\{\{[a-z_]+\}\}`).FindAllString(sql, -1)
		wantFilter := name == "claim" || name == "list"
		if (wantFilter && (len(left) != 1 || left[0] != "{{filter}}")) || (!wantFilter && len(left) != 0) {
			t.Errorf("statement %q keeps placeholders %v after loading", name, left)
		}
		if strings.Contains(sql, "-- ") {
			t.Errorf("statement %q keeps a comment", name)
		}
	}
}

// TestNoLongSQLInGo keeps the package's SQL in sql/queue.sql: no SQL string
// literal of the Go files (tests aside) runs over 3 lines.
func TestNoLongSQLInGo(t *testing.T) {
	fset, files := gosource.Parse(t, false)
	gosource.SQLLiterals(fset, files, func(pos token.Position, lines int) {
		if lines > 3 {
			t.Errorf("%s: an SQL literal of %d lines (at most 3; put it in sql/queue.sql)", pos, lines)
		}
	})
}
