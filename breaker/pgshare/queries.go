package pgshare

import (
	"embed"

	"github.com/ingestd/ingestd/internal/namedsql"
)

// The package's SQL lives in sql/*.sql, one file per concern, each
// statement under a "-- name: NAME" line (River's dbsqlc layout), so that
// it reads and diffs as SQL rather than as Go strings.
//
//go:embed sql/*.sql
var sqlFiles embed.FS

// loadStatements parses sql/file (see namedsql.MustLoad).
func loadStatements(file string) namedsql.Statements {
	return namedsql.MustLoad(sqlFiles, "sql/"+file)
}

// verdictSQL are Cluster's statements (sql/verdicts.sql).
type verdictSQL struct {
	selectAll, selectSorted, selectOrigin string
	open, close, release, lease, renew    string
	override                              string
}

func loadVerdictSQL() verdictSQL {
	s := loadStatements("verdicts.sql")
	return verdictSQL{
		selectAll: s.Get("select_all"), selectSorted: s.Get("select_sorted"), selectOrigin: s.Get("select_origin"),
		open: s.Get("open"), close: s.Get("close"), release: s.Get("release"),
		lease: s.Get("lease"), renew: s.Get("renew"), override: s.Get("override"),
	}
}

// originWatchSQL are OriginWatch's statements (sql/origin_watch.sql).
type originWatchSQL struct {
	recordState, recordStuck string
}

func loadOriginWatchSQL() originWatchSQL {
	s := loadStatements("origin_watch.sql")
	return originWatchSQL{recordState: s.Get("record_state"), recordStuck: s.Get("record_stuck")}
}

// loadScrubSQL is Cluster.ScrubSecrets's read and write (sql/scrub.sql).
func loadScrubSQL() (read, write string) {
	s := loadStatements("scrub.sql")
	return s.Get("scrub_read"), s.Get("scrub_write")
}
