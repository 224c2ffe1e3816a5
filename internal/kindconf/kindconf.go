// Package kindconf is the seam between the feed kinds (wfs, geojson,
// arcgis, ogcapi, file, socrata) and the rest of ingestd: what a kind
// tells the config loader (package config) about its settings and the
// engine (package feeds) about its fetcher, and what the loader hands a
// kind's parser. It lets each kind's package own its settings (parse,
// defaults, validation, errors naming the field) and build its fetcher
// without importing config or feeds; Prometheus' discovery packages, each
// owning its config type and its discoverer's constructor, are the model.
package kindconf

import (
	"log/slog"
	"net/http"

	"go.yaml.in/yaml/v3"

	"github.com/ingestd/ingestd/breaker"
	"github.com/ingestd/ingestd/internal/yamlconf"
	"github.com/ingestd/ingestd/source"
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

// Spec is what a kind's package tells the rest of ingestd about itself:
// its name, its settings (what the config loader needs) and its fetcher
// (what the engine needs). The registry of kinds (package internal/kinds)
// lists one per kind.
type Spec struct {
	// Name is the kind's name in the config (kind: wfs), its package's
	// Kind constant.
	Name string
	// NewFetcher builds the kind's fetcher from the process's shared
	// dependencies.
	NewFetcher func(FetcherDeps) source.Fetcher
	// Keys are the feed keys only this kind reads. On a feed of another
	// kind one is ignored with a warning, or refused when Strict.
	Keys []string
	// Schemes are the URL schemes a feed of this kind may have besides
	// http and https (file: ftp).
	Schemes []string
	// Strict refuses Keys on a feed of another kind, rather than ignoring
	// them: arcgis, whose token must not be silently dropped.
	Strict bool
	// DefaultKeys are the keys the kind reads in the defaults block and
	// in a jurisdiction (wfs: version, output_format); ParseDefaults reads
	// them.
	DefaultKeys []string
	// ParseDefaults reads DefaultKeys from m (at path: the defaults block,
	// or a jurisdiction) over base (what the level above gave: nil for the
	// defaults block) and returns what Parse finds in Feed.Defaults; nil
	// when neither sets anything.
	ParseDefaults func(p *yamlconf.Parser, m *yamlconf.Mapping, path string, base any) any
	// Parse reads, checks and defaults the kind's settings of one feed.
	Parse func(f *Feed) source.Settings
	// DescribeSchema: the kind reads its layers' declared schema (WFS
	// DescribeFeatureType, OGC API schema or queryables) for typed layers.
	DescribeSchema bool
}

// Feed is one feed as a kind's parser sees it: the walker positioned on
// the feed's mapping, and the common settings the loader resolved (from
// the feed, its jurisdiction and the defaults), which the parser may
// adjust. A bad common value was reported already and is left empty here.
type Feed struct {
	*yamlconf.Parser
	// Map is the feed's mapping and Path its field path
	// ("jurisdictions[0].feeds[1]").
	Map  *yamlconf.Mapping
	Path string
	// Kind is the feed's kind, for messages.
	Kind string
	// URL is the feed's url; the parser clears it when it refuses it.
	URL string
	// PageSize is the resolved page size; PageSizeNode is its node when
	// the feed sets page_size itself (nil when inherited).
	PageSize     int
	PageSizeNode *yaml.Node
	// Headers are the feed's headers (jurisdiction's included); a kind
	// that sends a secret in a header (arcgis' token) replaces the map.
	Headers map[string]string
	// Defaults is what the kind's ParseDefaults returned (nil: none).
	Defaults any
}

// Field is the path of the feed's key.
func (f *Feed) Field(key string) string { return f.Path + "." + key }

// At returns the node of key when the feed sets it, else the feed's
// mapping: where a message about key points.
func (f *Feed) At(key string) *yaml.Node {
	if n, ok := f.Map.Get(key); ok {
		return n
	}
	return f.Map.Node
}

// Ignore warns about each of keys that the feed sets: a common setting this
// kind does not read ("page_size: ignored for a geojson feed").
func (f *Feed) Ignore(keys ...string) {
	for _, k := range keys {
		if n, ok := f.Map.Get(k); ok {
			f.Warnf(n, f.Field(k), "ignored for %s feed", Article(f.Kind))
		}
	}
}

// Article is name with its indefinite article: "a wfs", "an arcgis".
func Article(name string) string {
	if name != "" && (name[0] == 'a' || name[0] == 'e' || name[0] == 'i' || name[0] == 'o' || name[0] == 'u') {
		return "an " + name
	}
	return "a " + name
}
