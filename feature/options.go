package feature

import "io"

// ReaderOption configures a decoder of any encoding (geojson.Reader,
// gml.Reader): the client picks the decoder by sniffing the body, and hands
// every one the same options, the feed's.
type ReaderOption func(*ReaderConfig)

// ReaderConfig is what ReaderOptions set. Decoders build it with
// NewReaderConfig, so that every encoding has the same defaults.
type ReaderConfig struct {
	// IDProperty names the property whose value is the feature's ID; ""
	// means the encoding's own id (GeoJSON "id", GML gml:id or fid).
	IDProperty string
	// SRID is given to geometries when the document declares no CRS before
	// its features; 4326 unless WithSRID says otherwise.
	SRID int
	// Limits bound each feature; its zero fields are already the defaults.
	Limits Limits
	// TypeValue, when set, renders a text encoding's property value
	// (GML's characters) as the JSON its declared type makes it (a number,
	// a boolean): it appends to dst and reports true, or reports false
	// and the decoder writes a JSON string as before. Encodings whose
	// values are typed already (GeoJSON) ignore it.
	TypeValue func(dst []byte, name string, text []byte) ([]byte, bool)
}

// WithTypeValue sets ReaderConfig.TypeValue (typed layers: schema.Typer).
func WithTypeValue(f func(dst []byte, name string, text []byte) ([]byte, bool)) ReaderOption {
	return func(c *ReaderConfig) { c.TypeValue = f }
}

// NewReaderConfig applies opts over the defaults: SRID 4326 (RFC 7946) and
// DefaultLimits.
func NewReaderConfig(opts []ReaderOption) ReaderConfig {
	cfg := ReaderConfig{SRID: 4326, Limits: DefaultLimits()}
	for _, o := range opts {
		o(&cfg)
	}
	return cfg
}

// WithIDProperty makes the feature ID the value of the named property instead
// of the encoding's own id (GeoJSON "id", GML gml:id or fid).
func WithIDProperty(name string) ReaderOption {
	return func(c *ReaderConfig) { c.IDProperty = name }
}

// WithSRID sets the SRID of geometries when the document declares no CRS
// before its features (default 4326, as RFC 7946 says).
func WithSRID(srid int) ReaderOption {
	return func(c *ReaderConfig) {
		if srid > 0 {
			c.SRID = srid
		}
	}
}

// WithLimits bounds what one feature may hold (FeatureBytes, ValueBytes,
// Properties, IDBytes; the other fields are the client's); zero fields are
// the defaults, which a reader made without this option uses too.
// Exceeding FeatureBytes, ValueBytes or Properties fails the page with a
// *LimitError; an id longer than IDBytes refuses that feature only (see
// Feature.Refused). Reading stops as soon as a bound is passed, so memory
// stays a small multiple of FeatureBytes whatever the body holds.
func WithLimits(l Limits) ReaderOption {
	return func(c *ReaderConfig) { c.Limits = l.WithDefaults() }
}

// StickyNext calls next unless an earlier call failed: a decoder that failed
// once returns that error forever and never a feature after it. io.EOF is not
// sticky, so a finished reader keeps answering io.EOF. Decoders implement
// FeatureReader.Next with it.
func StickyNext(sticky *error, next func() (*Feature, error)) (*Feature, error) {
	if *sticky != nil {
		return nil, *sticky
	}
	f, err := next()
	if err != nil {
		if err != io.EOF {
			*sticky = err
		}
		return nil, err
	}
	return f, nil
}
