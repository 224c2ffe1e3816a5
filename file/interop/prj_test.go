package interop_test

import (
	"bytes"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/ingestd/ingestd/internal/interoptest"
	"github.com/ingestd/ingestd/internal/interoptest/polltest"
	"github.com/ingestd/ingestd/migrations/pgtest"
)

// TestPrjIdentifiedInPoll polls zipped Shapefiles whose .prj GDAL wrote
// in ESRI's WKT with no code, through the file kind into PostGIS: three
// Raleigh parcels in NAD83(2011) / North Carolina (ftUS) (EPSG:6543, the
// .prj named NAD_1983_2011_StatePlane_North_Carolina_FIPS_3200_Ft_US),
// identified by that name; the same under a name no table has, identified
// by its parameters; each stored within 1 cm of GDAL's reading of the same
// zip, and the poll's record (polls.crs, polls.crs_identified_by) saying
// which way. A .prj on a datum nothing knows fails naming what it saw,
// with nothing applied. The files are served from a loopback server.
func TestPrjIdentifiedInPoll(t *testing.T) {
	gen := t.TempDir()
	points := filepath.Join(gen, "parcels.geojson")
	if err := os.WriteFile(points, []byte(`{"type":"FeatureCollection","features":[
{"type":"Feature","properties":{"PIN":1},"geometry":{"type":"Point","coordinates":[-78.6382,35.7796]}},
{"type":"Feature","properties":{"PIN":2},"geometry":{"type":"Point","coordinates":[-78.7811,35.7915]}},
{"type":"Feature","properties":{"PIN":3},"geometry":{"type":"Point","coordinates":[-78.5,35.9]}}]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	interoptest.GDAL(t, os.Environ(), "ogr2ogr", "-f", "ESRI Shapefile", "-s_srs", "EPSG:4326", "-t_srs", "EPSG:6543", filepath.Join(gen, "parcels.shp"), points)
	part := func(ext string) []byte { return read(t, filepath.Join(gen, "parcels"+ext)) }
	prj := part(".prj")
	if !bytes.HasPrefix(prj, []byte(`PROJCS["NAD_1983_2011_StatePlane_North_Carolina_FIPS_3200_Ft_US"`)) {
		t.Fatalf("GDAL wrote the .prj %s", prj)
	}
	renamed := regexp.MustCompile(`^PROJCS\["[^"]*"`).ReplaceAll(prj, []byte(`PROJCS["Wake_Parcels_Grid"`))
	nowhere := bytes.Replace(renamed, []byte(`GEOGCS["GCS_NAD_1983_2011",DATUM["D_NAD_1983_2011"`), []byte(`GEOGCS["GCS_Nowhere",DATUM["D_Nowhere"`), 1)
	zips := map[string][]byte{}
	for name, p := range map[string][]byte{"named": prj, "renamed": renamed, "nowhere": nowhere} {
		zips[name] = zipOf(t, "parcels.shp", part(".shp"), "parcels.shx", part(".shx"), "parcels.dbf", part(".dbf"), "parcels.prj", p)
		if err := os.WriteFile(filepath.Join(gen, name+".zip"), zips[name], 0o644); err != nil {
			t.Fatal(err)
		}
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, ok := zips[strings.TrimSuffix(strings.TrimPrefix(r.URL.Path, "/"), ".zip")]
		if !ok {
			http.NotFound(w, r)
			return
		}
		w.Write(b)
	}))
	t.Cleanup(srv.Close)
	pool := pgtest.Pool(t)
	mgr, _ := polltest.Manager(t, pool, "prj.yaml", fmt.Sprintf(`
jurisdictions:
  - id: wake
    feeds:
      - {id: named, kind: file, url: %[1]s/named.zip, id_property: PIN}
      - {id: renamed, kind: file, url: %[1]s/renamed.zip, id_property: PIN}
      - {id: nowhere, kind: file, url: %[1]s/nowhere.zip, id_property: PIN}
`, srv.URL), nil)
	ctx := t.Context()
	for _, tc := range []struct{ feed, by string }{{"named", "name"}, {"renamed", "parameters"}} {
		t.Run(tc.feed, func(t *testing.T) {
			gdal := "gdal_" + tc.feed
			interoptest.OGR2OGR(t, pool, "/vsizip/"+filepath.Join(gen, tc.feed+".zip")+"/parcels.shp", "-nln", gdal, "-lco", "GEOMETRY_NAME=geom")
			if _, err := mgr.Poll(ctx, "wake/"+tc.feed); err != nil {
				t.Fatal(err)
			}
			var n int
			var worst float64
			if err := pool.QueryRow(ctx, fmt.Sprintf(`
				SELECT count(*), coalesce(max(ST_Distance(f.geom::geography, ST_Transform(g.geom, 4326)::geography)), 1e9)
				FROM features f JOIN %s g ON g.pin::text = f.feature_id
				WHERE f.jurisdiction = 'wake' AND f.feed = $1`, gdal), tc.feed).Scan(&n, &worst); err != nil {
				t.Fatal(err)
			}
			t.Logf("%s: %d parcels, worst %.4f m from GDAL's reading", tc.feed, n, worst)
			if n != 3 || worst > 0.01 {
				t.Errorf("%d parcels matched GDAL's, worst %.4f m; want 3 within 0.01 m", n, worst)
			}
			var code, by string
			if err := pool.QueryRow(ctx, `SELECT coalesce(crs, ''), coalesce(crs_identified_by, '') FROM polls
				WHERE jurisdiction = 'wake' AND feed = $1 AND status = 'succeeded' ORDER BY id DESC LIMIT 1`, tc.feed).Scan(&code, &by); err != nil {
				t.Fatal(err)
			}
			if code != "EPSG:6543" || by != tc.by {
				t.Errorf("polls.crs %q, crs_identified_by %q; want EPSG:6543, %s", code, by, tc.by)
			}
		})
	}
	t.Run("nowhere", func(t *testing.T) {
		_, err := mgr.Poll(ctx, "wake/nowhere")
		want := `.prj: the projected CRS "Wake_Parcels_Grid" (projection "Lambert_Conformal_Conic", datum "D_Nowhere", unit "US survey foot" = 0.3048006096 m) matches no EPSG or ESRI CRS`
		if err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "wake/nowhere") {
			t.Fatalf("poll: %v\nwant it to name the feed and contain %q", err, want)
		}
		t.Log(err)
		var n int
		if err := pool.QueryRow(ctx, `SELECT count(*) FROM features WHERE jurisdiction = 'wake' AND feed = 'nowhere'`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n != 0 {
			t.Errorf("%d features applied from a refused poll", n)
		}
	})
}
