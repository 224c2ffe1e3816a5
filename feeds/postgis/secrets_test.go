package postgis_test

import (
	"fmt"
	"net/url"
	"strings"
	"testing"

	ft "github.com/ingestd/ingestd/feature"
	"github.com/ingestd/ingestd/feeds/postgis"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/ingestd/ingestd/migrations/pgtest"
	"github.com/ingestd/ingestd/redact"
)

// The store scrubs the configuration's secrets by value from what it
// writes: a failed poll's error (polls.error, feed_status.last_error) that
// quotes a server's echo. (Stored next links of older versions are
// scrubbed by ScrubSecrets, below.)
func TestStoreWritesNoSecret(t *testing.T) {
	t.Parallel()
	const tok, key = "zqTok.3fa9/+x", "zqKey71a8c"
	pool := pgtest.Pool(t)
	store := postgis.New(pool, postgis.WithSecrets(redact.NewSecrets(tok, key)))
	ctx := t.Context()
	feed := feedInfo("parcels")
	id, err := store.BeginPoll(ctx, feed)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := store.StagePage(ctx, id, 0, reader(ft.Feature{ID: "a", Geometry: point(1, 2, 4326)})); err != nil {
		t.Fatal(err)
	}
	echo := fmt.Errorf(`arcgis: error 498: Invalid token: %s; {"details":["X-Esri-Authorization: Bearer %s"]}; <title>Quota exceeded for key %s</title>`,
		tok, strings.ReplaceAll(tok, "/", `\/`), strings.ToUpper(key))
	if err := store.FailPoll(ctx, id, feed, echo); err != nil {
		t.Fatal(err)
	}
	var pollErr, lastErr string
	if err := pool.QueryRow(ctx, `SELECT p.error, s.last_error FROM polls p JOIN feed_status s USING (jurisdiction, feed) WHERE p.id = $1`, id).Scan(&pollErr, &lastErr); err != nil {
		t.Fatal(err)
	}
	for _, text := range []string{pollErr, lastErr} {
		if strings.Contains(strings.ToLower(text), "zqtok") || strings.Contains(strings.ToLower(text), "zqkey") || strings.Count(text, redact.Marker) != 3 {
			t.Errorf("stored error %q: want each echo replaced by %s", text, redact.Marker)
		}
	}
}

// ScrubSecrets cleans what an older version stored, in every column that
// may quote a server or a URL, by the same spellings the writes use; a
// second run finds nothing.
func TestScrubStoredSecrets(t *testing.T) {
	t.Parallel()
	pool := pgtest.Pool(t)
	ctx := t.Context()
	secrets, leaks := plantOldSecrets(t, pool)
	dump := func() string {
		var s string
		if err := pool.QueryRow(ctx, `SELECT concat_ws(E'\n',
			(SELECT string_agg(concat_ws(' ', url, last_error, held_reason), E'\n') FROM feed_status),
			(SELECT string_agg(concat_ws(' ', url, error), E'\n') FROM polls),
			(SELECT string_agg(next_link, E'\n') FROM staged_pages))`).Scan(&s); err != nil {
			t.Fatal(err)
		}
		return s
	}
	store := postgis.New(pool)
	n, err := store.ScrubSecrets(ctx, secrets, false)
	if err != nil {
		t.Fatal(err)
	}
	// feed_status a (url, last_error, held_reason), polls 1 and 2, page 0.
	if n != 4 {
		t.Errorf("ScrubSecrets changed %d rows, want 4", n)
	}
	after := dump()
	if strings.Contains(strings.ToLower(after), "zq") {
		t.Errorf("a secret survived the scrub:\n%s", after)
	}
	for _, want := range []string{"Invalid token: REDACTED", "Bearer REDACTED", "api key REDACTED may not", "APIKEY=REDACTED&offset=10",
		"https://h.example/REDACTED/items", "no secret here", "offset=20"} {
		if !strings.Contains(after, want) {
			t.Errorf("scrubbed text lacks %q:\n%s", want, after)
		}
	}
	if n, err := store.ScrubSecrets(ctx, secrets, true); err != nil || n != 0 {
		t.Errorf("second scrub: %d rows, %v; want 0", n, err)
	}
	if n, err := store.ScrubSecrets(ctx, nil, true); err != nil || n != 0 {
		t.Errorf("scrub without secrets: %d rows, %v; want 0", n, err)
	}

	// A start reads only the polls newer than the last scrub's; the
	// command (all) reads them all.
	if _, err := pool.Exec(ctx, `UPDATE polls SET error = $1 WHERE id = 1`, leaks[0]); err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Exec(ctx, `INSERT INTO polls (id, jurisdiction, feed, url, status, error) VALUES (4, 'wake', 'a', 'https://h.example/items', 'failed', $1)`, leaks[2]); err != nil {
		t.Fatal(err)
	}
	if n, err := store.ScrubSecrets(ctx, secrets, false); err != nil || n != 1 {
		t.Errorf("scrub at start: %d rows, %v; want 1 (poll 4 only)", n, err)
	}
	if n, err := store.ScrubSecrets(ctx, secrets, true); err != nil || n != 1 {
		t.Errorf("scrub of all: %d rows, %v; want 1 (poll 1)", n, err)
	}
	if after := dump(); strings.Contains(strings.ToLower(after), "zq") {
		t.Errorf("a secret survived the scrub:\n%s", after)
	}
}

// plantOldSecrets writes what an older version stored where servers echoed
// two secrets back (one with characters regular expressions mean something
// by), and returns the secrets and the leaking texts.
func plantOldSecrets(t *testing.T, pool *pgxpool.Pool) (*redact.Secrets, []string) {
	t.Helper()
	ctx := t.Context()
	const tok, key = `zq(tok)*.[1]+|^$\q`, "zqKey71a8c"
	secrets := redact.NewSecrets(tok, key)
	leaks := []string{
		"arcgis: error 498: Invalid token: " + tok,
		`{"details":["X-Esri-Authorization: Bearer ` + tok + `"]}`,
		"api key " + strings.ToUpper(key) + " may not read collection c",
		"Quota exceeded for key " + url.QueryEscape(key),
	}
	for _, q := range []struct {
		sql  string
		args []any
	}{
		{`INSERT INTO feed_status (jurisdiction, feed, url, last_error, held_reason) VALUES
			('wake', 'a', 'https://h.example/` + key + `/items', $1, $2), ('wake', 'b', 'https://h.example/clean', 'no secret here', NULL)`,
			[]any{leaks[0], leaks[1]}},
		{`INSERT INTO polls (id, jurisdiction, feed, url, status, error) VALUES
			(1, 'wake', 'a', 'https://h.example/items', 'failed', $1), (2, 'wake', 'a', 'https://h.example/items', 'refused', $2),
			(3, 'wake', 'b', 'https://h.example/items', 'succeeded', NULL)`, []any{leaks[2], leaks[3]}},
		{`INSERT INTO staged_pages (poll_id, page, features, next_link) VALUES
			(2, 0, 10, 'https://h.example/items?APIKEY=` + key + `&offset=10'), (2, 1, 10, 'https://h.example/items?offset=20')`, nil},
	} {
		if _, err := pool.Exec(ctx, q.sql, q.args...); err != nil {
			t.Fatal(err)
		}
	}
	return secrets, leaks
}

// BenchmarkScrubSecrets is the start-up scrub on a large history: a
// million polls (a tenth failed, with an error text) and 300 secrets.
//
//	go test -run '^$' -bench ScrubSecrets -benchtime 3x ./feeds/postgis
func BenchmarkScrubSecrets(b *testing.B) {
	pool := pgtest.Pool(b)
	ctx := b.Context()
	if _, err := pool.Exec(ctx, `INSERT INTO polls (jurisdiction, feed, url, status, error)
		SELECT 'j' || (i % 50), 'f' || (i % 1000), 'https://gis.example.org/arcgis/rest/services/L' || (i % 1000) || '/FeatureServer/0?f=json&token=REDACTED',
			CASE WHEN i % 10 = 0 THEN 'failed' ELSE 'succeeded' END,
			CASE WHEN i % 10 = 0 THEN 'arcgis: POST https://gis.example.org/arcgis/rest/services/L/FeatureServer/0/query: HTTP 500: {"error":{"code":500,"message":"Unable to complete operation."}} after 3 attempts' END
		FROM generate_series(1, 1000000) i`); err != nil {
		b.Fatal(err)
	}
	if _, err := pool.Exec(ctx, `VACUUM ANALYZE polls`); err != nil {
		b.Fatal(err)
	}
	vals := make([]string, 300)
	for i := range vals {
		vals[i] = fmt.Sprintf("key-%08x-%08x", i*7919, i*104729)
	}
	secrets := redact.NewSecrets(vals...)
	store := postgis.New(pool)
	b.ResetTimer()
	for b.Loop() {
		if n, err := store.ScrubSecrets(ctx, secrets, true); err != nil || n != 0 {
			b.Fatal(n, err)
		}
	}
	b.ReportMetric(float64(len(secrets.Forms())), "forms")
}
