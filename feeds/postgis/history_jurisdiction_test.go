package postgis_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	ft "github.com/ingestd/ingestd/feature"
	"github.com/ingestd/ingestd/feeds"
)

// A feed's superseded versions land in its jurisdiction's history table
// (<schema>.ingestd_history), not in ingestd's schema; the
// feature_history view and the history functions answer from it as from
// the one table before; a query on the view naming a feed, and each
// history function, lock no other jurisdiction's history table; and when
// the layer moves to another schema its history moves with it.
func TestHistoryLivesInJurisdictionSchema(t *testing.T) {
	t.Parallel()
	b := setup(t)
	wake, durham := feedInfo("parcels"), feedInfo("parcels")
	durham.Jurisdiction = "durham"
	for _, f := range []feeds.FeedInfo{wake, durham} {
		b.poll(t, f, []ft.Feature{
			feature("a", point(1, 1, 4326), json.RawMessage(`{"n":1}`)),
			feature("b", point(2, 2, 4326), json.RawMessage(`{"n":2}`)),
		})
		b.poll(t, f, []ft.Feature{feature("a", point(1, 1, 4326), json.RawMessage(`{"n":10}`))})
	}

	for _, schema := range []string{"wake", "durham"} {
		got := b.textMap(t, `SELECT feature_id, ended_by || ' ' || properties::text FROM `+schema+`.ingestd_history WHERE feed = 'parcels'`)
		if got["a"] != `modified {"n": 1}` || got["b"] != `removed {"n": 2}` || len(got) != 2 {
			t.Errorf("%s.ingestd_history: %v, want a modified, b removed", schema, got)
		}
	}
	if n := b.count(t, `SELECT count(*) FROM pg_class WHERE relname = 'feature_history' AND relkind = 'r'`); n != 0 {
		t.Errorf("a table named feature_history remains")
	}
	if got := b.textMap(t, `SELECT feature_id, ended_by FROM feature_history WHERE jurisdiction = 'wake' AND feed = 'parcels'`); len(got) != 2 || got["b"] != "removed" {
		t.Errorf("the feature_history view for wake/parcels: %v", got)
	}
	if n := b.count(t, `SELECT count(*) FROM feature_history`); n != 4 {
		t.Errorf("the feature_history view has %d rows, want 4", n)
	}
	var props string
	b.scalar(t, &props, `SELECT string_agg(properties::text, ' ' ORDER BY valid_from) FROM ingestd_feature_history('durham', 'parcels', 'a')`)
	if props != `{"n": 1} {"n": 10}` {
		t.Errorf("ingestd_feature_history(durham, parcels, a): %s", props)
	}

	lockOnlyWake(t, b)

	// The layer moves to another schema: its history goes with it.
	wake.LayerSchema, wake.LayerName = "county", "parcels"
	if err := b.store.RegisterFeeds(b.ctx, []feeds.FeedInfo{wake}); err != nil {
		t.Fatal(err)
	}
	b.poll(t, wake, []ft.Feature{feature("a", point(1, 1, 4326), json.RawMessage(`{"n":11}`))})
	if n := b.count(t, `SELECT count(*) FROM wake.ingestd_history WHERE feed = 'parcels'`); n != 0 {
		t.Errorf("wake.ingestd_history keeps %d versions of the moved layer's feed", n)
	}
	b.scalar(t, &props, `SELECT string_agg(properties::text, ' ' ORDER BY valid_from) FROM ingestd_feature_history('wake', 'parcels', 'a')`)
	if props != `{"n": 1} {"n": 10} {"n": 11}` {
		t.Errorf("ingestd_feature_history(wake, parcels, a) after the move: %s", props)
	}
	if n := b.count(t, `SELECT count(*) FROM county.ingestd_history WHERE feed = 'parcels'`); n != 3 {
		t.Errorf("county.ingestd_history has %d versions of wake/parcels, want 3", n)
	}

	// A prune a year on (90 days kept) empties every jurisdiction's table.
	n, err := b.store.PruneHistory(b.ctx, time.Now().AddDate(1, 0, 0))
	if err != nil {
		t.Fatal(err)
	}
	if left := b.count(t, `SELECT (SELECT count(*) FROM county.ingestd_history) + (SELECT count(*) FROM durham.ingestd_history)`); n != 5 || left != 0 {
		t.Errorf("the prune deleted %d versions and left %d; want all 5 deleted", n, left)
	}
}

// lockOnlyWake reads wake/parcels's history by the view and each history
// function, and fails if one locks a relation of schema durham.
func lockOnlyWake(t *testing.T, b *bundle) {
	for _, c := range []struct {
		name, sql string
		args      []any
		want      int
	}{
		{"feature_history view", `SELECT * FROM feature_history WHERE jurisdiction = $1 AND feed = $2`, []any{pgx.QueryExecModeExec, "wake", "parcels"}, 2},
		{"ingestd_feature_history", `SELECT * FROM ingestd_feature_history($1, $2, 'a')`, []any{"wake", "parcels"}, 2},
		{"ingestd_layer_as_of", `SELECT * FROM ingestd_layer_as_of($1, $2, now())`, []any{"wake", "parcels"}, 1},
		{"ingestd_changes_since", `SELECT * FROM ingestd_changes_since($1, $2, 0)`, []any{"wake", "parcels"}, 2 + 2},
	} {
		t.Run(c.name, func(t *testing.T) {
			conn := b.session(t)
			var locked []string
			err := pgx.BeginFunc(b.ctx, conn, func(tx pgx.Tx) error {
				rows, _ := tx.Query(b.ctx, c.sql, c.args...)
				n := 0
				for rows.Next() {
					n++
				}
				if err := rows.Err(); err != nil {
					return err
				}
				if n != c.want {
					t.Errorf("%d rows, want %d", n, c.want)
				}
				rows, _ = tx.Query(b.ctx, `SELECT n.nspname || '.' || c.relname FROM pg_locks l
					JOIN pg_class c ON c.oid = l.relation JOIN pg_namespace n ON n.oid = c.relnamespace
					WHERE l.pid = pg_backend_pid() AND l.locktype = 'relation' AND n.nspname IN ('wake', 'durham')
					ORDER BY 1`)
				var err error
				locked, err = pgx.CollectRows(rows, pgx.RowTo[string])
				return err
			})
			if err != nil {
				t.Fatal(err)
			}
			if len(locked) == 0 {
				t.Fatalf("reading wake/parcels locked nothing in wake: the lock check sees nothing")
			}
			for _, rel := range locked {
				if strings.HasPrefix(rel, "durham.") {
					t.Errorf("reading wake/parcels locked %s (all: %v)", rel, locked)
				}
			}
		})
	}

}
