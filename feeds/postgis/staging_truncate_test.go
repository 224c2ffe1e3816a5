package postgis_test

import (
	"testing"

	ft "github.com/ingestd/ingestd/feature"
	"github.com/ingestd/ingestd/feeds/postgis"
)

// stagingFile is the file of wake's staging table: TRUNCATE gives the
// table a new one.
func (b *bundle) stagingFile(t *testing.T) int64 {
	t.Helper()
	var n int64
	b.scalar(t, &n, `SELECT relfilenode::bigint FROM pg_class WHERE oid = 'wake.ingestd_staged'::regclass`)
	return n
}

// TestLargeApplyTruncatesStaging: a large poll's staging goes with its
// apply — deleted while another poll has features staged (they stay) or
// another session uses staging (the apply does not wait for it), and
// truncated when the poll is alone.
func TestLargeApplyTruncatesStaging(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.store = postgis.New(b.pool)
	postgis.SetBulkIndexMin(b.store, 3)
	page := func(n int) []ft.Feature {
		return []ft.Feature{
			feature("a", point(1, 1, 4326), props("n", n)), feature("b", point(2, 2, 4326), props("n", n)),
			feature("c", point(3, 3, 4326), props("n", n)),
		}
	}
	staged := func(poll int64) int {
		return b.count(t, `SELECT count(*) FROM staged_features WHERE poll_id = $1`, poll)
	}
	other := b.stage(t, feedInfo("other"), page(1)) // wake's first poll makes its staging table
	file := b.stagingFile(t)
	large, _ := b.poll(t, feedInfo("large"), page(1))
	if staged(large) != 0 || staged(other) != 3 || b.stagingFile(t) != file {
		t.Fatalf("after a large apply beside another poll's staging: %d and %d rows staged (want 0 and 3), file %d → %d (want kept)",
			staged(large), staged(other), file, b.stagingFile(t))
	}

	// Another session reads staging: the apply deletes without waiting.
	conn, err := b.pool.Acquire(b.ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Release()
	tx, err := conn.Begin(b.ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(b.ctx, `SELECT count(*) FROM wake.ingestd_staged`); err != nil {
		t.Fatal(err)
	}
	again, _ := b.poll(t, feedInfo("large"), page(2))
	if err := tx.Rollback(b.ctx); err != nil {
		t.Fatal(err)
	}
	if staged(again) != 0 || staged(other) != 3 || b.stagingFile(t) != file {
		t.Fatalf("after a large apply while staging was in use: %d and %d rows staged (want 0 and 3), file %d → %d (want kept)",
			staged(again), staged(other), file, b.stagingFile(t))
	}

	if _, err := b.store.Apply(b.ctx, other, feedInfo("other")); err != nil {
		t.Fatal(err)
	}
	if n := b.count(t, `SELECT count(*) FROM staged_features`); n != 0 || b.stagingFile(t) == file {
		t.Fatalf("after the last staged poll's apply: %d rows staged, file %d → %d; want none, truncated (a new file)", n, file, b.stagingFile(t))
	}
	if n := b.count(t, `SELECT count(*) FROM features WHERE jurisdiction = 'wake'`); n != 6 {
		t.Fatalf("%d features stored; want 3 for each feed", n)
	}
}

// TestTruncateIsPerJurisdiction: a poll of another jurisdiction with rows
// staged (in its own schema's table) does not keep a large apply from
// truncating its jurisdiction's staging; the other's rows stay.
func TestTruncateIsPerJurisdiction(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.store = postgis.New(b.pool)
	postgis.SetBulkIndexMin(b.store, 3)
	page := []ft.Feature{
		feature("a", point(1, 1, 4326), props("n", 1)), feature("b", point(2, 2, 4326), props("n", 1)),
		feature("c", point(3, 3, 4326), props("n", 1)),
	}
	durham := feedInfo("other")
	durham.Jurisdiction = "durham"
	other := b.stage(t, durham, page)
	large := b.stage(t, feedInfo("large"), page)
	file := b.stagingFile(t)
	if _, err := b.store.Apply(b.ctx, large, feedInfo("large")); err != nil {
		t.Fatal(err)
	}
	if n := b.count(t, `SELECT count(*) FROM wake.ingestd_staged`); n != 0 || b.stagingFile(t) == file {
		t.Errorf("wake's staging after its apply: %d rows, file %d → %d; want none, truncated", n, file, b.stagingFile(t))
	}
	if n := b.count(t, `SELECT count(*) FROM durham.ingestd_staged WHERE poll_id = $1`, other); n != 3 {
		t.Errorf("durham's poll has %d rows staged, want its 3", n)
	}
}
