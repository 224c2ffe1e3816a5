package wfs

import (
	"time"

	"github.com/ingestd/ingestd/feature"
)

// Names that moved to package feature, kept so that feeds/postgis compiles
// while it moves over.

// Feature is feature.Feature.
//
// Deprecated: use feature.Feature; kept while feeds/postgis moves over.
type Feature = feature.Feature

// FeatureReader is feature.FeatureReader.
//
// Deprecated: use feature.FeatureReader; kept while feeds/postgis moves over.
type FeatureReader = feature.FeatureReader

// Limits is feature.Limits.
//
// Deprecated: use feature.Limits; kept while feeds/postgis moves over.
type Limits = feature.Limits

// Repairs made to a feature's text; see feature.Repairs.
//
// Deprecated: use feature.RepairedUTF8 and feature.RepairedSurrogate; kept
// while feeds/postgis moves over.
const (
	RepairedUTF8      = feature.RepairedUTF8
	RepairedSurrogate = feature.RepairedSurrogate
)

// DefaultIDBytes is feature.DefaultIDBytes.
//
// Deprecated: use feature.DefaultIDBytes; kept while feeds/postgis moves over.
const DefaultIDBytes = feature.DefaultIDBytes

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
	Limits feature.Limits
	// Headers are sent with every request of the feed (e.g. an API token),
	// so that secrets need not be in URLs. They are never logged or stored.
	Headers map[string]string
	// CrossOriginRedirects allows following a redirect to another origin
	// (scheme://host:port). By default such a redirect fails the attempt: the
	// breaker and pacing of the configured origin would be charged for
	// another server's behaviour.
	CrossOriginRedirects bool
}
