package wfs

import (
	"encoding/json"
	"time"

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

// Layer describes what to fetch: a WFS feature type or a plain GeoJSON URL.
type Layer struct {
	// Kind is "wfs" or "geojson".
	Kind string
	// URL is the service endpoint (WFS) or the document (GeoJSON).
	URL string
	// TypeName is the WFS feature type, e.g. "topp:states".
	TypeName string
	// Version is the WFS version: "2.0.0" (default) or "1.1.0".
	Version string
	// OutputFormat is the WFS outputFormat parameter, e.g. "application/json".
	OutputFormat string
	// PageSize is the number of features per WFS request; 0 means one request.
	PageSize int
	// IDProperty names the property that identifies a feature, if any.
	IDProperty string
	// SortBy is sent as WFS sortBy so that paging sees a stable order; "" sends none.
	SortBy string
	// RequestTimeout bounds one attempt of one page request, from dialing to
	// the last byte of the body; 0 means the Client's default (60s).
	RequestTimeout time.Duration
	// SRID is the SRID given to geometries when the body declares no CRS
	// before its features; 0 means 4326 (RFC 7946). Set it for servers that
	// answer in a projected CRS and write the legacy "crs" member after the
	// features (GeoServer does), which a streaming decoder cannot wait for.
	SRID int
	// Limits bound the feed's responses, features and values; zero fields
	// are the defaults (see Limits).
	Limits Limits
	// Headers are sent with every request of the feed (e.g. an API token),
	// so that secrets need not be in URLs. They are never logged or stored.
	Headers map[string]string
	// CrossOriginRedirects allows following a redirect to another origin
	// (scheme://host:port). By default such a redirect fails the attempt: the
	// breaker and pacing of the configured origin would be charged for
	// another server's behaviour.
	CrossOriginRedirects bool
}
