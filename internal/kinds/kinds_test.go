package kinds_test

import (
	"reflect"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/ingestd/ingestd/internal/kindconf"
	"github.com/ingestd/ingestd/internal/kinds"
)

// TestRegistryOrder: messages list the kinds in this order ("must be
// "wfs", "geojson", …"), so a new kind goes last and the order is kept.
func TestRegistryOrder(t *testing.T) {
	want := []string{"wfs", "geojson", "arcgis", "ogcapi", "file", "socrata"}
	if got := kinds.Names(); !slices.Equal(got, want) {
		t.Errorf("kinds.Names() = %v, want %v", got, want)
	}
}

// TestEveryKindIsComplete: each registered kind has a name of its own, a
// settings parser and a fetcher, and Lookup finds it by that name.
func TestEveryKindIsComplete(t *testing.T) {
	seen := map[string]bool{}
	for i, k := range kinds.All() {
		switch {
		case k.Name == "":
			t.Errorf("kind %d has no name", i)
		case seen[k.Name]:
			t.Errorf("kind %q registered twice", k.Name)
		case k.Parse == nil:
			t.Errorf("kind %q has no settings parser", k.Name)
		case k.NewFetcher == nil:
			t.Errorf("kind %q has no fetcher", k.Name)
		case k.NewFetcher(kindconf.FetcherDeps{}) == nil:
			t.Errorf("kind %q built a nil fetcher", k.Name)
		}
		seen[k.Name] = true
		if got, ok := kinds.Lookup(k.Name); !ok || got.Name != k.Name {
			t.Errorf("Lookup(%q) = %q, %v", k.Name, got.Name, ok)
		}
	}
	if _, ok := kinds.Lookup("shapefile"); ok {
		t.Error("Lookup found a kind that is not registered")
	}
}

// TestKindIsItsPackage: a kind's package is the directory named as its
// YAML kind (kind: file is package file), so that the config leads to the
// code without a table. The package is the one that defines the kind's
// settings parser.
func TestKindIsItsPackage(t *testing.T) {
	const module = "github.com/ingestd/ingestd/"
	for _, k := range kinds.All() {
		fn := runtime.FuncForPC(reflect.ValueOf(k.Parse).Pointer()).Name() // module/pkg.func
		pkg := fn[:strings.LastIndex(fn, ".")]
		if want := module + k.Name; pkg != want {
			t.Errorf("kind %q is parsed by package %s, want %s", k.Name, pkg, want)
		}
	}
}
