package conform

import (
	"bytes"
	"encoding/json"
	"fmt"
	"testing"
)

// jsonSpec reads plain fields, a list, a regexp on a field that may be
// missing, and "street", a column's own name, which Apply also reads as a
// property.
const jsonSpec = `
layer: addresses
number: {function: prefixed_number, field: ADDR}
street: [PRE, NAME]
unit: {function: regexp, field: UNIT, pattern: '^#?(\w+)$', replace: '$1'}
city: "ci ty"
postcode: ZIP
id: ID
`

// applyDecoded is ApplyJSON's oracle: the properties decoded with
// json.Number for numbers (as the store did before ApplyJSON) and Apply.
func applyDecoded(c *Conform, props []byte) ([]string, error) {
	m := map[string]any{}
	if t := bytes.TrimSpace(props); len(t) > 0 && string(t) != "null" {
		d := json.NewDecoder(bytes.NewReader(t))
		d.UseNumber()
		if err := d.Decode(&m); err != nil {
			return nil, err
		}
	}
	out, err := c.Apply(m)
	if err != nil {
		return nil, err
	}
	values := make([]string, len(c.columns))
	for i, col := range c.columns {
		values[i] = out[col]
	}
	return values, nil
}

// checkApplyJSON fails unless ApplyJSON gives props what applyDecoded
// gives: the same columns, or an error with the same text.
func checkApplyJSON(t *testing.T, c *Conform, props []byte) {
	t.Helper()
	want, wantErr := applyDecoded(c, props)
	got := make([]string, len(c.columns))
	err := c.ApplyJSON(props, got)
	switch {
	case (err == nil) != (wantErr == nil):
		t.Fatalf("%q: error %v, want %v", props, err, wantErr)
	case err != nil:
		if err.Error() != wantErr.Error() {
			t.Fatalf("%q: error %q, want %q", props, err, wantErr)
		}
	case fmt.Sprint(got) != fmt.Sprint(want):
		t.Fatalf("%q:\n got %q\nwant %q", props, got, want)
	}
}

// ApplyJSON scans only the members the conform reads; whatever the text
// (escapes, nesting, numbers written every way, invalid UTF-8, not JSON
// at all), it gives what decoding every property and Apply give.
func TestApplyJSONAsDecoded(t *testing.T) {
	c := mustCompile(t, jsonSpec)
	for _, props := range []string{
		``, `null`, ` null `, `{}`, ` { } `,
		`{"ADDR": "123 1/2 MAIN ST", "PRE": "N", "NAME": "Main", "UNIT": "#4", "ci ty": "Apex", "ZIP": 27502, "ID": 7}`,
		`{"ADDR": "12 ELM", "UNIT": null, "ZIP": -0, "ID": 1.50}`,
		`{"ADDR": "12 ELM", "UNIT": "B", "ZIP": 1e3, "ID": 12345678901234567890123}`,
		`{"ADDR": "12 ELM", "UNIT": "B", "ZIP": true, "ID": false}`,
		`{"ADDR":"12 ELM","UNIT":"B","street":"own street","oa:street":"x"}`,
		`{"ADDR": "12 \"ELM\" \u00e9\ud83d\ude00 \\ ST", "UNIT": "\t4"}`,
		`{"ADDR": "12 ELM", "UNIT": "B", "OTHER": {"a": [1, "}", {"b": "]"}]}, "MORE": [[], {}]}`,
		`{"ADDR": "12 ELM", "UNIT": "B", "ZIP": {"a": 1}}`,
		`{"ADDR": "12 ELM", "UNIT": ["B"]}`,
		`{"ADDR": "12 ELM"}`, // a regexp's field missing: Apply's error
		`{"AD\u0044R": "12 ELM", "UNIT": "B"}`,
		"{\"ADDR\": \"12 \xff ELM\", \"UNIT\": \"B\"}",
		"{\"AD\xffDR\": \"12 ELM\", \"UNIT\": \"B\"}",
		`{"ADDR": "1 A", "UNIT": "B", "ADDR": "2 B"}`,
		`{"ADDR": "1 A", "UNIT": "B"} trailing`,
		`{"ADDR": "1 A", "UNIT": "B",}`,
		`{"ADDR": 01, "UNIT": "B"}`,
		`[1, 2]`, `"a string"`, `{"ADDR": "1 A"`, `{`, `nul`,
	} {
		checkApplyJSON(t, c, []byte(props))
	}
}

// FuzzApplyJSON: ApplyJSON gives any text what decoding and Apply give.
//
//	go test ./conform -run '^$' -fuzz FuzzApplyJSON -fuzztime 60s
func FuzzApplyJSON(f *testing.F) {
	f.Add(`{"ADDR": "123 1/2 MAIN ST", "PRE": "N", "NAME": "Main", "UNIT": "#4", "ci ty": "Apex", "ZIP": 27502, "ID": 7}`)
	f.Add(`{"ADDR": "12 \"ELM\" \u00e9", "UNIT": ["B"], "X": {"a": [1, "}"]}}`)
	f.Add(`{"ADDR": "1 A", "UNIT": "B", "ADDR": -0.0e1}`)
	c := mustCompile(f, jsonSpec)
	f.Fuzz(func(t *testing.T, props string) { checkApplyJSON(t, c, []byte(props)) })
}
