package feeds_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/ingestd/ingestd/feeds"
	"github.com/ingestd/ingestd/internal/gosource"
)

// kindFile reports whether a feeds file may name a kind or import its
// package: the registry (kinds.go) and the fetchers' constructors
// (fetchers.go). The config parsing hands each kind its own settings
// through the registry, so config*.go may not.
func kindFile(name string) bool {
	return name == "kinds.go" || name == "fetchers.go"
}

// protocolPackages are the packages that speak one kind's protocol or
// format. Whatever else fetchers.go imports from this module, bar the
// packages every kind shares, counts too, so that a new kind's package is
// covered without editing this list.
var protocolPackages = []string{"wfs", "arcgis", "ogcapi", "geojsonurl", "geojson", "gml", "esrijson"}

var sharedPackages = map[string]bool{"source": true, "breaker": true, "httpcall": true, "redact": true, "feature": true, "schema": true,
	"kindconf": true, "yamlconf": true}

const module = "github.com/ingestd/ingestd/"

// TestOnlyTheRegistryNamesKinds holds feeds to the architecture rule: a kind
// is one entry in kinds.go plus its own package (its settings, parsed by
// it, its fetcher), and what it does differently reaches a poll only
// through the Fetcher contract (PageURLer, Restarter, FetchStats) and the
// config only through kindconf.Kind. Every other feeds file, poll.go and
// config.go first, must name no kind constant, compare with no kind's name
// and import no protocol package.
func TestOnlyTheRegistryNamesKinds(t *testing.T) {
	_, files := gosource.Parse(t, false)
	names := kindConstants(files)
	values := make(map[string]bool)
	for _, k := range feeds.KindNames() {
		values[k] = true
	}
	if !names["KindOGCAPI"] || !names["KindWFS"] || !names["KindArcGIS"] || !names["KindGeoJSON"] ||
		!values["ogcapi"] || !values["wfs"] || !values["arcgis"] || !values["geojson"] {
		t.Fatalf("kind constants found in kinds.go: %v, kinds registered: %v; the test reads the wrong files", names, values)
	}
	protocols := protocolSet(files["kinds.go"], files["fetchers.go"])
	for _, p := range []string{"ogcapi", "arcgis", "wfs", "geojsonurl"} {
		if !protocols[module+p] {
			t.Fatalf("protocol packages: %v; kinds.go should import every kind's package", protocols)
		}
	}
	for _, f := range []string{"poll.go", "config.go"} {
		if _, ok := files[f]; !ok {
			t.Fatal(f + " not parsed")
		}
	}
	for _, problem := range kindMentions(files, names, values, protocols) {
		t.Error(problem)
	}
}

// TestKindMentionsCatchesAKindSwitch: the check above fails on the code it
// exists to keep out.
func TestKindMentionsCatchesAKindSwitch(t *testing.T) {
	src := `package feeds

import "github.com/ingestd/ingestd/ogcapi"

func pageURL(kind string, err error) bool {
	if kind == KindOGCAPI {
		return ogcapi.LinkExpired(err)
	}
	return kind == "arcgis"
}
`
	f, err := parser.ParseFile(token.NewFileSet(), "poll.go", src, 0)
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{"KindOGCAPI": true, "KindArcGIS": true}
	values := map[string]bool{"ogcapi": true, "arcgis": true}
	got := kindMentions(map[string]*ast.File{"poll.go": f, "kinds.go": f}, names, values, map[string]bool{module + "ogcapi": true})
	want := []string{
		`poll.go imports the protocol package github.com/ingestd/ingestd/ogcapi`,
		`poll.go names the kind constant KindOGCAPI`,
		`poll.go spells the kind name "arcgis"`,
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// kindConstants returns the names of the Kind* constants kinds.go
// declares.
func kindConstants(files map[string]*ast.File) map[string]bool {
	kinds := make(map[string]bool)
	f := files["kinds.go"]
	if f == nil {
		return kinds
	}
	for _, d := range f.Decls {
		gd, ok := d.(*ast.GenDecl)
		if !ok || gd.Tok != token.CONST {
			continue
		}
		for _, spec := range gd.Specs {
			for _, id := range spec.(*ast.ValueSpec).Names {
				if strings.HasPrefix(id.Name, "Kind") {
					kinds[id.Name] = true
				}
			}
		}
	}
	return kinds
}

// protocolSet is protocolPackages plus this module's packages the registry
// files import that not every kind shares.
func protocolSet(registry ...*ast.File) map[string]bool {
	set := make(map[string]bool)
	for _, p := range protocolPackages {
		set[module+p] = true
	}
	for _, f := range registry {
		if f == nil {
			continue
		}
		for _, imp := range f.Imports {
			p, _ := strconv.Unquote(imp.Path.Value)
			if strings.HasPrefix(p, module) && !sharedPackages[path.Base(p)] {
				set[p] = true
			}
		}
	}
	return set
}

// kindMentions lists, file by file, the imports of protocol packages, the
// uses of kind constants and the string literals equal to a kind's name
// outside the files allowed them.
func kindMentions(files map[string]*ast.File, kinds, values map[string]bool, protocols map[string]bool) []string {
	names := make([]string, 0, len(files))
	for name := range files {
		names = append(names, name)
	}
	sort.Strings(names)
	var problems []string
	for _, name := range names {
		if kindFile(name) {
			continue
		}
		f := files[name]
		for _, imp := range f.Imports {
			if p, _ := strconv.Unquote(imp.Path.Value); protocols[p] {
				problems = append(problems, name+" imports the protocol package "+p)
			}
		}
		ast.Inspect(f, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.ImportSpec:
				return false
			case *ast.Ident:
				if kinds[n.Name] {
					problems = append(problems, name+" names the kind constant "+n.Name)
				}
			case *ast.BasicLit:
				if v, err := strconv.Unquote(n.Value); n.Kind == token.STRING && err == nil && values[v] {
					problems = append(problems, name+" spells the kind name "+n.Value)
				}
			}
			return true
		})
	}
	return problems
}
