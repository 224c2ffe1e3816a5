package feeds_test

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/ingestd/ingestd/breaker"
	"github.com/ingestd/ingestd/config"
	"github.com/ingestd/ingestd/feeds"
	"github.com/ingestd/ingestd/feeds/postgis"
	"github.com/ingestd/ingestd/internal/kindconf"
	"github.com/ingestd/ingestd/migrations/pgtest"
)

// A server that echoes the credential a feed's request carried into its
// data — in a value, in a nested array in another case, in a property's
// name, in a feature id — has it scrubbed before anything is staged: the
// layer loads, with REDACTED where the token stood, and no row of any
// table of the database (features, the typed layer, the history, staging,
// polls) holds the token in any case. The feed's other data is stored as
// it came.
func TestSecretsScrubbedFromFeatureData(t *testing.T) {
	t.Parallel()
	const token = "zqFeatT0kenEcho5"
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got := r.URL.Query().Get("token")
		w.Header().Set("Content-Type", "application/geo+json")
		fmt.Fprintf(w, `{"type":"FeatureCollection","features":[
{"type":"Feature","id":"p-%[1]s","geometry":{"type":"Point","coordinates":[-78.6,35.7]},"properties":{"note":"served to %[1]s","n":1}},
{"type":"Feature","id":"p-2","geometry":{"type":"Point","coordinates":[-78.6,35.8]},"properties":{"deep":{"list":["%[2]s"]},"n":2}},
{"type":"Feature","id":"p-3","geometry":{"type":"Point","coordinates":[-78.6,35.9]},"properties":{"x_%[1]s":"y","note":"plain value","n":3}}]}`,
			got, strings.ToUpper(got))
	}))
	t.Cleanup(ts.Close)
	cfg, err := config.Parse("test.yaml", []byte(fmt.Sprintf(`
jurisdictions:
  - id: county
    feeds:
      - id: echo
        kind: geojson
        url: %s/echo.geojson?token=%s
        schedule: "0 5 * * *"
`, ts.URL, token)), nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	pool := pgtest.Pool(t)
	logger := slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelDebug}))
	breakers := breaker.NewRegistry(breaker.Config{Policy: fastPolicy()}, logger)
	manager := feeds.NewManager(postgis.New(pool),
		feeds.NewFetchers(kindconf.FetcherDeps{HTTP: ts.Client(), Breakers: breakers, Logger: logger}), feeds.WithLogger(logger))
	t.Cleanup(manager.Stop)
	if err := manager.Update(ctx, cfg); err != nil {
		t.Fatal(err)
	}
	if _, err := manager.Poll(ctx, "county/echo"); err != nil {
		t.Fatal(err)
	}

	var ids []string
	var redacted int
	rows, err := pool.Query(ctx, `SELECT feature_id, properties::text LIKE '%REDACTED%' FROM features WHERE feed = 'echo' ORDER BY feature_id`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var id string
		var r bool
		if err := rows.Scan(&id, &r); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
		if r {
			redacted++
		}
	}
	if rows.Err() != nil {
		t.Fatal(rows.Err())
	}
	if strings.Join(ids, ",") != "p-2,p-3,p-REDACTED" || redacted != 3 {
		t.Errorf("features %v with %d holding REDACTED; want p-2, p-3, p-REDACTED, all three scrubbed", ids, redacted)
	}
	var plain int
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM features WHERE feed = 'echo' AND properties->>'note' = 'plain value'`).Scan(&plain); err != nil || plain != 1 {
		t.Errorf("the feed's other data: %d rows with the plain note (%v), want 1", plain, err)
	}
	if n := occurrences(t, pool, token); n != 0 {
		t.Errorf("the token is in %d rows of the database", n)
	}
}

// occurrences counts the rows of every table of the database whose text
// holds s, in any case.
func occurrences(t *testing.T, pool interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}, s string) int {
	t.Helper()
	ctx := t.Context()
	rows, err := pool.Query(ctx, `SELECT schemaname, tablename FROM pg_tables WHERE schemaname NOT IN ('pg_catalog', 'information_schema')`)
	if err != nil {
		t.Fatal(err)
	}
	tables, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (pgx.Identifier, error) {
		var schema, table string
		err := r.Scan(&schema, &table)
		return pgx.Identifier{schema, table}, err
	})
	if err != nil {
		t.Fatal(err)
	}
	total := 0
	for _, tb := range tables {
		var n int
		if err := pool.QueryRow(ctx, `SELECT count(*) FROM `+tb.Sanitize()+` x WHERE strpos(lower(x::text), lower($1)) > 0`, s).Scan(&n); err != nil {
			t.Fatalf("%s: %v", tb.Sanitize(), err)
		}
		if n > 0 {
			t.Logf("%s: %d rows hold %q", tb.Sanitize(), n, s)
		}
		total += n
	}
	return total
}
