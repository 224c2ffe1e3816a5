package feeds_test

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ingestd/ingestd/config"
	"github.com/ingestd/ingestd/deadletter"
	"github.com/ingestd/ingestd/feature"
	"github.com/ingestd/ingestd/internal/layertest"
	"github.com/ingestd/ingestd/wfs/wfstest"
)

// A whole layer in one unpaged response, several staging chunks long, is
// staged as one page and applies exactly what a paged poll of the same layer
// applies.
func TestUnpagedResponseStagedInChunksAppliesLikePages(t *testing.T) {
	t.Parallel()
	b := setupDL(t, config.BuiltinDeadLetter(), withFeeds(`
      - id: whole
        kind: wfs
        url: %[1]s/wfs
        type_name: parcels
        page_size: 0
      - id: paged
        kind: wfs
        url: %[1]s/wfs
        type_name: parcels
        page_size: 500
        sort_by: pin
`))
	const n = 3500 // the staging chunks are 1000 features
	b.server.AddLayer("parcels", layertest.Parcels{N: n})
	whole, err := b.manager.Poll(b.ctx, "county/whole")
	if err != nil {
		t.Fatal(err)
	}
	if whole.Pages != 1 || whole.Features != n || whole.Added != n {
		t.Errorf("unpaged poll: %d pages, %d features, %d added; want 1, %d, %d", whole.Pages, whole.Features, whole.Added, n, n)
	}
	if _, err := b.manager.Poll(b.ctx, "county/paged"); err != nil {
		t.Fatal(err)
	}
	if got, want := b.contentDigest(t, "whole"), b.contentDigest(t, "paged"); got != want || got == "" {
		t.Error("the unpaged snapshot differs from the paged one")
	}
}

// A page cut short after several staging chunks were COPYed stages nothing:
// the parked poll's checkpoint is that page, no row of it is left in
// staging, and the replay fetches it again and applies what a clean poll
// does.
func TestPageCutAfterChunksStagesNothing(t *testing.T) {
	t.Parallel()
	cfg := config.BuiltinDeadLetter()
	cfg.FailedBackoff = config.Duration(10 * time.Millisecond)
	b := setupDL(t, cfg, withPolicy(fastPolicy()), withFeeds(`
      - id: parcels
        kind: wfs
        url: %[1]s/wfs
        type_name: parcels
        page_size: 4000
        sort_by: pin
      - id: clean
        kind: wfs
        url: %[1]s/clean/wfs
        type_name: parcels
        page_size: 4000
        sort_by: pin
`))
	b.server.AddLayer("parcels", layertest.Parcels{N: 9000})
	if _, err := b.manager.Poll(b.ctx, "county/clean"); err != nil {
		t.Fatal(err)
	}
	clean := b.contentDigest(t, "clean")
	// Page 1 (4,000 features, 1.7 MB) arrives whole up to 1.4 MB, about
	// 3,300 features, then ends: at every attempt, three chunks are COPYed
	// before the body turns out to be cut. (Served whole rather than by a
	// connection reset, which may discard what the client had not read.)
	resp, err := http.Get(b.url + "/wfs?service=WFS&version=2.0.0&request=GetFeature&typeNames=parcels" +
		"&outputFormat=application%2Fjson&sortBy=pin&startIndex=4000&count=4000")
	if err != nil {
		t.Fatal(err)
	}
	page1, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil || len(page1) < 1500000 {
		t.Fatalf("page 1 is %d bytes (err %v), want a whole page", len(page1), err)
	}
	before := []int{b.server.PageRequests("parcels", 0), b.server.PageRequests("parcels", 1)}
	b.server.SetFault(func(r wfstest.Request) *wfstest.Fault {
		if r.Page == 1 && r.HTTP.URL.Path == "/wfs" {
			return &wfstest.Fault{Status: http.StatusOK, ContentType: "application/json", Body: string(page1[:1400000])}
		}
		return nil
	})
	_, err = b.manager.Poll(b.ctx, "county/parcels")
	var de *deadletter.DeferError
	if !errors.As(err, &de) || de.Reason != deadletter.ReasonFailed {
		t.Fatalf("poll error = %v, want parked as failed after retries", err)
	}
	l := b.letter(t, "parcels")
	if l.Checkpoint.Page != 1 {
		t.Fatalf("checkpoint %+v, want page 1", l.Checkpoint)
	}
	var pages, rows, cut int
	if err := b.pool.QueryRow(b.ctx, `SELECT (SELECT count(*) FROM staged_pages WHERE poll_id = $1),
		(SELECT count(*) FROM staged_features WHERE poll_id = $1),
		(SELECT count(*) FROM staged_features WHERE poll_id = $1 AND page = 1)`, l.Checkpoint.PollID).Scan(&pages, &rows, &cut); err != nil {
		t.Fatal(err)
	}
	if pages != 1 || rows != 4000 || cut != 0 {
		t.Errorf("parked poll staged %d pages, %d rows, %d of the cut page; want 1, 4000, 0", pages, rows, cut)
	}

	b.server.SetFault(nil)
	b.advanceTo(t, l.RetryAfter)
	if claimed, err := b.replayer.RunOnce(b.ctx); err != nil || len(claimed) != 1 {
		t.Fatalf("replay claimed %d rows (err %v), want 1", len(claimed), err)
	}
	if l := b.letter(t, "parcels"); l.Status != deadletter.StatusDone {
		t.Fatalf("dead letter %s after the replay, want done (last error %q)", l.Status, l.LastError)
	}
	// Page 0 by the poll, and by the replay once more: its proof that the
	// staged page is still the layer's (TestResumeProvesStagedPages).
	if got := b.server.PageRequests("parcels", 0) - before[0]; got != 2 {
		t.Errorf("page 0 requested %d times by the poll and its replay, want 2", got)
	}
	if got := b.server.PageRequests("parcels", 1) - before[1]; got < 2 {
		t.Errorf("page 1 requested %d times, want the cut attempts and the replay's", got)
	}
	if got := b.contentDigest(t, "parcels"); got != clean {
		t.Error("the resumed snapshot differs from a clean full poll")
	}
}

// Exceeding limits.poll_features or limits.poll_bytes over a poll's pages
// fails the poll with the limit named, as the feed's error: nothing is
// applied, nothing parked, nothing left in staging.
func TestPollLimitsFailThePoll(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		set  func(*feature.Limits)
	}{
		{"poll_features", func(l *feature.Limits) { l.PollFeatures = 25 }},
		{"poll_bytes", func(l *feature.Limits) { l.PollBytes = 10000 }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			b := setupDL(t, config.BuiltinDeadLetter(), withPolicy(fastPolicy()))
			b.server.AddLayer("parcels", layertest.Parcels{N: 45})
			if _, err := b.manager.Poll(b.ctx, "county/parcels"); err != nil {
				t.Fatal(err)
			}
			before := b.featureDigest(t, "parcels")

			b.server.AddLayer("parcels", layertest.Parcels{N: 45, Version: 1})
			tc.set(&b.cfg.Jurisdictions[0].Feeds[0].Limits)
			if err := b.manager.Update(b.ctx, b.cfg); err != nil {
				t.Fatal(err)
			}
			_, err := b.manager.Poll(b.ctx, "county/parcels")
			var le *feature.LimitError
			var de *deadletter.DeferError
			if !errors.As(err, &le) || le.Name != tc.name || errors.As(err, &de) {
				t.Fatalf("poll error = %v, want a *feature.LimitError %s, not parked", err, tc.name)
			}
			for _, want := range []string{"county/parcels", "limits." + tc.name} {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q does not name %q", err, want)
				}
			}
			if after := b.featureDigest(t, "parcels"); after != before {
				t.Error("a poll over the limit changed the feed's features")
			}
			if p := b.lastPoll(t, "parcels"); p.Status != "failed" || !strings.Contains(p.Error, "limits."+tc.name) {
				t.Errorf("poll recorded as %s (%q), want failed naming the limit", p.Status, p.Error)
			}
			if ls, _ := b.queue.List(b.ctx, deadletter.Filter{Feed: "county/parcels"}); len(ls) != 0 {
				t.Errorf("%d dead letters, want none", len(ls))
			}
			var staged int
			if err := b.pool.QueryRow(b.ctx, `SELECT count(*) FROM staged_features`).Scan(&staged); err != nil || staged != 0 {
				t.Errorf("%d staged rows left (err %v), want none", staged, err)
			}
		})
	}
}

// A parked poll resumed at page 2 counts the features of its staged pages
// against limits.poll_features: pages 2..4 alone (25 features) are within
// the limit of 25, the whole poll (45) is not.
func TestResumedPollCountsStagedFeaturesAgainstTheLimit(t *testing.T) {
	t.Parallel()
	b := setupDL(t, config.BuiltinDeadLetter())
	b.server.AddLayer("parcels", layertest.Parcels{N: 45})
	var tripped atomic.Bool
	b.server.SetFault(func(r wfstest.Request) *wfstest.Fault {
		if r.Page == 1 && tripped.CompareAndSwap(false, true) {
			b.trip(t)
		}
		return nil
	})
	_, err := b.manager.Poll(b.ctx, "county/parcels")
	var de *deadletter.DeferError
	if !errors.As(err, &de) {
		t.Fatalf("poll error = %v, want parked", err)
	}
	l := b.letter(t, "parcels")
	if l.Checkpoint.Page != 2 {
		t.Fatalf("checkpoint %+v, want page 2", l.Checkpoint)
	}
	b.cfg.Jurisdictions[0].Feeds[0].Limits.PollFeatures = 25
	if err := b.manager.Update(b.ctx, b.cfg); err != nil {
		t.Fatal(err)
	}
	b.advanceTo(t, l.RetryAfter)
	err = b.manager.Replay(b.ctx, b.letter(t, "parcels"))
	var le *feature.LimitError
	if !errors.As(err, &le) || le.Name != "poll_features" || !strings.Contains(err.Error(), "to 26 features") {
		t.Fatalf("replay error = %v, want limits.poll_features exceeded at the poll's 26th feature", err)
	}
	if ids := b.featureIDs(t, "parcels"); len(ids) != 0 {
		t.Errorf("%d features stored, want none", len(ids))
	}
}

// An endless stream of features is stopped by limits.poll_bytes as it is
// read, long before the body limit (1 GiB) would stop it.
func TestEndlessStreamStopsAtPollBytes(t *testing.T) {
	t.Parallel()
	var written atomic.Int64
	stopped := make(chan struct{})
	endless := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer close(stopped)
		w.Header().Set("Content-Type", "application/geo+json")
		n, _ := io.WriteString(w, `{"type":"FeatureCollection","features":[`)
		written.Add(int64(n))
		for i := 0; r.Context().Err() == nil; i++ {
			n, err := fmt.Fprintf(w, `%s{"type":"Feature","id":"f%d","geometry":{"type":"Point","coordinates":[-78.6,35.7]},"properties":{"n":%d}}`,
				map[bool]string{true: "", false: ","}[i == 0], i, i)
			written.Add(int64(n))
			if err != nil {
				return
			}
		}
	}))
	t.Cleanup(endless.Close)
	b := setup(t, withFeeds(`
      - id: endless
        kind: geojson
        url: `+endless.URL+`/endless.geojson
        limits:
          poll_bytes: 4MiB
      # (not the fixture server at %[1]s)
`))
	_, err := b.manager.Poll(b.ctx, "county/endless")
	var le *feature.LimitError
	if !errors.As(err, &le) || le.Name != "poll_bytes" || !strings.Contains(err.Error(), "county/endless") {
		t.Fatalf("poll error = %v, want limits.poll_bytes exceeded, naming the feed", err)
	}
	select {
	case <-stopped:
	case <-time.After(hangCeiling): // a hang ceiling: the handler ends when the poll stops reading
		t.Fatal("the endless response is still being read")
	}
	if n := written.Load(); n > 64<<20 {
		t.Errorf("the server wrote %d bytes before the poll stopped reading, want about 4 MiB", n)
	}
	if p := b.lastPoll(t, "endless"); p.Status != "failed" {
		t.Errorf("poll recorded as %s, want failed", p.Status)
	}
}
