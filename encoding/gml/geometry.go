package gml

import (
	"encoding/xml"
	"errors"
	"fmt"
	"strconv"
	"unicode/utf8"

	"github.com/ingestd/ingestd/feature"
	"github.com/twpayne/go-geom"
)

// geomBuilder collects one geometry's coordinates in go-geom's flat form.
// Its slices are scratch reused from geometry to geometry; build copies them
// into exactly sized slices, so a geometry costs a handful of allocations
// whatever its number of positions.
type geomBuilder struct {
	flat   []float64
	ends   []int       // end offset in flat of each ring or line
	polys  []int       // len(ends) at the end of each polygon
	stride int         // dimension of the first position; 0 until one is read
	crs    feature.CRS // the CRS the geometry (or one of its parts) names
	crsSet bool
}

// gctx is what a geometry element passes down to its parts.
type gctx struct {
	crs feature.CRS
	dim int // srsDimension in scope, 0 when not given
}

// isGeometryElement reports whether a GML element is a geometry the decoder
// reads; it decides which property is the feature's geometry.
func isGeometryElement(local string) bool {
	switch local {
	case "Point", "LineString", "LinearRing", "Curve", "Polygon", "Surface",
		"MultiPoint", "MultiLineString", "MultiCurve", "MultiPolygon", "MultiSurface",
		"MultiGeometry", "CompositeSurface", "CompositeCurve", "OrientableSurface",
		"PolyhedralSurface", "TriangulatedSurface", "Solid", "MultiSolid":
		return true
	}
	return false
}

// geometry reads the geometry element se, whose start was just read, up to
// its end.
func (r *Reader) geometry(se xml.StartElement, inherit feature.CRS) (geom.T, error) {
	return r.geometryIn(se, gctx{crs: inherit})
}

// geometryIn reads the geometry element se in the context of its parent
// (a collection's CRS and srsDimension, or the feature's CRS).
func (r *Reader) geometryIn(se xml.StartElement, parent gctx) (geom.T, error) {
	if se.Name.Local == "MultiGeometry" {
		return r.readCollection(se, parent)
	}
	b := &r.g
	b.flat, b.ends, b.polys = b.flat[:0], b.ends[:0], b.polys[:0]
	b.stride, b.crsSet = 0, false
	ctx, err := r.geomCtx(se, parent)
	if err != nil {
		return nil, err
	}
	kind := se.Name.Local
	switch kind {
	case "Point":
		err = r.readPoint(ctx)
	case "LineString", "LinearRing":
		err = r.readPositions(ctx)
	case "Curve":
		err = r.readCurve(ctx)
	case "Polygon":
		err = r.readPolygon(ctx)
	case "Surface":
		err = r.readSurface(ctx)
	case "MultiPoint":
		err = r.readMulti(ctx, "Point")
	case "MultiLineString", "MultiCurve":
		err = r.readMulti(ctx, "LineString")
	case "MultiPolygon", "MultiSurface":
		err = r.readMulti(ctx, "Polygon")
	default:
		return nil, fmt.Errorf("unsupported geometry gml:%s", kind)
	}
	if err != nil {
		return nil, fmt.Errorf("gml:%s: %w", kind, err)
	}
	srid := parent.crs.SRID
	if b.crsSet {
		srid = b.crs.SRID
	}
	g, err := b.build(kind)
	if err != nil {
		return nil, fmt.Errorf("gml:%s: %w", kind, err)
	}
	return geom.SetSRID(g, srid)
}

// readCollection reads a gml:MultiGeometry as a GeometryCollection: its
// members in order (geometryMember, geometryMembers), each any geometry the
// reader knows, MultiGeometry included, and all in the collection's CRS. An
// empty one is an empty XY collection. The layout follows the GeoJSON
// decoder's rule (decodeCollection).
func (r *Reader) readCollection(se xml.StartElement, parent gctx) (geom.T, error) {
	r.g.crsSet = false
	ctx, err := r.geomCtx(se, parent)
	if err != nil {
		return nil, err
	}
	srid := ctx.crs.SRID
	gc := geom.NewGeometryCollection()
	err = r.children(func(m xml.StartElement) error {
		switch m.Name.Local {
		case "geometryMember", "geometryMembers":
		default:
			return r.skip() // gml:name, gml:boundedBy…
		}
		return r.children(func(g xml.StartElement) error {
			if !r.isGML(g.Name.Space) || !isGeometryElement(g.Name.Local) {
				return fmt.Errorf("unsupported member %s", feature.Snippet(qname(g.Name)))
			}
			mg, err := r.geometryIn(g, ctx)
			if err != nil {
				return err
			}
			if mg.SRID() != srid {
				return fmt.Errorf("parts in two CRSs (%d and %d)", srid, mg.SRID())
			}
			return gc.Push(mg)
		})
	})
	if err != nil {
		return nil, err // the member's error names its element
	}
	feature.SetCollectionLayout(gc)
	return gc.SetSRID(srid), nil
}

// geomCtx reads srsName and srsDimension of a geometry element. A part may
// repeat its parent's srsName (GeoServer does) but not name another CRS:
// a geometry has one SRID.
func (r *Reader) geomCtx(se xml.StartElement, parent gctx) (gctx, error) {
	ctx := parent
	for _, a := range se.Attr {
		if a.Name.Space != "" {
			continue
		}
		switch a.Name.Local {
		case "srsName":
			if a.Value == "" {
				continue
			}
			crs, err := r.parseCRS(a.Value)
			if err != nil {
				return ctx, err
			}
			b := &r.g
			if !b.crsSet {
				b.crs, b.crsSet = crs, true
			} else if b.crs.SRID != crs.SRID {
				return ctx, fmt.Errorf("parts in two CRSs (%d and %d)", b.crs.SRID, crs.SRID)
			}
			ctx.crs = crs
		case "srsDimension", "dimension":
			d, err := strconv.Atoi(a.Value)
			if err != nil || d < 2 || d > 4 {
				return ctx, fmt.Errorf("%s %s: want 2, 3 or 4", a.Name.Local, feature.Snippet(a.Value))
			}
			ctx.dim = d
		}
	}
	return ctx, nil
}

// children calls fn for each child element of the element whose start was
// just read, and consumes the element. fn must consume the child (read to
// its end or call skip). Text between children is ignored.
func (r *Reader) children(fn func(se xml.StartElement) error) error {
	depth := len(r.stack)
	for {
		tok, err := r.token()
		if err != nil {
			return err
		}
		switch tok.Kind {
		case startToken:
			if err := fn(tok.start()); err != nil {
				return err
			}
		case endToken:
			if len(r.stack) < depth {
				return nil
			}
		}
	}
}

// readText reads the text of the element whose start was just read, up to
// its end, into r.text. A child element is an error: coordinates are text.
func (r *Reader) readText(of string) ([]byte, error) {
	r.text = r.text[:0]
	depth := len(r.stack)
	for {
		tok, err := r.token()
		if err != nil {
			return nil, err
		}
		switch tok.Kind {
		case textToken:
			r.text = append(r.text, tok.Text...)
		case startToken:
			return nil, fmt.Errorf("element <%s> inside gml:%s", qname(tok.Name), of)
		case endToken:
			if len(r.stack) < depth {
				return r.text, nil
			}
		}
	}
}

func (r *Reader) readPoint(ctx gctx) error {
	before := len(r.g.flat)
	if err := r.readPositions(ctx); err != nil {
		return err
	}
	if n := len(r.g.flat) - before; r.g.stride == 0 || n != r.g.stride {
		return fmt.Errorf("a point needs one position, got %d coordinates", n)
	}
	return nil
}

// readPositions reads the positions of a Point, LineString, LinearRing or
// LineStringSegment: pos, posList, coordinates, coord, pointProperty.
func (r *Reader) readPositions(ctx gctx) error {
	return r.children(func(se xml.StartElement) error {
		if !r.isGML(se.Name.Space) {
			return r.skip()
		}
		switch se.Name.Local {
		case "pos", "posList":
			pctx, err := r.geomCtx(se, ctx)
			if err != nil {
				return err
			}
			text, err := r.readText(se.Name.Local)
			if err != nil {
				return err
			}
			return r.appendPosList(text, pctx, se.Name.Local == "pos")
		case "coordinates":
			return r.readCoordinates(se, ctx)
		case "coord":
			return r.readCoord(ctx)
		case "pointProperty", "pointRep", "pointMember":
			return r.children(func(pt xml.StartElement) error {
				if pt.Name.Local != "Point" {
					return fmt.Errorf("gml:%s in gml:%s", pt.Name.Local, se.Name.Local)
				}
				pctx, err := r.geomCtx(pt, ctx)
				if err != nil {
					return err
				}
				return r.readPositions(pctx)
			})
		}
		// gml:name, gml:description, gml:metaDataProperty…
		return r.skip()
	})
}

// appendPosList parses a pos (one position, whose dimension is its number
// of values unless srsDimension says) or a posList (positions of
// srsDimension values, 2 by default).
func (r *Reader) appendPosList(text []byte, ctx gctx, single bool) error {
	b := &r.g
	from := len(b.flat)
	var err error
	b.flat, err = appendFloats(b.flat, text)
	if err != nil {
		return err
	}
	n := len(b.flat) - from
	dim := ctx.dim
	switch {
	case single && dim == 0:
		dim = n
	case dim == 0:
		dim = 2
	}
	if n == 0 {
		return nil
	}
	if single && n != dim {
		return fmt.Errorf("pos has %d values, srsDimension is %d", n, dim)
	}
	if n%dim != 0 {
		return fmt.Errorf("posList has %d values, not a multiple of srsDimension %d", n, dim)
	}
	return r.addPositions(from, dim, ctx, true)
}

// addPositions checks the dimension of the positions appended from offset
// from and swaps them to x/y when the CRS is latitude-first. gml3 says the
// positions came in GML 3's pos or posList rather than GML 2's coordinates
// or coord: then a bare "EPSG:n" geographic srsName is latitude-first too,
// as MapServer writes WFS 1.1 (GeoServer writes that form only in GML 2).
func (r *Reader) addPositions(from, dim int, ctx gctx, gml3 bool) error {
	b := &r.g
	if dim < 2 || dim > 4 {
		return fmt.Errorf("positions of %d dimensions", dim)
	}
	if b.stride == 0 {
		b.stride = dim
	} else if dim != b.stride {
		return fmt.Errorf("positions of %d dimensions after positions of %d", dim, b.stride)
	}
	if ctx.crs.LatFirst || (gml3 && ctx.crs.BareLatFirst) {
		f := b.flat
		for i := from; i+1 < len(f); i += dim {
			f[i], f[i+1] = f[i+1], f[i]
		}
	}
	return nil
}

// readCoordinates reads GML 2's coordinates element: tuples separated by ts
// (default a space, meaning any whitespace), values by cs (default ","),
// with decimal as the decimal point (default ".").
func (r *Reader) readCoordinates(se xml.StartElement, ctx gctx) error {
	cs, ts, dec := byte(','), byte(' '), byte('.')
	for _, a := range se.Attr {
		if a.Name.Space != "" {
			continue
		}
		var p *byte
		switch a.Name.Local {
		case "cs":
			p = &cs
		case "ts":
			p = &ts
		case "decimal":
			p = &dec
		default:
			continue
		}
		if len(a.Value) != 1 {
			return fmt.Errorf("coordinates %s=%s: want one character", a.Name.Local, feature.Snippet(a.Value))
		}
		*p = a.Value[0]
	}
	if cs == ts || cs == dec || ts == dec || isDigit(cs) || isDigit(ts) || isDigit(dec) || dec == '-' || dec == '+' {
		return fmt.Errorf("coordinates with cs=%q ts=%q decimal=%q", cs, ts, dec)
	}
	text, err := r.readText("coordinates")
	if err != nil {
		return err
	}
	if dec != '.' {
		// r.text is our own buffer: rewrite the decimal point in place.
		for i, c := range text {
			if c == dec {
				text[i] = '.'
			} else if c == '.' {
				return errors.New("coordinates with a '.' that is not the decimal point")
			}
		}
	}
	b := &r.g
	i := skipSpace(text, 0)
	for i < len(text) {
		from := len(b.flat)
		// One tuple: values separated by cs, ended by ts or the end.
		for {
			f, j, ok := scanFloat(text, i)
			if !ok {
				return fmt.Errorf("bad coordinate %q", field(text, i))
			}
			b.flat = append(b.flat, f)
			k := j
			if !isSpace(cs) {
				k = skipSpace(text, j)
			}
			if k < len(text) && text[k] == cs {
				i = skipSpace(text, k+1)
				continue
			}
			i = j
			break
		}
		if err := r.addPositions(from, len(b.flat)-from, ctx, false); err != nil {
			return err
		}
		// The tuple separator, or the end.
		k := skipSpace(text, i)
		switch {
		case k == len(text):
			i = k
		case !isSpace(ts) && text[k] == ts:
			i = skipSpace(text, k+1)
		case isSpace(ts) && k > i:
			i = k
		default:
			return fmt.Errorf("unexpected %q in coordinates", field(text, k))
		}
	}
	return nil
}

// readCoord reads GML 2's coord: X, Y and optional Z elements.
func (r *Reader) readCoord(ctx gctx) error {
	var xyz [3]float64
	var seen [3]bool
	err := r.children(func(se xml.StartElement) error {
		i := -1
		switch se.Name.Local {
		case "X":
			i = 0
		case "Y":
			i = 1
		case "Z":
			i = 2
		default:
			return r.skip()
		}
		text, err := r.readText(se.Name.Local)
		if err != nil {
			return err
		}
		from := skipSpace(text, 0)
		f, j, ok := scanFloat(text, from)
		if !ok || skipSpace(text, j) != len(text) || seen[i] {
			return fmt.Errorf("bad coord %s %s", se.Name.Local, feature.Snippet(text))
		}
		xyz[i], seen[i] = f, true
		return nil
	})
	if err != nil {
		return err
	}
	if !seen[0] || !seen[1] {
		return errors.New("coord without X and Y")
	}
	dim := 2
	if seen[2] {
		dim = 3
	}
	from := len(r.g.flat)
	r.g.flat = append(r.g.flat, xyz[:dim]...)
	return r.addPositions(from, dim, ctx, false)
}

// readCurve reads a Curve's LineStringSegments as one line; a segment's
// first position repeats the last of the segment before and is dropped.
func (r *Reader) readCurve(ctx gctx) error {
	return r.children(func(se xml.StartElement) error {
		if se.Name.Local != "segments" {
			return r.skip()
		}
		return r.children(func(seg xml.StartElement) error {
			if seg.Name.Local != "LineStringSegment" {
				return fmt.Errorf("unsupported curve segment gml:%s", seg.Name.Local)
			}
			b := &r.g
			start := 0
			if len(b.ends) > 0 {
				start = b.ends[len(b.ends)-1]
			}
			before := len(b.flat)
			sctx, err := r.geomCtx(seg, ctx)
			if err != nil {
				return err
			}
			if err := r.readPositions(sctx); err != nil {
				return err
			}
			if s := b.stride; before > start && len(b.flat) >= before+s && s > 0 && equalPos(b.flat[before-s:before], b.flat[before:before+s]) {
				b.flat = append(b.flat[:before], b.flat[before+s:]...)
			}
			return nil
		})
	})
}

func equalPos(a, b []float64) bool {
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// readRing reads one boundary (exterior, interior, outerBoundaryIs,
// innerBoundaryIs): a LinearRing, or a Ring of curve members.
func (r *Reader) readRing(ctx gctx) error {
	n := 0
	err := r.children(func(se xml.StartElement) error {
		n++
		if n > 1 {
			return errors.New("a boundary with more than one ring")
		}
		rctx, err := r.geomCtx(se, ctx)
		if err != nil {
			return err
		}
		switch se.Name.Local {
		case "LinearRing":
			return r.readPositions(rctx)
		case "Ring":
			return r.children(func(m xml.StartElement) error {
				if m.Name.Local != "curveMember" {
					return r.skip()
				}
				return r.children(func(c xml.StartElement) error {
					cctx, err := r.geomCtx(c, rctx)
					if err != nil {
						return err
					}
					switch c.Name.Local {
					case "LineString":
						return r.readPositions(cctx)
					case "Curve":
						return r.readCurve(cctx)
					}
					return fmt.Errorf("unsupported ring member gml:%s", c.Name.Local)
				})
			})
		}
		return fmt.Errorf("unsupported boundary gml:%s", se.Name.Local)
	})
	if err != nil {
		return err
	}
	r.g.ends = append(r.g.ends, len(r.g.flat))
	return nil
}

// readPolygon reads a Polygon or PolygonPatch: the exterior ring first,
// then the interior rings.
func (r *Reader) readPolygon(ctx gctx) error {
	b := &r.g
	first := len(b.ends)
	err := r.children(func(se xml.StartElement) error {
		switch se.Name.Local {
		case "exterior", "outerBoundaryIs":
			if len(b.ends) != first {
				return fmt.Errorf("gml:%s after another boundary", se.Name.Local)
			}
		case "interior", "innerBoundaryIs":
			if len(b.ends) == first {
				return fmt.Errorf("gml:%s before the exterior", se.Name.Local)
			}
		default:
			return r.skip()
		}
		return r.readRing(ctx)
	})
	if err != nil {
		return err
	}
	b.polys = append(b.polys, len(b.ends))
	return nil
}

// readSurface reads a Surface's PolygonPatches, each a polygon.
func (r *Reader) readSurface(ctx gctx) error {
	return r.children(func(se xml.StartElement) error {
		if se.Name.Local != "patches" {
			return r.skip()
		}
		return r.children(func(p xml.StartElement) error {
			if p.Name.Local != "PolygonPatch" {
				return fmt.Errorf("unsupported surface patch gml:%s", p.Name.Local)
			}
			pctx, err := r.geomCtx(p, ctx)
			if err != nil {
				return err
			}
			return r.readPolygon(pctx)
		})
	})
}

// readMulti reads the members of a multi-geometry whose parts are of kind
// part ("Point", "LineString" or "Polygon").
func (r *Reader) readMulti(ctx gctx, part string) error {
	return r.children(func(se xml.StartElement) error {
		switch se.Name.Local {
		case "pointMember", "pointMembers", "lineStringMember", "curveMember", "curveMembers",
			"polygonMember", "surfaceMember", "surfaceMembers", "geometryMember", "geometryMembers":
		default:
			return r.skip() // gml:name, gml:boundedBy…
		}
		return r.children(func(m xml.StartElement) error {
			return r.readPart(m, ctx, part)
		})
	})
}

func (r *Reader) readPart(se xml.StartElement, parent gctx, part string) error {
	ctx, err := r.geomCtx(se, parent)
	if err != nil {
		return err
	}
	b := &r.g
	kind := se.Name.Local
	switch {
	case part == "Point" && kind == "Point":
		return r.readPoint(ctx)
	case part == "LineString" && (kind == "LineString" || kind == "LinearRing"):
		err = r.readPositions(ctx)
	case part == "LineString" && kind == "Curve":
		err = r.readCurve(ctx)
	case part == "Polygon" && kind == "Polygon":
		return r.readPolygon(ctx)
	case part == "Polygon" && kind == "Surface":
		return r.readSurface(ctx)
	default:
		return fmt.Errorf("unsupported member gml:%s", kind)
	}
	if err != nil {
		return err
	}
	b.ends = append(b.ends, len(b.flat))
	return nil
}

// build turns the collected coordinates into a geometry of the element kind.
func (b *geomBuilder) build(kind string) (geom.T, error) {
	layout := geom.XY
	switch b.stride {
	case 0, 2:
	case 3:
		layout = geom.XYZ
	case 4:
		layout = geom.XYZM
	default:
		return nil, fmt.Errorf("positions of %d dimensions", b.stride)
	}
	flat := make([]float64, len(b.flat))
	copy(flat, b.flat)
	ends := func() []int {
		if len(b.ends) == 0 {
			return nil
		}
		e := make([]int, len(b.ends))
		copy(e, b.ends)
		return e
	}
	switch kind {
	case "Point":
		return geom.NewPointFlat(layout, flat), nil
	case "LineString", "LinearRing", "Curve":
		return geom.NewLineStringFlat(layout, flat), nil
	case "Polygon":
		return geom.NewPolygonFlat(layout, flat, ends()), nil
	case "MultiPoint":
		return geom.NewMultiPointFlat(layout, flat), nil
	case "MultiLineString", "MultiCurve":
		return geom.NewMultiLineStringFlat(layout, flat, ends()), nil
	case "Surface":
		if len(b.polys) == 1 {
			return geom.NewPolygonFlat(layout, flat, ends()), nil
		}
	}
	// MultiPolygon, MultiSurface, a Surface of several patches: one backing
	// array of ends, sliced per polygon.
	all := ends()
	endss := make([][]int, len(b.polys))
	prev := 0
	for i, p := range b.polys {
		endss[i] = all[prev:p:p]
		prev = p
	}
	return geom.NewMultiPolygonFlat(layout, flat, endss), nil
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

func skipSpace(b []byte, i int) int {
	for i < len(b) && isSpace(b[i]) {
		i++
	}
	return i
}

// field returns the text at b[i:] up to the next space, for error messages
// (at most 40 bytes, cut at a rune boundary).
func field(b []byte, i int) string {
	j := i
	for j < len(b) && !isSpace(b[j]) && j-i < 40 {
		j++
	}
	for j < len(b) && j > i && !utf8.RuneStart(b[j]) {
		j--
	}
	return string(b[i:j])
}

// appendFloats parses whitespace-separated numbers (a posList) onto dst.
func appendFloats(dst []float64, b []byte) ([]float64, error) {
	i := 0
	for {
		i = skipSpace(b, i)
		if i == len(b) {
			return dst, nil
		}
		f, j, ok := scanFloat(b, i)
		if !ok || (j < len(b) && !isSpace(b[j])) {
			return dst, fmt.Errorf("bad coordinate %q", field(b, i))
		}
		dst = append(dst, f)
		i = j
	}
}

// pow10 holds the powers of ten that float64 represents exactly.
var pow10 = [...]float64{1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10,
	1e11, 1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22}

// scanFloat parses the decimal number starting at b[i] and returns it with
// the index just past it. Coordinates have at most 17 significant digits
// and small exponents: when the mantissa fits in 53 bits and the power of
// ten is exact, one multiplication or division is correctly rounded
// (Clinger's fast path), with no allocation. Anything else goes to
// strconv.ParseFloat, which also turns a number beyond float64's range into
// ±Inf. NaN, Inf and hexadecimal are not coordinates and are refused.
func scanFloat(b []byte, i int) (float64, int, bool) {
	start := i
	neg := false
	if i < len(b) && (b[i] == '-' || b[i] == '+') {
		neg = b[i] == '-'
		i++
	}
	var mant uint64
	nd, exp := 0, 0
	digits, trunc := false, false
	for ; i < len(b) && isDigit(b[i]); i++ {
		digits = true
		if nd < 19 {
			mant = mant*10 + uint64(b[i]-'0')
			if mant != 0 {
				nd++
			}
		} else {
			exp++
			trunc = true
		}
	}
	if i < len(b) && b[i] == '.' {
		i++
		for ; i < len(b) && isDigit(b[i]); i++ {
			digits = true
			if nd < 19 {
				mant = mant*10 + uint64(b[i]-'0')
				if mant != 0 {
					nd++
				}
				exp--
			} else {
				trunc = true
			}
		}
	}
	if !digits {
		return 0, start, false
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		e, j, ok := scanExponent(b, i+1)
		if !ok {
			return 0, start, false
		}
		exp, i = exp+e, j
	}
	if !trunc && mant < 1<<53 && exp >= -22 && exp <= 22 {
		f := float64(mant)
		if exp < 0 {
			f /= pow10[-exp]
		} else {
			f *= pow10[exp]
		}
		if neg {
			f = -f
		}
		return f, i, true
	}
	return parseFloatSlow(b, start, i)
}

// scanExponent parses the exponent of a number (its sign and digits) at
// b[i], past the 'e', and returns it with the index just past it. Its
// digits stop counting once it passes 100000: the number is then 0 or Inf
// anyway.
func scanExponent(b []byte, i int) (int, int, bool) {
	neg := false
	if i < len(b) && (b[i] == '-' || b[i] == '+') {
		neg = b[i] == '-'
		i++
	}
	if i >= len(b) || !isDigit(b[i]) {
		return 0, i, false
	}
	e := 0
	for ; i < len(b) && isDigit(b[i]); i++ {
		if e < 100000 {
			e = e*10 + int(b[i]-'0')
		}
	}
	if neg {
		e = -e
	}
	return e, i, true
}

// parseFloatSlow parses b[start:end], a number scanFloat read but cannot
// round exactly, with strconv.ParseFloat. A number beyond float64's range
// is ±Inf (or ±0), kept for the store to count as an invalid geometry
// rather than failing the page.
func parseFloatSlow(b []byte, start, end int) (float64, int, bool) {
	f, err := strconv.ParseFloat(string(b[start:end]), 64)
	if err != nil && !errors.Is(err, strconv.ErrRange) {
		return 0, start, false
	}
	return f, end, true
}
