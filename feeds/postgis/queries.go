package postgis

import (
	"embed"
	"fmt"
	"github.com/ingestd/ingestd/internal/namedsql"
	"io/fs"
	"regexp"
	"strings"

	"github.com/jackc/pgx/v5"
)

// The store's SQL lives in sql/*.sql, one file per concern (as River's
// dbsqlc keeps its queries), so that a statement reads as SQL and is
// reviewed as SQL rather than as Go strings glued together.
//
// A file holds named blocks, each starting with a line
//
//	-- name: BlockName
//
// followed by the block's doc comment (the `--` lines right after the
// marker, dropped from the text sent) and its SQL. A block may include
// another by writing {{OtherBlock}} (a name starting with an upper-case
// letter): the shared parts of the apply statements (the snapshot's CTEs,
// the guards' extent count, the skip rule) are written once that way and
// expanded when the package is initialised. Lower-case placeholders are
// left for run time: {{table}} and its kin name a feed's own table and are
// filled in by feedTable.sql, from identifiers quoted by pgx.Identifier and
// literals quoted by quoteLiteral — the only text ever put into a
// statement; values are always parameters.

//go:embed sql/*.sql
var sqlFiles embed.FS

// queries holds every block of sql/*.sql by name, includes expanded. It is
// built once when the package is initialised and only read afterwards; a
// malformed file, a block named twice or an unknown include fails the
// initialisation, so no test or binary runs with a broken query.
var queries = mustLoadQueries(sqlFiles)

// sqlQuery returns the named query. The names are fixed in the source
// (TestQueriesExist checks each one used); an unknown name is a bug and
// panics.
func sqlQuery(name string) string {
	q, ok := queries[name]
	if !ok {
		panic("postgis: no query named " + name)
	}
	return q
}

var (
	// includeRef is a block's reference to another ({{Name}}).
	includeRef = regexp.MustCompile(`\{\{([A-Z][A-Za-z0-9]*)\}\}`)
)

func mustLoadQueries(fsys fs.FS) map[string]string {
	q, err := loadQueries(fsys)
	if err != nil {
		panic(err)
	}
	return q
}

// loadQueries reads every sql/*.sql file of fsys into named, expanded
// queries.
func loadQueries(fsys fs.FS) (map[string]string, error) {
	files, err := fs.Glob(fsys, "sql/*.sql")
	if err != nil {
		return nil, err
	}
	raw := make(map[string]string)
	for _, file := range files {
		blocks, err := namedsql.Load(fsys, file)
		if err != nil {
			return nil, fmt.Errorf("postgis: %w", err)
		}
		for name, body := range blocks {
			if body == "" {
				return nil, fmt.Errorf("postgis: %s: query %s is empty", file, name)
			}
			if _, dup := raw[name]; dup {
				return nil, fmt.Errorf("postgis: %s: query %s is defined twice", file, name)
			}
			raw[name] = body
		}
	}
	out := make(map[string]string, len(raw))
	for name := range raw {
		if _, err := expandQuery(name, raw, out, nil); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// expandQuery returns the named block with its includes expanded, caching
// the result in out; path holds the blocks being expanded, to refuse a
// cycle.
func expandQuery(name string, raw, out map[string]string, path []string) (string, error) {
	if q, ok := out[name]; ok {
		return q, nil
	}
	for _, p := range path {
		if p == name {
			return "", fmt.Errorf("postgis: query %s includes itself (%s)", name, strings.Join(append(path, name), " → "))
		}
	}
	body, ok := raw[name]
	if !ok {
		return "", fmt.Errorf("postgis: query %s includes unknown query %s", path[len(path)-1], name)
	}
	var err error
	q := includeRef.ReplaceAllStringFunc(body, func(ref string) string {
		if err != nil {
			return ref
		}
		var sub string
		sub, err = expandQuery(ref[2:len(ref)-2], raw, out, append(path, name))
		if err == nil && strings.Contains(sub[strings.LastIndexByte(sub, '\n')+1:], "--") {
			// Included mid-line, it would comment out what follows.
			err = fmt.Errorf("postgis: query %s ends in a comment and cannot be included", ref[2:len(ref)-2])
		}
		return sub
	})
	if err != nil {
		return "", err
	}
	out[name] = q
	return q, nil
}

// sql returns the named query for this feed's table: {{table}} is the
// table, {{table_bound}}, {{table_pkey}} and {{table_geom}} its constraint
// and index names, {{jurisdiction_table}} the jurisdiction's partition, and
// {{jurisdiction}} and {{feed}} the feed's names as string literals (DDL
// takes no parameters). Statements that name a table are executed without
// preparing (pgx.QueryExecModeDescribeExec), so thousands of feeds do not
// churn the statement cache.
func (t feedTable) sql(name string) string {
	id := func(s string) string { return pgx.Identifier{s}.Sanitize() }
	return strings.NewReplacer(
		"{{table}}", t.ident(),
		"{{table_bound}}", id(t.name+"_bound"),
		"{{table_pkey}}", id(t.name+"_pkey"),
		"{{table_geom}}", id(t.name+"_geom"),
		"{{jurisdiction_table}}", id(t.jurisdiction),
		"{{jurisdiction}}", quoteLiteral(t.feedJurisdiction),
		"{{feed}}", quoteLiteral(t.feedName),
	).Replace(sqlQuery(name))
}
