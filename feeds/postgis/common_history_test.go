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
	"time"

	"github.com/ingestd/ingestd/config"
	ft "github.com/ingestd/ingestd/feature"
	"github.com/ingestd/ingestd/feeds"
	"github.com/ingestd/ingestd/feeds/postgis"
)

// commonAsOf reads ingestd_layer_as_of(at, NULL::common.addresses) for
// the feed, in commonRows' shape.
func (b *bundle) commonAsOf(t *testing.T, feed string, at time.Time) map[string]string {
	t.Helper()
	return b.textMap(t, `SELECT feature_id, concat_ws('|', coalesce(number, '∅'), coalesce(street, '∅'),
		coalesce(city, '∅'), GeometryType(geom)) FROM ingestd_layer_as_of($1, NULL::common.addresses)
		WHERE jurisdiction = 'wake' AND feed = $2`, at, feed)
}

// appliedAt is when poll id's apply ran (its transaction's time).
func (b *bundle) appliedAt(t *testing.T, id int64) time.Time {
	t.Helper()
	var at time.Time
	b.scalar(t, &at, `SELECT finished_at FROM polls WHERE id = $1`, id)
	return at
}

// commonChanges lists ingestd_common_changes_since for the feed as
// "poll:id:change:old number→new number".
func (b *bundle) commonChanges(t *testing.T, feed string, after int64) []string {
	t.Helper()
	rows, err := b.pool.Query(b.ctx, `SELECT poll_id, feature_id, change,
		coalesce(old_values ->> 'number', '∅'), coalesce(new_values ->> 'number', '∅'),
		(old_geom IS NULL) = (change = 'added'), (new_geom IS NULL) = (change = 'removed')
		FROM ingestd_common_changes_since('wake', $1, $2)`, feed, after)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var poll int64
		var id, change, old, new string
		var oldGeom, newGeom bool
		if err := rows.Scan(&poll, &id, &change, &old, &new, &oldGeom, &newGeom); err != nil {
			t.Fatal(err)
		}
		if !oldGeom || !newGeom {
			t.Errorf("poll %d %s %s: old or new geometry missing where the version exists", poll, id, change)
		}
		out = append(out, fmt.Sprintf("%d:%s:%s:%s→%s", poll, id, change, old, new))
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// The common layer as of any time is what conforming the layer applied
// then gives: between polls, at each poll, before the first; a feature
// modified only in a property the conform does not read makes no version.
// Its change feed lists what each poll changed in the common rows.
func TestCommonLayerAsOfAndChanges(t *testing.T) {
	b := setup(t)
	feed := feedInfo("addresses")
	feed.Common = addressConform(t, wakeConform)
	l1 := []ft.Feature{
		wakeAddress("a1", false, 100, "MAIN", "RALEIGH"),
		wakeAddress("a2", true, 12, "OAK", "CARY"),
		wakeAddress("a3", false, 7, "ELM", "APEX"),
	}
	p1, _ := b.poll(t, feed, l1)
	l2 := []ft.Feature{
		wakeAddress("a1", false, 102, "MAIN", "RALEIGH"),
		l1[1],
		wakeAddress("a4", false, 9, "PINE", "GARNER"),
	}
	p2, _ := b.poll(t, feed, l2)
	versions := b.count(t, `SELECT count(*) FROM common_history`)
	if versions != 2 {
		t.Fatalf("after poll 2 common_history holds %d versions, want a1's and a3's", versions)
	}
	// a2 changes in a property the conform does not read.
	noted := l2[1]
	noted.Properties = props("ST_NUM", 12, "DIR_PREFIX", "N", "ST_NAME", "OAK", "ST_TYPE", "ST", "POSTAL_CITY", "CARY", "NOTE", "gate")
	l3 := []ft.Feature{l2[0], noted, l2[2]}
	p3, res := b.poll(t, feed, l3)
	if res.Modified != 1 {
		t.Fatalf("poll 3 modified %d features, want a2", res.Modified)
	}
	if n := b.count(t, `SELECT count(*) FROM common_history`); n != versions {
		t.Errorf("a feature modified outside the conform's fields made %d common versions", n-versions)
	}

	t1, t2, t3 := b.appliedAt(t, p1), b.appliedAt(t, p2), b.appliedAt(t, p3)
	for _, c := range []struct {
		name  string
		at    time.Time
		layer []ft.Feature
	}{
		{"before the first poll", t1.Add(-time.Microsecond), nil},
		{"at poll 1", t1, l1},
		{"between polls 1 and 2", t1.Add(t2.Sub(t1) / 2), l1},
		{"at poll 2", t2, l2},
		{"at poll 3", t3, l3},
		{"now", time.Now(), l3},
	} {
		if got, want := b.commonAsOf(t, feed.Feed, c.at), conformAll(t, feed.Common, c.layer); !maps.Equal(got, want) {
			t.Errorf("%s: %v, want %v", c.name, got, want)
		}
	}

	want := []string{
		fmt.Sprintf("%d:a1:modified:100→102", p2),
		fmt.Sprintf("%d:a3:removed:7→∅", p2),
		fmt.Sprintf("%d:a4:added:∅→9", p2),
	}
	if got := b.commonChanges(t, feed.Feed, p1); !slices.Equal(got, want) {
		t.Errorf("changes since poll 1: %q, want %q", got, want)
	}
	if got := b.commonChanges(t, feed.Feed, p2); len(got) != 0 {
		t.Errorf("changes since poll 2: %q, want none", got)
	}
	// The same from Go, as GeoJSON lines.
	lines := commonChangeLines(t, b, feed.Feed, p1)
	if want := []string{"a1 modified addresses", "a3 removed addresses", "a4 added addresses"}; !slices.Equal(lines, want) {
		t.Errorf("CommonChangesSince: %q, want %q", lines, want)
	}

	// A conform that changes and gives the same rows (a column no feature
	// fills): every row is conformed again, none changed.
	feed.Common = addressConform(t, wakeConform+"postcode: ZIP\n")
	p4, _ := b.poll(t, feed, l3)
	if got := b.commonChanges(t, feed.Feed, p3); len(got) != 0 {
		t.Errorf("a conform giving the same rows listed changes %q (poll %d)", got, p4)
	}
	if got, want := b.commonAsOf(t, feed.Feed, t3), conformAll(t, feed.Common, l3); !maps.Equal(got, want) {
		t.Errorf("at poll 3 after the conform changed: %v, want %v", got, want)
	}

}

// A row type that is not a common layer's is refused by name.
func TestCommonAsOfRefusesOtherRowTypes(t *testing.T) {
	b := setup(t)
	if _, err := b.pool.Exec(b.ctx, `SELECT * FROM ingestd_layer_as_of(now(), NULL::ingestd.polls)`); err == nil ||
		!strings.Contains(err.Error(), "is not a common layer") {
		t.Errorf("as of with a feed's row type: %v", err)
	}
}

// commonChangeLines is Store.CommonChangesSince of wake/feed after poll
// after, a line "id change layer" per change.
func commonChangeLines(t *testing.T, b *bundle, feed string, after int64) []string {
	t.Helper()
	var lines []string
	if err := b.store.CommonChangesSince(b.ctx, "wake", feed, after, func(line []byte) error {
		var f struct {
			ID         string
			Properties struct {
				Change, Layer string
				New           map[string]any
			}
		}
		if err := json.Unmarshal(line, &f); err != nil {
			return err
		}
		lines = append(lines, f.ID+" "+f.Properties.Change+" "+f.Properties.Layer)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return lines
}

// History retention follows the feed's history: keep: a feed with
// history off keeps no common versions and makes the layer exact only from
// its write on; pruning deletes the common versions with the feed's and
// moves the layer's exactness past them.
func TestCommonHistoryPruneAndOff(t *testing.T) {
	b := setup(t)
	feed := feedInfo("addresses")
	feed.Common = addressConform(t, wakeConform)
	feed.History = config.History{Off: true}
	b.poll(t, feed, []ft.Feature{wakeAddress("a1", false, 1, "MAIN", "RALEIGH"), wakeAddress("a2", false, 2, "OAK", "CARY")})
	l2 := []ft.Feature{wakeAddress("a1", false, 10, "MAIN", "RALEIGH"), wakeAddress("a2", false, 2, "OAK", "CARY")}
	p2, _ := b.poll(t, feed, l2)
	if n := b.count(t, `SELECT count(*) FROM common_history`); n != 0 {
		t.Errorf("history off kept %d common versions", n)
	}
	var from time.Time
	b.scalar(t, &from, `SELECT history_from FROM common_layers WHERE layer = 'addresses'`)
	t2 := b.appliedAt(t, p2)
	if !from.Equal(t2) {
		t.Errorf("common_layers.history_from = %v, want poll 2's apply %v", from, t2)
	}

	feed.History = config.History{Keep: 24 * time.Hour}
	l3 := []ft.Feature{wakeAddress("a1", false, 11, "MAIN", "RALEIGH"), l2[1]}
	p3, _ := b.poll(t, feed, l3)
	if n := b.count(t, `SELECT count(*) FROM common_history WHERE feed = 'addresses'`); n != 1 {
		t.Fatalf("%d common versions, want a1's", n)
	}
	if got, want := b.commonAsOf(t, feed.Feed, t2), conformAll(t, feed.Common, l2); !maps.Equal(got, want) {
		t.Errorf("as of poll 2: %v, want %v", got, want)
	}
	// Two days on, a1's old version is past retention.
	t3 := b.appliedAt(t, p3)
	if _, err := b.store.PruneHistory(b.ctx, t3.Add(48*time.Hour)); err != nil {
		t.Fatal(err)
	}
	if n := b.count(t, `SELECT count(*) FROM common_history`); n != 0 {
		t.Errorf("%d common versions left after the prune, want 0", n)
	}
	if _, err := b.pool.Exec(b.ctx, `SELECT * FROM ingestd_layer_as_of($1, NULL::common.addresses)`, t3); err == nil ||
		!strings.Contains(err.Error(), "common layer addresses has no complete history before") {
		t.Errorf("as of before the prune's cutoff: %v, want it refused", err)
	}
	if got, want := b.commonAsOf(t, feed.Feed, t3.Add(24*time.Hour)), conformAll(t, feed.Common, l3); !maps.Equal(got, want) {
		t.Errorf("as of the cutoff: %v, want %v", got, want)
	}
}

// A feature the conform cannot map is skipped, not a failed apply: it has
// no row, the poll counts it and one log line names the feed and the
// feature; a feature that had a row and then cannot be mapped loses it.
// A page of skipped features does not end the paging of a poll's changes.
func TestCommonLayerSkipsUnmappable(t *testing.T) {
	b := setup(t)
	var logs bytes.Buffer
	b.store = postgis.New(b.pool, postgis.WithLogger(slog.New(slog.NewTextHandler(&logs, nil))))
	feed := feedInfo("addresses")
	feed.Common = addressConform(t, wakeConform)
	unmappable := func(id string) ft.Feature {
		return feature(id, point(-78.6, 35.7, 4326), props("ST_NUM", map[string]any{"a": 1}, "ST_NAME", "MAIN"))
	}
	// One more than a page of the poll's changes.
	const n = 2001
	var layer []ft.Feature
	for i := range n {
		layer = append(layer, wakeAddress(fmt.Sprintf("a%04d", i), false, i, "MAIN", "RALEIGH"))
	}
	layer[1] = unmappable(layer[1].ID)
	p1, _ := b.poll(t, feed, layer)
	want := conformAll(t, feed.Common, slices.Delete(slices.Clone(layer), 1, 2))
	if got := b.commonRows(t, feed.Feed); !maps.Equal(got, want) {
		t.Fatalf("after the first load: %d rows, want %d (a0001 skipped)", len(got), len(want))
	}
	if n := b.count(t, `SELECT common_skipped FROM polls WHERE id = $1`, p1); n != 1 {
		t.Errorf("polls.common_skipped = %d, want 1", n)
	}
	if !strings.Contains(logs.String(), `feed=addresses`) || !strings.Contains(logs.String(), `feature_id=a0001`) ||
		!strings.Contains(logs.String(), `skipped=1`) {
		t.Errorf("the log does not name the feed and the skipped feature:\n%s", logs.String())
	}

	// Every feature but the last (in id order) becomes unmappable, the
	// last one changes, a0001 maps again.
	next := make([]ft.Feature, n)
	for i := range n - 1 {
		next[i] = unmappable(layer[i].ID)
	}
	next[1] = wakeAddress("a0001", false, 1, "MAIN", "RALEIGH")
	next[n-1] = wakeAddress(layer[n-1].ID, false, 99999, "RENAMED", "RALEIGH")
	p2, _ := b.poll(t, feed, next)
	want = conformAll(t, feed.Common, []ft.Feature{next[1], next[n-1]})
	if got := b.commonRows(t, feed.Feed); !maps.Equal(got, want) {
		t.Errorf("after the incremental poll: %d rows %v…, want %v", len(got), slices.Sorted(maps.Keys(got))[:min(3, len(got))], want)
	}
	if n := b.count(t, `SELECT common_skipped FROM polls WHERE id = $1`, p2); n != 1999 {
		t.Errorf("polls.common_skipped = %d, want 1999", n)
	}
}

// Two counties' feeds, each with its own conform, fill common.addresses;
// their polls interleave. The region as of any apply is the union of what
// conforming each county's layer applied then gives.
func TestCommonLayerAsOfRegion(t *testing.T) {
	b := setup(t)
	wake := feedInfo("addresses")
	wake.Common = addressConform(t, wakeConform)
	durham := feedInfo("addresses")
	durham.Jurisdiction = "durham"
	durham.Common = addressConform(t, "layer: addresses\nnumber: ADDR_NUM\nstreet: FULL_STREET\ncity: MUNI\n")
	durhamAddress := func(id string, num int, street string) ft.Feature {
		return feature(id, point(-78.9, 36.0, 4326), props("ADDR_NUM", num, "FULL_STREET", street, "MUNI", "DURHAM"))
	}
	// region reads the layer as of at: "jurisdiction/id" -> "number|street|city".
	region := func(at time.Time) map[string]string {
		return b.textMap(t, `SELECT jurisdiction || '/' || feature_id, concat_ws('|', number, street, city)
			FROM ingestd_layer_as_of($1, NULL::common.addresses)`, at)
	}
	var times []time.Time
	var want []map[string]string
	cur := map[string]string{}
	apply := func(feed feeds.FeedInfo, layer []ft.Feature, conformed func(ft.Feature) string) {
		id, _ := b.poll(t, feed, layer)
		for k := range cur {
			if strings.HasPrefix(k, feed.Jurisdiction+"/") {
				delete(cur, k)
			}
		}
		for _, f := range layer {
			cur[feed.Jurisdiction+"/"+f.ID] = conformed(f)
		}
		times = append(times, b.appliedAt(t, id))
		want = append(want, maps.Clone(cur))
	}
	wakeRow := func(street string) func(ft.Feature) string {
		return func(f ft.Feature) string {
			var p map[string]any
			_ = json.Unmarshal(f.Properties, &p)
			return fmt.Sprintf("%v|N %s ST|RALEIGH", p["ST_NUM"], street)
		}
	}
	durhamRow := func(f ft.Feature) string {
		var p map[string]any
		_ = json.Unmarshal(f.Properties, &p)
		return fmt.Sprintf("%v|%v|DURHAM", p["ADDR_NUM"], p["FULL_STREET"])
	}
	apply(wake, []ft.Feature{wakeAddress("1", false, 1, "MAIN", "RALEIGH"), wakeAddress("2", false, 2, "MAIN", "RALEIGH")}, wakeRow("MAIN"))
	apply(durham, []ft.Feature{durhamAddress("1", 10, "ROXBORO ST"), durhamAddress("9", 90, "MAIN ST")}, durhamRow)
	apply(wake, []ft.Feature{wakeAddress("2", false, 2, "OAK", "RALEIGH"), wakeAddress("3", false, 3, "OAK", "RALEIGH")}, wakeRow("OAK"))
	apply(durham, []ft.Feature{durhamAddress("9", 91, "MAIN ST")}, durhamRow)
	for i, at := range times {
		if got := region(at); !maps.Equal(got, want[i]) {
			t.Errorf("as of apply %d: %v, want %v", i+1, got, want[i])
		}
	}
}
