package migrations_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/stdlib"
	"github.com/twpayne/go-geom"

	ft "github.com/ingestd/ingestd/feature"
	"github.com/ingestd/ingestd/feeds"
	"github.com/ingestd/ingestd/feeds/postgis"
	"github.com/ingestd/ingestd/migrations"
	"github.com/ingestd/ingestd/migrations/pgtest"
)

// sliceReader yields its features once, as a decoder does.
type sliceReader struct {
	features []ft.Feature
	cur      ft.Feature
}

func (r *sliceReader) Next() (*ft.Feature, error) {
	if len(r.features) == 0 {
		return nil, io.EOF
	}
	r.cur, r.features = r.features[0], r.features[1:]
	return &r.cur, nil
}

// pollOnce stages features as one page of a poll of feed and applies it.
func pollOnce(t *testing.T, store *postgis.Store, feed feeds.FeedInfo, fs ...ft.Feature) {
	t.Helper()
	ctx := t.Context()
	id, err := store.BeginPoll(ctx, feed)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := store.StagePage(ctx, id, 0, &sliceReader{features: fs}); err != nil {
		t.Fatal(err)
	}
	if _, err := store.Apply(ctx, id, feed); err != nil {
		t.Fatal(err)
	}
}

func pointFeature(id string, x float64, props string) ft.Feature {
	return ft.Feature{ID: id, Geometry: geom.NewPointFlat(geom.XY, []float64{x, x}).SetSRID(4326), Properties: json.RawMessage(props)}
}

// TestHistoryMovesToJurisdictions: version 46 moves each feed's
// superseded versions from ingestd.feature_history into its layer's
// schema (<schema>.ingestd_history) and leaves feature_history a view
// giving the same rows; applies after it write there; its Down moves them
// back into the table.
func TestHistoryMovesToJurisdictions(t *testing.T) {
	ctx := context.Background()
	pool := pgtest.Pool(t)
	db := stdlib.OpenDBFromPool(pool)
	t.Cleanup(func() { _ = db.Close() })
	store := postgis.New(pool)
	feed := feeds.FeedInfo{Jurisdiction: "wake", Feed: "parcels", Kind: "wfs", URL: "https://gis.example.org/wfs",
		Origin: "https://gis.example.org:443", ExpectedInterval: time.Hour}
	pollOnce(t, store, feed, pointFeature("a", 1, `{"n":1}`), pointFeature("b", 2, `{"n":2}`))
	pollOnce(t, store, feed, pointFeature("a", 1, `{"n":10}`))
	const versions = `SELECT string_agg(feed || ' ' || feature_id || ' ' || ended_by || ' ' || properties::text || ' ' || ST_AsText(geom)
		|| ' ' || from_poll || '-' || to_poll || ' ' || (valid_to > valid_from), ', ' ORDER BY feature_id) FROM `
	var before string
	if err := db.QueryRowContext(ctx, versions+`wake.ingestd_history`).Scan(&before); err != nil {
		t.Fatal(err)
	}

	if err := migrations.DownTo(ctx, db, 45); err != nil {
		t.Fatal(err)
	}
	var down string
	if err := db.QueryRowContext(ctx, versions+`ingestd.feature_history WHERE jurisdiction = 'wake'`).Scan(&down); err != nil {
		t.Fatal(err)
	}
	if down != before {
		t.Fatalf("after Down the table holds\n%s\nwant\n%s", down, before)
	}
	var left bool
	if err := db.QueryRowContext(ctx, `SELECT to_regclass('wake.ingestd_history') IS NOT NULL`).Scan(&left); err != nil || left {
		t.Fatalf("after Down wake.ingestd_history is still there (%v)", err)
	}
	// A feed whose layer is gone keeps its versions: they go where its
	// layer would be.
	execAll(t, db, `INSERT INTO ingestd.feature_history (jurisdiction, feed, feature_id, content_hash, valid_from, valid_to,
		from_poll, to_poll, ended_by) VALUES ('durham', 'old', 'x', '\x00', now() - interval '1 day', now(), 1, 2, 'removed')`)

	if _, err := migrations.Up(ctx, db); err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{`wake.ingestd_history`, `ingestd.feature_history WHERE jurisdiction = 'wake' AND feed = 'parcels'`} {
		var got string
		if err := db.QueryRowContext(ctx, versions+q).Scan(&got); err != nil {
			t.Fatal(err)
		}
		if got != before {
			t.Errorf("after Up %s holds\n%s\nwant\n%s", q, got, before)
		}
	}
	var n int
	if err := db.QueryRowContext(ctx, `SELECT count(*) FROM durham.ingestd_history WHERE feed = 'old'`).Scan(&n); err != nil || n != 1 {
		t.Errorf("durham/old's version: %d in durham.ingestd_history (%v), want 1", n, err)
	}
	var kind string
	if err := db.QueryRowContext(ctx, `SELECT relkind::text FROM pg_class WHERE oid = 'ingestd.feature_history'::regclass`).Scan(&kind); err != nil || kind != "v" {
		t.Errorf("ingestd.feature_history is relkind %q (%v), want a view", kind, err)
	}

	// The next apply writes its versions beside the moved ones.
	pollOnce(t, store, feed, pointFeature("a", 1, `{"n":11}`))
	var props string
	if err := db.QueryRowContext(ctx, `SELECT string_agg(properties::text, ' ' ORDER BY valid_from)
		FROM ingestd_feature_history('wake', 'parcels', 'a')`).Scan(&props); err != nil {
		t.Fatal(err)
	}
	if props != `{"n": 1} {"n": 10} {"n": 11}` {
		t.Errorf("ingestd_feature_history after an apply past the upgrade: %s", props)
	}

	// A jurisdiction's first load makes its history table as the
	// migration made durham's.
	pollOnce(t, store, feeds.FeedInfo{Jurisdiction: "raleigh", Feed: "zoning", Kind: "wfs", URL: "https://gis.example.org/wfs?z",
		Origin: "https://gis.example.org:443", ExpectedInterval: time.Hour}, pointFeature("z", 3, `{"n":1}`))
	sameTable(t, db, "durham", "raleigh", "ingestd_history")
}

// sameTable fails unless table is made alike in schemas a and b: its
// persistence, columns (types, nullability, defaults), constraints and
// indexes. The tables a migration makes for existing jurisdictions and
// those a jurisdiction's first poll makes are written twice (a migration
// is frozen, the store's DDL is not): this keeps them one design.
func sameTable(t *testing.T, db *sql.DB, a, b, table string) {
	t.Helper()
	const shape = `SELECT c.relpersistence::text || ' | ' ||
		(SELECT string_agg(a.attname || ' ' || format_type(a.atttypid, a.atttypmod) || CASE WHEN a.attnotnull THEN ' not null' ELSE '' END
			|| coalesce(' default ' || pg_get_expr(d.adbin, d.adrelid), ''), ', ' ORDER BY a.attnum)
			FROM pg_attribute a LEFT JOIN pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum
			WHERE a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped) || ' | ' ||
		coalesce((SELECT string_agg(pg_get_constraintdef(k.oid), ', ' ORDER BY pg_get_constraintdef(k.oid))
			FROM pg_constraint k WHERE k.conrelid = c.oid), '') || ' | ' ||
		coalesce((SELECT string_agg(replace(pg_get_indexdef(i.indexrelid), quote_ident($1) || '.', ''), ', '
			ORDER BY pg_get_indexdef(i.indexrelid)) FROM pg_index i WHERE i.indrelid = c.oid), '')
		FROM pg_class c WHERE c.oid = to_regclass(quote_ident($1) || '.' || quote_ident($2))`
	var shapes [2]string
	for i, schema := range []string{a, b} {
		if err := db.QueryRowContext(t.Context(), shape, schema, table).Scan(&shapes[i]); err != nil {
			t.Fatalf("%s.%s: %v", schema, table, err)
		}
	}
	if shapes[0] != shapes[1] {
		t.Errorf("%s.%s and %s.%s differ:\n%s\n%s", a, table, b, table, shapes[0], shapes[1])
	}
}

// TestStagingMovesToJurisdictions: version 47 moves the rows still staged
// (a held snapshot, a suspended poll's checkpoint) from
// ingestd.staged_features into their jurisdiction's <schema>.ingestd_staged,
// and after it the held snapshot is accepted and the suspended poll
// resumed and applied from them; its Down moves them back.
func TestStagingMovesToJurisdictions(t *testing.T) {
	ctx := context.Background()
	pool := pgtest.Pool(t)
	db := stdlib.OpenDBFromPool(pool)
	t.Cleanup(func() { _ = db.Close() })
	store := postgis.New(pool)
	info := func(name string) feeds.FeedInfo {
		return feeds.FeedInfo{Jurisdiction: "wake", Feed: name, Kind: "wfs", URL: "https://gis.example.org/wfs?t=" + name,
			Origin: "https://gis.example.org:443", ExpectedInterval: time.Hour}
	}
	ten := make([]ft.Feature, 10)
	for i := range ten {
		ten[i] = pointFeature(fmt.Sprintf("f%d", i), float64(i), `{"n":1}`)
	}
	// A held snapshot: 10 features, then 2.
	held := info("held")
	pollOnce(t, store, held, ten...)
	heldPoll, err := store.BeginPoll(ctx, held)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := store.StagePage(ctx, heldPoll, 0, &sliceReader{features: ten[:2]}); err != nil {
		t.Fatal(err)
	}
	var he *feeds.HeldError
	if _, err := store.Apply(ctx, heldPoll, held); !errors.As(err, &he) {
		t.Fatalf("apply of 2 after 10: %v, want the snapshot held", err)
	}
	// A suspended poll with page 0 staged.
	parked := info("parked")
	parkedPoll, err := store.BeginPoll(ctx, parked)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := store.StagePage(ctx, parkedPoll, 0, &sliceReader{features: ten[:5]}); err != nil {
		t.Fatal(err)
	}
	if err := store.SuspendPoll(ctx, parked, parkedPoll, time.Now(), errors.New("origin down")); err != nil {
		t.Fatal(err)
	}

	if err := migrations.DownTo(ctx, db, 46); err != nil {
		t.Fatal(err)
	}
	var staged int
	if err := db.QueryRowContext(ctx, `SELECT count(*) FROM ingestd.staged_features WHERE poll_id IN ($1, $2)`, heldPoll, parkedPoll).Scan(&staged); err != nil || staged != 7 {
		t.Fatalf("after Down: %d rows in the table staged_features (%v), want 7", staged, err)
	}
	if _, err := migrations.Up(ctx, db); err != nil {
		t.Fatal(err)
	}
	if err := db.QueryRowContext(ctx, `SELECT count(*) FROM wake.ingestd_staged WHERE poll_id IN ($1, $2)`, heldPoll, parkedPoll).Scan(&staged); err != nil || staged != 7 {
		t.Fatalf("after Up: %d rows in wake.ingestd_staged (%v), want 7", staged, err)
	}

	res, err := store.AcceptHeld(ctx, "wake", "held")
	if err != nil {
		t.Fatal(err)
	}
	if res.Features != 2 || res.Removed != 8 {
		t.Errorf("the accepted held snapshot: %+v, want 2 features, 8 removed", res)
	}
	next, err := store.ResumePoll(ctx, parked, parkedPoll, 1)
	if err != nil || next != 1 {
		t.Fatalf("resume: page %d, %v; want page 1", next, err)
	}
	if _, err := store.StagePage(ctx, parkedPoll, 1, &sliceReader{features: ten[5:]}); err != nil {
		t.Fatal(err)
	}
	if res, err := store.Apply(ctx, parkedPoll, parked); err != nil || res.Added != 10 {
		t.Fatalf("the resumed poll's apply: %+v, %v; want 10 added", res, err)
	}
	if err := db.QueryRowContext(ctx, `SELECT count(*) FROM ingestd.staged_features`).Scan(&staged); err != nil || staged != 0 {
		t.Errorf("%d rows left staged (%v)", staged, err)
	}

	// A jurisdiction's first poll makes its staging table as the migration
	// made wake's.
	if _, err := store.BeginPoll(ctx, feeds.FeedInfo{Jurisdiction: "raleigh", Feed: "zoning", Kind: "wfs",
		URL: "https://gis.example.org/wfs?z", Origin: "https://gis.example.org:443", ExpectedInterval: time.Hour}); err != nil {
		t.Fatal(err)
	}
	sameTable(t, db, "wake", "raleigh", "ingestd_staged")
}
