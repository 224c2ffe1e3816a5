package interop_test

import (
	"context"
	"fmt"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/ingestd/ingestd/config"
	"github.com/ingestd/ingestd/feeds"
	"github.com/ingestd/ingestd/feeds/postgis"
	"github.com/ingestd/ingestd/internal/interoptest"
	"github.com/ingestd/ingestd/internal/kindconf"
	"github.com/ingestd/ingestd/migrations/pgtest"
	"github.com/ingestd/ingestd/wfs/wfstest"
)

// Typed layers against GDAL: ogrinfo reads a feed's typed view (PG:) and
// the source layer, and must list the same fields with the same types,
// modulo the widenings docs/querying.md's "Typed layers" documents (GDAL's Integer
// is bigint, Integer64 to ogrinfo), the same geometry type and SRID; and
// every feature's typed values must equal what ogr2ogr loads from the
// same source.

// ogrLayer is what `ogrinfo -so` says of a layer.
type ogrLayer struct {
	geometry string
	epsg     string
	fields   []string // name:type in order
}

var (
	ogrField = regexp.MustCompile(`^([^ :][^:]*): ([A-Za-z0-9()]+) \(`)
	ogrEPSG  = regexp.MustCompile(`^    ID\["EPSG",([0-9]+)\]\]$`)
)

// ogrinfo runs `ogrinfo -so` on layer of dataset and parses it; env is
// the environment for dataset (interoptest.PGDataset), nil for this
// process's.
func ogrinfo(t *testing.T, env []string, dataset, layer string) ogrLayer {
	t.Helper()
	out := interoptest.GDAL(t, env, "ogrinfo", "-so", "-nocount", "-noextent", dataset, layer)
	var l ogrLayer
	for _, line := range strings.Split(string(out), "\n") {
		if g, ok := strings.CutPrefix(line, "Geometry: "); ok {
			l.geometry = g
		}
		if m := ogrEPSG.FindStringSubmatch(line); m != nil {
			l.epsg = m[1] // the last one is the layer's CRS
		}
		if m := ogrField.FindStringSubmatch(line); m != nil && !strings.HasPrefix(line, "Geometry") &&
			!strings.HasPrefix(line, "FID Column") && !strings.HasPrefix(line, "Layer name") {
			l.fields = append(l.fields, m[1]+":"+m[2])
		}
	}
	return l
}

// ogrGeometryTypes lists the geometry types of the layer's features as
// `ogrinfo -al -geom=SUMMARY` reads them.
func ogrGeometryTypes(t *testing.T, dataset, layer string) []string {
	t.Helper()
	out := interoptest.GDAL(t, nil, "ogrinfo", "-ro", "-al", "-geom=SUMMARY", dataset, layer)
	set := map[string]bool{}
	for _, line := range strings.Split(string(out), "\n") {
		if g, _, ok := strings.Cut(strings.TrimSpace(line), " : "); ok && strings.ToUpper(g) == g && g != "" {
			set[g] = true
		}
	}
	return slices.Sorted(func(yield func(string) bool) {
		for g := range set {
			if !yield(g) {
				return
			}
		}
	})
}

// widened maps a source field type to the one the typed view has, by
// the documented widenings.
func widened(field string) string {
	name, typ, _ := strings.Cut(field, ":")
	switch typ {
	case "Integer":
		typ = "Integer64" // every integer is bigint
	}
	return name + ":" + typ
}

// viewOwn are the typed view's fields that are not the source's (with
// the layer table's bookkeeping, ingestd_…).
var viewOwn = []string{"feature_id:String", "first_seen_at:DateTime", "changed_at:DateTime"}

// checkFields compares the view's fields with the source's.
func checkFields(t *testing.T, view, src ogrLayer) {
	t.Helper()
	var got []string
	for _, f := range view.fields {
		if !slices.Contains(viewOwn, f) && !strings.HasPrefix(f, "ingestd_") {
			got = append(got, f)
		}
	}
	var want []string
	for _, f := range src.fields {
		if !strings.HasPrefix(f, "gml_id:") && !strings.HasPrefix(f, "id:") {
			want = append(want, widened(f))
		}
	}
	if !slices.Equal(got, want) {
		t.Errorf("typed view's fields\n got %v\nwant %v (the source's, widened)", got, want)
	}
	for _, f := range viewOwn {
		if !slices.Contains(view.fields, f) {
			t.Errorf("typed view lacks %s: %v", f, view.fields)
		}
	}
}

// loadWithGDAL loads layer of dataset into table as GDAL types it.
func loadWithGDAL(t *testing.T, pool *pgxpool.Pool, dataset, layer, table string, extra ...string) {
	t.Helper()
	args := append([]string{dataset}, extra...)
	args = append(args, "-nln", table, "-lco", "LAUNDER=NO", "-lco", "GEOMETRY_NAME=geom", "-lco", "SPATIAL_INDEX=NONE",
		"-t_srs", "EPSG:4326", "-overwrite")
	if layer != "" {
		args = append(args, layer)
	}
	interoptest.OGR2OGR(t, pool, args...)
}

// compareValues compares, feature by feature joined on key, every
// attribute column of the typed view with GDAL's table: typed values must
// be equal (NULL with NULL). It returns the features compared.
func compareValues(t *testing.T, pool *pgxpool.Pool, view, gdal, key, jurisdiction, feed string) int {
	t.Helper()
	ctx := t.Context()
	rows, err := pool.Query(ctx, `SELECT view_column FROM feed_columns WHERE jurisdiction = $1 AND feed = $2
		AND removed_at IS NULL ORDER BY ordinal`, jurisdiction, feed)
	if err != nil {
		t.Fatal(err)
	}
	cols, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil || len(cols) == 0 {
		t.Fatalf("feed_columns of %s/%s: %v, %v", jurisdiction, feed, cols, err)
	}
	var diffs []string
	for _, c := range cols {
		id := pgx.Identifier{c}.Sanitize()
		q := fmt.Sprintf(`SELECT count(*), min(v.%[2]s::text) FROM %[1]s v JOIN %[3]s g ON g.%[4]s::text = v.%[4]s::text
			WHERE v.%[2]s IS DISTINCT FROM g.%[2]s`, pgx.Identifier(strings.Split(view, ".")).Sanitize(), id, pgx.Identifier{gdal}.Sanitize(),
			pgx.Identifier{key}.Sanitize())
		var n int
		var example *string
		if err := pool.QueryRow(ctx, q).Scan(&n, &example); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		if n > 0 {
			diffs = append(diffs, fmt.Sprintf("%s: %d features differ (e.g. %v)", c, n, deref(example)))
		}
	}
	if len(diffs) > 0 {
		t.Errorf("typed view %s differs from GDAL's load: %s", view, strings.Join(diffs, "; "))
	}
	var matched int
	q := fmt.Sprintf(`SELECT count(*) FROM %s v JOIN %s g ON g.%s::text = v.%s::text`, pgx.Identifier(strings.Split(view, ".")).Sanitize(),
		pgx.Identifier{gdal}.Sanitize(), pgx.Identifier{key}.Sanitize(), pgx.Identifier{key}.Sanitize())
	if err := pool.QueryRow(ctx, q).Scan(&matched); err != nil {
		t.Fatal(err)
	}
	return matched
}

func deref(s *string) string {
	if s == nil {
		return "NULL"
	}
	return *s
}

// TestTypedViewMatchesMapServer: the nc layer polled as GML 3.2 (typed by
// DescribeFeatureType) and as GeoJSON, in EPSG:4326. ogrinfo on each
// typed view lists the source layer's fields and types (widened), its
// geometry type is the type of every source feature, its SRID the
// source's as requested; every county's values equal ogr2ogr's load of
// the same WFS layer.
func TestTypedViewMatchesMapServer(t *testing.T) {
	f := setup(t)
	pg, env := interoptest.PGDataset(f.pool)
	source := "WFS:" + f.base + "?VERSION=2.0.0&SRSNAME=urn:ogc:def:crs:EPSG::4326"
	src := ogrinfo(t, nil, source, "nc")
	srcTypes := ogrGeometryTypes(t, source, "nc")
	loadWithGDAL(t, f.pool, source, "nc", "gdal_wfs_nc")
	for _, id := range []string{"wfs200_gml_page17_epsg4326", "wfs200_geojson_page17_epsg4326", "wfs110_gml_onereq_epsg4326"} {
		t.Run(id, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
			defer cancel()
			if _, err := f.mgr.Poll(ctx, "nc/"+id); err != nil {
				t.Fatalf("poll: %v", err)
			}
			var view, declaredBy string
			if err := f.pool.QueryRow(ctx, `SELECT view_name, coalesce(declared_by, '') FROM feed_schemas
				WHERE jurisdiction = 'nc' AND feed = $1`, id).Scan(&view, &declaredBy); err != nil {
				t.Fatal(err)
			}
			if declaredBy != "wfs DescribeFeatureType" {
				t.Errorf("declared by %q, want DescribeFeatureType", declaredBy)
			}
			v := ogrinfo(t, env, pg, view)
			checkFields(t, v, src)
			if got, want := strings.ReplaceAll(strings.ToUpper(v.geometry), " ", ""), promoted(srcTypes); got != want {
				t.Errorf("view geometry %q, want %s: the source's features are %v", v.geometry, want, srcTypes)
			}
			if v.epsg != src.epsg || v.epsg != "4326" {
				t.Errorf("view EPSG:%s, source EPSG:%s", v.epsg, src.epsg)
			}
			if n := compareValues(t, f.pool, view, "gdal_wfs_nc", "FIPS", "nc", id); n != wantCounties {
				t.Errorf("compared %d counties, want %d", n, wantCounties)
			}
			t.Logf("%s: view %s: %d fields as the source's, %s EPSG:%s, %d counties equal to GDAL's", id, view,
				len(v.fields)-len(viewOwn), v.geometry, v.epsg, wantCounties)
		})
	}
}

// promoted is the view's geometry type for features of types: the one
// type, or the multi-part one when single and multi-part ones of one
// family mix (the documented promotion: MapServer sends a county of one
// ring as a Polygon, of several as a MultiPolygon), else GEOMETRY.
func promoted(types []string) string {
	switch {
	case len(types) == 1:
		return types[0]
	case len(types) == 2 && "MULTI"+types[1] == types[0]:
		return types[0]
	}
	return "GEOMETRY"
}

// TestTypedViewMatchesDemoFeeds: the demo's feeds (testdata/feeds, served
// as by scripts/demo.sh) polled as jurisdictions.yaml configures them;
// their types are inferred from the values (the fixture server describes
// no feature type), and must be GDAL's types of the same GeoJSON files,
// widened; every feature's values must equal ogr2ogr's load of the files.
func TestTypedViewMatchesDemoFeeds(t *testing.T) {
	pool := pgtest.Pool(t)
	ctx := t.Context()
	pg, env := interoptest.PGDataset(pool)
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
	doc := fmt.Sprintf(`
jurisdictions:
  - id: raleigh
    feeds:
      - {id: zoning, kind: wfs, url: "%[1]s/geoserver/wfs", type_name: zoning, page_size: 10, id_property: zone_id, sort_by: zone_id}
      - {id: addresses, kind: wfs, url: "%[1]s/geoserver/wfs", type_name: addresses, version: 1.1.0, page_size: 50, sort_by: address_id}
  - id: boulder
    feeds:
      - {id: roads, kind: geojson, url: "%[2]s/geojson/roads.geojson", id_property: segment_id}
`, servers["raleigh"], servers["boulder"])
	cfg, err := config.Parse("demo.yaml", []byte(doc), nil)
	if err != nil {
		t.Fatal(err)
	}
	mgr := feeds.NewManager(postgis.New(pool), feeds.NewFetchers(kindconf.FetcherDeps{}))
	t.Cleanup(mgr.Stop)
	if err := mgr.Update(ctx, cfg); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ jurisdiction, feed, file, key string }{
		{"raleigh", "zoning", "raleigh/zoning.geojson", "zone_id"},
		{"raleigh", "addresses", "raleigh/addresses.geojson", "address_id"},
		{"boulder", "roads", "boulder/roads.geojson", "segment_id"},
	} {
		t.Run(c.jurisdiction+"/"+c.feed, func(t *testing.T) {
			if _, err := mgr.Poll(ctx, c.jurisdiction+"/"+c.feed); err != nil {
				t.Fatalf("poll: %v", err)
			}
			var view string
			if err := pool.QueryRow(ctx, `SELECT ingestd_feed_view($1, $2)`, c.jurisdiction, c.feed).Scan(&view); err != nil {
				t.Fatal(err)
			}
			file := filepath.Join("..", "..", "testdata", "feeds", c.file)
			if _, err := os.Stat(file); err != nil {
				t.Fatal(err)
			}
			srcLayer := strings.TrimSuffix(filepath.Base(c.file), ".geojson")
			src := ogrinfo(t, nil, file, srcLayer)
			v := ogrinfo(t, env, pg, view)
			checkFields(t, v, src)
			if strings.ReplaceAll(v.geometry, " ", "") != strings.ReplaceAll(src.geometry, " ", "") || v.epsg != src.epsg {
				t.Errorf("view %s EPSG:%s, source %s EPSG:%s", v.geometry, v.epsg, src.geometry, src.epsg)
			}
			table := "gdal_" + c.feed
			loadWithGDAL(t, pool, file, "", table)
			var want int
			if err := pool.QueryRow(ctx, fmt.Sprintf(`SELECT count(*) FROM %s`, table)).Scan(&want); err != nil {
				t.Fatal(err)
			}
			if n := compareValues(t, pool, view, table, c.key, c.jurisdiction, c.feed); n != want || n == 0 {
				t.Errorf("compared %d features, GDAL loaded %d", n, want)
			}
			t.Logf("%s: %d fields as GDAL's, %s EPSG:%s, %d features equal", view, len(v.fields)-len(viewOwn), v.geometry, v.epsg, want)
		})
	}
}
