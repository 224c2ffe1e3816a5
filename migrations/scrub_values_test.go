package migrations_test

import (
	"context"
	"strings"
	"testing"

	"github.com/ingestd/ingestd/migrations"
)

// Migration 24 replaces, in the next links older versions stored, the
// values of parameters named in any case like one the feed's url redacts
// (the key a server wrote as APIKEY= where the feed has apikey=), and
// leaves every other parameter, and other feeds' links, as they were.
func TestScrubStoredNextLinks(t *testing.T) {
	ctx := context.Background()
	pool, db := poolAtVersion(t, 22)
	for _, q := range []string{
		`INSERT INTO feed_status (jurisdiction, feed, url) VALUES
			('j', 'keyed', 'http://h.example/collections/c?apikey=REDACTED&f=json'),
			('j', 'plain', 'http://h.example/collections/c?f=json')`,
		`INSERT INTO polls (id, jurisdiction, feed, status) VALUES (1, 'j', 'keyed', 'refused'), (2, 'j', 'plain', 'refused')`,
		`INSERT INTO staged_pages (poll_id, page, features, next_link) VALUES
			(1, 0, 10, 'http://h.example/collections/c/items?APIKEY=oldkey1&offset=10&key=kept1'),
			(1, 1, 10, 'http://h.example/collections/c/items?offset=20&ApiKey=oldkey2;cursor=kept2'),
			(1, 2, 10, ''),
			(2, 0, 10, 'http://h.example/collections/c/items?apikey=kept3&offset=10')`,
	} {
		if _, err := pool.Exec(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	if _, err := migrations.Up(ctx, db); err != nil {
		t.Fatal(err)
	}
	var links string
	if err := pool.QueryRow(ctx, `SELECT string_agg(next_link, E'\n' ORDER BY poll_id, page) FROM staged_pages`).Scan(&links); err != nil {
		t.Fatal(err)
	}
	want := strings.Join([]string{
		"http://h.example/collections/c/items?APIKEY=REDACTED&offset=10&key=kept1",
		"http://h.example/collections/c/items?offset=20&ApiKey=REDACTED;cursor=kept2",
		"",
		"http://h.example/collections/c/items?apikey=kept3&offset=10",
	}, "\n")
	if links != want {
		t.Errorf("next links after migration 24:\n%s\nwant\n%s", links, want)
	}
	var through int64
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM secrets_scrubbed`).Scan(&through); err != nil || through != 0 {
		t.Errorf("secrets_scrubbed: %d rows (%v), want an empty table until a scrub", through, err)
	}
}
