package postgis_test

import "testing"

// KnownSRID says what spatial_ref_sys holds: an SRID PostGIS reserves
// (above 998999) or does not ship is unknown, and the apply would fail on
// it.
func TestKnownSRID(t *testing.T) {
	t.Parallel()
	b := setup(t)
	for srid, want := range map[int]bool{4326: true, 2264: true, 3857: true, 12345: false, 999999: false} {
		got, err := b.store.KnownSRID(b.ctx, srid)
		if err != nil || got != want {
			t.Errorf("KnownSRID(%d) = %v, %v; want %v", srid, got, err, want)
		}
	}
}
