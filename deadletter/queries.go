package deadletter

import (
	"embed"
	"strings"

	"github.com/ingestd/ingestd/internal/namedsql"
)

// The package's SQL lives in sql/queue.sql, each statement under a
// "-- name: NAME" line (River's dbsqlc layout, read by internal/namedsql as
// breaker's is), so that it reads and diffs as SQL rather than as Go
// strings.
//
//go:embed sql/*.sql
var sqlFiles embed.FS

// queueSQL is the named statements of sql/queue.sql, {{letter_columns}}
// expanded.
type queueSQL struct{ namedsql.Statements }

// loadQueueSQL parses sql/queue.sql (see namedsql.MustLoad).
func loadQueueSQL() queueSQL {
	s := namedsql.MustLoad(sqlFiles, "sql/queue.sql")
	columns := s.Get("letter_columns")
	for n, q := range s {
		s[n] = strings.ReplaceAll(q, "{{letter_columns}}", columns)
	}
	return queueSQL{s}
}

// withFilter returns the statement called name with cond, a Filter's
// condition (column names and parameter numbers, never a value), in place
// of {{filter}}.
func (s queueSQL) withFilter(name, cond string) string {
	return strings.Replace(s.Get(name), "{{filter}}", cond, 1)
}
