package rings

import (
	"reflect"
	"testing"

	"github.com/twpayne/go-geom"
)

// TestGroup: a clockwise shell takes the counter-clockwise hole inside
// it; a hole inside no shell is a polygon of its own; a second shell
// starts a second polygon.
func TestGroup(t *testing.T) {
	flat := []float64{
		0, 0, 0, 10, 10, 10, 10, 0, 0, 0, // shell, clockwise
		20, 0, 20, 5, 25, 5, 25, 0, 20, 0, // second shell, clockwise
		2, 2, 4, 2, 4, 4, 2, 4, 2, 2, // hole of the first, counter-clockwise
		50, 50, 52, 50, 52, 52, 50, 52, 50, 50, // a hole inside no shell
	}
	got := Group(flat, 2, []Ring{{0, 10}, {10, 20}, {20, 30}, {30, 40}})
	want := [][]Ring{{{0, 10}, {20, 30}}, {{10, 20}}, {{30, 40}}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("groups %v, want %v", got, want)
	}
	mp := MultiPolygon(geom.XY, flat, got)
	if mp.NumPolygons() != 3 || mp.Polygon(0).NumLinearRings() != 2 {
		t.Errorf("multipolygon %d polygons, the first of %d rings", mp.NumPolygons(), mp.Polygon(0).NumLinearRings())
	}
	if p := Polygon(geom.XY, flat, got[0]); p.NumLinearRings() != 2 || len(p.FlatCoords()) != 20 {
		t.Errorf("polygon of %d rings, %d coordinates", p.NumLinearRings(), len(p.FlatCoords()))
	}
}
