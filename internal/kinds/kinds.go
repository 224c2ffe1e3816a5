// Package kinds is the registry of feed kinds: one line per kind, its
// package's kindconf.Spec (its name in the config, its settings, its
// fetcher). The config language (package config) reads settings through it
// and the engine (package feeds) builds fetchers from it, neither naming a
// kind; Prometheus' discovery registry, which its core holds while each
// mechanism owns its config, is the model.
package kinds

import (
	"github.com/ingestd/ingestd/arcgis"
	"github.com/ingestd/ingestd/file"
	"github.com/ingestd/ingestd/geojson"
	"github.com/ingestd/ingestd/internal/kindconf"
	"github.com/ingestd/ingestd/ogcapi"
	"github.com/ingestd/ingestd/socrata"
	"github.com/ingestd/ingestd/wfs"
)

// All lists the registry's kinds, in the order messages name them.
// Adding a kind is its package (its kindconf.Spec: settings parsed by it,
// a fetcher over package source's types making its calls through package
// httpcall), one line here and its docs. It is a function, not a package
// variable, so that nothing can change it at run time.
func All() []kindconf.Spec {
	return []kindconf.Spec{
		wfs.Spec(),
		geojson.Spec(),
		arcgis.Spec(),
		ogcapi.Spec(),
		file.Spec(),
		socrata.Spec(),
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
func Lookup(name string) (kindconf.Spec, bool) {
	for _, k := range All() {
		if k.Name == name {
			return k, true
		}
	}
	return kindconf.Spec{}, false
}
