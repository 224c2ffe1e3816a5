package main

import (
	"encoding/json"
	"fmt"
	"maps"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/ingestd/ingestd/internal/interoptest"
	"github.com/ingestd/ingestd/migrations/pgtest"
	"github.com/ingestd/ingestd/wfs/wfstest"
)

// qgisPython is the Python that has QGIS's bindings (Debian's
// python3-qgis, which scripts/test.sh installs).
const qgisPython = "/usr/bin/python3"

// qgisLayer is what testdata/qgis/open_layers.py reports of one layer.
type qgisLayer struct {
	Schema, Name string
	Valid        bool
	Geometry     string
	SRID         int
	Count        int
	Iterated     int
	Fields       [][2]string
	Key          []string
	Messages     []string
	URI          string
}

// qgisReport is the script's whole answer.
type qgisReport struct {
	Layers []qgisLayer
	Tables []struct {
		Schema, Name, Geometry string
	}
}

// The demo's layers (jurisdictions.yaml's feeds, served as scripts/demo.sh
// serves them, and MapServer's WFS and OGC API) open in QGIS with no
// questions: each layer, added by its schema and name with no key given
// (as QGIS's browser adds one), is valid, with its geometry type, SRID
// 4326, its typed fields and its feature count; and QGIS's browser lists
// the layers in the jurisdictions' schemas, ingestd's tables in schema
// ingestd, and nothing of ingestd's in public.
func TestQGISOpensEveryLayer(t *testing.T) {
	t.Parallel()
	if out, err := exec.Command(qgisPython, "-c", "import qgis.core").CombinedOutput(); err != nil {
		interoptest.Unavailable(t, fmt.Sprintf("PyQGIS (%s -c 'import qgis.core': %v %s): install python3-qgis (scripts/test.sh does)", qgisPython, err, out))
	}
	heavy(t, 1)
	bin := buildIngestd(t)
	servers := map[string]string{}
	for _, dir := range []string{"raleigh", "boulder"} {
		s := wfstest.New()
		if err := s.LoadDir(filepath.Join("..", "..", "testdata", "feeds", dir)); err != nil {
			t.Fatal(err)
		}
		hs := httptest.NewServer(s)
		t.Cleanup(hs.Close)
		servers[dir] = hs.URL
	}
	// jurisdictions.yaml's feeds (wake's are raleigh's data on a flapping
	// port: left out), and MapServer's layer under a schema: and name:.
	cfg := fmt.Sprintf(`
jurisdictions:
  - id: raleigh
    feeds:
      - {id: zoning, kind: wfs, url: "%[1]s/geoserver/wfs", type_name: zoning, page_size: 10, id_property: zone_id, sort_by: zone_id}
      - {id: addresses, kind: wfs, url: "%[1]s/geoserver/wfs", type_name: addresses, version: 1.1.0, page_size: 50, sort_by: address_id}
  - id: boulder
    feeds:
      - {id: roads, kind: geojson, url: "%[2]s/geojson/roads.geojson", id_property: segment_id}
  - id: nc
    feeds:
      - {id: counties, kind: arcgis, url: "%[3]s/nc_counties/FeatureServer/0"}
      - {id: points, kind: arcgis, url: "%[3]s/nc_points/FeatureServer/0"}
  - id: nc-mapserver
    schema: mapserver
    feeds:
      - {id: wfs-nc, name: counties, kind: wfs, url: "%[4]s", type_name: nc, version: 2.0.0, output_format: "application/gml+xml; version=3.2", id_property: FIPS, sort_by: FIPS}
      - {id: ogcapi-nc, name: counties_ogcapi, kind: ogcapi, url: "%[5]s/collections/nc", page_size: 1000}
`, servers["raleigh"], servers["boulder"], discoverKoop.URL(t), discoverMapServerWFS.URL(t), discoverMapServerOGCAPI.URL(t))
	cfgPath := filepath.Join(t.TempDir(), "demo.yaml")
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	dbURL := pgtest.URLFor(t, ingestdConns)
	want := map[string]int{} // schema.name → features polled
	for _, c := range []struct{ feed, layer string }{
		{"raleigh/zoning", "raleigh.zoning"}, {"raleigh/addresses", "raleigh.addresses"}, {"boulder/roads", "boulder.roads"},
		{"nc/counties", "nc.counties"}, {"nc/points", "nc.points"},
		{"nc-mapserver/wfs-nc", "mapserver.counties"}, {"nc-mapserver/ogcapi-nc", "mapserver.counties_ogcapi"},
	} {
		code, out := runBin(t, bin, "poll", "-config", cfgPath, "-database-url", dbURL, c.feed)
		var n int
		if code != 0 || !strings.Contains(out, c.feed+": poll ") {
			t.Fatalf("ingestd poll %s: exit %d\n%s", c.feed, code, out)
		}
		if _, err := fmt.Sscanf(out[strings.Index(out, " ok: ")+5:], "%d features", &n); err != nil || n == 0 {
			t.Fatalf("ingestd poll %s: no feature count in %q", c.feed, out)
		}
		want[c.layer] = n
	}
	columns := layerColumns(t, dbURL)
	rep := openInQGIS(t, dbURL, slices.Sorted(maps.Keys(want)))
	for _, l := range rep.Layers {
		name := l.Schema + "." + l.Name
		switch {
		case !l.Valid:
			t.Errorf("%s: QGIS opened an invalid layer (uri %s): %v", name, l.URI, l.Messages)
			continue
		case l.SRID != 4326:
			t.Errorf("%s: SRID %d, want 4326", name, l.SRID)
		case l.Count != want[name] || l.Iterated != want[name]:
			t.Errorf("%s: QGIS counts %d features (%d iterated), ingestd polled %d", name, l.Count, l.Iterated, want[name])
		case !slices.Equal(l.Key, []string{"feature_id"}):
			t.Errorf("%s: QGIS's key %v, want feature_id (%v)", name, l.Key, l.Messages)
		}
		c := columns[name]
		if !strings.EqualFold(strings.TrimPrefix(l.Geometry, "Multi"), strings.TrimPrefix(c.geometry, "Multi")) ||
			strings.HasPrefix(l.Geometry, "Multi") != strings.HasPrefix(c.geometry, "Multi") {
			t.Errorf("%s: QGIS's geometry %s, the layer's %s", name, l.Geometry, c.geometry)
		}
		got := map[string]string{}
		for _, f := range l.Fields {
			got[f[0]] = f[1]
		}
		for col, typ := range c.types {
			if qt, ok := got[col]; !ok || !qgisTypeMatches(qt, typ) {
				t.Errorf("%s: field %s is %q in QGIS, %s in PostGIS", name, col, qt, typ)
			}
		}
		t.Logf("%s: %s, EPSG:%d, %d features, %d fields, key %v", name, l.Geometry, l.SRID, l.Count, len(l.Fields), l.Key)
	}
	// The browser's listing: each layer in its schema, none in public.
	// public holds PostGIS's relations only (ingestd's, goose's version
	// table included, are in schema ingestd).
	listed, public := map[string]bool{}, []string{}
	for _, tb := range rep.Tables {
		listed[tb.Schema+"."+tb.Name] = true
		if tb.Schema == "public" && !slices.Contains([]string{"spatial_ref_sys", "geometry_columns", "geography_columns"}, tb.Name) {
			public = append(public, tb.Name)
		}
	}
	if len(public) > 0 {
		t.Errorf("QGIS's browser lists in public: %v", public)
	}
	for _, name := range []string{"ingestd.feed_freshness", "ingestd.features", "ingestd.polls", "ingestd.dead_letter"} {
		if !listed[name] {
			t.Errorf("QGIS's browser does not list %s", name)
		}
	}
	for name := range want {
		if !listed[name] {
			t.Errorf("QGIS's browser does not list %s", name)
		}
	}
}

// layerColumn is a layer's geometry type and typed columns, from PostGIS.
type layerColumn struct {
	geometry string
	types    map[string]string
}

// layerColumns reads every feed's layer's geometry type and columns.
func layerColumns(t *testing.T, dbURL string) map[string]layerColumn {
	t.Helper()
	conn, err := pgx.Connect(t.Context(), dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(t.Context())
	rows, err := conn.Query(t.Context(), `SELECT s.view_name, coalesce(s.geometry_type, ''), c.view_column, c.type
		FROM feed_schemas s JOIN feed_columns c USING (jurisdiction, feed) WHERE c.removed_at IS NULL`)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]layerColumn{}
	for rows.Next() {
		var view, gt, col, typ string
		if err := rows.Scan(&view, &gt, &col, &typ); err != nil {
			t.Fatal(err)
		}
		l := out[view]
		if l.types == nil {
			l.types = map[string]string{}
		}
		l.geometry, l.types[col] = gt, typ
		out[view] = l
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// qgisTypeMatches reports whether QGIS's type name for a field is the
// PostgreSQL type ingestd gave its column (QGIS names them by pg_type).
func qgisTypeMatches(qgis, pg string) bool {
	want := map[string]string{"text": "text", "bigint": "int8", "numeric": "numeric", "double precision": "float8",
		"boolean": "bool", "date": "date", "timestamptz": "timestamptz", "jsonb": "jsonb"}[pg]
	return qgis == want
}

// openInQGIS runs testdata/qgis/open_layers.py on the layers (schema.name).
func openInQGIS(t *testing.T, dbURL string, layers []string) qgisReport {
	t.Helper()
	u, err := url.Parse(dbURL)
	if err != nil {
		t.Fatal(err)
	}
	conninfo := fmt.Sprintf("dbname=%s host=%s port=%s user=%s sslmode=disable",
		strings.TrimPrefix(u.Path, "/"), u.Hostname(), u.Port(), u.User.Username())
	req := map[string]any{"conninfo": conninfo, "layers": [][]string{}}
	for _, l := range layers {
		s, n, _ := strings.Cut(l, ".")
		req["layers"] = append(req["layers"].([][]string), []string{s, n})
	}
	in, err := json.Marshal(req)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.CommandContext(t.Context(), qgisPython, filepath.Join("..", "..", "testdata", "qgis", "open_layers.py"))
	runtime := t.TempDir()
	if err := os.Chmod(runtime, 0o700); err != nil {
		t.Fatal(err)
	}
	cmd.Env = append(os.Environ(), "QT_QPA_PLATFORM=offscreen", "XDG_RUNTIME_DIR="+runtime, "HOME="+t.TempDir())
	cmd.Stdin = strings.NewReader(string(in))
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("open_layers.py: %v\n%s", err, stderr.String())
	}
	var rep qgisReport
	if err := json.Unmarshal(out, &rep); err != nil {
		t.Fatalf("open_layers.py's output: %v\n%s\nstderr: %s", err, out, stderr.String())
	}
	if len(rep.Layers) != len(layers) {
		t.Fatalf("open_layers.py reported %d layers, asked %d", len(rep.Layers), len(layers))
	}
	return rep
}
