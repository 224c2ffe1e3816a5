package interop_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/ingestd/ingestd/arcgis/arcgistest"
	"github.com/ingestd/ingestd/encoding/esrijson"
)

// viewOf is the feed's typed view's name.
func (r *rig) viewOf(t *testing.T, feed string) string {
	t.Helper()
	var v string
	if err := r.pool.QueryRow(r.ctx, `SELECT ingestd_feed_view('county', $1)`, feed).Scan(&v); err != nil {
		t.Fatal(err)
	}
	return v
}

// A layer with a field of every esriFieldType: its typed view has the
// columns the fields declare (FieldType's mapping, type_source declared),
// in the layer's order, the Geometry, Blob, Raster and XML fields left
// out, and every value converts: a 64-bit integer past 2^53 exactly, a
// string of digits as text, dates as timestamptz and date.
func TestTypedViewFromEveryFieldType(t *testing.T) {
	srv, base := fixture(t)
	fields := []struct{ name, esri, want string }{
		{"OBJECTID", esrijson.FieldOID, "bigint"},
		{"SMALL", "esriFieldTypeSmallInteger", "bigint"},
		{"INT", "esriFieldTypeInteger", "bigint"},
		{"BIG", "esriFieldTypeBigInteger", "bigint"},
		{"SINGLE", "esriFieldTypeSingle", "double precision"},
		{"DOUBLE", "esriFieldTypeDouble", "double precision"},
		{"Shape", "esriFieldTypeGeometry", ""},
		{"ZIP", "esriFieldTypeString", "text"},
		{"GUID", "esriFieldTypeGUID", "text"},
		{"GLOBALID", "esriFieldTypeGlobalID", "text"},
		{"CREATED", esrijson.FieldDate, "timestamptz"},
		{"DAY", "esriFieldTypeDateOnly", "date"},
		{"AT", "esriFieldTypeTimeOnly", "text"},
		{"STAMP", "esriFieldTypeTimestampOffset", "timestamptz"},
		{"PHOTO", "esriFieldTypeBlob", ""},
		{"IMAGE", "esriFieldTypeRaster", ""},
		{"META", "esriFieldTypeXML", ""},
	}
	l := arcgistest.Squares(3)
	l.Fields = nil
	for _, f := range fields {
		l.Fields = append(l.Fields, esrijson.Field{Name: f.name, Type: f.esri})
	}
	for i := range l.Features {
		l.Features[i].Attributes = map[string]any{
			"SMALL": -7, "INT": 2000000000 + i, "BIG": int64(9007199254740993) + int64(i), "SINGLE": 0.5, "DOUBLE": 2.25 + float64(i),
			"ZIP": fmt.Sprintf("0213%d", i), "GUID": "{8C3E2F4A-1B2C-4D5E-8F90-A1B2C3D4E5F6}", "GLOBALID": "{00000000-0000-0000-0000-00000000000" + fmt.Sprint(i) + "}",
			"CREATED": 1700000000000 + int64(i)*1000, "DAY": "2024-02-29", "AT": "13:45:00", "STAMP": "2024-03-01T13:45:00-05:00",
		}
	}
	l.Features[2].Attributes["BIG"] = nil // a null is a null, in any type
	srv.AddLayer("typed", l)
	r := newRig(t, fmt.Sprintf("      - {id: typed, kind: arcgis, url: %q}\n", arcgistest.URL(base, "typed")), nil)
	if _, err := r.manager.Poll(r.ctx, "county/typed"); err != nil {
		t.Fatal(err)
	}

	var want []string
	for _, f := range fields {
		if f.want != "" {
			want = append(want, f.name+":"+f.want+":declared:0")
		}
	}
	var cols string
	if err := r.pool.QueryRow(r.ctx, `SELECT string_agg(name || ':' || type || ':' || type_source || ':' || unconverted, ',' ORDER BY ordinal)
		FROM feed_columns WHERE jurisdiction = 'county' AND feed = 'typed' AND removed_at IS NULL`).Scan(&cols); err != nil {
		t.Fatal(err)
	}
	if cols != strings.Join(want, ",") {
		t.Errorf("feed_columns\n got %s\nwant %s", cols, strings.Join(want, ","))
	}
	// The view's own columns have those types, in that order (from
	// pg_attribute: information_schema.columns omits materialized views).
	view := r.viewOf(t, "typed")
	var viewCols string
	if err := r.pool.QueryRow(r.ctx, `SELECT string_agg(attname || ':' || format_type(atttypid, NULL), ',' ORDER BY attnum)
		FROM pg_attribute WHERE attrelid = $1::regclass AND attnum > 0 AND NOT attisdropped AND attname NOT IN ('feature_id', 'geom', 'first_seen_at', 'changed_at') AND attname NOT LIKE 'ingestd\_%'`, view).Scan(&viewCols); err != nil {
		t.Fatal(err)
	}
	wantView := strings.NewReplacer(":declared:0", "", "timestamptz", "timestamp with time zone").Replace(strings.Join(want, ","))
	if viewCols != wantView {
		t.Errorf("view %s columns\n got %s\nwant %s", view, viewCols, wantView)
	}
	var geomType string
	var srid int
	if err := r.pool.QueryRow(r.ctx, `SELECT type, srid FROM geometry_columns WHERE f_table_schema || '.' || f_table_name = $1`, view).Scan(&geomType, &srid); err != nil {
		t.Fatal(err)
	}
	// The snapshot's geometries decide the view's type (single polygons
	// here); the declared one only stands in for a layer without any.
	if geomType != "POLYGON" || srid != 4326 {
		t.Errorf("view geometry %s %d, want POLYGON 4326", geomType, srid)
	}
	// The values, typed.
	rows, err := r.pool.Query(r.ctx, fmt.Sprintf(`SELECT concat_ws('|', "OBJECTID", "SMALL", "INT", "BIG" - 9007199254740000, "BIG" = 9007199254740994, "SINGLE", "DOUBLE", "ZIP", "GUID",
			to_char("CREATED" AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS'), "DAY" + 1, "AT",
			to_char("STAMP" AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS'), coalesce("BIG"::text, 'null'))
		FROM %s ORDER BY feature_id`, view))
	if err != nil {
		t.Fatal(err)
	}
	var lines []string
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			t.Fatal(err)
		}
		lines = append(lines, s)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	wantRows := []string{
		"1|-7|2000000000|993|f|0.5|2.25|02130|{8C3E2F4A-1B2C-4D5E-8F90-A1B2C3D4E5F6}|2023-11-14T22:13:20|2024-03-01|13:45:00|2024-03-01T18:45:00|9007199254740993",
		"2|-7|2000000001|994|t|0.5|3.25|02131|{8C3E2F4A-1B2C-4D5E-8F90-A1B2C3D4E5F6}|2023-11-14T22:13:21|2024-03-01|13:45:00|2024-03-01T18:45:00|9007199254740994",
		"3|-7|2000000002|0.5|4.25|02132|{8C3E2F4A-1B2C-4D5E-8F90-A1B2C3D4E5F6}|2023-11-14T22:13:22|2024-03-01|13:45:00|2024-03-01T18:45:00|null",
	}
	if strings.Join(lines, "\n") != strings.Join(wantRows, "\n") {
		t.Errorf("view rows\n got %s\nwant %s", strings.Join(lines, "\n"), strings.Join(wantRows, "\n"))
	}
}
