package feeds_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/ingestd/ingestd/feature"
	"github.com/ingestd/ingestd/feeds"
	"github.com/ingestd/ingestd/internal/layertest"
	"github.com/ingestd/ingestd/source"
)

// panickingFetcher is a real client whose page handler panics on page
// panicAt: a stand-in for any bug that input may trigger while a page is
// read, decoded or staged.
type panickingFetcher struct {
	feeds.Fetcher
	panicAt int
}

func (p panickingFetcher) Fetch(ctx context.Context, layer source.Layer, first int, handle source.PageFunc) (source.FetchStats, error) {
	return p.Fetcher.Fetch(ctx, layer, first, func(ctx context.Context, page source.Page, fr feature.FeatureReader) error {
		if page.Index == p.panicAt {
			var g interface{ FlatCoords() []float64 }
			_ = g.FlatCoords() // a nil interface: the class of bug an unhandled GeometryCollection was
		}
		return handle(ctx, page, fr)
	})
}

// A panic while polling fails that poll, naming the feed; the previous
// snapshot stays, the poll is not left running, nothing stays staged, and
// the next poll of the same manager succeeds.
func TestPanicFailsThePollNotTheProcess(t *testing.T) {
	t.Parallel()
	fetcher := &panickingFetcher{panicAt: -1}
	b := setup(t, withFetcher(func(f feeds.Fetcher) feeds.Fetcher { fetcher.Fetcher = f; return fetcher }))
	server, m, pool, ctx := b.server, b.manager, b.pool, b.ctx
	server.AddLayer("parcels", layertest.Parcels{N: 25})
	if _, err := m.Poll(ctx, "county/parcels"); err != nil {
		t.Fatal(err)
	}

	server.AddLayer("parcels", layertest.Parcels{N: 20})
	fetcher.panicAt = 1
	_, err := m.Poll(ctx, "county/parcels")
	var pe *feeds.PanicError
	if !errors.As(err, &pe) || !strings.Contains(err.Error(), "county/parcels") {
		t.Fatalf("poll error = %v, want a *PanicError naming the feed", err)
	}
	var status, pollErr string
	var count, staged int
	if err := pool.QueryRow(ctx, `SELECT status, error FROM polls ORDER BY id DESC LIMIT 1`).Scan(&status, &pollErr); err != nil {
		t.Fatal(err)
	}
	if status != "failed" || !strings.Contains(pollErr, "panic while polling") {
		t.Errorf("the panicked poll is %s (%q), want failed with the panic", status, pollErr)
	}
	if err := pool.QueryRow(ctx, `SELECT (SELECT count(*) FROM features WHERE feed = 'parcels'), (SELECT count(*) FROM staged_features)`).Scan(&count, &staged); err != nil {
		t.Fatal(err)
	}
	if count != 25 || staged != 0 {
		t.Errorf("after the panic: %d features (want the previous 25), %d staged rows (want 0)", count, staged)
	}

	fetcher.panicAt = -1
	if _, err := m.Poll(ctx, "county/parcels"); err != nil {
		t.Fatalf("the poll after a panic: %v", err)
	}
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM features WHERE feed = 'parcels'`).Scan(&count); err != nil || count != 20 {
		t.Errorf("after the next poll: %d features (%v), want 20", count, err)
	}
}
