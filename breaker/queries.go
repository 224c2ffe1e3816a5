package breaker

import (
	"embed"
	"fmt"
	"strings"
)

// The package's SQL lives in sql/*.sql, one file per concern, each
// statement under a "-- name: NAME" line (River's dbsqlc layout), so that
// it reads and diffs as SQL rather than as Go strings.
//
//go:embed sql/*.sql
var sqlFiles embed.FS

// statements are the named statements of one sql/ file.
type statements map[string]string

// loadStatements parses sql/file. The files are part of the binary, so a
// missing or malformed one is a bug in this package: it panics, and every
// test that builds a SharedState or an OriginWatch would fail.
func loadStatements(file string) statements {
	text, err := sqlFiles.ReadFile("sql/" + file)
	if err != nil {
		panic(fmt.Sprintf("breaker: %v", err))
	}
	out := statements{}
	name := ""
	var body strings.Builder
	flush := func() {
		if name == "" {
			return
		}
		if _, dup := out[name]; dup {
			panic(fmt.Sprintf("breaker: sql/%s: statement %q twice", file, name))
		}
		out[name] = strings.TrimSuffix(strings.TrimSpace(body.String()), ";")
	}
	for line := range strings.Lines(string(text)) {
		if n, ok := strings.CutPrefix(line, "-- name: "); ok {
			flush()
			name = strings.TrimSpace(n)
			body.Reset()
			continue
		}
		if strings.HasPrefix(line, "--") {
			continue // comments say why; the database need not read them
		}
		body.WriteString(line)
	}
	flush()
	return out
}

// get returns the statement called name; a name the file lacks is a bug.
func (s statements) get(name string) string {
	q, ok := s[name]
	if !ok {
		panic(fmt.Sprintf("breaker: no SQL statement %q", name))
	}
	return q
}

// verdictSQL are SharedState's statements (sql/verdicts.sql).
type verdictSQL struct {
	selectAll, selectSorted, selectOrigin string
	open, close, release, lease, renew    string
	override                              string
}

func loadVerdictSQL() verdictSQL {
	s := loadStatements("verdicts.sql")
	return verdictSQL{
		selectAll: s.get("select_all"), selectSorted: s.get("select_sorted"), selectOrigin: s.get("select_origin"),
		open: s.get("open"), close: s.get("close"), release: s.get("release"),
		lease: s.get("lease"), renew: s.get("renew"), override: s.get("override"),
	}
}

// originWatchSQL are OriginWatch's statements (sql/origin_watch.sql).
type originWatchSQL struct {
	recordState, recordStuck string
}

func loadOriginWatchSQL() originWatchSQL {
	s := loadStatements("origin_watch.sql")
	return originWatchSQL{recordState: s.get("record_state"), recordStuck: s.get("record_stuck")}
}
