package main

import (
	"bytes"
	"slices"
	"strings"
	"testing"
)

// TestScan runs the tool on a small module whose every count is known: the
// packages of a chain a -> b -> c, one sentinel declared in two packages,
// two open types, issue references beside look-alikes that are none, six
// figures (one cited, two documenting a constant, two sizing an example
// input, one none of these) beside a quoted syntax that is none, and files
// the scan must leave out (tests' production counts, testdata, internal/tools,
// a nested module).
func TestScan(t *testing.T) {
	f, err := Scan("testdata/mod")
	if err != nil {
		t.Fatal(err)
	}
	if f.Module != "example.com/mod" {
		t.Errorf("module %q", f.Module)
	}
	var got []string
	for _, p := range f.Packages {
		got = append(got, p.Path)
	}
	if !slices.Equal(got, []string{"a", "b", "c"}) {
		t.Errorf("packages %v, want a, b, c (no testdata, internal/tools, nested module)", got)
	}
	want := map[string][2]int{"a": {23, 5}, "b": {31, 2}, "c": {16, 3}}
	for _, p := range f.Packages {
		if w := want[p.Path]; p.Lines != w[0] || p.Exported != w[1] {
			t.Errorf("%s: %d lines, %d exported; want %d, %d", p.Path, p.Lines, p.Exported, w[0], w[1])
		}
	}
	if f.ImportDepth != 2 || !slices.Equal(f.ImportChain, []string{"a", "b", "c"}) {
		t.Errorf("import depth %d %v, want 2 [a b c]", f.ImportDepth, f.ImportChain)
	}
	if len(f.DuplicateSentinels) != 1 || f.DuplicateSentinels[0].Name != "ErrX" ||
		!slices.Equal(f.DuplicateSentinels[0].Packages, []string{"b", "c"}) {
		t.Errorf("duplicated sentinels %+v, want ErrX in b and c", f.DuplicateSentinels)
	}
	if n := positions(f.AnyTypes); !slices.Equal(n, []string{"a/a.go:7", "a/a.go:10"}) {
		t.Errorf("open types at %v, want a.Base and a.Other", n)
	}
	if n := positions(f.IssueRefs); !slices.Equal(n, []string{"a/a.go:15", "sql/m.sql:1", "sql/m.sql:3"}) {
		t.Errorf("issue references at %v", n)
	}
	if n := positions(f.TestIssueRefs); !slices.Equal(n, []string{"c/c_test.go:3"}) {
		t.Errorf("test issue references at %v", n)
	}
	if n := positions(f.UpstreamRefs); !slices.Equal(n, []string{"a/a.go:16"}) {
		t.Errorf("upstream references at %v, want MapServer#6613's line only", n)
	}
	type class struct {
		pos                    string
		cited, constant, input bool
	}
	var figs []class
	for _, fig := range f.Figures {
		figs = append(figs, class{fig.Pos, fig.Cited, fig.Constant, fig.Input})
	}
	wantFigs := []class{
		{"b/b.go:12", false, false, false},
		{"b/b.go:15", true, true, false},
		{"b/b.go:18", false, false, true},
		{"b/b.go:21", false, true, false},
		{"b/b.go:24", false, true, false},
		{"b/b.go:30", false, false, true},
	}
	if !slices.Equal(figs, wantFigs) {
		t.Errorf("figures %+v, want %+v", figs, wantFigs)
	}

	var out bytes.Buffer
	Report(&out, f, false)
	for _, line := range []string{
		"module example.com/mod: 3 packages, 70 lines, 10 exported names",
		"import depth: 2 (a -> b -> c)",
		"duplicated sentinels (Err… = errors.New in more than one package): 1",
		"issue references in comments: 3 in production code and SQL, 1 in tests",
		"comments quoting figures: 6: 1 cite a benchmark, 2 document a constant, 2 only size an example input, 1 none of these",
		"neither  b/b.go:12: B reads a page: this costs 74 MB of heap.",
	} {
		if !strings.Contains(out.String(), line) {
			t.Errorf("report lacks %q:\n%s", line, out.String())
		}
	}
}

func positions(list []Place) []string {
	var out []string
	for _, p := range list {
		out = append(out, p.Pos)
	}
	return out
}
