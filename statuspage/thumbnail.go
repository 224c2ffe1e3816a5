package statuspage

import (
	"context"
	"fmt"
	"math"
	"strconv"

	"github.com/jackc/pgx/v5"
)

// BBox is a jurisdiction's declared extent in EPSG:4326 (longitude first),
// as jurisdictions.yaml's bbox.
type BBox struct{ MinX, MinY, MaxX, MaxY float64 }

// Thumbnail is an SVG sketch of a feed's current geometries, drawn by
// PostGIS (ST_AsSVG), next to its jurisdiction's bbox when one is set.
type Thumbnail struct {
	// Sampled is the number of features drawn (0: nothing to draw).
	Sampled int64
	// Paths is the SVG path data of lines and polygons, Dots of points
	// (zero-length segments drawn with round caps).
	Paths, Dots string
	// ViewBox covers the sample and the bbox, with a margin, in SVG units
	// (x = longitude, y = -latitude).
	ViewBox string
	// Extent is the sample's extent (EPSG:4326).
	Extent BBox
	// BBox is the jurisdiction's declared extent, nil when none is set.
	BBox *BBox
	// Far is set when the sample's extent does not touch the bbox: a
	// swapped axis order or a wrong CRS.
	Far bool
}

// Rect returns b as SVG rectangle attributes' values (y downwards).
func (b BBox) Rect() (x, y, w, h string) {
	f := func(v float64) string { return strconv.FormatFloat(v, 'g', 10, 64) }
	return f(b.MinX), f(-b.MaxY), f(b.MaxX - b.MinX), f(b.MaxY - b.MinY)
}

// Bytes is the size of the thumbnail's SVG path data.
func (t Thumbnail) Bytes() int { return len(t.Paths) + len(t.Dots) }

// thumbnail reads a feed's sketch: a Bernoulli sample of about
// h.opts.thumbFeatures of its count features, bounded to h.opts.thumbBytes
// bytes of path data.
func (h *Handler) thumbnail(ctx context.Context, jurisdiction, feed string, count int64, bbox BBox, hasBBox bool) (Thumbnail, error) {
	var t Thumbnail
	if hasBBox {
		t.BBox = &bbox
	}
	want := float64(h.opts.thumbFeatures)
	// Sample twice what is wanted (LIMIT keeps it to that), so a sample
	// that comes out a little short still fills the sketch.
	pct := 100.0
	if count > 0 {
		pct = math.Min(100, 200*want/float64(count))
	}
	var minx, miny, maxx, maxy *float64
	// An unnamed statement: planned at each call, not kept prepared on
	// the connection. ingestd_layer_sample opens the feed's layer alone.
	err := h.pool.QueryRow(ctx, h.sql.Get("thumbnail"), pgx.QueryExecModeExec, jurisdiction, feed, pct, h.opts.thumbFeatures, h.opts.thumbBytes).
		Scan(&t.Paths, &t.Dots, &t.Sampled, &minx, &miny, &maxx, &maxy)
	if err != nil {
		return t, fmt.Errorf("statuspage: thumbnail of %s/%s: %w", jurisdiction, feed, err)
	}
	view := t.BBox
	if minx != nil {
		t.Extent = BBox{*minx, *miny, *maxx, *maxy}
		view = &t.Extent
		if t.BBox != nil {
			u := union(t.Extent, *t.BBox)
			view = &u
			t.Far = t.Extent.MaxX < bbox.MinX || t.Extent.MinX > bbox.MaxX ||
				t.Extent.MaxY < bbox.MinY || t.Extent.MinY > bbox.MaxY
		}
	}
	if view != nil {
		t.ViewBox = viewBox(*view)
	}
	return t, nil
}

func union(a, b BBox) BBox {
	return BBox{math.Min(a.MinX, b.MinX), math.Min(a.MinY, b.MinY), math.Max(a.MaxX, b.MaxX), math.Max(a.MaxY, b.MaxY)}
}

// viewBox is b with a 5 % margin (and at least a little room around a
// single point), as an SVG viewBox with y downwards.
func viewBox(b BBox) string {
	size := math.Max(b.MaxX-b.MinX, b.MaxY-b.MinY)
	pad := math.Max(size*0.05, 1e-4)
	f := func(v float64) string { return strconv.FormatFloat(v, 'g', 10, 64) }
	return f(b.MinX-pad) + " " + f(-b.MaxY-pad) + " " + f(b.MaxX-b.MinX+2*pad) + " " + f(b.MaxY-b.MinY+2*pad)
}
