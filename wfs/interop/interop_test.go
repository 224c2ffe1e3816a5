// Package interop_test checks ingestd against a real WFS server that no one
// here wrote: MapServer 8 (Debian cgi-mapserver) serving the North Carolina
// counties of r-cran-sf's nc.gpkg (100 multipolygons, NAD27), as
// scripts/mapserver.sh sets it up.
//
// Every combination of WFS 1.1.0 / 2.0.0, GeoJSON / GML (3.1.1 for 1.1, 3.2
// for 2.0), paging (pages of 17, so 100 counties take 6 pages) or one
// request, and requested CRS EPSG:4267 / EPSG:4326 / none (the feed names
// no srsName: ingestd asks for WGS 84 when the format is GeoJSON) is polled
// through the real path: feeds.Manager → wfs.Client (Prepare, then Fetch
// through the breaker) → feeds/postgis.Store. Each poll must land
// resultType=hits features (100), and every county's stored geometry must
// match the source itself: nc.gpkg as GDAL's ogr2ogr loads it into the same
// database, in its own NAD27, transformed to EPSG:4326 by PostGIS: area (on
// the spheroid) within a relative 1e-6, centroid within 0.5 m. (Comparing
// with GDAL's reading of the same GeoJSON would hide a CRS both read
// wrong: MapServer's GeoJSON in the layer's NAD27, read as WGS 84, was
// 32.8 m off.)
//
// The server comes from INGESTD_MAPSERVER_URL (scripts/test.sh exports it),
// else scripts/mapserver.sh's default URL. Like the database tests, these
// skip when the server cannot be reached, except under CI=true, where they fail.
package interop_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/ingestd/ingestd/breaker"
	"github.com/ingestd/ingestd/config"
	"github.com/ingestd/ingestd/feeds"
	"github.com/ingestd/ingestd/internal/interoptest"
	"github.com/ingestd/ingestd/internal/interoptest/polltest"
	"github.com/ingestd/ingestd/migrations/pgtest"
	"github.com/ingestd/ingestd/source"
	"github.com/ingestd/ingestd/wfs"
)

// Tolerances of a stored county against GDAL's load of the same county.
// GML carries 6 decimals of a degree (≈ 0.1 m), GeoJSON 15 digits; both
// sides reproject NAD27 → WGS 84 with the same PROJ, so anything near these
// bounds is a decoding fault (swapped axes, a lost ring, a wrong SRID), not
// rounding.
const (
	maxAreaRelDiff = 1e-6
	maxCentroidM   = 0.5
	wantCounties   = 100
	pageSize       = 17
)

// combo is one way of asking MapServer for the counties.
type combo struct {
	version string // "1.1.0" or "2.0.0"
	gml     bool   // GML (3.1.1 for 1.1, 3.2 for 2.0) instead of GeoJSON
	paged   bool   // pages of pageSize, else one request
	srs     int    // requested CRS: 4267 (the layer's own), 4326, or 0: none
}

func (c combo) id() string {
	f := "geojson"
	if c.gml {
		f = "gml"
	}
	p := "onereq"
	if c.paged {
		p = fmt.Sprintf("page%d", pageSize)
	}
	crs := fmt.Sprintf("epsg%d", c.srs)
	if c.srs == 0 {
		crs = "nocrs"
	}
	return fmt.Sprintf("wfs%s_%s_%s_%s", strings.ReplaceAll(c.version, ".", ""), f, p, crs)
}

// url is the feed's URL: srsName=EPSG:n, or none for srs 0.
func (c combo) url(base string) string {
	if c.srs == 0 {
		return base
	}
	return fmt.Sprintf("%s?srsName=EPSG:%d", base, c.srs)
}

// feedYAML is the feed as an operator would configure it. GeoJSON feeds
// with a srsName leave the format to negotiation (output_format: auto):
// MapServer writes GeoJSON in the requested CRS without saying which, and
// negotiation is what learns it from srsName. GeoJSON feeds without one
// name their format, so that no capabilities are read: the request itself
// must ask for WGS 84 (else the counties land in NAD27 read as WGS 84). GML feeds name their format, and GML names its CRS.
func (c combo) feedYAML(base string) string {
	format := "auto"
	if c.srs == 0 {
		format = "application/json; subtype=geojson"
	}
	if c.gml {
		format = "text/xml; subtype=gml/3.1.1"
		if c.version == "2.0.0" {
			format = "application/gml+xml; version=3.2"
		}
	}
	size := 0
	if c.paged {
		size = pageSize
	}
	return fmt.Sprintf(`
      - id: %s
        kind: wfs
        url: "%s"
        type_name: nc
        version: "%s"
        output_format: "%s"
        page_size: %d
        id_property: FIPS
        sort_by: FIPS
`, c.id(), c.url(base), c.version, format, size)
}

func combos() []combo {
	var out []combo
	for _, v := range []string{"1.1.0", "2.0.0"} {
		for _, gml := range []bool{false, true} {
			for _, paged := range []bool{true, false} {
				for _, srs := range []int{4267, 4326, 0} {
					out = append(out, combo{version: v, gml: gml, paged: paged, srs: srs})
				}
			}
		}
	}
	return out
}

// mapServer is MapServer's WFS.
var mapServer = interoptest.Server{
	What:   "MapServer WFS",
	URLEnv: "INGESTD_MAPSERVER_URL", PortEnv: "INGESTD_MAPSERVER_PORT", DefaultPort: "18180", Path: "/wfs",
	Probe: "?SERVICE=WFS&REQUEST=GetCapabilities",
	Start: "start it with `export INGESTD_MAPSERVER_URL=$(scripts/mapserver.sh)` from the repo root",
}

// loadReference loads nc.gpkg with GDAL into table ogr_nc, in its own CRS
// (NAD27), and transforms it to EPSG:4326 with PostGIS: the source itself,
// read by neither MapServer nor ingestd.
func loadReference(t *testing.T, pool *pgxpool.Pool, gpkg string) {
	t.Helper()
	interoptest.OGR2OGR(t, pool, gpkg, "-nln", "ogr_nc", "-lco", "GEOMETRY_NAME=geom", "-lco", "SPATIAL_INDEX=NONE")
	ctx := t.Context()
	var srid int
	if err := pool.QueryRow(ctx, `SELECT DISTINCT ST_SRID(geom) FROM ogr_nc`).Scan(&srid); err != nil || srid != 4267 {
		t.Fatalf("ogr2ogr loaded nc.gpkg in SRID %d (%v); want its own 4267", srid, err)
	}
	if _, err := pool.Exec(ctx, `ALTER TABLE ogr_nc ALTER COLUMN geom TYPE geometry(MultiPolygon, 4326) USING ST_Transform(geom, 4326)`); err != nil {
		t.Fatal(err)
	}
}

type fixture struct {
	base   string
	pool   *pgxpool.Pool
	client *wfs.Client
	mgr    *feeds.Manager
	cfg    *config.Config
}

func setup(t *testing.T) *fixture {
	t.Helper()
	base := mapServer.URL(t)
	gpkg := interoptest.NCGpkg(t)
	pool := pgtest.Pool(t)
	ctx := t.Context()
	loadReference(t, pool, gpkg)
	// The centroid tolerance tells NAD27 from WGS 84 only if PROJ shifts
	// the datum here (about 20 m in North Carolina); without its grids or
	// parameters it would not, and a wrong SRID would pass unnoticed.
	var shift float64
	if err := pool.QueryRow(ctx, `SELECT ST_Distance(
		ST_Transform(ST_SetSRID(ST_MakePoint(-79.0, 35.5), 4267), 4326)::geography,
		ST_SetSRID(ST_MakePoint(-79.0, 35.5), 4326)::geography)`).Scan(&shift); err != nil {
		t.Fatal(err)
	}
	if shift < 10*maxCentroidM {
		t.Fatalf("PostGIS moves a NAD27 point by %.2f m into WGS 84; the test needs a datum shift well above its %.0f m tolerance", shift, maxCentroidM)
	}

	var doc strings.Builder
	doc.WriteString("jurisdictions:\n  - id: nc\n    feeds:")
	for _, c := range combos() {
		doc.WriteString(c.feedYAML(base))
	}
	var client *wfs.Client
	// The poll negotiates (Prepare), then fetches.
	mgr, cfg := polltest.Manager(t, pool, "interop.yaml", doc.String(), func(reg *breaker.Registry) feeds.Fetcher {
		client = wfs.NewClient(&http.Client{}, reg, nil, wfs.WithRequestTimeout(30*time.Second))
		return client
	})
	return &fixture{base: base, pool: pool, client: client, mgr: mgr, cfg: cfg}
}

// TestMapServer polls every combination and compares each county with GDAL's.
func TestMapServer(t *testing.T) {
	f := setup(t)
	type result struct {
		combo                combo
		maxArea, maxCentroid float64
	}
	var (
		mu      sync.Mutex
		results []result
	)
	t.Run("combos", func(t *testing.T) {
		for _, c := range combos() {
			t.Run(c.id(), func(t *testing.T) {
				t.Parallel()
				ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
				defer cancel()

				layer := source.Layer{Kind: wfs.Kind, URL: c.url(f.base), Settings: wfs.Settings{TypeName: "nc", Version: c.version}}
				hits, err := f.client.Hits(ctx, layer)
				if err != nil || hits != wantCounties {
					t.Fatalf("resultType=hits: %d, %v; want %d", hits, err, wantCounties)
				}

				res, err := f.mgr.Poll(ctx, "nc/"+c.id())
				if err != nil {
					t.Fatalf("poll: %v", err)
				}
				if res.Features != hits {
					t.Errorf("poll applied %d features; resultType=hits says %d", res.Features, hits)
				}
				wantPages := 1
				if c.paged {
					wantPages = (wantCounties + pageSize - 1) / pageSize
				}
				if res.Pages != wantPages {
					t.Errorf("poll fetched %d pages; want %d", res.Pages, wantPages)
				}

				cmp := compare(ctx, t, f.pool, "nc", c.id())
				if cmp.matched != wantCounties || cmp.nameMismatch != 0 {
					t.Errorf("%d stored counties joined GDAL's by FIPS (want %d), %d with another NAME; first unmatched ids: %v",
						cmp.matched, wantCounties, cmp.nameMismatch, cmp.unmatched)
				}
				if cmp.maxCentroidM > 1e6 {
					// Thousands of km: the counties landed in the ocean, which is
					// what reading latitude as longitude does. MapServer's WFS 1.1
					// GML writes srsName="EPSG:n" with latitude first for
					// geographic CRSs, whatever srsName was asked for.
					t.Errorf("axes swapped: stored centroids are up to %.0f km from GDAL's (%s); the %s decoder read %s as x/y",
						cmp.maxCentroidM/1000, cmp.worstCentroid, formatName(c), srsNote(c))
				} else if cmp.maxAreaRel > maxAreaRelDiff || cmp.maxCentroidM > maxCentroidM {
					t.Errorf("geometry differs from the source's: max relative area diff %.2e (%s), max centroid distance %.3f m (%s); want ≤ %.0e and ≤ %.1f m",
						cmp.maxAreaRel, cmp.worstArea, cmp.maxCentroidM, cmp.worstCentroid, maxAreaRelDiff, maxCentroidM)
				}
				t.Logf("%s: %d features in %d pages; max relative area diff %.2e, max centroid distance %.3f m",
					c.id(), res.Features, res.Pages, cmp.maxAreaRel, cmp.maxCentroidM)
				mu.Lock()
				results = append(results, result{c, cmp.maxAreaRel, cmp.maxCentroidM})
				mu.Unlock()
			})
		}
	})
	var maxArea, maxCentroid float64
	for _, r := range results {
		maxArea, maxCentroid = max(maxArea, r.maxArea), max(maxCentroid, r.maxCentroid)
	}
	t.Logf("%d of %d combinations compared with the source; over them: max relative area diff %.2e, max centroid distance %.3f m",
		len(results), len(combos()), maxArea, maxCentroid)
}

func formatName(c combo) string {
	switch {
	case !c.gml:
		return "GeoJSON"
	case c.version == "1.1.0":
		return "GML 3.1.1"
	}
	return "GML 3.2"
}

func srsNote(c combo) string {
	if c.gml && c.version == "1.1.0" {
		return fmt.Sprintf(`MapServer's srsName="EPSG:%d" (latitude first in its WFS 1.1 GML)`, c.srs)
	}
	return fmt.Sprintf("EPSG:%d", c.srs)
}

type comparison struct {
	matched, nameMismatch    int
	maxAreaRel, maxCentroidM float64
	worstArea, worstCentroid string
	unmatched                []string
}

// compare joins a feed's stored features to GDAL's counties by FIPS.
func compare(ctx context.Context, t *testing.T, pool *pgxpool.Pool, jurisdiction, feed string) comparison {
	t.Helper()
	var c comparison
	err := pool.QueryRow(ctx, `
		WITH j AS (
			SELECT f.feature_id, f.properties->>'NAME' AS name, o.name AS ogr_name,
			       abs(ST_Area(f.geom::geography) - ST_Area(o.geom::geography)) / ST_Area(o.geom::geography) AS area_rel,
			       ST_Distance(ST_Centroid(f.geom)::geography, ST_Centroid(o.geom)::geography) AS centroid_m
			FROM features f JOIN ogr_nc o ON o.fips = f.feature_id
			WHERE f.jurisdiction = $1 AND f.feed = $2
		)
		SELECT count(*)::int,
		       (count(*) FILTER (WHERE name IS DISTINCT FROM ogr_name))::int,
		       coalesce(max(area_rel), 0), coalesce(max(centroid_m), 0),
		       coalesce((SELECT name FROM j ORDER BY area_rel DESC LIMIT 1), ''),
		       coalesce((SELECT name FROM j ORDER BY centroid_m DESC LIMIT 1), ''),
		       coalesce((SELECT array_agg(feature_id ORDER BY feature_id) FROM (
		           SELECT feature_id FROM features f
		           WHERE f.jurisdiction = $1 AND f.feed = $2
		             AND NOT EXISTS (SELECT 1 FROM ogr_nc o WHERE o.fips = f.feature_id)
		           ORDER BY feature_id LIMIT 5) u), '{}')
		FROM j`, jurisdiction, feed).Scan(&c.matched, &c.nameMismatch, &c.maxAreaRel, &c.maxCentroidM,
		&c.worstArea, &c.worstCentroid, &c.unmatched)
	if err != nil {
		t.Fatalf("comparing with GDAL: %v", err)
	}
	return c
}

// TestMapServerNegotiation reads the real server's capabilities in both
// versions: what Prepare would pick for a feed that leaves everything to it.
func TestMapServerNegotiation(t *testing.T) {
	base := mapServer.URL(t)
	client := wfs.NewClient(&http.Client{}, nil, nil)
	for _, version := range []string{wfs.Auto, "1.1.0", "2.0.0"} {
		t.Run(version, func(t *testing.T) {
			layer := source.Layer{Kind: wfs.Kind, URL: base, Settings: wfs.Settings{TypeName: "nc", Version: version, OutputFormat: wfs.Auto}, PageSize: pageSize}
			caps, err := client.Capabilities(t.Context(), layer)
			if err != nil {
				t.Fatal(err)
			}
			if caps.Vendor != wfs.VendorMapServer {
				t.Errorf("vendor %q; want %q", caps.Vendor, wfs.VendorMapServer)
			}
			got, warnings, err := wfs.Negotiate(caps, layer)
			if err != nil {
				t.Fatal(err)
			}
			wantVersion := version
			if version == wfs.Auto {
				wantVersion = "2.0.0"
			}
			// The layer lists EPSG:4326 among its CRSs: the request asks for
			// it, and the GeoJSON is read as such (SRID 0).
			if s := got.Settings.(wfs.Settings); s.Version != wantVersion || !wfs.IsGeoJSONFormat(s.OutputFormat) || got.PageSize != pageSize || got.SRID != 0 || len(warnings) != 0 {
				t.Errorf("negotiated %+v, warnings %q; want version %s, GeoJSON, pages of %d, SRID 0", got, warnings, wantVersion, pageSize)
			}
			u, err := wfs.RequestURL(got, 0)
			if err != nil || u.Query().Get("srsName") != wfs.GeoJSONSRSName {
				t.Errorf("request %v (%v); want srsName=%s", u, err, wfs.GeoJSONSRSName)
			}
		})
	}
}
