package feeds_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/ingestd/ingestd/internal/kinds"
)

// protocolPackages are the packages that speak one kind's protocol or
// format. Whatever else the registry (internal/kinds) imports from this
// module, bar the packages every kind shares, counts too, so that a new
// kind's package is covered without editing this list.
var protocolPackages = []string{"wfs", "arcgis", "ogcapi", "geojson", "encoding/geojson", "encoding/gml", "encoding/esrijson", "socrata", "file"}

var sharedPackages = map[string]bool{"source": true, "breaker": true, "httpcall": true, "redact": true, "feature": true, "schema": true,
	"kindconf": true, "yamlconf": true}

const module = "github.com/ingestd/ingestd/"

// TestOnlyTheRegistryNamesKinds holds the engine (feeds) and the config
// language (config) to the architecture rule: a kind is its own package
// (its settings, parsed by it, its fetcher) plus one line in the registry,
// internal/kinds, and what it does differently reaches a poll only through
// the Fetcher contract (PageURLer, Restarter, FetchStats) and the config
// only through kindconf.Spec. No file of feeds or config, poll.go and
// config.go first, may compare with a kind's name or import a protocol
// package.
func TestOnlyTheRegistryNamesKinds(t *testing.T) {
	files := parseDirs(t, ".", "../config")
	values := make(map[string]bool)
	for _, k := range kinds.Names() {
		values[k] = true
	}
	if !values["ogcapi"] || !values["wfs"] || !values["arcgis"] || !values["geojson"] || !values["socrata"] || !values["file"] {
		t.Fatalf("kinds registered: %v; the test reads the wrong registry", values)
	}
	protocols := protocolSet(parseDirs(t, "../internal/kinds")["../internal/kinds/kinds.go"])
	for _, p := range []string{"ogcapi", "arcgis", "wfs", "geojson", "socrata", "file"} {
		if !protocols[module+p] {
			t.Fatalf("protocol packages: %v; the registry should import every kind's package", protocols)
		}
	}
	for _, f := range []string{"poll.go", "../config/config.go"} {
		if _, ok := files[f]; !ok {
			t.Fatal(f + " not parsed")
		}
	}
	for _, problem := range kindMentions(files, values, protocols) {
		t.Error(problem)
	}
}

// TestKindMentionsCatchesAKindSwitch: the check above fails on the code it
// exists to keep out.
func TestKindMentionsCatchesAKindSwitch(t *testing.T) {
	src := `package feeds

import "github.com/ingestd/ingestd/ogcapi"

func pageURL(kind string, err error) bool {
	if kind == ogcapi.Kind {
		return ogcapi.LinkExpired(err)
	}
	return kind == "arcgis"
}
`
	f, err := parser.ParseFile(token.NewFileSet(), "poll.go", src, 0)
	if err != nil {
		t.Fatal(err)
	}
	values := map[string]bool{"ogcapi": true, "arcgis": true}
	got := kindMentions(map[string]*ast.File{"poll.go": f}, values, map[string]bool{module + "ogcapi": true})
	want := []string{
		`poll.go imports the protocol package github.com/ingestd/ingestd/ogcapi`,
		`poll.go spells the kind name "arcgis"`,
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// parseDirs parses the non-test Go files of dirs, by their path.
func parseDirs(t *testing.T, dirs ...string) map[string]*ast.File {
	t.Helper()
	files := make(map[string]*ast.File)
	fset := token.NewFileSet()
	for _, dir := range dirs {
		names, err := filepath.Glob(filepath.Join(dir, "*.go"))
		if err != nil {
			t.Fatal(err)
		}
		for _, name := range names {
			if strings.HasSuffix(name, "_test.go") {
				continue
			}
			f, err := parser.ParseFile(fset, name, nil, 0)
			if err != nil {
				t.Fatal(err)
			}
			files[filepath.ToSlash(name)] = f
		}
	}
	return files
}

// protocolSet is protocolPackages plus this module's packages the registry
// imports that not every kind shares.
func protocolSet(registry *ast.File) map[string]bool {
	set := make(map[string]bool)
	for _, p := range protocolPackages {
		set[module+p] = true
	}
	if registry == nil {
		return set
	}
	for _, imp := range registry.Imports {
		p, _ := strconv.Unquote(imp.Path.Value)
		if strings.HasPrefix(p, module) && !sharedPackages[path.Base(p)] {
			set[p] = true
		}
	}
	return set
}

// kindMentions lists, file by file, the imports of protocol packages and
// the string literals equal to a kind's name.
func kindMentions(files map[string]*ast.File, values map[string]bool, protocols map[string]bool) []string {
	names := make([]string, 0, len(files))
	for name := range files {
		names = append(names, name)
	}
	sort.Strings(names)
	var problems []string
	for _, name := range names {
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
