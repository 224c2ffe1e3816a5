package filegdb

import (
	"github.com/twpayne/go-geom"

	"github.com/ingestd/ingestd/internal/rings"
)

// assemblePolygons groups a polygon shape's rings as GDAL does
// (rings.Group: clockwise shells, each counter-clockwise hole in the
// first shell that contains it). The result is always a MultiPolygon,
// GDAL's type for the layer.
func assemblePolygons(layout geom.Layout, flat []float64, ends []int) *geom.MultiPolygon {
	rs := make([]rings.Ring, len(ends))
	start := 0
	for i, e := range ends {
		rs[i] = rings.Ring{Start: start, End: e}
		start = e
	}
	return rings.MultiPolygon(layout, flat, rings.Group(flat, layout.Stride(), rs))
}

// setSRID gives g its SRID.
func setSRID(g geom.T, srid int) {
	switch g := g.(type) {
	case *geom.Point:
		g.SetSRID(srid)
	case *geom.MultiPoint:
		g.SetSRID(srid)
	case *geom.MultiLineString:
		g.SetSRID(srid)
	case *geom.MultiPolygon:
		g.SetSRID(srid)
	}
}
