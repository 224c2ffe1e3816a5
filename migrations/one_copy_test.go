package migrations_test

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/stdlib"

	"github.com/ingestd/ingestd/migrations"
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
// layer's type cannot hold as they were, properties that are no object or
// none — whatever the reader's time zone.
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
			ingestd_geom_single boolean, ingestd_geom bytea)`,
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
			NULL, NULL, NULL, ST_AsEWKB('SRID=4326;LINESTRING(0 0,1 1)'::geometry), NULL),
		('none', NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, '2026-01-01 00:00:00+00', '2026-01-01 00:00:00+00', 7, '\x0b',
			'null', NULL, NULL, NULL, NULL),
		('array', NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, '2026-01-01 00:00:00+00', '2026-01-01 00:00:00+00', 7, '\x0a',
			'[[1, "x"]]', NULL, NULL, NULL, NULL)`,
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
		"array":   {"array", "-", `[1, "x"]`, "0a", ts, ts, "7"},
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
	if err := db.QueryRowContext(ctx, `SELECT count(*) FROM ingestd_layer_as_of('wake', 'parcels', '2026-01-01 06:00:00+00')`).Scan(&n); err != nil || n != 7 {
		t.Errorf("ingestd_layer_as_of: %d rows (%v), want the 7 changed by then", n, err)
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
	// The status page's sample: every geometry as sent, none empty.
	var sampled string
	if err := db.QueryRowContext(ctx, `SELECT string_agg(ST_AsEWKT(geom), ' ' ORDER BY ST_AsEWKT(geom))
		FROM ingestd_layer_sample('wake', 'parcels', 100, 10)`).Scan(&sampled); err != nil {
		t.Fatal(err)
	}
	if want := "SRID=4326;LINESTRING(0 0,1 1) SRID=4326;MULTIPOINT(1 2,3 4) SRID=4326;POINT(5 6)"; sampled != want {
		t.Errorf("ingestd_layer_sample: %s, want %s", sampled, want)
	}
	if err := db.QueryRowContext(ctx, `SELECT count(*) FROM ingestd_layer_sample('wake', 'parcels', 100, 2)`).Scan(&n); err != nil || n != 2 {
		t.Errorf("ingestd_layer_sample of at most 2: %d rows (%v)", n, err)
	}
	// A first load's rows, listed by the change feed.
	execAll(t, db, `INSERT INTO feature_changes (poll_id, jurisdiction, feed, feature_id, change, changed_at)
		VALUES (7, 'wake', 'parcels', '', 'loaded', now())`)
	if err := db.QueryRowContext(ctx, `SELECT count(*) FROM ingestd_changes_since('wake', 'parcels', 0)
		WHERE change = 'added' AND new_properties IS NOT DISTINCT FROM (SELECT properties FROM features WHERE feature_id = ingestd_changes_since.feature_id)`).Scan(&n); err != nil || n != 7 {
		t.Errorf("ingestd_changes_since: %d added rows with their properties (%v), want the 7 of poll 7", n, err)
	}
}

func quote(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }

// TestOneCopyMovesFeeds: version 43 moves each feed's partition into its
// layer without polling it again — features gives every row back as the
// partition held it (properties to the byte, geometry, times, poll, the
// content hash's first 16 bytes) — and stops, naming it, at a layer a
// user's view depends on, having moved the feeds before it; once the view
// is dropped the migration resumes. A feed that never had a layer gets one.
// Its Down then refuses.
func TestOneCopyMovesFeeds(t *testing.T) {
	ctx := context.Background()
	_, db := poolAtVersion(t, 41)
	execAll(t, db, `SELECT set_config('search_path', 'ingestd, public', false)`,
		`SET TimeZone = 'UTC'`)
	cols := `[{"name": "Name", "column": "name", "type": "text"}, {"name": "n", "column": "n", "type": "bigint"},
		{"name": "area", "column": "area", "type": "double precision"}, {"name": "ok", "column": "ok", "type": "boolean"},
		{"name": "d", "column": "d", "type": "date"}, {"name": "t", "column": "t", "type": "timestamptz"},
		{"name": "j", "column": "j", "type": "jsonb"}, {"name": "ingestd_hash", "column": "ingestd_hash", "type": "text"}]`
	feeds := []struct{ feed, geometry, rows string }{
		{"parcels", "MultiPoint", `
			('a', 'SRID=4326;MULTIPOINT(1 2,3 4)', '{"Name": "A", "n": 5, "area": 1.25, "ok": true, "d": "2024-01-02", "t": "2024-01-02T03:04:05Z", "j": {"a": [1, 2]}}'),
			('b', 'SRID=4326;POINT(1 2)', '{"Name": "B"}'),
			('c', 'SRID=4326;LINESTRING(0 0,1 1)', '{"Name": null, "n": null, "area": null, "ok": null, "d": null, "t": null, "j": null}'),
			('d', NULL, '{"Name": 7, "n": "12", "area": 0.1, "ok": "yes", "d": "2024-01-02T00:00:00", "x": [1e3], "t": "2024-01-02"}'),
			('e', 'SRID=4326;MULTIPOINT(5 6)', '{"area": 0.30000000000000004}'),
			('f', 'SRID=4326;MULTIPOINT(7 8)', '{"area": 2.50}'),
			('g', 'SRID=4326;MULTIPOINT(9 9)', NULL),
			('h', 'SRID=4326;MULTIPOINT(9 8)', '[1, {"ingestd_hash": "x"}]'),
			('i', 'SRID=4326;MULTIPOINT(9 7)', '{"ingestd_hash": "an attribute", "Name": "I"}')`},
		{"zoning", "Polygon", `
			('z1', 'SRID=4326;POLYGON((0 0,1 0,1 1,0 0))', '{"Name": "R-4"}'),
			('z2', 'SRID=4326;MULTIPOLYGON(((0 0,2 0,2 2,0 0)))', '{"Name": "R-6", "n": 2}')`},
		// Loaded before typed layers: no layer, no columns.
		{"old", "", `('o1', 'SRID=4326;POINT(1 1)', '{"k": 1.50}')`},
	}
	for _, f := range feeds {
		execAll(t, db,
			fmt.Sprintf(`DO $$ BEGIN
				IF to_regclass(format('ingestd.%%I', ingestd_jurisdiction_partition('wake'))) IS NULL THEN
					EXECUTE format('CREATE TABLE ingestd.%%I PARTITION OF features FOR VALUES IN (''wake'') PARTITION BY LIST (feed)',
						ingestd_jurisdiction_partition('wake'));
				END IF;
				EXECUTE format('CREATE TABLE ingestd.%%I PARTITION OF ingestd.%%I FOR VALUES IN (%%L)',
					ingestd_feed_partition('wake', %[1]s), ingestd_jurisdiction_partition('wake'), %[1]s);
			END $$`, quote(f.feed)),
			fmt.Sprintf(`INSERT INTO features (jurisdiction, feed, feature_id, geom, properties, geom_hash, props_hash, content_hash,
				first_seen_at, changed_at, poll_id)
				SELECT 'wake', %s, v.id, v.g::geometry, v.p::jsonb, sha256(convert_to(v.id, 'UTF8')),
					sha256(coalesce(jsonb_send(v.p::jsonb), '')), sha256(convert_to(v.id || 'c', 'UTF8')),
					'2026-01-01 00:00:00+00', '2026-01-01 12:00:00+00', 3
				FROM (VALUES %s) v(id, g, p)`, quote(f.feed), f.rows),
		)
		if f.geometry == "" {
			continue
		}
		execAll(t, db,
			fmt.Sprintf(`INSERT INTO feed_columns (jurisdiction, feed, name, ordinal, view_column, type, type_source,
				first_seen_at, last_seen_at, first_poll_id, last_poll_id)
				SELECT 'wake', %s, c ->> 'name', o::int, c ->> 'column', c ->> 'type', 'inferred', now(), now(), 3, 3
				FROM jsonb_array_elements(%s) WITH ORDINALITY AS x(c, o)`, quote(f.feed), quote(cols)),
			fmt.Sprintf(`SELECT ingestd_build_feed_view('wake', %s, %s, %s)`, quote(f.feed), quote(cols), quote(f.geometry)))
	}
	// A row hashed before geometries were: it keeps no content hash.
	execAll(t, db, `UPDATE features SET geom_hash = NULL WHERE feature_id = 'z1'`,
		`CREATE TABLE public.before AS SELECT * FROM features`,
		`CREATE VIEW public.zoning_names AS SELECT name FROM wake.zoning`)

	_, err := migrations.Up(ctx, db)
	if err == nil || !strings.Contains(err.Error(), "ingestd: wake/zoning: view public.zoning_names depends on layer wake.zoning; drop it, migrate, recreate it") {
		t.Fatalf("Up with a view on a layer: %v, want it stopped at wake/zoning naming the view", err)
	}
	var moved, left bool
	if err := db.QueryRowContext(ctx, `SELECT
		EXISTS (SELECT FROM pg_attribute WHERE attrelid = 'wake.parcels'::regclass AND attname = 'ingestd_hash'),
		to_regclass(format('ingestd.%I', ingestd_feed_partition('wake', 'zoning'))) IS NOT NULL`).Scan(&moved, &left); err != nil {
		t.Fatal(err)
	}
	if !moved || !left {
		t.Fatalf("after the stop: parcels moved %v, zoning's partition left %v; want both", moved, left)
	}
	execAll(t, db, `DROP VIEW public.zoning_names`)
	if _, err := migrations.Up(ctx, db); err != nil {
		t.Fatalf("Up resumed: %v", err)
	}

	got := readFeatures(t, db, `SELECT * FROM features`)
	want := readFeatures(t, db, `SELECT feature_id, geom, properties, CASE WHEN geom_hash IS NOT NULL THEN substring(content_hash FOR 16) END AS content_hash,
		first_seen_at, changed_at, poll_id FROM public.before`)
	if len(got) != len(want) || len(want) != 12 {
		t.Errorf("features has %d rows, the partitions had %d (want 12)", len(got), len(want))
	}
	for id, w := range want {
		if got[id] != w {
			t.Errorf("after the move:\n got %v\nwant %v", got[id], w)
		}
	}
	var kind string
	var parts, scale int
	var single, other string
	if err := db.QueryRowContext(ctx, `SELECT (SELECT relkind::text FROM pg_class WHERE oid = 'ingestd.features'::regclass),
		(SELECT count(*) FROM pg_class WHERE relname LIKE 'features\_%' AND relkind IN ('r', 'p') AND relnamespace = 'ingestd'::regnamespace),
		(SELECT scale FROM feed_columns WHERE feed = 'parcels' AND name = 'area'),
		(SELECT string_agg(feature_id, ',' ORDER BY feature_id) FROM wake.parcels WHERE ingestd_geom_single),
		(SELECT string_agg(feature_id, ',' ORDER BY feature_id) FROM wake.parcels WHERE ingestd_geom IS NOT NULL)`).Scan(&kind, &parts, &scale, &single, &other); err != nil {
		t.Fatal(err)
	}
	if kind != "v" || parts != 0 || scale != 2 || single != "b" || other != "c" {
		t.Errorf("after the move: features of kind %q, %d partitions left, area's scale %d, promoted %q, other geometry %q; want v, 0, 2, b, c",
			kind, parts, scale, single, other)
	}
	var n int64
	var area float64
	if err := db.QueryRowContext(ctx, `SELECT n, area FROM wake.parcels WHERE feature_id = 'a'`).Scan(&n, &area); err != nil || n != 5 || area != 1.25 {
		t.Errorf("wake.parcels typed row a: n %d, area %v (%v), want 5, 1.25", n, area, err)
	}

	// The rest only where a value does not render back: a's "Z", d's
	// strings and number, e's 17 digits, g's missing properties, h's
	// array.
	var rest string
	if err := db.QueryRowContext(ctx, `SELECT string_agg(feature_id, ',' ORDER BY feature_id) FROM wake.parcels WHERE ingestd_rest IS NOT NULL`).Scan(&rest); err != nil || rest != "a,d,e,g,h" {
		t.Errorf("rows with a rest: %q (%v), want a,d,e,g,h", rest, err)
	}
	// An attribute named as a bookkeeping column is a column of its own.
	var attr, column string
	if err := db.QueryRowContext(ctx, `SELECT p.ingestd_hash_attr, c.view_column FROM wake.parcels p, feed_columns c
		WHERE p.feature_id = 'i' AND c.feed = 'parcels' AND c.name = 'ingestd_hash'`).Scan(&attr, &column); err != nil ||
		attr != "an attribute" || column != "ingestd_hash_attr" {
		t.Errorf("attribute ingestd_hash: %q in column %q (%v), want \"an attribute\" in ingestd_hash_attr", attr, column, err)
	}

	err = migrations.DownTo(ctx, db, 41)
	if err == nil || !strings.Contains(err.Error(), "cannot be undone while layers hold features (wake.old, wake.parcels, wake.zoning)") {
		t.Errorf("Down with layers in one copy: %v, want a refusal naming them", err)
	}
}
