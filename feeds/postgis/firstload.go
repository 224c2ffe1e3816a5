package postgis

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/ingestd/ingestd/feeds"
)

// A large first load (bulkIndexMin staged features or more) is built the
// way a bulk loader builds a table, in steps PostgreSQL can run in
// parallel, inside a savepoint of the apply's transaction:
//
//  1. bulkFirstLoadSQL creates the feed's table from the poll's staging in
//     one CREATE TABLE … AS: its SELECT (geometry parse, transform and
//     validity, properties parsed as jsonb, content hash) runs in parallel
//     workers; an INSERT … SELECT never does. No sort: every staged row is
//     taken as it is.
//  2. bulkFirstLoadCountsSQL counts the rows, the invalid geometries, the
//     source ids and the extent guard's figures (a parallel scan).
//  3. One ALTER TABLE (one scan) drops load_named, sets NOT NULL as on
//     features, adds the constraint that implies the partition bound and
//     builds the primary key. A snapshot that repeats an id fails the key:
//     the savepoint is rolled back and firstLoadSQL loads it instead, keeping
//     each id's last row (unstable paging is rare; a sort for every large
//     first load to find it was 2–3 s per million features).
//  4. The guards' verdict: a held snapshot rolls the savepoint back, so
//     nothing of it is left but its staging.
//  5. Rows with an invalid geometry are deleted if the feed skips them,
//     load_invalid is dropped (its byte stays in each row until the
//     table is rewritten), the GiST index is built and the change log
//     written from the table.
//
// scripts/bench.sh gdal measures it against ogr2ogr and a raw COPY.

// bulkFirstLoadSQL creates the feed's table {{table}} from poll $1's staged
// rows ($2, $3: jurisdiction and feed), with features' columns and four
// more: load_invalid (the geometry was invalid: repaired here with
// ST_MakeValid), load_out_of_range (it lay outside ±180°/±90°: stored
// without it), load_skip (the row's update is skipped: skippedRow's feature
// part, $4 being invalid_feature: skip) and load_named (the row has a source
// id). Properties of a skipped row are not parsed: they may be NULL.
const bulkFirstLoadSQL = `CREATE TABLE {{table}} AS
SELECT $2::text AS jurisdiction, $3::text AS feed, s.feature_id,
	(CASE WHEN s.invalid AND s.geom IS NOT NULL THEN ST_MakeValid(s.geom) ELSE s.geom END)::geometry(Geometry, 4326) AS geom,
	(CASE WHEN NOT s.skip THEN s.properties END)::jsonb AS properties, sha256(s.geom_hash || s.props_hash) AS content_hash,
	now() AS first_seen_at, now() AS changed_at, $1::bigint AS poll_id, s.geom_hash, s.props_hash,
	s.invalid AS load_invalid, s.out_of_range AS load_out_of_range, s.skip AS load_skip, s.named AS load_named
FROM (
	-- stagedID's unqualified columns are p's (g has only geom).
	SELECT ` + stagedID + ` AS feature_id, p.feature_id <> '' AS named,
		p.geom_hash, p.props_hash, p.properties, ` + storedGeometry + ` AS geom,
		` + invalidGeometry + ` AS invalid,
		g.geom IS NOT NULL AND NOT ` + inRange + ` AS out_of_range,
		p.invalid_feature = 2 OR (p.invalid_feature = 1 AND $4::boolean) AS skip
	FROM staged_features p
	` + stagedGeometry + `
	WHERE p.poll_id = $1
) s`

// bulkFirstLoadCountsSQL counts {{table}}'s rows, invalid geometries, rows
// skipped and rows with a source id, and gives the extent guard's verdict
// (NULL: not held) for the bbox $1 (float8[4], EPSG:4326, or NULL), unless
// $2 accepts the snapshot. As extentCTE, a geometry out of range is located
// and outside, an empty one neither.
var bulkFirstLoadCountsSQL = `SELECT e.rows, e.invalid, e.skipped, e.named,
	CASE WHEN NOT $2 AND $1::float8[] IS NOT NULL AND 2 * e.outside > e.located THEN ` +
	strings.ReplaceAll(extentReason, "$6", "$1") + ` END
FROM (SELECT count(*)::int AS rows,
		count(*) FILTER (WHERE load_invalid)::int AS invalid,
		count(*) FILTER (WHERE load_skip)::int AS skipped,
		count(*) FILTER (WHERE load_named)::int AS named,
		count(*) FILTER (WHERE load_out_of_range OR NOT ST_IsEmpty(geom)) AS located,
		count(*) FILTER (WHERE $1::float8[] IS NOT NULL AND (load_out_of_range OR NOT ST_IsEmpty(geom) AND NOT geom && ST_MakeEnvelope(
			($1::float8[])[1], ($1::float8[])[2], ($1::float8[])[3], ($1::float8[])[4], 4326))) AS outside
	FROM {{table}}) e`

// bulkFirstLoad loads a large first snapshot into the new table t (see
// above) and fills in the apply's figures (out, pages) as firstLoadSQL
// would. loaded false: the snapshot repeats an id, or a geometry's
// transform failed, and nothing was done; the caller loads it with
// firstLoadSQL. held is the guard's reason when the snapshot was held (no
// table is left then).
func (s *Store) bulkFirstLoad(ctx context.Context, tx pgx.Tx, pollID int64, t feedTable, jurisdiction, feed string,
	accept bool, bbox []float64, skipInvalid, skipInvalidFeature bool, pages *int, out *applyOutcome) (loaded bool, held *string, split *int, err error) {
	s.bulkLoads.Add(1)
	sp, err := tx.Begin(ctx)
	if err != nil {
		return false, nil, nil, err
	}
	// Rolled back unless released below: a repeated id, a held snapshot or
	// an error leaves no table.
	defer func() { _ = sp.Rollback(ctx) }()
	name := t.ident()
	// Staging's statistics are stale (a new poll's rows are estimated at
	// one): without index scans the planner reads the poll's rows with a
	// parallel sequential scan, and zero setup costs let it use workers
	// whatever it thinks the poll's size is.
	if _, err := sp.Exec(ctx, `SET LOCAL enable_indexscan = off; SET LOCAL enable_bitmapscan = off;
		SET LOCAL parallel_setup_cost = 0; SET LOCAL parallel_tuple_cost = 0`); err != nil {
		return false, nil, nil, err
	}
	// Not prepared: the text names the feed's table (see applySnapshot).
	if _, err := sp.Exec(ctx, strings.ReplaceAll(bulkFirstLoadSQL, "{{table}}", name), pgx.QueryExecModeDescribeExec,
		pollID, jurisdiction, feed, skipInvalidFeature); err != nil {
		if isTransformError(err) {
			// A coordinate outside its CRS's domain: firstLoadSQL
			// loads it, without that geometry (runApply).
			s.bulkFallbacks.Add(1)
			return false, nil, nil, nil
		}
		return false, nil, nil, fmt.Errorf("create %s: %w", t.name, err)
	}
	var rows, invalid, skipped, named int
	if err := sp.QueryRow(ctx, strings.ReplaceAll(bulkFirstLoadCountsSQL, "{{table}}", name), pgx.QueryExecModeDescribeExec,
		bbox, accept).Scan(
		&rows, &invalid, &skipped, &named, &held); err != nil {
		return false, nil, nil, err
	}
	if _, err := sp.Exec(ctx, `RESET enable_indexscan; RESET enable_bitmapscan;
		RESET parallel_setup_cost; RESET parallel_tuple_cost;
		SET LOCAL maintenance_work_mem = '256MB'`); err != nil {
		return false, nil, nil, err
	}
	_, err = sp.Exec(ctx, fmt.Sprintf(`ALTER TABLE %s DROP COLUMN load_named,
		ALTER jurisdiction SET NOT NULL, ALTER feed SET NOT NULL, ALTER content_hash SET NOT NULL,
		ALTER first_seen_at SET NOT NULL, ALTER changed_at SET NOT NULL, ALTER poll_id SET NOT NULL,
		ADD CONSTRAINT %s CHECK (jurisdiction = %s AND feed = %s),
		ADD CONSTRAINT %s PRIMARY KEY (feature_id, jurisdiction, feed)`,
		name, pgx.Identifier{t.name + "_bound"}.Sanitize(), quoteLiteral(jurisdiction), quoteLiteral(feed),
		pgx.Identifier{t.name + "_pkey"}.Sanitize()))
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && pgErr.Code == "23505" { // unique_violation
		s.bulkFallbacks.Add(1)
		return false, nil, nil, nil
	}
	if err != nil {
		return false, nil, nil, fmt.Errorf("build %s: %w", t.name, err)
	}

	out.res = feeds.ApplyResult{Features: rows, Added: rows, InvalidGeometries: invalid}
	if err := sp.QueryRow(ctx, `SELECT (SELECT count(*) FROM staged_pages WHERE poll_id = $1)::int, `+splitIDs+`$2`,
		pollID, named).Scan(pages, &split); err != nil {
		return false, nil, nil, err
	}
	if held != nil {
		return true, held, split, nil
	}
	if (skipInvalid && invalid > 0) || skipped > 0 {
		tag, err := sp.Exec(ctx, `DELETE FROM `+name+` WHERE load_skip OR (load_invalid AND $1)`, skipInvalid)
		if err != nil {
			return false, nil, nil, err
		}
		out.res.Added -= int(tag.RowsAffected())
	}
	steps := []string{
		`ALTER TABLE ` + name + ` DROP COLUMN load_invalid, DROP COLUMN load_out_of_range, DROP COLUMN load_skip`,
		fmt.Sprintf(`CREATE INDEX %s ON %s USING gist (geom)`, pgx.Identifier{t.name + "_geom"}.Sanitize(), name),
		`INSERT INTO feature_changes (poll_id, jurisdiction, feed, feature_id, change,
			geometry_changed, properties_changed, old_hash, new_hash, changed_at)
		SELECT poll_id, jurisdiction, feed, feature_id, 'added', true, true, NULL, content_hash, changed_at
		FROM ` + name,
	}
	for _, sql := range steps {
		if _, err := sp.Exec(ctx, sql); err != nil {
			return false, nil, nil, fmt.Errorf("load %s: %w", t.name, err)
		}
	}
	return true, nil, split, sp.Commit(ctx)
}
