package postgis_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/ingestd/ingestd/feeds/postgis"
)

// TestFirstLoadCrashLeavesNothing: a first load that dies in the middle of
// its transaction — its table filled (and, in bulk, keyed) but not yet the
// feed's — leaves nothing visible: while it runs, another session sees no
// table and no feature; after its backend is terminated (a crash of the
// apply's process or connection) or a step fails, there is no table, no
// feature, no change-log row, the poll is still running with its staging
// whole, and applying the same poll again loads it.
func TestFirstLoadCrashLeavesNothing(t *testing.T) {
	t.Parallel()
	forFirstLoadPaths(t, func(t *testing.T, b *bundle) {
		steps := []string{"loaded"}
		if b.bulkPath(t) {
			steps = append(steps, "bulk keyed")
		}
		for _, step := range steps {
			for _, crash := range []bool{true, false} {
				testFirstLoadDies(t, b, step, crash)
			}
		}
	})
}

// bulkPath tells whether b's store loads a first snapshot with
// bulkFirstLoad: it loads a throwaway feed and counts.
func (b *bundle) bulkPath(t *testing.T) bool {
	t.Helper()
	before, _ := postgis.BulkFirstLoads(b.store)
	b.poll(t, feedInfo("probe-path"), generatePolygons(3))
	after, _ := postgis.BulkFirstLoads(b.store)
	return after > before
}

func testFirstLoadDies(t *testing.T, b *bundle, step string, crash bool) {
	feed := feedInfo(fmt.Sprintf("dies-%s-%v", step[:4], crash))
	layer := generatePolygons(50)
	id := b.stage(t, feed, layer[:25], layer[25:])

	errStep := errors.New("step failed")
	reached := false
	postgis.SetLoadHook(b.store, func(ctx context.Context, tx pgx.Tx, at string) error {
		if at != step {
			return nil
		}
		reached = true
		// Another session, mid-load: nothing of the load is visible.
		if exists, _, _ := b.feedTableState(t, feed); exists {
			t.Errorf("%s: the feed's table is visible mid-load", step)
		}
		if n := b.count(t, `SELECT count(*) FROM features WHERE jurisdiction = $1 AND feed = $2`,
			feed.Jurisdiction, feed.Feed); n != 0 {
			t.Errorf("%s: %d features visible mid-load", step, n)
		}
		if !crash {
			return errStep
		}
		var done bool
		if err := b.pool.QueryRow(ctx, `SELECT pg_terminate_backend($1)`, tx.Conn().PgConn().PID()).Scan(&done); err != nil || !done {
			t.Fatalf("terminate the apply's backend: %v, %v", done, err)
		}
		return nil
	})
	_, err := b.store.Apply(b.ctx, id, feed)
	postgis.SetLoadHook(b.store, nil)
	if !reached {
		t.Fatalf("%s: the load never reached the step (Apply: %v)", step, err)
	}
	if err == nil {
		t.Fatalf("%s, crash %v: Apply succeeded after the load died", step, crash)
	}
	if !crash && !errors.Is(err, errStep) {
		t.Errorf("%s: Apply = %v, want the step's error", step, err)
	}

	if exists, _, _ := b.feedTableState(t, feed); exists {
		t.Errorf("%s, crash %v: the dead load left the feed's table", step, crash)
	}
	for what, sql := range map[string]string{
		"features":        `SELECT count(*) FROM features WHERE jurisdiction = $1 AND feed = $2`,
		"change-log rows": `SELECT count(*) FROM feature_changes WHERE jurisdiction = $1 AND feed = $2`,
	} {
		if n := b.count(t, sql, feed.Jurisdiction, feed.Feed); n != 0 {
			t.Errorf("%s, crash %v: %d %s left", step, crash, n, what)
		}
	}
	var status string
	b.scalar(t, &status, `SELECT status FROM polls WHERE id = $1`, id)
	if n := b.count(t, `SELECT count(*) FROM staged_features WHERE poll_id = $1`, id); status != "running" || n != 50 {
		t.Errorf("%s, crash %v: poll %s with %d staged features, want running with 50", step, crash, status, n)
	}

	res, err := b.store.Apply(b.ctx, id, feed)
	if err != nil || res.Added != 50 {
		t.Fatalf("%s, crash %v: Apply again = %+v, %v; want 50 added", step, crash, res, err)
	}
	if exists, attached, _ := b.feedTableState(t, feed); !exists || !attached {
		t.Errorf("%s, crash %v: after the second apply: exists %v, attached %v", step, crash, exists, attached)
	}
}
