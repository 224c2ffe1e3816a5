package postgis

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"

	"github.com/jackc/pgx/v5"

	"github.com/ingestd/ingestd/feeds"
	"github.com/ingestd/ingestd/schema"
	"github.com/ingestd/ingestd/source"
)

// Incremental refresh (issue 27; sql/delta.sql). A delta poll's staging
// holds only the features the server changed. ComposeDelta proves them,
// with the feed's applied features, against the server's id list and
// records the list (staged_deltas): the poll's snapshot is then the
// fetched features, the listed ones it did not fetch as they are stored,
// and nothing else. The apply (ApplyDelta) diffs only the fetched rows and
// removes the unlisted ones, so its cost follows the change, not the
// layer.

// ComposeDelta implements feeds' incremental store: in one transaction,
// it proves poll pollID's fetched features and the feed's applied ones
// against d.IDs and, when they make exactly the listed snapshot, records
// the poll as a delta of d.IDs with the ids it removes. Nothing is
// copied: the proof is one hash join of the list with the table's ids.
func (s *Store) ComposeDelta(ctx context.Context, pollID int64, feed feeds.FeedInfo, d source.Delta) (feeds.DeltaResult, error) {
	var res feeds.DeltaResult
	ids := slices.Compact(slices.Clone(d.IDs))
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		t, err := lookupFeedTable(ctx, tx, pollID, feed.Jurisdiction, feed.Feed)
		if err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, sqlQuery("DeltaPlanner")); err != nil {
			return err
		}
		if !t.exists {
			// No applied snapshot to build on: every listed id is missing.
			res.Missing = len(ids)
			return nil
		}
		if res.Fetched, res.Extra, err = proveFetched(ctx, tx, pollID, ids); err != nil {
			return err
		}
		var removed []string
		if err := tx.QueryRow(ctx, t.sql("ProveDelta"), pgx.QueryExecModeDescribeExec, pollID, ids).
			Scan(&res.Kept, &removed); err != nil {
			return err
		}
		res.Missing = len(ids) - res.Kept - (res.Fetched - res.Extra)
		if res.Drift() != 0 {
			return nil
		}
		_, err = tx.Exec(ctx, sqlQuery("StageDelta"), pollID, len(ids), removed, d.Since)
		return err
	})
	if err != nil {
		return res, fmt.Errorf("postgis: composing the snapshot of poll %d of %s/%s: %w", pollID, feed.Jurisdiction, feed.Feed, err)
	}
	return res, nil
}

// proveFetched counts the distinct ids the poll fetched and those of
// them not in the sorted id list ids (a few hundred rows: a binary search
// each, rather than hashing the list in the database once more).
func proveFetched(ctx context.Context, tx pgx.Tx, pollID int64, ids []int64) (fetched, extra int, err error) {
	rows, err := tx.Query(ctx, sqlQuery("FetchedIDs"), pollID)
	if err != nil {
		return 0, 0, err
	}
	var id string
	_, err = pgx.ForEachRow(rows, []any{&id}, func() error {
		fetched++
		n, perr := strconv.ParseInt(id, 10, 64)
		if _, ok := slices.BinarySearch(ids, n); perr != nil || !ok || strconv.FormatInt(n, 10) != id {
			extra++
		}
		return nil
	})
	return fetched, extra, err
}

// wkbTypeNames name the WKB geometry types (an EWKB's type byte) as a
// staged page's profile does (feature.GeometryName); 0 is no geometry.
var wkbTypeNames = map[int32]string{
	1: "Point", 2: "LineString", 3: "Polygon", 4: "MultiPoint", 5: "MultiLineString", 6: "MultiPolygon", 7: "GeometryCollection",
}

// profileRows profiles the rows of query sql (properties as text, the
// EWKB type byte of the geometry) into p.
func profileRows(ctx context.Context, tx pgx.Tx, p *schema.Profile, sql string, args ...any) error {
	rows, err := tx.Query(ctx, sql, append([]any{pgx.QueryExecModeDescribeExec}, args...)...)
	if err != nil {
		return err
	}
	var props []byte
	var geomType int32
	_, err = pgx.ForEachRow(rows, []any{&props, &geomType}, func() error {
		// A stored row's properties are jsonb: they always scan.
		_ = p.AddFeature(props, wkbTypeNames[geomType])
		return nil
	})
	return err
}

// deltaProfile is the profile of a delta's snapshot: the applied
// snapshot's (feed_schemas.profile; the stored features profiled once
// when it has none), less the stored versions the delta replaces or
// removes, plus the fetched pages' (fetched, merged by the caller).
func deltaProfile(ctx context.Context, r *applyRun, stored []byte, fetched *schema.Profile) (schema.Profile, error) {
	var p schema.Profile
	if stored != nil {
		if err := json.Unmarshal(stored, &p); err != nil {
			return p, err
		}
	} else if err := profileRows(ctx, r.tx, &p, r.table.sql("TableProfile")); err != nil {
		return p, err
	}
	var gone schema.Profile
	if err := profileRows(ctx, r.tx, &gone, r.table.sql("DeltaSuperseded"), r.pollID); err != nil {
		return p, err
	}
	p.Subtract(&gone)
	p.Merge(fetched)
	return p, nil
}

// ReconcileDrift implements feeds' incremental store: the features of
// poll pollID's full dump that differ from the feed's stored ones (or are
// new) while their edit date is at most r.Cutoff or unknown.
func (s *Store) ReconcileDrift(ctx context.Context, pollID int64, feed feeds.FeedInfo, r source.Reconcile) (int, error) {
	var n int
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		t, err := lookupFeedTable(ctx, tx, pollID, feed.Jurisdiction, feed.Feed)
		if err != nil || !t.exists {
			return err
		}
		if _, err := tx.Exec(ctx, sqlQuery("DeltaPlanner")); err != nil {
			return err
		}
		return tx.QueryRow(ctx, t.sql("ReconcileDrift"), pgx.QueryExecModeDescribeExec, pollID, r.Field, r.Cutoff).Scan(&n)
	})
	if err != nil {
		return 0, fmt.Errorf("postgis: reconciling poll %d of %s/%s: %w", pollID, feed.Jurisdiction, feed.Feed, err)
	}
	return n, nil
}

// RecordFetchMode implements feeds' incremental store (polls.fetch_mode,
// polls.drift; drift < 0 is NULL).
func (s *Store) RecordFetchMode(ctx context.Context, pollID int64, mode string, drift int) error {
	var d *int
	if drift >= 0 {
		d = &drift
	}
	if _, err := s.pool.Exec(ctx, sqlQuery("RecordFetchMode"), pollID, mode, d); err != nil {
		return fmt.Errorf("postgis: record the fetch mode of poll %d: %w", pollID, err)
	}
	return nil
}
