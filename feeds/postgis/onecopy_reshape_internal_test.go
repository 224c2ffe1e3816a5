package postgis

import (
	"testing"

	"github.com/ingestd/ingestd/schema"
)

// Only a shape that keeps every stored column as it is and adds others
// is copied (OneCopyReshapeAdd); any other change rebuilds the rows.
func TestAddedColumnsOnlyForAddedColumns(t *testing.T) {
	stored := oneCopyLayer{geometry: "MultiPolygon", cols: []layerColumn{
		{name: "pin", column: "pin", typ: schema.Text},
		{name: "acres", column: "acres", typ: schema.Double, scaled: true, scale: 2},
	}}
	with := func(change func(l *oneCopyLayer)) oneCopyLayer {
		l := stored
		l.cols = append([]layerColumn{}, stored.cols...)
		change(&l)
		return l
	}
	added := layerColumn{name: "rev", column: "rev", typ: schema.BigInt}
	for _, c := range []struct {
		name string
		l    oneCopyLayer
		copy bool
	}{
		{"a column added last", with(func(l *oneCopyLayer) { l.cols = append(l.cols, added) }), true},
		{"a column added first", with(func(l *oneCopyLayer) { l.cols = append([]layerColumn{added}, l.cols...) }), true},
		{"the same columns in another order", with(func(l *oneCopyLayer) { l.cols[0], l.cols[1] = l.cols[1], l.cols[0] }), true},
		{"a column retyped", with(func(l *oneCopyLayer) { l.cols[0].typ = schema.BigInt }), false},
		{"a double at another scale", with(func(l *oneCopyLayer) { l.cols[1].scale = 3 }), false},
		{"a double no longer scaled", with(func(l *oneCopyLayer) { l.cols[1].scaled = false }), false},
		{"a column renamed in the layer", with(func(l *oneCopyLayer) { l.cols[0].column = "pin_1" }), false},
		{"a column dropped", with(func(l *oneCopyLayer) { l.cols = append(l.cols[:1:1], added) }), false},
		{"another geometry type", with(func(l *oneCopyLayer) { l.geometry = "Geometry"; l.cols = append(l.cols, added) }), false},
	} {
		got, ok := addedColumns(stored, c.l)
		if ok != c.copy {
			t.Errorf("%s: copied %v, want %v", c.name, ok, c.copy)
		}
		if want := len(c.l.cols) - len(stored.cols); ok && (len(got) != want || want == 1 && !got["rev"]) {
			t.Errorf("%s: added %v, want %d (rev)", c.name, got, want)
		}
	}
}
