package migrations_test

import (
	"context"
	"testing"

	"github.com/ingestd/ingestd/migrations"
)

// TestCommonLayersKeepHistoryFromUpgrade: version 40 gives a common layer
// that exists its changed_at (the upgrade's time for its rows) and the
// triggers that keep what an update supersedes, and makes the layer's
// as-of exact from the upgrade on; its Down takes them away and keeps the
// rows.
func TestCommonLayersKeepHistoryFromUpgrade(t *testing.T) {
	ctx := context.Background()
	_, db := poolAtVersion(t, 39)
	for _, q := range []string{
		`CREATE SCHEMA common`,
		`CREATE TABLE common.addresses (jurisdiction text NOT NULL, feed text NOT NULL, feature_id text NOT NULL,
			number text, street text, geom geometry(Point, 4326), PRIMARY KEY (jurisdiction, feed, feature_id))`,
		`INSERT INTO common.addresses VALUES ('wake', 'addresses', 'a1', '12', 'MAIN ST', 'SRID=4326;POINT(-78.6 35.7)')`,
	} {
		if _, err := db.ExecContext(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	if _, err := migrations.Up(ctx, db); err != nil {
		t.Fatal(err)
	}
	var exact bool
	if err := db.QueryRowContext(ctx, `SELECT changed_at = (SELECT history_from FROM ingestd.common_layers WHERE layer = 'addresses')
		FROM common.addresses`).Scan(&exact); err != nil || !exact {
		t.Fatalf("after Up: the row's changed_at is not the layer's history_from (%v)", err)
	}
	var was, is string
	if _, err := db.ExecContext(ctx, `UPDATE common.addresses SET number = '14', changed_at = now()`); err != nil {
		t.Fatal(err)
	}
	if err := db.QueryRowContext(ctx, `SELECT h.conformed ->> 'number', a.number FROM ingestd.common_history h, common.addresses a`).Scan(&was, &is); err != nil {
		t.Fatalf("after an update: %v", err)
	}
	if was != "12" || is != "14" {
		t.Errorf("after an update: history holds number %q, the layer %q; want 12 and 14", was, is)
	}
	if err := migrations.DownTo(ctx, db, 39); err != nil {
		t.Fatal(err)
	}
	var cols, triggers int
	if err := db.QueryRowContext(ctx, `SELECT (SELECT count(*) FROM information_schema.columns
			WHERE table_schema = 'common' AND table_name = 'addresses' AND column_name = 'changed_at'),
		(SELECT count(*) FROM pg_trigger WHERE tgrelid = 'common.addresses'::regclass AND NOT tgisinternal)`).Scan(&cols, &triggers); err != nil {
		t.Fatal(err)
	}
	if cols != 0 || triggers != 0 {
		t.Errorf("after Down: changed_at %d, triggers %d; want none", cols, triggers)
	}
	if err := db.QueryRowContext(ctx, `SELECT number FROM common.addresses`).Scan(&is); err != nil || is != "14" {
		t.Errorf("after Down: the row's number is %q (%v), want 14", is, err)
	}
}
