package migrations_test

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/stdlib"

	"github.com/ingestd/ingestd/migrations/pgtest"
)

// execAll runs each statement on db, failing the test at the first error.
func execAll(t *testing.T, db *sql.DB, stmts ...string) {
	t.Helper()
	for _, q := range stmts {
		if _, err := db.ExecContext(context.Background(), q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
}

// featureRow is one row of features, each value as text so that a
// difference in a number's scale or a geometry's type shows.
type featureRow struct {
	id, geom, props, hash, firstSeen, changed, poll string
}

func (r featureRow) String() string {
	return fmt.Sprintf("%s geom=%s props=%s hash=%s first_seen=%s changed=%s poll=%s",
		r.id, r.geom, r.props, r.hash, r.firstSeen, r.changed, r.poll)
}

// readFeatures reads q's rows (feature_id, geom, properties, content_hash,
// first_seen_at, changed_at, poll_id) by feature_id.
func readFeatures(t *testing.T, db *sql.DB, q string) map[string]featureRow {
	t.Helper()
	rows, err := db.QueryContext(context.Background(), `SELECT x.feature_id, coalesce(ST_AsEWKT(x.geom), '-'),
		coalesce(x.properties::text, '-'), coalesce(encode(x.content_hash, 'hex'), '-'),
		(x.first_seen_at AT TIME ZONE 'UTC')::text, (x.changed_at AT TIME ZONE 'UTC')::text, x.poll_id::text FROM (`+q+`) x`)
	if err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	defer rows.Close()
	got := map[string]featureRow{}
	for rows.Next() {
		var r featureRow
		if err := rows.Scan(&r.id, &r.geom, &r.props, &r.hash, &r.firstSeen, &r.changed, &r.poll); err != nil {
			t.Fatal(err)
		}
		got[r.id] = r
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return got
}

// TestLayerFeaturesRebuildsRows: features reads a layer table of the one
// copy's shape, built here by hand with rows of every kind, and gives each
// row back as the source sent it — absent keys stay absent, nulls null,
// the rest's values as sent, a promoted single part and a geometry the
// layer's type cannot hold as they were — whatever the reader's time zone.
func TestLayerFeaturesRebuildsRows(t *testing.T) {
	ctx := context.Background()
	db := stdlib.OpenDBFromPool(pgtest.Pool(t))
	t.Cleanup(func() { _ = db.Close() })
	cols := []struct{ name, column, typ, scale string }{
		{"Name", "name", "text", "NULL"}, {"n", "n", "bigint", "NULL"}, {"area", "area", "double precision", "2"},
		{"ok", "ok", "boolean", "NULL"}, {"d", "d", "date", "NULL"}, {"t", "t", "timestamptz", "NULL"},
		{"j", "j", "jsonb", "NULL"}, {"gone", "gone", "text", "NULL"},
	}
	stmts := []string{
		`SELECT set_config('search_path', 'ingestd, public', false)`,
		`CREATE SCHEMA wake`,
		`CREATE TABLE wake.parcels (feature_id text PRIMARY KEY, name text, n bigint, area double precision, ok boolean,
			d date, t timestamptz, j jsonb, geom geometry(MultiPoint, 4326), first_seen_at timestamptz, changed_at timestamptz,
			ingestd_poll bigint NOT NULL, ingestd_hash bytea, ingestd_rest jsonb, ingestd_absent text[],
			ingestd_geom_single boolean, ingestd_geom geometry)`,
		`INSERT INTO feed_layers (jurisdiction, feed, layer, select_sql) VALUES ('wake', 'parcels', 'wake.parcels', NULL)`,
		`INSERT INTO feed_status (jurisdiction, feed, last_success_at) VALUES ('wake', 'parcels', '2026-01-02 00:00:00+00')`,
	}
	for i, c := range cols {
		removed := "NULL"
		if c.name == "gone" {
			removed = "now()" // a removed column the table still has: not a property
		}
		stmts = append(stmts, fmt.Sprintf(`INSERT INTO feed_columns (jurisdiction, feed, name, ordinal, view_column, type,
			type_source, first_seen_at, last_seen_at, first_poll_id, last_poll_id, scale, removed_at)
			VALUES ('wake', 'parcels', %s, %d, %s, %s, 'inferred', now(), now(), 1, 1, %s, %s)`,
			quote(c.name), i+1, quote(c.column), quote(c.typ), c.scale, removed))
	}
	stmts = append(stmts, `INSERT INTO wake.parcels (feature_id, name, n, area, ok, d, t, j, geom, first_seen_at, changed_at,
		ingestd_poll, ingestd_hash, ingestd_rest, ingestd_absent, ingestd_geom_single, ingestd_geom, gone) VALUES
		('exact', 'A', 5, 1.25, true, '2024-01-02', '2024-01-02 03:04:05+00', '{"a": [1, 2]}',
			'SRID=4326;MULTIPOINT(1 2,3 4)', '2026-01-01 00:00:00+00', '2026-01-01 12:00:00+00', 7,
			'\x000102030405060708090a0b0c0d0e0f', NULL, NULL, NULL, NULL, 'x'),
		('absent', 'B', NULL, NULL, NULL, NULL, NULL, NULL, NULL, '2026-01-01 00:00:00+00', '2026-01-01 00:00:00+00', 7,
			'\x0f', NULL, '{n,area,ok,d,t,j}', NULL, NULL, NULL),
		('nulls', NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, '2026-01-01 00:00:00+00', '2026-01-01 00:00:00+00', 7,
			NULL, NULL, NULL, NULL, NULL, NULL),
		('inexact', '7', 12, 0.1, NULL, '2024-01-02', '2024-01-02 00:00:00+00', NULL, NULL, '2026-01-01 00:00:00+00',
			'2026-01-01 00:00:00+00', 8, '\x0e',
			'{"Name": 7, "n": "12", "area": 0.1, "ok": "yes", "t": "2024-01-02", "extra": {"deep": [1e3]}}', '{j}', NULL, NULL, NULL),
		('single', 'C', 1, 2.5, false, NULL, NULL, 'null', 'SRID=4326;MULTIPOINT(5 6)', '2026-01-01 00:00:00+00',
			'2026-01-01 00:00:00+00', 7, '\x0d', NULL, NULL, true, NULL, NULL),
		('other', 'D', 1, 2.5, false, NULL, NULL, NULL, NULL, '2026-01-01 00:00:00+00', '2026-01-01 00:00:00+00', 7, '\x0c',
			NULL, NULL, NULL, 'SRID=4326;LINESTRING(0 0,1 1)', NULL),
		('none', NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, '2026-01-01 00:00:00+00', '2026-01-01 00:00:00+00', 7, '\x0b',
			'null', NULL, NULL, NULL, NULL)`,
		// A reader in another time zone, with doubles printed short.
		`SET TimeZone = 'America/New_York'`, `SET extra_float_digits = 0`)
	// "gone" is added after the table was made, as a removed column lingers.
	stmts = append(stmts[:3], append([]string{`ALTER TABLE wake.parcels ADD COLUMN gone text`}, stmts[3:]...)...)
	execAll(t, db, stmts...)

	const ts = "2026-01-01 00:00:00"
	want := map[string]featureRow{
		"exact": {"exact", "SRID=4326;MULTIPOINT(1 2,3 4)",
			`{"d": "2024-01-02", "j": {"a": [1, 2]}, "n": 5, "t": "2024-01-02T03:04:05+00:00", "ok": true, "Name": "A", "area": 1.25}`,
			"000102030405060708090a0b0c0d0e0f", ts, "2026-01-01 12:00:00", "7"},
		"absent":  {"absent", "-", `{"Name": "B"}`, "0f", ts, ts, "7"},
		"nulls":   {"nulls", "-", `{"d": null, "j": null, "n": null, "t": null, "ok": null, "Name": null, "area": null}`, "-", ts, ts, "7"},
		"inexact": {"inexact", "-", `{"d": "2024-01-02", "n": "12", "t": "2024-01-02", "ok": "yes", "Name": 7, "area": 0.1, "extra": {"deep": [1000]}}`, "0e", ts, ts, "8"},
		"single":  {"single", "SRID=4326;POINT(5 6)", `{"d": null, "j": null, "n": 1, "t": null, "ok": false, "Name": "C", "area": 2.50}`, "0d", ts, ts, "7"},
		"other":   {"other", "SRID=4326;LINESTRING(0 0,1 1)", `{"d": null, "j": null, "n": 1, "t": null, "ok": false, "Name": "D", "area": 2.50}`, "0c", ts, ts, "7"},
		"none":    {"none", "-", "-", "0b", ts, ts, "7"},
	}
	for _, q := range []string{
		`SELECT * FROM features WHERE jurisdiction = 'wake' AND feed = 'parcels'`,
		`SELECT * FROM features_seen`,
		`SELECT * FROM ingestd_layer_features('wake', 'parcels')`,
	} {
		got := readFeatures(t, db, q)
		for id, w := range want {
			if got[id] != w {
				t.Errorf("%s:\n got %v\nwant %v", q, got[id], w)
			}
		}
		if len(got) != len(want) {
			t.Errorf("%s: %d rows, want %d", q, len(got), len(want))
		}
	}
	var n int
	if err := db.QueryRowContext(ctx, `SELECT count(*) FROM features WHERE jurisdiction = 'wake' AND feed = 'nothing'`).Scan(&n); err != nil || n != 0 {
		t.Errorf("a feed without a layer: %d rows (%v), want none", n, err)
	}

	// The history and as-of reads give the current row from the layer.
	var props, geom string
	if err := db.QueryRowContext(ctx, `SELECT properties::text, ST_AsEWKT(geom) FROM ingestd_feature_history('wake', 'parcels', 'single')`).Scan(&props, &geom); err != nil {
		t.Fatal(err)
	}
	if props != want["single"].props || geom != want["single"].geom {
		t.Errorf("ingestd_feature_history: %s %s, want %s %s", props, geom, want["single"].props, want["single"].geom)
	}
	if err := db.QueryRowContext(ctx, `SELECT count(*) FROM ingestd_layer_as_of('wake', 'parcels', '2026-01-01 06:00:00+00')`).Scan(&n); err != nil || n != 6 {
		t.Errorf("ingestd_layer_as_of: %d rows (%v), want the 6 changed by then", n, err)
	}
	var name sql.NullString
	var area sql.NullFloat64
	if err := db.QueryRowContext(ctx, `SELECT name, area, ST_AsEWKT(geom) FROM ingestd_layer_as_of_typed('wake', 'parcels', now(), NULL::wake.parcels)
		WHERE feature_id = 'single'`).Scan(&name, &area, &geom); err != nil {
		t.Fatal(err)
	}
	if name.String != "C" || area.Float64 != 2.5 || geom != "SRID=4326;MULTIPOINT(5 6)" {
		t.Errorf("ingestd_layer_as_of_typed: %v %v %s, want C 2.5 MULTIPOINT(5 6)", name, area, geom)
	}
	// A first load's rows, listed by the change feed.
	execAll(t, db, `INSERT INTO feature_changes (poll_id, jurisdiction, feed, feature_id, change, changed_at)
		VALUES (7, 'wake', 'parcels', '', 'loaded', now())`)
	if err := db.QueryRowContext(ctx, `SELECT count(*) FROM ingestd_changes_since('wake', 'parcels', 0)
		WHERE change = 'added' AND new_properties IS NOT DISTINCT FROM (SELECT properties FROM features WHERE feature_id = ingestd_changes_since.feature_id)`).Scan(&n); err != nil || n != 6 {
		t.Errorf("ingestd_changes_since: %d added rows with their properties (%v), want the 6 of poll 7", n, err)
	}
}

func quote(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }
