package postgis_test

import (
	"strings"
	"testing"

	"github.com/ingestd/ingestd/feeds/postgis"
)

// layerKeyShape describes the feed's layer table as its key build leaves
// it: each column with its NOT NULL, and its constraints.
func (b *bundle) layerKeyShape(t *testing.T, feed string) string {
	t.Helper()
	var s string
	b.scalar(t, &s, `
		SELECT (SELECT string_agg(attname || ':' || attnotnull, ',' ORDER BY attnum)
				FROM pg_attribute WHERE attrelid = l.oid AND attnum > 0 AND NOT attisdropped)
			|| ' ' || (SELECT string_agg(contype::text || ':' || pg_get_constraintdef(oid), ',' ORDER BY conname)
				FROM pg_constraint WHERE conrelid = l.oid)
		FROM (SELECT to_regclass(layer) AS oid FROM ingestd.feed_layers WHERE jurisdiction = 'wake' AND feed = $1) l`, feed)
	return s
}

// The key built in an ALTER of its own (as on Citus, which refuses ADD
// CONSTRAINT among other subcommands) leaves the layer as the one ALTER
// does: its key, the NOT NULLs, no load column.
func TestFirstLoadSplitKeyBuild(t *testing.T) {
	t.Parallel()
	b := setup(t)
	layer := generatePolygons(20)
	shapes := map[bool]string{}
	for _, split := range []bool{false, true} {
		postgis.SetCitus(b.store, split)
		name := "joined"
		if split {
			name = "split"
		}
		b.poll(t, feedInfo(name), layer)
		shapes[split] = strings.ReplaceAll(b.layerKeyShape(t, name), name, "")
	}
	if shapes[true] != shapes[false] {
		t.Errorf("split key build: %s\nwant (one ALTER): %s", shapes[true], shapes[false])
	}
	for _, want := range []string{"p:PRIMARY KEY (feature_id)", "first_seen_at:true", "changed_at:true", "ingestd_poll:true"} {
		if !strings.Contains(shapes[true], want) {
			t.Errorf("split key build: %s lacks %s", shapes[true], want)
		}
	}
	if strings.Contains(shapes[true], "ingestd_load") {
		t.Errorf("split key build left a load column: %s", shapes[true])
	}
}
