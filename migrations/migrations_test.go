package migrations_test

import (
	"bufio"
	"context"
	"database/sql"
	"fmt"
	"io/fs"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/pgx/v5/stdlib"

	"github.com/ingestd/ingestd/migrations"
	"github.com/ingestd/ingestd/migrations/pgtest"
)

var fileName = regexp.MustCompile(`^(\d{5})_[a-z0-9_]+\.sql$`)

// TestFilesContiguousAndPaired checks the files without a database: versions
// 1..n with no gap or repeat, each with an Up and a Down section that both
// hold a statement.
func TestFilesContiguousAndPaired(t *testing.T) {
	entries, err := fs.ReadDir(migrations.FS, ".")
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) == 0 {
		t.Fatal("no migrations embedded")
	}
	for i, e := range entries {
		m := fileName.FindStringSubmatch(e.Name())
		if m == nil {
			t.Fatalf("%s: want NNNNN_name.sql", e.Name())
		}
		v, _ := strconv.Atoi(m[1])
		if v != i+1 {
			t.Fatalf("%s: version %d, want %d (versions must be contiguous from 1)", e.Name(), v, i+1)
		}
		b, err := migrations.FS.ReadFile(e.Name())
		if err != nil {
			t.Fatal(err)
		}
		sections := map[string]int{} // section -> statement lines
		section := ""
		sc := bufio.NewScanner(strings.NewReader(string(b)))
		for sc.Scan() {
			line := strings.TrimSpace(sc.Text())
			switch {
			case line == "-- +goose Up":
				section = "up"
				sections[section] += 0
			case line == "-- +goose Down":
				section = "down"
				sections[section] += 0
			case line == "" || strings.HasPrefix(line, "--"):
			case section != "":
				sections[section]++
			}
		}
		for _, s := range []string{"up", "down"} {
			if n, ok := sections[s]; !ok || n == 0 {
				t.Errorf("%s: %s section missing or empty", e.Name(), s)
			}
		}
	}
	vs, err := migrations.Versions()
	if err != nil {
		t.Fatal(err)
	}
	if len(vs) != len(entries) {
		t.Fatalf("goose sees %d versions, files are %d", len(vs), len(entries))
	}
}

// TestUpDownUp runs every Down and every Up again on a real database, so a
// Down that does not undo its Up fails here rather than in an operator's
// rollback.
func TestUpDownUp(t *testing.T) {
	ctx := context.Background()
	pool := pgtest.Pool(t)
	db := stdlib.OpenDBFromPool(pool)
	defer db.Close()

	st, err := migrations.Status(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	vs, _ := migrations.Versions()
	if !st.UpToDate() || st.Current != vs[len(vs)-1] || st.Latest != st.Current {
		t.Fatalf("fresh database: status %+v, want all of %v applied", st, vs)
	}

	if err := migrations.DownTo(ctx, db, 0); err != nil {
		t.Fatal(err)
	}
	st, err = migrations.Status(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	if st.Current != 0 || len(st.Pending) != len(vs) {
		t.Fatalf("after down: status %+v, want nothing applied", st)
	}
	// Before version 31, goose's table is in public, and schema ingestd is
	// not there.
	if left := ingestdObjectsIn(t, db, "public"); !slices.Equal(left, []string{"goose_db_version", "goose_db_version_id_seq"}) {
		t.Errorf("after down: public holds %v, want goose's table alone", left)
	}
	if left := ingestdObjectsIn(t, db, migrations.Schema); len(left) != 0 {
		t.Errorf("after down: schema %s holds %v", migrations.Schema, left)
	}
	if pending, err := migrations.Pending(ctx, db); err != nil || !pending {
		t.Fatalf("Pending = %v, %v; want true", pending, err)
	}

	applied, err := migrations.Up(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(applied) != fmt.Sprint(vs) {
		t.Fatalf("Up applied %v, want %v", applied, vs)
	}
	if pending, err := migrations.Pending(ctx, db); err != nil || pending {
		t.Fatalf("Pending = %v, %v; want false", pending, err)
	}
}

// ingestdObjectsIn lists the relations and functions of schema nsp that no
// extension (PostGIS) owns: ingestd's, once migrated.
func ingestdObjectsIn(t *testing.T, db *sql.DB, nsp string) []string {
	t.Helper()
	rows, err := db.QueryContext(context.Background(), `
		SELECT c.relname::text FROM pg_class c
		WHERE c.relnamespace = to_regnamespace($1) AND c.relkind IN ('r', 'p', 'v', 'm', 'f', 'S')
		  AND NOT EXISTS (SELECT FROM pg_depend d WHERE d.classid = 'pg_class'::regclass AND d.objid = c.oid AND d.deptype = 'e')
		UNION ALL
		SELECT p.proname::text FROM pg_proc p
		WHERE p.pronamespace = to_regnamespace($1)
		  AND NOT EXISTS (SELECT FROM pg_depend d WHERE d.classid = 'pg_proc'::regclass AND d.objid = p.oid AND d.deptype = 'e')
		ORDER BY 1`, nsp)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var names []string
	for rows.Next() {
		var n string
		if err := rows.Scan(&n); err != nil {
			t.Fatal(err)
		}
		names = append(names, n)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return names
}

// TestVersionTableLeavesPublic: a database an older version migrated, with
// goose's version table in public (as migration 30 left it, before schema
// ingestd existed; and as 37 left it), upgrades: Status reads its versions
// where they are, Up moves the table with every row into schema ingestd and
// applies only what is pending, and nothing of ingestd's is left in public.
func TestVersionTableLeavesPublic(t *testing.T) {
	for _, at := range []int64{30, 0} { // 0: the latest
		t.Run(fmt.Sprintf("at=%d", at), func(t *testing.T) {
			ctx := context.Background()
			vs, _ := migrations.Versions()
			if at == 0 {
				at = vs[len(vs)-1]
			}
			_, db := poolAtVersion(t, at)
			var rows int
			// Where an older ingestd left it (DownTo leaves it there below
			// version 31 already).
			q := `DO $$ BEGIN IF to_regclass('` + migrations.VersionTable + `') IS NOT NULL THEN
				ALTER TABLE ` + migrations.VersionTable + ` SET SCHEMA public; END IF; END $$`
			if _, err := db.ExecContext(ctx, q); err != nil {
				t.Fatalf("%s: %v", q, err)
			}
			if err := db.QueryRowContext(ctx, `SELECT count(*) FROM public.goose_db_version`).Scan(&rows); err != nil {
				t.Fatal(err)
			}
			st, err := migrations.Status(ctx, db)
			if err != nil || st.Current != at {
				t.Fatalf("status of the old database %+v (%v), want version %d", st, err, at)
			}
			applied, err := migrations.Up(ctx, db)
			if err != nil {
				t.Fatal(err)
			}
			if want := vs[slices.Index(vs, at)+1:]; fmt.Sprint(applied) != fmt.Sprint(want) {
				t.Fatalf("Up applied %v, want only the pending %v", applied, want)
			}
			var moved int
			if err := db.QueryRowContext(ctx, `SELECT count(*) FROM `+migrations.VersionTable).Scan(&moved); err != nil {
				t.Fatal(err)
			}
			if moved != rows+len(applied) {
				t.Errorf("%s holds %d rows, want the %d of public's and one per version applied (%d)", migrations.VersionTable, moved, rows, len(applied))
			}
			if left := ingestdObjectsIn(t, db, "public"); len(left) != 0 {
				t.Errorf("left in public: %v", left)
			}
			var nsp string
			if err := db.QueryRowContext(ctx, `SELECT relnamespace::regnamespace::text FROM pg_class WHERE oid = 'ingestd.goose_db_version_id_seq'::regclass`).Scan(&nsp); err != nil || nsp != migrations.Schema {
				t.Errorf("goose's identity sequence in %q (%v), want %s", nsp, err, migrations.Schema)
			}
			if st, err := migrations.Status(ctx, db); err != nil || !st.UpToDate() {
				t.Errorf("status after Up %+v (%v), want up to date", st, err)
			}
		})
	}
}

// TestStatusWithoutVersionTable is what /readyz sees on a database nobody
// migrated: everything pending, no error, nothing created.
func TestStatusWithoutVersionTable(t *testing.T) {
	ctx := context.Background()
	pool := pgtest.Pool(t)
	if _, err := pool.Exec(ctx, "DROP TABLE "+migrations.VersionTable); err != nil {
		t.Fatal(err)
	}
	db := stdlib.OpenDBFromPool(pool)
	defer db.Close()
	st, err := migrations.Status(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	if st.Current != 0 || st.UpToDate() {
		t.Fatalf("status %+v, want nothing applied", st)
	}
}

// TestPartitioningKeepsRows: version 11 moves the rows of the unpartitioned
// features into a table per feed under a partition per jurisdiction, and
// its Down moves them back. (Version 43 moves them on into the layers.)
func TestPartitioningKeepsRows(t *testing.T) {
	ctx := context.Background()
	_, db := poolAtVersion(t, 10)
	if _, err := db.ExecContext(ctx, `
		INSERT INTO features (jurisdiction, feed, feature_id, geom, properties, content_hash, first_seen_at, changed_at, poll_id)
		SELECT j, f, 'id' || i, ST_SetSRID(ST_MakePoint(i, i), 4326), '{}', '\x00', now(), now(), 1
		FROM unnest(ARRAY['wake', 'wake', 'Town of Cary']) WITH ORDINALITY AS t(j, n),
			LATERAL (SELECT CASE n WHEN 1 THEN 'zoning' WHEN 2 THEN 'parcels' ELSE 'Zoning Districts' END AS f) x,
			generate_series(1, 10 * n::int) AS i`); err != nil {
		t.Fatal(err)
	}
	if _, err := migrations.UpTo(ctx, db, 41); err != nil {
		t.Fatal(err)
	}
	rows, err := db.QueryContext(ctx, `
		SELECT ingestd_feed_partition(jurisdiction, feed), count(*), min(tableoid::regclass::text), max(tableoid::regclass::text)
		FROM features GROUP BY 1 ORDER BY 1`)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for rows.Next() {
		var want, lo, hi string
		var n int
		if err := rows.Scan(&want, &n, &lo, &hi); err != nil {
			t.Fatal(err)
		}
		if lo != want || hi != want {
			t.Errorf("rows of %s are in %s..%s", want, lo, hi)
		}
		got = append(got, fmt.Sprintf("%s=%d", want, n))
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	want := "[features_town_of_cary_zoning_districts_4e22444d=30 features_wake_parcels_e3f20296=20 features_wake_zoning_fa1270e0=10]"
	if fmt.Sprint(got) != want {
		t.Errorf("partitions %v, want %s", got, want)
	}
	if err := migrations.DownTo(ctx, db, 10); err != nil {
		t.Fatal(err)
	}
	var n int
	var kind string
	if err := db.QueryRowContext(ctx, `SELECT count(*), (SELECT relkind::text FROM pg_class WHERE oid = 'features'::regclass) FROM features`).Scan(&n, &kind); err != nil {
		t.Fatal(err)
	}
	if n != 60 || kind != "r" {
		t.Errorf("after Down: %d rows in a relation of kind %q, want 60 in a plain table", n, kind)
	}
}

// poolAtVersion is a fresh database migrated down to version, as a pool and
// as a database/sql handle for migrations (closed at the test's end).
func poolAtVersion(t *testing.T, version int64) (*pgxpool.Pool, *sql.DB) {
	t.Helper()
	pool := pgtest.Pool(t)
	db := stdlib.OpenDBFromPool(pool)
	t.Cleanup(func() { _ = db.Close() })
	if err := migrations.DownTo(context.Background(), db, version); err != nil {
		t.Fatal(err)
	}
	return pool, db
}

// TestLayerTablesKeepRows: version 32 turns each materialized layer into a
// table keyed on feature_id with the same rows, and its Down turns it back.
func TestLayerTablesKeepRows(t *testing.T) {
	ctx := context.Background()
	_, db := poolAtVersion(t, 31)
	// A feed's table as the apply leaves it (the columns the layer reads)
	// and its layer as version 30 built it: a materialized view.
	var part string
	if err := db.QueryRowContext(ctx, `SELECT ingestd.ingestd_feed_partition('wake', 'zoning')`).Scan(&part); err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{
		fmt.Sprintf(`CREATE TABLE IF NOT EXISTS ingestd.%q (feature_id text, jurisdiction text, feed text,
			properties jsonb, geom geometry, first_seen_at timestamptz, changed_at timestamptz)`, part),
		fmt.Sprintf(`INSERT INTO ingestd.%q SELECT 'id' || i, 'wake', 'zoning', jsonb_build_object('n', i),
			ST_SetSRID(ST_MakePoint(i, i), 4326), now(), now() FROM generate_series(1, 25) i`, part),
		`SELECT set_config('search_path', 'ingestd, public', false)`, // for the functions' bodies
		`SELECT ingestd_build_feed_view('wake', 'zoning', '[{"name": "n", "column": "n", "type": "bigint"}]', 'Point')`,
		`INSERT INTO feed_schemas (jurisdiction, feed, view_name, features, signature, poll_id)
			VALUES ('wake', 'zoning', 'wake.zoning', 25, 'x', 1)`,
	} {
		if _, err := db.ExecContext(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	layer := func() (kind string, rows, sum int) {
		t.Helper()
		if err := db.QueryRowContext(ctx, `SELECT (SELECT relkind::text FROM pg_class WHERE oid = 'wake.zoning'::regclass),
			count(*), coalesce(sum(n), 0) FROM wake.zoning`).Scan(&kind, &rows, &sum); err != nil {
			t.Fatal(err)
		}
		return kind, rows, sum
	}
	if kind, n, sum := layer(); kind != "m" || n != 25 || sum != 325 {
		t.Fatalf("before: layer of kind %q with %d rows (sum %d), want a materialized view of 25 (325)", kind, n, sum)
	}
	if _, err := migrations.Up(ctx, db); err != nil {
		t.Fatal(err)
	}
	if kind, n, sum := layer(); kind != "r" || n != 25 || sum != 325 {
		t.Errorf("after Up: layer of kind %q with %d rows (sum %d), want a table of 25 (325)", kind, n, sum)
	}
	var key string
	if err := db.QueryRowContext(ctx, `SELECT a.attname FROM pg_index i JOIN pg_attribute a ON a.attrelid = i.indrelid
		AND a.attnum = ANY(i.indkey) WHERE i.indrelid = 'wake.zoning'::regclass AND i.indisprimary`).Scan(&key); err != nil || key != "feature_id" {
		t.Errorf("after Up: primary key %q (%v), want feature_id", key, err)
	}
	if err := migrations.DownTo(ctx, db, 31); err != nil {
		t.Fatal(err)
	}
	if kind, n, sum := layer(); kind != "m" || n != 25 || sum != 325 {
		t.Errorf("after Down: layer of kind %q with %d rows (sum %d), want a materialized view of 25 (325)", kind, n, sum)
	}
}
