package geojson

import (
	"encoding/json"
	"testing"
)

// FuzzValidJSON: validJSON agrees with json.Valid.
func FuzzValidJSON(f *testing.F) {
	for _, s := range []string{`{}`, `[]`, `""`, `0`, `-0.5e+10`, `{"a":[1,2,{"b":null}]}`, `"\u00e9\n"`,
		`{"a":1,}`, `[1,]`, `01`, `1.`, `.5`, `-`, `"\x"`, `"\u12"`, "\"\x01\"", `tru`, `nulll`, ` [ ] `, `{"a" 1}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if got, want := validJSON(b) == nil, json.Valid(b); got != want {
			t.Fatalf("validJSON(%q) ok = %v, json.Valid = %v", b, got, want)
		}
	})
}
