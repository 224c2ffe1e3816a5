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

	"github.com/ingestd/ingestd/internal/gosource"
)

// kindFiles are the feeds files that may name a kind or import its package:
// the registry and the config parsing (see fetcherKinds).
func kindFile(name string) bool {
	return name == "fetchers.go" || strings.HasPrefix(name, "config")
}

// protocolPackages are the packages that speak one kind's protocol or
// format. Whatever else fetchers.go imports from this module, bar the
// packages every kind shares, counts too, so that a new kind's package is
// covered without editing this list.
var protocolPackages = []string{"wfs", "arcgis", "ogcapi", "geojson", "gml", "esrijson"}

var sharedPackages = map[string]bool{"source": true, "breaker": true, "httpcall": true, "redact": true, "feature": true, "schema": true}

const module = "github.com/ingestd/ingestd/"

// TestOnlyTheRegistryNamesKinds holds feeds to the architecture rule: a kind
// is one entry in fetchers.go plus its own package, and what it does
// differently reaches a poll only through the Fetcher contract (PageURLer,
// Restarter, FetchStats). Every other feeds file, poll.go first, must
// name no kind constant, compare with no kind's name and import no
// protocol package.
func TestOnlyTheRegistryNamesKinds(t *testing.T) {
	_, files := gosource.Parse(t, false)
	kinds := kindConstants(files)
	if kinds["KindOGCAPI"] != "ogcapi" || kinds["KindWFS"] != "wfs" || kinds["KindArcGIS"] != "arcgis" {
		t.Fatalf("kind constants found in config*.go: %v; the test reads the wrong files", kinds)
	}
	protocols := protocolSet(files["fetchers.go"])
	if !protocols[module+"ogcapi"] || !protocols[module+"arcgis"] {
		t.Fatalf("protocol packages: %v; fetchers.go should import every kind's package", protocols)
	}
	if _, ok := files["poll.go"]; !ok {
		t.Fatal("poll.go not parsed")
	}
	for _, problem := range kindMentions(files, kinds, protocols) {
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
	kinds := map[string]string{"KindOGCAPI": "ogcapi", "KindArcGIS": "arcgis"}
	got := kindMentions(map[string]*ast.File{"poll.go": f, "fetchers.go": f}, kinds, map[string]bool{module + "ogcapi": true})
	want := []string{
		`poll.go imports the protocol package github.com/ingestd/ingestd/ogcapi`,
		`poll.go names the kind constant KindOGCAPI`,
		`poll.go spells the kind name "arcgis"`,
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// kindConstants returns the Kind* string constants config*.go declares.
func kindConstants(files map[string]*ast.File) map[string]string {
	kinds := make(map[string]string)
	for name, f := range files {
		if !strings.HasPrefix(name, "config") {
			continue
		}
		for _, d := range f.Decls {
			gd, ok := d.(*ast.GenDecl)
			if !ok || gd.Tok != token.CONST {
				continue
			}
			for _, spec := range gd.Specs {
				vs := spec.(*ast.ValueSpec)
				for i, id := range vs.Names {
					if !strings.HasPrefix(id.Name, "Kind") || i >= len(vs.Values) {
						continue
					}
					if lit, ok := vs.Values[i].(*ast.BasicLit); ok && lit.Kind == token.STRING {
						kinds[id.Name], _ = strconv.Unquote(lit.Value)
					}
				}
			}
		}
	}
	return kinds
}

// protocolSet is protocolPackages plus this module's packages fetchers.go
// imports that not every kind shares.
func protocolSet(fetchers *ast.File) map[string]bool {
	set := make(map[string]bool)
	for _, p := range protocolPackages {
		set[module+p] = true
	}
	if fetchers == nil {
		return set
	}
	for _, imp := range fetchers.Imports {
		p, _ := strconv.Unquote(imp.Path.Value)
		if strings.HasPrefix(p, module) && !sharedPackages[path.Base(p)] {
			set[p] = true
		}
	}
	return set
}

// kindMentions lists, file by file, the imports of protocol packages, the
// uses of kind constants and the string literals equal to a kind's name
// outside the files allowed them.
func kindMentions(files map[string]*ast.File, kinds map[string]string, protocols map[string]bool) []string {
	values := make(map[string]bool)
	for _, v := range kinds {
		values[v] = true
	}
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
				if _, ok := kinds[n.Name]; ok {
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
