package feeds

import (
	"maps"
	"slices"

	"github.com/ingestd/ingestd/arcgis"
	"github.com/ingestd/ingestd/download"
	"github.com/ingestd/ingestd/geojsonurl"
	"github.com/ingestd/ingestd/internal/kindconf"
	"github.com/ingestd/ingestd/ogcapi"
	"github.com/ingestd/ingestd/socrata"
	"github.com/ingestd/ingestd/wfs"
)

// Feed kinds, as the config names them: each is its package's Kind.
const (
	// KindWFS is a WFS feature type (package wfs).
	KindWFS = wfs.Kind
	// KindGeoJSON is a plain GeoJSON document (package geojsonurl).
	KindGeoJSON = geojsonurl.Kind
	// KindArcGIS is an ArcGIS REST layer (package arcgis).
	KindArcGIS = arcgis.Kind
	// KindOGCAPI is an OGC API – Features collection (package ogcapi).
	KindOGCAPI = ogcapi.Kind
)

// kindEntry is one kind of the registry: its settings, as its package
// reads them, and its fetcher.
type kindEntry struct {
	config  kindconf.Kind
	fetcher NewFetcherFunc
}

// kinds is the registry of feed kinds. Adding a kind is its package (its
// settings in a kindconf.Kind, its Fetcher over package source's types,
// its calls through package httpcall), one line here and its docs. It is
// a function, not a package variable, so that nothing can change it at
// run time.
func kinds() map[string]kindEntry {
	return map[string]kindEntry{
		KindWFS:     {wfs.Config(), newWFSFetcher},
		KindGeoJSON: {geojsonurl.Config(), newGeoJSONFetcher},
		KindArcGIS:  {arcgis.Config(), newArcGISFetcher},
		KindOGCAPI:  {ogcapi.Config(), newOGCAPIFetcher},
		socrata.Kind: {socrata.Config(), func(d FetcherDeps) Fetcher {
			return socrata.NewClient(d.HTTP, d.Breakers, d.Logger, socrata.WithUserAgent(d.UserAgent))
		}},
		download.Kind: {download.Config(), func(d FetcherDeps) Fetcher { return download.NewFetcher(d.HTTP, d.Breakers, d.Logger, d.UserAgent) }},
	}
}

// kindNames lists the registry's kinds in the order messages name them.
func kindNames() []string {
	order := []string{KindWFS, KindGeoJSON, KindArcGIS, KindOGCAPI}
	for _, k := range slices.Sorted(maps.Keys(kinds())) {
		if !slices.Contains(order, k) {
			order = append(order, k)
		}
	}
	return order
}

// describesSchema reports whether feeds of kind read their layers'
// declared schema (typed layers).
func describesSchema(kind string) bool { return kinds()[kind].config.DescribeSchema }

// feedKeys are the keys a feed may have: the common ones and every kind's.
func feedKeys() []string {
	keys := slices.Clone(commonFeedKeys)
	for _, name := range kindNames() {
		for _, k := range kinds()[name].config.Keys {
			if !slices.Contains(keys, k) {
				keys = append(keys, k)
			}
		}
	}
	return keys
}

// jurisdictionAllKeys are the keys of a jurisdiction: the common ones and
// every kind's DefaultKeys.
func jurisdictionAllKeys() []string { return withKindDefaultKeys(jurisdictionKeys) }

// defaultsKeys are the keys of the defaults block: the common ones and
// every kind's DefaultKeys.
func defaultsKeys() []string { return withKindDefaultKeys(commonDefaultsKeys) }

// withKindDefaultKeys is common and every kind's DefaultKeys.
func withKindDefaultKeys(common []string) []string {
	keys := slices.Clone(common)
	for _, name := range kindNames() {
		for _, k := range kinds()[name].config.DefaultKeys {
			if !slices.Contains(keys, k) {
				keys = append(keys, k)
			}
		}
	}
	return keys
}
