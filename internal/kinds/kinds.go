// Package kinds is the registry of feed kinds: for each, its name in the
// config, its settings (a kindconf.Kind, which its package owns) and its
// fetcher. The config language (package config) reads settings through it
// and the engine (package feeds) builds fetchers from it, neither naming a
// kind; Prometheus' discovery registry, which its core holds while each
// mechanism owns its config, is the model.
package kinds

import (
	"github.com/ingestd/ingestd/arcgis"
	"github.com/ingestd/ingestd/download"
	"github.com/ingestd/ingestd/geojsonurl"
	"github.com/ingestd/ingestd/internal/kindconf"
	"github.com/ingestd/ingestd/ogcapi"
	"github.com/ingestd/ingestd/socrata"
	"github.com/ingestd/ingestd/source"
	"github.com/ingestd/ingestd/wfs"
)

// Kind is one kind of the registry.
type Kind struct {
	// Name is the kind's name in the config (kind: wfs).
	Name string
	// Settings is what the config language needs of the kind.
	Settings kindconf.Kind
	// NewFetcher builds the kind's fetcher.
	NewFetcher func(kindconf.FetcherDeps) source.Fetcher
}

// All lists the registry's kinds, in the order messages name them.
// Adding a kind is its package (its settings in a kindconf.Kind, its
// fetcher over package source's types, its calls through package
// httpcall), one line here and its docs. It is a function, not a package
// variable, so that nothing can change it at run time.
func All() []Kind {
	return []Kind{
		{wfs.Kind, wfs.Config(), newWFSFetcher},
		{geojsonurl.Kind, geojsonurl.Config(), newGeoJSONFetcher},
		{arcgis.Kind, arcgis.Config(), newArcGISFetcher},
		{ogcapi.Kind, ogcapi.Config(), newOGCAPIFetcher},
		{download.Kind, download.Config(), newFileFetcher},
		{socrata.Kind, socrata.Config(), newSocrataFetcher},
	}
}

// Names lists the registry's kinds' names, in All's order.
func Names() []string {
	all := All()
	names := make([]string, len(all))
	for i, k := range all {
		names[i] = k.Name
	}
	return names
}

// Lookup finds the kind named name.
func Lookup(name string) (Kind, bool) {
	for _, k := range All() {
		if k.Name == name {
			return k, true
		}
	}
	return Kind{}, false
}

// newArcGISFetcher is the fetcher of kind arcgis.
func newArcGISFetcher(d kindconf.FetcherDeps) source.Fetcher {
	var opts []arcgis.Option
	if d.UserAgent != "" {
		opts = append(opts, arcgis.WithUserAgent(d.UserAgent))
	}
	return arcgis.NewClient(d.HTTP, d.Breakers, d.Logger, opts...)
}

// newOGCAPIFetcher is the fetcher of kind ogcapi.
func newOGCAPIFetcher(d kindconf.FetcherDeps) source.Fetcher {
	return ogcapi.NewClient(d.HTTP, d.Breakers, d.Logger, ogcapi.WithUserAgent(d.UserAgent))
}

// newGeoJSONFetcher is the fetcher of kind geojson.
func newGeoJSONFetcher(d kindconf.FetcherDeps) source.Fetcher {
	return geojsonurl.NewClient(d.HTTP, d.Breakers, d.Logger, geojsonurl.WithUserAgent(d.UserAgent))
}

// newWFSFetcher is the fetcher of kind wfs.
func newWFSFetcher(d kindconf.FetcherDeps) source.Fetcher {
	return wfs.NewClient(d.HTTP, d.Breakers, d.Logger, wfs.WithUserAgent(d.UserAgent))
}

// newSocrataFetcher is the fetcher of kind socrata.
func newSocrataFetcher(d kindconf.FetcherDeps) source.Fetcher {
	return socrata.NewClient(d.HTTP, d.Breakers, d.Logger, socrata.WithUserAgent(d.UserAgent))
}

// newFileFetcher is the fetcher of kind file.
func newFileFetcher(d kindconf.FetcherDeps) source.Fetcher {
	return download.NewFetcher(d.HTTP, d.Breakers, d.Logger, d.UserAgent)
}
