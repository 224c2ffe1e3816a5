package main

import (
	"context"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/ingestd/ingestd/migrations/pgtest"
)

// The CLI round trip: an override set from a URL lands on its origin, list
// shows it with who, why and the feeds that use the origin, and close/auto
// change it again.
func TestBreakerOverrideCommands(t *testing.T) {
	t.Parallel()
	db := pgtest.URLFor(t, ingestdConns)
	conn, err := pgx.Connect(context.Background(), db)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	if _, err := conn.Exec(context.Background(), `INSERT INTO feed_status (jurisdiction, feed, origin)
		VALUES ('boulder', 'roads', 'https://gis.example.org:443'), ('boulder', 'parcels', 'https://gis.example.org:443'),
		       ('raleigh', 'addresses', 'http://maps.example.net:8080')`); err != nil {
		t.Fatal(err)
	}

	code, stdout, stderr := runCLI(t, "breaker", "open", "https://GIS.example.org/arcgis/wfs?token=secret",
		"--for", "2h", "--reason", "county maintenance", "-database-url", db)
	if code != 0 {
		t.Fatalf("open: exit %d\n%s", code, stderr)
	}
	if !strings.Contains(stdout, "https://gis.example.org:443: override open until") {
		t.Errorf("open printed %q", stdout)
	}

	code, stdout, stderr = runCLI(t, "breaker", "list", "-database-url", db)
	if code != 0 {
		t.Fatalf("list: exit %d\n%s", code, stderr)
	}
	lines := strings.Split(strings.TrimSpace(stdout), "\n")
	if len(lines) != 3 || !strings.HasPrefix(lines[0], "ORIGIN") {
		t.Fatalf("list:\n%s", stdout)
	}
	maps, gis := lines[1], lines[2] // sorted: http before https
	for _, want := range []string{"https://gis.example.org:443", "closed", "open until", `"county maintenance"`, "boulder/parcels,boulder/roads"} {
		if !strings.Contains(gis, want) {
			t.Errorf("list line %q lacks %q", gis, want)
		}
	}
	if !strings.Contains(maps, "http://maps.example.net:8080") || !strings.Contains(maps, "raleigh/addresses") || !strings.Contains(maps, "none") {
		t.Errorf("an origin without a verdict: %q", maps)
	}
	if strings.Contains(stdout, "secret") {
		t.Error("list shows the URL's token")
	}

	if code, stdout, stderr = runCLI(t, "breaker", "close", "-database-url", db, "https://gis.example.org"); code != 0 || !strings.Contains(stdout, "override closed") {
		t.Fatalf("close: exit %d\n%s%s", code, stdout, stderr)
	}
	if code, stdout, stderr = runCLI(t, "breaker", "auto", "https://gis.example.org", "-database-url", db); code != 0 || !strings.Contains(stdout, "override none") {
		t.Fatalf("auto: exit %d\n%s%s", code, stdout, stderr)
	}
	var override, by string
	if err := conn.QueryRow(context.Background(), `SELECT override, override_by FROM breaker_state
		WHERE origin = 'https://gis.example.org:443'`).Scan(&override, &by); err != nil {
		t.Fatal(err)
	}
	if override != "none" || !strings.Contains(by, "@") {
		t.Errorf("override %q by %q", override, by)
	}
}

func TestBreakerUsageErrors(t *testing.T) {
	for _, args := range [][]string{
		{"breaker"},
		{"breaker", "frobnicate"},
		{"breaker", "open"},
		{"breaker", "open", "gis.example.org"},
		{"breaker", "open", "https://a.example", "https://b.example"},
		{"breaker", "open", "https://a.example", "--for", "-1h"},
		{"breaker", "list", "extra"},
		{"breaker", "auto", "https://a.example", "--for", "1h"},
	} {
		if code, _, _ := runCLI(t, args...); code != 2 {
			t.Errorf("ingestd %v: exit %d, want 2", args, code)
		}
	}
}
