package postgis

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/ingestd/ingestd/feeds"
)

// A large first load (bulkIndexMin staged features or more) is built the
// way a bulk loader builds a table, in steps PostgreSQL can run in
// parallel, inside a savepoint of the apply's transaction:
//
//  1. BulkCreate (sql/firstload.sql) creates the feed's table from the poll's staging in
//     one CREATE TABLE … AS: its SELECT (geometry parse, transform and
//     validity, properties parsed as jsonb, content hash) runs in parallel
//     workers; an INSERT … SELECT never does. No sort: every staged row is
//     taken as it is.
//  2. BulkCounts counts the rows, the invalid geometries, the
//     source ids and the extent guard's figures (a parallel scan).
//  3. One ALTER TABLE (one scan) drops load_named, sets NOT NULL as on
//     features, adds the constraint that implies the partition bound and
//     builds the primary key. A snapshot that repeats an id fails the key:
//     the savepoint is rolled back and FirstLoad loads it instead, keeping
//     each id's last row (unstable paging is rare; a sort for every large
//     first load to find it was 2–3 s per million features).
//  4. The guards' verdict: a held snapshot rolls the savepoint back, so
//     nothing of it is left but its staging.
//  5. Rows with an invalid geometry are deleted if the feed skips them,
//     load_invalid is dropped (its byte stays in each row until the
//     table is rewritten), the GiST index is built and the change log
//     written: one row for the load (migration 28), not one per feature.
//
// scripts/bench.sh gdal measures it against ogr2ogr and a raw COPY.

// errBulkDeclined is how a step of bulkFirstLoad says the snapshot is not
// for a bulk load (a repeated id, a failed transform): nothing is left of
// it, and the apply loads it with FirstLoad.
var errBulkDeclined = errors.New("postgis: first load declined in bulk")

// bulkLoad is one bulk first load: the apply's run, the savepoint the load
// runs in, and the counts and verdict of the loaded table, which become the
// run's once the load cannot be declined any more.
type bulkLoad struct {
	*applyRun
	sp                            pgx.Tx
	rows, invalid, skipped, named int
	verdict                       *string
}

// bulkFirstLoad loads a large first snapshot into the new table r.table
// (see above) and fills in the apply's figures (r.out, r.pages, r.split,
// and r.held when the guard held it: no table is left then) as FirstLoad
// would. loaded false: the snapshot repeats an id, or a geometry's
// transform failed, and nothing was done; the caller loads it with
// FirstLoad.
func (s *Store) bulkFirstLoad(ctx context.Context, r *applyRun) (loaded bool, err error) {
	s.bulkLoads.Add(1)
	sp, err := r.tx.Begin(ctx)
	if err != nil {
		return false, err
	}
	// Rolled back unless released below: a repeated id, a held snapshot or
	// an error leaves no table.
	defer func() { _ = sp.Rollback(ctx) }()
	b := &bulkLoad{applyRun: r, sp: sp}
	for _, step := range []func(context.Context, *bulkLoad) error{
		bulkCreate,        // CREATE TABLE … AS, in parallel
		bulkCount,         // its counts and the extent guard's verdict
		bulkBuildKey,      // NOT NULL, the bound, the primary key: one scan
		bulkPagesAndSplit, // the apply's pages and ids on two pages
	} {
		if err := step(ctx, b); errors.Is(err, errBulkDeclined) {
			s.bulkFallbacks.Add(1)
			return false, nil
		} else if err != nil {
			return false, err
		}
	}
	if r.held != nil {
		return true, nil
	}
	if err := s.atLoadStep(ctx, r.tx, "bulk keyed"); err != nil {
		return false, err
	}
	if err := bulkFinish(ctx, b); err != nil {
		return false, err
	}
	return true, sp.Commit(ctx)
}

// bulkCreate creates the feed's table from the poll's staging (BulkCreate).
// A coordinate outside its CRS's domain declines the bulk load: FirstLoad
// loads it, without that geometry (runApply).
func bulkCreate(ctx context.Context, b *bulkLoad) error {
	if _, err := b.sp.Exec(ctx, sqlQuery("BulkPlanner")); err != nil {
		return err
	}
	// Not prepared: the text names the feed's table (see feedTable.sql).
	_, err := b.sp.Exec(ctx, b.table.sql("BulkCreate"), pgx.QueryExecModeDescribeExec,
		b.pollID, b.jurisdiction, b.feed, b.skipInvalidFeature)
	switch {
	case isTransformError(err):
		return errBulkDeclined
	case err != nil:
		return fmt.Errorf("create %s: %w", b.table.name, err)
	}
	return nil
}

// bulkCount counts the loaded table and asks the extent guard (BulkCounts).
func bulkCount(ctx context.Context, b *bulkLoad) error {
	err := b.sp.QueryRow(ctx, b.table.sql("BulkCounts"), pgx.QueryExecModeDescribeExec, b.bbox, b.accept).
		Scan(&b.rows, &b.invalid, &b.skipped, &b.named, &b.verdict)
	return err
}

// bulkBuildKey shapes the table as a partition of features and builds its
// primary key (BulkBuildKey); a repeated id declines the bulk load.
func bulkBuildKey(ctx context.Context, b *bulkLoad) error {
	if _, err := b.sp.Exec(ctx, sqlQuery("BulkPlannerReset")); err != nil {
		return err
	}
	_, err := b.sp.Exec(ctx, b.table.sql("BulkBuildKey"))
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && pgErr.Code == "23505" { // unique_violation
		return errBulkDeclined
	}
	if err != nil {
		return fmt.Errorf("build %s: %w", b.table.name, err)
	}
	return nil
}

// bulkPagesAndSplit fills in the run's figures from the loaded table, and
// counts the poll's pages and its ids on two pages.
func bulkPagesAndSplit(ctx context.Context, b *bulkLoad) error {
	b.held = b.verdict
	b.out.res = feeds.ApplyResult{Features: b.rows, Added: b.rows, InvalidGeometries: b.invalid}
	return b.sp.QueryRow(ctx, sqlQuery("BulkPagesAndSplit"), b.pollID, b.named).Scan(&b.pages, &b.split)
}

// bulkFinish deletes the rows the feed skips, drops the load's columns,
// builds the GiST index and writes the change log.
func bulkFinish(ctx context.Context, b *bulkLoad) error {
	if (b.skipInvalid && b.invalid > 0) || b.skipped > 0 {
		tag, err := b.sp.Exec(ctx, b.table.sql("BulkDeleteSkipped"), b.skipInvalid)
		if err != nil {
			return err
		}
		b.out.res.Added -= int(tag.RowsAffected())
	}
	for _, name := range []string{"BulkDropLoadColumns", "BuildLoadGeomIndex"} {
		if _, err := b.sp.Exec(ctx, b.table.sql(name)); err != nil {
			return fmt.Errorf("load %s: %w", b.table.name, err)
		}
	}
	_, err := b.sp.Exec(ctx, b.table.sql("BulkChangeLog"), b.pollID, b.jurisdiction, b.feed)
	return err
}

// atLoadStep calls the test hook, if any, at a step of a first load: the
// feed's table is filled but the transaction that makes it the feed's has
// not committed, so nothing of it may be visible, and a crash there must
// leave the feed as it was (TestFirstLoadCrashLeavesNothing).
func (s *Store) atLoadStep(ctx context.Context, tx pgx.Tx, step string) error {
	if s.loadHook == nil {
		return nil
	}
	return s.loadHook(ctx, tx, step)
}
