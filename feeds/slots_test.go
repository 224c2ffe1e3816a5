package feeds_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"

	"github.com/ingestd/ingestd/feeds"
	"github.com/ingestd/ingestd/internal/layertest"
	"github.com/ingestd/ingestd/source"
)

// gatedFetcher is a real client whose fetches wait at the gate: a test
// holds an instance's polls running for as long as it needs.
type gatedFetcher struct {
	feeds.Fetcher
	entered chan<- string // the layer's URL, as each fetch reaches the gate
	gate    <-chan struct{}
}

func (g gatedFetcher) Fetch(ctx context.Context, layer source.Layer, first int, handle source.PageFunc) (source.FetchStats, error) {
	g.entered <- layer.URL
	select {
	case <-g.gate:
	case <-ctx.Done():
		return source.FetchStats{}, ctx.Err()
	}
	return g.Fetcher.Fetch(ctx, layer, first, handle)
}

// TestPollSlotsLeaveOverdueFeedsToOthers: an instance with two poll slots
// and fifty overdue feeds holds claims only for the two polls it runs; a
// second instance started meanwhile polls the other forty-eight, and when
// the first instance's slots free up, its waiting catch-ups find those
// feeds polled and skip them. Every feed is polled exactly once.
func TestPollSlotsLeaveOverdueFeedsToOthers(t *testing.T) {
	t.Parallel()
	const feedCount, slots = 50, 2
	var yaml strings.Builder
	for i := range feedCount {
		fmt.Fprintf(&yaml, "      - {id: f%02d, kind: wfs, url: \"%%[1]s/wfs\", type_name: parcels, page_size: 10, sort_by: pin, id_property: pin}\n", i)
	}
	var inner feeds.Fetcher
	b := setup(t, withFeeds(yaml.String()), withFetcher(func(f feeds.Fetcher) feeds.Fetcher { inner = f; return f }))
	b.server.AddLayer("parcels", layertest.Parcels{N: 5})
	ctx := b.ctx
	logger := slog.New(slog.NewTextHandler(testWriter{t}, nil))

	entered := make(chan string, feedCount)
	gate := make(chan struct{})
	var sigA, sigB feeds.Signals
	a := feeds.NewManager(b.store, gatedFetcher{Fetcher: inner, entered: entered, gate: gate},
		feeds.WithInstanceID("a:1"), feeds.WithPollSlots(slots), feeds.WithSignals(&sigA), feeds.WithLogger(logger.With("instance", "a")))
	t.Cleanup(a.Stop)
	if err := a.Update(ctx, b.cfg); err != nil {
		t.Fatal(err)
	}
	if err := a.Start(ctx); err != nil {
		t.Fatal(err)
	}
	for range slots {
		await(t, entered, "a fetch of instance a")
	}

	claims := func(owner string) int {
		t.Helper()
		var n int
		if err := b.pool.QueryRow(ctx, `SELECT count(*)::int FROM feed_status WHERE poll_owner = $1`, owner).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}

	m := feeds.NewManager(b.store, inner, feeds.WithInstanceID("b:1"), feeds.WithPollSlots(4), feeds.WithSignals(&sigB),
		feeds.WithLogger(logger.With("instance", "b")))
	t.Cleanup(m.Stop)
	if err := m.Update(ctx, b.cfg); err != nil {
		t.Fatal(err)
	}
	if err := m.Start(ctx); err != nil {
		t.Fatal(err)
	}
	outcomes := func(sig *feeds.Signals) map[string]int {
		t.Helper()
		got := map[string]int{}
		for range feedCount {
			got[awaitRun(t, sig).Outcome]++
		}
		return got
	}
	if got := outcomes(&sigB); got["polled"] != feedCount-slots || got["claimed"] != slots {
		t.Fatalf("instance b's catch-ups: %v; want %d polled, and the %d instance a runs skipped as claimed", got, feedCount-slots, slots)
	}
	// Instance a, its polls still at the gate, holds their claims and
	// no other.
	if n := claims("a:1"); n != slots {
		t.Fatalf("instance a holds %d claims while it runs %d polls", n, slots)
	}

	close(gate)
	if got := outcomes(&sigA); got["polled"] != slots || got["claimed"] != feedCount-slots {
		t.Fatalf("instance a's catch-ups: %v; want its %d polled, and the %d instance b polled skipped as claimed", got, slots, feedCount-slots)
	}
	var polls, feedsPolled int
	if err := b.pool.QueryRow(ctx, `SELECT count(*)::int, count(DISTINCT feed)::int FROM polls WHERE status = 'succeeded'`).Scan(&polls, &feedsPolled); err != nil {
		t.Fatal(err)
	}
	if polls != feedCount || feedsPolled != feedCount {
		t.Fatalf("%d successful polls of %d feeds, want one of each of the %d", polls, feedsPolled, feedCount)
	}
	if n := claims("a:1") + claims("b:1"); n != 0 {
		t.Fatalf("%d claims left after every poll ended", n)
	}
}

// originGatedFetcher holds the fetches of layers on gated (a URL prefix)
// at the gate, and answers every other layer at once with an error,
// without the network.
type originGatedFetcher struct {
	gatedFetcher
	gated string
}

func (g originGatedFetcher) Prepare(ctx context.Context, layer source.Layer) (source.Layer, []string, error) {
	if strings.HasPrefix(layer.URL, g.gated) {
		return g.gatedFetcher.Prepare(ctx, layer)
	}
	return layer, nil, nil
}

func (g originGatedFetcher) Fetch(ctx context.Context, layer source.Layer, first int, handle source.PageFunc) (source.FetchStats, error) {
	if strings.HasPrefix(layer.URL, g.gated) {
		return g.gatedFetcher.Fetch(ctx, layer, first, handle)
	}
	return source.FetchStats{}, errors.New("not served in this test")
}

// TestOriginPollSlotsLeavePollSlotsToOtherOrigins: with two poll slots and
// one poll per origin, three feeds of a slow origin take one slot and wait
// for their origin, not for a poll slot, so the feed of another origin is
// polled while the slow origin's first poll runs.
func TestOriginPollSlotsLeavePollSlotsToOtherOrigins(t *testing.T) {
	t.Parallel()
	yaml := `
      - {id: slow1, kind: wfs, url: "%[1]s/wfs", type_name: parcels, page_size: 10, sort_by: pin, id_property: pin}
      - {id: slow2, kind: wfs, url: "%[1]s/wfs", type_name: parcels, page_size: 10, sort_by: pin, id_property: pin}
      - {id: slow3, kind: wfs, url: "%[1]s/wfs", type_name: parcels, page_size: 10, sort_by: pin, id_property: pin}
      - {id: other, kind: wfs, url: "http://other.test/wfs", type_name: parcels}
`
	var inner feeds.Fetcher
	b := setup(t, withFeeds(yaml), withFetcher(func(f feeds.Fetcher) feeds.Fetcher { inner = f; return f }))
	b.server.AddLayer("parcels", layertest.Parcels{N: 5})
	entered := make(chan string, 4)
	gate := make(chan struct{})
	var sig feeds.Signals
	m := feeds.NewManager(b.store, originGatedFetcher{gatedFetcher{Fetcher: inner, entered: entered, gate: gate}, b.url},
		feeds.WithPollSlots(2), feeds.WithOriginPollSlots(func(string) int { return 1 }), feeds.WithSignals(&sig),
		feeds.WithLogger(slog.New(slog.NewTextHandler(testWriter{t}, nil))))
	t.Cleanup(m.Stop)
	if err := m.Update(b.ctx, b.cfg); err != nil {
		t.Fatal(err)
	}
	if err := m.Start(b.ctx); err != nil {
		t.Fatal(err)
	}
	await(t, entered, "a poll of the slow origin")
	if run := awaitRun(t, &sig); run.Key != "county/other" || run.Outcome != "polled" {
		t.Fatalf("first run to end: %+v; want the other origin's feed polled while the slow origin's poll waits at the gate", run)
	}
	// Its slot free again, the slow origin's other feeds still wait for
	// their origin's.
	if n := len(entered); n != 0 {
		t.Fatalf("%d more polls of the slow origin running, want 1 in all (its origin's slots)", n+1)
	}
	close(gate)
	polled := 0
	for range 3 {
		if run := awaitRun(t, &sig); run.Outcome == "polled" {
			polled++
		}
	}
	if polled != 3 {
		t.Fatalf("%d of the slow origin's 3 feeds polled once the gate opened", polled)
	}
}
