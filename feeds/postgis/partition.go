package postgis

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
)

// features is partitioned by jurisdiction and then by feed (migration 11):
// each feed has a table of its own, named by the SQL function
// ingestd_feed_partition. An apply works on that table directly, so it
// never depends on partition pruning nor locks other feeds' partitions.
//
// A feed's first load builds its table the way a bulk loader would: a plain
// table without indexes is filled from staging (a large one by
// bulkFirstLoad's parallel CREATE TABLE … AS, else by FirstLoad's
// INSERT … SELECT), then the primary key and the GiST index are built in
// bulk (sorted builds) and the table is attached as the feed's partition —
// all in the apply's transaction, so a held or failed first load leaves
// nothing behind.
// Inserting the same rows into indexed tables costs several times more: every
// row descends a B-tree and a GiST.

// partitionLockClass keys the advisory lock under which a jurisdiction's
// partition of features is created (two feeds of a new jurisdiction may
// load for the first time at once).
const partitionLockClass int32 = 0x70617274 // "part"

// feedTable is where one feed's features live.
type feedTable struct {
	// name is the feed's partition, jurisdiction the partition of its
	// jurisdiction that holds it (both unquoted, lower case).
	name, jurisdiction string
	// feedJurisdiction and feedName are the feed's own names.
	feedJurisdiction, feedName string
	// exists is false before the feed's first successful load.
	exists bool
	// indexed: a table being loaded has its indexes already.
	indexed bool
	// staged is the number of features the poll being applied staged.
	staged int64
	// lastCount is feed_status.feature_count: the features of the feed's
	// last applied snapshot.
	lastCount int64
	// lastQuiet: the feed's last applied snapshot modified and removed
	// nothing, and added nothing or everything (a first load); true before
	// any.
	lastQuiet bool
	// readAs, when set, is what reads of the feed's rows read instead of
	// its table: on the one-copy layout, the layer's rows rebuilt in the
	// generic form (feature_id, geom, properties, content_hash, …), a
	// parenthesised select.
	readAs string
}

// ident is the table's name quoted for SQL text (readAs, when set).
func (t feedTable) ident() string {
	if t.readAs != "" {
		return t.readAs
	}
	return pgx.Identifier{t.name}.Sanitize()
}

// lookupFeedTable names the feed's partition, tells whether it exists, and
// counts the features poll pollID staged and those the feed held after its
// last apply, and tells whether that apply changed anything.
func lookupFeedTable(ctx context.Context, tx pgx.Tx, pollID int64, jurisdiction, feed string) (feedTable, error) {
	t := feedTable{feedJurisdiction: jurisdiction, feedName: feed}
	err := tx.QueryRow(ctx, sqlQuery("LookupFeedTable"), pollID, jurisdiction, feed).
		Scan(&t.name, &t.jurisdiction, &t.exists, &t.staged, &t.lastCount, &t.lastQuiet)
	return t, err
}

// defaultBulkIndexMin is the size from which a first load builds its
// indexes after filling the table. Below it the table is created with
// them: for a small layer the DDL of a separate build costs more than the
// per-row index maintenance it saves (scripts/bench.sh scale starts 5,000
// small feeds at once).
const defaultBulkIndexMin = 10000

// createLoadTable creates the feed's table for its first load: shaped like
// features, with a constraint that implies its partition bound (so that
// ATTACH need not scan it), not yet a partition, so nobody sees it before
// the apply commits. A large snapshot gets its indexes after the load
// (buildLoadIndexes), a small one now (t.indexed).
func createLoadTable(ctx context.Context, tx pgx.Tx, t *feedTable, bulkIndexMin int64) error {
	t.indexed = t.staged < bulkIndexMin
	name := "CreateLoadTable"
	if t.indexed {
		name = "CreateIndexedLoadTable"
	}
	_, err := tx.Exec(ctx, t.sql(name))
	return err
}

// buildLoadIndexes builds the primary key and the GiST index of a loaded
// table in bulk.
func buildLoadIndexes(ctx context.Context, tx pgx.Tx, t feedTable) error {
	for _, name := range []string{"LoadIndexMemory", "BuildLoadKey", "BuildLoadGeomIndex"} {
		if _, err := tx.Exec(ctx, t.sql(name)); err != nil {
			return fmt.Errorf("build %s: %w", t.name, err)
		}
	}
	return nil
}

// attachFeedTable attaches the loaded table as the feed's partition,
// creating the jurisdiction's partition first if this is its first feed.
// ATTACH takes SHARE UPDATE EXCLUSIVE on the jurisdiction's partition:
// readers and other feeds' applies go on; only another attach waits, until
// this transaction ends.
func attachFeedTable(ctx context.Context, tx pgx.Tx, t feedTable) error {
	if err := ensureJurisdictionPartition(ctx, tx, t); err != nil {
		return err
	}
	if _, err := tx.Exec(ctx, t.sql("AttachFeedTable")); err != nil {
		return fmt.Errorf("attach %s: %w", t.name, err)
	}
	return nil
}

// ensureJurisdictionPartition creates and attaches the partition of features
// that holds the jurisdiction's feeds, unless it exists.
func ensureJurisdictionPartition(ctx context.Context, tx pgx.Tx, t feedTable) error {
	if _, err := tx.Exec(ctx, sqlQuery("AdvisoryXactLock"), partitionLockClass, t.feedJurisdiction); err != nil {
		return err
	}
	var exists bool
	if err := tx.QueryRow(ctx, sqlQuery("JurisdictionPartitionExists"), t.jurisdiction).Scan(&exists); err != nil || exists {
		return err
	}
	for _, name := range []string{"CreateJurisdictionPartition", "AttachJurisdictionPartition"} {
		if _, err := tx.Exec(ctx, t.sql(name)); err != nil {
			return fmt.Errorf("create %s: %w", t.jurisdiction, err)
		}
	}
	return nil
}

// quoteLiteral quotes s as an SQL string literal (DDL takes no parameters).
func quoteLiteral(s string) string {
	out := make([]byte, 0, len(s)+2)
	out = append(out, '\'')
	for i := 0; i < len(s); i++ {
		if s[i] == '\'' {
			out = append(out, '\'')
		}
		out = append(out, s[i])
	}
	return string(append(out, '\''))
}
