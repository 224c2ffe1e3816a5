package migrations_test

import (
	"context"
	"database/sql"
	"io/fs"
	"maps"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/stdlib"

	"github.com/ingestd/ingestd/migrations"
	"github.com/ingestd/ingestd/migrations/pgtest"
)

// layerBuildFunctions are the functions that built a layer from its feed's
// partition, unused since one copy: the migration named
// *_layer_functions.sql drops them (and rewrites the changed functions).
var layerBuildFunctions = []string{
	"ingestd_build_feed_view(text,text,jsonb,text)",
	"ingestd_build_layer_table(text,text,text,text)",
	"ingestd_drop_layer(regclass)",
	"ingestd_layer_fill(text,text,text)",
	"ingestd_layer_select(text,text)",
	"ingestd_plain_select(text,text,text,text[])",
	"ingestd_refresh_feed_layer(text,text)",
	"ingestd_refresh_feed_layer(text,text,bigint)",
	"ingestd_refresh_feed_layer(text,text,bigint,text[])",
}

// changedFunctions are the functions the same migration rewrites for Citus:
// the thumbnail's sample and the change feed.
var changedFunctions = []string{
	"ingestd_changes_since(text,text,bigint)",
	"ingestd_layer_sample(text,text,double precision,bigint)",
}

// TestLayerBuildFunctionsDroppedAndRestored: the migrated database has none
// of the layer-build functions, and the migration's Down gives them and
// the changed functions back exactly as the migrations before it made them
// (definition, settings and comment), so that going further down (43's
// Down rebuilds partitions with them) works as before.
func TestLayerBuildFunctionsDroppedAndRestored(t *testing.T) {
	ctx := context.Background()
	version := dropVersion(t)
	pool := pgtest.Pool(t)
	db := stdlib.OpenDBFromPool(pool)
	defer db.Close()

	if got := slices.Sorted(maps.Keys(layerBuildDefinitions(t, db))); !slices.Equal(got, changedFunctions) {
		t.Fatalf("migrated: %v defined, want %v alone", got, changedFunctions)
	}
	if err := migrations.DownTo(ctx, db, version-1); err != nil {
		t.Fatal(err)
	}
	restored := layerBuildDefinitions(t, db)
	if len(restored) != len(layerBuildFunctions)+len(changedFunctions) {
		t.Fatalf("after Down: %v defined, want all of %v", slices.Sorted(maps.Keys(restored)), layerBuildFunctions)
	}
	// The originals: below the oldest of them (migration 21's typed views)
	// and up again to just before the drop.
	if err := migrations.DownTo(ctx, db, 20); err != nil {
		t.Fatal(err)
	}
	if _, err := migrations.UpTo(ctx, db, version-1); err != nil {
		t.Fatal(err)
	}
	original := layerBuildDefinitions(t, db)
	for _, fn := range slices.Concat(layerBuildFunctions, changedFunctions) {
		if restored[fn] != original[fn] {
			t.Errorf("%s as Down restores it:\n%s\nwant, as the migrations before made it:\n%s", fn, restored[fn], original[fn])
		}
	}
}

// dropVersion is the version of the migration that drops the functions,
// found by its name, so that renumbering it needs no change here.
func dropVersion(t *testing.T) int64 {
	t.Helper()
	entries, err := fs.ReadDir(migrations.FS, ".")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if v, ok := strings.CutSuffix(e.Name(), "_layer_functions.sql"); ok {
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			return n
		}
	}
	t.Fatal("no migration *_layer_functions.sql embedded")
	return 0
}

// layerBuildDefinitions maps each layer-build function and changed function
// defined in schema ingestd to its full definition and comment.
func layerBuildDefinitions(t *testing.T, db *sql.DB) map[string]string {
	t.Helper()
	rows, err := db.QueryContext(context.Background(), `
		SELECT p.oid::regprocedure::text, pg_get_functiondef(p.oid) || coalesce(obj_description(p.oid, 'pg_proc'), '')
		FROM pg_proc p
		WHERE p.pronamespace = to_regnamespace($1)
		  AND replace(p.oid::regprocedure::text, $1 || '.', '') = ANY($2)`, migrations.Schema, slices.Concat(layerBuildFunctions, changedFunctions))
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	out := map[string]string{}
	for rows.Next() {
		var sig, def string
		if err := rows.Scan(&sig, &def); err != nil {
			t.Fatal(err)
		}
		out[strings.TrimPrefix(sig, migrations.Schema+".")] = def
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}
