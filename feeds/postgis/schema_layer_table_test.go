package postgis_test

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	ft "github.com/ingestd/ingestd/feature"
	"github.com/ingestd/ingestd/feeds"
	"github.com/ingestd/ingestd/schema"
)

// layerRows maps each of the layer's feature ids to its row's xmin (the
// transaction that wrote it).
func (b *bundle) layerRows(t *testing.T, layer string) map[string]string {
	t.Helper()
	return b.textMap(t, fmt.Sprintf(`SELECT feature_id, xmin::text FROM %s`, layer))
}

// layerDiff counts the rows the layer's typed columns and the typed
// select of the feed's features (each column the safe cast of the
// property the features view gives back) do not share (both ways,
// duplicates counted): the layer's columns are what its properties say.
func (b *bundle) layerDiff(t *testing.T, feed feeds.FeedInfo) int {
	t.Helper()
	var cols, casts string
	b.scalar(t, &cols, `SELECT string_agg(quote_ident(view_column), ', ' ORDER BY ordinal) FROM feed_columns
		WHERE jurisdiction = $1 AND feed = $2 AND removed_at IS NULL`, feed.Jurisdiction, feed.Feed)
	b.scalar(t, &casts, `SELECT string_agg(format('ingestd_as_%s(f.properties -> %L)',
			CASE type WHEN 'double precision' THEN 'double' ELSE type END, name), ', ' ORDER BY ordinal)
		FROM feed_columns WHERE jurisdiction = $1 AND feed = $2 AND removed_at IS NULL`, feed.Jurisdiction, feed.Feed)
	layer := b.viewName(t, feed)
	sel := fmt.Sprintf(`SELECT f.feature_id, %s FROM features f WHERE f.jurisdiction = %s AND f.feed = %s`,
		casts, quoteSQL(feed.Jurisdiction), quoteSQL(feed.Feed))
	own := fmt.Sprintf(`SELECT feature_id, %s FROM %s`, cols, layer)
	return b.count(t, fmt.Sprintf(`SELECT (SELECT count(*) FROM (%[1]s EXCEPT ALL %[2]s) a)
		+ (SELECT count(*) FROM (%[2]s EXCEPT ALL %[1]s) b)`, own, sel))
}

// quoteSQL quotes s as an SQL string literal.
func quoteSQL(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }

// An apply that changes one feature rewrites that feature's row of the
// layer only: the layer stays the same table (not rebuilt) and every other
// row keeps the transaction that wrote it.
func TestLayerApplyWritesChangedRowsOnly(t *testing.T) {
	t.Parallel()
	b := setup(t)
	feed := feedInfo("one-change")
	snap := func(changed int) []ft.Feature {
		var fs []ft.Feature
		for i := range 40 {
			n := i
			if i == changed {
				n = 1000
			}
			fs = append(fs, feature(fmt.Sprintf("f%02d", i), point(float64(i), 1, 4326),
				json.RawMessage(fmt.Sprintf(`{"n":%d,"s":"x%d"}`, n, i))))
		}
		return fs
	}
	b.poll(t, feed, snap(-1))
	b.poll(t, feed, snap(-1)) // the layer as the apply that follows a first load leaves it
	layer := b.viewName(t, feed)
	var oid, oidAfter uint32
	b.scalar(t, &oid, `SELECT $1::regclass::oid`, layer)
	before := b.layerRows(t, layer)

	if _, res := b.poll(t, feed, snap(7)); res.Modified != 1 {
		t.Fatalf("apply modified %d features, want 1", res.Modified)
	}
	b.scalar(t, &oidAfter, `SELECT $1::regclass::oid`, layer)
	if oidAfter != oid {
		t.Errorf("layer %s was rebuilt (oid %d → %d), want its changed row rewritten in place", layer, oid, oidAfter)
	}
	after := b.layerRows(t, layer)
	if len(after) != len(before) {
		t.Fatalf("layer has %d rows after the apply, %d before", len(after), len(before))
	}
	for id, xmin := range after {
		if rewritten := xmin != before[id]; rewritten != (id == "f07") {
			t.Errorf("row %s rewritten: %v (xmin %s → %s), want only f07's", id, rewritten, before[id], xmin)
		}
	}
	var n int
	b.scalar(t, &n, fmt.Sprintf(`SELECT n FROM %s WHERE feature_id = 'f07'`, layer))
	if n != 1000 {
		t.Errorf("f07's n in the layer: %d, want 1000", n)
	}
	if d := b.layerDiff(t, feed); d != 0 {
		t.Errorf("layer and its typed select differ by %d rows", d)
	}
}

// After a random sequence of polls adding, modifying and removing
// features, the layer holds exactly what its typed select reads.
func TestLayerFollowsRandomPolls(t *testing.T) {
	t.Parallel()
	b := setup(t)
	feed := feedInfo("random-polls")
	rng := rand.New(rand.NewPCG(28, 32))
	// id → n; every feature has the same properties, so the schema (and
	// the layer's columns) stays the same and each apply is incremental.
	cur := make(map[int]int)
	next := 0
	for range 60 {
		cur[next] = rng.IntN(100)
		next++
	}
	for poll := range 12 {
		if poll > 0 {
			for id := range cur {
				switch r := rng.IntN(20); {
				case r == 0 && len(cur) > 50:
					delete(cur, id)
				case r < 3:
					cur[id] = rng.IntN(100)
				}
			}
			for range rng.IntN(4) {
				cur[next] = rng.IntN(100)
				next++
			}
		}
		var fs []ft.Feature
		for id, n := range cur {
			fs = append(fs, feature(fmt.Sprintf("r%03d", id), point(float64(id%50), float64(n%40), 4326),
				json.RawMessage(fmt.Sprintf(`{"n":%d,"s":"v%d"}`, n, n))))
		}
		b.poll(t, feed, fs)
		if got := b.count(t, `SELECT count(*) FROM `+b.viewName(t, feed)); got != len(cur) {
			t.Fatalf("poll %d: layer has %d rows, want %d", poll, got, len(cur))
		}
		if d := b.layerDiff(t, feed); d != 0 {
			t.Fatalf("poll %d: layer and its typed select differ by %d rows", poll, d)
		}
	}
}

// A first load fills its layer with plain casts for the columns whose
// values all convert (typedSQL with plain, in oneCopyLoad): the rows are the
// typed select's all the same, and a value a plain cast refuses makes the
// fill fall back to the typed select.
func TestLayerFirstFill(t *testing.T) {
	t.Parallel()
	b := setup(t)
	feed := feedInfo("first-fill")
	var fs []ft.Feature
	for i := range 30 {
		fs = append(fs, feature(fmt.Sprintf("f%02d", i), point(float64(i), 1, 4326), json.RawMessage(fmt.Sprintf(
			`{"n":%d,"x":%d.5,"s":"s%d","b":%v,"d":"2021-02-%02d","t":"2021-02-03T04:05:%02dZ","j":{"k":%[1]d},"o":%[7]s}`,
			i, i, i, i%2 == 0, 1+i%28, i, map[bool]string{true: "null", false: `"x"`}[i%3 == 0]))))
	}
	b.poll(t, feed, fs)
	if d := b.layerDiff(t, feed); d != 0 {
		t.Fatalf("first load: layer and its typed select differ by %d rows", d)
	}

	// The first load read the columns whose values all convert with
	// plain casts (typedSQL): the same values as the safe casts above.
	if n := b.count(t, fmt.Sprintf(`SELECT count(*) FROM %s WHERE n IS NOT NULL AND x IS NOT NULL AND d IS NOT NULL AND t IS NOT NULL`,
		b.viewName(t, feed))); n != len(fs) {
		t.Errorf("%d rows with every typed value, want %d", n, len(fs))
	}
}

// A layer refresh reads the rows a poll wrote with plain casts where the
// poll's values all convert (migration 36). The layer holds what its typed
// select reads when they do, when the profile takes a value as converting
// that the plain cast refuses (a zone beyond ±15:59: the refresh falls
// back to the typed select), and when a declared column gets a value that
// does not convert. The database's sessions run in a zone far from UTC: a
// timestamp without a zone is UTC all the same.
func TestLayerRefreshPlainCasts(t *testing.T) {
	t.Parallel()
	b := setup(t)
	var db string
	b.scalar(t, &db, `SELECT current_database()`)
	if _, err := b.pool.Exec(b.ctx, fmt.Sprintf(`ALTER DATABASE %q SET TimeZone = 'Pacific/Chatham'`, db)); err != nil {
		t.Fatal(err)
	}
	b.pool.Reset()
	feed := feedInfo("plain-refresh")
	feed.Declared = &schema.Declared{Origin: "test", Columns: []schema.Column{{Name: "n", Type: schema.BigInt}, {Name: "x", Type: schema.Double}}}
	// edits maps a feature to its t and n (JSON) in place of the first
	// snapshot's.
	snap := func(edits map[int][2]string) []ft.Feature {
		var fs []ft.Feature
		for i := range 40 {
			tv, n := fmt.Sprintf(`"2021-02-03T04:05:%02d"`, i), fmt.Sprint(i)
			if e, ok := edits[i]; ok {
				tv, n = e[0], e[1]
			}
			fs = append(fs, feature(fmt.Sprintf("f%02d", i), point(float64(i), 1, 4326), json.RawMessage(fmt.Sprintf(
				`{"n":%s,"x":%d.25,"b":%v,"d":"2021-02-%02d","t":%s,"s":"s%d","j":{"k":%[2]d}}`, n, i, i%2 == 0, 1+i%28, tv, i))))
		}
		return fs
	}
	edits := map[int][2]string{}
	b.poll(t, feed, snap(edits))
	b.poll(t, feed, snap(edits)) // the layer as the apply that follows a first load leaves it
	layer := b.viewName(t, feed)
	for _, step := range []struct {
		name    string
		feature int
		t, n    string
		want    string // the feature's t and n in the layer
	}{
		{"values that convert", 3, `"2022-06-07T08:09:10"`, `33`, "2022-06-07 08:09:10+00|33"},
		{"a zone the plain cast refuses", 5, `"2022-06-07T08:09:10+16:00"`, `5`, "-|5"},
		{"a declared bigint that is not one", 6, `"2022-06-07T08:09:10Z"`, `"seven"`, "2022-06-07 08:09:10+00|-"},
	} {
		edits[step.feature] = [2]string{step.t, step.n}
		if _, res := b.poll(t, feed, snap(edits)); res.Modified != 1 {
			t.Fatalf("%s: the apply modified %d features, want 1", step.name, res.Modified)
		}
		if d := b.layerDiff(t, feed); d != 0 {
			t.Fatalf("%s: the layer and its typed select differ by %d rows", step.name, d)
		}
		var got string
		b.scalar(t, &got, fmt.Sprintf(`SELECT coalesce(to_char(t AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS') || '+00', '-') || '|' || coalesce(n::text, '-')
			FROM %s WHERE feature_id = $1`, layer), fmt.Sprintf("f%02d", step.feature))
		if got != step.want {
			t.Errorf("%s: f%02d's t|n in the layer is %s, want %s", step.name, step.feature, got, step.want)
		}
	}

}
