package postgis_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/ingestd/ingestd/migrations/pgtest"
)

// BenchmarkSafeCasts times each safe cast over 100,000 values of its kind
// in PostgreSQL (count of the cast over a table of jsonb), and reports the
// time per value; "called" is the same cast's body behind a function
// PostgreSQL cannot inline (migration 35 says why it matters), "plain" the
// plain cast a layer refresh reads with where the values convert, and
// "property" the value read from a parcel's properties, as the typed
// select reads it (migration 36):
//
//	go test -run '^$' -bench SafeCasts -benchtime 3x ./feeds/postgis
func BenchmarkSafeCasts(b *testing.B) {
	pool := pgtest.Pool(b)
	ctx := b.Context()
	const n = 100_000
	if _, err := pool.Exec(ctx, `CREATE TABLE cast_values AS SELECT
		to_jsonb(g) AS big, to_jsonb(g / 7.0) AS num, to_jsonb(to_char(date '2000-01-01' + g % 9000, 'YYYY-MM-DD')) AS day,
		to_jsonb(to_char(timestamptz '2000-01-01' + g * interval '1 minute', 'YYYY-MM-DD"T"HH24:MI:SS"Z"')) AS ts
		FROM generate_series(1, $1) g`, n); err != nil {
		b.Fatal(err)
	}
	// The values as a typed select reads them: properties of a parcel, a
	// dozen keys (migration 36: an inlined cast repeats its argument, the
	// property's lookup, wherever its body names it).
	if _, err := pool.Exec(ctx, `ALTER TABLE cast_values ADD COLUMN props jsonb`); err != nil {
		b.Fatal(err)
	}
	if _, err := pool.Exec(ctx, `UPDATE cast_values SET props = jsonb_build_object('PIN', lpad(big::text, 10, '0'),
		'OWNER', 'Example Owner LLC', 'SITE_ADDRESS', big::text || ' Main St', 'ZONING', 'R-4', 'ACRES', num,
		'ASSESSED_VALUE', big, 'YEAR_BUILT', 1990, 'DEED_DATE', day, 'TOWNSHIP', 'Cary', 'EditDate', ts, 'NAME', 'parcel')`); err != nil {
		b.Fatal(err)
	}
	// The pre-35 double, for comparison: a FROM clause keeps it a call.
	if _, err := pool.Exec(ctx, `CREATE FUNCTION called_double(v jsonb) RETURNS double precision
		LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
		SELECT CASE WHEN n = 0 OR abs(n) BETWEEN 1e-307 AND 1e308 THEN n::double precision END
		FROM (SELECT ingestd_as_numeric(v) AS n) x $$`); err != nil {
		b.Fatal(err)
	}
	// The pre-35 timestamptz: the same body, declared IMMUTABLE around a
	// STABLE cast, which PostgreSQL will not inline.
	if _, err := pool.Exec(ctx, `DO $$ BEGIN EXECUTE format(
		'CREATE FUNCTION called_timestamptz(v jsonb) RETURNS timestamptz LANGUAGE sql IMMUTABLE PARALLEL SAFE AS %L',
		(SELECT prosrc FROM pg_proc WHERE proname = 'ingestd_as_timestamptz')); END $$`); err != nil {
		b.Fatal(err)
	}
	for _, c := range []struct{ name, expr string }{
		{"bigint", "ingestd_as_bigint(big)"},
		{"double", "ingestd_as_double(num)"},
		{"double_called", "called_double(num)"},
		{"date", "ingestd_as_date(day)"},
		{"timestamptz", "ingestd_as_timestamptz(ts)"},
		{"timestamptz_called", "called_timestamptz(ts)"},
		{"plain_timestamptz", "(ts #>> '{}')::timestamptz"},
		{"bigint_property", "ingestd_as_bigint(props -> 'ASSESSED_VALUE')"},
		{"plain_bigint_property", "(props ->> 'ASSESSED_VALUE')::bigint"},
		{"timestamptz_property", "ingestd_as_timestamptz(props -> 'EditDate')"},
		{"plain_timestamptz_property", "(props ->> 'EditDate')::timestamptz"},
	} {
		b.Run(c.name, func(b *testing.B) {
			var d time.Duration
			for b.Loop() {
				start := time.Now()
				var got int
				if err := pool.QueryRow(ctx, fmt.Sprintf(`SELECT count(%s) FROM cast_values`, c.expr)).Scan(&got); err != nil {
					b.Fatal(err)
				}
				d += time.Since(start)
				if got != n {
					b.Fatalf("%s: %d values cast of %d", c.expr, got, n)
				}
			}
			b.ReportMetric(float64(d.Nanoseconds())/float64(b.N)/n, "ns/value")
		})
	}
}
