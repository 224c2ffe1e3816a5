package interop_test

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/ingestd/ingestd/arcgis/arcgistest"
	"github.com/ingestd/ingestd/feeds"
)

// pollRow is what the polls table says of a poll.
type pollRow struct {
	status      string
	notModified bool
	pages       int
	features    int
	version     string
}

func (r *rig) pollRow(t *testing.T, id int64) pollRow {
	t.Helper()
	var p pollRow
	err := r.pool.QueryRow(r.ctx, `SELECT status, coalesce(not_modified, false), coalesce(pages, 0), coalesce(features, 0),
			coalesce(validators->>'version', validators->>'Version', '')
		FROM polls WHERE id = $1`, id).Scan(&p.status, &p.notModified, &p.pages, &p.features, &p.version)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// lastPoll is the feed's latest poll id.
func (r *rig) lastPoll(t *testing.T, feed string) int64 {
	t.Helper()
	var id int64
	if err := r.pool.QueryRow(r.ctx, `SELECT max(id) FROM polls WHERE jurisdiction = 'county' AND feed = $1`, feed).Scan(&id); err != nil {
		t.Fatal(err)
	}
	return id
}

// featureRequests are the requests that read the layer's features or ids
// (everything but the probe and the count).
func featureRequests(reqs []string) []string {
	return slices.DeleteFunc(slices.Clone(reqs), func(r string) bool { return r == "probe" || r == "count" })
}

// TestCheapRefreshEndToEnd polls a fixture layer through feeds.Manager into
// PostGIS: the feed's stored validators (lastEditDate and count of the
// last applied snapshot) make a poll of an unchanged layer a probe and a
// count, recorded as a succeeded not_modified poll that stages nothing;
// an edit, a held snapshot, and a new where or out_fields each make the
// next poll dump the layer.
func TestCheapRefreshEndToEnd(t *testing.T) {
	srv, base := fixture(t)
	srv.AddLayer("parcels", arcgistest.Squares(250))
	feedYAML := func(extra string) string {
		return fmt.Sprintf("      - {id: parcels, kind: arcgis, url: %q, page_size: 100%s}\n", arcgistest.URL(base, "parcels"), extra)
	}
	r := newRig(t, feedYAML(""), nil)
	// poll runs one poll and returns its result, its error, the requests
	// the layer got and the pages it staged.
	poll := func() (feeds.PollResult, error, []string, int64) {
		srv.ResetRequests("parcels")
		staged := r.store.pages.Load()
		res, err := r.manager.Poll(r.ctx, "county/parcels")
		return res, err, srv.Requests("parcels"), r.store.pages.Load() - staged
	}
	mustDump := func(step string, wantFeatures int) feeds.PollResult {
		t.Helper()
		res, err, reqs, staged := poll()
		if err != nil {
			t.Fatalf("%s: %v", step, err)
		}
		p := r.pollRow(t, res.PollID)
		if res.NotModified || p.notModified || len(featureRequests(reqs)) == 0 || staged != 3 || res.Features != wantFeatures {
			t.Fatalf("%s: poll %+v (row %+v), requests %v, %d pages staged; want a full dump of %d features in 3 pages", step, res, p, reqs, staged, wantFeatures)
		}
		return res
	}
	mustNotModified := func(step string, wantFeatures int) {
		t.Helper()
		before, n := r.digest(t, "parcels")
		res, err, reqs, staged := poll()
		if err != nil {
			t.Fatalf("%s: %v", step, err)
		}
		p := r.pollRow(t, res.PollID)
		if !res.NotModified || !slices.Equal(reqs, []string{"probe", "count"}) || staged != 0 {
			t.Fatalf("%s: poll %+v, requests %v, %d pages staged; want not modified after a probe and a count, nothing staged", step, res, reqs, staged)
		}
		if p.status != "succeeded" || !p.notModified || p.pages != 0 || p.features != wantFeatures || res.Unchanged != wantFeatures {
			t.Fatalf("%s: polls row %+v, result %+v; want succeeded, not_modified, 0 pages, %d features unchanged", step, p, res, wantFeatures)
		}
		if after, m := r.digest(t, "parcels"); after != before || m != n {
			t.Fatalf("%s: a not-modified poll changed the stored features", step)
		}
	}

	first := mustDump("first poll", 250)
	if v := r.pollRow(t, first.PollID).version; !strings.HasPrefix(v, "lastEditDate=1700000000000;count=250") {
		t.Errorf("first poll's stored version %q", v)
	}
	mustNotModified("second poll, layer unchanged", 250)
	mustNotModified("third poll, layer unchanged", 250)

	// An edit moves lastEditDate: the whole layer is read, the edit applied.
	srv.Edit("parcels", func(l *arcgistest.Layer) {
		l.LastEditDate += 60000
		l.Features[9].Attributes["NAME"] = "parcel ten, renamed"
	})
	if res := mustDump("after an edit", 250); res.Modified != 1 || res.Unchanged != 249 {
		t.Fatalf("after an edit: %+v; want 1 modified", res)
	}
	mustNotModified("after the edit was applied", 250)

	// An edit that keeps lastEditDate but changes the count (a server whose
	// editingInfo lags) is a change too.
	srv.Edit("parcels", func(l *arcgistest.Layer) { l.Features = l.Features[:249] })
	if res := mustDump("count changed, lastEditDate not", 249); res.Removed != 1 {
		t.Fatalf("count changed: %+v; want 1 removed", res)
	}
	srv.Edit("parcels", func(l *arcgistest.Layer) { l.Features = arcgistest.Squares(250).Features })
	mustDump("back to 250", 250)

	// A held snapshot (the shrink guard) is not applied: its validators are
	// not the feed's, and every poll dumps the layer until one is applied.
	srv.Edit("parcels", func(l *arcgistest.Layer) {
		l.LastEditDate += 60000
		l.Features = l.Features[:100]
	})
	for _, step := range []string{"shrunk layer", "shrunk layer, polled again"} {
		res, err, reqs, staged := poll()
		var held *feeds.HeldError
		if !errors.As(err, &held) {
			t.Fatalf("%s: %+v, %v; want it held", step, res, err)
		}
		if len(featureRequests(reqs)) == 0 || staged != 1 {
			t.Fatalf("%s: requests %v, %d pages staged; want the layer read in full (1 page)", step, reqs, staged)
		}
		if p := r.pollRow(t, r.lastPoll(t, "parcels")); p.status != "held" || p.notModified {
			t.Fatalf("%s: polls row %+v; want held", step, p)
		}
	}
	// Accepted (ingestd held accept), the held snapshot is the applied
	// one, and its version the feed's: the layer unchanged since is not
	// read again.
	if res, err := r.store.AcceptHeld(r.ctx, "county", "parcels"); err != nil || res.Features != 100 {
		t.Fatalf("accept: %+v, %v", res, err)
	}
	mustNotModified("after the held snapshot was accepted", 100)

	// The layer is edited back to 250 features: a dump, applied, and the
	// cheap refresh again from there.
	srv.Edit("parcels", func(l *arcgistest.Layer) {
		l.LastEditDate += 60000
		l.Features = arcgistest.Squares(250).Features
	})
	mustDump("after the held snapshots", 250)
	mustNotModified("after the held snapshots, unchanged", 250)

	// A new where (which this fixture ignores: same lastEditDate, same
	// count) is another request: its answer was never applied.
	r.update(t, feedYAML(`, where: "NAME IS NOT NULL"`))
	mustDump("where changed", 250)
	mustNotModified("where changed, polled again", 250)
	r.update(t, feedYAML(`, where: "NAME IS NOT NULL", out_fields: "NAME"`))
	mustDump("out_fields changed", 250)
	mustNotModified("out_fields changed, polled again", 250)
}
