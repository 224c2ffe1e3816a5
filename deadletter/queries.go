package deadletter

import (
	"embed"
	"fmt"
	"strings"
)

// The package's SQL lives in sql/queue.sql, each statement under a
// "-- name: NAME" line (River's dbsqlc layout, as in breaker and
// feeds/postgis), so that it reads and diffs as SQL rather than as Go
// strings.
//
//go:embed sql/*.sql
var sqlFiles embed.FS

// queueSQL is the named statements of sql/queue.sql, {{letter_columns}}
// expanded.
type queueSQL map[string]string

// loadQueueSQL parses sql/queue.sql. The file is part of the binary, so a
// missing or malformed one is a bug in this package: it panics, and every
// test that builds a Queue fails.
func loadQueueSQL() queueSQL {
	text, err := sqlFiles.ReadFile("sql/queue.sql")
	if err != nil {
		panic(fmt.Sprintf("deadletter: %v", err))
	}
	out := queueSQL{}
	name := ""
	var body strings.Builder
	flush := func() {
		if name == "" {
			return
		}
		if _, dup := out[name]; dup {
			panic(fmt.Sprintf("deadletter: sql/queue.sql: statement %q twice", name))
		}
		out[name] = strings.TrimSpace(body.String())
	}
	for line := range strings.Lines(string(text)) {
		if n, ok := strings.CutPrefix(line, "-- name: "); ok {
			flush()
			name = strings.TrimSpace(n)
			body.Reset()
			continue
		}
		if strings.HasPrefix(strings.TrimSpace(line), "--") {
			continue // comments say why; the database need not read them
		}
		body.WriteString(line)
	}
	flush()
	columns := out.get("letter_columns")
	for n, q := range out {
		out[n] = strings.ReplaceAll(q, "{{letter_columns}}", columns)
	}
	return out
}

// get returns the statement called name; a name the file lacks is a bug.
func (s queueSQL) get(name string) string {
	q, ok := s[name]
	if !ok {
		panic(fmt.Sprintf("deadletter: no SQL statement %q", name))
	}
	return q
}

// withFilter returns the statement called name with cond, a Filter's
// condition (column names and parameter numbers, never a value), in place
// of {{filter}}.
func (s queueSQL) withFilter(name, cond string) string {
	return strings.Replace(s.get(name), "{{filter}}", cond, 1)
}
