// Command structure prints facts about the shape of a Go module's production
// code, for the note that says how the tree changed: its packages and their
// sizes, the depth of its import graph, the exported names per package, the
// sentinel errors declared in more than one package, the exported types
// declared as an empty interface, the references to the project's own issues
// left in comments, and the comments that quote a measured figure, each with
// whether it names the benchmark that measures it.
//
// Production code is the non-test .go files outside testdata, tools and
// internal/tools; issue references are also counted in test files, and
// comments in .sql files are read for both.
//
// Usage, from the module's root:
//
//	go run ./internal/tools/structure [-json] [-v] [root]
//
// -v lists every finding (each figure, each reference); without it the
// report lists the counts and the findings that should not be there.
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
)

func main() {
	asJSON := flag.Bool("json", false, "print the facts as JSON")
	verbose := flag.Bool("v", false, "list every figure and every reference, not only the counts")
	flag.Parse()
	root := "."
	if flag.NArg() > 0 {
		root = flag.Arg(0)
	}
	facts, err := Scan(root)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	if *asJSON {
		enc := json.NewEncoder(os.Stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(facts); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		return
	}
	Report(os.Stdout, facts, *verbose)
}

// Report writes the facts as a compact text report.
func Report(w io.Writer, f *Facts, verbose bool) {
	exported := 0
	for _, p := range f.Packages {
		exported += p.Exported
	}
	fmt.Fprintf(w, "module %s: %d packages, %d lines, %d exported names (production .go files)\n",
		f.Module, len(f.Packages), f.Lines, exported)
	fmt.Fprintf(w, "%-40s %6s %6s %8s\n", "package", "files", "lines", "exported")
	for _, p := range f.Packages {
		fmt.Fprintf(w, "%-40s %6d %6d %8d\n", p.Path, p.Files, p.Lines, p.Exported)
	}
	fmt.Fprintf(w, "\nimport depth: %d (%s)\n", f.ImportDepth, strings.Join(f.ImportChain, " -> "))

	fmt.Fprintf(w, "\nduplicated sentinels (Err… = errors.New in more than one package): %d\n", len(f.DuplicateSentinels))
	for _, s := range f.DuplicateSentinels {
		fmt.Fprintf(w, "  %s: %d packages: %s\n", s.Name, len(s.Packages), strings.Join(s.Packages, ", "))
	}
	fmt.Fprintf(w, "\nexported types declared as any / interface{}: %d\n", len(f.AnyTypes))
	places(w, f.AnyTypes)

	fmt.Fprintf(w, "\nissue references in comments: %d in production code and SQL, %d in tests\n",
		len(f.IssueRefs), len(f.TestIssueRefs))
	places(w, f.IssueRefs)
	places(w, f.TestIssueRefs)
	fmt.Fprintf(w, "upstream bug references (another project's issue, kept: they explain a behaviour): %d\n", len(f.UpstreamRefs))
	if verbose {
		places(w, f.UpstreamRefs)
	}

	cited, constant, input := 0, 0, 0
	for _, fig := range f.Figures {
		switch {
		case fig.Cited:
			cited++
		case fig.Constant:
			constant++
		case fig.Input:
			input++
		}
	}
	fmt.Fprintf(w, "\ncomments quoting figures: %d: %d cite a benchmark, %d document a constant, %d only size an example input, %d none of these\n",
		len(f.Figures), cited, constant, input, len(f.Figures)-cited-constant-input)
	for _, fig := range f.Figures {
		mark := "neither "
		switch {
		case fig.Cited:
			mark = "cited   "
		case fig.Constant:
			mark = "constant"
		case fig.Input:
			mark = "input   "
		}
		if verbose || mark == "neither " {
			fmt.Fprintf(w, "  %s %s: %s\n", mark, fig.Pos, clip(fig.Text))
		}
	}
}

func places(w io.Writer, list []Place) {
	for _, p := range list {
		fmt.Fprintf(w, "  %s: %s\n", p.Pos, clip(p.Text))
	}
}

func clip(s string) string {
	if r := []rune(s); len(r) > 110 {
		return string(r[:110]) + "…"
	}
	return s
}
