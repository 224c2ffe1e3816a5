package postgis_test

import (
	"errors"
	"fmt"
	"testing"
	"time"

	ft "github.com/ingestd/ingestd/feature"
	"github.com/ingestd/ingestd/feeds/postgis"
)

// stalledReader yields features and, after stallAt of them, signals
// stalled and waits for release before yielding the rest, then err (io.EOF
// when nil): a body arriving slowly, then cut short.
type stalledReader struct {
	sliceReader
	stallAt  int
	n        int
	stalled  chan struct{}
	released chan struct{}
}

func (r *stalledReader) Next() (*ft.Feature, error) {
	if r.n == r.stallAt {
		close(r.stalled)
		<-r.released
	}
	r.n++
	return r.sliceReader.Next()
}

// TestStagePageCutShortIsInvisible: while a page streams in (rows of it
// already sent to PostgreSQL), no other session sees any of it, and once
// its body is cut short nothing of it stays: the page is not staged, a
// resume continues at that page, and an apply of the pages before it
// applies them alone.
func TestStagePageCutShortIsInvisible(t *testing.T) {
	t.Parallel()
	b := setup(t)
	feed := feedInfo("streamed")
	id := b.stage(t, feed, generatePolygons(10))
	layer := generatePolygons(3000)
	r := &stalledReader{sliceReader: sliceReader{features: layer[10:], err: &pageError{page: 1}},
		stallAt: 2500, stalled: make(chan struct{}), released: make(chan struct{})}
	done := make(chan error, 1)
	go func() {
		_, err := b.store.StagePage(b.ctx, id, 1, r)
		done <- err
	}()
	select {
	case <-r.stalled:
	case err := <-done:
		t.Fatalf("StagePage returned before the stall: %v", err)
	case <-time.After(time.Minute): // a hang ceiling: the stall is the event awaited
		t.Fatal("the reader never reached the stall")
	}
	// 2,500 features are encoded, most of them sent: still invisible.
	if got := b.count(t, `SELECT count(*) FROM staged_features WHERE poll_id = $1`, id); got != 10 {
		t.Errorf("mid-page: %d staged rows visible, want page 0's 10", got)
	}
	if got := b.count(t, `SELECT count(*) FROM staged_pages WHERE poll_id = $1`, id); got != 1 {
		t.Errorf("mid-page: %d staged pages, want 1", got)
	}
	close(r.released)
	var pe *pageError
	if err := <-done; !errors.As(err, &pe) {
		t.Fatalf("StagePage = %v, want the reader's *pageError", err)
	}
	if got := b.count(t, `SELECT count(*) FROM staged_features WHERE poll_id = $1 AND page = 1`, id); got != 0 {
		t.Errorf("the cut page left %d staged rows", got)
	}
	if err := b.store.SuspendPoll(b.ctx, feed, id, time.Time{}, errors.New("cut")); err != nil {
		t.Fatal(err)
	}
	next, err := b.store.ResumePoll(b.ctx, feed, id, 1)
	if err != nil || next != 1 {
		t.Fatalf("ResumePoll = %d, %v; want to continue at the cut page 1", next, err)
	}
	res, err := b.store.Apply(b.ctx, id, feed)
	if err != nil || res.Features != 10 {
		t.Errorf("Apply = %+v, %v; want page 0's 10 features and nothing of the cut page", res, err)
	}
}

// TestStagePageCountsIDsBeyondMemory: a page with more distinct ids than
// StagePage holds in memory leaves its named_ids unknown (NULL) rather than
// counting them in PostgreSQL; the apply's split-id check still passes
// disjoint pages and a single page with repeats, and refuses an id on two
// pages (checkPagesDisjoint).
func TestStagePageLeavesIDsBeyondMemoryUncounted(t *testing.T) {
	t.Parallel()
	b := setup(t)
	postgis.SetPageIDs(b.store, 8)
	page := func(prefix string, n, repeats int) []ft.Feature {
		var fs []ft.Feature
		for i := range n {
			fs = append(fs, feature(fmt.Sprintf("%s%d", prefix, i), point(float64(i%90), 1, 4326), props("i", i)))
		}
		for i := range repeats {
			fs = append(fs, feature(fmt.Sprintf("%s%d", prefix, i), point(2, 2, 4326), props("i", -i)))
		}
		fs = append(fs, feature("", point(3, 3, 4326), props("unnamed", true)))
		return fs
	}
	// Both pages end with the same feature without an id: one feature.
	feed := feedInfo("many-ids")
	if _, res := b.poll(t, feed, page("a", 30, 20), page("b", 25, 0)); res.Features != 30+25+1 {
		t.Errorf("disjoint pages: %+v, want 56 features", res)
	}

	// One page, its ids repeated within it: nothing is on two pages.
	if _, res := b.poll(t, feedInfo("one-page"), page("c", 30, 20)); res.Features != 30+1 {
		t.Errorf("one page: %+v, want 31 features", res)
	}

	var named []*int32
	split := feedInfo("split-ids")
	id := b.stage(t, split, page("a", 30, 20), page("b", 25, 0))
	b.scalar(t, &named, `SELECT array_agg(named_ids ORDER BY page) FROM staged_pages WHERE poll_id = $1`, id)
	if len(named) != 2 || named[0] != nil || named[1] != nil {
		t.Errorf("named_ids %v, want [NULL NULL]", named)
	}
	if _, err := b.store.StagePage(b.ctx, id, 2, reader(page("a", 12, 0)...)); err != nil {
		t.Fatal(err)
	}
	b.applyIncomplete(t, id, split, "appear on more than one page")
}
