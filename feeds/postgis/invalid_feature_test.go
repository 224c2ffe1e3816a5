package postgis_test

import (
	"encoding/json"
	"math/rand/v2"
	"strings"
	"testing"

	ft "github.com/ingestd/ingestd/feature"
	"github.com/ingestd/ingestd/feeds"
	"github.com/ingestd/ingestd/feeds/postgis"
)

// badFeaturesPages is a layer on two pages whose ids and properties hold
// what PostgreSQL's text and jsonb cannot (invalid UTF-8, NUL, lone
// surrogates), and an id far too long to be a key.
func badFeaturesPages() [][]ft.Feature {
	raw := func(s string) json.RawMessage { return json.RawMessage(s) }
	return [][]ft.Feature{{
		feature("ok", point(-78.6, 35.7, 4326), props("name", "fine")),
		feature("utf8", point(-78.6, 35.7, 4326), raw("{\"name\":\"caf\xe9\"}")),
		feature("nul", point(-78.6, 35.7, 4326), raw(`{"k\u0000ey":"v\u0000"}`)),
		feature(strings.Repeat("x", 1<<20), point(-78.6, 35.7, 4326), props("name", "long")),
	}, {
		feature("surrogate", point(-78.6, 35.7, 4326), raw(`{"name":"\ud800x\udc00"}`)),
		feature("id\xff", point(-78.6, 35.7, 4326), props("name", "bad id")),
		feature("id\x00nul", point(-78.6, 35.7, 4326), props("name", "nul id")),
		{Refused: "id of 5000 bytes exceeds limits.id_bytes (1024): 99999…"}, // as the decoders refuse one
	}}
}

// wantBad is what badFeaturesPages counts.
var wantBad = feeds.InvalidFeatures{InvalidUTF8: 2, NUL: 2, LoneSurrogate: 1, IDTooLong: 2}

// stageBad stages badFeaturesPages for feed, each page twice (a retry must
// not count twice), and returns the poll's id.
func (b *bundle) stageBad(t *testing.T, feed feeds.FeedInfo) int64 {
	t.Helper()
	id := b.begin(t, feed)
	for i, page := range badFeaturesPages() {
		for range 2 {
			n, err := b.store.StagePage(b.ctx, id, i, reader(page...))
			if err != nil {
				t.Fatal(err)
			}
			if want := len(page) - 1; n != want {
				t.Fatalf("page %d: staged %d, want %d (the long id, or the refused feature, left out)", i, n, want)
			}
		}
	}
	return id
}

// TestInvalidFeaturesRepaired: under invalid_feature: repair (the default),
// invalid UTF-8, NUL and lone surrogates in ids and properties become
// U+FFFD and the features are written; an id too long to be a key refuses
// its feature alone. Nothing fails the poll; each kind is counted in the
// result and in polls.invalid_features.
func TestInvalidFeaturesRepaired(t *testing.T) {
	t.Parallel()
	forFirstLoadPaths(t, func(t *testing.T, b *bundle) {
		feed := feedInfo("bad")
		id := b.stageBad(t, feed)
		res, err := b.store.Apply(b.ctx, id, feed)
		if err != nil {
			t.Fatal(err)
		}
		if res.Added != 6 || res.InvalidFeatures != wantBad {
			t.Errorf("apply: %+v, want 6 added and %+v", res, wantBad)
		}
		var counts string
		b.scalar(t, &counts, `SELECT invalid_features::text FROM polls WHERE id = $1`, id)
		if counts != `{"nul": 2, "id_too_long": 2, "invalid_utf8": 2, "lone_surrogate": 1}` {
			t.Errorf("polls.invalid_features = %s", counts)
		}
		for _, c := range []struct{ id, props string }{
			{"ok", `{"name": "fine"}`},
			{"utf8", `{"name": "caf` + "\uFFFD" + `"}`},
			{"nul", `{"k` + "\uFFFD" + `ey": "v` + "\uFFFD" + `"}`},
			{"surrogate", `{"name": "` + "\uFFFDx\uFFFD" + `"}`},
			{"id\uFFFD", `{"name": "bad id"}`},
			{"id\uFFFDnul", `{"name": "nul id"}`},
		} {
			var got string
			b.scalar(t, &got, `SELECT properties::text FROM features WHERE feed = 'bad' AND feature_id = $1`, c.id)
			if got != c.props {
				t.Errorf("%q: properties %s, want %s", c.id, got, c.props)
			}
		}
		if n := b.count(t, `SELECT count(*) FROM features WHERE feed = 'bad'`); n != 6 {
			t.Errorf("%d features stored, want 6 (the long id refused)", n)
		}
		// Repaired features hash stably: the same layer again is unchanged.
		res, err = b.store.Apply(b.ctx, b.stageBad(t, feed), feed)
		if err != nil || res.Unchanged != 6 || res.InvalidFeatures != wantBad {
			t.Errorf("second poll: %+v, %v; want 6 unchanged, still counted %+v", res, err, wantBad)
		}
	})
}

// TestInvalidFeaturesSkipped: under invalid_feature: skip, a feature that
// needed a repair is neither added nor modified: a new one is left out, an
// existing one keeps its previous version. Counted all the same.
func TestInvalidFeaturesSkipped(t *testing.T) {
	t.Parallel()
	forFirstLoadPaths(t, func(t *testing.T, b *bundle) {
		feed := feedInfo("bad")
		feed.Guard.SkipInvalidFeature = true
		res, err := b.store.Apply(b.ctx, b.stageBad(t, feed), feed)
		if err != nil {
			t.Fatal(err)
		}
		if res.Added != 1 || res.InvalidFeatures != wantBad {
			t.Errorf("first load: %+v, want 1 added and %+v", res, wantBad)
		}
		if n := b.count(t, `SELECT count(*) FROM features WHERE feed = 'bad'`); n != 1 {
			t.Errorf("%d features stored, want only the valid one", n)
		}
	})
	t.Run("refresh", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		feed := feedInfo("bad")
		feed.Guard.SkipInvalidFeature = true
		var clean []ft.Feature
		for _, id := range []string{"ok", "utf8", "nul", "surrogate"} {
			clean = append(clean, feature(id, point(-78.6, 35.7, 4326), props("name", "before")))
		}
		b.poll(t, feed, clean)
		res, err := b.store.Apply(b.ctx, b.stageBad(t, feed), feed)
		if err != nil {
			t.Fatal(err)
		}
		if res.Modified != 1 || res.Added != 0 || res.Removed != 0 || res.InvalidFeatures != wantBad {
			t.Errorf("refresh: %+v, want only ok modified, nothing added or removed, and %+v", res, wantBad)
		}
		if n := b.count(t, `SELECT count(*) FROM features WHERE feed = 'bad' AND properties->>'name' = 'before'`); n != 3 {
			t.Errorf("%d features kept their previous version, want 3", n)
		}
	})
}

// TestLongestIDIsStored: an id of MaxIDBytes that does not compress (the
// B-tree limit bites on the compressed entry) is stored on every path; one
// byte more is refused, alone.
func TestLongestIDIsStored(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(3, 4))
	longest := make([]byte, postgis.MaxIDBytes)
	for i := range longest {
		longest[i] = byte('!' + rng.IntN(94))
	}
	forFirstLoadPaths(t, func(t *testing.T, b *bundle) {
		feed := feedInfo("ids")
		id := b.begin(t, feed)
		if _, err := b.store.StagePage(b.ctx, id, 0, reader(
			feature(string(longest), point(-78.6, 35.7, 4326), nil),
			feature(string(longest)+"x", point(-78.6, 35.7, 4326), nil),
		)); err != nil {
			t.Fatal(err)
		}
		res, err := b.store.Apply(b.ctx, id, feed)
		if err != nil || res.Added != 1 || res.InvalidFeatures != (feeds.InvalidFeatures{IDTooLong: 1}) {
			t.Errorf("apply: %+v, %v; want 1 added and 1 id too long", res, err)
		}
	})
}
