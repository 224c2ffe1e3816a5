package feature

import (
	"encoding/json"

	"github.com/twpayne/go-geom"
)

// Feature is one decoded feature of a layer. Decoders reuse the value they return
// from Next, so a caller that keeps a feature past the next call must copy it.
type Feature struct {
	// ID is the feature's identifier: the layer's id property when one is
	// configured, else the GeoJSON "id" or the GML gml:id/fid; "" when the
	// source has none.
	ID string
	// Geometry is nil for a feature with a null geometry. Its SRID is set to the
	// CRS the source declared (4326 for RFC 7946 GeoJSON).
	Geometry geom.T
	// Properties is the feature's attributes as a JSON object, or nil. It is
	// valid JSON and valid UTF-8, with no lone surrogate escape: the decoders
	// replace invalid UTF-8 bytes with U+FFFD and a \uD800–\uDFFF escape
	// that is not half of a pair with \ufffd, as encoding/json reads them.
	// Everything else is as the source wrote it (GeoJSON) or rendered as
	// JSON strings (GML); a \u0000 escape is kept, for the store to judge.
	Properties json.RawMessage
	// Refused, when not "", says why the decoder refuses this feature alone
	// (an id longer than Limits.IDBytes) while the
	// rest of the page is sound. A refused feature has no ID, Geometry or
	// Properties; the caller skips it and counts the reason. The reason
	// quotes at most the first 100 bytes of the offending value.
	Refused string
	// Repairs says which repairs the decoder made to the feature's text
	// (its id and properties), so that the store counts them per reason and
	// honours invalid_feature: skip for them as for its own repairs.
	Repairs Repairs
}

// Repairs is a set of kinds of repair a decoder made to a feature's text.
type Repairs uint8

// Kinds of repair.
const (
	// RepairedUTF8: bytes of invalid UTF-8 (or, in XML, characters XML does
	// not allow) replaced by U+FFFD.
	RepairedUTF8 Repairs = 1 << iota
	// RepairedSurrogate: a lone surrogate escape (\uD800–\uDFFF not half
	// of a pair) replaced by \ufffd.
	RepairedSurrogate
)

// FeatureReader yields the features of one response body in document order.
// Next returns io.EOF after the last feature; any other error means the body
// was malformed or cut short and the features already read are not a complete page.
type FeatureReader interface {
	Next() (*Feature, error)
}

// GeometryName is the GeoJSON (and OGC simple features) name of g's type,
// "" for nil or a type go-geom has that GeoJSON does not name.
func GeometryName(g geom.T) string {
	switch g.(type) {
	case *geom.Point:
		return "Point"
	case *geom.LineString:
		return "LineString"
	case *geom.Polygon:
		return "Polygon"
	case *geom.MultiPoint:
		return "MultiPoint"
	case *geom.MultiLineString:
		return "MultiLineString"
	case *geom.MultiPolygon:
		return "MultiPolygon"
	case *geom.GeometryCollection:
		return "GeometryCollection"
	}
	return ""
}
