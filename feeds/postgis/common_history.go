package postgis

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
)

// A common layer keeps its past as a feed does (migration 40,
// docs/querying.md): each row carries changed_at, the time of the apply
// that wrote it, and statement triggers on the layer's table move every
// row an update or delete supersedes to ingestd.common_history, whatever
// wrote it (a poll's changes, a full conform, a retired feed). The apply
// therefore only has to leave alone the rows whose values stay: the
// upsert of a poll's changes skips a row whose conformed values and
// geometry are those it has (UpsertCommonRows), so a feature modified in
// a property the conform does not read makes no version.
//
// A feature the conform cannot map (a function failing on its values) is
// skipped, as batch-machine skips a row it cannot conform: it has no row
// in the layer until a poll brings values that map, the poll counts it
// (polls.common_skipped) and one log line names the feed, the count and
// the first such feature (docs/decisions/0156).

// commonSkips counts the features an apply's conform could not map, and
// what conformRows read of its last page.
type commonSkips struct {
	// count and first, firstErr: every skipped feature of the apply, and
	// the first of them.
	count    int
	first    string
	firstErr error
	// page holds the ids the last page skipped; read and last are how many
	// features it read and the last one's id (a page of skipped features
	// is still a page: paging goes on after it).
	page []string
	read int
	last string
}

// newPage forgets the previous page.
func (c *commonSkips) newPage() {
	c.page, c.read, c.last = c.page[:0], 0, ""
}

// skip counts feature id, which the conform could not map (err).
func (c *commonSkips) skip(id string, err error) {
	if c.count == 0 {
		c.first, c.firstErr = id, err
	}
	c.count++
	c.page = append(c.page, id)
}

// trackCommonTable makes a new common layer's table keep its past
// (ingestd_common_track: changed_at and the history triggers).
func trackCommonTable(ctx context.Context, tx pgx.Tx, t commonTable) error {
	if _, err := tx.Exec(ctx, sqlQuery("TrackCommonLayer"), t.ident()); err != nil {
		return fmt.Errorf("creating common layer %s: its history: %w", t.layer.Name, err)
	}
	return nil
}

// deleteSkippedCommonRows deletes the rows the features of the last page
// that the conform skipped had: the version of a feature the conform
// could not map this time is not its current one.
func deleteSkippedCommonRows(ctx context.Context, r *applyRun, t commonTable) error {
	if len(r.commonSkips.page) == 0 {
		return nil
	}
	_, err := r.tx.Exec(ctx, t.sql("DeleteCommonRowsOf", r.table), r.jurisdiction, r.feed, r.commonSkips.page)
	return err
}

// recordCommonSkips counts the apply's skipped features in its poll and
// logs them once, naming the first.
func (s *Store) recordCommonSkips(ctx context.Context, r *applyRun, t commonTable) error {
	c := r.commonSkips
	if c.count == 0 {
		return nil
	}
	if _, err := r.tx.Exec(ctx, sqlQuery("RecordCommonSkipped"), r.pollID, c.count); err != nil {
		return err
	}
	s.logger.WarnContext(ctx, "features not conformed into their common layer: skipped",
		"jurisdiction", r.jurisdiction, "feed", r.feed, "poll_id", r.pollID, "layer", t.layer.Name,
		"skipped", c.count, "feature_id", c.first, "error", c.firstErr.Error())
	return nil
}

// CommonChangesSince calls fn with each change of the feed's common rows
// after poll afterPoll (ingestd_common_changes_since), in poll and id
// order, as one GeoJSON Feature: its id, the new row's geometry (the old
// one's for a removal), and properties {change, poll_id, layer,
// applied_at, old, new} holding both rows' conformed values. Rows are
// streamed: fn must not keep line.
func (s *Store) CommonChangesSince(ctx context.Context, jurisdiction, feed string, afterPoll int64, fn func(line []byte) error) error {
	rows, err := s.pool.Query(ctx, sqlQuery("CommonChangesSince"), jurisdiction, feed, afterPoll)
	if err != nil {
		return fmt.Errorf("postgis: common-layer changes of %s/%s since poll %d: %w", jurisdiction, feed, afterPoll, err)
	}
	defer rows.Close()
	for rows.Next() {
		if err := fn(rows.RawValues()[0]); err != nil {
			return err
		}
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("postgis: common-layer changes of %s/%s since poll %d: %w", jurisdiction, feed, afterPoll, err)
	}
	return nil
}
