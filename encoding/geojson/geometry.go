package geojson

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/ingestd/ingestd/feature"
	"github.com/ingestd/ingestd/internal/jsonscan"
	"github.com/twpayne/go-geom"
	"github.com/twpayne/go-geom/encoding/geojson"
)

// decodeGeometry turns a GeoJSON geometry object into a geom.T with srid,
// unless the geometry carries its own legacy "crs" member, which wins.
//
// The common types are parsed straight into go-geom's flat coordinates:
// going through geojson.Unmarshal costs a reflective decode into
// [][]geom.Coord with one allocation per position, about half of the
// decoder's time on polygon layers. Anything the fast path does not know
// still goes through go-geom's decoder, which also defines the errors and the
// layout rules the fast path follows (layout from the first position's
// dimension, XY when empty, every position alike). GeometryCollections are
// decoded here too (decodeCollection), member by member.
//
// A coordinate too large for a float64 (1e400) becomes ±Inf rather than an
// error: the geometry is then the store's to count as invalid, as it counts
// coordinates outside the CRS's range, and the rest of the page is kept.
func decodeGeometry(raw []byte, srid int) (geom.T, error) {
	return decodeGeometryAt(raw, srid, 0)
}

// maxCollectionNesting bounds GeometryCollections inside GeometryCollections.
// Real data nests them once if at all; each level rescans its members (a
// few passes each), so the bound also keeps a hostile feature's cost a
// small multiple of its size.
const maxCollectionNesting = 8

func decodeGeometryAt(raw []byte, srid, nesting int) (geom.T, error) {
	typ, ok, err := memberString(raw, "type")
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, errors.New(`geometry without "type"`)
	}
	if srid, err = geometrySRID(raw, srid); err != nil {
		return nil, err
	}
	depth := coordinatesDepth(typ)
	switch {
	case typ == "GeometryCollection":
		return decodeCollection(raw, srid, nesting)
	case depth == 0:
		return slowGeometry(raw, srid)
	}
	coords, found, err := findMemberFold(raw, "coordinates")
	if err != nil {
		return nil, err
	}
	if !found || isNull(coords) {
		// Read leniently as an empty geometry, as go-geom does, but XY
		// like every other empty geometry: go-geom's NoLayout cannot be
		// encoded for PostGIS.
		return emptyGeometry(typ, srid)
	}
	// Every number but the first follows a comma: one allocation, not a
	// doubling series of them.
	p := coordParser{b: coords, flat: make([]float64, 0, bytes.Count(coords, []byte{','})+1)}
	if err := p.parse(depth); err != nil {
		return nil, fmt.Errorf("%s coordinates: %w", typ, err)
	}
	layout, err := strideLayout(typ, p.stride)
	if err != nil {
		return nil, err
	}
	return geom.SetSRID(p.geometry(typ, layout), srid)
}

// geometrySRID is the SRID of the geometry raw: that of its own legacy "crs"
// member when it has one, else srid.
func geometrySRID(raw []byte, srid int) (int, error) {
	crs, found, err := findMemberFold(raw, "crs")
	if err != nil || !found || isNull(crs) {
		return srid, err
	}
	var c geojson.CRS
	if err := json.Unmarshal(crs, &c); err != nil {
		return srid, fmt.Errorf("crs: %w", jsonWords(err))
	}
	if srid, err = sridOfCRS(&c); err != nil {
		return srid, fmt.Errorf("crs: %w", err)
	}
	return srid, nil
}

// coordinatesDepth is how deep the arrays of the "coordinates" of a
// geometry of type typ nest (a Point's are one array), or 0 for a type the
// fast path does not parse.
func coordinatesDepth(typ string) int {
	switch typ {
	case "Point":
		return 1
	case "LineString", "MultiPoint":
		return 2
	case "Polygon", "MultiLineString":
		return 3
	case "MultiPolygon":
		return 4
	}
	return 0
}

// strideLayout is the layout of positions of stride numbers (0: no
// position, an empty geometry, XY), with go-geom's error for one number.
func strideLayout(typ string, stride int) (geom.Layout, error) {
	switch stride {
	case 0, 2:
		return geom.XY, nil
	case 1:
		return geom.NoLayout, fmt.Errorf("%s coordinates: a position of 1 number(s) (a position is x, y and an optional z and m)", typ)
	case 3:
		return geom.XYZ, nil
	case 4:
		return geom.XYZM, nil
	}
	return geom.NoLayout, fmt.Errorf("%s coordinates: %d dimensions", typ, stride)
}

// geometry is the geometry of type typ (one coordinatesDepth knows) over
// the coordinates p parsed.
func (p *coordParser) geometry(typ string, layout geom.Layout) geom.T {
	switch typ {
	case "Point":
		if p.stride == 0 {
			return geom.NewPointEmpty(layout)
		}
		return geom.NewPointFlat(layout, p.flat)
	case "LineString":
		return geom.NewLineStringFlat(layout, p.flat)
	case "MultiPoint":
		return geom.NewMultiPointFlat(layout, p.flat)
	case "Polygon":
		return geom.NewPolygonFlat(layout, p.flat, p.ends)
	case "MultiLineString":
		return geom.NewMultiLineStringFlat(layout, p.flat, p.ends)
	case "MultiPolygon":
		return geom.NewMultiPolygonFlat(layout, p.flat, p.endss)
	}
	return nil
}

// decodeCollection decodes a GeometryCollection: its members in order, each
// with the collection's SRID (a member naming another CRS is an error: a
// geometry has one SRID). Absent or null "geometries" is an empty
// collection, as go-geom reads it; a null member is an error (go-geom
// would keep a nil member, on which every later use panics). The layout is
// the members' when they agree, XY when there are none; members of mixed
// layouts are kept as they are, the collection's layout then being the
// smallest that covers them (go-geom's rule), for the store to judge.
func decodeCollection(raw []byte, srid, nesting int) (geom.T, error) {
	if nesting >= maxCollectionNesting {
		return nil, fmt.Errorf("GeometryCollections nested deeper than %d", maxCollectionNesting)
	}
	members, found, err := findMemberFold(raw, "geometries")
	if err != nil {
		return nil, err
	}
	gc := geom.NewGeometryCollection()
	if found && !isNull(members) {
		i := jsonscan.SkipWS(members, 0)
		if i >= len(members) || members[i] != '[' {
			return nil, fmt.Errorf(`GeometryCollection "geometries" is %s, not an array`, feature.Snippet(members))
		}
		i++
		for n := 0; ; n++ {
			i = jsonscan.SkipWS(members, i)
			if i < len(members) && members[i] == ']' && n == 0 {
				break
			}
			end, err := scanValue(members, i)
			if err != nil {
				return nil, err
			}
			m := members[i:end]
			if firstByte(m) != '{' {
				return nil, fmt.Errorf("GeometryCollection member %d is %s, not a geometry", n, feature.Snippet(m))
			}
			g, err := decodeGeometryAt(m, srid, nesting+1)
			if err != nil {
				return nil, fmt.Errorf("GeometryCollection member %d: %w", n, err)
			}
			if g == nil {
				return nil, fmt.Errorf("GeometryCollection member %d is null", n)
			}
			if g.SRID() != srid {
				return nil, fmt.Errorf("GeometryCollection member %d is in SRID %d, the collection in %d", n, g.SRID(), srid)
			}
			if err := gc.Push(g); err != nil {
				return nil, err
			}
			i = jsonscan.SkipWS(members, end)
			if i < len(members) && members[i] == ',' {
				i++
				continue
			}
			if i < len(members) && members[i] == ']' {
				break
			}
			return nil, errors.New("GeometryCollection: malformed geometries array")
		}
	}
	feature.SetCollectionLayout(gc)
	return gc.SetSRID(srid), nil
}

// emptyGeometry is an empty XY geometry of the type typ (one the fast path
// knows).
func emptyGeometry(typ string, srid int) (geom.T, error) {
	var g geom.T
	switch typ {
	case "Point":
		g = geom.NewPointEmpty(geom.XY)
	case "LineString":
		g = geom.NewLineString(geom.XY)
	case "MultiPoint":
		g = geom.NewMultiPoint(geom.XY)
	case "Polygon":
		g = geom.NewPolygon(geom.XY)
	case "MultiLineString":
		g = geom.NewMultiLineString(geom.XY)
	default:
		g = geom.NewMultiPolygon(geom.XY)
	}
	return geom.SetSRID(g, srid)
}

// slowGeometry decodes raw with go-geom's own GeoJSON decoder.
func slowGeometry(raw []byte, srid int) (geom.T, error) {
	var g geom.T
	if err := geojson.Unmarshal(raw, &g); err != nil {
		return nil, slowGeometryError(err)
	}
	if g == nil {
		return nil, nil
	}
	return geom.SetSRID(g, srid)
}

// memberString returns the string value of member name of obj.
func memberString(obj []byte, name string) (string, bool, error) {
	v, found, err := findMemberFold(obj, name)
	if err != nil || !found {
		return "", false, err
	}
	var s string
	if err := json.Unmarshal(v, &s); err != nil {
		return "", false, fmt.Errorf("%q: %w", name, jsonWords(err))
	}
	return s, true, nil
}

// coordParser reads nested coordinate arrays of a known depth (1: a
// position, 2: a list of positions, 3: rings, 4: polygons) into go-geom's
// flat form. The input was validated as JSON by encoding/json; the parser
// still checks everything it relies on, so that it cannot panic.
type coordParser struct {
	b      []byte
	i      int
	stride int // dimension of the first position; 0 until one is seen
	flat   []float64
	ends   []int
	endss  [][]int
}

func (p *coordParser) ws() {
	p.i = jsonscan.SkipWS(p.b, p.i)
}

func (p *coordParser) expect(c byte) error {
	p.ws()
	if p.i >= len(p.b) || p.b[p.i] != c {
		return fmt.Errorf("expected %q at byte %d", c, p.i)
	}
	p.i++
	return nil
}

// list calls elem for each element of the array at p.i.
func (p *coordParser) list(elem func() error) error {
	if err := p.expect('['); err != nil {
		return err
	}
	p.ws()
	if p.i < len(p.b) && p.b[p.i] == ']' {
		p.i++
		return nil
	}
	for {
		if err := elem(); err != nil {
			return err
		}
		p.ws()
		if p.i >= len(p.b) {
			return errors.New("unexpected end of coordinates")
		}
		switch p.b[p.i] {
		case ',':
			p.i++
		case ']':
			p.i++
			return nil
		default:
			return fmt.Errorf("unexpected %q at byte %d", p.b[p.i], p.i)
		}
	}
}

func (p *coordParser) position() error {
	before := len(p.flat)
	if err := p.list(p.number); err != nil {
		return err
	}
	n := len(p.flat) - before
	if n < 2 {
		// [] or [x] inside a line or ring: not a position (go-geom
		// refuses it too; only a Point may be []).
		return fmt.Errorf("a position of %d number(s) (a position is x, y and an optional z and m)", n)
	}
	if p.stride == 0 {
		p.stride = n
	} else if n != p.stride {
		return fmt.Errorf("position of %d dimensions after positions of %d", n, p.stride)
	}
	return nil
}

func (p *coordParser) parse(depth int) error {
	var err error
	switch depth {
	case 1:
		// An empty Point ([]) is allowed; it has no stride.
		err = p.list(p.number)
		if err == nil && len(p.flat) > 0 {
			p.stride = len(p.flat)
		}
	case 2:
		err = p.list(p.position)
	case 3:
		err = p.list(func() error {
			if err := p.list(p.position); err != nil {
				return err
			}
			p.ends = append(p.ends, len(p.flat))
			return nil
		})
	case 4:
		err = p.list(func() error {
			p.ends = nil
			if err := p.list(func() error {
				if err := p.list(p.position); err != nil {
					return err
				}
				p.ends = append(p.ends, len(p.flat))
				return nil
			}); err != nil {
				return err
			}
			p.endss = append(p.endss, p.ends)
			return nil
		})
	}
	if err != nil {
		return err
	}
	p.ws()
	if p.i != len(p.b) {
		return fmt.Errorf("unexpected data at byte %d", p.i)
	}
	return nil
}

// number reads one coordinate of a Point. A number beyond float64 is kept
// as ±Inf, as before.
func (p *coordParser) number() error {
	p.ws()
	f, end, err := jsonscan.Number(p.b, p.i)
	if err != nil && !errors.Is(err, strconv.ErrRange) {
		if end == p.i {
			// Not a number at all (a string, an object): show what is there.
			end = min(len(p.b), p.i+32)
			if j := bytes.IndexAny(p.b[p.i:end], ",]"); j > 0 {
				end = p.i + j
			}
		}
		return fmt.Errorf("a coordinate is not a number: %s", feature.Snippet(p.b[p.i:end]))
	}
	p.i = end
	p.flat = append(p.flat, f)
	return nil
}

// slowGeometryError says what go-geom's GeoJSON decoder (encoding/json
// below it) found wrong, in ingestd's words: those libraries name Go types
// and their own packages.
func slowGeometryError(err error) error {
	var dim geojson.ErrDimensionalityTooLow
	var unsupported geojson.ErrUnsupportedType
	switch {
	case errors.As(err, &dim):
		return fmt.Errorf("a position of %d number(s) (a position is x, y and an optional z and m)", int(dim))
	case errors.As(err, &unsupported):
		return fmt.Errorf("unknown geometry type %s", feature.Snippet(string(unsupported)))
	}
	if w := jsonWords(err); w != err {
		return w
	}
	return errors.New("not a GeoJSON geometry")
}

// jsonWords says what encoding/json found wrong in a value, in ingestd's
// words (encoding/json names Go types: "cannot unmarshal string into Go
// value of type float64", "invalid character '[' exceeded max depth");
// any other error is returned as it is.
func jsonWords(err error) error {
	var typeErr *json.UnmarshalTypeError
	var syntaxErr *json.SyntaxError
	switch {
	case errors.As(err, &typeErr):
		where := ""
		if typeErr.Field != "" {
			where = " in " + typeErr.Field
		}
		return fmt.Errorf("a JSON %s%s where GeoJSON wants %s", typeErr.Value, where, feature.JSONType(typeErr.Type))
	case errors.As(err, &syntaxErr) && strings.Contains(syntaxErr.Error(), "exceeded max depth"):
		return fmt.Errorf("nested too deeply (at byte %d)", syntaxErr.Offset)
	case errors.As(err, &syntaxErr):
		return fmt.Errorf("invalid JSON at byte %d", syntaxErr.Offset)
	}
	return err
}
