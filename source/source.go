package source

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"strings"
	"time"

	"github.com/ingestd/ingestd/feature"
	"github.com/ingestd/ingestd/redact"
	"github.com/ingestd/ingestd/schema"
)

// Layer describes what to fetch: a WFS feature type, a GeoJSON document, an
// ArcGIS REST layer, an OGC API – Features collection, a downloadable file
// or a Socrata dataset. Its fields are
// the ones every kind (or the poll, or the store) reads; a kind's own
// settings are in Settings, of that kind's type.
type Layer struct {
	// Kind is the feed's kind, one of the registry's (package
	// internal/kinds): "wfs", "geojson", "arcgis", "ogcapi", "file" or
	// "socrata".
	Kind string
	// URL is the service endpoint (WFS), the layer (ArcGIS), the landing
	// page or collection (OGC API), the document (GeoJSON), the file
	// (file) or the dataset (Socrata).
	URL string
	// PageSize is the number of features per request; 0 means one request
	// (ArcGIS: the layer's maxRecordCount).
	PageSize int
	// IDProperty names the property that identifies a feature, if any.
	IDProperty string
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
	// Validators are those recorded with the feed's last applied snapshot
	// (zero when there is none, or when the last snapshot was held, rejected
	// or failed): a fetcher sends them back to the server (If-None-Match,
	// If-Modified-Since) or compares them with the server's own version of
	// the layer, and answers FetchStats.NotModified when the layer is
	// unchanged.
	Validators Validators
	// KnownSRID, when set, reports whether the store can transform
	// geometries in srid to EPSG:4326 (PostGIS: srid is in
	// spatial_ref_sys). A kind that learns its layer's CRS from the server
	// (ArcGIS: the layer's spatial reference) asks it before handing any
	// page over, so that a CRS the store does not know is named before
	// anything is staged rather than failing the apply; nil asks nothing.
	// The poll sets it from its store.
	KnownSRID func(ctx context.Context, srid int) (bool, error)

	// Resume, for a fetch that starts at a page after the first, is what
	// the poll staged before it (see feeds.PageRereader).
	Resume Resume

	// Settings are the kind's own settings (wfs.Settings, …); nil for a
	// kind that has none, or to take the kind's defaults.
	Settings Settings

	// Typed layers.

	// DescribeSchema asks the kind for the layer's declared schema before
	// fetching it (WFS: DescribeFeatureType), reported in
	// FetchStats.Declared and used to type text values (GML).
	DescribeSchema bool

	// Incremental refresh.

	// DeltaPlanned, when set, is called by a kind that plans to hand over
	// only what changed (FetchStats.Delta), once it has decided so and
	// before it reads the server's id list and the changes, from Fetch's
	// goroutine: the poll starts reading what composing the delta needs
	// of the applied snapshot (its ids) while the changes are fetched. A
	// plan the kind then drops (a change log it cannot use) wastes that
	// read, nothing else. The poll sets it from its store.
	DeltaPlanned func()
}

// Validators identify the version of a layer that a server sent. They are
// stored with the snapshot they came with, and only an applied snapshot's
// validators are ever sent back: a poll that failed, or whose snapshot was
// held or rejected, must not make the next poll skip the layer.
type Validators struct {
	// ETag is the HTTP ETag of a one-document layer, as the server sent it.
	ETag string `json:"etag,omitempty"`
	// LastModified is the HTTP Last-Modified of a one-document layer.
	LastModified string `json:"last_modified,omitempty"`
	// Version is a kind's own proof that the whole layer is unchanged when
	// HTTP validators cannot give one (ArcGIS: the layer's lastEditDate and
	// its count), opaque outside that kind.
	Version string `json:"version,omitempty"`
}

// IsZero reports whether v holds no validator.
func (v Validators) IsZero() bool { return v == Validators{} }

// Resume is what a poll resumed at a page after the first staged before
// it, for a kind whose pages are reached by the server's links.
type Resume struct {
	// Link is the next link of the page before the one the fetch starts
	// at, as the page recorded it (Page.Next), "" when it recorded none.
	Link string
	// Features is how many features the pages before it hold: a kind that
	// checks its total against the server's count counts them too.
	Features int
}

// ErrCannotResume is wrapped by the error of a fetch that started at a
// page after the first and cannot read that page again (no link recorded,
// or the server no longer answers its link: an expired cursor). The poll
// starts over from the first page.
var ErrCannotResume = errors.New("the page the poll resumes at cannot be read again")

// Page identifies one page request of a fetch.
type Page struct {
	// Index is the 0-based page number; the page starts at StartIndex.
	Index      int
	URL        string // credentials redacted
	StartIndex int

	// Next, for a kind whose pages are reached by the server's links,
	// returns the page's next link once the page's FeatureReader returned
	// io.EOF ("" on the last page), in the form the kind reads back from
	// Layer.Resume.Link (without the feed url's own credentials); nil for
	// the other kinds. A store records it with the page.
	Next func() string
}

// PageFunc consumes the features of one page while its body is open, for
// example by copying them into a staging table. It must be all-or-nothing
// per page and idempotent: when the attempt fails (the body is cut short),
// the breaker retries it and PageFunc runs again for the same page.
//
// Errors of features.Next must be returned wrapped with %w: a kind's Fetch
// tells them (*httpcall.BodyError: the origin failed) from the handler's own errors (the
// database failed: the origin is not to blame).
type PageFunc func(ctx context.Context, page Page, features feature.FeatureReader) error

// Fetcher fetches a layer page by page: what every kind's package
// implements (its client), in package source's types only, so that a kind
// needs neither the engine nor another kind's package.
type Fetcher interface {
	// Prepare resolves what the feed left to negotiation (for WFS, version:
	// auto and output_format: auto, from the server's capabilities); a layer
	// that leaves nothing open comes back as it is.
	Prepare(ctx context.Context, layer Layer) (Layer, []string, error)
	// Fetch hands each page of layer from firstPage on to handle.
	Fetch(ctx context.Context, layer Layer, firstPage int, handle PageFunc) (FetchStats, error)
}

// FetchStats sums up a fetch, complete or not.
type FetchStats struct {
	Pages    int
	Features int
	// Bytes counts decompressed body bytes of the pages that succeeded.
	Bytes int64
	// NumberMatched is the server's count of the whole result (-1: unknown).
	NumberMatched int
	// Warnings are oddities that did not stop the fetch, such as a server
	// that ignored the page size.
	Warnings []string
	// NotModified reports that the server proved the layer unchanged since
	// the snapshot Layer.Validators came from (an HTTP 304, or a kind's own
	// version check): no page was handed to the PageFunc, and the poll
	// succeeds without changing the feed's features.
	NotModified bool
	// Validators are the ones this fetch's server sent, to be stored with
	// the snapshot if (and only if) it is applied.
	Validators Validators

	// Typed layers.

	// Declared is the layer's schema as its protocol declares it (nil:
	// none; the store infers one from the values). A kind fills it from
	// its own description with one adapter (WFS: schema.FromXSD; ArcGIS
	// fields, OGC API queryables likewise).
	Declared *schema.Declared
	// TypedText: the decoder typed text values (GML) by Declared, so the
	// store types stored values the same way before diffing.
	TypedText bool
	// Kinds that page by links.

	// Completeness says what the completeness of a fetch that pages by
	// links rests on: "number_matched" (the total was checked against the
	// server's count) or "links_only" (the server gave no count: only the
	// absence of a next link ended it). "" for kinds that page otherwise.
	// A store records it with the applied snapshot (polls.completeness).
	Completeness string

	// CRS is the CRS a file kind read the layer in ("EPSG:2263"), and
	// CRSBy how it was identified (authority, name, parameters, setting:
	// package crs); "" for kinds that do not identify one. A store records
	// them with the applied snapshot (polls.crs, polls.crs_identified_by).
	CRS, CRSBy string

	// Incremental refresh.

	// Mode says how the fetch read the layer (polls.fetch_mode): ModeFull,
	// ModeEditDate, ModeChangeTracking or ModeNotModified; "" is ModeFull
	// (or ModeNotModified with NotModified).
	Mode string
	// Delta, when set, says the pages handed over hold only the features
	// added or changed since the snapshot Layer.Validators came from: the
	// store composes the whole snapshot from them, the previous snapshot's
	// other features and Delta.IDs, before it applies it (see Delta).
	Delta *Delta
	// Reconcile, when set on a full fetch, asks the store to count the
	// features of the snapshot that differ from the stored ones although
	// the incremental path would not have fetched them: its drift.
	Reconcile *Reconcile
}

// Fetch modes, the values of FetchStats.Mode.
const (
	ModeFull           = "full"
	ModeEditDate       = "edit_date"
	ModeChangeTracking = "change_tracking"
	ModeNotModified    = "not_modified"
)

// Delta is the rest of a fetch that handed over only what changed. The
// snapshot it stands for is the pages handed over, plus the previous
// applied snapshot's features whose ids are in IDs and not on those
// pages; a feature of the previous snapshot whose id is not in IDs was
// deleted. The store proves it whole: every id of IDs must be in it.
//
// A kind offers a delta when it can list every id the layer holds now
// (IDs) and fetch what changed after a watermark (Since). A watermark
// alone is not a delta: without the whole list, a deletion is not seen,
// and the snapshot could not be proved; such a kind dumps in full. The
// watermark the next poll starts from is the kind's own, kept in its
// Validators.Version.
type Delta struct {
	// IDs is the server's whole id list.
	IDs IDs
	// Since is the watermark the pages are the changes after, for the
	// log and the poll's record.
	Since Watermark
}

// IDs is a server's list of feature ids, each in the type the kind knows
// it by: integers (ArcGIS object ids) or text (Socrata row ids, OGC API
// and WFS feature ids). An integer id names the feature whose id is its
// decimal text (strconv.FormatInt); a text id that is such a decimal
// names the same feature as the integer.
type IDs struct {
	// Int are the ids that are integers, sorted ascending.
	Int []int64
	// Text are the other ids, as the features' ids, in any order.
	Text []string
}

// Len is the number of ids listed (an id listed twice counts twice).
func (l IDs) Len() int { return len(l.Int) + len(l.Text) }

// Watermark is what a delta's changes are after: the field or counter a
// kind compares and its value, as the kind writes them (an edit date
// field and an ISO-8601 time, ArcGIS's "serverGen" and a generation).
type Watermark struct {
	Field, Value string
}

// String is the watermark as a condition: "EditDate > 2026-12-01T18:00:00Z".
func (w Watermark) String() string { return w.Field + " > " + w.Value }

// Reconcile is how a store counts the drift of an incremental path that a
// full fetch replaces: the snapshot's features that differ from the stored
// ones (added or changed) while their edit date is at most Cutoff, which
// the incremental path would therefore have missed.
type Reconcile struct {
	// Field is the property that holds a feature's edit date (an ISO-8601
	// timestamp, as the kind's decoder renders dates).
	Field string
	// Cutoff is the edit date, in Unix milliseconds, after which the
	// incremental path would have fetched a feature.
	Cutoff int64
}

// LogValue is how a Layer appears in a log: its identity with the URL
// redacted, and the names of its headers but never their values, which are
// credentials. Without it, slog would print every field, Headers included.
func (l Layer) LogValue() slog.Value {
	attrs := []slog.Attr{slog.String("kind", l.Kind), slog.String("url", redact.URL(l.URL))}
	if n, ok := l.Settings.(NamedLayer); ok {
		if tn, _ := n.LayerNames(); tn != "" {
			attrs = append(attrs, slog.String("type_name", tn))
		}
	}
	if len(l.Headers) > 0 {
		attrs = append(attrs, slog.String("headers", headerNames(l.Headers)))
	}
	return slog.GroupValue(attrs...)
}

// headerNames lists the names of h, sorted, comma-separated.
func headerNames(h map[string]string) string {
	names := make([]string, 0, len(h))
	for k := range h {
		names = append(names, k)
	}
	slices.Sort(names)
	return strings.Join(names, ",")
}

// Settings are a kind's own settings of a layer (wfs.Settings,
// arcgis.Settings, ogcapi.Settings), which only that kind's package reads;
// the common ones are Layer's fields. A value, so that copying a Layer
// copies them.
type Settings interface {
	// Identity lists, in a fixed order, the settings that change what the
	// server sends for the layer: its validators answer only for the same
	// identity (see Layer.Validators).
	Identity() []string
}

// NamedLayer is implemented by the settings of a kind whose endpoint serves
// many layers, one named by the feed, and whose pages are ordered by a
// property the feed names (wfs: type_name and sort_by). The poll's request
// key hashes the two in slots of their own, ahead of Identity, which every
// other kind leaves empty, so that the stored key of every layer is the
// same whichever package owns the keys; logs name the layer by it.
type NamedLayer interface {
	// LayerNames returns the layer's name on its endpoint and the order
	// its pages are asked in ("" for none).
	LayerNames() (typeName, sortBy string)
}
