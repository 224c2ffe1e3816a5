package feeds

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/ingestd/ingestd/internal/kindconf"
	"github.com/ingestd/ingestd/internal/kinds"
	"github.com/ingestd/ingestd/redact"
	"github.com/ingestd/ingestd/source"
)

// Fetchers picks the fetcher of each feed by its kind (Layer.Kind), from
// the registry of kinds (package internal/kinds). It is itself a Fetcher,
// which is what NewManager takes; it is safe for concurrent use.
type Fetchers struct {
	byKind map[string]Fetcher
}

// NewFetchers builds the fetcher of every registered kind from d.
func NewFetchers(d kindconf.FetcherDeps) *Fetchers {
	reg := kinds.All()
	f := &Fetchers{byKind: make(map[string]Fetcher, len(reg))}
	for _, k := range reg {
		f.byKind[k.Name] = k.NewFetcher(d)
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
