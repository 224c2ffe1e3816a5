package socrata_test

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/ingestd/ingestd/config"
	"github.com/ingestd/ingestd/feeds"
	"github.com/ingestd/ingestd/feeds/postgis"
	"github.com/ingestd/ingestd/internal/kindconf"
	"github.com/ingestd/ingestd/migrations/pgtest"
	"github.com/ingestd/ingestd/redact"
	"github.com/ingestd/ingestd/socrata"
	"github.com/ingestd/ingestd/socrata/socratatest"
	"github.com/ingestd/ingestd/source"
)

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m, 4)) }

// lockedBuffer is a log sink safe for the manager's goroutines.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

const appToken = "zqSocrataT0ken9"

// A socrata feed, configured as an operator writes it (the app token from
// the environment), polled by the manager into real PostGIS: the dataset
// lands whole, typed by its metadata; the next poll is a cheap refresh
// (not modified); a portal that echoes the token in its error body fails
// the poll with its words. The token is never in the log (written as the
// daemon writes it, through the configuration's secrets) nor in any table.
func TestPollIntoPostGIS(t *testing.T) {
	t.Parallel()
	s, ts := portal(t, 2500)
	s.AppToken, s.FreeRequests = appToken, 1
	cfg, err := config.Parse("socrata.yaml", []byte(fmt.Sprintf(`
jurisdictions:
  - id: chicago
    feeds:
      - id: inspections
        kind: socrata
        url: %s
        dataset: %s
        app_token: ${SOCRATA_APP_TOKEN}
`, ts.URL, dsID)), func(k string) (string, bool) { return appToken, k == "SOCRATA_APP_TOKEN" })
	if err != nil {
		t.Fatal(err)
	}
	secrets := redact.NewSecrets(cfg.Secrets()...)
	var logs lockedBuffer
	logger := slog.New(slog.NewJSONHandler(secrets.Writer(&logs), &slog.HandlerOptions{Level: slog.LevelDebug}))
	pool := pgtest.Pool(t)
	store := postgis.New(pool, postgis.WithSecrets(secrets), postgis.WithLogger(logger))
	m := feeds.NewManager(store, feeds.NewFetchers(kindconf.FetcherDeps{HTTP: &http.Client{}, Breakers: registry(), Logger: logger}), feeds.WithLogger(logger))
	ctx := t.Context()
	if err := m.Update(ctx, cfg); err != nil {
		t.Fatal(err)
	}
	res, err := m.Poll(ctx, "chicago/inspections")
	if err != nil || res.Features != 2500 || res.Added != 2500 || res.Pages != 3 {
		t.Fatalf("first poll: %+v, %v; want 2500 features added in 3 pages", res, err)
	}
	var view, cols string
	var stored int
	if err := pool.QueryRow(ctx, `SELECT ingestd_feed_view('chicago', 'inspections')`).Scan(&view); err != nil {
		t.Fatal(err)
	}
	if err := pool.QueryRow(ctx, `SELECT string_agg(attname || ':' || format_type(atttypid, atttypmod), ',' ORDER BY attnum)
		FROM pg_attribute WHERE attrelid = $1::regclass AND attnum > 0 AND NOT attisdropped`, view).Scan(&cols); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"amount:numeric", "inspected:timestamp with time zone", "open:boolean", "name:text"} {
		if !strings.Contains(cols, want) {
			t.Errorf("typed view %s: columns %s lack %s", view, cols, want)
		}
	}
	if err := pool.QueryRow(ctx, fmt.Sprintf(`SELECT count(*) FROM %s WHERE amount IS NOT NULL AND open IS NOT NULL AND inspected IS NOT NULL`, view)).Scan(&stored); err != nil || stored != 2500 {
		t.Errorf("typed view: %d rows with every typed value, %v; want 2500", stored, err)
	}

	before := len(s.Requests())
	if res, err := m.Poll(ctx, "chicago/inspections"); err != nil || !res.NotModified {
		t.Fatalf("second poll: %+v, %v; want not modified", res, err)
	}
	if n := len(s.Requests()) - before; n != 2 {
		t.Errorf("the cheap refresh made %d requests, want 2 (metadata and count)", n)
	}

	s.Update(dsID, row(1).ID, map[string]any{"name": "Edited"})
	s.AddFault(&socratatest.Fault{Match: selects(":id, "), Status: 403, Body: `{"error":true,"message":"Invalid app_token specified: ` + appToken + `"}`})
	if _, err := m.Poll(ctx, "chicago/inspections"); err == nil || !strings.Contains(err.Error(), "Invalid app_token specified") {
		t.Fatalf("poll answered 403: %v; want the portal's words", err)
	}
	checkNoToken(ctx, t, pool, logs.String())
	for _, r := range s.Requests() {
		if r.Token != appToken || strings.Contains(r.Query, appToken) {
			t.Fatalf("request %+v: want the token in X-App-Token only", r)
		}
	}
}

// checkNoToken fails if the token is in the log or in any table's text.
func checkNoToken(ctx context.Context, t *testing.T, pool *pgxpool.Pool, log string) {
	t.Helper()
	if !strings.Contains(log, "Invalid app_token specified") || !strings.Contains(log, "poll") {
		t.Fatalf("the log lacks the polls and the failure: the check proves nothing:\n%s", log)
	}
	if strings.Contains(strings.ToLower(log), strings.ToLower(appToken)) {
		t.Errorf("the token is in the log:\n%s", log)
	}
	rows, err := pool.Query(ctx, `SELECT table_schema || '.' || quote_ident(table_name) FROM information_schema.tables
		WHERE table_type = 'BASE TABLE' AND table_schema NOT IN ('pg_catalog', 'information_schema')`)
	if err != nil {
		t.Fatal(err)
	}
	var tables []string
	for rows.Next() {
		var name string
		if err := rows.Scan(&name); err != nil {
			t.Fatal(err)
		}
		tables = append(tables, name)
	}
	if rows.Err() != nil {
		t.Fatal(rows.Err())
	}
	var scrubbed bool
	for _, table := range tables {
		var text string
		if err := pool.QueryRow(ctx, fmt.Sprintf(`SELECT coalesce(string_agg(t::text, E'\n'), '') FROM %s t`, table)).Scan(&text); err != nil {
			t.Fatal(err)
		}
		if strings.Contains(strings.ToLower(text), strings.ToLower(appToken)) {
			t.Errorf("the token is in table %s", table)
		}
		scrubbed = scrubbed || strings.Contains(text, "Invalid app_token specified: "+redact.Marker)
	}
	if !scrubbed {
		t.Error("no table holds the failed poll's error with the echoed token redacted: the check proves nothing")
	}
}

// The fetcher contract's optional interfaces: a parked poll's dead letter
// names its page's request, and a resumed poll starts over.
var (
	_ feeds.PageURLer = (*socrata.Client)(nil)
	_ feeds.Restarter = (*socrata.Client)(nil)
)

// Through the registry, a socrata page's URL is its $limit/$offset
// request with the credentials redacted, and a resumed poll restarts.
func TestPageURLAndRestart(t *testing.T) {
	t.Parallel()
	f := feeds.NewFetchers(kindconf.FetcherDeps{})
	l := source.Layer{Kind: socrata.Kind, URL: "https://u:zqpw@data.city.gov/resource/abcd-1234.json", PageSize: 500,
		Settings: socrata.Settings{Dataset: "abcd-1234"}}
	u := f.PageURL(l, 3)
	if !strings.Contains(u, "%24offset=1500") || !strings.Contains(u, "%24limit=500") || strings.Contains(u, "zqpw") {
		t.Errorf("page URL %s; want $offset=1500, $limit=500 and no password", u)
	}
	if f.RestartReason(l) == "" {
		t.Error("a resumed socrata poll must start over")
	}
}
