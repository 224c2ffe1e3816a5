package migrations_test

import (
	"context"
	"strings"
	"testing"

	"github.com/ingestd/ingestd/migrations"
)

// Migration 19 scrubs the credentials that versions before it left in
// polls, feed_status, dead_letter and breaker_state: every userinfo and
// every query value, while the rest of each text stays readable.
func TestScrubStoredSecrets(t *testing.T) {
	ctx := context.Background()
	pool, db := poolAtVersion(t, 16)
	const u = "http://OLDTOKEN@127.0.0.1:8080/wfs?service=WFS&pw=OLDPW&k=OLDK"
	const e = `wfs: GET "http://usr:OLDPASS@127.0.0.1:8080/wfs?ticket=OLDTICKET&hash=OLDHASH": connection refused`
	for _, q := range []string{
		`INSERT INTO polls (jurisdiction, feed, url, status, error) VALUES ('j', 'f', $1, 'failed', $2)`,
		`INSERT INTO feed_status (jurisdiction, feed, url, last_error) VALUES ('j', 'f', $1, $2)`,
		`INSERT INTO dead_letter (jurisdiction, feed, url, origin, reason, retry_after, last_error)
			VALUES ('j', 'f', $1, 'http://127.0.0.1:8080', 'failed', now(), $2)`,
		`INSERT INTO breaker_state (origin, state, override_reason, last_error) VALUES ($1, 'open', $1, $2)`,
	} {
		if _, err := pool.Exec(ctx, q, u, e); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	if _, err := migrations.Up(ctx, db); err != nil {
		t.Fatal(err)
	}
	var text string
	if err := pool.QueryRow(ctx, `SELECT concat_ws(E'\n',
		(SELECT string_agg(concat_ws(' ', url, error), E'\n') FROM polls),
		(SELECT string_agg(concat_ws(' ', url, last_error), E'\n') FROM feed_status),
		(SELECT string_agg(concat_ws(' ', url, last_error), E'\n') FROM dead_letter),
		(SELECT string_agg(concat_ws(' ', override_reason, last_error), E'\n') FROM breaker_state))`).Scan(&text); err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"OLDTOKEN", "OLDPW", "OLDK", "usr", "OLDPASS", "OLDTICKET", "OLDHASH"} {
		if strings.Contains(text, s) {
			t.Errorf("%s survived the scrub:\n%s", s, text)
		}
	}
	for _, want := range []string{
		"http://REDACTED@127.0.0.1:8080/wfs?service=REDACTED&pw=REDACTED&k=REDACTED",
		`wfs: GET "http://REDACTED@127.0.0.1:8080/wfs?ticket=REDACTED&hash=REDACTED": connection refused`,
	} {
		if strings.Count(text, want) < 4 {
			t.Errorf("scrubbed text lacks %q in every table:\n%s", want, text)
		}
	}
}
