package errtext

import (
	"strings"
	"testing"
	"unicode/utf8"
)

// The two cuts the surfaces made: the status page's from the right lost
// "connection refused", `ingestd status`'s from the left lost which step of
// which layer failed. Short keeps both ends, within n.
func TestShortKeepsFirstClauseAndRootCause(t *testing.T) {
	t.Parallel()
	refused := `arcgis: layer description of http://127.0.0.1:8093/arcgis/rest/services/Parcels/FeatureServer/0: ` +
		`Get "http://127.0.0.1:8093/arcgis/rest/services/Parcels/FeatureServer/0?f=json": dial tcp 127.0.0.1:8093: connect: connection refused`
	for _, c := range []struct {
		in         string
		n          int
		start, end string
	}{
		{refused, 90, "arcgis: layer description of", "dial tcp 127.0.0.1:8093: connect: connection refused"},
		{refused, 150, "arcgis: layer description of http://127.0.0.1:809", "dial tcp 127.0.0.1:8093: connect: connection refused"},
		{"wfs: GetCapabilities of http://127.0.0.1:18180/wfs does not list nc_countys: " +
			"type names are case-sensitive (it offers ms:nc_counties, ms:nc_roads, ms:nc_parcels, ms:nc_schools)", 90,
			"wfs: GetCapabilities of http", "ms:nc_schools)"},
		{strings.Repeat("x", 200), 50, "xxxxxxxx", "xxxx"},
	} {
		got := Short(c.in, c.n)
		if utf8.RuneCountInString(got) > c.n {
			t.Errorf("Short(…, %d) has %d runes: %q", c.n, utf8.RuneCountInString(got), got)
		}
		if !strings.HasPrefix(got, c.start) {
			t.Errorf("Short(…, %d) = %q, want it to start with %q", c.n, got, c.start)
		}
		if !strings.HasSuffix(got, c.end) || !strings.Contains(got, Ellipsis) {
			t.Errorf("Short(…, %d) = %q, want a marked cut and the end %q", c.n, got, c.end)
		}
	}
	if got := Short("short enough", 90); got != "short enough" {
		t.Errorf("a short text was changed: %q", got)
	}
}

func TestHead(t *testing.T) {
	for _, c := range []struct {
		s    string
		n    int
		want string
	}{
		{"parcel-17", 20, "parcel-17"},
		{"parcel-17", 6, "parcel…"},
		{"Dürerstraße", 2, "D…"}, // byte 2 is inside "ü": backed off to 1
		{"Dürerstraße", 3, "Dü…"},
		{"東京都", 4, "東…"},
	} {
		if got := Head(c.s, c.n); got != c.want {
			t.Errorf("Head(%q, %d) = %q, want %q", c.s, c.n, got, c.want)
		}
	}
}
