package postgis_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/ingestd/ingestd/config"
	"github.com/ingestd/ingestd/conform"
	ft "github.com/ingestd/ingestd/feature"
	"github.com/ingestd/ingestd/feeds"
	"github.com/ingestd/ingestd/feeds/postgis"
	"github.com/ingestd/ingestd/source"
)

// addressConform compiles a conform of the addresses layer from YAML.
func addressConform(t testing.TB, yaml string) *feeds.CommonConform {
	t.Helper()
	spec, err := conform.ParseSpec([]byte(yaml))
	if err != nil {
		t.Fatal(err)
	}
	c, err := conform.Compile(spec)
	if err != nil {
		t.Fatal(err)
	}
	var layer config.CommonLayer
	for _, l := range config.BuiltinLayers() {
		if l.Name == "addresses" {
			layer = l
		}
	}
	return feeds.NewCommonConform(&config.FeedConform{Layer: "addresses", Common: layer, Spec: spec, Conform: c})
}

const wakeConform = `
layer: addresses
number: ST_NUM
street: [DIR_PREFIX, ST_NAME, ST_TYPE]
city: POSTAL_CITY
`

func wakeAddress(id string, g bool, num any, name, city string) ft.Feature {
	p := props("ST_NUM", num, "DIR_PREFIX", "N", "ST_NAME", name, "ST_TYPE", "ST", "POSTAL_CITY", city)
	if g {
		return feature(id, square(-78.6, 35.7, 0.001), p)
	}
	return feature(id, point(-78.6, 35.7, 4326), p)
}

// commonRows reads the feed's rows of common.addresses: id -> "number|street|city|geometry type".
func (b *bundle) commonRows(t *testing.T, feed string) map[string]string {
	t.Helper()
	return b.textMap(t, `SELECT feature_id, concat_ws('|', coalesce(number, '∅'), coalesce(street, '∅'),
		coalesce(city, '∅'), GeometryType(geom)) FROM common.addresses WHERE jurisdiction = 'wake' AND feed = $1`, feed)
}

// conformAll is what conforming the whole layer gives, the oracle the
// incremental rows are held to.
func conformAll(t *testing.T, cc *feeds.CommonConform, fs []ft.Feature) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, f := range fs {
		var p map[string]any
		d := json.NewDecoder(strings.NewReader(string(f.Properties)))
		d.UseNumber()
		if err := d.Decode(&p); err != nil {
			t.Fatal(err)
		}
		m, err := cc.Conform.Apply(p)
		if err != nil {
			t.Fatal(err)
		}
		v := func(s string) string {
			if s == "" {
				return "∅"
			}
			return s
		}
		out[f.ID] = strings.Join([]string{v(m["number"]), v(m["street"]), v(m["city"]), "POINT"}, "|")
	}
	return out
}

func TestCommonLayerFollowsChangesAndDeletes(t *testing.T) {
	b := setup(t)
	feed := feedInfo("addresses")
	feed.Common = addressConform(t, wakeConform)
	layer := []ft.Feature{
		wakeAddress("a1", false, 100, "MAIN", "RALEIGH"),
		wakeAddress("a2", true, json.Number("12"), "OAK", "CARY"),
		wakeAddress("a3", false, "7", "ELM", "APEX"),
	}
	b.poll(t, feed, layer)
	if got, want := b.commonRows(t, feed.Feed), conformAll(t, feed.Common, layer); !maps.Equal(got, want) {
		t.Fatalf("after the first load: %v, want %v", got, want)
	}
	// A polygon's address is a point on its surface.
	if n := b.count(t, `SELECT count(*) FROM common.addresses c JOIN features f USING (jurisdiction, feed, feature_id)
		WHERE c.feature_id = 'a2' AND ST_Intersects(c.geom, f.geom)`); n != 1 {
		t.Fatalf("a2's point is not on its polygon")
	}

	// Poll 2: a1 changes, a3 is deleted, a4 is added; a2 must not be written.
	var a2xmin string
	b.scalar(t, &a2xmin, `SELECT xmin::text FROM common.addresses WHERE feature_id = 'a2'`)
	layer = []ft.Feature{
		wakeAddress("a1", false, 102, "MAIN", "RALEIGH"),
		layer[1],
		wakeAddress("a4", false, 9, "PINE", "GARNER"),
	}
	b.poll(t, feed, layer)
	if got, want := b.commonRows(t, feed.Feed), conformAll(t, feed.Common, layer); !maps.Equal(got, want) {
		t.Fatalf("after a change and a delete: %v, want %v", got, want)
	}
	var xmin string
	b.scalar(t, &xmin, `SELECT xmin::text FROM common.addresses WHERE feature_id = 'a2'`)
	if xmin != a2xmin {
		t.Errorf("the unchanged feature a2's common row was rewritten")
	}

	// Poll 3: unchanged; nothing is written.
	var before string
	b.scalar(t, &before, `SELECT string_agg(xmin::text, ',' ORDER BY feature_id) FROM common.addresses`)
	b.poll(t, feed, layer)
	var after string
	b.scalar(t, &after, `SELECT string_agg(xmin::text, ',' ORDER BY feature_id) FROM common.addresses`)
	if after != before {
		t.Errorf("an unchanged poll rewrote common rows")
	}
}

func TestCommonLayerFaultLeavesBothUntouched(t *testing.T) {
	b := setup(t)
	feed := feedInfo("addresses")
	feed.Common = addressConform(t, wakeConform)
	first := []ft.Feature{wakeAddress("a1", false, 100, "MAIN", "RALEIGH"), wakeAddress("a2", false, 5, "OAK", "CARY")}
	b.poll(t, feed, first)
	// The fault: the common layer refuses any write, after the feed's rows
	// were written by the same apply.
	if _, err := b.pool.Exec(b.ctx, `
		CREATE FUNCTION pg_temp_fault() RETURNS trigger LANGUAGE plpgsql AS $$
		BEGIN RAISE EXCEPTION 'injected fault'; END $$;
		CREATE TRIGGER fault BEFORE INSERT OR UPDATE OR DELETE ON common.addresses
		FOR EACH ROW EXECUTE FUNCTION pg_temp_fault()`); err != nil {
		t.Fatal(err)
	}
	id := b.stage(t, feed, []ft.Feature{wakeAddress("a1", false, 101, "MAIN", "RALEIGH")})
	if _, err := b.store.Apply(b.ctx, id, feed); err == nil || !strings.Contains(err.Error(), "injected fault") {
		t.Fatalf("apply: %v, want the injected fault", err)
	}
	if n := b.count(t, `SELECT count(*) FROM features WHERE feed = 'addresses'`); n != 2 {
		t.Errorf("the feed has %d features after the failed apply, want its 2", n)
	}
	if n := b.count(t, `SELECT count(*) FROM features WHERE feed = 'addresses' AND properties ->> 'ST_NUM' = '100'`); n != 1 {
		t.Errorf("a1 changed in the feed despite the failed apply")
	}
	if got, want := b.commonRows(t, feed.Feed), conformAll(t, feed.Common, first); !maps.Equal(got, want) {
		t.Errorf("common rows after the failed apply: %v, want %v", got, want)
	}
}

func TestCommonLayerConformChangeAndPrune(t *testing.T) {
	b := setup(t)
	feed := feedInfo("addresses")
	feed.Common = addressConform(t, wakeConform)
	layer := []ft.Feature{wakeAddress("a1", false, 100, "MAIN", "RALEIGH"), wakeAddress("a2", false, 5, "OAK", "CARY")}
	b.poll(t, feed, layer)

	// The conform changes, the layer does not: every row is conformed again.
	feed.Common = addressConform(t, "layer: addresses\nnumber: ST_NUM\nstreet: ST_NAME\ncity: POSTAL_CITY\n")
	b.poll(t, feed, layer)
	if got, want := b.commonRows(t, feed.Feed), conformAll(t, feed.Common, layer); !maps.Equal(got, want) {
		t.Fatalf("after the conform changed: %v, want %v", got, want)
	}

	// Another feed stays; this one leaves the configuration.
	other := feedInfo("other")
	other.Common = feed.Common
	last, _ := b.poll(t, other, layer)
	if _, err := b.store.Prune(b.ctx, []feeds.FeedInfo{other}, false); err != nil {
		t.Fatal(err)
	}
	if got := b.commonRows(t, feed.Feed); len(got) != 0 {
		t.Errorf("the pruned feed keeps common rows %v", slices.Sorted(maps.Keys(got)))
	}
	// Its past stays: the layer as of before the prune has its rows.
	if got, want := b.commonAsOf(t, feed.Feed, b.appliedAt(t, last)), conformAll(t, feed.Common, layer); !maps.Equal(got, want) {
		t.Errorf("the pruned feed's rows as of before the prune: %v, want %v", got, want)
	}
	if got := b.commonRows(t, other.Feed); len(got) != 2 {
		t.Errorf("the kept feed has %d common rows, want 2", len(got))
	}

	// A feed whose conform is removed loses its rows at its next apply.
	other.Common = nil
	b.poll(t, other, layer)
	if got := b.commonRows(t, other.Feed); len(got) != 0 {
		t.Errorf("a feed without a conform keeps common rows %v", got)
	}
}

// An operator accepts a held snapshot without the configuration at hand:
// the removed features' rows go at once, and the next applied poll
// conforms the feed's rows in full.
func TestCommonLayerAcceptedHeldSnapshot(t *testing.T) {
	b := setup(t)
	feed := feedInfo("addresses")
	feed.Common = addressConform(t, wakeConform)
	var layer []ft.Feature
	for _, id := range []string{"a1", "a2", "a3", "a4"} {
		layer = append(layer, wakeAddress(id, false, 1, "MAIN", "RALEIGH"))
	}
	b.poll(t, feed, layer)
	// Three of four removed, one modified: held as a shrink.
	shrunk := []ft.Feature{wakeAddress("a1", false, 2, "MAIN", "RALEIGH")}
	id := b.stage(t, feed, shrunk)
	if _, err := b.store.Apply(b.ctx, id, feed); err == nil {
		t.Fatal("the shrinking snapshot was not held")
	}
	if _, err := b.store.AcceptHeld(b.ctx, "wake", feed.Feed); err != nil {
		t.Fatal(err)
	}
	// a1's row is the one conformed before: stale until the next poll.
	if got, want := b.commonRows(t, feed.Feed), conformAll(t, feed.Common, layer[:1]); !maps.Equal(got, want) {
		t.Fatalf("after the accepted snapshot the common layer holds %v, want a1's old row %v", got, want)
	}
	// The next poll changes nothing in the feed, yet conforms a1 again.
	b.poll(t, feed, shrunk)
	if got, want := b.commonRows(t, feed.Feed), conformAll(t, feed.Common, shrunk); !maps.Equal(got, want) {
		t.Fatalf("after the next poll: %v, want %v", got, want)
	}
}

// An operator accepts a held snapshot with the feed's conform at hand
// (ingestd held accept reads the configuration): the common rows follow
// the snapshot in the accept's transaction, the modified feature's row
// conformed again, the removed ones' deleted, and the next unchanged poll
// writes nothing.
func TestCommonLayerAcceptedHeldWithConform(t *testing.T) {
	b := setup(t)
	feed := feedInfo("addresses")
	feed.Common = addressConform(t, wakeConform)
	var layer []ft.Feature
	for _, id := range []string{"a1", "a2", "a3", "a4", "a5", "a6"} {
		layer = append(layer, wakeAddress(id, false, 1, "MAIN", "RALEIGH"))
	}
	b.poll(t, feed, layer)
	shrunk := []ft.Feature{wakeAddress("a1", false, 2, "ELM", "RALEIGH"), wakeAddress("a7", true, 5, "OAK", "CARY")}
	id := b.stage(t, feed, shrunk)
	if _, err := b.store.Apply(b.ctx, id, feed); err == nil {
		t.Fatal("the shrinking snapshot was not held")
	}
	if _, err := b.store.AcceptHeldWith(b.ctx, "wake", feed.Feed, feed.Common); err != nil {
		t.Fatal(err)
	}
	if got, want := b.commonRows(t, feed.Feed), conformAll(t, feed.Common, shrunk); !maps.Equal(got, want) {
		t.Fatalf("after the accepted snapshot: %v, want %v", got, want)
	}
	var before string
	b.scalar(t, &before, `SELECT string_agg(xmin::text, ',' ORDER BY feature_id) FROM common.addresses`)
	b.poll(t, feed, shrunk)
	var after string
	b.scalar(t, &after, `SELECT string_agg(xmin::text, ',' ORDER BY feature_id) FROM common.addresses`)
	if after != before {
		t.Errorf("the poll after the accept conformed the feed again")
	}
}

// A layer the configuration declares: typed columns, a multipolygon
// geometry; a feature whose conformed value its type cannot hold is
// skipped, named with the column in the poll's warning, and the rest
// applies.
func TestCommonLayerDeclared(t *testing.T) {
	b := setup(t)
	var logs bytes.Buffer
	b.store = postgis.New(b.pool, postgis.WithLogger(slog.New(slog.NewTextHandler(&logs, nil))))
	cfg, err := config.Parse("zoning.yaml", []byte(`
layers:
  - name: zoning
    geometry: multipolygon
    columns: {code: text, max_height: integer}
jurisdictions:
  - id: wake
    feeds:
      - id: zoning
        kind: wfs
        url: http://127.0.0.1:1/wfs
        type_name: zoning
        conform:
          layer: zoning
          code: ZONE
          max_height: HEIGHT
`), func(string) (string, bool) { return "", false })
	if err != nil {
		t.Fatal(err)
	}
	feed := feedInfo("zoning")
	feed.Common = feeds.NewCommonConform(cfg.Jurisdictions[0].Feeds[0].Conform)
	b.poll(t, feed, []ft.Feature{
		feature("z1", square(-78.6, 35.7, 0.01), props("ZONE", "R-4", "HEIGHT", 40)),
		feature("z2", square(-78.5, 35.7, 0.01), props("ZONE", "CX", "HEIGHT", nil)),
	})
	var got string
	b.scalar(t, &got, `SELECT string_agg(concat_ws('|', feature_id, code, coalesce(max_height::text, '∅'),
		GeometryType(geom), pg_typeof(max_height)), ',' ORDER BY feature_id) FROM common.zoning`)
	if want := "z1|R-4|40|MULTIPOLYGON|integer,z2|CX|∅|MULTIPOLYGON|integer"; got != want {
		t.Fatalf("common.zoning: %s, want %s", got, want)
	}
	id := b.stage(t, feed, []ft.Feature{
		feature("z1", square(-78.6, 35.7, 0.01), props("ZONE", "R-4", "HEIGHT", "tall")),
		feature("z2", square(-78.5, 35.7, 0.01), props("ZONE", "CX", "HEIGHT", nil)),
	})
	if _, err = b.store.Apply(b.ctx, id, feed); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(logs.String(), `feature_id=z1 error="conformed max_height \"tall\" is not a value of the integer column of common layer zoning"`) {
		t.Errorf("the warning does not name the feature, the column and the value:\n%s", logs.String())
	}
	b.scalar(t, &got, `SELECT string_agg(feature_id, ',' ORDER BY feature_id) FROM common.zoning`)
	if got != "z2" {
		t.Errorf("common.zoning holds %s, want z2 (z1 skipped)", got)
	}
}

// Twenty polls of a layer that changes at random (features added, some of
// them ids removed earlier, removed, modified in properties or geometry,
// some polls unchanged): after each, the feed's common rows are what
// conforming the whole layer gives.
func TestCommonLayerRandomRounds(t *testing.T) {
	b := setup(t)
	feed := feedInfo("sim")
	feed.Common = addressConform(t, "layer: addresses\nnumber: value\nstreet: owner\n")
	sim := newLayerSim(38, 40)
	for round := range 20 {
		snap := sim.snapshot()
		b.poll(t, feed, snap)
		got, want := b.commonRows(t, feed.Feed), conformAll(t, feed.Common, snap)
		if len(got) != len(want) {
			t.Fatalf("round %d: %d common rows, want %d", round, len(got), len(want))
		}
		for id, w := range want {
			if got[id] != w {
				t.Fatalf("round %d: %s is %q, want %q", round, id, got[id], w)
			}
		}
		sim.step()
	}
}

// An incremental (delta) poll: the server lists the ids it still has and
// sends only what changed; the common rows follow the composed snapshot.
func TestCommonLayerDeltaApply(t *testing.T) {
	b := setup(t)
	feed := feedInfo("delta")
	feed.Common = addressConform(t, wakeConform)
	stored := []ft.Feature{
		wakeAddress("a", false, 1, "MAIN", "RALEIGH"),
		wakeAddress("b", false, 2, "OAK", "CARY"),
		wakeAddress("c", true, 3, "ELM", "APEX"),
	}
	b.poll(t, feed, stored)
	edit := wakeAddress("b", false, 20, "OAK", "CARY")
	added := wakeAddress("d", true, 4, "PINE", "APEX")
	id := b.stage(t, feed, []ft.Feature{edit, added})
	if _, err := b.store.ComposeDelta(b.ctx, id, feed, source.Delta{IDs: source.IDs{Text: []string{"a", "b", "d"}},
		Since: source.Watermark{Field: ":updated_at", Value: "2026-12-01T18:00:00Z"}}, nil); err != nil {
		t.Fatal(err)
	}
	res, err := b.store.Apply(b.ctx, id, feed)
	if err != nil || res.Modified != 1 || res.Removed != 1 || res.Added != 1 {
		t.Fatalf("Apply = %+v, %v; want b modified, c removed, d added", res, err)
	}
	want := conformAll(t, feed.Common, []ft.Feature{stored[0], edit, added})
	if got := b.commonRows(t, feed.Feed); !maps.Equal(got, want) {
		t.Fatalf("after the delta: %v, want %v", got, want)
	}
}

// A full conform writes its rows through COPY's text format: ids and
// values holding its special characters (tab, newline, carriage return,
// backslash, "\N") arrive as they are, and an empty value as NULL.
func TestCommonLayerFullConformEscapes(t *testing.T) {
	b := setup(t)
	feed := feedInfo("escapes")
	feed.Common = addressConform(t, wakeConform)
	layer := []ft.Feature{
		wakeAddress("a\t1", false, 100, "MAIN\tST", "RAL\\EIGH"),
		wakeAddress("a\n2", true, "12", "OAK\r\nAVE", `\N`),
		wakeAddress(`a\3`, false, "", `C:\x`, ""),
	}
	b.poll(t, feed, layer)
	if got, want := b.commonRows(t, feed.Feed), conformAll(t, feed.Common, layer); !maps.Equal(got, want) {
		t.Fatalf("common rows: %v, want %v", got, want)
	}
	if n := b.count(t, `SELECT count(*) FROM common.addresses WHERE feed = 'escapes' AND number IS NULL AND city IS NULL`); n != 1 {
		t.Fatalf("%d rows with empty number and city stored as NULL, want 1", n)
	}
}

// A feature that does not conform, pages into a full conform (which
// conforms a page in a goroutine while fetching the next), is skipped and
// counted, as anywhere else (docs/decisions/0156): the first load applies
// with every other feature's row, and another feed's rows are as they were.
func TestCommonLayerFullConformSkipsLate(t *testing.T) {
	b := setup(t)
	other := feedInfo("other")
	other.Common = addressConform(t, wakeConform)
	b.poll(t, other, []ft.Feature{wakeAddress("o1", false, 1, "OAK", "CARY")})
	feed := feedInfo("late")
	feed.Common = other.Common
	layer := make([]ft.Feature, 5000)
	for i := range layer {
		layer[i] = wakeAddress(fmt.Sprintf("a%04d", i), i%2 == 0, i, "MAIN", "RALEIGH")
	}
	layer[4990] = feature("a4990", point(-78.6, 35.7, 4326), props("ST_NUM", map[string]any{"n": 1}, "ST_NAME", "MAIN"))
	id := b.stage(t, feed, layer[:2500], layer[2500:])
	if _, err := b.store.Apply(b.ctx, id, feed); err != nil {
		t.Fatalf("apply: %v", err)
	}
	if n := b.count(t, `SELECT common_skipped FROM polls WHERE id = $1`, id); n != 1 {
		t.Errorf("polls.common_skipped = %d, want 1", n)
	}
	if n := b.count(t, `SELECT count(*) FROM common.addresses WHERE feed = 'late' AND feature_id = 'a4990'`); n != 0 {
		t.Errorf("the skipped feature has %d rows", n)
	}
	if got := b.textMap(t, `SELECT feed, count(*)::text FROM common.addresses GROUP BY feed`); !maps.Equal(got, map[string]string{"other": "1", "late": "4999"}) {
		t.Errorf("common rows by feed: %v, want other 1, late 4999", got)
	}
}
