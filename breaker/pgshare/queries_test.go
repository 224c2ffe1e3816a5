package pgshare

import (
	"regexp"
	"strings"
	"testing"
)

// Every statement of sql/verdicts.sql returns the columns scanVerdict reads,
// in its order: the list is spelled out in each (SQL, not Go, composes
// them), so this test keeps the copies alike.
func TestVerdictStatementsReturnOneColumnList(t *testing.T) {
	t.Parallel()
	norm := func(s string) string { return strings.Join(strings.Fields(s), " ") }
	s := loadStatements("verdicts.sql")
	want := norm(strings.TrimSuffix(strings.TrimPrefix(s.Get("select_all"), "SELECT"), "FROM breaker_state"))
	if !strings.HasSuffix(want, "version, clock_timestamp()") {
		t.Fatalf("select_all returns %q, want the row ending with version, clock_timestamp()", want)
	}
	cols := regexp.MustCompile(`(?s)(?:^SELECT|\nRETURNING)\s(.*?)(?:\nFROM|$)`)
	for name, q := range s {
		m := cols.FindStringSubmatch(q)
		if m == nil {
			t.Errorf("%s returns no row", name)
			continue
		}
		if got := norm(m[1]); got != want {
			t.Errorf("%s returns %q,\nwant %q", name, got, want)
		}
		if strings.Contains(q, ";") || strings.Contains(q, "--") {
			t.Errorf("%s keeps a semicolon or a comment: %q", name, q)
		}
	}
	_ = loadVerdictSQL()
	_ = loadOriginWatchSQL()
	_, _ = loadScrubSQL()
}
