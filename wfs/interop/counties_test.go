package interop_test

import (
	"context"
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/ingestd/ingestd/internal/interoptest"
	"github.com/ingestd/ingestd/internal/interoptest/polltest"
	"github.com/ingestd/ingestd/migrations/pgtest"
)

// The US Census counties at 1:10 m (testdata/uscounties: npm us-atlas
// converted by GDAL) are a real layer with invalid polygons: rings that
// touch or cross themselves where the generalisation pinched a county.
// ST_MakeValid alone made some of them GEOMETRYCOLLECTION(POLYGON,
// LINESTRING), NULL in the MultiPolygon typed view.

// countiesFile is the layer as lighttpd serves it (scripts/mapserver.sh
// copies it into its document root).
const countiesFile = "us-counties-10m.geojson"

// countiesURL is the file's URL on the MapServer host, when it answers.
func countiesURL(t *testing.T, base string) string {
	t.Helper()
	u := strings.TrimSuffix(base, "/wfs") + "/" + countiesFile
	if err := interoptest.Answers(t, http.MethodHead, u); err != nil {
		interoptest.Unavailable(t, fmt.Sprintf("no %s at %s: %v; scripts/mapserver.sh start serves it", countiesFile, u, err))
		return ""
	}
	return u
}

// TestUSCountiesKeepTheirPolygons polls the counties as a GeoJSON file
// through lighttpd and as MapServer's WFS layer us_counties (GeoJSON and
// GML 3.2, paged), and compares each with GDAL's load of the file
// (ogr2ogr, which stores the invalid polygons as they are): every county
// GDAL has a geometry for is a valid MultiPolygon in the typed view, of the
// same area where the source was valid and within 0.1 % where it was
// repaired. From the file, the repaired counties are exactly the invalid
// ones, counted in polls.invalid_geometries. Through MapServer, which
// rounds coordinates (GML to 10 decimals), a county or two may become
// valid on the way; and MapServer serves no feature without a geometry
// (Falls Church, too small at 1:10 m, is an empty polygon in the file).
func TestUSCountiesKeepTheirPolygons(t *testing.T) {
	base := mapServer.URL(t)
	file := countiesURL(t, base)
	pool := pgtest.Pool(t)
	ctx := t.Context()
	loadWithGDAL(t, pool, filepath.Join("..", "..", "testdata", "uscounties", countiesFile), "", "gdal_file", "-nlt", "PROMOTE_TO_MULTI")

	doc := fmt.Sprintf(`
jurisdictions:
  - id: us
    feeds:
      - {id: file, kind: geojson, url: %q, id_property: id}
      - {id: wfs_geojson, kind: wfs, url: "%s?srsName=EPSG:4326", type_name: us_counties, version: "2.0.0", output_format: auto, page_size: 1000, id_property: id, sort_by: id}
      - {id: wfs_gml, kind: wfs, url: "%s?srsName=EPSG:4326", type_name: us_counties, version: "2.0.0", output_format: "application/gml+xml; version=3.2", page_size: 1000, id_property: id, sort_by: id}
`, file, base, base)
	mgr, _ := polltest.Manager(t, pool, "counties.yaml", doc, nil)
	for _, c := range []struct {
		feed          string
		viaMapServer  bool
		validAreaDiff float64
	}{
		{"file", false, 1e-12}, {"wfs_geojson", true, 1e-6}, {"wfs_gml", true, 1e-6},
	} {
		t.Run(c.feed, func(t *testing.T) {
			pctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
			defer cancel()
			res, err := mgr.Poll(pctx, "us/"+c.feed)
			if err != nil {
				t.Fatalf("poll: %v", err)
			}
			checkCounties(t, pool, c.feed, res.Features, c.viaMapServer, c.validAreaDiff)
		})
	}
}

// countiesCompared is what checkCounties counts, joining the feed's typed
// view with GDAL's table on the county's FIPS code.
type countiesCompared struct {
	gdal, located, joined, invalid, repaired, recorded int
	nullHere, notMulti, notValid, areaOff, wrong       int
	worst                                              float64
}

// checkCounties compares feed's typed view with GDAL's load of the file;
// validAreaDiff bounds the relative area change of a valid county.
func checkCounties(t *testing.T, pool *pgxpool.Pool, feed string, features int, viaMapServer bool, validAreaDiff float64) {
	t.Helper()
	ctx := t.Context()
	var view, gtype string
	if err := pool.QueryRow(ctx, `SELECT view_name, geometry_type FROM feed_schemas WHERE jurisdiction = 'us' AND feed = $1`,
		feed).Scan(&view, &gtype); err != nil {
		t.Fatal(err)
	}
	var n countiesCompared
	q := fmt.Sprintf(`SELECT
		(SELECT count(*) FROM %[2]s)::int,
		(SELECT count(*) FROM %[2]s WHERE geom IS NOT NULL)::int,
		count(*)::int,
		count(*) FILTER (WHERE NOT ST_IsValid(g.geom))::int,
		count(*) FILTER (WHERE NOT ST_IsValid(g.geom) AND GeometryType(v.geom) = 'MULTIPOLYGON')::int,
		(SELECT invalid_geometries FROM polls WHERE jurisdiction = 'us' AND feed = $1 ORDER BY id DESC LIMIT 1),
		count(*) FILTER (WHERE v.geom IS NULL AND g.geom IS NOT NULL)::int,
		count(*) FILTER (WHERE GeometryType(v.geom) <> 'MULTIPOLYGON')::int,
		count(*) FILTER (WHERE NOT ST_IsValid(v.geom))::int,
		count(*) FILTER (WHERE ST_IsValid(g.geom) AND abs(ST_Area(v.geom) - ST_Area(g.geom)) > $2 * ST_Area(g.geom))::int,
		count(*) FILTER (WHERE NOT ST_IsValid(g.geom) AND abs(ST_Area(v.geom) - ST_Area(g.geom)) > 1e-3 * ST_Area(g.geom))::int,
		coalesce(max(abs(ST_Area(v.geom) - ST_Area(g.geom)) / nullif(ST_Area(g.geom), 0)) FILTER (WHERE NOT ST_IsValid(g.geom)), 0)
		FROM %[1]s v JOIN %[2]s g ON g.id = v.feature_id`, pgx.Identifier(strings.Split(view, ".")).Sanitize(), "gdal_file")
	if err := pool.QueryRow(ctx, q, feed, validAreaDiff).Scan(&n.gdal, &n.located, &n.joined, &n.invalid, &n.repaired, &n.recorded,
		&n.nullHere, &n.notMulti, &n.notValid, &n.areaOff, &n.wrong, &n.worst); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	t.Logf("%s: %d features (GDAL %d), %d invalid at the source, %d repaired as MultiPolygons (polls.invalid_geometries %d), "+
		"largest area change of a repaired county %.2g", feed, features, n.gdal, n.invalid, n.repaired, n.recorded, n.worst)
	want := n.gdal
	if viaMapServer {
		want = n.located
	}
	switch {
	case gtype != "MultiPolygon":
		t.Errorf("view geometry type %s, want MultiPolygon", gtype)
	case n.joined != want || features != want:
		t.Errorf("%d counties polled, %d joined with GDAL's %d, want %d", features, n.joined, n.gdal, want)
	case n.invalid == 0:
		t.Errorf("no invalid county at the source: the test proves nothing")
	case n.repaired != n.invalid:
		t.Errorf("%d counties invalid at the source, %d stored as MultiPolygons", n.invalid, n.repaired)
	case !viaMapServer && n.recorded != n.invalid, viaMapServer && (n.recorded == 0 || n.recorded > n.invalid):
		t.Errorf("%d counties invalid at the source, %d counted in polls.invalid_geometries", n.invalid, n.recorded)
	case n.nullHere > 0 || n.notMulti > 0 || n.notValid > 0:
		t.Errorf("typed view: %d NULL where GDAL has a geometry, %d not MultiPolygons, %d invalid", n.nullHere, n.notMulti, n.notValid)
	case n.areaOff > 0 || n.wrong > 0:
		t.Errorf("%d valid counties changed area; %d repaired ones by more than 0.1 %%", n.areaOff, n.wrong)
	}
}
