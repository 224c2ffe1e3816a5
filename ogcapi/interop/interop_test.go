// Package interop_test checks the ogcapi kind against a real OGC API –
// Features server that no one here wrote: MapServer 8.0 (Debian
// cgi-mapserver) serving the North Carolina counties of r-cran-sf's
// nc.gpkg (100 multipolygons, NAD27) as scripts/mapserver.sh sets it up,
// with GDAL's OAPIF driver reading the same collections as the reference
// per feature, and the source file transformed by PostGIS as the second.
//
// Collection nc_sql (an OGR SQL layer: MapServer pages it, offset works)
// must load complete: 100 rows, 100 distinct ids, each county equal to
// GDAL's reading (relative area 1e-9, centroid 0.01 m) and to the source
// within 0.2 m (Hausdorff distance, in UTM 17N) and 1e-4 relative area,
// except the multi-part counties that MapServer 8.0 damages (the other
// parts' outer rings written as holes, MapServer#7177), which the test
// names. Collection nc (the GeoPackage paged by OGR: 8.0.0 ignores
// offset, MapServer#6613) must fail the poll naming the repeated page, with
// nothing applied, where GDAL loads 102 rows with 17 distinct ids.
//
// The server comes from INGESTD_OGCAPI_URL (scripts/test.sh exports it),
// else scripts/mapserver.sh's default. Like the database tests, these skip
// when the server cannot be reached, except under CI=true, where they fail.
package interop_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/ingestd/ingestd/feeds"
	"github.com/ingestd/ingestd/internal/interoptest"
	"github.com/ingestd/ingestd/internal/interoptest/polltest"
	"github.com/ingestd/ingestd/migrations/pgtest"
)

// Areas and distances are planar in UTM zone 17N (EPSG:32617), which
// covers North Carolina: PostGIS's spheroidal area refuses the polygons
// MapServer damages (their "holes" lie outside their shells).
//
// Tolerances: against GDAL, which reads the same JSON, a county must be the
// same; against the source, within MapServer's 6 decimals (≈ 0.1 m).
const (
	maxAreaRelGDAL   = 1e-9
	maxCentroidGDALM = 0.01
	maxSourceM       = 0.2
	maxAreaRelSource = 1e-4
	pageSize         = 17
	wantCounties     = 100
)

// mapServer is MapServer's OGC API landing page.
var mapServer = interoptest.Server{
	What:   "MapServer OGC API",
	URLEnv: "INGESTD_OGCAPI_URL", PortEnv: "INGESTD_MAPSERVER_PORT", DefaultPort: "18180", Path: "/cgi-bin/mapserv/nc/ogcapi",
	Probe: "/conformance?f=json",
	Start: "start it with `scripts/mapserver.sh start` and export INGESTD_OGCAPI_URL=$(scripts/mapserver.sh ogcapi-url)",
}

// ogr2ogr loads src (args) into table name of the database of pool.
func ogr2ogr(t *testing.T, pool *pgxpool.Pool, name string, args ...string) {
	t.Helper()
	args = append(args, "-nln", name, "-lco", "GEOMETRY_NAME=geom", "-lco", "SPATIAL_INDEX=NONE", "-nlt", "GEOMETRY")
	interoptest.OGR2OGR(t, pool, args...)
}

type fixture struct {
	base string
	pool *pgxpool.Pool
	mgr  *feeds.Manager
}

func setup(t *testing.T) *fixture {
	t.Helper()
	base := mapServer.URL(t)
	gpkg := interoptest.NCGpkg(t)
	pool := pgtest.Pool(t)
	// The references: the source as it is (NAD27), and GDAL's OAPIF driver
	// reading both collections from the same server, in pages of 17 (its
	// default is 10).
	ogr2ogr(t, pool, "src_nc", gpkg, "nc.gpkg")
	for _, c := range []string{"nc_sql", "nc"} {
		ogr2ogr(t, pool, "gdal_"+c, "OAPIF:"+base+"/collections/"+c, "-oo", fmt.Sprintf("PAGE_SIZE=%d", pageSize))
	}
	yaml := fmt.Sprintf(`
jurisdictions:
  - id: nc
    feeds:
      - id: nc_sql
        kind: ogcapi
        url: %[1]s/collections/nc_sql
        page_size: %[2]d
      - id: nc
        kind: ogcapi
        url: %[1]s
        collection: nc
        page_size: %[2]d
`, base, pageSize)
	mgr, _ := polltest.Manager(t, pool, "interop.yaml", yaml, nil)
	return &fixture{base: base, pool: pool, mgr: mgr}
}

// countyDiff is one county compared with GDAL's reading and the source.
type countyDiff struct {
	fips, name                string
	parts                     int // in the source
	areaRelGDAL, centroidGDAL float64
	hausdorffSrc, areaRelSrc  float64
	gdalValid                 bool // GDAL's reading (the server's geometry as sent) is valid
}

// TestMapServerOGCAPI polls both collections and compares them.
func TestMapServerOGCAPI(t *testing.T) {
	f := setup(t)
	ctx := t.Context()

	t.Run("offset works: complete, equal to GDAL and the source", func(t *testing.T) {
		res, err := f.mgr.Poll(ctx, "nc/nc_sql")
		if err != nil {
			t.Fatal(err)
		}
		if want := (wantCounties + pageSize - 1) / pageSize; res.Pages != want {
			t.Errorf("%d pages, want %d", res.Pages, want)
		}
		var rows, ids, src int
		if err := f.pool.QueryRow(ctx, `SELECT count(*), count(DISTINCT feature_id), (SELECT count(DISTINCT "fips") FROM src_nc)
			FROM features WHERE jurisdiction = 'nc' AND feed = 'nc_sql'`).Scan(&rows, &ids, &src); err != nil {
			t.Fatal(err)
		}
		if rows != src || ids != src || src != wantCounties {
			t.Fatalf("stored %d rows, %d distinct ids; the source has %d counties", rows, ids, src)
		}
		diffs := compare(t, f.pool)
		if len(diffs) != wantCounties {
			t.Fatalf("compared %d counties, want %d (ids that GDAL or the source lack?)", len(diffs), wantCounties)
		}
		var damaged []string
		var worst countyDiff
		for _, d := range diffs {
			if d.hausdorffSrc > maxSourceM || d.areaRelSrc > maxAreaRelSource {
				t.Errorf("county %s (%s) differs from the source: Hausdorff %.3f m, relative area %.3g", d.fips, d.name, d.hausdorffSrc, d.areaRelSrc)
			}
			if !d.gdalValid {
				// MapServer#7177 (fixed in 8.6): the other parts' outer
				// rings come as holes, so the polygon the server sent is
				// invalid. The store repairs it (invalid_geometry: repair),
				// which gives back the source's county (checked above),
				// where GDAL keeps it as sent: named here, and not
				// compared with GDAL's reading.
				damaged = append(damaged, fmt.Sprintf("%s (%s, %d parts in the source; GDAL's reading is off by %.3g of the area)",
					d.name, d.fips, d.parts, d.areaRelGDAL))
				if d.parts < 2 {
					t.Errorf("county %s (%s) came invalid from the server but has one part in the source", d.fips, d.name)
				}
				continue
			}
			if d.areaRelGDAL > maxAreaRelGDAL || d.centroidGDAL > maxCentroidGDALM {
				t.Errorf("county %s (%s) differs from GDAL's reading: relative area %.3g, centroid %.4f m", d.fips, d.name, d.areaRelGDAL, d.centroidGDAL)
			}
			worst.areaRelGDAL = max(worst.areaRelGDAL, d.areaRelGDAL)
			worst.centroidGDAL = max(worst.centroidGDAL, d.centroidGDAL)
		}
		for _, d := range diffs {
			worst.hausdorffSrc = max(worst.hausdorffSrc, d.hausdorffSrc)
			worst.areaRelSrc = max(worst.areaRelSrc, d.areaRelSrc)
		}
		t.Logf("%d undamaged counties against GDAL: relative area ≤ %.3g, centroid ≤ %.4f m; all %d against the source: Hausdorff ≤ %.3f m, relative area ≤ %.3g",
			len(diffs)-len(damaged), worst.areaRelGDAL, worst.centroidGDAL, len(diffs), worst.hausdorffSrc, worst.areaRelSrc)
		if len(damaged) > 0 {
			t.Logf("multi-part counties damaged by MapServer 8.0 (#7177: other parts' outer rings written as holes): %s", strings.Join(damaged, "; "))
		}
		if res.InvalidGeometries != len(damaged) {
			t.Errorf("the poll counted %d invalid geometries; the server damaged %d counties", res.InvalidGeometries, len(damaged))
		}
	})

	t.Run("offset ignored: refused, nothing applied", func(t *testing.T) {
		_, err := f.mgr.Poll(ctx, "nc/nc")
		if err == nil || !strings.Contains(err.Error(), "page 1 repeats page 0") {
			t.Fatalf("poll of the collection whose offset is ignored: %v, want it to name the repeated page", err)
		}
		t.Logf("ingestd: %v", err)
		var stored int
		if err := f.pool.QueryRow(ctx, `SELECT count(*) FROM features WHERE jurisdiction = 'nc' AND feed = 'nc'`).Scan(&stored); err != nil {
			t.Fatal(err)
		}
		if stored != 0 {
			t.Errorf("%d features applied from a refused poll", stored)
		}
		var rows, ids int
		if err := f.pool.QueryRow(ctx, `SELECT count(*), count(DISTINCT id) FROM gdal_nc`).Scan(&rows, &ids); err != nil {
			t.Fatal(err)
		}
		t.Logf("GDAL's OAPIF driver loaded the same collection as %d rows with %d distinct ids", rows, ids)
		if ids >= wantCounties {
			t.Errorf("GDAL read %d distinct ids: the server no longer ignores offset, and this test no longer shows what it is for", ids)
		}
	})
}

// compare measures every stored county of feed nc_sql against GDAL's
// reading (gdal_nc_sql, joined on the feature id) and the source (src_nc,
// joined on FIPS, transformed by PostGIS).
func compare(t *testing.T, pool *pgxpool.Pool) []countyDiff {
	t.Helper()
	rows, err := pool.Query(t.Context(), `
		SELECT f.feature_id, s."name", ST_NumGeometries(s.geom),
			abs(ST_Area(ST_Transform(f.geom, 32617)) - ST_Area(ST_Transform(g.geom, 32617))) / ST_Area(ST_Transform(g.geom, 32617)),
			ST_Distance(ST_Transform(ST_Centroid(f.geom), 32617), ST_Transform(ST_Centroid(g.geom), 32617)),
			ST_HausdorffDistance(ST_Transform(f.geom, 32617), ST_Transform(s.geom, 32617)),
			abs(ST_Area(ST_Transform(f.geom, 32617)) - ST_Area(ST_Transform(s.geom, 32617))) / ST_Area(ST_Transform(s.geom, 32617)),
			ST_IsValid(g.geom)
		FROM features f
		JOIN gdal_nc_sql g ON g.id::text = f.feature_id
		JOIN src_nc s ON s."fips" = f.feature_id
		WHERE f.jurisdiction = 'nc' AND f.feed = 'nc_sql'
		ORDER BY f.feature_id`)
	if err != nil {
		t.Fatal(err)
	}
	var out []countyDiff
	for rows.Next() {
		var d countyDiff
		if err := rows.Scan(&d.fips, &d.name, &d.parts, &d.areaRelGDAL, &d.centroidGDAL, &d.hausdorffSrc, &d.areaRelSrc, &d.gdalValid); err != nil {
			t.Fatal(err)
		}
		out = append(out, d)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	slices.SortFunc(out, func(a, b countyDiff) int { return strings.Compare(a.fips, b.fips) })
	return out
}
