package esrijson

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"sort"
	"strconv"

	"github.com/twpayne/go-geom"
)

// Geometry types of a layer or a response (geometryType).
const (
	TypePoint      = "esriGeometryPoint"
	TypeMultipoint = "esriGeometryMultipoint"
	TypePolyline   = "esriGeometryPolyline"
	TypePolygon    = "esriGeometryPolygon"
	TypeEnvelope   = "esriGeometryEnvelope"
	TypeMultiPatch = "esriGeometryMultiPatch"
)

// ErrCurve is wrapped by the error for a geometry with true curves
// (curveRings, curvePaths, or an arc, Bézier or elliptic segment object in
// a path): the client asks for returnTrueCurves=false, so a server that
// sends them ignored it, and flattening them here would invent vertices.
var ErrCurve = errors.New("true curves are not supported")

// rawGeometry is an Esri JSON geometry's members, each kept raw so that the
// common case decodes in one pass and the rare one (nulls, curves) is
// judged precisely.
type rawGeometry struct {
	X          json.RawMessage `json:"x"`
	Y          json.RawMessage `json:"y"`
	Z          json.RawMessage `json:"z"`
	M          json.RawMessage `json:"m"`
	Points     json.RawMessage `json:"points"`
	Paths      json.RawMessage `json:"paths"`
	Rings      json.RawMessage `json:"rings"`
	CurvePaths json.RawMessage `json:"curvePaths"`
	CurveRings json.RawMessage `json:"curveRings"`
	XMin       json.RawMessage `json:"xmin"`
	HasZ       *bool           `json:"hasZ"`
	HasM       *bool           `json:"hasM"`
}

// split fills rg from the members of the geometry object raw (the last of
// a repeated member wins, as in encoding/json).
func (rg *rawGeometry) split(raw []byte) error {
	return eachMember(raw, func(key, val []byte) error {
		switch keyString(key) {
		case "x":
			rg.X = val
		case "y":
			rg.Y = val
		case "z":
			rg.Z = val
		case "m":
			rg.M = val
		case "points":
			rg.Points = val
		case "paths":
			rg.Paths = val
		case "rings":
			rg.Rings = val
		case "curvePaths":
			rg.CurvePaths = val
		case "curveRings":
			rg.CurveRings = val
		case "xmin":
			rg.XMin = val
		case "hasZ", "hasM":
			var b *bool
			if string(val) != "null" {
				v, err := strconv.ParseBool(string(val))
				if err != nil || (string(val) != "true" && string(val) != "false") {
					return fmt.Errorf("%s is not a boolean: %s", keyString(key), snippet(val))
				}
				b = &v
			}
			if keyString(key) == "hasZ" {
				rg.HasZ = b
			} else {
				rg.HasM = b
			}
		}
		return nil
	})
}

// dims says which ordinates follow x and y in a position.
type dims struct{ hasZ, hasM bool }

func (d dims) layout() geom.Layout {
	switch {
	case d.hasZ && d.hasM:
		return geom.XYZM
	case d.hasZ:
		return geom.XYZ
	case d.hasM:
		return geom.XYM
	}
	return geom.XY
}

// decodeGeometry decodes one Esri JSON geometry. typ is the response's (or
// layer's) geometryType, "" when unknown; d the response's hasZ/hasM. A
// null geometry, and an object with none of the members of a geometry,
// decode as nil.
func decodeGeometry(raw []byte, typ string, d dims, srid int) (geom.T, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	if raw[0] != '{' {
		return nil, fmt.Errorf("geometry is not a JSON object (starts with %q)", raw[0])
	}
	var rg rawGeometry
	if err := rg.split(raw); err != nil {
		return nil, fmt.Errorf("geometry: %w", err)
	}
	// A geometry's own hasZ/hasM (some servers write them per geometry)
	// win over the response's.
	if rg.HasZ != nil {
		d.hasZ = *rg.HasZ
	}
	if rg.HasM != nil {
		d.hasM = *rg.HasM
	}
	var g geom.T
	var err error
	switch {
	case rg.CurveRings != nil:
		return nil, fmt.Errorf("%w (the geometry has curveRings: the server ignored returnTrueCurves=false)", ErrCurve)
	case rg.CurvePaths != nil:
		return nil, fmt.Errorf("%w (the geometry has curvePaths: the server ignored returnTrueCurves=false)", ErrCurve)
	case rg.Rings != nil:
		g, err = polygon(rg.Rings, d)
	case rg.Paths != nil:
		g, err = polyline(rg.Paths, d)
	case rg.Points != nil:
		g, err = multipoint(rg.Points, d)
	case rg.X != nil || rg.Y != nil:
		g, err = point(&rg, d)
	case rg.XMin != nil:
		return nil, errors.New("geometry is an envelope, which is not a feature geometry")
	default:
		// {} (ArcGIS writes it for a feature whose shape is null).
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	if typ != "" && !typeFits(typ, g) {
		return nil, fmt.Errorf("geometry is a %T but the response's geometryType is %s", g, typ)
	}
	return geom.SetSRID(g, srid)
}

// typeFits reports whether g is a geometry of the Esri type typ.
func typeFits(typ string, g geom.T) bool {
	switch g.(type) {
	case *geom.Point:
		return typ == TypePoint
	case *geom.MultiPoint:
		return typ == TypeMultipoint
	case *geom.LineString, *geom.MultiLineString:
		return typ == TypePolyline
	case *geom.Polygon, *geom.MultiPolygon:
		return typ == TypePolygon
	}
	return false
}

// ordinate reads one ordinate of a point: a number, or null or "NaN" for
// none (ArcGIS writes both for an empty point).
func ordinate(raw json.RawMessage, name string) (v float64, present bool, err error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" || string(raw) == `"NaN"` {
		return math.NaN(), false, nil
	}
	if err := json.Unmarshal(raw, &v); err != nil {
		return 0, false, fmt.Errorf("point %s is not a number: %s", name, snippet(raw))
	}
	if math.IsInf(v, 0) {
		return 0, false, fmt.Errorf("point %s is infinite", name)
	}
	return v, true, nil
}

func point(rg *rawGeometry, d dims) (geom.T, error) {
	x, xok, err := ordinate(rg.X, "x")
	if err != nil {
		return nil, err
	}
	y, yok, err := ordinate(rg.Y, "y")
	if err != nil {
		return nil, err
	}
	z, zok, err := ordinate(rg.Z, "z")
	if err != nil {
		return nil, err
	}
	m, mok, err := ordinate(rg.M, "m")
	if err != nil {
		return nil, err
	}
	// Members present say more than flags that are absent.
	d.hasZ = d.hasZ || zok
	d.hasM = d.hasM || mok
	layout := d.layout()
	if !xok || !yok {
		if xok != yok {
			return nil, errors.New("point has one of x and y only")
		}
		return geom.NewPointEmpty(layout), nil
	}
	if !zok {
		z = 0
	}
	coords := []float64{x, y}
	if d.hasZ {
		coords = append(coords, z)
	}
	if d.hasM {
		coords = append(coords, m)
	}
	// x = 0 or y = 0 is a point like any other (pyesridump drops them).
	return geom.NewPointFlat(layout, coords), nil
}

// positions decodes a list of positions ([[x,y(,z)(,m)],…]) into flat
// coordinates of d's layout. A position of two values in a layout with Z
// gets Z = 0, and one without M gets M = NaN; a third value when the
// layer declares neither Z nor M is Z, as GDAL reads it.
func positions(raw json.RawMessage, d *dims, what string) ([][]float64, error) {
	if list := fastPositions(raw); list != nil {
		return list, nil
	}
	var list [][]float64
	// Slow path: find what is wrong, for the message.
	var elems []json.RawMessage
	if err := json.Unmarshal(raw, &elems); err != nil {
		return nil, fmt.Errorf("%s is not an array of positions: %s", what, snippet(raw))
	}
	list = make([][]float64, len(elems))
	for i, e := range elems {
		e = bytes.TrimSpace(e)
		if len(e) > 0 && e[0] == '{' {
			return nil, fmt.Errorf("%w (%s position %d is a curve segment %s: the server ignored returnTrueCurves=false)", ErrCurve, what, i, snippet(e))
		}
		var vals []*float64
		if err := json.Unmarshal(e, &vals); err != nil {
			return nil, fmt.Errorf("%s position %d is not an array of numbers: %s", what, i, snippet(e))
		}
		p := make([]float64, len(vals))
		for j, v := range vals {
			switch {
			case v != nil:
				p[j] = *v
			case j < 2:
				return nil, fmt.Errorf("%s position %d has a null x or y", what, i)
			default:
				p[j] = math.NaN()
			}
		}
		list[i] = p
	}
	return list, nil
}

// flatten appends the positions to flat in d's layout.
func flatten(flat []float64, list [][]float64, d dims, what string) ([]float64, error) {
	for i, p := range list {
		if len(p) < 2 {
			return nil, fmt.Errorf("%s position %d has %d values, want at least x and y", what, i, len(p))
		}
		for _, v := range p {
			if math.IsInf(v, 0) {
				return nil, fmt.Errorf("%s position %d has an infinite ordinate", what, i)
			}
		}
		flat = append(flat, p[0], p[1])
		k := 2
		if d.hasZ {
			if k < len(p) {
				flat = append(flat, p[k])
			} else {
				flat = append(flat, 0)
			}
			k++
		}
		if d.hasM {
			if k < len(p) {
				flat = append(flat, p[k])
			} else {
				flat = append(flat, math.NaN())
			}
		}
	}
	return flat, nil
}

// widen makes a third (and fourth) value Z (and M) when the layer declares
// neither Z nor M but its positions carry them.
func widen(d *dims, lists ...[][]float64) {
	if d.hasZ || d.hasM {
		return
	}
	most := 2
	for _, l := range lists {
		for _, p := range l {
			most = max(most, len(p))
		}
	}
	d.hasZ = most >= 3
	d.hasM = most >= 4
}

func multipoint(raw json.RawMessage, d dims) (geom.T, error) {
	list, err := positions(raw, &d, "points")
	if err != nil {
		return nil, err
	}
	widen(&d, list)
	flat, err := flatten(nil, list, d, "points")
	if err != nil {
		return nil, err
	}
	return geom.NewMultiPointFlat(d.layout(), flat), nil
}

// parts decodes paths or rings: an array of position lists.
func parts(raw json.RawMessage, d *dims, what string) ([][][]float64, error) {
	if all := fastParts(raw); all != nil {
		widen(d, all...)
		return all, nil
	}
	var all [][][]float64
	var elems []json.RawMessage
	if err := json.Unmarshal(raw, &elems); err != nil {
		return nil, fmt.Errorf("%s is not an array of position lists: %s", what, snippet(raw))
	}
	all = make([][][]float64, len(elems))
	for i, e := range elems {
		list, err := positions(e, d, fmt.Sprintf("%s[%d]", what, i))
		if err != nil {
			return nil, err
		}
		all[i] = list
	}
	widen(d, all...)
	return all, nil
}

func polyline(raw json.RawMessage, d dims) (geom.T, error) {
	paths, err := parts(raw, &d, "paths")
	if err != nil {
		return nil, err
	}
	var flat []float64
	ends := make([]int, 0, len(paths))
	for i, p := range paths {
		if flat, err = flatten(flat, p, d, fmt.Sprintf("paths[%d]", i)); err != nil {
			return nil, err
		}
		ends = append(ends, len(flat))
	}
	if len(paths) == 1 {
		return geom.NewLineStringFlat(d.layout(), flat), nil
	}
	return geom.NewMultiLineStringFlat(d.layout(), flat, ends), nil
}

// ring is one polygon ring with what the grouping needs.
type ring struct {
	flat   []float64
	area   float64 // absolute
	parent int     // the smallest ring that contains it, -1 for none
	depth  int     // rings around it
	holes  []int
}

// polygon groups rings into polygons. The Esri JSON rule is that clockwise
// rings are exteriors and counter-clockwise rings holes of the exterior
// that contains them; but servers (and f=geojson output of some versions)
// write rings the other way round, so containment decides, as it does for
// valid input under the rule: a ring inside no other is an exterior, a
// ring inside an exterior is its hole, a ring inside a hole an exterior
// again (an island), and so on. One exterior is a Polygon, several a
// MultiPolygon, no rings an empty Polygon.
func polygon(raw json.RawMessage, d dims) (geom.T, error) {
	all, err := parts(raw, &d, "rings")
	if err != nil {
		return nil, err
	}
	layout := d.layout()
	stride := layout.Stride()
	if len(all) == 0 {
		return geom.NewPolygon(layout), nil
	}
	rings := make([]ring, len(all))
	for i, p := range all {
		flat, err := flatten(nil, p, d, fmt.Sprintf("rings[%d]", i))
		if err != nil {
			return nil, err
		}
		if len(flat) == 0 {
			return nil, fmt.Errorf("rings[%d] is empty", i)
		}
		rings[i] = ring{flat: flat, area: math.Abs(signedArea(flat, stride)), parent: -1}
	}
	// Largest first: a ring's container is placed before it.
	order := make([]int, len(rings))
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(a, b int) bool { return rings[order[a]].area > rings[order[b]].area })
	var outers []int
	for k, i := range order {
		// The smallest larger ring that contains it is the last such in order.
		for j := k - 1; j >= 0; j-- {
			c := order[j]
			if rings[c].area > rings[i].area && ringInside(rings[i].flat, rings[c].flat, stride) {
				rings[i].parent, rings[i].depth = c, rings[c].depth+1
				break
			}
		}
		if rings[i].depth%2 == 0 {
			outers = append(outers, i)
		} else {
			p := rings[i].parent
			rings[p].holes = append(rings[p].holes, i)
		}
	}
	sort.Ints(outers) // document order
	mp := geom.NewMultiPolygon(layout)
	for _, o := range outers {
		flat := append([]float64(nil), rings[o].flat...)
		ends := []int{len(flat)}
		sort.Ints(rings[o].holes)
		for _, h := range rings[o].holes {
			flat = append(flat, rings[h].flat...)
			ends = append(ends, len(flat))
		}
		if err := mp.Push(geom.NewPolygonFlat(layout, flat, ends)); err != nil {
			return nil, err
		}
	}
	if mp.NumPolygons() == 1 {
		return mp.Polygon(0), nil
	}
	return mp, nil
}

// signedArea is the shoelace area of a ring (y up): positive for
// counter-clockwise, negative for clockwise.
func signedArea(flat []float64, stride int) float64 {
	n := len(flat) / stride
	if n < 3 {
		return 0
	}
	// Relative to the first vertex, for precision with projected
	// coordinates in the millions.
	x0, y0 := flat[0], flat[1]
	var a float64
	for i := range n {
		j := (i + 1) % n
		xi, yi := flat[i*stride]-x0, flat[i*stride+1]-y0
		xj, yj := flat[j*stride]-x0, flat[j*stride+1]-y0
		a += xi*yj - xj*yi
	}
	return a / 2
}

// ringInside reports whether ring inner lies inside ring outer, judged by
// its vertices: the first that is not on outer's boundary decides.
func ringInside(inner, outer []float64, stride int) bool {
	for i := 0; i+1 < len(inner); i += stride {
		switch pointInRing(inner[i], inner[i+1], outer, stride) {
		case 1:
			return true
		case -1:
			return false
		}
	}
	return false // every vertex on the boundary: the same ring, not a hole of it
}

// pointInRing is 1 when (x, y) is inside the ring, -1 outside, 0 on its
// boundary (even-odd rule).
func pointInRing(x, y float64, flat []float64, stride int) int {
	n := len(flat) / stride
	inside := false
	for i, j := 0, n-1; i < n; j, i = i, i+1 {
		xi, yi := flat[i*stride], flat[i*stride+1]
		xj, yj := flat[j*stride], flat[j*stride+1]
		if onSegment(x, y, xi, yi, xj, yj) {
			return 0
		}
		if (yi > y) != (yj > y) && x < (xj-xi)*(y-yi)/(yj-yi)+xi {
			inside = !inside
		}
	}
	if inside {
		return 1
	}
	return -1
}

func onSegment(x, y, x1, y1, x2, y2 float64) bool {
	if x < math.Min(x1, x2) || x > math.Max(x1, x2) || y < math.Min(y1, y2) || y > math.Max(y1, y2) {
		return false
	}
	return (x2-x1)*(y-y1)-(y2-y1)*(x-x1) == 0
}
