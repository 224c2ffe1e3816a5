package feeds_test

import (
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/ingestd/ingestd/feeds"
	"github.com/ingestd/ingestd/wfs/wfstest"
)

// TestBadFeaturesDoNotCostThePoll polls a GeoJSON document with a
// GeometryCollection (with members, empty and nested), a point at lon 500,
// a lone surrogate, a NUL and properties that are not jsonb-able, and an id
// too long to be a key: the poll succeeds, the GeometryCollections are
// stored, the rest is repaired, skipped or refused and counted — in the
// result, polls.invalid_features and ingestd_feeds_invalid_features_total.
func TestBadFeaturesDoNotCostThePoll(t *testing.T) {
	t.Parallel()
	reg := prometheus.NewRegistry()
	b := setup(t, withFeeds(`
      - id: bad
        kind: geojson
        url: %[1]s/geojson/bad.geojson
`), withManagerOptions(feeds.WithRegisterer(reg)))
	longID := strings.Repeat("x", 3000)
	doc := `{"type":"FeatureCollection","features":[
		{"type":"Feature","id":"gc","properties":{"n":1},"geometry":{"type":"GeometryCollection","geometries":[
			{"type":"Point","coordinates":[-78.6,35.7]},{"type":"LineString","coordinates":[[-78.6,35.7],[-78.5,35.8]]}]}},
		{"type":"Feature","id":"gc-empty","properties":{"n":2},"geometry":{"type":"GeometryCollection","geometries":[]}},
		{"type":"Feature","id":"gc-nested","properties":{"n":3},"geometry":{"type":"GeometryCollection","geometries":[
			{"type":"GeometryCollection","geometries":[{"type":"Point","coordinates":[-78.6,35.7]}]}]}},
		{"type":"Feature","id":"lon500","properties":{"n":4},"geometry":{"type":"Point","coordinates":[500,35.7]}},
		{"type":"Feature","id":"surrogate","properties":{"s":"\ud800"},"geometry":null},
		{"type":"Feature","id":"nul","properties":{"s\u0000":"x"},"geometry":null},
		{"type":"Feature","id":"huge","properties":{"v":1e2000000000},"geometry":null},
		{"type":"Feature","id":"` + longID + `","properties":{"n":5},"geometry":null}
	]}`
	b.server.SetFault(func(r wfstest.Request) *wfstest.Fault {
		return &wfstest.Fault{Status: 200, Body: doc, ContentType: "application/geo+json"}
	})
	res, err := b.manager.Poll(b.ctx, "county/bad")
	if err != nil {
		t.Fatalf("poll: %v", err)
	}
	want := feeds.InvalidFeatures{LoneSurrogate: 1, NUL: 1, NumberOutOfRange: 1, IDTooLong: 1}
	if res.InvalidFeatures != want || res.InvalidGeometries != 1 || res.Added != 6 {
		t.Errorf("poll: %+v, want 6 added, 1 invalid geometry and %+v", res.ApplyResult, want)
	}
	var types string
	if err := b.pool.QueryRow(b.ctx, `SELECT string_agg(feature_id || ':' || coalesce(GeometryType(geom), '-'), ' ' ORDER BY feature_id)
		FROM features WHERE feed = 'bad'`).Scan(&types); err != nil {
		t.Fatal(err)
	}
	if types != "gc:GEOMETRYCOLLECTION gc-empty:GEOMETRYCOLLECTION gc-nested:GEOMETRYCOLLECTION lon500:- nul:- surrogate:-" {
		t.Errorf("stored: %s", types)
	}
	for reason, n := range want.Reasons() {
		if got := invalidFeaturesMetric(t, reg, reason); got != float64(n) {
			t.Errorf("ingestd_feeds_invalid_features_total{reason=%q} = %v, want %d", reason, got, n)
		}
	}
}

// invalidFeaturesMetric returns the invalid-features counter of county/bad
// for reason (0 when absent).
func invalidFeaturesMetric(t *testing.T, reg *prometheus.Registry, reason string) float64 {
	t.Helper()
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() != "ingestd_feeds_invalid_features_total" {
			continue
		}
		for _, m := range f.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			if labels["jurisdiction"] == "county" && labels["feed"] == "bad" && labels["reason"] == reason {
				return m.GetCounter().GetValue()
			}
		}
	}
	return 0
}

// TestDecoderRepairsSkippedUnderSkip: under invalid_feature: skip, a feature
// whose text the decoder repaired (a lone surrogate escape, a byte of invalid
// UTF-8) keeps its previous version, as one the store repaired would; the
// repairs are counted all the same.
func TestDecoderRepairsSkippedUnderSkip(t *testing.T) {
	t.Parallel()
	b := setup(t, withFeeds(`
      - id: bad
        kind: geojson
        url: %[1]s/geojson/bad.geojson
        invalid_feature: skip
`))
	doc := func(a, c string) string {
		return `{"type":"FeatureCollection","features":[
			{"type":"Feature","id":"a","properties":{"s":"` + a + `"},"geometry":null},
			{"type":"Feature","id":"b","properties":{"s":"fine"},"geometry":null},
			{"type":"Feature","id":"c","properties":{"s":"` + c + `"},"geometry":null}]}`
	}
	body := doc("ok", "ok")
	b.server.SetFault(func(wfstest.Request) *wfstest.Fault {
		return &wfstest.Fault{Status: 200, Body: body, ContentType: "application/geo+json"}
	})
	if _, err := b.manager.Poll(b.ctx, "county/bad"); err != nil {
		t.Fatalf("first poll: %v", err)
	}
	body = doc(`\ud800`, "caf\xe9")
	res, err := b.manager.Poll(b.ctx, "county/bad")
	if err != nil {
		t.Fatalf("second poll: %v", err)
	}
	if want := (feeds.InvalidFeatures{LoneSurrogate: 1, InvalidUTF8: 1}); res.InvalidFeatures != want || res.Modified != 0 {
		t.Errorf("second poll: %+v, want 0 modified and %+v", res.ApplyResult, want)
	}
	var props string
	if err := b.pool.QueryRow(b.ctx, `SELECT string_agg(feature_id || '=' || (properties->>'s'), ' ' ORDER BY feature_id)
		FROM features WHERE feed = 'bad'`).Scan(&props); err != nil {
		t.Fatal(err)
	}
	if props != "a=ok b=fine c=ok" {
		t.Errorf("stored after the skipped repairs: %s, want the previous versions a=ok b=fine c=ok", props)
	}
}
