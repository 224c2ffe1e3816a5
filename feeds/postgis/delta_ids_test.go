package postgis_test

import (
	"slices"
	"testing"

	ft "github.com/ingestd/ingestd/feature"
	"github.com/ingestd/ingestd/feeds"
	"github.com/ingestd/ingestd/source"
)

// TestComposeDeltaTextIDs: a delta whose kind lists its ids as text (row
// ids, feature ids) composes and applies like one of object ids: a listed
// id not fetched is kept, an unlisted one removed; a text id in decimal
// names the feature an integer id would; and a list that does not match
// the composed snapshot is drift, with or without a read ahead.
func TestComposeDeltaTextIDs(t *testing.T) {
	t.Parallel()
	stored := []ft.Feature{
		feature("row-a", point(-78.6, 35.7, 4326), props("n", 1)),
		feature("row-b", point(-78.5, 35.7, 4326), props("n", 2)),
		feature("row-c", point(-78.4, 35.7, 4326), props("n", 3)),
		feature("7", point(-78.3, 35.7, 4326), props("n", 7)),
	}
	edit := []ft.Feature{feature("row-b", point(-78.5, 35.7, 4326), props("n", 20))}
	for _, tc := range []struct {
		name    string
		ids     source.IDs
		fetched []ft.Feature
		want    feeds.DeltaResult
	}{
		{"text ids", source.IDs{Text: []string{"row-b", "row-a", "7"}}, edit,
			feeds.DeltaResult{Fetched: 1, Kept: 2}},
		{"text and integer ids", source.IDs{Int: []int64{7}, Text: []string{"row-a", "row-b", "row-a"}}, edit,
			feeds.DeltaResult{Fetched: 1, Kept: 2}},
		{"a listed id missing", source.IDs{Text: []string{"row-a", "row-b", "7", "row-z"}}, edit,
			feeds.DeltaResult{Fetched: 1, Kept: 2, Missing: 1}},
		{"a fetched id not listed", source.IDs{Text: []string{"row-a", "row-b", "7"}},
			append(slices.Clone(edit), feature("row-q", point(-78.2, 35.7, 4326), props("n", 9))),
			feeds.DeltaResult{Fetched: 2, Kept: 2, Extra: 1}},
	} {
		for _, ahead := range []bool{false, true} {
			name := tc.name
			if ahead {
				name += ", read ahead"
			}
			t.Run(name, func(t *testing.T) {
				t.Parallel()
				b := setup(t)
				feed := feedInfo("textids")
				b.poll(t, feed, stored)
				id := b.stage(t, feed, tc.fetched)
				var base *feeds.DeltaBase
				if ahead {
					base = b.store.ReadDeltaBase(b.ctx, id, feed)
				}
				res, err := b.store.ComposeDelta(b.ctx, id, feed, source.Delta{IDs: tc.ids, Since: source.Watermark{Field: ":updated_at", Value: "2026-12-01T18:00:00Z"}}, base)
				if err != nil || res != tc.want {
					t.Fatalf("ComposeDelta = %+v, %v; want %+v", res, err, tc.want)
				}
				if res.Drift() != 0 {
					return
				}
				applied, err := b.store.Apply(b.ctx, id, feed)
				if err != nil || applied.Features != 3 || applied.Modified != 1 || applied.Removed != 1 || applied.Added != 0 {
					t.Fatalf("Apply = %+v, %v; want 3 features, row-b modified, row-c removed", applied, err)
				}
				var ids []string
				rows, err := b.pool.Query(b.ctx, `SELECT feature_id FROM features WHERE jurisdiction = 'wake' AND feed = 'textids' ORDER BY 1`)
				if err != nil {
					t.Fatal(err)
				}
				for rows.Next() {
					var s string
					if err := rows.Scan(&s); err != nil {
						t.Fatal(err)
					}
					ids = append(ids, s)
				}
				if err := rows.Err(); err != nil {
					t.Fatal(err)
				}
				if want := []string{"7", "row-a", "row-b"}; !slices.Equal(ids, want) {
					t.Errorf("stored ids %v, want %v", ids, want)
				}
			})
		}
	}
}
