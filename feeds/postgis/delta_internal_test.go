package postgis

import (
	"math"
	"slices"
	"strconv"
	"testing"

	"github.com/ingestd/ingestd/source"
)

// TestCanonicalInt: an object id is a feature id only in the spelling
// strconv.FormatInt gives it; "007", "+7" or "-0" name no listed id.
func TestCanonicalInt(t *testing.T) {
	for _, n := range []int64{0, 7, -7, 1234567890123, math.MaxInt64, math.MinInt64} {
		got, ok := canonicalInt([]byte(strconv.FormatInt(n, 10)))
		if !ok || got != n {
			t.Errorf("canonicalInt(%d) = %d, %v", n, got, ok)
		}
	}
	for _, s := range []string{"", "-", "007", "+7", "-0", "00", "7a", " 7", "9223372036854775808", "-9223372036854775809", "12345678901234567890", "parcel-1"} {
		if n, ok := canonicalInt([]byte(s)); ok {
			t.Errorf("canonicalInt(%q) = %d, true; want not an object id", s, n)
		}
	}
}

// TestMergeStored: the stored ids the list still holds and the poll did
// not fetch are kept, those it lacks and the poll did not fetch removed;
// the fetched ones are neither, listed or not.
func TestMergeStored(t *testing.T) {
	ids := []int64{-3, 1, 2, 5, 8, 13}    // the server's list, sorted
	stored := []int64{-3, 1, 2, 4, 9, 13} // the table's key, sorted (readStoredIDs)
	fetched := map[int64]bool{2: true, 9: true, 5: true}
	kept, removed := mergeStored(ids, slices.Clone(stored), fetched)
	// Kept: -3, 1, 13. Removed: 4. Fetched: 2 (stored), 9 (stored, not
	// listed: an extra the caller counts), 5 (new).
	if kept != 3 || !slices.Equal(removed, []string{"4"}) {
		t.Errorf("kept %d, removed %v; want 3 and [4]", kept, removed)
	}
	if kept, removed := mergeStored(nil, slices.Clone(stored), nil); kept != 0 || len(removed) != len(stored) {
		t.Errorf("an empty list: kept %d, removed %v; want every stored id removed", kept, removed)
	}
	if kept, removed := mergeStored(ids, nil, nil); kept != 0 || removed != nil {
		t.Errorf("nothing stored: kept %d, removed %v", kept, removed)
	}
}

// TestListedOf: a delta's list, whatever the type of its ids, is the
// distinct object ids sorted (a text id in canonical decimal among them)
// and the other text ids.
func TestListedOf(t *testing.T) {
	l := listedOf(source.IDs{Int: []int64{9, 2, 2, -1}, Text: []string{"5", "007", "row-a", "9", "row-a"}})
	if want := []int64{-1, 2, 5, 9}; !slices.Equal(l.num, want) {
		t.Errorf("object ids %v, want %v", l.num, want)
	}
	if len(l.other) != 2 || !l.other["007"] || !l.other["row-a"] || l.len() != 6 {
		t.Errorf("other ids %v (len %d), want 007 and row-a (6 in all)", l.other, l.len())
	}
	sorted := []int64{1, 2, 3}
	if l := listedOf(source.IDs{Int: sorted}); !slices.Equal(l.num, sorted) || l.other != nil {
		t.Errorf("a sorted list of object ids: %+v", l)
	}
}
