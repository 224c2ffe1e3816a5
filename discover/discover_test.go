package discover_test

import (
	"archive/zip"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/ingestd/ingestd/arcgis/arcgistest"
	"github.com/ingestd/ingestd/config"
	"github.com/ingestd/ingestd/discover"
	"github.com/ingestd/ingestd/encoding/esrijson"
	"github.com/ingestd/ingestd/internal/gdaltest"
	"github.com/ingestd/ingestd/internal/layertest"
	"github.com/ingestd/ingestd/ogcapi/ogcapitest"
	"github.com/ingestd/ingestd/wfs"
	"github.com/ingestd/ingestd/wfs/wfstest"
)

// run discovers each URL with opts and returns the results and what Write
// wrote, after checking that config.Load accepts it.
func run(t *testing.T, opts discover.Options, urls ...string) ([]*discover.Result, string, *config.Config) {
	t.Helper()
	d := discover.New(nil, nil, opts)
	var results []*discover.Result
	for _, u := range urls {
		res, err := d.Discover(t.Context(), u)
		if err != nil {
			t.Fatalf("discover %s: %v", u, err)
		}
		results = append(results, res)
	}
	var b strings.Builder
	if err := discover.Write(&b, results, discover.Feeds{Jurisdiction: "town", Schedule: "*/30 * * * *"}); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "discovered.yaml")
	if err := os.WriteFile(path, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Load(path)
	if err != nil {
		t.Fatalf("validate refuses what discover wrote: %v\n%s", err, b.String())
	}
	return results, b.String(), cfg
}

// feedsOf maps each feed id of cfg to its feed.
func feedsOf(cfg *config.Config) map[string]*config.Feed {
	out := map[string]*config.Feed{}
	for _, f := range cfg.Feeds() {
		out[f.ID] = f
	}
	return out
}

// arcgisDirectory serves a services directory with a folder, a service
// published as both FeatureServer and MapServer, a service of many
// layers (a group layer among them), one that fails, an image service,
// and layers in the shape of real ones; a layer id 13 of Roads fails.
func arcgisDirectory(t *testing.T, manyLayers int) *httptest.Server {
	t.Helper()
	layerDoc := func(name, geom string) map[string]any {
		return map[string]any{"name": name, "type": "Feature Layer", "geometryType": geom, "objectIdField": "OBJECTID",
			"maxRecordCount": 2000, "advancedQueryCapabilities": map[string]any{"supportsPagination": true, "supportsStatistics": true},
			"extent": map[string]any{"spatialReference": map[string]any{"wkid": 2264}},
			"fields": []map[string]any{{"name": "OBJECTID", "type": esrijson.FieldOID}, {"name": "NAME", "type": "esriFieldTypeString"}}}
	}
	layerRE := regexp.MustCompile(`^/arcgis/rest/services/(.+)/(FeatureServer|MapServer)/(\d+)(/query)?$`)
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var doc any
		switch p := r.URL.Path; {
		case p == "/arcgis/rest/services":
			doc = map[string]any{"folders": []string{"Parks"}, "services": []map[string]string{
				{"name": "Roads", "type": "MapServer"}, {"name": "Roads", "type": "FeatureServer"},
				{"name": "Broken", "type": "FeatureServer"}, {"name": "Imagery", "type": "ImageServer"}}}
		case p == "/arcgis/rest/services/Parks":
			doc = map[string]any{"folders": []string{}, "services": []map[string]string{{"name": "Parks/Trails", "type": "MapServer"}}}
		case p == "/arcgis/rest/services/Roads/FeatureServer":
			var layers []map[string]any
			for i := range manyLayers {
				layers = append(layers, map[string]any{"id": i, "name": fmt.Sprintf("Road Segments %d", i)})
			}
			layers = append(layers, map[string]any{"id": 99, "name": "All roads", "subLayerIds": []int{0, 1}})
			doc = map[string]any{"layers": layers}
		case p == "/arcgis/rest/services/Parks/Trails/MapServer":
			doc = map[string]any{"layers": []map[string]any{{"id": 0, "name": "Trails"}}}
		case p == "/arcgis/rest/services/Broken/FeatureServer":
			doc = map[string]any{"error": map[string]any{"code": 500, "message": "Service Broken is down"}}
		default:
			m := layerRE.FindStringSubmatch(p)
			switch {
			case m == nil || m[3] == "13":
				doc = map[string]any{"error": map[string]any{"code": 400, "message": "Invalid URL"}}
			case m[4] != "":
				n, _ := strconv.Atoi(m[3])
				doc = map[string]any{"count": 100 + n}
			case m[1] == "Parks/Trails":
				doc = layerDoc("Trails", "esriGeometryPolyline")
			default:
				doc = layerDoc("Road Segments "+m[3], "esriGeometryPolygon")
			}
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(doc)
	}))
	t.Cleanup(ts.Close)
	return ts
}

// The root lists its folder's services and its own, a FeatureServer
// preferred to the same MapServer, group layers and image services left
// out; a failing service and a failing layer are reported and the rest is
// written; every feed is an arcgis layer URL.
func TestArcGISDirectory(t *testing.T) {
	ts := arcgisDirectory(t, 20)
	results, out, cfg := run(t, discover.Options{}, ts.URL+"/arcgis/rest/services")
	res := results[0]
	if len(res.Problems) != 1 || !strings.Contains(res.Problems[0], "Broken/FeatureServer") || !strings.Contains(res.Problems[0], "Service Broken is down") {
		t.Errorf("problems %q, want the Broken service's error", res.Problems)
	}
	// 20 Roads layers (13 failing) and the folder's Trails.
	if len(res.Layers) != 21 {
		t.Fatalf("%d layers, want 21:\n%s", len(res.Layers), out)
	}
	got := feedsOf(cfg)
	if len(got) != 20 {
		t.Errorf("%d feeds, want 20 (layer 13 fails):\n%s", len(got), out)
	}
	if f := got["road_segments_3"]; f == nil || f.Kind != "arcgis" || f.URL != ts.URL+"/arcgis/rest/services/Roads/FeatureServer/3" || f.Schedule != "*/30 * * * *" {
		t.Errorf("feed road_segments_3: %+v\n%s", f, out)
	}
	if f := got["trails"]; f == nil || f.URL != ts.URL+"/arcgis/rest/services/Parks/Trails/MapServer/0" {
		t.Errorf("feed trails from the folder's MapServer: %+v\n%s", f, out)
	}
	for _, want := range []string{
		"Roads/FeatureServer/Road Segments 5: Polygon, 105 features (returnCountOnly)",
		"id: OBJECTID (the layer's objectIdField)",
		"Road Segments 13: FAILED: arcgis: ",
		"no feed road_segments_13 for Road Segments 13: it could not be described",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "MapServer/3") || strings.Contains(out, "All roads") || strings.Contains(out, "Imagery") {
		t.Errorf("the MapServer twin, a group layer or an image service was listed:\n%s", out)
	}
}

// -filter applies to layer names before any layer is read.
func TestArcGISFilter(t *testing.T) {
	ts := arcgisDirectory(t, 12)
	results, out, cfg := run(t, discover.Options{Filter: regexp.MustCompile(`(?i)segments 1\d$`)}, ts.URL+"/arcgis/rest/services/Roads/FeatureServer")
	if got := feedsOf(cfg); len(got) != 2 || got["road_segments_10"] == nil || got["road_segments_11"] == nil {
		t.Errorf("feeds %v, want segments 10 and 11:\n%s", got, out)
	}
	if results[0].Skipped != 10 {
		t.Errorf("skipped %d, want 10", results[0].Skipped)
	}
}

// A layer URL of the fixture server, with -check: the layer's paging and
// fallbacks said; a layer without statistics nor pagination is told it
// depends on its id list.
func TestArcGISLayerCheck(t *testing.T) {
	srv := arcgistest.New()
	fields := []esrijson.Field{{Name: "OBJECTID", Type: esrijson.FieldOID}}
	srv.AddLayer("parcels", &arcgistest.Layer{GeometryType: esrijson.TypePoint, WKID: 4326, Fields: fields, NoPagination: true, NoStatistics: true,
		Features: []arcgistest.Feature{{OID: 1, Attributes: map[string]any{"OBJECTID": 1}}, {OID: 2, Attributes: map[string]any{"OBJECTID": 2}}}})
	ts := httptest.NewServer(srv)
	t.Cleanup(ts.Close)
	_, out, cfg := run(t, discover.Options{Check: true}, arcgistest.URL(ts.URL, "parcels"))
	// The fixture names every layer "fixture".
	if f := feedsOf(cfg)["fixture"]; f == nil || f.URL != arcgistest.URL(ts.URL, "parcels") {
		t.Errorf("feed parcels: %+v\n%s", f, out)
	}
	for _, want := range []string{"parcels/FeatureServer/fixture: Point, 2 features (returnCountOnly)", "check paging: ok: maxRecordCount 1000, supportsPagination false",
		"check fallback: ok: neither statistics nor pagination"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}

// Every feature type of a WFS, the filter, a failing DescribeFeatureType
// (a note, not a failure), and -check's hits count.
func TestWFS(t *testing.T) {
	srv := wfstest.New()
	for i := range 8 {
		srv.AddLayer(fmt.Sprintf("parcels%d", i), layertest.Parcels{N: 10 + i})
	}
	srv.AddLayer("addresses", layertest.Points{N: 7})
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.EqualFold(r.URL.Query().Get("request"), "DescribeFeatureType") && strings.Contains(r.URL.Query().Get("typeNames"), "parcels3") {
			http.Error(w, "boom", http.StatusInternalServerError)
			return
		}
		srv.ServeHTTP(w, r)
	}))
	t.Cleanup(ts.Close)
	results, out, cfg := run(t, discover.Options{Check: true, Filter: regexp.MustCompile(`parcels[0-5]|addresses`)}, ts.URL+"/wfs?service=WFS&request=GetCapabilities")
	if results[0].Skipped != 2 {
		t.Errorf("skipped %d, want 2 (parcels6, parcels7)", results[0].Skipped)
	}
	got := feedsOf(cfg)
	if len(got) != 7 {
		t.Fatalf("%d feeds, want 7:\n%s", len(got), out)
	}
	if f := got["parcels2"]; f == nil || f.Kind != "wfs" || f.URL != ts.URL+"/wfs" || f.Settings != (wfs.Settings{Version: "2.0.0", OutputFormat: "auto", TypeName: "ingestd:parcels2"}) {
		t.Errorf("feed parcels2: %+v", f)
	}
	for _, want := range []string{"ingestd:parcels2: Polygon, 12 features (resultType=hits)", "ingestd:addresses: Point, 7 features",
		"ingestd:parcels3: geometry unknown", "note: geometry type unknown:", "check paging: ok: ImplementsResultPaging TRUE"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}

// withCollections serves api with a /collections list naming ids (the
// fixture's own list is empty), one of which it does not serve.
func withCollections(t *testing.T, api *ogcapitest.Server, ids ...string) *httptest.Server {
	t.Helper()
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/collections" {
			api.ServeHTTP(w, r)
			return
		}
		var cs []map[string]string
		for _, id := range ids {
			cs = append(cs, map[string]string{"id": id, "title": "Layer " + id, "itemType": "feature"})
		}
		cs = append(cs, map[string]string{"id": "tiles", "itemType": "coverage"})
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"collections": cs})
	}))
	t.Cleanup(ts.Close)
	return ts
}

// An OGC API server's collections: counts from numberMatched, a listed
// collection that fails, one without numberMatched nor hits that -check
// says would fail (no feed), one whose server ignores its offset
// (MapServer#6613) within one page (a warning: the feed commented out) and
// beyond (none), and an empty one (a warning too).
func TestOGCAPI(t *testing.T) {
	api := ogcapitest.New()
	api.Add("zoning", ogcapitest.Collection{Layer: layertest.Parcels{N: 25}})
	api.Add("nocount", ogcapitest.Collection{Layer: layertest.Parcels{N: 25}, Pitfall: ogcapitest.NoNumberMatched})
	api.Add("hits", ogcapitest.Collection{Layer: layertest.Parcels{N: 25}, Pitfall: ogcapitest.NoNumberMatched, Hits: true})
	api.Add("stuck", ogcapitest.Collection{Layer: layertest.Points{N: 30}, Pitfall: ogcapitest.OffsetIgnored})
	api.Add("stuckbig", ogcapitest.Collection{Layer: layertest.Points{N: 1500}, Pitfall: ogcapitest.OffsetIgnored})
	api.Add("empty", ogcapitest.Collection{Layer: layertest.Parcels{N: 0}})
	ts := withCollections(t, api, "zoning", "nocount", "hits", "stuck", "stuckbig", "gone", "empty")
	results, out, cfg := run(t, discover.Options{Check: true}, ts.URL+"/")
	if len(results[0].Layers) != 7 {
		t.Fatalf("%d layers, want 7 (the coverage left out):\n%s", len(results[0].Layers), out)
	}
	got := feedsOf(cfg)
	for _, id := range []string{"zoning", "hits"} {
		if f := got[id]; f == nil || f.Kind != "ogcapi" || f.URL != ts.URL+"/collections/"+id {
			t.Errorf("feed %s: %+v\n%s", id, f, out)
		}
	}
	for _, id := range []string{"nocount", "stuckbig", "gone", "stuck", "empty"} {
		if _, ok := got[id]; ok {
			t.Errorf("feed %s written, want a comment:\n%s", id, out)
		}
	}
	for _, want := range []string{"zoning: Polygon, 25 features (numberMatched)", "id: the feature id (GeoJSON id)",
		"hits: Polygon, count unknown", "resulttype=hits answers 25",
		"nocount: Polygon, count unknown", "check completeness: FAILS: no numberMatched on its pages nor to resulttype=hits",
		"stuck: Point, 30 features", "check paging: WARNING: its next link serves page 1 again", "gone: FAILED: ogcapi: ",
		"check paging: ok: next links lead on",
		"check features: WARNING: the collection serves no features",
		"#      feed stuck for stuck commented out: a check warns", "#      - id: stuck\n#        kind: ogcapi\n",
		"#      feed empty for empty commented out: a check warns", "#      - id: empty\n"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}

// A collection URL names one collection; a filter applies to ids and
// titles; credentials in the URL are redacted in what is printed.
func TestOGCAPIOneCollectionAndFilter(t *testing.T) {
	api := ogcapitest.New()
	api.Add("zoning", ogcapitest.Collection{Layer: layertest.Parcels{N: 5}})
	api.Add("roads", ogcapitest.Collection{Layer: layertest.Points{N: 5}})
	ts := withCollections(t, api, "zoning", "roads")
	_, out, cfg := run(t, discover.Options{}, ts.URL+"/collections/roads?api_key=s3cr3tvalue")
	if strings.Contains(out, "s3cr3tvalue") {
		t.Errorf("the key is printed:\n%s", out)
	}
	if len(cfg.Feeds()) != 1 || !strings.Contains(out, "the url's credentials are redacted") {
		t.Errorf("want one feed, its url redacted:\n%s", out)
	}
	_, out, cfg = run(t, discover.Options{Filter: regexp.MustCompile(`^Layer z`)}, ts.URL+"/collections")
	if got := feedsOf(cfg); len(got) != 1 || got["zoning"] == nil || got["zoning"].URL != ts.URL+"/collections/zoning" {
		t.Errorf("feeds %v, want zoning:\n%s", got, out)
	}
}

// A hostile catalog is refused by its bound, by name, not read whole: an
// ArcGIS directory past the 16 MiB of a description, an OGC API
// /collections gzip bomb past the 16 MiB of a collections document.
func TestHostileCatalogs(t *testing.T) {
	pad := strings.Repeat(" ", 17<<20)
	arc := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"folders":[],`+pad+`"services":[]}`)
	}))
	t.Cleanup(arc.Close)
	_, err := discover.New(nil, nil, discover.Options{}).Discover(t.Context(), arc.URL+"/arcgis/rest/services")
	if err == nil || !strings.Contains(err.Error(), "larger than 16777216 bytes") {
		t.Errorf("a 17 MiB directory: %v, want its bound named", err)
	}

	api := ogcapitest.New()
	api.Bomb("/collections", `{"collections":[`, `{"id":"x"},`, `{"id":"y"}]}`, 40<<20)
	ts := httptest.NewServer(api)
	t.Cleanup(ts.Close)
	_, err = discover.New(nil, nil, discover.Options{}).Discover(t.Context(), ts.URL+"/collections")
	if err == nil || !strings.Contains(err.Error(), "the collections document at") || !strings.Contains(err.Error(), "not a document an OGC API server sends") {
		t.Errorf("a 40 MB collections bomb: %v, want the collections document refused by name", err)
	}
	api.Bomb("/collections", `{"collections":[{"id":"`, `x`, `"}]}`, 40<<20)
	_, err = discover.New(nil, nil, discover.Options{}).Discover(t.Context(), ts.URL+"/collections")
	if err == nil || !strings.Contains(err.Error(), "larger than 16 MiB decoded") {
		t.Errorf("a 40 MB collection id: %v, want the collections document's 16 MiB bound named", err)
	}
}

// A server that refuses connections is reported as unreachable, with the
// cause, whatever kind was guessed: not as a server of no kind with no
// layers, and without suggesting -kind.
func TestUnreachable(t *testing.T) {
	t.Parallel()
	ts := httptest.NewServer(http.NotFoundHandler())
	addr := ts.URL
	ts.Close()
	for _, u := range []string{addr + "/", addr + "/wfs", addr + "/ogcapi/collections", addr + "/arcgis/rest/services"} {
		d := discover.New(nil, nil, discover.Options{})
		res, err := d.Discover(t.Context(), u)
		if err == nil || !strings.Contains(err.Error(), "the server is unreachable: dial tcp") ||
			!strings.Contains(err.Error(), "connection refused") || strings.Contains(err.Error(), "-kind") {
			t.Errorf("discover %s: %v, want unreachable with its cause and no -kind", u, err)
		}
		var b strings.Builder
		if err := discover.Write(&b, []*discover.Result{res}, discover.Feeds{Jurisdiction: "town"}); err != nil {
			t.Fatal(err)
		}
		if out := b.String(); strings.Contains(out, "(): ") || !strings.Contains(out, "FAILED: the server is unreachable") {
			t.Errorf("discover %s wrote:\n%s", u, out)
		}
	}
}

// fileFixtures writes, with GDAL's ogr2ogr, a GeoPackage of two layers
// (roads, zoning), a zip of two Shapefiles (hydrants, parks) and a
// FlatGeobuf of one layer into dir, and serves dir until t ends.
func fileFixtures(t *testing.T) *httptest.Server {
	t.Helper()
	dir := t.TempDir()
	src := gdaltest.Parcels(t, dir, 5, "GeoJSON", "parcels.geojson")
	gdaltest.OGR2OGR(t, "-f", "GPKG", filepath.Join(dir, "county.gpkg"), src, "-nln", "roads")
	gdaltest.OGR2OGR(t, "-update", filepath.Join(dir, "county.gpkg"), src, "-nln", "zoning")
	gdaltest.OGR2OGR(t, "-f", "FlatGeobuf", filepath.Join(dir, "trees.fgb"), src, "-nln", "trees")
	shp := filepath.Join(dir, "shp")
	if err := os.Mkdir(shp, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"hydrants", "parks"} {
		gdaltest.OGR2OGR(t, "-f", "ESRI Shapefile", filepath.Join(shp, name+".shp"), src, "-nln", name)
	}
	zf, err := os.Create(filepath.Join(dir, "county.zip"))
	if err != nil {
		t.Fatal(err)
	}
	zw := zip.NewWriter(zf)
	entries, err := os.ReadDir(shp)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join(shp, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		w, err := zw.Create("county/" + e.Name())
		if err != nil {
			t.Fatal(err)
		}
		w.Write(b)
	}
	if err := errors.Join(zw.Close(), zf.Close()); err != nil {
		t.Fatal(err)
	}
	// odd.zip: one Shapefile whose .prj is a CRS no definition matches
	// (a Lambert conformal conic on an ellipsoid of its own).
	oz, err := os.Create(filepath.Join(dir, "odd.zip"))
	if err != nil {
		t.Fatal(err)
	}
	ozw := zip.NewWriter(oz)
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join(shp, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(e.Name(), "parks.") {
			continue
		}
		if strings.HasSuffix(e.Name(), ".prj") {
			b = []byte(oddPRJ)
		}
		w, err := ozw.Create(strings.Replace(e.Name(), "parks", "odd", 1))
		if err != nil {
			t.Fatal(err)
		}
		w.Write(b)
	}
	if err := errors.Join(ozw.Close(), oz.Close()); err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(http.FileServer(http.Dir(dir)))
	t.Cleanup(ts.Close)
	return ts
}

// oddPRJ is an Esri .prj of a CRS that matches no definition of PROJ's.
const oddPRJ = `PROJCS["County_Grid",GEOGCS["GCS_Local",DATUM["D_Local",SPHEROID["Local",6378000.0,300.0]],` +
	`PRIMEM["Greenwich",0.0],UNIT["Degree",0.0174532925199433]],PROJECTION["Lambert_Conformal_Conic"],` +
	`PARAMETER["False_Easting",1000.0],PARAMETER["False_Northing",0.0],PARAMETER["Central_Meridian",-79.0],` +
	`PARAMETER["Standard_Parallel_1",34.3],PARAMETER["Standard_Parallel_2",36.2],PARAMETER["Latitude_Of_Origin",33.75],UNIT["Meter",1.0]]`

// A file's layer says the CRS a poll would read it in and how it was
// identified; a layer whose .prj matches no CRS is a warning, naming what
// the .prj says, and its feed is written commented out.
func TestFileCRS(t *testing.T) {
	t.Parallel()
	ts := fileFixtures(t)
	_, out, cfg := run(t, discover.Options{}, ts.URL+"/county.zip", ts.URL+"/odd.zip")
	if !strings.Contains(out, "note: CRS EPSG:") {
		t.Errorf("the Shapefiles' CRS is not noted:\n%s", out)
	}
	for _, want := range []string{"check crs: WARNING", "County_Grid", `datum "D_Local"`, "feed odd for odd commented out"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	got := feedsOf(cfg)
	if got["odd"] != nil || got["parks"] == nil {
		t.Errorf("feeds %v: want parks written and odd commented out\n%s", got, out)
	}
}

// A downloadable file's layers, as kind: file feeds name them: a
// GeoPackage's tables and a zip's Shapefiles each a feed with its layer:,
// a FlatGeobuf one feed without; the kind is guessed from .gpkg, .zip and
// .fgb.
func TestFileLayers(t *testing.T) {
	t.Parallel()
	ts := fileFixtures(t)
	results, out, cfg := run(t, discover.Options{}, ts.URL+"/county.gpkg", ts.URL+"/county.zip", ts.URL+"/trees.fgb")
	for i, want := range []int{2, 2, 1} {
		if results[i].Kind != discover.KindFile || len(results[i].Layers) != want {
			t.Errorf("%s: kind %q, %d layers; want file with %d:\n%s", results[i].URL, results[i].Kind, len(results[i].Layers), want, out)
		}
	}
	got := feedsOf(cfg)
	for id, url := range map[string]string{"roads": "/county.gpkg", "zoning": "/county.gpkg", "hydrants": "/county.zip", "parks": "/county.zip", "trees": "/trees.fgb"} {
		if f := got[id]; f == nil || f.Kind != "file" || f.URL != ts.URL+url {
			t.Errorf("feed %s: %+v, want kind file at %s\n%s", id, f, url, out)
		}
	}
	for _, want := range []string{"layer: roads\n", "layer: zoning\n", "layer: hydrants\n", "layer: parks\n", "note: read as gpkg", "note: read as shapefile", "note: read as flatgeobuf"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out[strings.Index(out, "id: trees"):], "layer:") {
		t.Errorf("the FlatGeobuf's feed names a layer:\n%s", out)
	}
}

// A zipped File Geodatabase's feature classes are each a feed with its
// layer: and the CRS its layer declares, as a GeoPackage's tables are.
func TestFileGDBLayers(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	src := gdaltest.Parcels(t, dir, 5, "GeoJSON", "parcels.geojson")
	gdb := filepath.Join(dir, "County.gdb")
	gdaltest.OGR2OGR(t, "-f", "OpenFileGDB", "-t_srs", "EPSG:2264", gdb, src, "-nln", "parcels")
	gdaltest.OGR2OGR(t, "-f", "OpenFileGDB", "-update", "-t_srs", "EPSG:4267", gdb, src, "-nln", "zoning")
	zf, err := os.Create(filepath.Join(dir, "County.gdb.zip"))
	if err != nil {
		t.Fatal(err)
	}
	zw := zip.NewWriter(zf)
	entries, err := os.ReadDir(gdb)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join(gdb, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		w, err := zw.Create("County.gdb/" + e.Name())
		if err != nil {
			t.Fatal(err)
		}
		w.Write(b)
	}
	if err := errors.Join(zw.Close(), zf.Close()); err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(http.FileServer(http.Dir(dir)))
	t.Cleanup(ts.Close)

	results, out, cfg := run(t, discover.Options{}, ts.URL+"/County.gdb.zip")
	if results[0].Kind != discover.KindFile || len(results[0].Layers) != 2 {
		t.Fatalf("kind %q, %d layers; want file with 2:\n%s", results[0].Kind, len(results[0].Layers), out)
	}
	got := feedsOf(cfg)
	for _, id := range []string{"parcels", "zoning"} {
		if f := got[id]; f == nil || f.Kind != "file" || f.URL != ts.URL+"/County.gdb.zip" {
			t.Errorf("feed %s: %+v, want kind file at /County.gdb.zip\n%s", id, f, out)
		}
	}
	for _, want := range []string{"layer: parcels\n", "layer: zoning\n", "note: read as filegdb", "note: CRS EPSG:2264, identified by", "note: CRS EPSG:4267, identified by"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}
