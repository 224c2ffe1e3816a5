package postgis_test

import (
	"testing"

	"github.com/jackc/pgx/v5"
)

// TestReadsOfOneFeedOpenItsTableOnly: the history and change-feed
// functions lock no other feed's table, also from the sixth run of a
// prepared statement on a connection (when PostgreSQL weighs a generic
// plan), and neither does feature_changes_expanded narrowed to one feed
// by a statement planned with its values. At thousands of feeds every
// other table opened is a lock (BenchmarkReadsAtScale).
func TestReadsOfOneFeedOpenItsTableOnly(t *testing.T) {
	t.Parallel()
	b := setup(t)
	layer := generatePolygons(4)
	for _, name := range []string{"a", "b", "c"} {
		feed := feedInfo(name)
		b.poll(t, feed, layer)
		next := append(layer[:0:0], layer[1:]...)
		next[0].Properties = props("pin", "changed")
		b.poll(t, feed, next)
	}
	var own string
	b.scalar(t, &own, `SELECT ingestd_feed_partition('wake', 'a')`)

	for _, c := range []struct {
		name, sql string
		args      []any
		want      int // rows for feed a
	}{
		{"ingestd_changes_since", `SELECT * FROM ingestd_changes_since($1, $2, 0)`, []any{"wake", "a"}, 4 + 2},
		{"ingestd_feature_history", `SELECT * FROM ingestd_feature_history($1, $2, 'parcel.1')`, []any{"wake", "a"}, 2},
		{"ingestd_layer_as_of", `SELECT * FROM ingestd_layer_as_of($1, $2, now())`, []any{"wake", "a"}, 3},
		// A view is planned by the client's statement: a prepared one
		// is planned generically in time, over every partition, whatever
		// the view says (docs/operations.md: plan_cache_mode).
		{"feature_changes_expanded", `SELECT * FROM feature_changes_expanded WHERE jurisdiction = $1 AND feed = $2`, []any{pgx.QueryExecModeExec, "wake", "a"}, 4 + 2},
	} {
		t.Run(c.name, func(t *testing.T) {
			conn := b.session(t)
			for run := range 7 {
				rows, _ := conn.Query(b.ctx, c.sql, c.args...)
				n := 0
				for rows.Next() {
					n++
				}
				if err := rows.Err(); err != nil {
					t.Fatalf("run %d: %v", run+1, err)
				}
				if n != c.want {
					t.Fatalf("run %d: %d rows, want %d", run+1, n, c.want)
				}
			}
			var others []string
			err := pgx.BeginFunc(b.ctx, conn, func(tx pgx.Tx) error {
				rows, _ := tx.Query(b.ctx, c.sql, c.args...)
				rows.Close()
				if err := rows.Err(); err != nil {
					return err
				}
				rows, _ = tx.Query(b.ctx, `SELECT c.relname::text FROM pg_locks l JOIN pg_class c ON c.oid = l.relation
					WHERE l.pid = pg_backend_pid() AND l.locktype = 'relation'
					  AND c.relkind NOT IN ('p', 'I') -- the parents: no rows of their own
					  AND c.relname LIKE 'features\_%' AND c.relname NOT LIKE $1 || '%'
					ORDER BY 1`, own)
				var err error
				others, err = pgx.CollectRows(rows, pgx.RowTo[string])
				return err
			})
			if err != nil {
				t.Fatal(err)
			}
			if len(others) > 0 {
				t.Errorf("reading feed a locked other feeds' tables or indexes: %v", others)
			}
		})
	}
}
