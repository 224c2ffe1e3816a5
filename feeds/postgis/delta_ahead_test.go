package postgis_test

import (
	"testing"

	ft "github.com/ingestd/ingestd/feature"
	"github.com/ingestd/ingestd/source"
)

// TestReadDeltaBaseFailedRead: a read-ahead of the stored ids that fails
// (here the feed's table is no longer one: the lookup finds it, the read
// of its key does not) is the composition's error, not a panic in the
// read-ahead's goroutine, which no poll's recover reaches.
func TestReadDeltaBaseFailedRead(t *testing.T) {
	t.Parallel()
	b := setup(t)
	feed := feedInfo("ahead")
	b.poll(t, feed, []ft.Feature{feature("1", point(1, 1, 4326), props("n", 1))})
	// The layer table keeps its content hash column (the lookup finds
	// it) but loses its key.
	if _, err := b.pool.Exec(b.ctx, `DROP TABLE wake.ahead; CREATE TABLE wake.ahead (x int, ingestd_hash bytea)`); err != nil {
		t.Fatal(err)
	}
	poll := b.begin(t, feed)
	base := b.store.ReadDeltaBase(b.ctx, poll, feed)
	if _, err := b.store.ComposeDelta(b.ctx, poll, feed, source.Delta{IDs: source.IDs{Int: []int64{1}}}, base); err == nil {
		t.Fatal("composing over a table whose ids cannot be read: no error")
	}
}
