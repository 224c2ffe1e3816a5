package feeds

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"net/http"
	"slices"
	"strings"

	"github.com/ingestd/ingestd/arcgis"
	"github.com/ingestd/ingestd/breaker"
	"github.com/ingestd/ingestd/geojsonurl"
	"github.com/ingestd/ingestd/ogcapi"
	"github.com/ingestd/ingestd/redact"
	"github.com/ingestd/ingestd/source"
	"github.com/ingestd/ingestd/wfs"
)

// FetcherDeps is what every kind's fetcher is built from: the process's
// shared HTTP client, its breaker registry (so that every kind's calls to
// one origin share that origin's breaker and pacing), its logger and the
// User-Agent it sends.
type FetcherDeps struct {
	// HTTP is the client every fetch shares; nil means http.DefaultClient.
	HTTP *http.Client
	// Breakers is the registry of origin breakers; nil makes every page a
	// single attempt with no breaker (one-off fetches).
	Breakers *breaker.Registry
	// Logger receives the fetchers' logs; nil discards.
	Logger *slog.Logger
	// UserAgent names ingestd to the servers it polls; "" keeps the
	// fetcher's default.
	UserAgent string
}

// NewFetcherFunc builds the fetcher of one feed kind.
type NewFetcherFunc func(FetcherDeps) Fetcher

// newArcGISFetcher is the fetcher of kind arcgis.
func newArcGISFetcher(d FetcherDeps) Fetcher {
	var opts []arcgis.Option
	if d.UserAgent != "" {
		opts = append(opts, arcgis.WithUserAgent(d.UserAgent))
	}
	return arcgis.NewClient(d.HTTP, d.Breakers, d.Logger, opts...)
}

// newOGCAPIFetcher is the fetcher of kind ogcapi.
func newOGCAPIFetcher(d FetcherDeps) Fetcher {
	var opts []ogcapi.Option
	if d.UserAgent != "" {
		opts = append(opts, ogcapi.WithUserAgent(d.UserAgent))
	}
	return ogcapi.NewClient(d.HTTP, d.Breakers, d.Logger, opts...)
}

// newGeoJSONFetcher is the fetcher of kind geojson.
func newGeoJSONFetcher(d FetcherDeps) Fetcher {
	var opts []geojsonurl.Option
	if d.UserAgent != "" {
		opts = append(opts, geojsonurl.WithUserAgent(d.UserAgent))
	}
	return geojsonurl.NewClient(d.HTTP, d.Breakers, d.Logger, opts...)
}

// newWFSFetcher is the fetcher of kind wfs.
func newWFSFetcher(d FetcherDeps) Fetcher {
	var opts []wfs.Option
	if d.UserAgent != "" {
		opts = append(opts, wfs.WithUserAgent(d.UserAgent))
	}
	return wfs.NewClient(d.HTTP, d.Breakers, d.Logger, opts...)
}

// Fetchers picks the fetcher of each feed by its kind (Layer.Kind). It is
// itself a Fetcher, which is what NewManager takes; it is safe for
// concurrent use.
type Fetchers struct {
	byKind map[string]Fetcher
}

// NewFetchers builds the fetcher of every registered kind from d.
func NewFetchers(d FetcherDeps) *Fetchers {
	reg := kinds()
	f := &Fetchers{byKind: make(map[string]Fetcher, len(reg))}
	for kind, k := range reg {
		f.byKind[kind] = k.fetcher(d)
	}
	return f
}

// Kinds returns the kinds f fetches, sorted.
func (f *Fetchers) Kinds() []string {
	return slices.Sorted(maps.Keys(f.byKind))
}

// fetcher returns the fetcher of kind, or an error naming the kinds there
// are. Config parsing refuses unknown kinds, so this fails only for a kind
// the config accepts and the registry lacks: a programming error that a
// test guards against.
func (f *Fetchers) fetcher(kind string) (Fetcher, error) {
	if ft, ok := f.byKind[kind]; ok {
		return ft, nil
	}
	return nil, fmt.Errorf("feeds: no fetcher for kind %q (kinds: %s)", kind, strings.Join(f.Kinds(), ", "))
}

// Prepare hands layer to the fetcher of its kind.
func (f *Fetchers) Prepare(ctx context.Context, layer source.Layer) (source.Layer, []string, error) {
	ft, err := f.fetcher(layer.Kind)
	if err != nil {
		return layer, nil, err
	}
	return ft.Prepare(ctx, layer)
}

// Fetch hands layer to the fetcher of its kind.
func (f *Fetchers) Fetch(ctx context.Context, layer source.Layer, firstPage int, handle source.PageFunc) (source.FetchStats, error) {
	ft, err := f.fetcher(layer.Kind)
	if err != nil {
		return source.FetchStats{NumberMatched: -1}, err
	}
	return ft.Fetch(ctx, layer, firstPage, handle)
}

// PageURL names the request of page of layer as its kind's fetcher does
// (PageURLer), or the layer's URL, redacted, for a kind whose fetcher does
// not: an ArcGIS dump restarts from its id list (see arcgis.Client.Fetch),
// so its URL is the request a dead letter names.
func (f *Fetchers) PageURL(layer source.Layer, page int) string {
	if ft, err := f.fetcher(layer.Kind); err == nil {
		if p, ok := ft.(PageURLer); ok {
			return p.PageURL(layer, page)
		}
	}
	return redact.URL(layer.URL)
}

// RestartReason asks the fetcher of layer's kind why a resumed poll of
// layer must start over from the first page (Restarter); "" for a kind
// that resumes.
func (f *Fetchers) RestartReason(layer source.Layer) string {
	if ft, err := f.fetcher(layer.Kind); err == nil {
		if r, ok := ft.(Restarter); ok {
			return r.RestartReason(layer)
		}
	}
	return ""
}

// RereadsPages asks the fetcher of layer's kind whether it reads a page
// again as it read it first (PageRereader); false for a kind that does not
// say.
func (f *Fetchers) RereadsPages(layer source.Layer) bool {
	if ft, err := f.fetcher(layer.Kind); err == nil {
		if r, ok := ft.(PageRereader); ok {
			return r.RereadsPages(layer)
		}
	}
	return false
}

// The contract's optional interfaces, held by the kinds that implement
// them and by Fetchers (which answers for every kind).
var (
	_ PageURLer    = (*Fetchers)(nil)
	_ PageURLer    = (*wfs.Client)(nil)
	_ PageURLer    = (*ogcapi.Client)(nil)
	_ Restarter    = (*Fetchers)(nil)
	_ PageRereader = (*Fetchers)(nil)
	_ PageRereader = (*wfs.Client)(nil)
	_ PageRereader = (*ogcapi.Client)(nil)
)
