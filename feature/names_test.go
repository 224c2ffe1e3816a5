package feature_test

import (
	"slices"
	"testing"

	"github.com/ingestd/ingestd/feature"
)

// TestUniqueNames: repeats are renamed as GDAL's ogr2ogr renames them
// (checked with GDAL 3.6: "Field 'NAME' already exists. Renaming it as
// 'NAME2'"), a name already taken is skipped, case differences are no
// repeat.
func TestUniqueNames(t *testing.T) {
	for _, c := range []struct{ in, want []string }{
		{[]string{"id", "NAME", "NAME"}, []string{"id", "NAME", "NAME2"}},
		{[]string{"NAME", "NAME", "NAME", "NAME_1"}, []string{"NAME", "NAME2", "NAME3", "NAME_1"}},
		{[]string{"NAME", "NAME2", "NAME", "name"}, []string{"NAME", "NAME2", "NAME3", "name"}},
		{[]string{"a", "b"}, []string{"a", "b"}},
	} {
		in := slices.Clone(c.in)
		if got := feature.UniqueNames(in); !slices.Equal(got, c.want) {
			t.Errorf("UniqueNames(%q) = %q, want %q", c.in, got, c.want)
		}
		if !slices.Equal(in, c.in) {
			t.Errorf("UniqueNames changed its argument: %q", in)
		}
	}
}
