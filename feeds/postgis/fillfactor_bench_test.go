package postgis_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/ingestd/ingestd/migrations/pgtest"
)

// BenchmarkAttributeEdits upserts 500 attribute-edited parcels (geometry
// unchanged) into a 100,000-parcel table keyed and GiST-indexed as a
// feed's, filled to 90 % (FeedTableFillFactor, migration 37) and to 100 %,
// and reports the time per upsert of 500 and the share rewritten on their
// own page without index entries (HOT, the session's own counters):
//
//	go test -run '^$' -bench AttributeEdits -benchtime 4x ./feeds/postgis
func BenchmarkAttributeEdits(b *testing.B) {
	pool := pgtest.Pool(b)
	ctx := b.Context()
	const n, edits = 100_000, 500
	for _, fillfactor := range []int{90, 100} {
		table := fmt.Sprintf("parcels_%d", fillfactor)
		for _, stmt := range []string{
			fmt.Sprintf(`CREATE TABLE %s WITH (fillfactor = %d) AS SELECT 'parcel.' || g AS feature_id,
				ST_MakeEnvelope(-78.9 + (g %% 1000) * 1e-4, 35.7 + (g / 1000) * 1e-4, -78.9 + (g %% 1000) * 1e-4 + 5e-5, 35.7 + (g / 1000) * 1e-4 + 5e-5, 4326) AS geom,
				jsonb_build_object('PIN', lpad(g::text, 10, '0'), 'OWNER', 'Example Owner LLC', 'SITE_ADDRESS', g || ' Main St',
					'ZONING', 'R-4', 'ACRES', g / 7.0, 'ASSESSED_VALUE', g * 100, 'YEAR_BUILT', 1990, 'TOWNSHIP', 'Cary', 'NAME', 'parcel') AS properties,
				sha256(g::text::bytea) AS content_hash, now() AS changed_at
				FROM generate_series(1, %d) g`, table, fillfactor, n),
			fmt.Sprintf(`ALTER TABLE %s ADD PRIMARY KEY (feature_id)`, table),
			fmt.Sprintf(`CREATE INDEX ON %s USING gist (geom)`, table),
			fmt.Sprintf(`VACUUM ANALYZE %s`, table),
		} {
			if _, err := pool.Exec(ctx, stmt); err != nil {
				b.Fatal(err)
			}
		}
		b.Run(fmt.Sprintf("fillfactor_%d", fillfactor), func(b *testing.B) {
			var d time.Duration
			var hot, updated, read int64
			round := 0
			for b.Loop() {
				round++
				tx, err := pool.Begin(ctx)
				if err != nil {
					b.Fatal(err)
				}
				// A different 500 each round, read before the clock.
				tag, err := tx.Exec(ctx, fmt.Sprintf(`CREATE TEMP TABLE edited ON COMMIT DROP AS
					SELECT feature_id, geom, properties || jsonb_build_object('NAME', 'edited %d') AS properties, content_hash
					FROM %s TABLESAMPLE BERNOULLI (1) REPEATABLE (%d) LIMIT %d`, round, table, round, edits))
				if err != nil {
					b.Fatal(err)
				}
				read += tag.RowsAffected()
				// The counters are the session's since its stats were last
				// sent: read before and after.
				var h0, u0 int64
				if err := tx.QueryRow(ctx, `SELECT pg_stat_get_xact_tuples_hot_updated($1::regclass), pg_stat_get_xact_tuples_updated($1::regclass)`,
					table).Scan(&h0, &u0); err != nil {
					b.Fatal(err)
				}
				start := time.Now()
				if _, err := tx.Exec(ctx, fmt.Sprintf(`INSERT INTO %s AS f SELECT e.feature_id, e.geom, e.properties, e.content_hash, now() FROM edited e
					ON CONFLICT (feature_id) DO UPDATE SET geom = excluded.geom, properties = excluded.properties,
						content_hash = excluded.content_hash, changed_at = excluded.changed_at`, table)); err != nil {
					b.Fatal(err)
				}
				d += time.Since(start)
				var h, u int64
				if err := tx.QueryRow(ctx, `SELECT pg_stat_get_xact_tuples_hot_updated($1::regclass), pg_stat_get_xact_tuples_updated($1::regclass)`,
					table).Scan(&h, &u); err != nil {
					b.Fatal(err)
				}
				hot, updated = hot+h-h0, updated+u-u0
				if err := tx.Commit(ctx); err != nil {
					b.Fatal(err)
				}
			}
			if updated != read {
				b.Fatalf("%d rows updated, want the %d edited", updated, read)
			}
			b.ReportMetric(float64(d.Microseconds())/1000/float64(round), "ms/500-upserts")
			b.ReportMetric(100*float64(hot)/float64(updated), "%HOT")
		})
	}
}
