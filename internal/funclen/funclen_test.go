package funclen

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// moduleRule is the rule for ingestd's production functions: none
// over 100 lines, at most 5 over 80.
var moduleRule = Rule{
	Hard: 100, MaxOverHard: 0,
	Soft: 80, MaxOverSoft: 5,
}

// TestModuleFunctionLengths holds the module's non-test Go files to
// moduleRule.
func TestModuleFunctionLengths(t *testing.T) {
	t.Parallel()
	funcs, err := Scan(moduleRoot(t))
	if err != nil {
		t.Fatal(err)
	}
	if len(funcs) < 100 {
		t.Fatalf("found %d functions: not the module's root?", len(funcs))
	}
	if err := moduleRule.Check(funcs); err != nil {
		t.Error(err)
	}
}

// moduleRoot is the directory of the go.mod above the test's directory.
func moduleRoot(t *testing.T) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("no go.mod above the test's directory")
		}
		dir = parent
	}
}

// goFunc is the source of a function named name that is lines long, after
// a doc comment (which does not count).
func goFunc(name string, lines int) string {
	var b strings.Builder
	fmt.Fprintf(&b, "// %s is %d lines long.\nfunc %s {\n", name, lines, name)
	for range lines - 2 {
		b.WriteString("\t_ = 0\n")
	}
	b.WriteString("}\n\n")
	return b.String()
}

// writeModule writes files (path: source) under a new module directory.
func writeModule(t *testing.T, files map[string]string) string {
	t.Helper()
	root := t.TempDir()
	files["go.mod"] = "module example.com/m\n\ngo 1.22\n"
	for path, src := range files {
		full := filepath.Join(root, filepath.FromSlash(path))
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

func TestScanMeasuresProductionFunctions(t *testing.T) {
	t.Parallel()
	root := writeModule(t, map[string]string{
		"a.go": "package a\n\ntype T struct{}\n\ntype List[E any] []E\n\ntype Map[K comparable, V any] map[K]V\n\n" +
			goFunc("short()", 3) + goFunc("long()", 101) + goFunc("(t *T) Method()", 81) +
			goFunc("(l List[E]) Len()", 12) + goFunc("(m *Map[K, V]) Get()", 7) + "func oneLine() {}\n",
		"b/b.go":              "package b\n\n" + goFunc("inSub()", 90),
		"a_test.go":           "package a\n\n" + goFunc("testHelper()", 300),
		"testdata/x.go":       "package x\n\n" + goFunc("fixture()", 300),
		".hidden/x.go":        "package x\n\n" + goFunc("hidden()", 300),
		"_ignored/x.go":       "package x\n\n" + goFunc("ignored()", 300),
		"vendor/v/v.go":       "package v\n\n" + goFunc("vendored()", 300),
		"nested/go.mod":       "module example.com/nested\n",
		"nested/n.go":         "package nested\n\n" + goFunc("nested()", 300),
		"b/declared_only.go":  "package b\n\nfunc assembly()\n",
		"b/not_go_source.txt": goFunc("text()", 300),
	})
	funcs, err := Scan(root)
	if err != nil {
		t.Fatal(err)
	}
	got := make([]string, len(funcs))
	for i, f := range funcs {
		got[i] = f.String()
	}
	// Longest first; a function's doc comment does not count.
	want := []string{
		"a.go:15 long (101 lines)", // 8 lines of types, short's doc and 3 lines, a blank, long's doc
		"b/b.go:4 inSub (90 lines)",
		"a.go:118 T.Method (81 lines)",
		"a.go:201 List.Len (12 lines)",
		"a.go:215 Map.Get (7 lines)",
		"a.go:10 short (3 lines)",
		"a.go:223 oneLine (1 lines)",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("Scan:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

func TestScanRefusesBrokenSource(t *testing.T) {
	t.Parallel()
	root := writeModule(t, map[string]string{"a.go": "package a\n\nfunc broken( {\n"})
	if _, err := Scan(root); err == nil || !strings.Contains(err.Error(), "a.go") {
		t.Errorf("Scan of a broken file: %v, want an error naming a.go", err)
	}
}

func TestRuleCheck(t *testing.T) {
	t.Parallel()
	rule := Rule{Hard: 100, MaxOverHard: 0, Soft: 80, MaxOverSoft: 5}
	funcs := func(lines ...int) []Func {
		var fs []Func
		for i, n := range lines {
			fs = append(fs, Func{Pos: fmt.Sprintf("f.go:%d", i+1), Name: fmt.Sprintf("f%d", i), Lines: n})
		}
		return fs
	}
	for _, tc := range []struct {
		name  string
		funcs []Func
		want  string // in the error; "" for none
	}{
		{"all short", funcs(10, 80, 80), ""},
		{"five over the soft bound", funcs(81, 90, 95, 99, 100, 12), ""},
		{"six over the soft bound", funcs(81, 90, 95, 99, 100, 81), "6 functions over 80 lines (at most 5 allowed)"},
		{"one over the hard bound", funcs(101, 3), "1 functions over 100 lines (at most 0 allowed):\n\tf.go:1 f0 (101 lines)"},
	} {
		err := rule.Check(tc.funcs)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s: %v, want no error", tc.name, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%s: %v, want an error with %q", tc.name, err, tc.want)
		}
	}
}
