package feature

import (
	"errors"
	"fmt"
)

// Limits bound what one feed may make ingestd hold or store, so that a county
// server that serves a gzip bomb, an endless stream or a 2 GB string costs the
// feed one failed poll and never the process its memory. A zero field means
// the default of DefaultLimits; WithDefaults fills them in.
//
// Exceeding BodyBytes, PollBytes, PollFeatures, FeatureBytes, ValueBytes or
// Properties is the feed's error (*LimitError): the poll fails, nothing is
// applied. A feature whose id exceeds IDBytes is refused alone (skipped and
// counted), because an id that long cannot be a key and says nothing about
// the rest of the layer.
type Limits struct {
	// BodyBytes bounds one response body after decompression.
	BodyBytes int64
	// PollBytes bounds the bodies of one poll, all pages together.
	PollBytes int64
	// PollFeatures bounds the features of one poll, all pages together.
	PollFeatures int64
	// FeatureBytes bounds one feature as encoded in the response.
	FeatureBytes int64
	// ValueBytes bounds one property value (a JSON string or number, a GML
	// element's text) and one XML attribute value.
	ValueBytes int64
	// IDBytes bounds a feature id; a longer id refuses that feature only.
	IDBytes int
	// Properties bounds the number of properties of one feature.
	Properties int
}

// Default limits. They are far above any real municipal layer (the largest
// parcel layers are a few million features of a few KB each) and far below
// what would take the process's memory.
const (
	DefaultBodyBytes    int64 = 1 << 30  // 1 GiB, decompressed
	DefaultPollBytes    int64 = 8 << 30  // 8 GiB
	DefaultPollFeatures int64 = 20000000 // 20 million
	DefaultFeatureBytes int64 = 16 << 20 // 16 MiB
	DefaultValueBytes   int64 = 4 << 20  // 4 MiB
	DefaultIDBytes            = 1024     // far under PostgreSQL's B-tree row limit (~2.7 KB)
	DefaultProperties         = 10000
)

// MaxIDBytes is the longest feature id any feed may allow (limits.id_bytes)
// and the longest the store keeps: PostgreSQL's B-tree entries hold at most
// 2704 bytes, and a feed's key holds the id with the jurisdiction and feed.
const MaxIDBytes = 2048

// DefaultLimits returns the limits a feed has when its configuration sets none.
func DefaultLimits() Limits {
	return Limits{
		BodyBytes:    DefaultBodyBytes,
		PollBytes:    DefaultPollBytes,
		PollFeatures: DefaultPollFeatures,
		FeatureBytes: DefaultFeatureBytes,
		ValueBytes:   DefaultValueBytes,
		IDBytes:      DefaultIDBytes,
		Properties:   DefaultProperties,
	}
}

// WithDefaults returns l with every zero field set to its default.
func (l Limits) WithDefaults() Limits {
	d := DefaultLimits()
	orDefault(&l.BodyBytes, d.BodyBytes)
	orDefault(&l.PollBytes, d.PollBytes)
	orDefault(&l.PollFeatures, d.PollFeatures)
	orDefault(&l.FeatureBytes, d.FeatureBytes)
	orDefault(&l.ValueBytes, d.ValueBytes)
	orDefault(&l.IDBytes, d.IDBytes)
	orDefault(&l.Properties, d.Properties)
	return l
}

// orDefault sets *v to def unless it is positive: a zero limit means the
// default, and a negative one is no limit anyone could mean.
func orDefault[T int | int64](v *T, def T) {
	if *v <= 0 {
		*v = def
	}
}

// ErrLimit is wrapped by every *LimitError.
var ErrLimit = errors.New("limit exceeded")

// LimitError reports that a response exceeded one of a feed's Limits. Name is
// the configuration key (e.g. "feature_bytes"), so the message tells the
// operator what to raise if the layer is legitimately that large.
type LimitError struct {
	// Name is the limit's key under `limits:` in the configuration.
	Name string
	// Max is the limit in force.
	Max int64
	// Where says what exceeded it, e.g. `feature 1234` or `page 3`; may be "".
	Where string
}

func (e *LimitError) Error() string {
	unit := ""
	switch e.Name {
	case "body_bytes", "poll_bytes", "feature_bytes", "value_bytes", "id_bytes":
		unit = " bytes"
	}
	msg := fmt.Sprintf("limits.%s exceeded (%d%s)", e.Name, e.Max, unit)
	if e.Where != "" {
		msg += ": " + e.Where
	}
	return msg + "; raise limits." + e.Name + " if the layer is really that large"
}

// Unwrap makes errors.Is(err, ErrLimit) hold.
func (e *LimitError) Unwrap() error { return ErrLimit }
