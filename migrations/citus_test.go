package migrations_test

import (
	"context"
	"database/sql"
	"testing"

	"github.com/jackc/pgx/v5/stdlib"

	"github.com/ingestd/ingestd/migrations"
	"github.com/ingestd/ingestd/migrations/pgtest"
)

// The lock goose migrates under turns Citus's schema-based sharding off
// on its connection and puts it back on unlock, so that migration 31's
// CREATE SCHEMA IF NOT EXISTS ingestd leaves ingestd a plain schema while
// the server shards the schemas made later; without the setting it
// changes nothing. Plain PostgreSQL stands in for Citus here: a SET of
// citus.enable_schema_based_sharding makes a placeholder of that name,
// which current_setting and set_config treat as they treat Citus's own
// (scripts/citus.sh migrates a real coordinator).
func TestMigrationSessionHasSchemaShardingOff(t *testing.T) {
	ctx := context.Background()
	db := stdlib.OpenDBFromPool(pgtest.Pool(t))
	defer db.Close()
	setting := func(conn *sql.Conn) sql.NullString {
		t.Helper()
		var v sql.NullString
		if err := conn.QueryRowContext(ctx, `SELECT current_setting($1, true)`, migrations.ShardingSetting).Scan(&v); err != nil {
			t.Fatal(err)
		}
		return v
	}
	for _, c := range []struct {
		name   string
		before string // "": the setting does not exist
		during string
	}{
		// First: no connection of the test's database has the
		// placeholder yet (once made, it lasts as long as the session).
		{name: "no citus", before: "", during: ""},
		{name: "citus, sharding on", before: "on", during: "off"},
		{name: "citus, sharding off", before: "off", during: "off"},
	} {
		t.Run(c.name, func(t *testing.T) {
			conn, err := db.Conn(ctx)
			if err != nil {
				t.Fatal(err)
			}
			defer func() { _ = conn.Close() }()
			if c.before != "" {
				if _, err := conn.ExecContext(ctx, `SELECT set_config($1, $2, false)`, migrations.ShardingSetting, c.before); err != nil {
					t.Fatal(err)
				}
			}
			l, err := migrations.NewSessionLocker()
			if err != nil {
				t.Fatal(err)
			}
			if err := l.SessionLock(ctx, conn); err != nil {
				t.Fatal(err)
			}
			if got := setting(conn); got.String != c.during || got.Valid != (c.during != "") {
				t.Errorf("while locked: %s = %v, want %q", migrations.ShardingSetting, got, c.during)
			}
			if err := l.SessionUnlock(ctx, conn); err != nil {
				t.Fatal(err)
			}
			if got := setting(conn); got.String != c.before || got.Valid != (c.before != "") {
				t.Errorf("after unlock: %s = %v, want %q as before", migrations.ShardingSetting, got, c.before)
			}
		})
	}
}
