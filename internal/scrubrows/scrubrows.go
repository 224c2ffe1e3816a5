// Package scrubrows scrubs secrets (redact.Secrets) by value from the text
// columns of rows already stored, for the packages that own tables
// (feeds/postgis, deadletter, breaker): what versions that did not scrub by
// value wrote. The scrubbing is redact's, in Go, so that a stored text is
// cleaned by exactly the spellings a new write is; PostgreSQL's regular
// expressions were measured too slow for hundreds of secrets (one UPDATE
// over a million polls with 300 secrets ran for minutes).
package scrubrows

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/ingestd/ingestd/redact"
)

// DB is what Scrub needs of a pool. The read streams on one connection
// while the writes take another, so a pool of one connection will not do.
type DB interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
}

// batchSize is how many changed rows one write carries.
const batchSize = 500

// Scrub reads rows with read (args are its parameters): each row is its
// ctid, then text columns (NULL allowed). Each text is scrubbed
// (redact.Secrets.Scrub), and the rows that changed are written with
// write, in batches. write's parameters are $1 tid[], then for each column
// its old and its new values as text[] ($2 the first column's old values,
// $3 its new ones, …); it must change a row only where its ctid and its
// old values still match, since another instance may have written it since
// it was read. Scrub returns the rows written. With no secret, it reads
// nothing.
func Scrub(ctx context.Context, db DB, secrets *redact.Secrets, read, write string, args ...any) (int64, error) {
	if secrets.Len() == 0 {
		return 0, nil
	}
	rows, err := db.Query(ctx, read, args...)
	if err != nil {
		return 0, err
	}
	defer rows.Close()
	cols := len(rows.FieldDescriptions()) - 1
	if cols < 1 {
		return 0, fmt.Errorf("scrubrows: the read returns %d columns, want a ctid and texts", cols+1)
	}
	b := newBatch(cols)
	var written int64
	flush := func() error {
		if len(b.tids) == 0 {
			return nil
		}
		tag, err := db.Exec(ctx, write, b.args()...)
		if err != nil {
			return err
		}
		written += tag.RowsAffected()
		b = newBatch(cols)
		return nil
	}
	var tid pgtype.TID
	texts := make([]*string, cols)
	dest := make([]any, cols+1)
	dest[0] = &tid
	for i := range texts {
		dest[i+1] = &texts[i]
	}
	for rows.Next() {
		if err := rows.Scan(dest...); err != nil {
			return written, err
		}
		if b.add(tid, texts, secrets) && len(b.tids) >= batchSize {
			if err := flush(); err != nil {
				return written, err
			}
		}
	}
	if err := rows.Err(); err != nil {
		return written, err
	}
	return written, flush()
}

// batch is the changed rows of one write.
type batch struct {
	tids     []pgtype.TID
	old, new [][]*string // by column
}

func newBatch(cols int) *batch {
	return &batch{old: make([][]*string, cols), new: make([][]*string, cols)}
}

// add adds the row when scrubbing changed one of its texts, and says so.
func (b *batch) add(tid pgtype.TID, texts []*string, secrets *redact.Secrets) bool {
	changed := -1
	for i, t := range texts {
		if t != nil && secrets.Scrub(*t) != *t {
			changed = i
			break
		}
	}
	if changed < 0 {
		return false
	}
	b.tids = append(b.tids, tid)
	for i, t := range texts {
		var old, scrubbed *string
		if t != nil {
			// Copies: the scan may reuse what t points to for the next row.
			o, s := *t, secrets.Scrub(*t)
			old, scrubbed = &o, &s
		}
		b.old[i] = append(b.old[i], old)
		b.new[i] = append(b.new[i], scrubbed)
	}
	return true
}

func (b *batch) args() []any {
	out := []any{b.tids}
	for i := range b.old {
		out = append(out, b.old[i], b.new[i])
	}
	return out
}
