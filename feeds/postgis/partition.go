package postgis

import (
	"context"

	"github.com/jackc/pgx/v5"
)

// Before one copy, features was partitioned by jurisdiction and then by
// feed (migration 11), each feed with a table of its own; migration 43
// made features a view over the layer tables. lookupFeedTable is that
// layout's lookup, which tableOf keeps for a store that is not one-copy;
// feedTable is still the apply's handle on the feed's table (its layer
// table, readAs, on one copy).

// feedTable is where one feed's features live.
type feedTable struct {
	// name is the feed's partition, jurisdiction the partition of its
	// jurisdiction that holds it (both unquoted, lower case).
	name, jurisdiction string
	// feedJurisdiction and feedName are the feed's own names.
	feedJurisdiction, feedName string
	// exists is false before the feed's first successful load.
	exists bool
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

// defaultBulkIndexMin is the size from which an apply truncates the
// poll's staging instead of deleting its rows: a large snapshot's delete
// would leave as many dead tuples, a small one's truncate would take a
// lock and a new relation file for a few rows (scripts/bench.sh scale
// starts 5,000 small feeds at once).
const defaultBulkIndexMin = 10000

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
