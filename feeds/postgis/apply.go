package postgis

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/ingestd/ingestd/config"
	"github.com/ingestd/ingestd/feeds"
	"github.com/ingestd/ingestd/schema"
)

// Apply replaces the feed's features with the poll's snapshot in one
// transaction and records the poll as succeeded, unless a guard holds the
// snapshot: the poll then ends as held with its staging kept, feed_status
// shows the hold, and the error wraps a *feeds.HeldError (the caller must not
// FailPoll it). A snapshot that applies supersedes an older held one.
//
// Rows whose content hash did not change are not written at all (no dead
// tuples, no WAL, no index churn for the common case of a layer that barely
// changes); features.last_seen_at is therefore not stored per row but is the
// feed's last_success_at (view features_seen). Every added, modified and
// removed feature gets a feature_changes row in the same transaction (a
// first load one 'loaded' row: feature_changes_expanded lists them), and a
// modified or removed one's old version goes to feature_history. When
// the snapshot holds a feature id more than once, the last one in page and
// ordinal order wins and the others are counted in polls.duplicate_ids.
// Geometries in another CRS are transformed to EPSG:4326 (SRID 0 is taken as
// 4326) and forced to 2D.
func (s *Store) Apply(ctx context.Context, pollID int64, feed feeds.FeedInfo) (feeds.ApplyResult, error) {
	var r *applyRun
	err := s.inApplyTx(ctx, func(tx pgx.Tx) error {
		if err := lockFeed(ctx, tx, feed.Jurisdiction, feed.Feed); err != nil {
			return err
		}
		stx, err := lockRunningPoll(ctx, tx, pollID, feed)
		if err != nil {
			return err
		}
		if stx == nil {
			if stx, err = withStaging(ctx, tx, pollID); err != nil {
				return err
			}
		}
		// Every statement of the apply names the poll's staging table.
		tx = stx
		// A crash of PostgreSQL during the poll emptied the pages it had
		// staged; what is left must not replace the layer.
		if err := checkStagingWhole(ctx, tx, pollID, feed.Jurisdiction, feed.Feed, "staged snapshot", -1); err != nil {
			return err
		}
		r = newApplyRun(tx, pollID, feed.Jurisdiction, feed.Feed, &feed.Guard, &feed)
		return s.applySnapshot(ctx, r)
	})
	if err != nil {
		return feeds.ApplyResult{}, fmt.Errorf("postgis: apply poll %d of %s/%s: %w", pollID, feed.Jurisdiction, feed.Feed, nodeLost(err))
	}
	out := r.out
	if out.held != "" {
		// Debug: the poll logs the hold at error level with its own context.
		s.logger.DebugContext(ctx, "snapshot held", "poll_id", pollID, "jurisdiction", feed.Jurisdiction,
			"feed", feed.Feed, "reason", out.held, "previous_features", out.previous, "snapshot_features", out.res.Features)
		return feeds.ApplyResult{}, fmt.Errorf("postgis: apply poll %d: %w", pollID, &feeds.HeldError{
			Feed: feed.Jurisdiction + "/" + feed.Feed, PollID: pollID, Reason: out.held,
			Previous: out.previous, Snapshot: out.res.Features})
	}
	s.logger.DebugContext(ctx, "applied snapshot", "poll_id", pollID, "jurisdiction", feed.Jurisdiction,
		"feed", feed.Feed, "features", out.res.Features, "added", out.res.Added, "modified", out.res.Modified,
		"removed", out.res.Removed, "duplicate_ids", out.duplicates)
	return out.res, nil
}

// applyOutcome is what applySnapshot did.
type applyOutcome struct {
	res        feeds.ApplyResult
	duplicates int
	previous   int
	// held is the guard's reason when the snapshot was held ("" if applied).
	held string
}

// applyRun is one apply of a poll's snapshot: what its steps read (the
// transaction, the poll, the feed and its guard) and what they find and
// count. Every step takes the run, so that applySnapshot lists the steps in
// the order the apply takes them, and a step's inputs and outputs are named
// fields rather than positional parameters and out-pointers.
type applyRun struct {
	// tx holds the feed's apply lock and the poll's row.
	tx                 pgx.Tx
	pollID             int64
	jurisdiction, feed string
	// accept: an operator accepted the snapshot; no guard is asked.
	accept    bool
	maxShrink float64
	// bbox is the jurisdiction's extent (EPSG:4326), nil for none.
	bbox                            []float64
	skipInvalid, skipInvalidFeature bool
	// checkPages, unless nil, is the feed whose pages must be disjoint (see
	// checkPagesDisjoint and SplitIDs); a snapshot that is not fails the
	// transaction, which writes nothing.
	checkPages *feeds.FeedInfo

	// table is the feed's table; firstLoad: it does not exist yet.
	table     feedTable
	firstLoad bool
	// delta: the poll fetched what changed since the feed's last apply
	// and ComposeDelta proved it (staged_deltas): OneCopyDelta applies it.
	// fetched is the distinct features it staged.
	delta   bool
	fetched int
	// checked: the ids on two pages were counted (split) before anything
	// was written; unchanged: the snapshot is the feed's features.
	checked, unchanged bool
	invalidFeatures    feeds.InvalidFeatures
	// pages is how many pages the poll staged; split how many ids are on
	// more than one (nil: unknown); held the guards' verdict (nil: none).
	pages int
	split *int
	held  *string
	out   applyOutcome

	// Typed layers (schema.go): what the protocol declared, whether the
	// decoder typed text values by it, schema_change: hold, and what the
	// schema steps found.
	declared   *schema.Declared
	typedText  bool
	schemaHold bool
	sch        schemaState

	// keepHistory: the feed keeps the versions a snapshot supersedes
	// (history.go).
	keepHistory bool

	// common is the feed's conform into a common layer (common.go), nil
	// for none; commonKnown is false when the apply does not know the
	// feed's configuration (an accepted held snapshot).
	common      *feeds.CommonConform
	commonKnown bool
	// commonSkips: the features the conform could not map (common_history.go).
	commonSkips commonSkips

	// oc is what the steps of an apply on the one-copy layout find
	// (onecopy_apply.go).
	oc oneCopyState
}

// newApplyRun returns the run of an apply of poll pollID of the feed in tx.
// guard nil applies unconditionally (an operator accepted the snapshot).
func newApplyRun(tx pgx.Tx, pollID int64, jurisdiction, feed string, guard *feeds.Guard, checkPages *feeds.FeedInfo) *applyRun {
	r := &applyRun{tx: tx, pollID: pollID, jurisdiction: jurisdiction, feed: feed, checkPages: checkPages,
		accept: guard == nil, maxShrink: feeds.DefaultMaxShrink}
	if guard != nil {
		r.maxShrink = guard.EffectiveMaxShrink()
		if b := guard.BBox; b != nil {
			r.bbox = []float64{b.MinX, b.MinY, b.MaxX, b.MaxY}
		}
		r.skipInvalid, r.skipInvalidFeature = guard.SkipInvalid, guard.SkipInvalidFeature
		r.schemaHold = guard.SchemaChange == config.SchemaHold
	}
	if checkPages != nil {
		r.declared, r.typedText = checkPages.Declared, checkPages.TypedText
		r.common, r.commonKnown = checkPages.Common, true
	}
	return r
}

// applyStep is one step of applySnapshot.
type applyStep func(context.Context, *applyRun) error

// applySnapshot diffs and applies (or holds) the run's snapshot in r.tx,
// which holds the feed's lock and the poll's row. The steps are those of the
// docs/polling.md ("What a poll does"), step 4; each does nothing when an earlier
// one made it moot (an unchanged snapshot is not diffed, a bulk first load
// is not loaded again).
func (s *Store) applySnapshot(ctx context.Context, r *applyRun) error {
	return s.applyOneCopy(ctx, r)
}

// planForBulk sets the planner for the apply's bulk statements (sql/apply.sql,
// ApplyPlanner, says why).
func planForBulk(ctx context.Context, r *applyRun) error {
	_, err := r.tx.Exec(ctx, sqlQuery("ApplyPlanner"))
	return err
}

// countInvalidFeatures sums the invalid features the poll's pages counted
// while staging into polls.invalid_features, whether the snapshot then
// applies or is held.
func countInvalidFeatures(ctx context.Context, r *applyRun) error {
	var counts map[string]int
	err := r.tx.QueryRow(ctx, sqlQuery("CountInvalidFeatures"), r.pollID).Scan(&counts)
	r.invalidFeatures = feeds.InvalidFeatures{
		InvalidUTF8:      counts[reasonNames[reasonInvalidUTF8]],
		NUL:              counts[reasonNames[reasonNUL]],
		LoneSurrogate:    counts[reasonNames[reasonLoneSurrogate]],
		IDTooLong:        counts[reasonNames[reasonIDTooLong]],
		InvalidJSON:      counts[reasonNames[reasonInvalidJSON]],
		NumberOutOfRange: counts[reasonNames[reasonNumberRange]],
	}
	return err
}

// tally counts the ids the snapshot repeats, and its invalid features.
func tally(_ context.Context, r *applyRun) error {
	staged := r.out.res.Features
	if r.delta {
		// OneCopyDelta counted them; a snapshot the schema held was not
		// diffed, and its repeats are not known.
		staged = r.fetched
		if r.sch.heldHere {
			staged = int(r.table.staged)
		}
	}
	r.out.duplicates = int(r.table.staged) - staged
	r.out.res.InvalidFeatures = r.invalidFeatures
	return nil
}

// supersedeHeld ends the feed's older held snapshot, if any: whatever this
// snapshot's fate, the operator decides on the newest, and the older one's
// staging is dead weight.
func supersedeHeld(ctx context.Context, r *applyRun) error {
	var oldHeld *int64
	if err := r.tx.QueryRow(ctx, sqlQuery("HeldPollOfFeed"), r.jurisdiction, r.feed).Scan(&oldHeld); err != nil &&
		!errors.Is(err, pgx.ErrNoRows) {
		return err
	}
	if oldHeld == nil || *oldHeld == r.pollID {
		return nil
	}
	if _, err := r.tx.Exec(ctx, sqlQuery("SupersedeHeld"), *oldHeld); err != nil {
		return err
	}
	return deleteStaging(ctx, r.tx, *oldHeld)
}

// recordHeld ends the poll as held, its staging kept, and shows the hold on
// the feed.
func recordHeld(ctx context.Context, r *applyRun) error {
	r.out.held = *r.held
	r.out.res = feeds.ApplyResult{Features: r.out.res.Features}
	if _, err := r.tx.Exec(ctx, sqlQuery("RecordHeldPoll"),
		r.pollID, r.out.held, r.pages, r.out.res.Features, r.out.duplicates); err != nil {
		return err
	}
	_, err := r.tx.Exec(ctx, sqlQuery("RecordHeldFeed"), r.jurisdiction, r.feed, r.pollID, r.out.held)
	return err
}

// recordApplied ends the poll as succeeded with its counts, records the
// feed's success, deletes the poll's staging (truncating it when the poll
// is large and alone: truncateStaging) and, for a first load, attaches the
// feed's table.
func (s *Store) recordApplied(ctx context.Context, r *applyRun) error {
	res := r.out.res
	if _, err := r.tx.Exec(ctx, sqlQuery("RecordAppliedPoll"), r.pollID, r.pages, res.Features, res.Added,
		res.Modified, res.Removed, res.Unchanged, r.out.duplicates, res.InvalidGeometries); err != nil {
		return err
	}
	if _, err := r.tx.Exec(ctx, sqlQuery("RecordAppliedFeed"), r.jurisdiction, r.feed, res.Features, r.pollID); err != nil {
		return err
	}
	if r.table.staged < s.bulkIndexMin {
		if err := deleteStaging(ctx, r.tx, r.pollID); err != nil {
			return err
		}
	} else if err := truncateStaging(ctx, r.tx, r.pollID); err != nil {
		return err
	}
	if err := notifyChanges(ctx, r); err != nil {
		return err
	}
	return nil
}

// checkSplit fails the apply when r.split (SplitIDs' count, nil when
// unknown) says ids were staged on more than one page of a poll whose pages
// must be disjoint (r.checkPages non-nil); checkPagesDisjoint names them.
func checkSplit(ctx context.Context, r *applyRun) error {
	if r.checkPages == nil || (r.split != nil && *r.split == 0) {
		return nil
	}
	if err := checkPagesDisjoint(ctx, r.tx, r.pollID, *r.checkPages); err != nil {
		return err
	}
	if r.split != nil {
		return fmt.Errorf("%d feature ids appear on more than one page", *r.split)
	}
	return nil
}

// checkPagesDisjoint refuses a snapshot in which one feature id was staged on
// two different pages: the server's paging order was unstable (features
// skipped while others repeat), or the feed's id_property is not unique.
// Either way the snapshot cannot be trusted to be complete. Checked here over
// every staged page, a resumed poll's earlier pages included, rather than in
// memory while fetching, so memory does not grow with the layer.
func checkPagesDisjoint(ctx context.Context, tx pgx.Tx, pollID int64, feed feeds.FeedInfo) error {
	tx, err := withStaging(ctx, tx, pollID)
	if err != nil {
		return err
	}
	var n int
	var example, pages *string
	err = tx.QueryRow(ctx, sqlQuery("PagesDisjoint"), pollID).Scan(&n, &example, &pages)
	if err != nil || n == 0 {
		return err
	}
	return &feeds.IncompleteSnapshotError{URL: feed.URL, Reason: fmt.Sprintf(
		"%d feature ids appear on more than one page (e.g. %s on pages %s): the server's paging order is unstable, "+
			"or id_property does not identify features uniquely", n, quoteInput(*example), *pages)}
}

// lockFeed serialises applies (and held decisions) of one feed across
// instances; the counts would be wrong if two snapshots diffed concurrently.
func lockFeed(ctx context.Context, tx pgx.Tx, jurisdiction, feed string) error {
	_, err := tx.Exec(ctx, sqlQuery("AdvisoryXactLock"), ApplyLockClass, jurisdiction+"/"+feed)
	return err
}

// runApply runs the apply statement sql with args, scanning its row into
// dest. When a geometry's transform fails — a coordinate outside its CRS's
// domain, which PROJ refuses and PostGIS turns into an error that aborts the
// statement — it runs it again with transforms that give such a geometry no
// value (it is then invalid: stored without it, or skipped). The first run
// stays the plain one: the safe transform catches errors in a
// subtransaction per call, which parallel workers cannot run.
func runApply(ctx context.Context, tx pgx.Tx, sql string, args []any, dest ...any) error {
	sp, err := tx.Begin(ctx) // a savepoint
	if err != nil {
		return err
	}
	err = sp.QueryRow(ctx, sql, append([]any{pgx.QueryExecModeDescribeExec}, args...)...).Scan(dest...)
	if err == nil {
		return sp.Commit(ctx)
	}
	if rbErr := sp.Rollback(ctx); rbErr != nil || !isTransformError(err) {
		return err
	}
	return tx.QueryRow(ctx, safeTransforms(sql), append([]any{pgx.QueryExecModeDescribeExec}, args...)...).Scan(dest...)
}

// isTransformError tells whether err is PostGIS failing to transform a
// coordinate ("transform: Point outside of projection domain").
func isTransformError(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && pgErr.Code == "XX000" && strings.HasPrefix(pgErr.Message, "transform:")
}

// safeTransforms is sql with every ST_Transform replaced by
// ingestd_try_transform (migration 18), which gives NULL where ST_Transform
// fails for a coordinate.
func safeTransforms(sql string) string {
	return strings.ReplaceAll(sql, "ST_Transform(", "ingestd_try_transform(")
}

// defaultSmallSnapshot is the size up to which an apply first checks
// whether the snapshot changes anything with a statement of its own; above
// it with OneCopyUnchangedLarge.
const defaultSmallSnapshot = 10000
