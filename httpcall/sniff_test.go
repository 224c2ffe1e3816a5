package httpcall

import (
	"slices"
	"testing"
)

// TestLeadingKeys: the members a protocol's error document is recognised
// by, as far as the sniffed bytes hold them whole.
func TestLeadingKeys(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		head string
		max  int
		want []string
	}{
		{`{"error":{"code":498}}`, 1, []string{"error"}},
		{`{"code":"NotFound","description":"x"}`, 16, []string{"code", "description"}},
		{`{"version":"1.1.0","exceptions":[{"code":"X"}]}`, 8, []string{"version", "exceptions"}},
		{`{"a":1,"b":2,"c":3}`, 2, []string{"a", "b"}},
		{`{"type":"FeatureCollection","features":[{"type":"Feat`, 8, []string{"type", "features"}}, // cut short inside a value
		{`{"a":[1 2],"b":1}`, 8, []string{"a"}},                                                    // not JSON: stop there
		{`{}`, 8, nil},
		{`[{"error":1}]`, 8, nil},
		{`null`, 8, nil},
		{``, 8, nil},
	} {
		if got := LeadingKeys([]byte(tc.head), tc.max); !slices.Equal(got, tc.want) {
			t.Errorf("LeadingKeys(%s, %d) = %q, want %q", tc.head, tc.max, got, tc.want)
		}
	}
}
