package geojson

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/twpayne/go-geom"
	"github.com/twpayne/go-geom/encoding/geojson"
)

var geometrySamples = []string{
	`{"type":"Point","coordinates":[1.5,-2.25]}`,
	`{"coordinates":[1,2,3],"type":"Point"}`,
	`{"type":"Point","coordinates":[1,2,3,4]}`,
	`{"type":"Point","coordinates":[]}`,
	`{"type":"Point","coordinates":[1]}`,
	`{"type":"LineString","coordinates":[[0,0],[1e3,2.5E-3],[ -1 , 1 ]]}`,
	`{"type":"LineString","coordinates":[]}`,
	`{"type":"LineString","coordinates":[[0,0],[1,1,1]]}`,
	`{"type":"MultiPoint","coordinates":[[0,0,1],[1,1,2]]}`,
	`{"type":"Polygon","coordinates":[[[0,0],[1,0],[1,1],[0,0]],[[0.2,0.2],[0.4,0.2],[0.4,0.4],[0.2,0.2]]]}`,
	`{"type":"Polygon","coordinates":[[]]}`,
	`{"type":"MultiLineString","coordinates":[[[0,0],[1,1]],[[2,2],[3,3],[4,4]]]}`,
	`{"type":"MultiPolygon","coordinates":[[[[0,0],[1,0],[1,1],[0,0]]],[[[5,5],[6,5],[6,6],[5,5]],[[5.1,5.1],[5.2,5.1],[5.2,5.2],[5.1,5.1]]]]}`,
	`{"type":"MultiPolygon","coordinates":[]}`,
	`{"type":"GeometryCollection","geometries":[{"type":"Point","coordinates":[1,2]}]}`,
	`{"type":"Polygon","coordinates":[[[0,0],[1,"x"]]]}`,
	`{"type":"Polygon","coordinates":[[0,0]]}`,
	`{"type":"Polygon","coordinates":null}`,
	`{"type":"Hexagon","coordinates":[]}`,
	`{"type":"Point","coordinates":[1e400,0]}`,
	`{"type":"LineString","coordinates":[[-1e999,0],[1,1e-999]]}`,
	`{"type":"GeometryCollection","geometries":[]}`,
	`{"type":"GeometryCollection"}`,
	`{"type":"GeometryCollection","geometries":null}`,
	`{"type":"GeometryCollection","geometries":[{"type":"GeometryCollection","geometries":[]}]}`,
	`{"type":"GeometryCollection","geometries":[{"type":"Point","coordinates":[1,2,3]},{"type":"LineString","coordinates":[[0,0],[1,1]]}]}`,
	`{"type":"GeometryCollection","geometries":[{"type":"Point","coordinates":[1,2,3]},{"type":"Point","coordinates":[4,5,6]}]}`,
	`{"type":"GeometryCollection","geometries":[{"type":"Point","coordinates":[]},{"type":"GeometryCollection","geometries":[{"type":"Polygon","coordinates":[[[0,0],[1,0],[1,1],[0,0]]]}]}]}`,
	`{"type":"GeometryCollection","geometries":[{"type":"Point","coordinates":null},{"type":"MultiPolygon","coordinates":[]}]}`,
	`{"type":"GeometryCollection","geometries":[null]}`,
	`{"type":"GeometryCollection","geometries":[1]}`,
	`{"type":"GeometryCollection","geometries":{"type":"Point","coordinates":[1,2]}}`,
	`{"type":"GeometryCollection","geometries":[{"type":"Point","coordinates":[1,"x"]}]}`,
	`{"type":"GeometryCollection","geometries":[{"type":"Point","coordinates":[1,2],"crs":{"type":"name","properties":{"name":"EPSG:3857"}}}]}`,
}

// TestDecodeGeometryMatchesGoGeom: the fast path must agree with go-geom's
// decoder on what it accepts and what it builds.
func TestDecodeGeometryMatchesGoGeom(t *testing.T) {
	t.Parallel()
	for _, s := range geometrySamples {
		compareWithGoGeom(t, []byte(s))
	}
}

func compareWithGoGeom(t *testing.T, raw []byte) {
	t.Helper()
	got, gotErr := decodeGeometry(raw, 2264)
	var want geom.T
	wantErr := geojson.Unmarshal(raw, &want)
	if gotErr == nil && wantErr != nil && strings.Contains(wantErr.Error(), "cannot unmarshal number") {
		// A coordinate beyond float64's range is ±Inf here (kept for the
		// store to count as invalid), an error in go-geom.
		return
	}
	if gotErr != nil && wantErr == nil && holdsNilMember(want) {
		return // a null member, or one in another CRS: refused on purpose
	}
	if gotErr != nil && wantErr == nil && (strings.Contains(gotErr.Error(), "nested deeper") ||
		strings.Contains(gotErr.Error(), "GeometryCollection member") && strings.Contains(gotErr.Error(), "crs") ||
		strings.Contains(gotErr.Error(), "is in SRID")) {
		// A bound go-geom lacks; a member's crs, which go-geom ignores and
		// the decoder reads as it reads a geometry's (an unreadable or
		// different one is an error).
		return
	}
	if gotErr != nil && wantErr == nil && strings.HasSuffix(gotErr.Error(), " dimensions") && maxStride(want) > 4 {
		// Positions of 5 or more values: go-geom keeps them as a
		// Layout(5+) that has no (E)WKB form for the store; refused on
		// purpose.
		return
	}
	if (gotErr != nil) != (wantErr != nil) {
		t.Fatalf("%s: fast path err %v, go-geom err %v", raw, gotErr, wantErr)
	}
	if gotErr != nil {
		return
	}
	if want == nil {
		if got != nil {
			t.Fatalf("%s: got %v, want nil", raw, got)
		}
		return
	}
	sameGeometry(t, raw, got, want)
}

// maxStride is the largest stride of g or, for a collection, of any of
// its members (0 for nil).
func maxStride(g geom.T) int {
	gc, ok := g.(*geom.GeometryCollection)
	if !ok {
		if g == nil {
			return 0
		}
		return g.Stride()
	}
	n := 0
	for _, m := range gc.Geoms() {
		n = max(n, maxStride(m))
	}
	return n
}

// holdsNilMember reports whether go-geom's reading of a collection
// has a nil member somewhere (go-geom keeps `null` members).
func holdsNilMember(g geom.T) bool {
	gc, ok := g.(*geom.GeometryCollection)
	if !ok {
		return false
	}
	for _, m := range gc.Geoms() {
		if m == nil || holdsNilMember(m) {
			return true
		}
	}
	return false
}

// sameGeometry compares got with go-geom's want, collections member by
// member; got must carry SRID 2264 at every level.
func sameGeometry(t *testing.T, raw []byte, got, want geom.T) {
	t.Helper()
	if wc, ok := want.(*geom.GeometryCollection); ok {
		gc, ok := got.(*geom.GeometryCollection)
		if !ok || gc.SRID() != 2264 || gc.NumGeoms() != wc.NumGeoms() {
			t.Fatalf("%s: got %T SRID %d, want a collection of %d", raw, got, got.SRID(), wc.NumGeoms())
		}
		// go-geom leaves an empty collection without a layout; XY is the
		// rule for empty geometries everywhere else.
		if wl := wc.Layout(); gc.Layout() != wl && !(wl == geom.NoLayout && gc.Layout() == geom.XY) {
			t.Fatalf("%s: collection layout %v, go-geom %v", raw, gc.Layout(), wl)
		}
		for i := range wc.NumGeoms() {
			sameGeometry(t, raw, gc.Geom(i), wc.Geom(i))
		}
		return
	}
	if want.Layout() == geom.NoLayout && got.Layout() == geom.XY && got.Empty() && want.Empty() && reflect.TypeOf(got) == reflect.TypeOf(want) {
		return // null coordinates: empty either way, XY here
	}
	if reflect.TypeOf(got) != reflect.TypeOf(want) || got.Layout() != want.Layout() || got.SRID() != 2264 ||
		!reflect.DeepEqual(nilIfEmpty(got.FlatCoords()), nilIfEmpty(want.FlatCoords())) ||
		!reflect.DeepEqual(nilIfEmptyInts(got.Ends()), nilIfEmptyInts(want.Ends())) ||
		!reflect.DeepEqual(normEndss(got.Endss()), normEndss(want.Endss())) {
		t.Fatalf("%s:\n got %T %v %v %v %v\nwant %T %v %v %v %v", raw,
			got, got.Layout(), got.FlatCoords(), got.Ends(), got.Endss(),
			want, want.Layout(), want.FlatCoords(), want.Ends(), want.Endss())
	}
}

func nilIfEmpty(f []float64) []float64 {
	if len(f) == 0 {
		return nil
	}
	return f
}

func nilIfEmptyInts(f []int) []int {
	if len(f) == 0 {
		return nil
	}
	return f
}

func normEndss(e [][]int) [][]int {
	if len(e) == 0 {
		return nil
	}
	out := make([][]int, len(e))
	for i := range e {
		out[i] = nilIfEmptyInts(e[i])
	}
	return out
}

func FuzzDecodeGeometry(f *testing.F) {
	for _, s := range geometrySamples {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		// decodeGeometry sees only objects encoding/json has validated
		// (the reader and decodeCollection read null themselves).
		if !geojsonValid(raw) || firstByte(raw) != '{' {
			return
		}
		compareWithGoGeom(t, raw)
	})
}

func geojsonValid(raw []byte) bool {
	var m map[string]any
	return json.Unmarshal(raw, &m) == nil
}

// TestGeometryErrorsInOwnWords: a geometry go-geom or encoding/json would
// refuse in their own words (a Go type, "geojson: …", an empty quote of
// the bad coordinate) is refused saying what GeoJSON wanted there.
func TestGeometryErrorsInOwnWords(t *testing.T) {
	t.Parallel()
	for raw, want := range map[string]string{
		`{"type":"Point","coordinates":["-78.9",35.6]}`:                                                              `a coordinate is not a number: "\"-78.9\""`,
		`{"type":"Point","coordinates":[-78.9]}`:                                                                     "Point coordinates: a position of 1 number(s)",
		`{"type":"LineString","coordinates":[[1],[2]]}`:                                                              "LineString coordinates: a position of 1 number(s)",
		`{"type":"GeometryCollection","geometries":[{"type":"Point","coordinates":[1,"x"]}]}`:                        "a coordinate is not a number",
		`{"type":"Hexagon","coordinates":[1,2]}`:                                                                     `unknown geometry type "Hexagon"`,
		`{"type":5,"coordinates":[1,2]}`:                                                                             `"type": a JSON number where GeoJSON wants a string`,
		`{"type":"Point","coordinates":[1,2],"crs":{"type":5}}`:                                                      "crs: a JSON number in type where GeoJSON wants a string",
		`{"type":"Point","coordinates":[1,2],"crs":` + strings.Repeat("[", 10001) + strings.Repeat("]", 10001) + `}`: "nested too deeply",
	} {
		_, err := decodeGeometry([]byte(raw), 4326)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q", raw, err, want)
			continue
		}
		for _, leak := range []string{"Go value", "geojson: ", "float64", `bad coordinate ""`, "max depth", "invalid character"} {
			if strings.Contains(err.Error(), leak) {
				t.Errorf("%s: %q in %v", raw, leak, err)
			}
		}
	}
}
