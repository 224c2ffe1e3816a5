package interop_test

import (
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/ingestd/ingestd/internal/interoptest"
)

// ogrFieldRE is a field line of ogrinfo -so: "NAME: String (128.0)".
var ogrFieldRE = regexp.MustCompile(`(?m)^([A-Za-z_][A-Za-z0-9_]*): ([A-Za-z0-9]+) \(\d+\.\d+\)$`)

// ogrGeometryRE is ogrinfo -so's layer geometry line.
var ogrGeometryRE = regexp.MustCompile(`(?m)^Geometry: (.+)$`)

// ogrinfo runs ogrinfo -ro -so on source's layer and returns its fields
// (name → OGR type, in order) and geometry type; env is the environment
// for source (interoptest.PGDataset), nil for this process's.
func ogrinfo(t *testing.T, env []string, source, layer string) (names []string, types map[string]string, geometry string) {
	t.Helper()
	args := []string{"-ro", "-so", source}
	if layer != "" {
		args = append(args, layer)
	} else {
		args = append(args, "-al")
	}
	out := interoptest.GDAL(t, env, "ogrinfo", args...)
	types = map[string]string{}
	for _, m := range ogrFieldRE.FindAllStringSubmatch(string(out), -1) {
		names = append(names, m[1])
		types[m[1]] = m[2]
	}
	if m := ogrGeometryRE.FindStringSubmatch(string(out)); m != nil {
		geometry = m[1]
	}
	return names, types, geometry
}

// widened is the OGR type GDAL reads from a typed view's column of an
// ArcGIS field that GDAL's own ESRIJSON reading gives the type gdal: an
// Integer field is a bigint column (Integer64); a Date field, which
// GDAL 3.6 reads as a String of epoch milliseconds (newer GDAL as
// DateTime), is a timestamptz column (DateTime).
func widened(gdal, esriType string) string {
	switch {
	case esriType == "esriFieldTypeDate":
		return "DateTime"
	case gdal == "Integer":
		return "Integer64"
	}
	return gdal
}

// Against Koop: each layer's typed view has GDAL's fields (names in order,
// types modulo the widenings above), GDAL's geometry type (a polygon or
// line layer promoted to multi when its features mix single and multi
// parts, as ogr2ogr -nlt PROMOTE_TO_MULTI would) in SRID 4326, and every
// value equals the one ogr2ogr loaded from the same layer.
func TestKoopTypedViewMatchesGDAL(t *testing.T) {
	base, r := koopRig(t)
	conn, env := interoptest.PGDataset(r.pool)
	// The layer table's own columns: its key, times and bookkeeping.
	viewOwn := map[string]bool{"feature_id": true, "first_seen_at": true, "changed_at": true, "ingestd_poll": true,
		"ingestd_hash": true, "ingestd_rest": true, "ingestd_absent": true, "ingestd_geom_single": true, "ingestd_geom": true}
	for _, l := range koopLayers {
		t.Run(l.name, func(t *testing.T) {
			feed := strings.ReplaceAll(l.name, "_", "-")
			layerURL := base + "/" + l.name + "/FeatureServer/0"
			if _, err := r.manager.Poll(r.ctx, "county/"+feed); err != nil {
				t.Fatal(err)
			}
			var info struct {
				Fields []struct{ Name, Type string }
			}
			getJSON(t, layerURL+"?f=json", nil, &info)
			esriType := map[string]string{}
			for _, f := range info.Fields {
				esriType[f.Name] = f.Type
			}

			esri := "ESRIJSON:" + layerURL + "/query?where=1%3D1&outFields=*&f=json"
			gNames, gTypes, gGeom := ogrinfo(t, nil, esri, "")
			view := r.viewOf(t, feed)
			vNames, vTypes, vGeom := ogrinfo(t, env, conn, view)
			vNames = strings.Fields(strings.Join(filterOut(vNames, viewOwn), " "))
			if strings.Join(vNames, ",") != strings.Join(gNames, ",") || len(gNames) < 2 {
				t.Fatalf("fields: view %v, GDAL %v", vNames, gNames)
			}
			for _, n := range gNames {
				if want := widened(gTypes[n], esriType[n]); vTypes[n] != want {
					t.Errorf("%s: view %s, GDAL %s (%s): want %s", n, vTypes[n], gTypes[n], esriType[n], want)
				}
			}
			if vGeom != gGeom && vGeom != "Multi "+gGeom {
				t.Errorf("geometry: view %q, GDAL %q", vGeom, gGeom)
			}
			// The types are the fields' (the adapter's), not inferred from
			// the values (which would make AREA numeric).
			var inferred, pgTypes string
			if err := r.pool.QueryRow(r.ctx, `SELECT coalesce(string_agg(name, ',') FILTER (WHERE type_source <> 'declared'), ''),
					string_agg(name || ' ' || type, ',' ORDER BY ordinal)
				FROM feed_columns WHERE jurisdiction = 'county' AND feed = $1 AND removed_at IS NULL`, feed).Scan(&inferred, &pgTypes); err != nil {
				t.Fatal(err)
			}
			if inferred != "" {
				t.Errorf("columns %s are inferred, not declared by the layer's fields", inferred)
			}
			if l.name == "nc_counties" && pgTypes != "OBJECTID bigint,NAME text,FIPS text,BIR74 bigint,AREA double precision,UPDATED timestamptz" {
				t.Errorf("columns %s", pgTypes)
			}
			var srid int
			if err := r.pool.QueryRow(r.ctx, `SELECT srid FROM geometry_columns WHERE f_table_schema || '.' || f_table_name = $1`, view).Scan(&srid); err != nil || srid != 4326 {
				t.Errorf("view SRID %d (%v), want 4326", srid, err)
			}

			// The values, feature by feature, against ogr2ogr's load.
			table := "gdal_typed_" + l.name
			interoptest.OGR2OGR(t, r.pool, esri,
				"-nln", table, "-nlt", "PROMOTE_TO_MULTI", "-lco", "GEOMETRY_NAME=geom", "-lco", "FID=gdal_fid", "-lco", "LAUNDER=NO", "-overwrite")
			var diffs []string
			for _, n := range gNames {
				g := fmt.Sprintf("g.%q", n)
				if esriType[n] == "esriFieldTypeDate" && gTypes[n] == "String" {
					g = fmt.Sprintf("to_timestamp(g.%q::bigint / 1000.0)", n)
				}
				var compared, differ int
				q := fmt.Sprintf(`SELECT count(*), count(*) FILTER (WHERE v.%q IS DISTINCT FROM %s)
					FROM %s v FULL JOIN %q g ON v.feature_id = g."OBJECTID"::text`, n, g, view, table)
				if err := r.pool.QueryRow(r.ctx, q, nil...).Scan(&compared, &differ); err != nil {
					t.Fatalf("%s: %v", n, err)
				}
				if compared != 100 || differ != 0 {
					diffs = append(diffs, fmt.Sprintf("%s: %d of %d features differ", n, differ, compared))
				}
			}
			var geomOff int
			if err := r.pool.QueryRow(r.ctx, fmt.Sprintf(`SELECT count(*) FILTER (WHERE NOT ST_Equals(v.geom, g.geom) OR v.geom IS NULL OR g.geom IS NULL)
				FROM %s v FULL JOIN %q g ON v.feature_id = g."OBJECTID"::text`, view, table)).Scan(&geomOff); err != nil {
				t.Fatal(err)
			}
			if geomOff != 0 {
				diffs = append(diffs, fmt.Sprintf("%d geometries differ", geomOff))
			}
			if len(diffs) > 0 {
				t.Errorf("view %s against ogr2ogr's %s: %s", view, table, strings.Join(diffs, "; "))
			}
			t.Logf("%s: view %s, fields %v, geometry %s (GDAL %s)", l.name, view, vTypes, vGeom, gGeom)
		})
	}
}

func filterOut(names []string, drop map[string]bool) []string {
	var out []string
	for _, n := range names {
		if !drop[n] {
			out = append(out, n)
		}
	}
	return out
}
