package postgis_test

import (
	"encoding/json"
	"fmt"
	"testing"

	ft "github.com/ingestd/ingestd/feature"
	"github.com/ingestd/ingestd/feeds"
)

// A feed's layer is <schema>.<name>, a table with a primary key on
// feature_id (the key QGIS finds in pg_index), kept current by
// each apply that changes the feed; a name: setting moves it, and the old
// one goes.
func TestLayerInItsSchema(t *testing.T) {
	t.Parallel()
	b := setup(t)
	feed := feedInfo("tax-parcels")
	b.poll(t, feed, []ft.Feature{
		feature("a", point(1, 1, 4326), json.RawMessage(`{"n":1}`)),
		feature("b", point(2, 2, 4326), json.RawMessage(`{"n":2}`)),
	})
	if view := b.viewName(t, feed); view != "wake.tax_parcels" {
		t.Fatalf("layer %q, want wake.tax_parcels (the default)", view)
	}
	var kind, key string
	b.scalar(t, &kind, `SELECT relkind::text FROM pg_class WHERE oid = 'wake.tax_parcels'::regclass`)
	b.scalar(t, &key, `SELECT a.attname FROM pg_index i JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = ANY(i.indkey)
		WHERE i.indrelid = 'wake.tax_parcels'::regclass AND i.indisunique`)
	if kind != "r" || key != "feature_id" {
		t.Errorf("layer relkind %q, unique key %q; want a table keyed on feature_id", kind, key)
	}

	// A second snapshot: one modified, one removed, one added; the layer follows.
	b.poll(t, feed, []ft.Feature{
		feature("a", point(1, 1, 4326), json.RawMessage(`{"n":10}`)),
		feature("c", point(3, 3, 4326), json.RawMessage(`{"n":3}`)),
	})
	var got string
	b.scalar(t, &got, `SELECT string_agg(feature_id || '=' || n, ',' ORDER BY feature_id) FROM wake.tax_parcels`)
	if got != "a=10,c=3" {
		t.Errorf("layer after the second apply: %s, want a=10,c=3", got)
	}

	// name: parcels, registered: the next apply moves the layer.
	feed.LayerSchema, feed.LayerName = "county", "parcels"
	if err := b.store.RegisterFeeds(b.ctx, []feeds.FeedInfo{feed}); err != nil {
		t.Fatal(err)
	}
	b.poll(t, feed, []ft.Feature{
		feature("a", point(1, 1, 4326), json.RawMessage(`{"n":10}`)),
		feature("c", point(3, 3, 4326), json.RawMessage(`{"n":3}`)),
	})
	if n := b.count(t, `SELECT count(*) FROM county.parcels`); n != 2 {
		t.Errorf("county.parcels has %d rows, want 2", n)
	}
	if n := b.count(t, `SELECT count(*) FROM pg_class WHERE oid = to_regclass('wake.tax_parcels')`); n != 0 {
		t.Errorf("the old layer wake.tax_parcels is still there")
	}
	var recorded string
	b.scalar(t, &recorded, fmt.Sprintf(`SELECT view_name FROM feed_schemas WHERE feed = %s`, "'tax-parcels'"))
	if recorded != "county.parcels" {
		t.Errorf("feed_schemas.view_name %q", recorded)
	}
}

// The date casts catch a bad date in a subtransaction, which a parallel
// plan refuses: they are parallel unsafe, so a layer of a large feed
// with a date column builds, refreshes and reads under parallel plans.
func TestDateCastsUnderParallelPlans(t *testing.T) {
	t.Parallel()
	b := setup(t)
	// force_parallel_mode (PostgreSQL 15's name) runs every query that may
	// go parallel in a worker.
	conn := b.session(t, `SET force_parallel_mode = on`)
	var dates, stamps int
	err := conn.QueryRow(b.ctx, `SELECT count(ingestd_as_date(to_jsonb(d))), count(ingestd_as_timestamptz(to_jsonb(d)))
		FROM (SELECT CASE WHEN g % 2 = 0 THEN '2020-02-30' ELSE '2020-02-03' END AS d FROM generate_series(1, 1000) g) s`).Scan(&dates, &stamps)
	if err != nil || dates != 500 || stamps != 500 {
		t.Fatalf("date casts under a parallel plan: %d dates, %d timestamps, %v; want 500 of each", dates, stamps, err)
	}
}
