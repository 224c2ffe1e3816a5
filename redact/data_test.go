package redact

import (
	"encoding/json"
	"strings"
	"testing"
)

// Feature data holds a secret in any spelling and case a server may echo:
// Data replaces each with Marker and keeps the JSON valid, also where a
// secret spans the document's punctuation; data without one comes back as
// it was, the same slice.
func TestData(t *testing.T) {
	t.Parallel()
	s := NewSecrets("zqAppTok3n/x+y", `sp"an","k":"x`)
	for _, tc := range []struct {
		in, want string
		isJSON   bool
	}{
		{`{"note":"token zqAppTok3n/x+y here"}`, `{"note":"token REDACTED here"}`, true},
		{`{"note":"ZQAPPTOK3N/X+Y"}`, `{"note":"REDACTED"}`, true},
		{`{"u":"https://x/?t=zqAppTok3n%2Fx%2By"}`, `{"u":"https://x/?t=REDACTED"}`, true},
		{`{"n":{"deep":["zqapptok3n\/x+y"]}}`, `{"n":{"deep":["REDACTED"]}}`, true},
		{`{"zqAppTok3n/x+y":1}`, `{"REDACTED":1}`, true},
		{`row-zqAppTok3n/x+y`, `row-REDACTED`, false},
		{`{"note":"nothing to see, 1.50"}`, `{"note":"nothing to see, 1.50"}`, true},
	} {
		got, changed := s.Data([]byte(tc.in), tc.isJSON)
		if string(got) != tc.want || changed != (tc.in != tc.want) {
			t.Errorf("Data(%s) = %s, %v; want %s", tc.in, got, changed, tc.want)
		}
		if tc.isJSON && !json.Valid(got) {
			t.Errorf("Data(%s) = %s: not JSON", tc.in, got)
		}
	}
	// A secret of digits echoed as a number: replacing its bytes would
	// leave `"n":REDACTED`, so the document's values are scrubbed one by
	// one, the number becoming a string.
	digits := NewSecrets("98765432109")
	in := `{"n":98765432109,"s":"id 98765432109","k":1.50}`
	got, changed := digits.Data([]byte(in), true)
	if want := `{"k":1.50,"n":"REDACTED","s":"id REDACTED"}`; !changed || string(got) != want {
		t.Errorf("Data(%s) = %s, %v; want %s", in, got, changed, want)
	}
	plain := []byte(`{"note":"nothing"}`)
	if got, _ := s.Data(plain, true); &got[0] != &plain[0] {
		t.Error("data without a secret was copied")
	}
	var none *Secrets
	if got, changed := none.Data(plain, true); changed || string(got) != string(plain) {
		t.Errorf("a nil set changed %s to %s", plain, got)
	}
}

// BenchmarkData is the cost per feature of scrubbing feature data, for a
// feed with an app token: properties of a parcel (about 600 bytes) that
// hold no secret (every feature of such a feed pays this), and that hold
// one (a portal that echoes the token: rare).
// go test ./redact -run '^$' -bench Data -benchmem
func BenchmarkData(b *testing.B) {
	s := NewSecrets("hstAppT0ken7q2zW")
	props := []byte(`{"PIN_NUM":"0794573939","OWNER":"SMITH JOHN & MARY","SITE_ADDRESS":"1234 OAK FOREST DR","CITY":"RALEIGH",` +
		`"ZIP":"27609","ACRES":"0.31","LAND_VAL":"84000","BLDG_VAL":"212345","TOTAL_VALUE":"296345","SALE_DATE":"2019-06-14T00:00:00.000",` +
		`"SALE_PRICE":"289000","DEED_BOOK":"017456","DEED_PAGE":"01234","YEAR_BUILT":"1987","HEATED_AREA":"1850","ZONING":"R-4",` +
		`"LEGAL_DESC":"LO12 OAK FOREST SUBDIVISION PH2 BM1985-01234","TOWNSHIP":"RALEIGH",":created_at":"2026-11-01T08:00:00.000Z",` +
		`":updated_at":"2026-11-01T08:00:00.000Z"}`)
	echoed := []byte(strings.Replace(string(props), "SMITH JOHN & MARY", "token hstAppT0ken7q2zW", 1))
	for _, bc := range []struct {
		name string
		p    []byte
	}{{"clean", props}, {"echoed", echoed}} {
		b.Run(bc.name, func(b *testing.B) {
			b.SetBytes(int64(len(bc.p)))
			for b.Loop() {
				_, _ = s.Data(bc.p, true)
			}
		})
	}
}

// ID scrubs a feature id as Data does, and an id without a secret comes
// back without an allocation (every feature of a feed with secrets asks).
func TestID(t *testing.T) {
	s := NewSecrets("zqAppTok3n/x+y")
	if got, changed := s.ID("row-ZQAPPTOK3N/X+Y"); !changed || got != "row-REDACTED" {
		t.Errorf("ID = %q, %v; want row-REDACTED, true", got, changed)
	}
	for _, id := range []string{"17", "{3F2504E0-4F89-11D3-9A0C-0305E82C3301}"} {
		if got, changed := s.ID(id); changed || got != id {
			t.Errorf("ID(%q) = %q, %v", id, got, changed)
		}
		if n := testing.AllocsPerRun(100, func() { s.ID(id) }); n != 0 {
			t.Errorf("ID(%q) allocates %v times, want 0", id, n)
		}
	}
}
