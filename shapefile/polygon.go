package shapefile

import (
	"github.com/twpayne/go-geom"

	"github.com/ingestd/ingestd/internal/rings"
)

// assemblePolygons groups a polygon record's rings as GDAL does for a
// well-formed file (rings.Group: clockwise rings are shells,
// counter-clockwise rings holes of the first shell that contains them; a
// hole inside no shell is a shell of its own). One shell is a Polygon,
// several a MultiPolygon.
func assemblePolygons(layout geom.Layout, flat []float64, starts, ends []int) geom.T {
	rs := make([]rings.Ring, len(starts))
	for i := range starts {
		rs[i] = rings.Ring{Start: starts[i] * layout.Stride(), End: ends[i]}
	}
	groups := rings.Group(flat, layout.Stride(), rs)
	if len(groups) == 1 {
		return rings.Polygon(layout, flat, groups[0])
	}
	return rings.MultiPolygon(layout, flat, groups)
}

// setSRID gives g its SRID.
func setSRID(g geom.T, srid int) {
	switch g := g.(type) {
	case *geom.Point:
		g.SetSRID(srid)
	case *geom.MultiPoint:
		g.SetSRID(srid)
	case *geom.LineString:
		g.SetSRID(srid)
	case *geom.MultiLineString:
		g.SetSRID(srid)
	case *geom.Polygon:
		g.SetSRID(srid)
	case *geom.MultiPolygon:
		g.SetSRID(srid)
	}
}
