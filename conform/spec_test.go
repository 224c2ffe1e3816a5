package conform

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/ingestd/ingestd/internal/layertest"
)

const parcelYAML = `
layer: addresses
format: shapefile
srs: EPSG:2264
file: addresses.shp
number:
  function: prefixed_number
  field: SITE_ADDR
street:
  function: postfixed_street
  field: SITE_ADDR
unit: [UNIT_TYPE, UNIT_NUM]
city: CITY
accuracy: 1
stret: typo
`

// TestParseSpec: attributes keep their order and lines, OpenAddresses'
// reading options are kept for an importer, a key that is neither is
// listed, and a number where a mapping goes maps nothing, as in
// batch-machine.
func TestParseSpec(t *testing.T) {
	s, err := ParseSpec([]byte(parcelYAML))
	if err != nil {
		t.Fatal(err)
	}
	var cols []string
	for _, a := range s.Attributes {
		cols = append(cols, a.Column)
	}
	if want := []string{"number", "street", "unit", "city", "accuracy"}; !slices.Equal(cols, want) {
		t.Errorf("attributes %v, want %v", cols, want)
	}
	if s.Attributes[0].Line != 6 || s.Attributes[2].Line != 12 {
		t.Errorf("lines %d, %d; want 6, 12", s.Attributes[0].Line, s.Attributes[2].Line)
	}
	if f, _ := s.Option("format"); f != "shapefile" {
		t.Errorf("format %q", f)
	}
	if srs, _ := s.Option("srs"); srs != "EPSG:2264" {
		t.Errorf("srs %q", srs)
	}
	if !slices.Equal(s.Ignored, []string{"stret"}) {
		t.Errorf("ignored %v", s.Ignored)
	}
	c, err := Compile(s)
	if err != nil {
		t.Fatal(err)
	}
	got, err := c.Apply(map[string]any{"SITE_ADDR": "123 N MAIN ST", "UNIT_TYPE": " APT", "UNIT_NUM": json.Number("4"), "CITY": "Raleigh"})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"number": "123", "street": "N MAIN ST", "unit": "APT 4", "city": "Raleigh", "district": "", "region": "", "postcode": "", "id": "", "accuracy": ""}
	if !maps.Equal(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
	if f := c.Fields(); !slices.Equal(f, []string{"CITY", "SITE_ADDR", "UNIT_NUM", "UNIT_TYPE"}) {
		t.Errorf("fields %v", f)
	}
}

// TestSpecInConfig: a Spec decodes inside a feed's YAML and from JSON, key
// order kept both ways (a later attribute may read what an earlier one
// wrote, so order is meaning).
func TestSpecInConfig(t *testing.T) {
	var feed struct {
		Conform Spec `yaml:"conform"`
	}
	doc := "conform:\n  layer: parcels\n  pid: {function: regexp, field: PIN, pattern: '^0*(\\d+)'}\n"
	if err := yaml.Unmarshal([]byte(doc), &feed); err != nil {
		t.Fatal(err)
	}
	if feed.Conform.Layer != "parcels" || len(feed.Conform.Attributes) != 1 || feed.Conform.Attributes[0].Line != 3 {
		t.Fatalf("%+v", feed.Conform)
	}
	c, err := Compile(&feed.Conform)
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := c.Apply(map[string]any{"PIN": "000123"}); got["pid"] != "123" {
		t.Errorf("pid %q", got["pid"])
	}

	var js Spec
	if err := json.Unmarshal([]byte(`{"layer":"addresses","street":{"function":"join","fields":["A","B"]},"number":{"function":"chain","functions":[{"function":"remove_postfix","field":"N","field_to_remove":"oa:street"}]}}`), &js); err != nil {
		t.Fatal(err)
	}
	if js.Attributes[0].Column != "street" || js.Attributes[1].Column != "number" {
		t.Errorf("order lost: %+v", js.Attributes)
	}
	c, err = Compile(&js)
	if err != nil {
		t.Fatal(err)
	}
	got, err := c.Apply(map[string]any{"A": "12", "B": "MAIN ST", "N": "4 12 MAIN ST"})
	if err != nil {
		t.Fatal(err)
	}
	if got["street"] != "12 MAIN ST" || got["number"] != "4" {
		t.Errorf("got %v", got)
	}
}

func TestCompileLayer(t *testing.T) {
	for _, tt := range []struct{ doc, want string }{
		{"number: N", "conform: line 1: layer is missing: name the common layer (addresses, buildings, centerlines, parcels)"},
		{"layer: roads\nname: N", `conform: line 1: layer "roads" is not a common layer`},
	} {
		s, err := ParseSpec([]byte(tt.doc))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := Compile(s); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%q: got %v, want %q", tt.doc, err, tt.want)
		}
	}
	if _, err := ParseSpec([]byte("layer: [a]")); err == nil || !strings.Contains(err.Error(), "layer: want the name of a common layer") {
		t.Errorf("layer list: %v", err)
	}
	if _, err := ParseSpec([]byte("layer: parcels\npid: A\npid: B")); err == nil {
		t.Error("a key given twice was accepted")
	}
}

// TestOpenAddressesLayerKey: in a catalog conform, "layer" picks a layer of
// the file; ParseOpenAddresses keeps it as an option.
func TestOpenAddressesLayerKey(t *testing.T) {
	s, err := ParseOpenAddresses([]byte(`{"format": "gdb", "layer": 2, "pid": "APN"}`), "parcels")
	if err != nil {
		t.Fatal(err)
	}
	if s.Layer != "parcels" || s.Options["layer"] != 2 || len(s.Attributes) != 1 {
		t.Errorf("%+v", s)
	}
}

// TestApplyErrors: where batch-machine would raise on a feature, Apply
// says which column, function and property.
func TestApplyErrors(t *testing.T) {
	c := mustCompile(t, "layer: addresses\nnumber: {function: prefixed_number, field: ADDR}\nstreet: {function: join, fields: [X, Y]}")
	if _, err := c.Apply(map[string]any{"X": "a"}); err == nil || err.Error() != `conform: number: prefixed_number: the feature has no property "ADDR"` {
		t.Errorf("got %v", err)
	}
	// A join with a missing field maps nothing, silently, as in batch-machine.
	got, err := c.Apply(map[string]any{"ADDR": "1 A ST", "X": "a"})
	if err != nil || got["street"] != "" || got["number"] != "1" {
		t.Errorf("got %v, %v", got, err)
	}
	if _, err := c.Apply(map[string]any{"ADDR": map[string]any{"a": 1}}); err == nil || !strings.Contains(err.Error(), `property "ADDR" holds an object, not a value`) {
		t.Errorf("got %v", err)
	}
	ch := mustCompile(t, "layer: addresses\nnumber: {function: chain, functions: [{function: first_non_empty, fields: [A]}]}")
	if _, err := ch.Apply(map[string]any{"A": " "}); err == nil || !strings.Contains(err.Error(), "conform: number: chain: no function of the chain produced a value") {
		t.Errorf("got %v", err)
	}
}

// TestBind: fields by index; a misspelt or miscased field is found at Bind,
// naming the column and the near miss.
func TestBind(t *testing.T) {
	c := mustCompile(t, "layer: addresses\nnumber: {function: prefixed_number, field: ADDRESS}\nstreet: {function: postfixed_street, field: ADDRESS}\nunit: [UNIT]\ncity: city_name")
	b, err := c.Bind([]string{"OBJECTID", "ADDRESS", "UNIT", "city_name"})
	if err != nil {
		t.Fatal(err)
	}
	out := make([]string, len(c.Columns()))
	if err := b.Apply([]any{json.Number("7"), "12-A ELM AVE", nil, "Cary"}, out); err != nil {
		t.Fatal(err)
	}
	if want := []string{"12-A", "ELM AVE", "", "Cary", "", "", "", "", ""}; !slices.Equal(out, want) {
		t.Errorf("got %q, want %q", out, want)
	}
	_, err = c.Bind([]string{"ADDRESS", "UNIT", "CITY_NAME"})
	if err == nil || err.Error() != `conform: city: the feed has no property "city_name" (it has "CITY_NAME": names match case and all)` {
		t.Errorf("got %v", err)
	}
	// A column mapped to a property of the same name needs that property.
	c = mustCompile(t, "layer: addresses\nnumber: number\nstreet: {function: join, fields: [street, x]}")
	if _, err := c.Bind([]string{"x"}); err == nil || !strings.Contains(err.Error(), `no property "number"`) {
		t.Errorf("got %v", err)
	}
	if f := c.Fields(); !slices.Equal(f, []string{"number", "street", "x"}) {
		t.Errorf("fields %v", f)
	}
	// What the conform writes itself is not a property it needs.
	c = mustCompile(t, `{layer: addresses, street: {function: remove_postfix, field: S, field_to_remove: oa:unit}, unit: {function: postfixed_unit, field: S}}`)
	if _, err := c.Bind([]string{"S"}); err != nil {
		t.Errorf("got %v", err)
	}
	c = mustCompile(t, `{layer: addresses, number: {function: chain, variable: v, functions: [{function: prefixed_number, field: A}, {function: format, fields: [v, number], format: $1$2}]}}`)
	if _, err := c.Bind([]string{"A"}); err != nil {
		t.Errorf("chain: got %v", err)
	}
}

func TestTestsFromYAML(t *testing.T) {
	var feed struct {
		Tests []Test `yaml:"tests"`
	}
	doc := "tests:\n  - description: plain\n    inputs: {ADDRESS: 12 MAIN ST, N: 12}\n    expected: {number: 12, street: MAIN ST}\n  - description: two\n    inputs: {}\n"
	if err := yaml.Unmarshal([]byte(doc), &feed); err != nil {
		t.Fatal(err)
	}
	if len(feed.Tests) != 2 || feed.Tests[0].Line != 2 || feed.Tests[1].Line != 5 {
		t.Fatalf("%+v", feed.Tests)
	}
	if feed.Tests[0].Expected["number"] != "12" || feed.Tests[0].Inputs["N"] != 12 {
		t.Errorf("%+v", feed.Tests[0])
	}
}

func TestRunTests(t *testing.T) {
	c := mustCompile(t, "layer: addresses\nnumber: {function: prefixed_number, field: ADDRESS}\nstreet: {function: postfixed_street, field: ADDRESS}")
	tests := []Test{
		{Description: "plain", Inputs: map[string]any{"ADDRESS": "12 MAIN ST"}, Expected: map[string]string{"number": "12", "street": "MAIN ST"}},
		{Description: "directional", Inputs: map[string]any{"ADDRESS": "N 12 MAIN ST"}, Expected: map[string]string{"street": "N MAIN ST", "number": "12"}},
		{Inputs: map[string]any{}, Expected: map[string]string{"number": ""}},
	}
	fails := RunTests(c, tests)
	var got []string
	for _, f := range fails {
		got = append(got, f.String())
	}
	want := []string{
		`test 2 "directional": number: got "", want "12"`,
		`test 2 "directional": street: got "N 12 MAIN ST", want "N MAIN ST"`,
		`test 3: conform: number: prefixed_number: the feature has no property "ADDRESS"`,
	}
	if !slices.Equal(got, want) {
		t.Errorf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if fails[0].Index != 1 || fails[0].Column != "number" {
		t.Errorf("%+v", fails[0])
	}
}

// TestChainVariableNamedLikeItsColumn: Fond du Lac's street conform (the
// catalog's us/wi/fond_du_lac.json) chains under a variable named like its
// own column; batch-machine then keeps the column as the key. Expected
// values are batch-machine's; an empty name makes it raise (the second
// regexp reads "street", which nothing wrote).
func TestChainVariableNamedLikeItsColumn(t *testing.T) {
	s, err := ParseOpenAddresses([]byte(`{"street": {"function": "chain", "variable": "street", "functions": [{"function": "regexp", "field": "PRI_NAME", "pattern": "^STH (.+)", "replace": "State Highway $1"}, {"function": "regexp", "field": "street", "pattern": "^USH (.+)", "replace": "US Highway $1"}, {"function": "regexp", "field": "street", "pattern": "^CTH (.+)", "replace": "County Highway $1"}, {"function": "join", "fields": ["DIRECTION", "street", "TYPE"], "separator": " "}]}}`), "addresses")
	if err != nil {
		t.Fatal(err)
	}
	c, err := Compile(s)
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct{ name, dir, typ, want string }{
		{"STH 23", "N", "", "N State Highway 23"},
		{"MAIN", "", "ST", "MAIN ST"},
	} {
		got, err := c.Apply(map[string]any{"PRI_NAME": tt.name, "DIRECTION": tt.dir, "TYPE": tt.typ})
		if err != nil || got["street"] != tt.want {
			t.Errorf("%q: got %q, %v; want %q", tt.name, got["street"], err, tt.want)
		}
	}
	if _, err := c.Apply(map[string]any{"PRI_NAME": "", "DIRECTION": "", "TYPE": ""}); err == nil {
		t.Error("an empty name: batch-machine raises, Apply did not")
	}
	if _, err := c.Bind([]string{"PRI_NAME", "DIRECTION", "TYPE"}); err != nil {
		t.Error(err)
	}
}

// TestConcurrentApply: one Conform and one Bound serve many goroutines,
// each getting what a lone caller gets (run with -race to see the sharing).
func TestConcurrentApply(t *testing.T) {
	c := mustCompile(t, layertest.ParcelsConform)
	b, err := c.Bind([]string{"pin", "owner", "site_address", "zoning", "land_use", "township"})
	if err != nil {
		t.Fatal(err)
	}
	row := func(i int) []any {
		return []any{fmt.Sprintf("%010d", i), fmt.Sprintf("OWNER %d", i%50), fmt.Sprintf("%d MAIN ST", 100+i), "R-4", "vacant", "T1"}
	}
	want := make([][]string, 200)
	for i := range want {
		want[i] = make([]string, len(c.Columns()))
		if err := b.Apply(row(i), want[i]); err != nil {
			t.Fatal(err)
		}
	}
	var wg sync.WaitGroup
	errs := make(chan string, 8)
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			out := make([]string, len(c.Columns()))
			for i := range want {
				i = (i + g*25) % len(want)
				if err := b.Apply(row(i), out); err != nil || !slices.Equal(out, want[i]) {
					errs <- fmt.Sprintf("row %d: %v %v", i, out, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
}
