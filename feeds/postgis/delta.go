package postgis

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strconv"

	"github.com/jackc/pgx/v5"

	"github.com/ingestd/ingestd/feeds"
	"github.com/ingestd/ingestd/internal/idsort"
	"github.com/ingestd/ingestd/schema"
	"github.com/ingestd/ingestd/source"
)

// Incremental refresh (sql/delta.sql). A delta poll's staging
// holds only the features the server changed. ComposeDelta proves them,
// with the feed's applied features, against the server's id list and
// records the list (staged_deltas): the poll's snapshot is then the
// fetched features, the listed ones it did not fetch as they are stored,
// and nothing else. The apply (OneCopyDelta) diffs only the fetched rows and
// removes the unlisted ones, so its cost follows the change, not the
// layer.

// ComposeDelta implements feeds.Store: in one transaction,
// it proves poll pollID's fetched features and the feed's applied ones
// against d.IDs and, when they make exactly the listed snapshot, records
// the poll as a delta of d.IDs with the ids it removes. Nothing is
// copied: the proof reads the table's ids (from its key) and merges them
// with the sorted list in Go, cheaper than hashing both in PostgreSQL
// (scripts/bench.sh incremental measures a refresh).
//
// base, when ReadDeltaBase read the table's ids ahead (while the changes
// were fetched), spares that read: 35–50 ms of a 200 ms refresh of a
// 100,000-feature layer (scripts/bench.sh incremental). A read ahead that
// failed, or of another table, is read again here.
func (s *Store) ComposeDelta(ctx context.Context, pollID int64, feed feeds.FeedInfo, d source.Delta, base *feeds.DeltaBase) (feeds.DeltaResult, error) {
	var res feeds.DeltaResult
	listed := listedOf(d.IDs)
	var ahead *storedIDs
	if base != nil {
		table, ids, err := base.Wait(ctx)
		if ctx.Err() != nil {
			return res, ctx.Err()
		}
		if err == nil {
			ahead = &storedIDs{table: table, num: ids.Int, other: ids.Text}
		}
	}
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		t, err := s.tableOf(ctx, tx, pollID, feed.Jurisdiction, feed.Feed)
		if err != nil {
			return err
		}
		if !t.exists {
			// No applied snapshot to build on: every listed id is missing.
			res.Missing = listed.len()
			return nil
		}
		fetched, err := fetchedIDs(ctx, tx, pollID)
		if err != nil {
			return err
		}
		res.Fetched, res.Extra = fetched.count(listed)
		stored := ahead
		if stored == nil || stored.table != t.name {
			if stored, err = readStoredIDs(ctx, tx, t); err != nil {
				return err
			}
		}
		var removed []string
		res.Kept, removed = stored.prove(listed, fetched)
		res.Missing = listed.len() - res.Kept - (res.Fetched - res.Extra)
		if res.Drift() != 0 {
			return nil
		}
		if removed == nil {
			removed = []string{} // an empty array, not NULL
		}
		_, err = tx.Exec(ctx, sqlQuery("StageDelta"), pollID, listed.len(), removed, d.Since.String())
		return err
	})
	if err != nil {
		return res, fmt.Errorf("postgis: composing the snapshot of poll %d of %s/%s: %w", pollID, feed.Jurisdiction, feed.Feed, err)
	}
	return res, nil
}

// listedIDs is a delta's id list as its proof reads it: the integer ids
// and the text ids in canonical decimal (num, sorted and distinct), any
// other text (other).
type listedIDs struct {
	num   []int64
	other map[string]bool
}

// listedOf sorts out ids for the proof. A kind lists integer ids sorted
// (ArcGIS's are, from its id list), which then are not sorted again.
func listedOf(ids source.IDs) listedIDs {
	l := listedIDs{num: slices.Clone(ids.Int)}
	for _, id := range ids.Text {
		if n, ok := canonicalInt([]byte(id)); ok {
			l.num = append(l.num, n)
			continue
		}
		if l.other == nil {
			l.other = make(map[string]bool, len(ids.Text))
		}
		l.other[id] = true
	}
	if !slices.IsSorted(l.num) {
		idsort.Int64s(l.num)
	}
	l.num = slices.Compact(l.num)
	return l
}

// len is the number of distinct ids listed.
func (l listedIDs) len() int { return len(l.num) + len(l.other) }

// fetchedSet is the distinct ids a delta poll fetched: object ids in
// canonical decimal (num), any other text (other).
type fetchedSet struct {
	num   map[int64]bool
	other map[string]bool
}

// fetchedIDs reads the distinct ids poll pollID staged (a few hundred).
func fetchedIDs(ctx context.Context, tx pgx.Tx, pollID int64) (fetchedSet, error) {
	f := fetchedSet{num: map[int64]bool{}, other: map[string]bool{}}
	tx, err := withStaging(ctx, tx, pollID)
	if err != nil {
		return f, err
	}
	rows, err := tx.Query(ctx, sqlQuery("FetchedIDs"), pollID)
	if err != nil {
		return f, err
	}
	var id string
	_, err = pgx.ForEachRow(rows, []any{&id}, func() error {
		if n, ok := canonicalInt([]byte(id)); ok {
			f.num[n] = true
		} else {
			f.other[id] = true
		}
		return nil
	})
	return f, err
}

// count is how many ids were fetched, and how many of them the list
// lacks.
func (f fetchedSet) count(l listedIDs) (fetched, extra int) {
	for id := range f.other {
		if !l.other[id] {
			extra++
		}
	}
	for n := range f.num {
		if _, ok := slices.BinarySearch(l.num, n); !ok {
			extra++
		}
	}
	return len(f.num) + len(f.other), extra
}

// storedIDs is a feed table's ids: object ids in canonical decimal
// (num, unsorted: the key's order is text's), any other text (other).
type storedIDs struct {
	table string
	num   []int64
	other []string
}

// ReadDeltaBase implements feeds.Store: it reads the feed's
// stored ids in the background, for ComposeDelta (a connection of its
// own while the poll's stages the changes).
func (s *Store) ReadDeltaBase(ctx context.Context, pollID int64, feed feeds.FeedInfo) *feeds.DeltaBase {
	base := feeds.NewDeltaBase()
	go func() {
		var read *storedIDs
		var err error
		defer func() {
			// The poll's recover cannot reach this goroutine: a panic
			// here would end the process. ComposeDelta reads again.
			if r := recover(); r != nil {
				read, err = nil, fmt.Errorf("postgis: reading the stored ids ahead: %v", r)
			}
			if read == nil {
				read = &storedIDs{}
			}
			base.Done(read.table, source.IDs{Int: read.num, Text: read.other}, err)
		}()
		err = pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
			t, err := s.tableOf(ctx, tx, pollID, feed.Jurisdiction, feed.Feed)
			if err != nil || !t.exists {
				return err
			}
			read, err = readStoredIDs(ctx, tx, t)
			return err
		})
	}()
	return base
}

// readStoredIDs reads the feed's stored ids (its table's key), the object
// ids sorted (mergeStored's order: sorting them here, in the read-ahead,
// keeps the sort off the poll's path); nil with an error.
func readStoredIDs(ctx context.Context, tx pgx.Tx, t feedTable) (*storedIDs, error) {
	rows, err := tx.Query(ctx, t.sql("StoredIDs"))
	if err != nil {
		return nil, err
	}
	ids := &storedIDs{table: t.name}
	for rows.Next() {
		b := rows.RawValues()[0]
		if n, ok := canonicalInt(b); ok {
			ids.num = append(ids.num, n)
		} else {
			ids.other = append(ids.other, string(b))
		}
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	idsort.Int64s(ids.num)
	return ids, nil
}

// prove merges the stored ids with the listed ones: kept counts the
// listed ids stored and not fetched, removed names the stored ids neither
// listed nor fetched.
func (st *storedIDs) prove(l listedIDs, fetched fetchedSet) (kept int, removed []string) {
	for _, id := range st.other {
		switch {
		case fetched.other[id]:
		case l.other[id]:
			kept++
		default:
			removed = append(removed, id)
		}
	}
	more, gone := mergeStored(l.num, st.num, fetched.num)
	return kept + more, append(removed, gone...)
}

// mergeStored merges the sorted stored object ids (distinct: the table's
// key; readStoredIDs sorts them) with the sorted, distinct list ids: kept
// counts those listed and not fetched, removed those neither listed nor
// fetched.
func mergeStored(ids, stored []int64, fetched map[int64]bool) (kept int, removed []string) {
	i := 0
	for _, n := range stored {
		for i < len(ids) && ids[i] < n {
			i++
		}
		switch listed := i < len(ids) && ids[i] == n; {
		case fetched[n]:
		case listed:
			kept++
		default:
			removed = append(removed, strconv.FormatInt(n, 10))
		}
	}
	return kept, removed
}

// canonicalInt parses b as an int64 in canonical decimal (what
// strconv.FormatInt writes: no sign but a minus, no leading zero), the
// spelling of an object id as a feature id; ok is false for anything
// else.
func canonicalInt(b []byte) (n int64, ok bool) {
	neg := len(b) > 0 && b[0] == '-'
	digits := b
	if neg {
		digits = b[1:]
	}
	if len(digits) == 0 || len(digits) > 19 || (digits[0] == '0' && (len(digits) > 1 || neg)) {
		return 0, false
	}
	var u uint64
	for _, c := range digits {
		if c < '0' || c > '9' {
			return 0, false
		}
		u = u*10 + uint64(c-'0')
	}
	switch {
	case !neg && u <= math.MaxInt64:
		return int64(u), true
	case neg && u <= 1<<63:
		return int64(-u), true // -(1<<63) wraps to itself: MinInt64
	}
	return 0, false
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

// ReconcileDrift implements feeds.Store: the features of
// poll pollID's full dump that differ from the feed's stored ones (or are
// new) while their edit date is at most r.Cutoff or unknown.
func (s *Store) ReconcileDrift(ctx context.Context, pollID int64, feed feeds.FeedInfo, r source.Reconcile) (int, error) {
	var n int
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		tx, err := withStaging(ctx, tx, pollID)
		if err != nil {
			return err
		}
		t, err := s.tableOf(ctx, tx, pollID, feed.Jurisdiction, feed.Feed)
		if err != nil || !t.exists {
			return err
		}
		if _, err := tx.Exec(ctx, sqlQuery("DeltaPlanner")); err != nil {
			return err
		}
		return tx.QueryRow(ctx, t.sql("OneCopyReconcileDrift"), pgx.QueryExecModeDescribeExec, pollID, r.Field, r.Cutoff).Scan(&n)
	})
	if err != nil {
		return 0, fmt.Errorf("postgis: reconciling poll %d of %s/%s: %w", pollID, feed.Jurisdiction, feed.Feed, err)
	}
	return n, nil
}

// RecordFetchMode implements feeds.Store (polls.fetch_mode,
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
