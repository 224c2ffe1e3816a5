package postgis_test

import (
	"errors"
	"testing"
	"time"

	"github.com/ingestd/ingestd/feeds"
)

// TestStagingLostIsNeverApplied empties wake's staging table the way PostgreSQL's
// crash recovery empties an unlogged table (cmd/ingestd's TestCrashAndConfig
// does it with a real crash) and checks that what is left is never applied:
// the held accept, the apply of a poll that staged more pages after the
// "crash", and the resume of a parked poll all report a *StagingLostError,
// and the layer keeps its 20 features.
func TestStagingLostIsNeverApplied(t *testing.T) {
	t.Parallel()
	b := setup(t)
	feed := feedInfo("lost")
	twenty := generatePolygons(20)
	b.poll(t, feed, twenty[:10], twenty[10:])
	crash := func() {
		t.Helper()
		if _, err := b.pool.Exec(b.ctx, `TRUNCATE wake.ingestd_staged`); err != nil {
			t.Fatal(err)
		}
	}
	layer := func() int {
		return b.count(t, `SELECT count(*) FROM features WHERE feed = 'lost'`)
	}

	// Held, emptied, accepted: refused and discarded.
	held, _ := b.pollHeld(t, feed, twenty[:3])
	crash()
	_, err := b.store.AcceptHeld(b.ctx, feed.Jurisdiction, feed.Feed)
	var lost *feeds.StagingLostError
	if !errors.As(err, &lost) || lost.Staged != 0 || lost.Recorded != 3 || lost.PollID != held {
		t.Errorf("AcceptHeld of an emptied snapshot: %v, want a StagingLostError (staged 0 of 3)", err)
	}
	if s := b.pollStatus(t, held); s != "rejected" || layer() != 20 {
		t.Errorf("after the refused accept: poll %s, layer %d features; want rejected and 20", s, layer())
	}

	// Page 0 staged, emptied, page 1 staged: the apply refuses.
	id := b.stage(t, feed, twenty[:10])
	crash()
	if _, err := b.store.StagePage(b.ctx, id, 1, reader(twenty[10:]...)); err != nil {
		t.Fatal(err)
	}
	_, err = b.store.Apply(b.ctx, id, feed)
	if !errors.As(err, &lost) || lost.Staged != 10 || lost.Recorded != 20 || lost.Pages != 2 {
		t.Errorf("Apply after page 0 was emptied: %v, want a StagingLostError (staged 10 of 20, 2 pages)", err)
	}
	if err := b.store.FailPoll(b.ctx, id, feed, err); err != nil {
		t.Fatal(err)
	}
	if n := layer(); n != 20 {
		t.Errorf("the layer has %d features, want 20", n)
	}

	// Parked with page 0, emptied: the resume says the checkpoint is lost.
	id = b.stage(t, feed, twenty[:10])
	if err := b.store.SuspendPoll(b.ctx, feed, id, time.Time{}, errors.New("origin down")); err != nil {
		t.Fatal(err)
	}
	crash()
	_, err = b.store.ResumePoll(b.ctx, feed, id, 1)
	if !errors.Is(err, feeds.ErrCheckpointLost) || !errors.As(err, &lost) {
		t.Errorf("ResumePoll of an emptied checkpoint: %v, want ErrCheckpointLost and a StagingLostError", err)
	}
	if err := b.store.DiscardPoll(b.ctx, feed, id, err); err != nil {
		t.Fatal(err)
	}
	if n := b.count(t, `SELECT count(*) FROM staged_pages`); n != 0 {
		t.Errorf("%d staged pages left behind", n)
	}
}
