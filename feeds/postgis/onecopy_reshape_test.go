package postgis_test

import (
	"encoding/json"
	"testing"

	ft "github.com/ingestd/ingestd/feature"
)

// grownFeatures are features of every kind of properties (values the
// layer's columns give back and values they do not, a null, a key a row
// lacks, properties that are no object, none at all), with zone, when
// given, set on a, b, c and e as zone(id) says (nil: the key is left out).
func grownFeatures(zone func(id string) json.RawMessage) []ft.Feature {
	props := map[string]map[string]json.RawMessage{
		"a": {"acres": json.RawMessage(`1.50`), "n": json.RawMessage(`1`), "name": json.RawMessage(`"one"`)},
		"b": {"acres": json.RawMessage(`2.25`), "n": json.RawMessage(`2`), "name": json.RawMessage(`null`)},
		"c": {"acres": json.RawMessage(`3.125`), "n": json.RawMessage(`"three"`), "name": json.RawMessage(`"three"`)},
		"d": {"acres": json.RawMessage(`1e3`), "n": json.RawMessage(`4`)},
		"e": {"acres": json.RawMessage(`0.1`), "n": json.RawMessage(`5`), "name": json.RawMessage(`"five"`)},
	}
	var fs []ft.Feature
	for i, id := range []string{"a", "b", "c", "d", "e"} {
		p := props[id]
		if zone != nil {
			if z := zone(id); z != nil {
				p["zone"] = z
			}
		}
		raw, err := json.Marshal(p)
		if err != nil {
			panic(err)
		}
		fs = append(fs, feature(id, multiPoint(float64(i), 35), raw))
	}
	for id, r := range map[string]string{"arr": `[1, {"k": "v"}]`, "str": `"just a string"`, "jnull": `null`} {
		fs = append(fs, feature(id, multiPoint(7, 7), json.RawMessage(r)))
	}
	return append(fs, feature("none", point(-70, 8, 4326), nil))
}

// layerImage is what a feed's layer gives readers: its table's columns
// in order with their types, and per feature the features view's row and
// the layer row's values (typed columns, geometry, hash, rest and absent
// keys; not the times and poll of its writes).
func (b *bundle) layerImage(t *testing.T, feed string) (string, map[string]string) {
	t.Helper()
	var cols string
	b.scalar(t, &cols, `SELECT string_agg(attname || ':' || format_type(atttypid, atttypmod), ',' ORDER BY attnum)
		FROM pg_attribute WHERE attrelid = to_regclass(ingestd_feed_view('wake', $1)) AND attnum > 0 AND NOT attisdropped`, feed)
	var table string
	b.scalar(t, &table, `SELECT ingestd_feed_view('wake', $1)`, feed)
	rows := b.textMap(t, `SELECT feature_id, (to_jsonb(o) - 'first_seen_at' - 'changed_at' - 'ingestd_poll')::text FROM `+table+` o`)
	view := b.textMap(t, `SELECT feature_id, coalesce(properties::text, '-') || ' ' || coalesce(ST_AsEWKT(geom), '-') || ' ' ||
		coalesce(encode(content_hash, 'hex'), '-') FROM features WHERE jurisdiction = 'wake' AND feed = $1`, feed)
	for id, v := range view {
		rows[id] += " | " + v
	}
	return cols, rows
}

// sameLayer fails t unless feeds got and want give readers the same layer.
func (b *bundle) sameLayer(t *testing.T, got, want string) {
	t.Helper()
	gotCols, gotRows := b.layerImage(t, got)
	wantCols, wantRows := b.layerImage(t, want)
	if gotCols != wantCols {
		t.Errorf("%s's columns %s, a first load's %s", got, gotCols, wantCols)
	}
	equalMaps(t, got, gotRows, wantRows)
}

// A refresh that brings a new key adds its column by copying the stored
// rows: the layer is then what a first load of the same snapshot makes,
// in its columns, its rows and the features view.
func TestOneCopyAddedColumnIsAFirstLoad(t *testing.T) {
	t.Parallel()
	b := setupOneCopy(t)
	zone := func(id string) json.RawMessage {
		switch id {
		case "a", "e":
			return json.RawMessage(`"R-4"`)
		}
		return nil
	}
	b.poll(t, feedInfo("grown"), grownFeatures(nil))
	if _, res := b.poll(t, feedInfo("grown"), grownFeatures(zone)); res.Modified != 2 || res.Unchanged != 7 {
		t.Fatalf("refresh with zone: %+v", res)
	}
	b.poll(t, feedInfo("born"), grownFeatures(zone))
	b.sameLayer(t, "grown", "born")
}

// The stored rows a reshape copies carry a new key in their rest when the
// layer kept its shape (a user's view on it): the copy moves each value
// into the new column, or leaves it in the rest when the column does not
// give it back, and records the rows that lack the key.
func TestOneCopyAddedColumnFromTheRest(t *testing.T) {
	t.Parallel()
	b := setupOneCopy(t)
	feed := feedInfo("kept")
	zone := func(id string) json.RawMessage {
		switch id {
		case "a":
			return json.RawMessage(`7`)
		case "b":
			return json.RawMessage(`null`)
		case "c":
			return json.RawMessage(`"12"`)
		case "e":
			return json.RawMessage(`1.0`)
		}
		return nil
	}
	b.poll(t, feed, grownFeatures(nil))
	view := b.viewName(t, feed)
	if _, err := b.pool.Exec(b.ctx, `CREATE VIEW kept_analyst AS SELECT feature_id FROM `+view); err != nil {
		t.Fatal(err)
	}
	b.poll(t, feed, grownFeatures(zone))
	if n := b.count(t, `SELECT count(*) FROM `+view+` WHERE ingestd_rest ? 'zone'`); n != 4 {
		t.Fatalf("%d rows with zone in their rest while the view kept the layer's shape, want 4", n)
	}
	if _, err := b.pool.Exec(b.ctx, `DROP VIEW kept_analyst`); err != nil {
		t.Fatal(err)
	}
	if _, res := b.poll(t, feed, grownFeatures(zone)); res.Unchanged != 9 {
		t.Fatalf("the poll that reshapes: %+v", res)
	}
	b.poll(t, feedInfo("kept_born"), grownFeatures(zone))
	b.sameLayer(t, "kept", "kept_born")
}
