package geojson

import (
	"github.com/ingestd/ingestd/internal/kindconf"
	"github.com/ingestd/ingestd/source"
)

// Kind is the feed kind this package fetches: a plain GeoJSON document.
const Kind = "geojson"

// Spec is the geojson kind as the registry of kinds lists it: it has no
// settings of its own, and it reads the document as it is, so the paging
// setting is ignored with a warning.
func Spec() kindconf.Spec {
	return kindconf.Spec{Name: Kind, Parse: parseFeed, NewFetcher: newFetcher}
}

// newFetcher is the geojson kind's fetcher, as the registry of kinds builds
// it: a Client over the process's shared dependencies.
func newFetcher(d kindconf.FetcherDeps) source.Fetcher {
	return NewClient(d.HTTP, d.Breakers, d.Logger, WithUserAgent(d.UserAgent))
}

func parseFeed(f *kindconf.Feed) source.Settings {
	f.Ignore("page_size")
	f.PageSize = 0
	return nil
}
