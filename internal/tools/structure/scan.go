package main

import (
	"bufio"
	"bytes"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
)

// Facts is what the tool reports about a module's production code.
type Facts struct {
	Module   string    `json:"module"`
	Packages []Package `json:"packages"`
	Lines    int       `json:"lines"`

	// ImportDepth is the number of edges in the longest chain of
	// intra-module imports; ImportChain is one such chain.
	ImportDepth int      `json:"import_depth"`
	ImportChain []string `json:"import_chain"`

	DuplicateSentinels []Sentinel `json:"duplicate_sentinels"`
	AnyTypes           []Place    `json:"any_types"`

	// IssueRefs are references to the project's own issues or rounds in
	// comments of production Go code and SQL; TestIssueRefs the same in
	// test files. UpstreamRefs (Project#NNN) name another project's bug,
	// which explains a behaviour, and are listed apart.
	IssueRefs     []Place `json:"issue_refs"`
	TestIssueRefs []Place `json:"test_issue_refs"`
	UpstreamRefs  []Place `json:"upstream_refs"`

	// Figures are comments of production Go code and SQL that quote a
	// measured figure; Cited says whether the comment names the benchmark
	// that measures it.
	Figures []Figure `json:"figures"`
}

// Package is one directory of production Go files.
type Package struct {
	Path     string `json:"path"` // relative to the module root
	Name     string `json:"name"`
	Files    int    `json:"files"`
	Lines    int    `json:"lines"`
	Exported int    `json:"exported"` // exported top-level names: types, funcs, vars, consts
	imports  []string
}

// Sentinel is an Err… name declared with errors.New in more than one package.
type Sentinel struct {
	Name     string   `json:"name"`
	Packages []string `json:"packages"`
}

// Place is one finding in a file.
type Place struct {
	Pos  string `json:"pos"` // file:line relative to the module root
	Text string `json:"text"`
}

// Figure is a comment quoting a figure. Cited says whether it names the
// benchmark that measures it; Constant, whether it documents a constant
// (the doc or line comment of a const declaration), whose figure is the
// constant's value or what follows from it; Input, whether each of its
// figures only sizes a hypothetical input ("a 2 GB string"). No benchmark
// measures the last two.
type Figure struct {
	Place
	Cited    bool `json:"cited"`
	Constant bool `json:"constant"`
	Input    bool `json:"input"`
}

var (
	// issueRef matches "issue 27", "issues 26 and 27", "issue #27", a bare
	// "#27" that no word precedes (so not MapServer#6613, &#43; or
	// epsg.xml#4326), and "wave 2".
	issueRef = regexp.MustCompile(`(?i)\bissues? #?\d+|(?:^|[\s(\[,;:])#\d{2,}\b|\bwave \d+\b`)
	// upstreamRef matches another project's issue: MapServer#6613, OSGeo/gdal#8522.
	upstreamRef = regexp.MustCompile(`[A-Za-z][\w./-]*#\d+\b`)
	// figure matches a number with a unit of measure: a duration, a size,
	// a rate, a share or a ratio. Whole seconds are left out: "30s" is how
	// a timeout is written, not a measurement.
	figure = regexp.MustCompile(`\d(?:[\d,]*\d)?(?:\.\d+)?\s?(?:` +
		`(?:ms|µs|us|ns|MB|MiB|GB|GiB|kB|KB|KiB|TB)\b|%|` +
		`(?:features|rows|pages|requests|polls|ops|MB)/s\b|` +
		`x (?:faster|slower|less|more|smaller|larger)\b)` +
		`|\d+\.\d+\s?s\b|\d×`)
	// inputSize matches a figure that sizes a hypothetical input ("a 2 GB
	// string", "an 8 MiB page"): an example, not a measurement.
	inputSize = regexp.MustCompile(`(?i)\ban? $`)
	// quoted matches a quoted string in a comment ("64MiB"): an example of
	// a syntax, not a figure.
	quoted = regexp.MustCompile(`"[^"]*"`)
	// benchmarkCite matches a comment that names where a figure is measured.
	benchmarkCite = regexp.MustCompile(`\bBenchmark\w*|scripts/bench\.sh|\bbench\.sh\b|docs/benchmarks\.md`)
)

// Scan reads the module rooted at root (the directory holding go.mod).
func Scan(root string) (*Facts, error) {
	mod, err := modulePath(root)
	if err != nil {
		return nil, err
	}
	facts := &Facts{Module: mod}
	pkgs := map[string]*Package{}
	sentinels := map[string]map[string]bool{}
	fset := token.NewFileSet()
	err = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(root, p)
		if err != nil {
			return err
		}
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			if p != root && skipDir(p, d.Name(), rel) {
				return filepath.SkipDir
			}
			return nil
		}
		switch {
		case strings.HasSuffix(p, "_test.go"):
			return scanTestFile(fset, p, rel, facts)
		case strings.HasSuffix(p, ".go"):
			return scanGoFile(fset, p, rel, mod, pkgs, sentinels, facts)
		case strings.HasSuffix(p, ".sql"):
			return scanSQLFile(p, rel, facts)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	for _, p := range pkgs {
		facts.Packages = append(facts.Packages, *p)
		facts.Lines += p.Lines
	}
	sort.Slice(facts.Packages, func(i, j int) bool { return facts.Packages[i].Path < facts.Packages[j].Path })
	facts.ImportDepth, facts.ImportChain = longestChain(mod, pkgs)
	for name, in := range sentinels {
		if len(in) > 1 {
			s := Sentinel{Name: name}
			for p := range in {
				s.Packages = append(s.Packages, p)
			}
			sort.Strings(s.Packages)
			facts.DuplicateSentinels = append(facts.DuplicateSentinels, s)
		}
	}
	sort.Slice(facts.DuplicateSentinels, func(i, j int) bool {
		return facts.DuplicateSentinels[i].Name < facts.DuplicateSentinels[j].Name
	})
	for _, list := range [][]Place{facts.AnyTypes, facts.IssueRefs, facts.TestIssueRefs, facts.UpstreamRefs} {
		sortPlaces(list)
	}
	sort.SliceStable(facts.Figures, func(i, j int) bool { return lessPos(facts.Figures[i].Pos, facts.Figures[j].Pos) })
	return facts, nil
}

// skipDir leaves out what the go tool leaves out of the module's packages
// (testdata, directories starting with "." or "_", vendor, nested modules)
// and the development tools under internal/tools or tools.
func skipDir(p, name, rel string) bool {
	if name == "testdata" || name == "vendor" || strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_") {
		return true
	}
	if rel == "internal/tools" || rel == "tools" {
		return true
	}
	_, err := os.Stat(filepath.Join(p, "go.mod"))
	return err == nil
}

func modulePath(root string) (string, error) {
	data, err := os.ReadFile(filepath.Join(root, "go.mod"))
	if err != nil {
		return "", fmt.Errorf("structure: %s is not a module's root: %w", root, err)
	}
	for _, line := range strings.Split(string(data), "\n") {
		if rest, ok := strings.CutPrefix(strings.TrimSpace(line), "module "); ok {
			return strings.Trim(strings.TrimSpace(rest), `"`), nil
		}
	}
	return "", fmt.Errorf("structure: %s/go.mod names no module", root)
}

func scanGoFile(fset *token.FileSet, p, rel, mod string, pkgs map[string]*Package,
	sentinels map[string]map[string]bool, facts *Facts) error {
	src, err := os.ReadFile(p)
	if err != nil {
		return err
	}
	f, err := parser.ParseFile(fset, p, src, parser.ParseComments|parser.SkipObjectResolution)
	if err != nil {
		return fmt.Errorf("structure: %w", err)
	}
	dir := path.Dir(rel)
	pkg := pkgs[dir]
	if pkg == nil {
		pkg = &Package{Path: dir, Name: f.Name.Name}
		pkgs[dir] = pkg
	}
	pkg.Files++
	pkg.Lines += bytes.Count(src, []byte("\n"))
	for _, imp := range f.Imports {
		ip, _ := strconv.Unquote(imp.Path.Value)
		if ip == mod || strings.HasPrefix(ip, mod+"/") {
			pkg.imports = append(pkg.imports, ip)
		}
	}
	for _, decl := range f.Decls {
		declared(fset, decl, rel, dir, pkg, sentinels, facts)
	}
	constDocs := constComments(f)
	for _, cg := range f.Comments {
		if fig := scanComment(cg.Text(), fset.Position(cg.Pos()).Line, rel, true, facts); fig != nil {
			fig.Constant = constDocs[cg]
		}
	}
	return nil
}

// constComments returns the doc and line comments of f's const
// declarations.
func constComments(f *ast.File) map[*ast.CommentGroup]bool {
	docs := map[*ast.CommentGroup]bool{}
	ast.Inspect(f, func(n ast.Node) bool {
		d, ok := n.(*ast.GenDecl)
		if !ok || d.Tok != token.CONST {
			return true
		}
		docs[d.Doc] = true
		for _, spec := range d.Specs {
			if s, ok := spec.(*ast.ValueSpec); ok {
				docs[s.Doc], docs[s.Comment] = true, true
			}
		}
		return false
	})
	delete(docs, nil)
	return docs
}

// declared counts a top-level declaration's exported names and notes the
// sentinels and the exported types declared as an empty interface.
func declared(fset *token.FileSet, decl ast.Decl, rel, dir string, pkg *Package,
	sentinels map[string]map[string]bool, facts *Facts) {
	switch d := decl.(type) {
	case *ast.FuncDecl:
		if d.Recv == nil && d.Name.IsExported() {
			pkg.Exported++
		}
	case *ast.GenDecl:
		for _, spec := range d.Specs {
			switch s := spec.(type) {
			case *ast.TypeSpec:
				if !s.Name.IsExported() {
					continue
				}
				pkg.Exported++
				if isEmptyInterface(s.Type) {
					facts.AnyTypes = append(facts.AnyTypes, Place{
						Pos:  fmt.Sprintf("%s:%d", rel, fset.Position(s.Pos()).Line),
						Text: fmt.Sprintf("%s.%s", pkg.Name, s.Name.Name),
					})
				}
			case *ast.ValueSpec:
				for i, name := range s.Names {
					if !name.IsExported() {
						continue
					}
					pkg.Exported++
					if strings.HasPrefix(name.Name, "Err") && i < len(s.Values) && isErrorsNew(s.Values[i]) {
						if sentinels[name.Name] == nil {
							sentinels[name.Name] = map[string]bool{}
						}
						sentinels[name.Name][dir] = true
					}
				}
			}
		}
	}
}

func isEmptyInterface(e ast.Expr) bool {
	switch t := e.(type) {
	case *ast.Ident:
		return t.Name == "any"
	case *ast.InterfaceType:
		return t.Methods == nil || len(t.Methods.List) == 0
	}
	return false
}

func isErrorsNew(e ast.Expr) bool {
	call, ok := e.(*ast.CallExpr)
	if !ok {
		return false
	}
	sel, ok := call.Fun.(*ast.SelectorExpr)
	if !ok {
		return false
	}
	x, ok := sel.X.(*ast.Ident)
	return ok && x.Name == "errors" && sel.Sel.Name == "New"
}

func scanTestFile(fset *token.FileSet, p, rel string, facts *Facts) error {
	f, err := parser.ParseFile(fset, p, nil, parser.ParseComments|parser.SkipObjectResolution)
	if err != nil {
		return fmt.Errorf("structure: %w", err)
	}
	for _, cg := range f.Comments {
		scanComment(cg.Text(), fset.Position(cg.Pos()).Line, rel, false, facts)
	}
	return nil
}

// scanSQLFile reads the -- comments of an SQL file, a run of comment lines
// as one comment.
func scanSQLFile(p, rel string, facts *Facts) error {
	f, err := os.Open(p)
	if err != nil {
		return err
	}
	defer f.Close()
	var block []string
	start, n := 0, 0
	flush := func() {
		if len(block) > 0 {
			scanComment(strings.Join(block, "\n"), start, rel, true, facts)
		}
		block = block[:0]
	}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 64*1024), 1<<20)
	for sc.Scan() {
		n++
		_, comment, ok := strings.Cut(sc.Text(), "--")
		if !ok {
			flush()
			continue
		}
		if len(block) == 0 {
			start = n
		}
		block = append(block, comment)
	}
	flush()
	return sc.Err()
}

// scanComment notes a comment's issue references and figures; line is the
// comment's first line in rel. It returns the comment's figure, if any, as
// stored in facts.
func scanComment(text string, line int, rel string, production bool, facts *Facts) *Figure {
	lines := strings.Split(strings.TrimRight(text, "\n"), "\n")
	var fig *Figure
	prev := "" // the previous line, for a figure that starts a line
	for i, l := range lines {
		pos := fmt.Sprintf("%s:%d", rel, line+i)
		l = strings.TrimSpace(l)
		if issueRef.MatchString(l) {
			if production {
				facts.IssueRefs = append(facts.IssueRefs, Place{pos, l})
			} else {
				facts.TestIssueRefs = append(facts.TestIssueRefs, Place{pos, l})
			}
		}
		if !production {
			continue
		}
		if upstreamRef.MatchString(l) {
			facts.UpstreamRefs = append(facts.UpstreamRefs, Place{pos, l})
		}
		unquoted := quoted.ReplaceAllStringFunc(l, func(q string) string { return strings.Repeat(" ", len(q)) })
		for _, m := range figure.FindAllStringIndex(unquoted, -1) {
			if fig == nil {
				fig = &Figure{Place: Place{pos, l}, Input: true}
			}
			before := unquoted[:m[0]]
			if strings.TrimSpace(before) == "" {
				before = prev + " "
			}
			if !inputSize.MatchString(before) {
				fig.Input = false
			}
		}
		prev = unquoted
	}
	if fig == nil {
		return nil
	}
	fig.Cited = benchmarkCite.MatchString(text)
	facts.Figures = append(facts.Figures, *fig)
	return &facts.Figures[len(facts.Figures)-1]
}

// longestChain returns the number of edges in the longest chain of
// intra-module imports and one chain that long.
func longestChain(mod string, pkgs map[string]*Package) (int, []string) {
	byPath := map[string]*Package{}
	for dir, p := range pkgs {
		ip := mod
		if dir != "." {
			ip = mod + "/" + dir
		}
		byPath[ip] = p
	}
	memo := map[string][]string{}
	var chain func(ip string) []string
	chain = func(ip string) []string {
		if c, ok := memo[ip]; ok {
			return c
		}
		memo[ip] = []string{ip} // an import cycle does not compile; this only guards the walk
		best := []string{ip}
		p := byPath[ip]
		if p != nil {
			deps := slices.Clone(p.imports)
			sort.Strings(deps)
			for _, dep := range slices.Compact(deps) {
				if _, ok := byPath[dep]; !ok {
					continue
				}
				if c := chain(dep); len(c)+1 > len(best) {
					best = append([]string{ip}, c...)
				}
			}
		}
		memo[ip] = best
		return best
	}
	var longest []string
	paths := make([]string, 0, len(byPath))
	for ip := range byPath {
		paths = append(paths, ip)
	}
	sort.Strings(paths)
	for _, ip := range paths {
		if c := chain(ip); len(c) > len(longest) {
			longest = c
		}
	}
	short := make([]string, len(longest))
	for i, ip := range longest {
		short[i] = strings.TrimPrefix(strings.TrimPrefix(ip, mod), "/")
	}
	if len(short) == 0 {
		return 0, nil
	}
	return len(short) - 1, short
}

func sortPlaces(list []Place) {
	sort.SliceStable(list, func(i, j int) bool { return lessPos(list[i].Pos, list[j].Pos) })
}

// lessPos orders file:line positions by file, then by line as a number.
func lessPos(a, b string) bool {
	fa, la := splitPos(a)
	fb, lb := splitPos(b)
	if fa != fb {
		return fa < fb
	}
	return la < lb
}

func splitPos(pos string) (string, int) {
	i := strings.LastIndexByte(pos, ':')
	n, _ := strconv.Atoi(pos[i+1:])
	return pos[:i], n
}
