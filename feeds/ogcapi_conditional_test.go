package feeds_test

import (
	"strings"
	"testing"

	"github.com/ingestd/ingestd/feeds"
	"github.com/ingestd/ingestd/feeds/postgis"
	"github.com/ingestd/ingestd/internal/layertest"
	"github.com/ingestd/ingestd/ogcapi/ogcapitest"
)

// TestOGCAPIConditionalGET: an OGC API collection that fits one page and
// whose server sends an ETag is polled conditionally, end to end through
// the registry and PostGIS. The second poll sends the applied snapshot's
// ETag, is answered 304, stages and hands over no page, and is recorded as
// a succeeded not-modified poll; a new ETag is fetched and applied; after a
// held snapshot the next poll sends no validators and fetches in full; a
// collection of several pages never sends validators, since a 304 to its
// first page would prove nothing about the others.
func TestOGCAPIConditionalGET(t *testing.T) {
	t.Parallel()
	var staged *stageCounter
	b, server := setupOGCAPI(t, `
      - id: parcels
        kind: ogcapi
        url: %[1]s/collections/parcels
        page_size: 100
      - id: big
        kind: ogcapi
        url: %[1]s/collections/big
        page_size: 100
`, func(o *setupOptions) {
		o.wrapStore = func(s *postgis.Store) feeds.Store {
			staged = &stageCounter{Store: s}
			return staged
		}
	})
	type pollRecord struct {
		status      string
		notModified bool
		pages       int
		validators  *string
	}
	record := func(id int64) pollRecord {
		t.Helper()
		var r pollRecord
		if err := b.pool.QueryRow(b.ctx, `SELECT status, not_modified, pages, validators::text FROM polls WHERE id = $1`, id).Scan(
			&r.status, &r.notModified, &r.pages, &r.validators); err != nil {
			t.Fatal(err)
		}
		return r
	}
	poll := func(feed string) (feeds.PollResult, error) { return b.manager.Poll(b.ctx, "county/"+feed) }
	conditional := func(want, wantNotModified int, when string) {
		t.Helper()
		if c, nm := server.Conditional("parcels"); c != want || nm != wantNotModified {
			t.Errorf("%s: %d conditional requests, %d answered 304; want %d and %d", when, c, nm, want, wantNotModified)
		}
	}

	// 1. First poll: no validators to send; the ETag is kept with the
	// applied snapshot.
	server.Add("parcels", ogcapitest.Collection{Layer: layertest.Parcels{N: 80}, ETag: `"v1"`})
	res, err := poll("parcels")
	if err != nil {
		t.Fatal(err)
	}
	if r := record(res.PollID); res.Added != 80 || r.validators == nil || !strings.Contains(*r.validators, `v1`) {
		t.Fatalf("first poll: %+v, record %+v; want 80 added and the ETag kept", res, r)
	}
	conditional(0, 0, "first poll")

	// 2. Unchanged: the ETag is sent, 304, nothing staged or handed over,
	// a succeeded poll recorded as not modified.
	before := staged.pages.Load()
	digest := b.featureDigest(t, "parcels")
	res, err = poll("parcels")
	if err != nil {
		t.Fatal(err)
	}
	if !res.NotModified || res.Pages != 0 || res.Bytes != 0 || res.Features != 80 || res.Unchanged != 80 {
		t.Errorf("second poll: %+v; want not modified, no page, no byte, 80 features unchanged", res)
	}
	if r := record(res.PollID); r.status != "succeeded" || !r.notModified || r.pages != 0 {
		t.Errorf("second poll recorded as %+v; want succeeded, not_modified, 0 pages", r)
	}
	if n := staged.pages.Load() - before; n != 0 {
		t.Errorf("second poll staged %d pages; want none", n)
	}
	var stagingRows int
	if err := b.pool.QueryRow(b.ctx, `SELECT count(*) FROM staged_pages WHERE poll_id = $1`, res.PollID).Scan(&stagingRows); err != nil || stagingRows != 0 {
		t.Errorf("second poll left %d staged pages (%v); want none", stagingRows, err)
	}
	if b.featureDigest(t, "parcels") != digest {
		t.Error("a not-modified poll changed the stored features")
	}
	conditional(1, 1, "second poll")

	// 3. The collection changes, with a new ETag: the old one is sent,
	// the server answers 200, the poll applies and keeps the new ETag.
	server.Add("parcels", ogcapitest.Collection{Layer: layertest.Parcels{N: 80, Version: 1}, ETag: `"v2"`})
	res, err = poll("parcels")
	if err != nil {
		t.Fatal(err)
	}
	if r := record(res.PollID); res.NotModified || res.Modified != 1 || res.Pages != 1 || r.notModified ||
		r.validators == nil || !strings.Contains(*r.validators, `v2`) {
		t.Errorf("third poll: %+v, record %+v; want 1 page fetched, 1 modified, the new ETag kept", res, r)
	}
	conditional(2, 1, "third poll")
	res, err = poll("parcels")
	if err != nil || !res.NotModified {
		t.Errorf("fourth poll: %+v, %v; want not modified (the new ETag sent back)", res, err)
	}
	conditional(3, 2, "fourth poll")

	// 4. A snapshot the guard holds (80 → 5 features): its ETag is not the
	// feed's, and the poll after it sends no validators and fetches in full.
	server.Add("parcels", ogcapitest.Collection{Layer: layertest.Parcels{N: 5}, ETag: `"v3"`})
	if _, err := poll("parcels"); err == nil || !strings.Contains(err.Error(), "held") {
		t.Fatalf("fifth poll: %v; want it held", err)
	}
	conditional(4, 2, "fifth poll (the applied snapshot's ETag sent, answered 200)")
	before = staged.pages.Load()
	if res, err := poll("parcels"); err == nil || !strings.Contains(err.Error(), "held") {
		t.Fatalf("sixth poll: %+v, %v; want it fetched in full and held again", res, err)
	}
	conditional(4, 2, "poll after a held snapshot")
	if n := staged.pages.Load() - before; n != 1 {
		t.Errorf("poll after a held snapshot staged %d pages; want 1", n)
	}

	// 5. A collection of three pages, whose server sends an ETag with
	// every page: no validators are kept, none are sent, every poll
	// fetches every page.
	server.Add("big", ogcapitest.Collection{Layer: layertest.Parcels{N: 250}, ETag: `"b1"`})
	for i := range 2 {
		res, err := poll("big")
		if err != nil {
			t.Fatal(err)
		}
		if r := record(res.PollID); res.NotModified || res.Pages != 3 || res.Features != 250 || r.validators != nil {
			t.Errorf("paged poll %d: %+v, record %+v; want 3 pages, 250 features, no validators kept", i, res, r)
		}
	}
	if c, nm := server.Conditional("big"); c != 0 || nm != 0 {
		t.Errorf("paged collection: %d conditional requests (%d answered 304); want none", c, nm)
	}
}

// TestOGCAPIQueryablesTypeTheView: a collection that links its queryables
// has its typed view's columns typed as they declare, end to end through
// the registry and PostGIS (acres a double where its values alone would
// make it numeric); the same collection without them is inferred.
func TestOGCAPIQueryablesTypeTheView(t *testing.T) {
	t.Parallel()
	b, server := setupOGCAPI(t, ogcapiFeeds)
	fields := layertest.Parcels{}.Fields()
	server.Add("parcels", ogcapitest.Collection{Layer: layertest.Parcels{N: 150}, Queryables: ogcapitest.JSONSchema(fields, "geometry-polygon")})
	if _, err := b.manager.Poll(b.ctx, "county/parcels"); err != nil {
		t.Fatal(err)
	}
	columns := func(feed string) string {
		t.Helper()
		var s string
		if err := b.pool.QueryRow(b.ctx, `SELECT string_agg(name || ':' || type || ':' || type_source, ',' ORDER BY ordinal)
			FROM feed_columns WHERE feed = $1`, feed).Scan(&s); err != nil {
			t.Fatal(err)
		}
		return s
	}
	want := "pin:text:declared,owner:text:declared,site_address:text:declared,zoning:text:declared,land_use:text:declared," +
		"acres:double precision:declared,assessed_value:bigint:declared,year_built:bigint:declared,bedrooms:bigint:declared," +
		"exempt:boolean:declared,deed_date:date:declared,township:text:declared"
	if got := columns("parcels"); got != want {
		t.Errorf("feed_columns with queryables:\n%s\nwant\n%s", got, want)
	}
	server.Add("parcels", ogcapitest.Collection{Layer: layertest.Parcels{N: 150}})
	if _, err := b.manager.Poll(b.ctx, "county/landing"); err != nil {
		t.Fatal(err)
	}
	if got := columns("landing"); !strings.Contains(got, "acres:numeric:inferred") || strings.Contains(got, "declared") {
		t.Errorf("feed_columns without queryables: %s; want every type inferred", got)
	}
}
