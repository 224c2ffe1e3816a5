// Package discover lists the layers a GIS server publishes and writes
// ingestd feeds for them: an ArcGIS REST services directory (its root, a
// folder, a FeatureServer or MapServer service, one layer), a WFS endpoint
// (every feature type of its capabilities), an OGC API – Features server
// (its landing page, its /collections list, one collection) or a
// downloadable file (a zip's Shapefiles, a GeoPackage's tables).
//
// Each layer is described with what the server says cheaply: its geometry
// type, its count where one request gives it (ArcGIS returnCountOnly, the
// numberMatched of an OGC API page of one feature, WFS resultType=hits
// only with Options.Check), and the id a feed would use and why. With
// Options.Check each layer's paging and completeness support is probed,
// without reading the layer, and what would fail a poll is said.
//
// Every request goes through the kinds' own clients (httpcall: a timeout
// per attempt, bounded bodies, redaction); a layer or a service that fails
// is reported in its Layer or Result.Problems, and the others are listed.
package discover

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/ingestd/ingestd/arcgis"
	"github.com/ingestd/ingestd/feature"
	"github.com/ingestd/ingestd/ogcapi"
	"github.com/ingestd/ingestd/redact"
	"github.com/ingestd/ingestd/source"
	"github.com/ingestd/ingestd/wfs"
)

// Kinds Discover knows, as Options.Kind and Layer.Kind spell them.
const (
	KindWFS    = "wfs"
	KindArcGIS = "arcgis"
	KindOGCAPI = "ogcapi"
	KindFile   = "file"
)

// Options says what to discover and how.
type Options struct {
	// Kind is the server's protocol; "" guesses it from the URL (see
	// GuessKind).
	Kind string
	// Filter keeps the layers whose name matches it (nil: all).
	Filter *regexp.Regexp
	// Check probes each layer's paging and completeness support.
	Check bool
	// Headers go with every request (a token); never printed.
	Headers map[string]string
	// RequestTimeout bounds each attempt (default 30s).
	RequestTimeout time.Duration
	// MaxBodyBytes bounds each response body after decompression
	// (default 64 MiB; each kind's documents have their own, lower bounds).
	MaxBodyBytes int64
	// Parallel is how many layers are described at once (default 4).
	Parallel int
}

// Layer is one layer the server publishes, as a feed would read it.
type Layer struct {
	// Kind is the feed's kind; Name the layer's name (WFS type name,
	// collection id, ArcGIS layer name) and Title its title when the
	// server gives one; Service the ArcGIS service it belongs to.
	Kind, Name, Title, Service string
	// URL is the feed's url (the WFS endpoint, the OGC API landing page,
	// the ArcGIS layer), as given: print it through redact.URL.
	URL string
	// TypeName and Version (WFS), Collection (OGC API) and FileLayer (a
	// file's layer:, "" for a file of one layer) are the feed's.
	TypeName, Version, Collection, FileLayer string
	// PageSizeZero asks for page_size: 0 (a WFS that does not page).
	PageSizeZero bool
	// Geometry is the geometry type, "" when unknown.
	Geometry string
	// Count is the number of features, -1 when unknown; CountFrom names
	// the request that gave it.
	Count     int
	CountFrom string
	// IDProperty is the feed's id_property ("" leaves the kind's default)
	// and IDWhy what identifies a feature and why.
	IDProperty, IDWhy string
	// Notes are facts a reader of the feed should know.
	Notes []string
	// Checks are the probes of Options.Check.
	Checks []Check
	// Err is why the layer could not be described; such a layer gets no
	// feed.
	Err error
}

// Check is one probe of a layer's paging or completeness support.
type Check struct {
	// What is probed ("paging", "completeness", …).
	What string
	// Fails says a poll of the feed as written would fail.
	Fails bool
	// Warns says the probe found something suspicious that a poll may
	// not notice (paging that repeats a page, an empty collection): the
	// feed is written commented out, for a person to judge.
	Warns bool
	// Detail says what the server answered and what it means.
	Detail string
}

// Failing reports whether a poll of l's feed would fail: l could not be
// described, or a check says so.
func (l *Layer) Failing() bool {
	if l.Err != nil {
		return true
	}
	for _, c := range l.Checks {
		if c.Fails {
			return true
		}
	}
	return false
}

// Suspicious reports whether a check of l found something to look at
// before polling it (Check.Warns).
func (l *Layer) Suspicious() bool {
	for _, c := range l.Checks {
		if c.Warns {
			return true
		}
	}
	return false
}

// Result is what Discover found at one URL.
type Result struct {
	// URL is the URL discovered, Kind its protocol.
	URL, Kind string
	// Layers are the layers found, in the server's order.
	Layers []Layer
	// Problems are services, folders or lists that could not be read
	// (their layers are missing from Layers).
	Problems []string
	// Skipped counts layers the filter left out.
	Skipped int
}

// Discoverer discovers layers through the kinds' clients.
type Discoverer struct {
	opts   Options
	http   *http.Client // files are downloaded with it
	wfs    *wfs.Client
	arcgis *arcgis.Client
	ogc    *ogcapi.Client
}

// New returns a Discoverer whose requests go through httpClient (nil:
// http.DefaultClient), one attempt each: discovery is interactive, and a
// failing service is reported rather than retried.
func New(httpClient *http.Client, logger *slog.Logger, opts Options) *Discoverer {
	if opts.RequestTimeout <= 0 {
		opts.RequestTimeout = 30 * time.Second
	}
	if opts.MaxBodyBytes <= 0 {
		opts.MaxBodyBytes = 64 << 20
	}
	if opts.Parallel <= 0 {
		opts.Parallel = 4
	}
	if httpClient == nil {
		httpClient = http.DefaultClient
	}
	return &Discoverer{
		opts:   opts,
		http:   httpClient,
		wfs:    wfs.NewClient(httpClient, nil, logger, wfs.WithUserAgent("ingestd-discover")),
		arcgis: arcgis.NewClient(httpClient, nil, logger, arcgis.WithUserAgent("ingestd-discover")),
		ogc:    ogcapi.NewClient(httpClient, nil, logger, ogcapi.WithUserAgent("ingestd-discover"), ogcapi.WithDiscoveryTTL(-1)),
	}
}

// layer is the source.Layer of a request to u, with the options' headers,
// timeout and body bound.
func (d *Discoverer) layer(kind, u string) source.Layer {
	return source.Layer{Kind: kind, URL: u, Headers: d.opts.Headers, RequestTimeout: d.opts.RequestTimeout,
		Limits: feature.Limits{BodyBytes: d.opts.MaxBodyBytes}.WithDefaults()}
}

// GuessKind names the protocol of u from its shape: ArcGIS REST under
// …/rest/services, OGC API for a …/collections path, WFS for a service=WFS
// parameter or a path ending in wfs; "" when the shape says nothing.
func GuessKind(u *url.URL) string {
	p := strings.ToLower(strings.TrimRight(u.Path, "/"))
	switch {
	case strings.Contains(p, "/rest/services"):
		return KindArcGIS
	case strings.HasSuffix(p, ".zip") || strings.HasSuffix(p, ".gpkg") || strings.HasSuffix(p, ".fgb"):
		return KindFile
	case strings.HasSuffix(p, "/collections") || strings.Contains(p, "/collections/"):
		return KindOGCAPI
	case strings.EqualFold(u.Query().Get("service"), "wfs") || strings.HasSuffix(p, "wfs"):
		return KindWFS
	case strings.HasSuffix(p, "ogcapi") || strings.HasSuffix(p, "/ogc/features"):
		return KindOGCAPI
	}
	return ""
}

// Discover lists the layers at raw. An error is returned only when nothing
// could be read (not the protocol, the server down); a failing layer or
// service is reported in the Result.
func (d *Discoverer) Discover(ctx context.Context, raw string) (*Result, error) {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("discover: %s is not an absolute http(s) URL", redact.URL(raw))
	}
	kind := d.opts.Kind
	if kind == "" {
		kind = GuessKind(u)
	}
	res := &Result{URL: raw, Kind: kind}
	switch kind {
	case KindArcGIS:
		err = d.arcgisURL(ctx, u, res)
	case KindWFS:
		err = d.wfsURL(ctx, raw, res)
	case KindOGCAPI:
		err = d.ogcapiURL(ctx, raw, res)
	case KindFile:
		err = d.fileURL(ctx, raw, res)
	case "":
		err = d.guess(ctx, raw, res)
	default:
		return nil, fmt.Errorf("discover: unknown kind %q (wfs, arcgis, ogcapi or file)", kind)
	}
	if err != nil {
		if unreachable(err) {
			err = fmt.Errorf("the server is unreachable: %s", redact.Error(rootCause(err)))
		}
		res.Problems = append(res.Problems, redact.Error(err))
		return res, fmt.Errorf("discover %s: %s", redact.URL(raw), redact.Error(err))
	}
	return res, nil
}

// unreachable reports whether err is a failure to reach the server at all
// (no such host, a refused or timed-out connection), where no kind of
// server would have answered.
func unreachable(err error) bool {
	var dns *net.DNSError
	var op *net.OpError
	return errors.As(err, &dns) || (errors.As(err, &op) && op.Op == "dial")
}

// rootCause is the network error under err's wrapping: "dial tcp
// 127.0.0.1:1: connect: connection refused".
func rootCause(err error) error {
	var dns *net.DNSError
	if errors.As(err, &dns) {
		return dns
	}
	var op *net.OpError
	if errors.As(err, &op) {
		return op
	}
	return err
}

// guess tries WFS capabilities, then an OGC API collections list, for a
// URL whose shape says neither.
func (d *Discoverer) guess(ctx context.Context, raw string, res *Result) error {
	werr := d.wfsURL(ctx, raw, res)
	if werr == nil {
		res.Kind = KindWFS
		return nil
	}
	if unreachable(werr) {
		return werr // no kind would answer: -kind would not help
	}
	oerr := d.ogcapiURL(ctx, raw, res)
	if oerr == nil {
		res.Kind = KindOGCAPI
		return nil
	}
	return fmt.Errorf("neither a WFS (%v) nor an OGC API – Features server (%v); give -kind", werr, oerr)
}

// keep reports whether the filter keeps a layer named name (or titled
// title), counting those it leaves out.
func (d *Discoverer) keep(res *Result, names ...string) bool {
	if d.opts.Filter == nil {
		return true
	}
	for _, n := range names {
		if n != "" && d.opts.Filter.MatchString(n) {
			return true
		}
	}
	res.Skipped++
	return false
}

// each describes the layers in parallel (Options.Parallel at a time),
// each in its own slot of layers.
func (d *Discoverer) each(ctx context.Context, layers []Layer, describe func(ctx context.Context, l *Layer)) {
	sem := make(chan struct{}, d.opts.Parallel)
	var wg sync.WaitGroup
	for i := range layers {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			describe(ctx, &layers[i])
		}()
	}
	wg.Wait()
}
