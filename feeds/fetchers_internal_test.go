package feeds

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/ingestd/ingestd/source"
)

// TestFetcherKindsMatchConfig: every kind the configuration accepts has a
// fetcher, and the registry has no kind the configuration refuses.
func TestFetcherKindsMatchConfig(t *testing.T) {
	t.Parallel()
	configKinds := []string{KindArcGIS, KindGeoJSON, KindOGCAPI, KindWFS} // config.go's parseFeed accepts these
	if got := NewFetchers(FetcherDeps{}).Kinds(); !slices.Equal(got, configKinds) {
		t.Errorf("registry kinds %v, config kinds %v", got, configKinds)
	}
}

// TestFetchersUnknownKind: a layer of a kind with no fetcher fails before
// any request, naming the kinds there are.
func TestFetchersUnknownKind(t *testing.T) {
	t.Parallel()
	f := NewFetchers(FetcherDeps{})
	_, err := f.Fetch(context.Background(), source.Layer{Kind: "nosuchkind", URL: "http://127.0.0.1:1/x"}, 0, nil)
	if err == nil || !strings.Contains(err.Error(), `no fetcher for kind "nosuchkind" (kinds: arcgis, geojson, ogcapi, wfs)`) {
		t.Errorf("Fetch: %v", err)
	}
	if _, _, err := f.Prepare(context.Background(), source.Layer{Kind: "nosuchkind"}); err == nil {
		t.Error("Prepare of an unknown kind: no error")
	}
}
