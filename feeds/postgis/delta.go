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
// holds only the features the server changed; ComposeDelta adds the
// previous snapshot's other listed features as one more page, before the
// apply, which then sees a whole snapshot: the copied rows keep their
// stored hashes, so it finds them unchanged and writes only what changed.

// ComposeDelta implements feeds' incremental store: in one transaction, it
// copies the feed's features listed in d.IDs and not fetched into poll
// pollID's staging as a page after its last (with its profile, for the
// typed view), and proves the composed snapshot against d.IDs.
func (s *Store) ComposeDelta(ctx context.Context, pollID int64, feed feeds.FeedInfo, d source.Delta) (feeds.DeltaResult, error) {
	var res feeds.DeltaResult
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		t, err := lookupFeedTable(ctx, tx, pollID, feed.Jurisdiction, feed.Feed)
		if err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, sqlQuery("DeltaPlanner")); err != nil {
			return err
		}
		var page int
		if err := tx.QueryRow(ctx, sqlQuery("ComposedPage"), pollID).Scan(&page); err != nil {
			return err
		}
		if t.exists {
			if res.Kept, err = composeKept(ctx, tx, t, pollID, page, d.IDs); err != nil {
				return err
			}
		}
		res.Fetched, res.Extra, err = proveFetched(ctx, tx, pollID, page, d.IDs)
		res.Missing = len(d.IDs) - res.Kept - (res.Fetched - res.Extra)
		return err
	})
	if err != nil {
		return res, fmt.Errorf("postgis: composing the snapshot of poll %d of %s/%s: %w", pollID, feed.Jurisdiction, feed.Feed, err)
	}
	return res, nil
}

// composeKept copies the kept features into page of the poll's staging
// and records the page with their profile; it returns how many it copied.
func composeKept(ctx context.Context, tx pgx.Tx, t feedTable, pollID int64, page int, ids []int64) (int, error) {
	var profile schema.Profile
	rows, err := tx.Query(ctx, t.sql("ComposeDelta"), pgx.QueryExecModeDescribeExec, pollID, ids, page)
	if err != nil {
		return 0, err
	}
	var props []byte
	var geomType int32
	_, err = pgx.ForEachRow(rows, []any{&props, &geomType}, func() error {
		return profile.AddFeature(props, wkbTypeNames[geomType])
	})
	if err != nil {
		return 0, err
	}
	n := int(profile.Features)
	if n == 0 {
		return 0, nil
	}
	raw, err := json.Marshal(&profile)
	if err != nil {
		return 0, err
	}
	_, err = tx.Exec(ctx, sqlQuery("RecordComposedPage"), pollID, page, n, raw)
	return n, err
}

// wkbTypeNames name the WKB geometry types (an EWKB's type byte) as a
// staged page's profile does (feature.GeometryName); 0 is no geometry.
var wkbTypeNames = map[int32]string{
	1: "Point", 2: "LineString", 3: "Polygon", 4: "MultiPoint", 5: "MultiLineString", 6: "MultiPolygon", 7: "GeometryCollection",
}

// proveFetched counts the distinct ids the poll fetched (its pages before
// page) and those of them not in the sorted id list ids.
func proveFetched(ctx context.Context, tx pgx.Tx, pollID int64, page int, ids []int64) (fetched, extra int, err error) {
	rows, err := tx.Query(ctx, sqlQuery("FetchedIDs"), pollID, page)
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
