package gml

import (
	"bytes"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/ingestd/ingestd/feature"
	"github.com/ingestd/ingestd/internal/propjson"
	"github.com/twpayne/go-geom"
)

// maxGMLDepth bounds element nesting. Real GetFeature responses nest about a
// dozen deep; the bound keeps a hostile document from growing the element
// stack without end.
const maxGMLDepth = 256

// maxNamespaceBindings bounds the namespace declarations in scope; real
// responses declare a dozen.
const maxNamespaceBindings = 1024

// gmlNamespacePrefix starts every GML namespace: http://www.opengis.net/gml
// (GML 2 and 3.1.1) and http://www.opengis.net/gml/3.2.
const gmlNamespacePrefix = "http://www.opengis.net/gml"

const xsiNamespace = "http://www.w3.org/2001/XMLSchema-instance"

// level kinds of the collection structure around features.
const (
	levelCollection = iota // wfs:FeatureCollection, gml:FeatureCollection
	levelMember            // gml:featureMember, wfs:member: one feature
	levelMembers           // gml:featureMembers: any number of features
)

type gmlLevel struct {
	kind  int
	depth int // len(stack) while the element is open
}

type nsBinding struct {
	prefix, uri string
	depth       int
}

// gmlProp is one simple property of the feature being read; its value is
// pbuf[start:end].
type gmlProp struct {
	name       string
	start, end int
	null       bool
}

// Reader streams the features of a WFS GetFeature response in GML: GML
// 2.1.2 (WFS 1.0), 3.1.1 (WFS 1.1) and 3.2 (WFS 2.0) FeatureCollections,
// whose features come in gml:featureMember, gml:featureMembers or wfs:member
// elements (nested collections of a WFS 2.0 join included). It reads token by
// token and reuses its buffers: memory grows with the largest feature, never
// with the number of features.
//
// Each feature becomes a Feature:
//
//   - ID: the layer's id property when configured (WithIDProperty), else the
//     gml:id (GML 3) or fid (GML 2) attribute of the feature element.
//   - Geometry: the first property whose content is a GML geometry (Point,
//     LineString, LinearRing, Curve, Polygon, Surface, MultiPoint,
//     MultiLineString, MultiCurve, MultiPolygon, MultiSurface, and
//     MultiGeometry as a GeometryCollection of any of them). Later
//     geometry properties are ignored: a feature row holds one geometry.
//     Its SRID comes from the geometry's srsName, else from the srsName of
//     the feature's or the collection's boundedBy envelope, else from
//     WithSRID (default 4326). Latitude-first CRSs are swapped to x/y: the
//     URN and URI forms of geographic CRSs always, the bare "EPSG:n" form
//     only in GML 3 positions (pos, posList), never in GML 2 coordinates
//     (see ParseSRSName and CRS.BareLatFirst). srsDimension 3 gives an XYZ
//     layout.
//   - Properties: a JSON object of the feature's simple properties, keyed by
//     local name (the namespace prefix dropped). Values are JSON strings
//     holding the element's text exactly as written, numbers included:
//     without the feature type's schema a decoder cannot tell a number from
//     a code that looks like one (parcel PINs and ZIP codes with leading
//     zeros, "1E5" as a zoning code), and guessing per value would give one
//     column mixed types. With the schema (feature.WithTypeValue, which the
//     wfs client sets from DescribeFeatureType) declared numbers and
//     booleans become JSON numbers and booleans. An element with
//     xsi:nil="true" is null; an empty element is "". A property repeated in one feature becomes an array of
//     its values. Complex properties (with child elements that are not the
//     geometry) and GML's own properties (gml:name, gml:description,
//     gml:boundedBy) are left out, as are attributes of property elements.
//
// Text that is not UTF-8 or holds characters XML does not allow (raw
// control characters, &#0;) is repaired to U+FFFD rather than failing the
// page (see text.go). WithLimits bounds a feature's bytes, a property's
// text, an attribute value, the number of properties and the id; text is
// read in pieces, so a huge value fails at its bound without being held.
//
// numberMatched and numberReturned (WFS 2.0) and numberOfFeatures (WFS 1.1,
// taken as numberReturned) are read from the root element; "unknown" is -1.
// A wfs:truncatedResponse element (WFS 2.0.2: the server stopped early) is an
// error. A body cut short, a malformed document, an unsupported geometry or
// an unreadable srsName is an error, never a short page.
type Reader struct {
	src   io.Reader
	dec   xmlTokenizer // made from src at the first token
	tok   xmlToken     // the last token, reused
	cfg   feature.ReaderConfig
	err   error
	index int

	started bool
	done    bool
	stack   []xml.Name
	ns      []nsBinding
	levels  []gmlLevel

	defaultCRS feature.CRS // from WithSRID
	collCRS    feature.CRS // from the collection's boundedBy
	collCRSSet bool

	// srsName parsing is cached: every geometry of a layer names the same.
	lastSRSName string
	lastCRS     feature.CRS

	numberMatched  int
	numberReturned int

	feature feature.Feature
	text    []byte
	props   []gmlProp
	pbuf    []byte
	jbuf    []byte
	g       geomBuilder

	// propNext and propLater are appendProps's buffers, kept between
	// features like pbuf and jbuf.
	propNext  []int
	propLater []bool

	// featStart is the input offset where the feature being read began,
	// -1 between features: FeatureBytes is checked at every token.
	featStart int64
	// repairedSeen is the tokenizer's repair count at the end of the last
	// feature: a feature that ends with a higher count was repaired.
	repairedSeen int
	// nsBytes counts the bytes of the namespace bindings in scope.
	nsBytes int
}

// NewReader returns a reader of the GML document r. It understands the
// same options as geojson.NewReader (feature.ReaderOption).
func NewReader(r io.Reader, opts ...feature.ReaderOption) *Reader {
	cfg := feature.NewReaderConfig(opts)
	return &Reader{
		src:            r,
		cfg:            cfg,
		featStart:      -1,
		defaultCRS:     feature.CRS{SRID: cfg.SRID},
		numberMatched:  -1,
		numberReturned: -1,
	}
}

// NumberMatched is the root element's numberMatched: the size of the whole
// result set across pages, -1 when absent or "unknown". It is known once
// Next has been called.
func (r *Reader) NumberMatched() int { return r.numberMatched }

// NumberReturned is the root element's numberReturned (WFS 2.0) or
// numberOfFeatures (WFS 1.1), -1 when absent or "unknown".
func (r *Reader) NumberReturned() int { return r.numberReturned }

// Next returns the next feature, io.EOF after the last one, or an error that
// names the feature index, the line and what was wrong. The returned
// *Feature is the same value at every call and is overwritten by the next
// call; its Geometry and Properties are fresh at each call, so a shallow copy
// keeps a feature. After an error, Next returns the same error and no feature.
func (r *Reader) Next() (*feature.Feature, error) { return feature.StickyNext(&r.err, r.next) }

// errorf builds the reader's error for the current position. Errors of
// the XML decoder and a premature end of input are wrapped; a limit
// exceeded is returned as the *LimitError, saying where. Messages are
// bounded: names and values quoted in them come from the input.
func (r *Reader) errorf(index int, err error, format string, args ...any) error {
	if errors.Is(err, io.EOF) {
		err = io.ErrUnexpectedEOF
	}
	line := 0
	if r.dec != nil {
		line, _ = r.dec.InputPos()
	}
	var le *feature.LimitError
	if errors.As(err, &le) {
		where := fmt.Sprintf("gml %s (line %d)", feature.Where(index), line)
		if le.Where != "" {
			where += ", " + le.Where
		}
		le.Where = where
		return le
	}
	msg := fmt.Sprintf(format, args...)
	msg = feature.BoundMessage(msg)
	return &feature.DecodeError{Format: "gml", Line: line, Index: index, Msg: msg, Err: feature.Bound(err)}
}

// token returns the next element or character data (valid until the next
// call: read a start element's attributes before reading on), checking what
// the tokenizer does not: that elements nest properly, that the document does not end
// inside one. It tracks namespace bindings itself, because Token's
// translation allocates a map per element and costs a third of the time.
// The tokenizer is fastXML for UTF-8 documents (encoding/xml's own cost
// most of the reader's time), encoding/xml for the rest (xmltok.go).
func (r *Reader) token() (*xmlToken, error) {
	if r.dec == nil {
		r.dec = newXMLTokenizer(r.src)
		if f, ok := r.dec.(*fastXML); ok {
			f.maxValue = int(min(r.cfg.Limits.ValueBytes, math.MaxInt32))
			f.maxTag = r.cfg.Limits.FeatureBytes
		}
	}
	t := &r.tok
	if err := r.dec.next(t); err != nil {
		if err == io.EOF && len(r.stack) > 0 {
			return nil, io.ErrUnexpectedEOF
		}
		return nil, err
	}
	if r.featStart >= 0 {
		if n := r.dec.offset() - r.featStart; n > r.cfg.Limits.FeatureBytes {
			return nil, &feature.LimitError{Name: "feature_bytes", Max: r.cfg.Limits.FeatureBytes}
		}
	}
	switch t.Kind {
	case startToken:
		if len(r.stack) >= maxGMLDepth {
			return nil, fmt.Errorf("elements nested deeper than %d", maxGMLDepth)
		}
		r.stack = append(r.stack, t.Name)
		for _, a := range t.Attr {
			switch {
			case a.Name.Space == "xmlns":
				r.bind(a.Name.Local, a.Value)
			case a.Name.Space == "" && a.Name.Local == "xmlns":
				r.bind("", a.Value)
			}
		}
		if len(r.ns) > maxNamespaceBindings {
			// Every prefix lookup scans them: a document declaring
			// millions would cost time in proportion to its elements
			// times its declarations.
			return nil, fmt.Errorf("more than %d namespace declarations in scope", maxNamespaceBindings)
		}
		if int64(r.nsBytes) > r.cfg.Limits.FeatureBytes {
			// Bindings outlive features (a root may declare them), so
			// they get a bound of their own.
			return nil, &feature.LimitError{Name: "feature_bytes", Max: r.cfg.Limits.FeatureBytes, Where: "namespace declarations in scope"}
		}
	case endToken:
		if len(r.stack) == 0 {
			return nil, fmt.Errorf("unexpected end element </%s>", qname(t.Name))
		}
		if open := r.stack[len(r.stack)-1]; open != t.Name {
			return nil, fmt.Errorf("element <%s> closed by </%s>", qname(open), qname(t.Name))
		}
		r.stack = r.stack[:len(r.stack)-1]
		for len(r.ns) > 0 && r.ns[len(r.ns)-1].depth > len(r.stack) {
			b := r.ns[len(r.ns)-1]
			r.nsBytes -= len(b.prefix) + len(b.uri)
			r.ns = r.ns[:len(r.ns)-1]
		}
	}
	return t, nil
}

// bind records a namespace declaration of the element just started.
func (r *Reader) bind(prefix, uri string) {
	r.ns = append(r.ns, nsBinding{prefix: prefix, uri: uri, depth: len(r.stack)})
	r.nsBytes += len(prefix) + len(uri)
}

func qname(n xml.Name) string {
	if n.Space == "" {
		return n.Local
	}
	return n.Space + ":" + n.Local
}

// namespace resolves a prefix in the current scope.
func (r *Reader) namespace(prefix string) (string, bool) {
	for i := len(r.ns) - 1; i >= 0; i-- {
		if r.ns[i].prefix == prefix {
			return r.ns[i].uri, true
		}
	}
	return "", false
}

// isGML reports whether a prefix names a GML namespace. An unbound "gml"
// prefix counts too: some servers forget the declaration, and no feature
// type names its properties gml:….
func (r *Reader) isGML(prefix string) bool {
	uri, ok := r.namespace(prefix)
	if !ok {
		return prefix == "gml"
	}
	return strings.HasPrefix(uri, gmlNamespacePrefix)
}

// skip consumes the element whose start was just read.
func (r *Reader) skip() error {
	depth := len(r.stack)
	for len(r.stack) >= depth {
		if _, err := r.token(); err != nil {
			return err
		}
	}
	return nil
}

func (r *Reader) next() (*feature.Feature, error) {
	if r.done {
		return nil, io.EOF
	}
	if !r.started {
		if err := r.start(); err != nil {
			return nil, err
		}
	}
	for {
		if len(r.levels) == 0 {
			return nil, r.finish()
		}
		tok, err := r.token()
		if err != nil {
			return nil, r.errorf(-1, err, "")
		}
		switch tok.Kind {
		case startToken:
			t := tok.start()
			lv := r.levels[len(r.levels)-1]
			if lv.kind == levelCollection {
				if err := r.collectionChild(t); err != nil {
					return nil, err
				}
				continue
			}
			if t.Name.Local == "FeatureCollection" {
				// WFS 2.0 answers several type names (or a join) with
				// collections nested in wfs:member.
				r.levels = append(r.levels, gmlLevel{kind: levelCollection, depth: len(r.stack)})
				continue
			}
			return r.readFeature(t)
		case endToken:
			if lv := r.levels[len(r.levels)-1]; len(r.stack) < lv.depth {
				r.levels = r.levels[:len(r.levels)-1]
			}
		}
	}
}

// start reads up to the root element, which must be a FeatureCollection.
func (r *Reader) start() error {
	r.started = true
	for {
		tok, err := r.token()
		if err == io.EOF {
			return r.errorf(-1, io.ErrUnexpectedEOF, "empty document")
		}
		if err != nil {
			return r.errorf(-1, err, "")
		}
		if tok.Kind != startToken {
			if tok.Kind == textToken && len(bytes.TrimSpace(tok.Text)) > 0 {
				return r.errorf(-1, nil, "text before the root element")
			}
			continue
		}
		se := tok.start()
		if se.Name.Local != "FeatureCollection" {
			return r.errorf(-1, nil, "root element <%s> is not a FeatureCollection", qname(se.Name))
		}
		for _, a := range se.Attr {
			if a.Name.Space != "" {
				continue
			}
			switch a.Name.Local {
			case "numberMatched":
				n, err := gmlCount(a.Value)
				if err != nil {
					return r.errorf(-1, err, "numberMatched")
				}
				r.numberMatched = n
			case "numberReturned", "numberOfFeatures":
				n, err := gmlCount(a.Value)
				if err != nil {
					return r.errorf(-1, err, "%s", a.Name.Local)
				}
				r.numberReturned = n
			}
		}
		r.levels = append(r.levels, gmlLevel{kind: levelCollection, depth: len(r.stack)})
		return nil
	}
}

// gmlCount reads numberMatched and friends: a count, or "unknown" (-1).
func gmlCount(v string) (int, error) {
	v = strings.TrimSpace(v)
	if v == "unknown" || v == "" {
		return -1, nil
	}
	n, err := strconv.ParseInt(v, 10, 32)
	if err != nil || n < 0 {
		return -1, fmt.Errorf("%s is not a count", feature.Snippet(v))
	}
	return int(n), nil
}

// collectionChild handles an element directly inside a FeatureCollection.
func (r *Reader) collectionChild(t xml.StartElement) error {
	switch t.Name.Local {
	case "featureMember", "member":
		r.levels = append(r.levels, gmlLevel{kind: levelMember, depth: len(r.stack)})
	case "featureMembers":
		r.levels = append(r.levels, gmlLevel{kind: levelMembers, depth: len(r.stack)})
	case "boundedBy":
		crs, ok, err := r.boundedBy()
		if err != nil {
			return r.errorf(-1, err, "boundedBy")
		}
		if ok && !r.collCRSSet {
			r.collCRS, r.collCRSSet = crs, true
		}
	case "truncatedResponse":
		return r.errorf(r.index, nil, "the server truncated the response (wfs:truncatedResponse)")
	default:
		// wfs:additionalObjects and vendor extras carry no features of the layer.
		if err := r.skip(); err != nil {
			return r.errorf(-1, err, "")
		}
	}
	return nil
}

// finish checks that nothing but whitespace, comments and processing
// instructions follows the root element.
func (r *Reader) finish() error {
	for {
		tok, err := r.token()
		if err == io.EOF {
			r.done = true
			return io.EOF
		}
		if err != nil {
			return r.errorf(-1, err, "after the document")
		}
		if tok.Kind == textToken && len(bytes.TrimSpace(tok.Text)) == 0 {
			continue
		}
		return r.errorf(-1, nil, "data after the document")
	}
}

// boundedBy reads the srsName of the envelope (Envelope, Box) inside the
// boundedBy element just started, and consumes it. An envelope without
// srsName, or gml:Null, gives ok=false.
func (r *Reader) boundedBy() (crs feature.CRS, ok bool, err error) {
	depth := len(r.stack)
	for len(r.stack) >= depth {
		tok, err := r.token()
		if err != nil {
			return feature.CRS{}, false, err
		}
		if tok.Kind != startToken || len(r.stack) != depth+1 {
			continue
		}
		if name := attr(tok.start(), "srsName"); name != "" && !ok {
			if crs, err = r.parseCRS(name); err != nil {
				return feature.CRS{}, false, err
			}
			ok = true
		}
	}
	return crs, ok, nil
}

// attr returns the value of the unqualified attribute local of se.
func attr(se xml.StartElement, local string) string {
	for _, a := range se.Attr {
		if a.Name.Local == local && a.Name.Space == "" {
			return a.Value
		}
	}
	return ""
}

func (r *Reader) parseCRS(name string) (feature.CRS, error) {
	if name == r.lastSRSName && name != "" {
		return r.lastCRS, nil
	}
	crs, err := feature.ParseCRS(name)
	if err != nil {
		return feature.CRS{}, err
	}
	r.lastSRSName, r.lastCRS = name, crs
	return crs, nil
}

// readFeature reads the feature element just started.
func (r *Reader) readFeature(se xml.StartElement) (*feature.Feature, error) {
	r.featStart = r.dec.offset()
	depth := len(r.stack)
	var id string
	for _, a := range se.Attr {
		if (a.Name.Local == "id" && a.Name.Space != "" && r.isGML(a.Name.Space)) || (a.Name.Local == "fid" && a.Name.Space == "") {
			id = a.Value
		}
	}
	r.props = r.props[:0]
	r.pbuf = r.pbuf[:0]
	var g geom.T
	haveGeom := false
	inherit := r.defaultCRS
	if r.collCRSSet {
		inherit = r.collCRS
	}
	for {
		tok, err := r.token()
		if err != nil {
			return nil, r.errorf(r.index, err, "")
		}
		switch tok.Kind {
		case endToken:
			if len(r.stack) < depth {
				return r.buildFeature(id, g)
			}
		case startToken:
			t := tok.start()
			if r.isGML(t.Name.Space) {
				// GML's own properties: the envelope tells the CRS of
				// geometries without srsName; name and description are
				// not the layer's attributes.
				if t.Name.Local == "boundedBy" {
					crs, ok, err := r.boundedBy()
					if err != nil {
						return nil, r.errorf(r.index, err, "boundedBy")
					}
					if ok {
						inherit = crs
					}
				} else if err := r.skip(); err != nil {
					return nil, r.errorf(r.index, err, "")
				}
				continue
			}
			pg, err := r.property(t, !haveGeom, inherit)
			if err != nil {
				return nil, err
			}
			if pg.ok {
				g, haveGeom = pg.g, true
			}
		}
	}
}

type propGeom struct {
	g  geom.T
	ok bool
}

// property reads the property element se of a feature: a simple value into
// r.props, or, when wantGeom, a geometry.
func (r *Reader) property(se xml.StartElement, wantGeom bool, inherit feature.CRS) (propGeom, error) {
	depth := len(r.stack)
	null := false
	for _, a := range se.Attr {
		if a.Name.Local == "nil" && a.Name.Space != "" {
			if uri, _ := r.namespace(a.Name.Space); uri == xsiNamespace || a.Name.Space == "xsi" {
				null = a.Value == "true" || a.Value == "1"
			}
		}
	}
	start := len(r.pbuf)
	complexValue := false
	var pg propGeom
	for {
		tok, err := r.token()
		if err != nil {
			return pg, r.errorf(r.index, err, "property %s", se.Name.Local)
		}
		switch tok.Kind {
		case textToken:
			if !complexValue {
				r.pbuf = append(r.pbuf, tok.Text...)
				if max := r.cfg.Limits.ValueBytes; int64(len(r.pbuf)-start) > max {
					return pg, r.errorf(r.index, &feature.LimitError{Name: "value_bytes", Max: max, Where: "property " + feature.Snippet(se.Name.Local)}, "")
				}
			}
		case startToken:
			t := tok.start()
			complexValue = true
			if wantGeom && !pg.ok && r.isGML(t.Name.Space) && isGeometryElement(t.Name.Local) {
				g, err := r.geometry(t, inherit)
				if err != nil {
					return pg, r.errorf(r.index, err, "geometry %s", se.Name.Local)
				}
				pg = propGeom{g: g, ok: true}
				continue
			}
			if err := r.skip(); err != nil {
				return pg, r.errorf(r.index, err, "property %s", se.Name.Local)
			}
		case endToken:
			if len(r.stack) < depth {
				if complexValue {
					r.pbuf = r.pbuf[:start]
					return pg, nil
				}
				if null {
					r.pbuf = r.pbuf[:start]
				}
				if max := r.cfg.Limits.Properties; len(r.props) >= max {
					return pg, r.errorf(r.index, &feature.LimitError{Name: "properties", Max: int64(max), Where: "more properties than that"}, "")
				}
				r.props = append(r.props, gmlProp{name: se.Name.Local, start: start, end: len(r.pbuf), null: null})
				return pg, nil
			}
		}
	}
}

func (r *Reader) buildFeature(id string, g geom.T) (*feature.Feature, error) {
	if r.cfg.IDProperty != "" {
		id = ""
		for _, p := range r.props {
			if p.name == r.cfg.IDProperty && !p.null {
				id = string(r.pbuf[p.start:p.end])
				break
			}
		}
	}
	var props []byte
	if len(r.props) > 0 {
		r.jbuf = r.appendProps(r.jbuf[:0])
		props = make([]byte, len(r.jbuf))
		copy(props, r.jbuf)
	}
	var repairs feature.Repairs
	if f, ok := r.dec.(*fastXML); ok && f.repaired > r.repairedSeen {
		// Counted from the end of the last feature, so that the feature's
		// own start tag (read before readFeature) is included.
		repairs, r.repairedSeen = feature.RepairedUTF8, f.repaired
	}
	if reason := feature.RefuseID(id, r.cfg.Limits.IDBytes); reason != "" {
		r.feature = feature.Feature{Refused: reason}
	} else {
		r.feature = feature.Feature{ID: id, Geometry: g, Properties: props, Repairs: repairs}
	}
	r.featStart = -1
	r.index++
	return &r.feature, nil
}

// appendProps renders r.props as a JSON object. A name that repeats becomes
// one member whose value is the array of its values, in document order.
//
// Features of a few dozen properties compare names pairwise to chain the
// properties of one name; beyond that a map chains them, so that a feature
// of limits.properties (10,000 by default) properties costs linear time, not
// 10^8 comparisons. Either way the members are written by the same loop.
func (r *Reader) appendProps(b []byte) []byte {
	n := len(r.props)
	// next[i] is the index of the next property named like i, -1 for none;
	// later[i] is set when i is not the first of its name.
	next, later := r.propNext[:0], r.propLater[:0]
	for range n {
		next, later = append(next, -1), append(later, false)
	}
	r.propNext, r.propLater = next, later
	if n > 32 {
		last := make(map[string]int, n)
		for i, p := range r.props {
			if j, ok := last[p.name]; ok {
				next[j], later[i] = i, true
			}
			last[p.name] = i
		}
	} else {
		for i, p := range r.props {
			if later[i] {
				continue
			}
			for prev, j := i, i+1; j < n; j++ {
				if r.props[j].name == p.name {
					next[prev], later[j], prev = j, true, j
				}
			}
		}
	}

	b = append(b, '{')
	first := true
	for i, p := range r.props {
		if later[i] {
			continue
		}
		if !first {
			b = append(b, ',')
		}
		first = false
		b = propjson.AppendString(b, p.name)
		b = append(b, ':')
		if next[i] < 0 {
			b = r.appendValue(b, p)
			continue
		}
		b = append(b, '[')
		for j := i; j >= 0; j = next[j] {
			if j > i {
				b = append(b, ',')
			}
			b = r.appendValue(b, r.props[j])
		}
		b = append(b, ']')
	}
	return append(b, '}')
}

func (r *Reader) appendValue(b []byte, p gmlProp) []byte {
	if p.null {
		return append(b, "null"...)
	}
	if r.cfg.TypeValue != nil {
		if out, ok := r.cfg.TypeValue(b, p.name, r.pbuf[p.start:p.end]); ok {
			return out
		}
	}
	// The XML decoder has checked that the text is valid UTF-8; a stray
	// invalid byte would still become U+FFFD rather than make the object
	// invalid.
	return propjson.AppendString(b, r.pbuf[p.start:p.end])
}

// charsetReader lets the XML decoder read the single-byte encodings that
// MapServer and older GeoServers declare (ISO-8859-1 and its aliases); the
// decoder itself knows only UTF-8.
func charsetReader(label string, input io.Reader) (io.Reader, error) {
	switch strings.ToLower(strings.TrimSpace(label)) {
	case "iso-8859-1", "iso8859-1", "latin1", "latin-1", "l1", "iso_8859-1", "us-ascii", "ascii":
		return &latin1Reader{r: input}, nil
	}
	return nil, fmt.Errorf("unsupported encoding %q (want UTF-8 or ISO-8859-1)", label)
}

// latin1Reader decodes ISO-8859-1 to UTF-8: every byte is its code point.
type latin1Reader struct {
	r   io.Reader
	buf []byte
	out []byte
	off int
}

func (l *latin1Reader) Read(p []byte) (int, error) {
	for l.off == len(l.out) {
		if l.buf == nil {
			l.buf = make([]byte, 16<<10)
		}
		n, err := l.r.Read(l.buf)
		l.out, l.off = l.out[:0], 0
		for _, c := range l.buf[:n] {
			if c < utf8.RuneSelf {
				l.out = append(l.out, c)
			} else {
				l.out = utf8.AppendRune(l.out, rune(c))
			}
		}
		if n == 0 && err != nil {
			return 0, err
		}
	}
	n := copy(p, l.out[l.off:])
	l.off += n
	return n, nil
}
