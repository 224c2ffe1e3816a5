package feeds

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/ingestd/ingestd/arcgis"
	"github.com/ingestd/ingestd/file"
	"github.com/ingestd/ingestd/geojson"
	"github.com/ingestd/ingestd/internal/kindconf"
	"github.com/ingestd/ingestd/ogcapi"
	"github.com/ingestd/ingestd/socrata"
	"github.com/ingestd/ingestd/source"
	"github.com/ingestd/ingestd/wfs"
)

// TestFetcherKindsMatchConfig: every kind the configuration accepts has a
// fetcher, and the registry has no kind the configuration refuses.
func TestFetcherKindsMatchConfig(t *testing.T) {
	t.Parallel()
	configKinds := []string{arcgis.Kind, file.Kind, geojson.Kind, ogcapi.Kind, socrata.Kind, wfs.Kind} // what the config accepts, sorted
	if got := NewFetchers(kindconf.FetcherDeps{}).Kinds(); !slices.Equal(got, configKinds) {
		t.Errorf("registry kinds %v, config kinds %v", got, configKinds)
	}
}

// TestFetchersUnknownKind: a layer of a kind with no fetcher fails before
// any request, naming the kinds there are.
func TestFetchersUnknownKind(t *testing.T) {
	t.Parallel()
	f := NewFetchers(kindconf.FetcherDeps{})
	_, err := f.Fetch(context.Background(), source.Layer{Kind: "nosuchkind", URL: "http://127.0.0.1:1/x"}, 0, nil)
	if err == nil || !strings.Contains(err.Error(), `no fetcher for kind "nosuchkind" (kinds: arcgis, file, geojson, ogcapi, socrata, wfs)`) {
		t.Errorf("Fetch: %v", err)
	}
	if _, _, err := f.Prepare(context.Background(), source.Layer{Kind: "nosuchkind"}); err == nil {
		t.Error("Prepare of an unknown kind: no error")
	}
}

// TestFetchersAnswerPerKind: Fetchers hands the contract's optional
// interfaces to the fetcher of the layer's kind, and answers a kind that
// lacks one with its default: the dead-letter URL of each kind's page
// (credentials redacted), and which read a page again to prove a resumed
// poll's staged pages (wfs when paged, ogcapi) rather than start it over.
func TestFetchersAnswerPerKind(t *testing.T) {
	t.Parallel()
	f := NewFetchers(kindconf.FetcherDeps{})
	const secret = "s3cr3t"
	for _, tc := range []struct {
		layer   source.Layer
		page    int
		url     string // what PageURL must contain
		rereads bool
	}{
		{source.Layer{Kind: wfs.Kind, URL: "http://127.0.0.1:1/wfs?token=" + secret, Settings: wfs.Settings{TypeName: "parcels", Version: "2.0.0", OutputFormat: "application/json"}, PageSize: 100}, 3, "startIndex=300", true},
		{source.Layer{Kind: geojson.Kind, URL: "http://127.0.0.1:1/p.geojson?token=" + secret}, 0, "/p.geojson", false},
		{source.Layer{Kind: arcgis.Kind, URL: "http://127.0.0.1:1/arcgis/rest/services/P/FeatureServer/0?token=" + secret, PageSize: 100},
			4, "/FeatureServer/0", false},
		{source.Layer{Kind: ogcapi.Kind, URL: "http://127.0.0.1:1/collections/p?key=" + secret,
			Settings: ogcapi.Settings{ItemsURL: "http://127.0.0.1:1/collections/p/items?key=" + secret}, PageSize: 50}, 0, "/collections/p/items?", true},
		// A parked poll of page 2 resumes at a link only its pages know:
		// its letter names the first page.
		{source.Layer{Kind: ogcapi.Kind, URL: "http://127.0.0.1:1/collections/p?key=" + secret,
			Settings: ogcapi.Settings{ItemsURL: "http://127.0.0.1:1/collections/p/items"}, PageSize: 50}, 2, "/collections/p/items?limit=50", true},
	} {
		got := f.PageURL(tc.layer, tc.page)
		if !strings.Contains(got, tc.url) || strings.Contains(got, secret) {
			t.Errorf("%s page %d: PageURL %q; want it to contain %q and no credential", tc.layer.Kind, tc.page, got, tc.url)
		}
		if got := f.RereadsPages(tc.layer); got != tc.rereads {
			t.Errorf("%s: RereadsPages %v", tc.layer.Kind, got)
		}
		if got := f.RestartReason(tc.layer); got != "" {
			t.Errorf("%s: RestartReason %q, want none (socrata's alone)", tc.layer.Kind, got)
		}
	}
	if got := f.PageURL(source.Layer{Kind: "nosuchkind", URL: "http://u:" + secret + "@127.0.0.1:1/x"}, 1); strings.Contains(got, secret) || !strings.Contains(got, "/x") {
		t.Errorf("unknown kind: PageURL %q", got)
	}
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
