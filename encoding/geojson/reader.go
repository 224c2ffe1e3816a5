package geojson

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"

	"github.com/ingestd/ingestd/feature"
	"github.com/ingestd/ingestd/internal/jsonscan"
	"github.com/twpayne/go-geom"
	"github.com/twpayne/go-geom/encoding/geojson"
)

type readerState int

const (
	stateStart    readerState = iota
	stateMembers              // inside the top-level object, between members
	stateFeatures             // inside the "features" array
	stateLone                 // the document was a lone Feature, not yet returned
	stateDone
)

// rawFeature is one feature's members as the reader splits them: geometry,
// properties and id stay raw, so no map is built per feature.
type rawFeature struct {
	Type       string
	ID         []byte
	Geometry   []byte
	Properties []byte
}

// Reader streams the features of a GeoJSON FeatureCollection (or of a
// lone Feature), holding one feature in memory at a time. Top-level members
// may come in any order; a "crs" member (the legacy 2008 form) sets the SRID
// of the geometries that follow it. A body cut short is an error, never a
// short page. WithLimits bounds each feature, string, number and id while
// the body streams; properties with invalid UTF-8 or lone surrogate escapes
// are repaired (see Feature.Properties), not refused.
type Reader struct {
	in    *jsonStream
	cfg   feature.ReaderConfig
	state readerState
	err   error // sticky: once set, Next returns it forever
	index int   // index of the next feature
	// first is true before the first member of the document (or feature
	// of the array) is read: no comma precedes it.
	first bool

	raw     rawFeature
	feature feature.Feature

	srid        int
	crsSeen     bool
	topType     string
	sawFeatures bool
	lone        rawFeature

	numberMatched  int
	numberReturned int
	matchedStd     bool // numberMatched itself was seen, not totalFeatures
	// matchedText is numberMatched when it was a string that is not a
	// count ("unknown"), "" otherwise.
	matchedText string

	// links is the raw top-level "links" member (OGC API – Features), nil
	// when none was seen.
	links []byte
}

// NewReader returns a reader of the GeoJSON document r.
func NewReader(r io.Reader, opts ...feature.ReaderOption) *Reader {
	cfg := feature.NewReaderConfig(opts)
	in := newJSONStream(r)
	in.maxToken = cfg.Limits.ValueBytes
	return &Reader{
		in:             in,
		cfg:            cfg,
		srid:           cfg.SRID,
		numberMatched:  -1,
		numberReturned: -1,
	}
}

// NumberMatched is the document's numberMatched (or, failing that, GeoServer's
// totalFeatures): the size of the whole result set across pages. It is -1
// while unknown; members after the features are known only once Next has
// returned io.EOF.
func (r *Reader) NumberMatched() int { return r.numberMatched }

// NumberMatchedText is the document's numberMatched, quoted and cut short
// (feature.Snippet), when it was a JSON string that is not a decimal count
// (WFS 2.0's "unknown"), for a protocol that must not take such a value for
// an absent one (NumberMatched is then -1); "" when
// numberMatched was a number, a decimal string (read as its count), null or
// absent.
func (r *Reader) NumberMatchedText() string { return r.matchedText }

// NumberReturned is the document's numberReturned, -1 while unknown.
func (r *Reader) NumberReturned() int { return r.numberReturned }

// LoneFeature reports whether the document was a single Feature rather
// than a FeatureCollection (known once Next has returned it). A paged
// protocol refuses such a page: it carries no count and no links.
func (r *Reader) LoneFeature() bool { return r.topType == "Feature" && !r.sawFeatures }

// Links is the raw JSON value of the document's top-level "links" member
// (OGC API – Features pages carry their "next" link there), nil when none
// was seen. Like NumberMatched, a member after the features is known only
// once Next has returned io.EOF. It is bounded by Limits.FeatureBytes.
func (r *Reader) Links() []byte { return r.links }

// SRID is the SRID the reader gives geometries at this point of the document.
func (r *Reader) SRID() int { return r.srid }

// Next returns the next feature, io.EOF after the last one, or an error that
// names the feature index and what was wrong. The returned *Feature is the
// same value at every call and is overwritten by the next call; its Geometry
// and Properties are fresh at each call, so a shallow copy (f2 := *f) keeps a
// feature. After an error, Next returns the same error and no feature.
func (r *Reader) Next() (*feature.Feature, error) { return feature.StickyNext(&r.err, r.next) }

// fail builds the reader's error. A limit exceeded is returned as the
// *LimitError, saying where; any other error's text is bounded, so that
// input quoted in it cannot make a huge log line.
func (r *Reader) fail(index int, msg string, err error) error {
	if errors.Is(err, io.EOF) {
		// Inside the document, the end of input is never the end of the page.
		err = io.ErrUnexpectedEOF
	}
	var le *feature.LimitError
	if errors.As(err, &le) {
		if le.Where == "" {
			le.Where = "geojson " + feature.Where(index)
		}
		return le
	}
	return &feature.DecodeError{Index: index, Msg: msg, Err: feature.Bound(err)}
}

func (r *Reader) next() (*feature.Feature, error) {
	for {
		switch r.state {
		case stateDone:
			return nil, io.EOF
		case stateStart:
			c, err := r.in.peek()
			if err == io.EOF {
				return nil, &feature.DecodeError{Index: -1, Msg: "empty document", Err: io.ErrUnexpectedEOF}
			}
			if err != nil {
				return nil, r.fail(-1, "", err)
			}
			if c != '{' {
				return nil, r.fail(-1, fmt.Sprintf("document is not a JSON object (starts with %q)", c), nil)
			}
			r.in.pos++
			r.state, r.first = stateMembers, true
		case stateFeatures:
			c, err := r.in.peek()
			if err != nil {
				return nil, r.fail(r.index, "", unexpectedEnd(err))
			}
			if c == ']' {
				r.in.pos++
				// The array may have been empty: a comma comes before the
				// next member either way.
				r.state, r.first = stateMembers, false
				continue
			}
			if !r.first {
				if err := r.in.expect(','); err != nil {
					return nil, r.fail(r.index, "in features", err)
				}
			}
			r.first = false
			return r.decodeFeature()
		case stateLone:
			r.state = stateDone
			r.raw = r.lone
			r.raw.Type = "Feature"
			return r.buildFeature()
		case stateMembers:
			if err := r.member(); err != nil {
				return nil, err
			}
		}
	}
}

// member reads one top-level member, or the end of the document.
func (r *Reader) member() error {
	c, err := r.in.peek()
	if err != nil {
		return r.fail(-1, "", unexpectedEnd(err))
	}
	if c == '}' {
		r.in.pos++
		return r.endDocument()
	}
	if !r.first {
		if err := r.in.expect(','); err != nil {
			return r.fail(-1, "", err)
		}
	}
	r.first = false
	key, err := r.memberName()
	if err != nil {
		return err
	}
	if key == "features" {
		return r.openFeatures()
	}
	// bbox, timeStamp, links, name… are read whole and dropped: they are
	// small in every WFS response, and the response size is capped anyway.
	v, err := r.in.value(r.cfg.Limits.FeatureBytes)
	if err != nil {
		return r.fail(-1, "member "+feature.Snippet(key), err)
	}
	return r.keepMember(key, v)
}

// endDocument checks what follows the document's closing brace, and the
// document as a whole.
func (r *Reader) endDocument() error {
	// Only whitespace may follow: a second document would be a server
	// concatenating responses, not something to half-read.
	if c, err := r.in.peek(); err != io.EOF {
		if err != nil {
			return r.fail(-1, "after the document", err)
		}
		return r.fail(-1, fmt.Sprintf("data after the document (%q)", c), nil)
	}
	return r.finish()
}

// memberName reads a top-level member's name and the colon after it.
func (r *Reader) memberName() (string, error) {
	rawKey, err := r.in.value(r.cfg.Limits.FeatureBytes)
	if err != nil {
		return "", r.fail(-1, "", err)
	}
	if rawKey[0] != '"' {
		return "", r.fail(-1, fmt.Sprintf("unexpected %s, want a member name", feature.Snippet(rawKey)), nil)
	}
	key, err := unquote(rawKey)
	if err != nil {
		return "", r.fail(-1, "", err)
	}
	if err := r.in.expect(':'); err != nil {
		return "", r.fail(-1, "member "+feature.Snippet(key), err)
	}
	return key, nil
}

// openFeatures enters the "features" array, whose features Next then
// reads one at a time.
func (r *Reader) openFeatures() error {
	if r.sawFeatures {
		return r.fail(-1, `second "features" member`, nil)
	}
	r.sawFeatures = true
	c, err := r.in.peek()
	if err != nil {
		return r.fail(-1, `member "features"`, unexpectedEnd(err))
	}
	if c != '[' {
		v, _ := r.in.value(r.cfg.Limits.FeatureBytes)
		return r.fail(-1, fmt.Sprintf(`member "features" is %s, not an array`, feature.Snippet(v)), nil)
	}
	r.in.pos++
	r.state, r.first = stateFeatures, true
	return nil
}

// keepMember keeps what the reader needs of the top-level member key whose
// value is v: the document's type, counts, CRS and links, and the members
// of a lone Feature. Other members are dropped.
func (r *Reader) keepMember(key string, v []byte) error {
	switch key {
	case "type":
		if err := json.Unmarshal(v, &r.topType); err != nil {
			return r.fail(-1, `member "type"`, jsonWords(err))
		}
	case "numberMatched", "totalFeatures":
		n, err := r.count(key, v)
		if err != nil {
			return err
		}
		// numberMatched is the standard; GeoServer's totalFeatures (WFS 1.x)
		// only stands in for it.
		if key == "numberMatched" {
			r.numberMatched, r.matchedStd, r.matchedText = n, true, ""
			if n < 0 && firstByte(v) == '"' {
				s, _ := unquote(v)
				r.matchedText = feature.Snippet(s)
			}
		} else if !r.matchedStd {
			r.numberMatched = n
		}
	case "numberReturned":
		n, err := r.count(key, v)
		if err != nil {
			return err
		}
		r.numberReturned = n
	case "crs":
		return r.crsMember(v)
	case "links":
		r.links = append(r.links[:0], v...)
	case "id":
		r.lone.ID = append(r.lone.ID[:0], v...)
	case "geometry":
		r.lone.Geometry = append(r.lone.Geometry[:0], v...)
	case "properties":
		r.lone.Properties = append([]byte(nil), v...)
	}
	return nil
}

// unquote returns the string a JSON string literal holds.
func unquote(lit []byte) (string, error) {
	if len(lit) >= 2 && lit[0] == '"' && lit[len(lit)-1] == '"' && bytes.IndexByte(lit, '\\') < 0 {
		return string(lit[1 : len(lit)-1]), nil
	}
	var s string
	err := json.Unmarshal(lit, &s)
	return s, err
}

// finish checks the document once its closing brace is read.
func (r *Reader) finish() error {
	switch {
	case r.sawFeatures && (r.topType == "FeatureCollection" || r.topType == ""):
		r.state = stateDone
	case r.topType == "Feature" && !r.sawFeatures:
		r.state = stateLone
	case r.topType == "FeatureCollection":
		return r.fail(-1, `FeatureCollection without a "features" member`, nil)
	case r.topType == "":
		return r.fail(-1, `neither a FeatureCollection nor a Feature (no "type", no "features")`, nil)
	default:
		return r.fail(-1, fmt.Sprintf("type %s is not a FeatureCollection or a Feature", feature.Snippet(r.topType)), nil)
	}
	return nil
}

// count reads numberMatched and friends: a number, a decimal string
// ("30": some servers quote their counts), or "unknown" and null (-1).
func (r *Reader) count(key string, num []byte) (int, error) {
	switch firstByte(num) {
	case '"':
		if s, err := unquote(num); err == nil {
			if n, err := strconv.ParseInt(strings.TrimSpace(s), 10, 64); err == nil && n >= 0 && n <= math.MaxInt32 {
				return int(n), nil
			}
		}
		return -1, nil // "unknown"
	case 'n':
		return -1, nil // null
	}
	n, err := strconv.ParseInt(string(num), 10, 64)
	if err != nil || n < 0 || n > math.MaxInt32 {
		return -1, r.fail(-1, fmt.Sprintf("member %q is %s, not a count", key, feature.Snippet(num)), nil)
	}
	return int(n), nil
}

func (r *Reader) crsMember(raw []byte) error {
	var crs *geojson.CRS
	if err := json.Unmarshal(raw, &crs); err != nil {
		return r.fail(-1, `member "crs"`, jsonWords(err))
	}
	if crs == nil {
		return nil // crs: null is "unknown"; keep the default
	}
	srid, err := sridOfCRS(crs)
	if err != nil {
		return r.fail(-1, `member "crs"`, err)
	}
	if r.index > 0 && srid != r.srid {
		// The features already handed out carry r.srid; silently mixing two
		// CRSs in one page would corrupt the mirror.
		return r.fail(-1, fmt.Sprintf("crs EPSG:%d comes after %d features that were read as SRID %d; configure the layer's SRID", srid, r.index, r.srid), nil)
	}
	r.srid = srid
	r.crsSeen = true
	return nil
}

// sridOfCRS understands the legacy GeoJSON crs member: named CRSs
// (EPSG:n, urn:ogc:def:crs:EPSG::n, http://www.opengis.net/def/crs/EPSG/0/n,
// the CRS84 spellings) and the older {"type":"EPSG","properties":{"code":n}}.
func sridOfCRS(crs *geojson.CRS) (int, error) {
	switch strings.ToLower(crs.Type) {
	case "name":
		name, _ := crs.Properties["name"].(string)
		return sridOfName(name)
	case "epsg":
		switch c := crs.Properties["code"].(type) {
		case float64:
			if c > 0 && c < math.MaxInt32 && c == math.Trunc(c) {
				return int(c), nil
			}
		case string:
			return sridOfName("EPSG:" + c)
		}
		return 0, fmt.Errorf("EPSG crs without a usable code: %v", crs.Properties["code"])
	}
	return 0, fmt.Errorf("unsupported crs type %s", feature.Snippet(crs.Type))
}

// sridOfName reads a named CRS with the same parser as GML's srsName. The
// axis order it implies is ignored: GeoJSON positions are x/y (longitude
// first) whatever the legacy crs member names, as the 2008 specification
// says and as GDAL and GeoServer write them.
func sridOfName(name string) (int, error) {
	c, err := feature.ParseCRS(name)
	if err != nil {
		return 0, err
	}
	return c.SRID, nil
}

func (r *Reader) decodeFeature() (*feature.Feature, error) {
	v, err := r.in.value(r.cfg.Limits.FeatureBytes)
	if err != nil {
		return nil, r.fail(r.index, "", err)
	}
	if err := r.splitFeature(v); err != nil {
		return nil, r.fail(r.index, "", err)
	}
	return r.buildFeature()
}

// splitFeature sets r.raw from the members of the feature object v (valid
// JSON), matching names as encoding/json matches struct fields (exact or
// case-insensitive; the last of repeated members wins). ID and Geometry
// reuse their buffers, being consumed before the next feature; Properties
// are fresh bytes, which callers may keep.
func (r *Reader) splitFeature(v []byte) error {
	r.raw = rawFeature{ID: r.raw.ID[:0], Geometry: r.raw.Geometry[:0]}
	if v[0] != '{' {
		return fmt.Errorf("feature is %s, not an object", feature.Snippet(v))
	}
	var props []byte
	for i := 1; ; {
		i = jsonscan.SkipWS(v, i)
		switch v[i] {
		case '}':
			if props != nil {
				r.raw.Properties = append([]byte(nil), props...)
			}
			return nil
		case ',':
			i++
			continue
		}
		kend, escaped, err := scanString(v, i)
		if err != nil {
			return err
		}
		key := v[i+1 : kend-1]
		if escaped {
			k, err := unquote(v[i:kend])
			if err != nil {
				return err
			}
			key = []byte(k)
		}
		i = jsonscan.SkipWS(v, jsonscan.SkipWS(v, kend)+1) // past ':'
		vend, err := scanValue(v, i)
		if err != nil {
			return err
		}
		val := v[i:vend]
		i = vend
		switch {
		case memberIs(key, "type"):
			if string(val) == "null" {
				continue
			}
			if val[0] != '"' {
				return fmt.Errorf("member %s is %s, not a string", feature.Snippet(key), feature.Snippet(val))
			}
			if r.raw.Type, err = unquote(val); err != nil {
				return err
			}
		case memberIs(key, "id"):
			r.raw.ID = append(r.raw.ID[:0], val...)
		case memberIs(key, "geometry"):
			r.raw.Geometry = append(r.raw.Geometry[:0], val...)
		case memberIs(key, "properties"):
			props = val
		}
	}
}

// memberIs matches a member name as encoding/json matches a struct field.
func memberIs(key []byte, name string) bool {
	return string(key) == name || strings.EqualFold(string(key), name)
}

func (r *Reader) buildFeature() (*feature.Feature, error) {
	if r.raw.Type != "Feature" {
		return nil, r.fail(r.index, fmt.Sprintf("type is %s, want \"Feature\"", feature.Snippet(r.raw.Type)), nil)
	}
	g, err := r.geometry(r.raw.Geometry)
	if err != nil {
		return nil, r.fail(r.index, "geometry", err)
	}
	props := r.raw.Properties
	var repairs feature.Repairs
	if isNull(props) {
		props = nil
	} else if t := firstByte(props); t != '{' {
		return nil, r.fail(r.index, "properties is not an object", nil)
	} else {
		n, repair := feature.JSONTextStats(props)
		if n > r.cfg.Limits.Properties {
			return nil, &feature.LimitError{Name: "properties", Max: int64(r.cfg.Limits.Properties),
				Where: fmt.Sprintf("geojson feature %d has %d", r.index, n)}
		}
		if repair != 0 {
			props = feature.RepairJSONText(props)
			repairs = repair
		}
	}
	var id string
	if r.cfg.IDProperty != "" {
		v, found, err := findMember(props, r.cfg.IDProperty)
		if err != nil {
			return nil, r.fail(r.index, "properties", err)
		}
		if found {
			if id, err = renderID(v); err != nil {
				return nil, r.fail(r.index, "id property "+feature.Snippet(r.cfg.IDProperty), err)
			}
		}
	} else if id, err = renderID(r.raw.ID); err != nil {
		return nil, r.fail(r.index, "id", err)
	}
	if reason := feature.RefuseID(id, r.cfg.Limits.IDBytes); reason != "" {
		r.feature = feature.Feature{Refused: reason}
	} else {
		fixed := feature.FixUTF8(id)
		if fixed != id {
			repairs |= feature.RepairedUTF8
		}
		r.feature = feature.Feature{ID: fixed, Geometry: g, Properties: props, Repairs: repairs}
	}
	r.index++
	return &r.feature, nil
}

func (r *Reader) geometry(raw []byte) (geom.T, error) {
	if isNull(raw) {
		return nil, nil
	}
	if firstByte(raw) != '{' {
		return nil, errors.New("not an object")
	}
	return decodeGeometry(raw, r.srid)
}

func isNull(b []byte) bool {
	b = bytes.TrimSpace(b)
	return len(b) == 0 || string(b) == "null"
}

func firstByte(b []byte) byte {
	b = bytes.TrimLeft(b, " \t\r\n")
	if len(b) == 0 {
		return 0
	}
	return b[0]
}

// renderID turns a raw JSON id into the string form a feature ID takes:
// strings as they are, numbers canonically (42, 42.0 and 4.2e1 are all "42";
// integers of any size keep their digits), null or absent as "".
func renderID(raw []byte) (string, error) {
	b := bytes.TrimSpace(raw)
	if len(b) == 0 || string(b) == "null" {
		return "", nil
	}
	switch c := b[0]; {
	case c == '"':
		if bytes.IndexByte(b, '\\') < 0 && len(b) >= 2 && b[len(b)-1] == '"' {
			return string(b[1 : len(b)-1]), nil
		}
		var s string
		if err := json.Unmarshal(b, &s); err != nil {
			return "", err
		}
		return s, nil
	case c == '-' || (c >= '0' && c <= '9'):
		return canonicalNumber(string(b))
	}
	return "", fmt.Errorf("is %s, want a string or a number", feature.Snippet(b))
}

func canonicalNumber(s string) (string, error) {
	plainInt := len(s) > 0
	for i := 0; i < len(s); i++ {
		if !(s[i] >= '0' && s[i] <= '9') && !(i == 0 && s[i] == '-' && len(s) > 1) {
			plainInt = false
			break
		}
	}
	if plainInt {
		if s == "-0" {
			return "0", nil
		}
		return s, nil
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsInf(f, 0) || math.IsNaN(f) {
		return "", fmt.Errorf("number %s out of range", feature.Snippet(s))
	}
	if f == math.Trunc(f) && math.Abs(f) < 1<<53 {
		return strconv.FormatInt(int64(f), 10), nil
	}
	return strconv.FormatFloat(f, 'f', -1, 64), nil
}

// findMember returns the raw value of member name of the JSON object obj, or
// found=false. It scans bytes instead of building a map: only the ID is
// wanted, once per feature. obj has been validated (validJSON), but the
// scan still checks its bounds so that it cannot panic.
func findMember(obj []byte, name string) (value []byte, found bool, err error) {
	return scanMember(obj, name, false)
}

// findMemberFold is findMember matching keys as encoding/json matches struct
// fields (case-insensitively), for members go-geom would decode that way.
func findMemberFold(obj []byte, name string) (value []byte, found bool, err error) {
	return scanMember(obj, name, true)
}

func scanMember(obj []byte, name string, fold bool) (value []byte, found bool, err error) {
	i := jsonscan.SkipWS(obj, 0)
	if i >= len(obj) || obj[i] == 'n' { // absent or null properties
		return nil, false, nil
	}
	if obj[i] != '{' {
		return nil, false, errors.New("not an object")
	}
	i++
	for {
		i = jsonscan.SkipWS(obj, i)
		if i >= len(obj) {
			return nil, false, io.ErrUnexpectedEOF
		}
		switch obj[i] {
		case '}':
			return value, found, nil
		case ',':
			i++
			continue
		case '"':
		default:
			return nil, false, fmt.Errorf("unexpected %q in object", obj[i])
		}
		kstart := i
		kend, escaped, err := scanString(obj, i)
		if err != nil {
			return nil, false, err
		}
		i = jsonscan.SkipWS(obj, kend)
		if i >= len(obj) || obj[i] != ':' {
			return nil, false, errors.New("missing ':' after key")
		}
		i = jsonscan.SkipWS(obj, i+1)
		vstart := i
		vend, err := scanValue(obj, i)
		if err != nil {
			return nil, false, err
		}
		i = vend
		key := obj[kstart+1 : kend-1]
		if escaped {
			var k string
			if json.Unmarshal(obj[kstart:kend], &k) != nil {
				continue
			}
			key = []byte(k)
		}
		match := string(key) == name || (fold && strings.EqualFold(string(key), name))
		if match {
			// Keep scanning: with duplicate keys the last one wins, as in
			// encoding/json.
			value, found = obj[vstart:vend], true
		}
	}
}

// scanString returns the index just past the string starting at b[i] == '"'.
func scanString(b []byte, i int) (end int, escaped bool, err error) {
	for j := i + 1; j < len(b); j++ {
		for j < len(b) && b[j] != '"' && b[j] != '\\' {
			j++
		}
		if j == len(b) {
			break
		}
		if b[j] == '"' {
			return j + 1, escaped, nil
		}
		escaped = true
		j++ // the escaped byte; the loop steps past it
	}
	return 0, false, io.ErrUnexpectedEOF
}

// structural marks the bytes scanValue stops at inside a container;
// scalarEnd those that end a scalar.
var (
	structural = [256]bool{'"': true, '{': true, '[': true, '}': true, ']': true}
	scalarEnd  = [256]bool{',': true, '}': true, ']': true, ' ': true, '\t': true, '\r': true, '\n': true}
)

// scanValue returns the index just past the value starting at b[i].
func scanValue(b []byte, i int) (int, error) {
	if i >= len(b) {
		return 0, io.ErrUnexpectedEOF
	}
	switch b[i] {
	case '"':
		end, _, err := scanString(b, i)
		return end, err
	case '{', '[':
		depth := 0
		for j := i; j < len(b); j++ {
			if !structural[b[j]] {
				continue // most bytes: one lookup, not a switch
			}
			switch b[j] {
			case '"':
				end, _, err := scanString(b, j)
				if err != nil {
					return 0, err
				}
				j = end - 1
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return j + 1, nil
				}
			}
		}
		return 0, io.ErrUnexpectedEOF
	}
	j := i
	for j < len(b) && !scalarEnd[b[j]] {
		j++
	}
	if j == i {
		return 0, fmt.Errorf("unexpected %q", b[i])
	}
	return j, nil
}
