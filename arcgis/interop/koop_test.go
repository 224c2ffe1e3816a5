package interop_test

// Against Koop (scripts/koop.sh): every test layer loads complete (rows =
// returnCountOnly = distinct ids) and every feature is within 1e-9 relative
// area (length for lines) and 0.01 m centroid of GDAL's reading of the
// same layer (ogr2ogr from ESRIJSON:). The tests skip when Koop cannot be
// reached, except under CI=true, where they fail.
//
// Koop departs from ArcGIS Server in ways a client meets in the field;
// each has a test below (TestKoopDepartures):
//   - a query without resultRecordCount is not capped at maxRecordCount
//     (all 100 features of a layer whose maxRecordCount is 25), and says
//     exceededTransferLimit false;
//   - nor is a query by objectIds: 76 ids asked, 76 features answered
//     (ArcGIS Server caps at maxRecordCount; ingestd never asks more);
//   - every error is status 200 with an error object (a missing layer is
//     {"error":{"code":404}});
//   - a where clause naming an unknown field is not an error: 0 features
//     (ArcGIS Server answers 400), so a typo looks like an empty layer;
//   - no editingInfo: no lastEditDate, so no cheap refresh (every poll
//     dumps the layer);
//   - resultRecordCount does cap, with exceededTransferLimit true.

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/ingestd/ingestd/internal/interoptest"
)

// koop is Koop's services URL (file-geojson provider).
var koop = interoptest.Server{
	What:   "Koop",
	URLEnv: "INGESTD_KOOP_URL", PortEnv: "INGESTD_KOOP_PORT", DefaultPort: "18182", Path: "/file-geojson/rest/services",
	Probe: "/nc_points/FeatureServer/0?f=json",
	Start: "start it with scripts/koop.sh",
}

// getJSON fetches u (GET, or POST of form when set) and decodes its body.
func getJSON(t *testing.T, u string, form url.Values, out any) int {
	t.Helper()
	var resp *http.Response
	var err error
	if form != nil {
		resp, err = http.PostForm(u, form)
	} else {
		resp, err = http.Get(u)
	}
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(body, out); err != nil {
		t.Fatalf("%s: %v: %.200s", u, err, body)
	}
	return resp.StatusCode
}

var koopLayers = []struct {
	name string
	kind string // what to compare: area, length or none
}{
	{"nc_counties", "area"},
	{"nc_points", "none"},
	{"nc_boundaries", "length"},
}

// koopRig starts a manager with one feed of county per layer of
// koopLayers (its name with dashes), and returns Koop's services URL.
func koopRig(t *testing.T) (string, *rig) {
	t.Helper()
	base := koop.URL(t)
	var yaml strings.Builder
	for _, l := range koopLayers {
		fmt.Fprintf(&yaml, "      - {id: %s, kind: arcgis, url: %q}\n", strings.ReplaceAll(l.name, "_", "-"), base+"/"+l.name+"/FeatureServer/0")
	}
	return base, newRig(t, yaml.String(), nil)
}

func TestKoopLayersMatchGDAL(t *testing.T) {
	base, r := koopRig(t)
	for _, l := range koopLayers {
		t.Run(l.name, func(t *testing.T) {
			feed := strings.ReplaceAll(l.name, "_", "-")
			layerURL := base + "/" + l.name + "/FeatureServer/0"
			var count struct{ Count int }
			getJSON(t, layerURL+"/query?f=json&where=1%3D1&returnCountOnly=true", nil, &count)
			res, err := r.manager.Poll(r.ctx, "county/"+feed)
			if err != nil {
				t.Fatal(err)
			}
			var rows, distinct int
			if err := r.pool.QueryRow(r.ctx, `SELECT count(*), count(DISTINCT feature_id) FROM features WHERE jurisdiction = 'county' AND feed = $1`, feed).Scan(&rows, &distinct); err != nil {
				t.Fatal(err)
			}
			if count.Count == 0 || rows != count.Count || distinct != count.Count || res.Features != count.Count {
				t.Fatalf("returnCountOnly %d, stored %d rows with %d distinct ids, poll %d features", count.Count, rows, distinct, res.Features)
			}

			// GDAL's reading of the same layer, into the same database.
			table := "gdal_" + l.name
			interoptest.OGR2OGR(t, r.pool, "ESRIJSON:"+layerURL+"/query?where=1%3D1&outFields=*&f=json",
				"-nln", table, "-nlt", "PROMOTE_TO_MULTI", "-lco", "GEOMETRY_NAME=geom", "-lco", "FID=gdal_fid", "-overwrite")
			measure := "0"
			switch l.kind {
			case "area":
				measure = "ST_Area(%s::geography)"
			case "length":
				measure = "ST_Length(%s::geography)"
			}
			ma, mb := strings.ReplaceAll(measure, "%s", "a.geom"), strings.ReplaceAll(measure, "%s", "b.geom")
			q := fmt.Sprintf(`
				WITH a AS (SELECT feature_id, geom FROM features WHERE jurisdiction = 'county' AND feed = $1),
				     b AS (SELECT objectid::bigint::text AS id, geom FROM %s),
				     j AS (SELECT a.feature_id, b.id, %s AS ma, %s AS mb,
				                  ST_Distance(ST_Centroid(a.geom)::geography, ST_Centroid(b.geom)::geography) AS cd
				           FROM a FULL JOIN b ON a.feature_id = b.id)
				SELECT (SELECT count(*) FROM b), count(*) FILTER (WHERE feature_id IS NULL OR id IS NULL),
				       count(*) FILTER (WHERE abs(ma - mb) > 1e-9 * greatest(abs(ma), abs(mb))),
				       count(*) FILTER (WHERE cd > 0.01), coalesce(max(cd), 0), coalesce(sum(ma), 0)
				FROM j`, table, ma, mb)
			var gdalRows, unmatched, measureOff, centroidOff int
			var maxCD, total float64
			if err := r.pool.QueryRow(r.ctx, q, feed).Scan(&gdalRows, &unmatched, &measureOff, &centroidOff, &maxCD, &total); err != nil {
				t.Fatal(err)
			}
			if gdalRows != count.Count || unmatched != 0 || measureOff != 0 || centroidOff != 0 {
				t.Errorf("GDAL read %d rows; %d ids unmatched, %d features off by more than 1e-9 relative %s, %d centroids more than 0.01 m apart (max %.3g m)",
					gdalRows, unmatched, measureOff, l.kind, centroidOff, maxCD)
			}
			if l.kind != "none" && total <= 0 {
				t.Errorf("total %s %g: the comparison compared nothing", l.kind, total)
			}
			t.Logf("%s: %d features, ids and %s match GDAL's, centroids within %.3g m", l.name, rows, l.kind, maxCD)
		})
	}
	// The date field: epoch milliseconds from Koop, ISO-8601 UTC stored.
	var updated string
	if err := r.pool.QueryRow(r.ctx, `SELECT properties->>'UPDATED' FROM features WHERE feed = 'nc-counties' AND feature_id = '1825'`).Scan(&updated); err != nil {
		t.Fatal(err)
	}
	if updated != "2024-01-01T12:00:00Z" {
		t.Errorf("UPDATED %q, want 2024-01-01T12:00:00Z", updated)
	}
}

// A where clause and out_fields go to the server: the stored layer is the
// server's count for that where, with the fields asked and the object id.
func TestKoopWhereAndOutFields(t *testing.T) {
	base := koop.URL(t)
	layerURL := base + "/nc_counties/FeatureServer/0"
	r := newRig(t, fmt.Sprintf("      - {id: big, kind: arcgis, url: %q, where: \"BIR74 > 5000\", out_fields: NAME, page_size: 7}\n", layerURL), nil)
	var count struct{ Count int }
	getJSON(t, layerURL+"/query?f=json&where=BIR74+%3E+5000&returnCountOnly=true", nil, &count)
	res, err := r.manager.Poll(r.ctx, "county/big")
	if err != nil {
		t.Fatal(err)
	}
	var keys string
	if err := r.pool.QueryRow(r.ctx, `SELECT string_agg(DISTINCT k, ',' ORDER BY k)
		FROM features, jsonb_object_keys(properties) k WHERE jurisdiction = 'county' AND feed = 'big'`).Scan(&keys); err != nil {
		t.Fatal(err)
	}
	if count.Count == 0 || count.Count >= 100 || res.Features != count.Count || res.Pages != (count.Count+6)/7 {
		t.Errorf("where: count %d, poll %d features in %d pages", count.Count, res.Features, res.Pages)
	}
	if keys != "NAME,OBJECTID" {
		t.Errorf("properties %q, want NAME,OBJECTID", keys)
	}
}

// TestKoopDepartures pins down how Koop differs from ArcGIS Server (see
// the top of this file), so that a Koop upgrade that changes one is seen.
func TestKoopDepartures(t *testing.T) {
	base := koop.URL(t)
	layer := base + "/nc_counties/FeatureServer/0"
	type answer struct {
		Features              []json.RawMessage `json:"features"`
		ExceededTransferLimit bool              `json:"exceededTransferLimit"`
		ObjectIDs             []int64           `json:"objectIds"`
		EditingInfo           *json.RawMessage  `json:"editingInfo"`
		MaxRecordCount        int               `json:"maxRecordCount"`
		Error                 *struct{ Code int }
	}
	var info answer
	getJSON(t, layer+"?f=json", nil, &info)
	if info.MaxRecordCount != 25 || info.EditingInfo != nil {
		t.Errorf("probe: maxRecordCount %d (want 25), editingInfo %v (want none)", info.MaxRecordCount, info.EditingInfo)
	}
	var all answer
	getJSON(t, layer+"/query?f=json&where=1%3D1&outFields=*", nil, &all)
	if len(all.Features) != 100 || all.ExceededTransferLimit {
		t.Errorf("uncapped query: %d features, exceeded %v; want all 100, false", len(all.Features), all.ExceededTransferLimit)
	}
	var ids answer
	getJSON(t, layer+"/query", url.Values{"f": {"json"}, "where": {"1=1"}, "returnIdsOnly": {"true"}}, &ids)
	if len(ids.ObjectIDs) != 100 {
		t.Errorf("id list: %d ids, want 100", len(ids.ObjectIDs))
	}
	var capped answer
	getJSON(t, layer+"/query?f=json&where=1%3D1&outFields=*&resultRecordCount=25", nil, &capped)
	if len(capped.Features) != 25 || !capped.ExceededTransferLimit {
		t.Errorf("resultRecordCount=25: %d features, exceeded %v; want 25, true", len(capped.Features), capped.ExceededTransferLimit)
	}
	list := make([]string, 76)
	for i := range list {
		list[i] = fmt.Sprint(ids.ObjectIDs[i])
	}
	var byIDs answer
	getJSON(t, layer+"/query", url.Values{"f": {"json"}, "objectIds": {strings.Join(list, ",")}, "outFields": {"*"}}, &byIDs)
	if len(byIDs.Features) != 76 || byIDs.ExceededTransferLimit {
		t.Errorf("76 objectIds: %d features, exceeded %v; want 76 (no cap at maxRecordCount 25), false", len(byIDs.Features), byIDs.ExceededTransferLimit)
	}
	var missing answer
	if status := getJSON(t, base+"/nc_nope/FeatureServer/0/query?f=json", nil, &missing); status != 200 || missing.Error == nil || missing.Error.Code != 404 {
		t.Errorf("missing layer: HTTP %d, error %+v; want 200 with code 404", status, missing.Error)
	}
	var typo answer
	if status := getJSON(t, layer+"/query?f=json&where=NO_SUCH_FIELD%3D1", nil, &typo); status != 200 || typo.Error != nil || len(typo.Features) != 0 {
		t.Errorf("unknown field in where: HTTP %d, error %+v, %d features; want 200, no error, 0 features", status, typo.Error, len(typo.Features))
	}
}

// Koop has no editingInfo, so no lastEditDate to prove a layer unchanged:
// every poll of a Koop layer reads it whole, and none is recorded as not
// modified.
func TestKoopHasNoCheapRefresh(t *testing.T) {
	base := koop.URL(t)
	r := newRig(t, fmt.Sprintf("      - {id: points, kind: arcgis, url: %q}\n", base+"/nc_points/FeatureServer/0"), nil)
	for i := range 3 {
		staged := r.store.pages.Load()
		res, err := r.manager.Poll(r.ctx, "county/points")
		if err != nil {
			t.Fatal(err)
		}
		p := r.pollRow(t, res.PollID)
		if res.NotModified || p.notModified || p.version != "" || res.Features != 100 || res.Pages == 0 || r.store.pages.Load()-staged != int64(res.Pages) {
			t.Fatalf("poll %d: %+v, row %+v; want the 100 points read and staged in full, no version stored", i+1, res, p)
		}
		if i > 0 && res.Unchanged != 100 {
			t.Errorf("poll %d: %d unchanged, want 100", i+1, res.Unchanged)
		}
	}
}
