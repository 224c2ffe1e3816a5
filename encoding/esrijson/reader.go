package esrijson

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/ingestd/ingestd/crs"
	"github.com/ingestd/ingestd/feature"
)

// Field is one field of a layer or response ("fields"): its name and its
// esriFieldType*.
type Field struct {
	Name string `json:"name"`
	Type string `json:"type"`
}

// Field types whose values the reader rewrites or reads.
const (
	FieldOID  = "esriFieldTypeOID"
	FieldDate = "esriFieldTypeDate"
)

// SpatialReference is an Esri JSON spatialReference.
type SpatialReference struct {
	WKID       int    `json:"wkid"`
	LatestWKID int    `json:"latestWkid"`
	WKT        string `json:"wkt"`
}

// SRID is the EPSG code of sr: latestWkid first (wkid may be an Esri code
// such as 102100), with Esri's codes for Web Mercator mapped to 3857; a
// spatial reference given as WKT alone is identified as a Shapefile's .prj
// is (package crs); 0 when sr names none or its WKT matches no CRS.
func (sr SpatialReference) SRID() int {
	code := sr.LatestWKID
	if code == 0 {
		code = sr.WKID
	}
	if code == 0 && sr.WKT != "" {
		if r, err := crs.Identify(sr.WKT); err == nil {
			code = r.SRID
		}
	}
	switch code {
	case 102100, 102113, 900913:
		return 3857
	}
	return code
}

// Meta is what the client knows about the layer before the response: its
// probe. A response's own members (geometryType, hasZ, hasM,
// spatialReference, fields, objectIdFieldName) override them when they
// come before the features, as ArcGIS Server writes them.
type Meta struct {
	GeometryType string
	HasZ, HasM   bool
	// SRID of the geometries when the response has no spatialReference
	// before its features; 0 means the ReaderConfig's SRID.
	SRID int
	// Fields type the attributes: esriFieldTypeDate values become
	// ISO-8601 UTC timestamps.
	Fields []Field
	// ObjectIDField names the attribute whose value ObjectID returns.
	ObjectIDField string
}

type readerState int

const (
	stateStart readerState = iota
	stateMembers
	stateFeatures
	stateDone
)

// Reader streams the features of an Esri JSON query response (f=json),
// holding one feature in memory at a time (a json.Decoder whose unread
// buffer is bounded by Limits.FeatureBytes). A body cut short is an error,
// never a short page.
type Reader struct {
	in    *guardReader
	dec   *json.Decoder
	cfg   feature.ReaderConfig
	meta  Meta
	dates map[string]bool
	srid  int

	state    readerState
	err      error
	index    int
	feature  feature.Feature
	exceeded bool
	sawFeats bool
	oid      int64
	oidOK    bool
	// raw holds the feature being decoded, reused from one to the next: a
	// 16 MB feature costs one buffer, not as much garbage each.
	raw json.RawMessage
}

// NewReader returns a reader of the Esri JSON document r, typed by meta.
// The feature.ReaderOptions set the id property (default: the object id
// field, Meta's or the response's objectIdFieldName), the SRID when neither the response nor meta names one,
// and the limits.
func NewReader(r io.Reader, meta Meta, opts ...feature.ReaderOption) *Reader {
	cfg := feature.NewReaderConfig(opts)
	g := &guardReader{r: r, max: cfg.Limits.FeatureBytes}
	dec := json.NewDecoder(g)
	dec.UseNumber()
	g.dec = dec
	rd := &Reader{in: g, dec: dec, cfg: cfg, meta: meta, srid: cfg.SRID}
	if meta.SRID > 0 {
		rd.srid = meta.SRID
	}
	rd.setFields(meta.Fields)
	return rd
}

func (r *Reader) setFields(fields []Field) {
	r.dates = make(map[string]bool)
	for _, f := range fields {
		if f.Type == FieldDate {
			r.dates[f.Name] = true
		}
	}
}

// ExceededTransferLimit is the response's exceededTransferLimit: the
// server says that more features match than it returned. Known once Next
// has returned io.EOF (servers write it before or after the features).
func (r *Reader) ExceededTransferLimit() bool { return r.exceeded }

// ObjectID is the object id of the feature Next returned last, and whether
// it had one (an integer value of Meta.ObjectIDField).
func (r *Reader) ObjectID() (int64, bool) { return r.oid, r.oidOK }

// SRID is the SRID the reader gives geometries at this point.
func (r *Reader) SRID() int { return r.srid }

// Next returns the next feature, io.EOF after the last one, or an error
// naming the feature index and what was wrong. The returned *Feature is the
// same value at every call; its Geometry and Properties are fresh at each
// call, so a shallow copy keeps a feature.
func (r *Reader) Next() (*feature.Feature, error) { return feature.StickyNext(&r.err, r.next) }

func (r *Reader) fail(index int, msg string, err error) error {
	if errors.Is(err, io.EOF) {
		err = io.ErrUnexpectedEOF
	}
	var le *feature.LimitError
	if errors.As(err, &le) {
		if le.Where == "" {
			le.Where = "esrijson " + feature.Where(index)
		}
		return le
	}
	return &feature.DecodeError{Format: "esrijson", Index: index, Msg: feature.BoundMessage(msg), Err: feature.Bound(err)}
}

func (r *Reader) next() (*feature.Feature, error) {
	for {
		switch r.state {
		case stateDone:
			return nil, io.EOF
		case stateStart:
			tok, err := r.dec.Token()
			if err == io.EOF {
				return nil, r.fail(-1, "empty document", io.ErrUnexpectedEOF)
			}
			if err != nil {
				return nil, r.fail(-1, "", err)
			}
			if tok != json.Delim('{') {
				return nil, r.fail(-1, fmt.Sprintf("document is not a JSON object (starts with %v)", tok), nil)
			}
			r.state = stateMembers
		case stateFeatures:
			if !r.dec.More() {
				if _, err := r.dec.Token(); err != nil { // ']'
					return nil, r.fail(r.index, "in features", err)
				}
				r.state = stateMembers
				continue
			}
			return r.decodeFeature()
		case stateMembers:
			if err := r.member(); err != nil {
				return nil, err
			}
		}
	}
}

// member reads one top-level member, or the end of the document.
func (r *Reader) member() error {
	if !r.dec.More() {
		return r.endDocument()
	}
	tok, err := r.dec.Token()
	if err != nil {
		return r.fail(-1, "", err)
	}
	key, _ := tok.(string)
	switch key {
	case "features":
		return r.openFeatures()
	case "error":
		var e ServerError
		if err := r.dec.Decode(&e); err != nil {
			return r.fail(-1, "error member", err)
		}
		return r.fail(-1, "the response is an error object", &e)
	}
	if read, err := r.metaMember(key); read || err != nil {
		return err
	}
	var skip json.RawMessage
	if err := r.dec.Decode(&skip); err != nil {
		return r.fail(-1, key, err)
	}
	return nil
}

// endDocument reads the document's closing brace and checks that nothing
// follows it and that it was a query response.
func (r *Reader) endDocument() error {
	if _, err := r.dec.Token(); err != nil { // '}'
		return r.fail(-1, "", err)
	}
	if tok, err := r.dec.Token(); err != io.EOF {
		if err != nil {
			return r.fail(-1, "after the document", err)
		}
		return r.fail(-1, fmt.Sprintf("data after the document (%v)", tok), nil)
	}
	if !r.sawFeats {
		return r.fail(-1, "no \"features\" member: not a query response", nil)
	}
	r.state = stateDone
	return nil
}

// openFeatures enters the "features" array, whose features Next then
// reads one at a time.
func (r *Reader) openFeatures() error {
	tok, err := r.dec.Token()
	if err != nil {
		return r.fail(-1, "features", err)
	}
	if tok != json.Delim('[') {
		return r.fail(-1, fmt.Sprintf("features is not an array (%v)", tok), nil)
	}
	if r.sawFeats {
		return r.fail(-1, "two \"features\" members", nil)
	}
	r.sawFeats = true
	r.state = stateFeatures
	return nil
}

// metaMember reads the member key when it describes the layer (geometry
// type, dimensions, object id field, spatial reference, fields) or says
// whether the server held features back; false for a member the reader
// does not use. After the features, a description comes too late for them
// and is not read, except the object id field, which ObjectID still needs.
func (r *Reader) metaMember(key string) (bool, error) {
	if r.sawFeats && key != "exceededTransferLimit" && key != "objectIdFieldName" {
		return false, nil
	}
	var err error
	switch key {
	case "geometryType":
		err = r.dec.Decode(&r.meta.GeometryType)
	case "hasZ":
		err = r.dec.Decode(&r.meta.HasZ)
	case "hasM":
		err = r.dec.Decode(&r.meta.HasM)
	case "exceededTransferLimit":
		err = r.dec.Decode(&r.exceeded)
	case "objectIdFieldName":
		var name string
		if err = r.dec.Decode(&name); err == nil && r.meta.ObjectIDField == "" {
			r.meta.ObjectIDField = name
		}
	case "spatialReference":
		var sr SpatialReference
		if err = r.dec.Decode(&sr); err == nil && sr.SRID() > 0 {
			r.srid = sr.SRID()
		}
	case "fields":
		var fields []Field
		if err = r.dec.Decode(&fields); err == nil {
			// The response's own fields win, but a field it does not list
			// keeps the layer's type.
			r.setFields(append(append([]Field(nil), r.meta.Fields...), fields...))
		}
	default:
		return false, nil
	}
	if err != nil {
		return true, r.fail(-1, key, err)
	}
	return true, nil
}

// ServerError is an ArcGIS error object ({"error":{"code":…,"message":…,
// "details":[…]}}).
type ServerError struct {
	Code    int      `json:"code"`
	Message string   `json:"message"`
	Details []string `json:"details"`
}

// UnmarshalJSON reads an error object whose code may be a string and
// whose details may hold anything.
func (e *ServerError) UnmarshalJSON(b []byte) error {
	var raw struct {
		Code    json.RawMessage   `json:"code"`
		Message string            `json:"message"`
		Details []json.RawMessage `json:"details"`
	}
	if err := json.Unmarshal(b, &raw); err != nil {
		return err
	}
	code := strings.Trim(string(raw.Code), `"`)
	e.Code, _ = strconv.Atoi(code)
	e.Message = raw.Message
	e.Details = e.Details[:0]
	for _, d := range raw.Details {
		var s string
		if json.Unmarshal(d, &s) != nil {
			s = string(d)
		}
		e.Details = append(e.Details, s)
	}
	return nil
}

func (e *ServerError) Error() string {
	msg := fmt.Sprintf("error %d", e.Code)
	if e.Message != "" {
		msg += ": " + e.Message
	}
	if d := strings.Join(e.Details, "; "); d != "" && d != e.Message {
		msg += " (" + d + ")"
	}
	return feature.BoundMessage(msg)
}

// rawFeature is one feature's members.
type rawFeature struct {
	Attributes json.RawMessage `json:"attributes"`
	Geometry   json.RawMessage `json:"geometry"`
}

func (r *Reader) decodeFeature() (*feature.Feature, error) {
	index := r.index
	r.index++
	if err := r.dec.Decode(&r.raw); err != nil {
		return nil, r.fail(index, "", err)
	}
	raw := r.raw
	if int64(len(raw)) > r.cfg.Limits.FeatureBytes {
		return nil, r.fail(index, "", &feature.LimitError{Name: "feature_bytes", Max: r.cfg.Limits.FeatureBytes})
	}
	if len(raw) == 0 || raw[0] != '{' {
		return nil, r.fail(index, fmt.Sprintf("feature is not a JSON object: %s", snippet(raw)), nil)
	}
	var rf rawFeature
	if err := eachMember(raw, func(key, val []byte) error {
		switch keyString(key) {
		case "attributes":
			rf.Attributes = val
		case "geometry":
			rf.Geometry = val
		}
		return nil
	}); err != nil {
		return nil, r.fail(index, "", err)
	}
	f := &r.feature
	*f = feature.Feature{}
	r.oid, r.oidOK = 0, false
	g, err := decodeGeometry(rf.Geometry, r.meta.GeometryType, dims{r.meta.HasZ, r.meta.HasM}, r.srid)
	if err != nil {
		return nil, r.fail(index, "", err)
	}
	if g != nil {
		f.Geometry = g
	}
	if err := r.attributes(index, rf.Attributes, f); err != nil {
		return nil, err
	}
	return f, nil
}

// attributes renders the feature's attributes as its properties, with
// dates as ISO-8601 UTC, and picks its id and object id.
func (r *Reader) attributes(index int, raw json.RawMessage, f *feature.Feature) error {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return nil
	}
	if raw[0] != '{' {
		return r.fail(index, fmt.Sprintf("attributes is not a JSON object: %s", snippet(raw)), nil)
	}
	members, repairs := feature.JSONTextStats(raw)
	if members > r.cfg.Limits.Properties {
		return r.fail(index, "", &feature.LimitError{Name: "properties", Max: int64(r.cfg.Limits.Properties)})
	}
	if repairs != 0 {
		raw = feature.RepairJSONText(raw)
		f.Repairs |= repairs
	}
	// The id is the configured property's, else the object id.
	idProperty := r.cfg.IDProperty
	if idProperty == "" {
		idProperty = r.meta.ObjectIDField
	}
	// Written once, into its own slice: the properties outlive the
	// feature's raw bytes (the stager holds them), and a buffer reused and
	// then copied would hold the largest feature's size for good.
	b := bytes.NewBuffer(make([]byte, 0, len(raw)+16*len(r.dates)))
	b.WriteByte('{')
	refused := ""
	first := true
	err := eachMember(raw, func(rawKey, v []byte) error {
		key := keyString(rawKey)
		if int64(len(v)) > r.cfg.Limits.ValueBytes {
			return &feature.LimitError{Name: "value_bytes", Max: r.cfg.Limits.ValueBytes,
				Where: fmt.Sprintf("esrijson feature %d, attribute %s", index, feature.Snippet(key))}
		}
		if r.dates[key] {
			var err error
			if v, err = epochMillis(v); err != nil {
				return fmt.Errorf("date attribute %q: %w", key, err)
			}
		}
		if key == idProperty {
			id, err := renderID(v)
			if err != nil {
				return fmt.Errorf("id attribute %q: %w", key, err)
			}
			// A refused feature is still read to its end, for its object id.
			refused = feature.RefuseID(id, r.cfg.Limits.IDBytes)
			f.ID = id
		}
		if key == r.meta.ObjectIDField {
			if n, err := strconv.ParseInt(string(v), 10, 64); err == nil {
				r.oid, r.oidOK = n, true
			}
		}
		if !first {
			b.WriteByte(',')
		}
		first = false
		b.Write(rawKey)
		b.WriteByte(':')
		b.Write(v)
		return nil
	})
	if err != nil {
		return r.fail(index, "attributes", err)
	}
	b.WriteByte('}')
	if refused != "" {
		*f = feature.Feature{Refused: refused}
		return nil
	}
	f.Properties = b.Bytes()
	return nil
}

// epochMillis renders an esriFieldTypeDate value (epoch milliseconds) as
// an ISO-8601 UTC timestamp string; null and strings (servers that already
// write ISO text) are kept.
func epochMillis(v json.RawMessage) (json.RawMessage, error) {
	if len(v) == 0 || v[0] == 'n' || v[0] == '"' {
		return v, nil
	}
	ms, err := strconv.ParseFloat(string(v), 64)
	if err != nil || math.IsInf(ms, 0) || math.Abs(ms) > 8.64e15 {
		return nil, fmt.Errorf("not epoch milliseconds: %s", snippet(v))
	}
	t := time.UnixMilli(int64(math.Round(ms))).UTC()
	layout := "2006-01-02T15:04:05Z"
	if t.Nanosecond() != 0 {
		layout = "2006-01-02T15:04:05.000Z"
	}
	return json.RawMessage(strconv.Quote(t.Format(layout))), nil
}

// renderID renders an id attribute: a string as it is, an integral number
// as an integer (1.0 → "1"), another number canonically.
func renderID(v json.RawMessage) (string, error) {
	switch {
	case len(v) == 0 || v[0] == 'n':
		return "", nil
	case v[0] == '"':
		var s string
		if err := json.Unmarshal(v, &s); err != nil {
			return "", err
		}
		return s, nil
	case v[0] == '-' || (v[0] >= '0' && v[0] <= '9'):
		s := string(v)
		if !strings.ContainsAny(s, ".eE") {
			return s, nil
		}
		f, err := strconv.ParseFloat(s, 64)
		if err != nil {
			return "", err
		}
		if f == math.Trunc(f) && math.Abs(f) < 1<<53 {
			return strconv.FormatInt(int64(f), 10), nil
		}
		return strconv.FormatFloat(f, 'g', -1, 64), nil
	}
	return "", fmt.Errorf("id is not a string or number: %s", snippet(v))
}

// guardReader bounds what the json.Decoder may hold unread: the value it
// is decoding (a feature, a top-level member) may not pass max bytes, so
// that an endless feature costs a bounded buffer, not the process.
type guardReader struct {
	r    io.Reader
	dec  *json.Decoder
	read int64
	max  int64
	// tooLong is the error past max; nil means limits.feature_bytes.
	tooLong func(max int64) error
}

func (g *guardReader) Read(p []byte) (int, error) {
	if pending := g.read - g.dec.InputOffset(); pending > g.max {
		if g.tooLong != nil {
			return 0, g.tooLong(g.max)
		}
		return 0, &feature.LimitError{Name: "feature_bytes", Max: g.max}
	}
	n, err := g.r.Read(p)
	g.read += int64(n)
	return n, err
}

func snippet(b []byte) string { return feature.Snippet(b) }

// Compile-time check.
var _ feature.FeatureReader = (*Reader)(nil)
