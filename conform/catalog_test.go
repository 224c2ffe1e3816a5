package conform

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"os"
	"regexp"
	"strings"

	"github.com/dlclark/regexp2"
	"testing"
)

// testdata/batchmachine.json.gz is what batch-machine's conform code makes
// of OpenAddresses' catalog: every acceptance test of every source (the
// conform applied whole, as check_source_tests does) and every distinct
// regexp function applied alone to the catalog's test inputs for its field
// and to a set of address-like samples. testdata/batchmachine.py writes it
// from checkouts of the two repositories; the file records their commits.

type catalogFile struct {
	BatchMachine string `json:"batch_machine_commit"`
	OpenAddr     string `json:"openaddresses_commit"`
	Acceptance   []struct {
		Source      string            `json:"source"`
		Layer       string            `json:"layer"`
		Conform     json.RawMessage   `json:"conform"`
		Index       int               `json:"index"`
		Description string            `json:"description"`
		Inputs      map[string]any    `json:"inputs"`
		Expected    map[string]string `json:"expected"`
		Output      map[string]string `json:"output"`
		Error       string            `json:"error"`
	} `json:"acceptance"`
	Regexps []struct {
		Source   string         `json:"source"`
		Layer    string         `json:"layer"`
		Column   string         `json:"column"`
		Function map[string]any `json:"function"`
		Cases    [][]any        `json:"cases"`
	} `json:"regexps"`
	Functions []struct {
		Layer   string           `json:"layer"`
		Conform json.RawMessage  `json:"conform"`
		Results []functionResult `json:"results"`
	} `json:"functions"`
}

type functionResult struct {
	A, B   string
	Output map[string]string
	Error  string
}

// UnmarshalJSON reads a result row, [A, B, output or null, error or null].
func (r *functionResult) UnmarshalJSON(data []byte) error {
	var raw []json.RawMessage
	if err := json.Unmarshal(data, &raw); err != nil {
		return err
	}
	if len(raw) != 4 {
		return fmt.Errorf("result of %d items", len(raw))
	}
	for i, dst := range []any{&r.A, &r.B, &r.Output, &r.Error} {
		if string(raw[i]) == "null" {
			continue
		}
		if err := json.Unmarshal(raw[i], dst); err != nil {
			return err
		}
	}
	return nil
}

func loadCatalog(t testing.TB) *catalogFile {
	t.Helper()
	f, err := os.Open("testdata/batchmachine.json.gz")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	z, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	data, err := io.ReadAll(z)
	if err != nil {
		t.Fatal(err)
	}
	var c catalogFile
	d := json.NewDecoder(bytes.NewReader(data))
	d.UseNumber()
	if err := d.Decode(&c); err != nil {
		t.Fatal(err)
	}
	return &c
}

// TestCatalogAcceptance: each of the catalog's 132 acceptance tests maps
// to exactly what batch-machine maps it to, every column, and where
// batch-machine raises (a test whose inputs lack a field the conform
// reads), Apply refuses too.
func TestCatalogAcceptance(t *testing.T) {
	cat := loadCatalog(t)
	if len(cat.Acceptance) != 132 {
		t.Fatalf("%d acceptance tests, want 132", len(cat.Acceptance))
	}
	errs := 0
	for _, a := range cat.Acceptance {
		spec, err := ParseOpenAddresses(a.Conform, a.Layer)
		if err != nil {
			t.Errorf("%s: %v", a.Source, err)
			continue
		}
		c, err := Compile(spec)
		if err != nil {
			t.Errorf("%s: %v", a.Source, err)
			continue
		}
		got, err := c.Apply(a.Inputs)
		switch {
		case a.Error != "":
			errs++
			if err == nil {
				t.Errorf("%s test %d %q: batch-machine raises %s, Apply gives %v", a.Source, a.Index, a.Description, a.Error, got)
			}
		case err != nil:
			t.Errorf("%s test %d %q: %v", a.Source, a.Index, a.Description, err)
		case !maps.Equal(got, a.Output):
			t.Errorf("%s test %d %q:\n got %v\nwant %v", a.Source, a.Index, a.Description, got, a.Output)
		}
		if a.Error == "" && err == nil {
			if fails := RunTests(c, []Test{{Description: a.Description, Inputs: a.Inputs, Expected: a.Expected}}); len(fails) > 0 {
				t.Errorf("%s: %v", a.Source, fails)
			}
		}
	}
	t.Logf("%d acceptance tests, %d of which batch-machine itself cannot run", len(cat.Acceptance), errs)
}

// TestCatalogRegexps: each distinct regexp function of the catalog (all
// 843 patterns, lookbehinds included) gives batch-machine's result, value
// for value.
func TestCatalogRegexps(t *testing.T) {
	cat := loadCatalog(t)
	n, cases := 0, 0
	for _, r := range cat.Regexps {
		spec := &Spec{Layer: r.Layer, Attributes: []Attribute{{Column: r.Column, Value: r.Function}}}
		c, err := Compile(spec)
		if err != nil {
			t.Errorf("%s: %v", r.Source, err)
			continue
		}
		n++
		field := r.Function["field"].(string)
		for _, cs := range r.Cases {
			cases++
			in := cs[0].(string)
			got, err := c.Apply(map[string]any{field: in})
			if len(cs) == 3 {
				if err == nil {
					t.Errorf("%s %v on %q: batch-machine raises %v, got %q", r.Source, r.Function, in, cs[2], got[r.Column])
				}
				continue
			}
			if err != nil {
				t.Errorf("%s %v on %q: %v", r.Source, r.Function, in, err)
				continue
			}
			want := cs[1].(string)
			if g := got[r.Column]; g != want {
				t.Errorf("%s %v on %q: got %q, want %q", r.Source, r.Function, in, g, want)
			}
		}
	}
	if n < 400 {
		t.Errorf("only %d regexp functions compiled", n)
	}
	t.Logf("%d regexp functions, %d values", n, cases)
}

// TestCatalogDialect measures what the choice of engine and the
// translation of Python's dialect buy on the catalog: how many distinct
// patterns Go's regexp cannot compile, how many regexp2 cannot compile
// untranslated, and how many catalog values map differently when the
// pattern goes to regexp2 untranslated. The figures are in
// docs/decisions/0150-python-regexp-dialect.md.
func TestCatalogDialect(t *testing.T) {
	cat := loadCatalog(t)
	pats := map[string]bool{}
	for _, r := range cat.Regexps {
		pats[r.Function["pattern"].(string)] = true
	}
	goFails, rawFails, lookaround := 0, 0, 0
	for p := range pats {
		if _, err := regexp.Compile(p); err != nil {
			goFails++
		}
		if _, err := regexp2.Compile(p, regexp2.None); err != nil {
			rawFails++
		}
		if strings.Contains(p, "(?=") || strings.Contains(p, "(?!") || strings.Contains(p, "(?<=") || strings.Contains(p, "(?<!") {
			lookaround++
		}
	}
	// The same cases with the pattern handed to regexp2 as written.
	differ, total := 0, 0
	for _, r := range cat.Regexps {
		re, err := regexp2.Compile(r.Function["pattern"].(string), regexp2.None)
		if err != nil {
			continue
		}
		raw := &pyRegexp{re: re, names: map[string]int{}}
		raw.groups = len(re.GetGroupNumbers()) - 1
		for _, cs := range r.Cases {
			if len(cs) == 3 {
				continue
			}
			total++
			text, m, err := raw.search(cs[0].(string))
			if err != nil {
				differ++
				continue
			}
			if _, has := r.Function["replace"]; has {
				continue
			}
			got := ""
			if m != nil {
				got = groupsJoined(text, m)
			}
			if r.Column == "number" || r.Column == "street" || r.Column == "unit" {
				got = pyStrip(got)
				if r.Column == "number" {
					got = strings.TrimSuffix(got, ".0")
				}
			}
			if got != cs[1].(string) {
				differ++
			}
		}
	}
	t.Logf("distinct patterns: %d; with lookaround: %d; Go regexp refuses %d; regexp2 untranslated refuses %d", len(pats), lookaround, goFails, rawFails)
	t.Logf("search-mode values mapping differently with untranslated patterns: %d of %d", differ, total)
	if goFails == 0 || lookaround == 0 {
		t.Errorf("the catalog no longer needs more than Go's regexp: %d refused", goFails)
	}
}

// TestTrickyValues: seven conforms using every function, over values where
// Python's str and re semantics are easy to get wrong (Unicode digits and
// spaces, case folding under IGNORECASE, "12.0"), map as batch-machine
// maps them, errors included.
func TestTrickyValues(t *testing.T) {
	cat := loadCatalog(t)
	if len(cat.Functions) != 7 {
		t.Fatalf("%d function conforms, want 7", len(cat.Functions))
	}
	n := 0
	for _, f := range cat.Functions {
		spec, err := ParseOpenAddresses(f.Conform, f.Layer)
		if err != nil {
			t.Fatal(err)
		}
		c, err := Compile(spec)
		if err != nil {
			t.Fatalf("%s: %v", f.Conform, err)
		}
		for _, r := range f.Results {
			n++
			got, err := c.Apply(map[string]any{"A": r.A, "B": r.B})
			switch {
			case r.Error != "":
				if err == nil {
					t.Errorf("%s on %q, %q: batch-machine raises %s, got %v", f.Conform, r.A, r.B, r.Error, got)
				}
			case err != nil:
				t.Errorf("%s on %q, %q: %v", f.Conform, r.A, r.B, err)
			case !maps.Equal(got, r.Output):
				for k, v := range r.Output {
					if got[k] != v {
						t.Errorf("%s on %q, %q: %s: got %q, want %q", f.Conform, r.A, r.B, k, got[k], v)
					}
				}
			}
		}
	}
	t.Logf("%d values", n)
}
