package crs_test

import (
	"bytes"
	"database/sql"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/twpayne/go-geom"
	_ "modernc.org/sqlite" // proj.db

	"github.com/ingestd/ingestd/crs"
	"github.com/ingestd/ingestd/internal/interoptest"
	"github.com/ingestd/ingestd/migrations/pgtest"
	"github.com/ingestd/ingestd/shapefile"
)

// maxPlacementM is how far ingestd's placement of a point may be from
// GDAL's: the bar.
const maxPlacementM = 1.0

// quotas are the test's sample: 150 US CRSs as counties publish them and
// 50 of other datums, each category's CRSs (those ESRI names that
// PostGIS's spatial_ref_sys has) sorted by code and picked evenly.
var quotas = []struct {
	category  string
	name, not *regexp.Regexp
	n         int
}{
	{"NAD27 State Plane", regexp.MustCompile(`^NAD_1927_StatePlane_`), nil, 20},
	{"NAD83 State Plane", regexp.MustCompile(`^NAD_1983_StatePlane_`), nil, 35},
	{"NAD83(HARN) State Plane", regexp.MustCompile(`^NAD_1983_HARN_StatePlane_`), nil, 20},
	{"NAD83(NSRS2007) State Plane", regexp.MustCompile(`^NAD_1983_NSRS2007_StatePlane_`), nil, 20},
	{"NAD83(2011) State Plane", regexp.MustCompile(`^NAD_1983_2011_StatePlane_`), nil, 25},
	{"Wisconsin WISCRS", regexp.MustCompile(`WISCRS`), nil, 15},
	{"Minnesota county", regexp.MustCompile(`_Adj_MN_`), nil, 15},
	{"elsewhere", regexp.MustCompile(`.`), regexp.MustCompile(`NAD_?19(27|83)|NAD(27|83)`), 50},
}

// target is one sampled CRS: its code, the name ESRI gives it, its
// category and a point near the middle of its area of use.
type target struct {
	code, name, category string
	srid                 int
	lon, lat             float64
}

// layer is the Shapefile's layer name for the CRS (GDAL's VRT names it).
func (t target) layer() string { return strings.ReplaceAll(strings.ToLower(t.code), ":", "_") }

// projDB is PROJ's database: $PROJ_DATA (or $PROJ_LIB)/proj.db, else
// Debian's.
func projDB(t *testing.T) *sql.DB {
	t.Helper()
	p := "/usr/share/proj/proj.db"
	for _, env := range []string{"PROJ_DATA", "PROJ_LIB"} {
		if d := os.Getenv(env); d != "" {
			p = filepath.Join(strings.Split(d, string(os.PathListSeparator))[0], "proj.db")
			break
		}
	}
	if _, err := os.Stat(p); err != nil {
		interoptest.Unavailable(t, fmt.Sprintf("PROJ's database: %v (Debian proj-data; set PROJ_DATA)", err))
	}
	db, err := sql.Open("sqlite", "file:"+p+"?mode=ro")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// sample picks the CRSs deterministically from proj.db: every current
// projected CRS that has an ESRI name (an EPSG CRS with an ESRI alias, or
// ESRI's own whose code is no EPSG code) and that PostGIS knows (known),
// by category.
func sample(t *testing.T, db *sql.DB, known map[string]bool) []target {
	t.Helper()
	// A CRS PROJ cannot use is left out: ESRI defines the South African
	// "Lo" systems as Transverse Mercator of scale -1, which PROJ refuses.
	var positive []string
	for i := 1; i <= 7; i++ {
		positive = append(positive, fmt.Sprintf("coalesce(c.param%d_code IN (8805, 8815) AND c.param%[1]d_value <= 0, 0)", i))
	}
	rows, err := db.Query(`
WITH named AS (
  SELECT p.auth_name, p.code, min(a.alt_name) AS name FROM projected_crs p
  JOIN alias_name a ON a.table_name = 'projected_crs' AND a.auth_name = p.auth_name AND a.code = p.code AND a.source = 'ESRI'
  WHERE p.auth_name = 'EPSG' AND p.deprecated = 0 GROUP BY p.auth_name, p.code
  UNION ALL
  SELECT p.auth_name, p.code, p.name FROM projected_crs p
  WHERE p.auth_name = 'ESRI' AND p.deprecated = 0
    AND NOT EXISTS (SELECT 1 FROM crs_view v WHERE v.auth_name = 'EPSG' AND v.code = p.code)
)
SELECT n.auth_name, n.code, n.name, e.south_lat, e.north_lat, e.west_lon, e.east_lon
FROM named n
JOIN usage u ON u.object_table_name = 'projected_crs' AND u.object_auth_name = n.auth_name AND u.object_code = n.code
JOIN extent e ON e.auth_name = u.extent_auth_name AND e.code = u.extent_code
JOIN projected_crs p ON p.auth_name = n.auth_name AND p.code = n.code
JOIN conversion_table c ON c.auth_name = p.conversion_auth_name AND c.code = p.conversion_code
WHERE NOT (` + strings.Join(positive, " OR ") + `)
ORDER BY n.auth_name, CAST(n.code AS INTEGER), e.auth_name, CAST(e.code AS INTEGER)`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var all []target
	for rows.Next() {
		var auth, code, name string
		var s, n, w, e float64
		if err := rows.Scan(&auth, &code, &name, &s, &n, &w, &e); err != nil {
			t.Fatal(err)
		}
		c := auth + ":" + code
		if len(all) > 0 && all[len(all)-1].code == c || !known[c] {
			continue // one extent per CRS: its first
		}
		if e < w { // across the antimeridian
			e += 360
		}
		lon := (w + e) / 2
		if lon > 180 {
			lon -= 360
		}
		srid, _ := strconv.Atoi(code)
		all = append(all, target{code: c, name: name, srid: srid, lon: lon, lat: (s + n) / 2})
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	var out []target
	taken := map[string]bool{}
	for _, q := range quotas {
		var pool []target
		for _, c := range all {
			if !taken[c.code] && q.name.MatchString(c.name) && (q.not == nil || !q.not.MatchString(c.name)) {
				pool = append(pool, c)
			}
		}
		if len(pool) < q.n {
			t.Fatalf("%s: %d CRSs in proj.db, want %d to sample", q.category, len(pool), q.n)
		}
		for k := range q.n {
			c := pool[(2*k+1)*len(pool)/(2*q.n)]
			c.category = q.category
			taken[c.code] = true
			out = append(out, c)
		}
	}
	return out
}

// writeShapefiles has GDAL write each target's point as a one-point
// Shapefile in its CRS (one VRT layer a CRS, LayerSRS the CRS; the .prj in
// ESRI's WKT, as the Shapefile driver writes it), into dir/shp. PostGIS
// projects the points (the coordinates only need to lie in the CRS's
// area; GDAL's own reading of the files is the reference), which spares
// GDAL searching PROJ's database for 200 transformations.
func writeShapefiles(t *testing.T, pool *pgxpool.Pool, dir string, targets []target) {
	t.Helper()
	srids := make([]int32, len(targets))
	lons := make([]float64, len(targets))
	lats := make([]float64, len(targets))
	for i, c := range targets {
		srids[i], lons[i], lats[i] = int32(c.srid), c.lon, c.lat
	}
	rows, err := pool.Query(t.Context(), `
		SELECT ST_X(g), ST_Y(g) FROM (
			SELECT ST_Transform(ST_SetSRID(ST_MakePoint(lon, lat), 4326), srid) AS g, n
			FROM unnest($1::int[], $2::float8[], $3::float8[]) WITH ORDINALITY AS p(srid, lon, lat, n)) q
		ORDER BY n`, srids, lons, lats)
	if err != nil {
		t.Fatal(err)
	}
	var csv bytes.Buffer
	csv.WriteString("id,x,y\n")
	for i := 0; rows.Next(); i++ {
		var x, y float64
		if err := rows.Scan(&x, &y); err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(&csv, "%d,%s,%s\n", i, strconv.FormatFloat(x, 'f', -1, 64), strconv.FormatFloat(y, 'f', -1, 64))
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	rows.Close()
	var vrt bytes.Buffer
	vrt.WriteString("<OGRVRTDataSource>\n")
	for i, c := range targets {
		fmt.Fprintf(&vrt, `<OGRVRTLayer name="%s"><SrcDataSource>%s</SrcDataSource><SrcSQL>SELECT * FROM points WHERE id = '%d'</SrcSQL>`+
			`<GeometryType>wkbPoint</GeometryType><LayerSRS>%s</LayerSRS><GeometryField encoding="PointFromColumns" x="x" y="y"/></OGRVRTLayer>`+"\n",
			c.layer(), filepath.Join(dir, "points.csv"), i, c.code)
	}
	vrt.WriteString("</OGRVRTDataSource>\n")
	write(t, filepath.Join(dir, "points.csv"), csv.Bytes())
	write(t, filepath.Join(dir, "write.vrt"), vrt.Bytes())
	interoptest.GDAL(t, os.Environ(), "ogr2ogr", "-f", "ESRI Shapefile", filepath.Join(dir, "shp"), filepath.Join(dir, "write.vrt"))
}

// gdalPlacement is GDAL's reading of each Shapefile's point in EPSG:4326
// (a VRT warped layer a file, one ogrinfo), by layer.
func gdalPlacement(t *testing.T, dir string, layers []string) map[string][2]float64 {
	t.Helper()
	var vrt bytes.Buffer
	vrt.WriteString("<OGRVRTDataSource>\n")
	for _, l := range layers {
		fmt.Fprintf(&vrt, `<OGRVRTWarpedLayer><OGRVRTLayer name="%s"><SrcDataSource>%s</SrcDataSource></OGRVRTLayer><TargetSRS>EPSG:4326</TargetSRS></OGRVRTWarpedLayer>`+"\n",
			l, filepath.Join(dir, l+".shp"))
	}
	vrt.WriteString("</OGRVRTDataSource>\n")
	p := filepath.Join(dir, "read.vrt")
	write(t, p, vrt.Bytes())
	out := interoptest.GDAL(t, os.Environ(), "ogrinfo", "-ro", "-al", "-q", p)
	got := map[string][2]float64{}
	layer := ""
	for _, line := range strings.Split(string(out), "\n") {
		if m := ogrFeature.FindStringSubmatch(line); m != nil {
			layer = m[1]
		}
		if m := ogrPoint.FindStringSubmatch(line); m != nil && layer != "" {
			x, _ := strconv.ParseFloat(m[1], 64)
			y, _ := strconv.ParseFloat(m[2], 64)
			got[layer] = [2]float64{x, y}
		}
	}
	return got
}

var (
	ogrFeature = regexp.MustCompile(`^OGRFeature\(([^)]+)\):`)
	ogrPoint   = regexp.MustCompile(`^\s*POINT \((\S+) (\S+)\)`)
)

func write(t *testing.T, p string, b []byte) {
	t.Helper()
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// read is ingestd's reading of a one-point Shapefile with prj as its
// .prj: the CRS the reader identified, and the point.
func read(t *testing.T, dir, layer string, prj []byte) (crs.Result, [2]float64, error) {
	t.Helper()
	part := func(ext string) []byte {
		b, err := os.ReadFile(filepath.Join(dir, layer+ext))
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	shp, shx := part(".shp"), part(".shx")
	r, err := shapefile.NewReader(shapefile.Files{SHP: bytes.NewReader(shp), SHX: bytes.NewReader(shx), DBF: bytes.NewReader(part(".dbf")),
		SHPSize: int64(len(shp)), SHXSize: int64(len(shx)), PRJ: prj}, shapefile.Options{})
	if err != nil {
		return crs.Result{}, [2]float64{}, err
	}
	f, err := r.Next()
	if err != nil {
		t.Fatalf("%s: %v", layer, err)
	}
	p, ok := f.Geometry.(*geom.Point)
	if !ok {
		t.Fatalf("%s: GDAL wrote %v, not a point (the point is outside what the CRS can project?)", layer, f.Geometry)
	}
	return r.CRS(), [2]float64{p.X(), p.Y()}, nil
}

// placed is a point as ingestd read it: its CRS and coordinates, and
// where PostGIS puts it in EPSG:4326.
type placed struct {
	res  crs.Result
	xy   [2]float64
	dist float64 // metres from GDAL's placement
}

// TestESRIPrjPlacement is the check: 200 one-point Shapefiles
// whose .prj GDAL writes in ESRI's WKT, for CRSs sampled from those ESRI
// names (150 US, 50 elsewhere), each read by ingestd's Shapefile reader,
// its point taken to EPSG:4326 by PostGIS (ST_Transform, as the apply
// does), and compared with GDAL's own reading of the same file: every one
// identified, in a CRS PostGIS knows, within 1 m of GDAL's placement.
// Then the same 200 .prj renamed ("Custom_County_Grid": a known CRS under
// a name no table has) must each be identified by their parameters where
// the parameter match knows the projection, and placed alike; and a .prj
// of a CRS that is nothing known fails naming what it saw.
func TestESRIPrjPlacement(t *testing.T) {
	if testing.Short() {
		t.Skip("writes and reads 200 Shapefiles with GDAL")
	}
	db := projDB(t)
	pool := pgtest.Pool(t)
	ctx := t.Context()
	known := map[string]bool{}
	rows, err := pool.Query(ctx, `SELECT auth_name || ':' || auth_srid FROM spatial_ref_sys WHERE auth_name IN ('EPSG', 'ESRI') AND auth_srid = srid`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var c string
		if err := rows.Scan(&c); err != nil {
			t.Fatal(err)
		}
		known[c] = true
	}
	rows.Close()
	targets := sample(t, db, known)
	var picked []string
	for i, c := range targets {
		if i == 0 || targets[i-1].category != c.category {
			picked = append(picked, fmt.Sprintf("%s: %s…", c.category, c.code))
		}
	}
	t.Logf("sample of %d: %s", len(targets), strings.Join(picked, "; "))
	dir := t.TempDir()
	began := time.Now()
	writeShapefiles(t, pool, dir, targets)
	t.Logf("GDAL wrote %d Shapefiles in %v", len(targets), time.Since(began).Round(time.Millisecond))
	shpDir := filepath.Join(dir, "shp")
	layers := make([]string, len(targets))
	for i, c := range targets {
		layers[i] = c.layer()
	}
	began = time.Now()
	gdal := gdalPlacement(t, shpDir, layers)
	t.Logf("GDAL read them back in %v", time.Since(began).Round(time.Millisecond))

	// place reads every target's Shapefile with its .prj changed by edit
	// and measures each point's distance to GDAL's placement in PostGIS.
	place := func(edit func([]byte) []byte) ([]placed, []error) {
		out := make([]placed, len(targets))
		errs := make([]error, len(targets))
		var ids []int32
		var srids []int32
		var xs, ys, gx, gy []float64
		for i, c := range targets {
			prj, err := os.ReadFile(filepath.Join(shpDir, c.layer()+".prj"))
			if err != nil {
				t.Fatal(err)
			}
			res, xy, err := read(t, shpDir, c.layer(), edit(prj))
			out[i] = placed{res: res, xy: xy, dist: math.Inf(1)}
			if errs[i] = err; err != nil {
				continue
			}
			g, ok := gdal[c.layer()]
			if !ok {
				t.Fatalf("%s: GDAL read no point", c.code)
			}
			ids, srids = append(ids, int32(i)), append(srids, int32(res.SRID))
			xs, ys, gx, gy = append(xs, xy[0]), append(ys, xy[1]), append(gx, g[0]), append(gy, g[1])
		}
		rows, err := pool.Query(ctx, `
			SELECT id, ST_Distance(ST_Transform(ST_SetSRID(ST_MakePoint(x, y), srid), 4326)::geography, ST_SetSRID(ST_MakePoint(gx, gy), 4326)::geography)
			FROM unnest($1::int[], $2::int[], $3::float8[], $4::float8[], $5::float8[], $6::float8[]) AS p(id, srid, x, y, gx, gy)`,
			ids, srids, xs, ys, gx, gy)
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		for rows.Next() {
			var id int32
			var d float64
			if err := rows.Scan(&id, &d); err != nil {
				t.Fatal(err)
			}
			out[id].dist = d
		}
		if err := rows.Err(); err != nil {
			t.Fatal(err)
		}
		return out, errs
	}

	// As GDAL wrote them.
	got, errs := place(func(b []byte) []byte { return b })
	within, same, worst := 0, 0, 0.0
	by := map[crs.Method]int{}
	for i, c := range targets {
		p := got[i]
		switch {
		case errs[i] != nil:
			t.Errorf("%s (%s, %s): %v", c.code, c.category, c.name, errs[i])
			continue
		case !known[p.res.Code]:
			t.Errorf("%s (%s): identified as %s, which PostGIS's spatial_ref_sys lacks", c.code, c.name, p.res.Code)
		case p.dist > maxPlacementM:
			t.Errorf("%s (%s): identified as %s (by %s), placed %.3f m from GDAL's placement (max %g m)", c.code, c.name, p.res.Code, p.res.By, p.dist, maxPlacementM)
		default:
			within++
		}
		by[p.res.By]++
		worst = max(worst, p.dist)
		if p.res.Code == c.code {
			same++
		}
	}
	t.Logf("as GDAL writes them: %d of %d .prj placed within %g m of GDAL's placement (worst %.2g m); identified by %v; %d as the very code GDAL was given",
		within, len(targets), maxPlacementM, worst, by, same)

	// Renamed: the parameters alone.
	rename := regexp.MustCompile(`^PROJCS\["[^"]*"`)
	got, errs = place(func(b []byte) []byte { return rename.ReplaceAll(b, []byte(`PROJCS["Custom_County_Grid"`)) })
	renamed, unknown := 0, 0
	worst, same = 0, 0
	for i, c := range targets {
		p := got[i]
		if errs[i] != nil {
			var u *crs.UnknownError
			if !errors.As(errs[i], &u) || u.Why != "the parameter match does not know that projection" {
				t.Errorf("%s renamed (%s): %v", c.code, c.name, errs[i])
			}
			unknown++
			continue
		}
		if p.res.By != crs.ByParameters || p.dist > maxPlacementM {
			t.Errorf("%s renamed (%s): identified as %s by %s, placed %.3f m from GDAL's placement", c.code, c.name, p.res.Code, p.res.By, p.dist)
			continue
		}
		renamed++
		worst = max(worst, p.dist)
		if p.res.Code == c.code {
			same++
		} else {
			t.Logf("%s renamed is %s by its parameters: the same definition, preferred", c.code, p.res.Code)
		}
	}
	t.Logf("renamed: %d of %d identified by parameters within %g m (worst %.2g m), %d as the very code GDAL was given; %d in a projection the parameter match does not know",
		renamed, len(targets), maxPlacementM, worst, same, unknown)
	if i := slices.IndexFunc(targets, func(c target) bool { return c.code == "EPSG:2263" || strings.Contains(c.name, "Long_Island") }); i >= 0 {
		t.Logf("e.g. %s renamed: %+v", targets[i].code, got[i].res)
	}
}
