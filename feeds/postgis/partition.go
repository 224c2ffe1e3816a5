package postgis

import "github.com/jackc/pgx/v5"

// feedTable is the apply's handle on the feed's layer table (the one copy
// of its features, onecopy_apply.go): readAs reads its rows in the
// generic form.

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
