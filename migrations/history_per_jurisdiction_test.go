package migrations_test

import (
	"context"
	"encoding/json"
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
}
