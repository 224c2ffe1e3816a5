package feeds_test

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/ingestd/ingestd/breaker"
	"github.com/ingestd/ingestd/config"
	"github.com/ingestd/ingestd/deadletter"
	"github.com/ingestd/ingestd/feeds"
	"github.com/ingestd/ingestd/feeds/postgis"
	"github.com/ingestd/ingestd/internal/kindconf"
	"github.com/ingestd/ingestd/internal/layertest"
	"github.com/ingestd/ingestd/migrations/pgtest"
	"github.com/ingestd/ingestd/ogcapi/ogcapitest"
	"github.com/ingestd/ingestd/redact"
)

// keyedOGCAPI is an OGC API server that wants the feed's key once on every
// request of a collection (under any name or spelling: servers compare
// case-insensitively),
// writes it into its next links as APIKEY= where the feed's url has
// apikey=, and fails the second page's first request with a 500.
type keyedOGCAPI struct {
	api      *ogcapitest.Server
	key      string
	failed   atomic.Bool
	keyless  atomic.Int64 // requests without the key
	requests atomic.Int64 // items requests at offset 10
}

func (s *keyedOGCAPI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	keys := 0
	for _, vs := range r.URL.Query() {
		for _, v := range vs {
			if v == s.key {
				keys++
			}
		}
	}
	// The OpenAPI document is read through the landing page's link, which
	// carries no key (ogcapi adds the feed's to the collection's links
	// only); its maximum limit is optional, so it is left open here.
	if keys != 1 && strings.HasPrefix(r.URL.Path, "/collections/") {
		s.keyless.Add(1)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusUnauthorized)
		fmt.Fprintf(w, `{"code":"Unauthorized","description":"the key must be given once, not %d times"}`, keys)
		return
	}
	if strings.HasSuffix(r.URL.Path, "/items") && r.URL.Query().Get("offset") == "10" {
		s.requests.Add(1)
		if s.failed.CompareAndSwap(false, true) {
			http.Error(w, "internal error", http.StatusInternalServerError)
			return
		}
	}
	rec := httptest.NewRecorder()
	s.api.ServeHTTP(rec, r)
	maps.Copy(w.Header(), rec.Header())
	w.WriteHeader(rec.Code)
	_, _ = io.WriteString(w, strings.ReplaceAll(rec.Body.String(), "apikey=", "APIKEY="))
}

// A poll parked at page 1 of a collection whose next links spell the key
// APIKEY= (the feed's url has apikey=) stores page 0's next link without
// the key, and its replay (page 0 read again, its proof, then the server's
// links) sends the feed's key once in every request: the collection lands
// whole, and no request carried the key twice or not at all.
func TestOGCAPIReplayWithAKeySpelledOtherwise(t *testing.T) {
	t.Parallel()
	const key = "k3y-of-the-feed-91"
	api := ogcapitest.New()
	api.Add("parcels", ogcapitest.Collection{Layer: layertest.Parcels{N: 25}})
	server := &keyedOGCAPI{api: api, key: key}
	ts := httptest.NewServer(server)
	t.Cleanup(ts.Close)
	cfg, err := config.Parse("test.yaml", []byte(fmt.Sprintf(`
jurisdictions:
  - id: county
    feeds:
      - id: parcels
        kind: ogcapi
        url: %s/collections/parcels?apikey=%s
        page_size: 10
        schedule: "0 5 * * *"
`, ts.URL, key)), nil)
	if err != nil {
		t.Fatal(err)
	}
	secrets := redact.NewSecrets(cfg.Secrets()...)
	ctx := t.Context()
	pool := pgtest.Pool(t)
	logger := slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelDebug}))
	policy := fastPolicy()
	policy.MaxAttempts = 1 // the 500 fails the poll at once: parked, the breaker closed
	breakers := breaker.NewRegistry(breaker.Config{MaxInFlight: 4, Policy: policy}, logger)
	queue := deadletter.NewQueue(pool, deadletter.QueueSecrets(secrets))
	manager := feeds.NewManager(postgis.New(pool, postgis.WithSecrets(secrets)),
		feeds.NewFetchers(kindconf.FetcherDeps{HTTP: ts.Client(), Breakers: breakers, Logger: logger}),
		feeds.WithLogger(logger), feeds.WithDeadLetters(queue, config.BuiltinDeadLetter()))
	t.Cleanup(manager.Stop)
	if err := manager.Update(ctx, cfg); err != nil {
		t.Fatal(err)
	}

	_, err = manager.Poll(ctx, "county/parcels")
	var de *deadletter.DeferError
	if !errors.As(err, &de) {
		t.Fatalf("poll error = %v, want parked", err)
	}
	var stored int
	var links string
	if err := pool.QueryRow(ctx, `SELECT count(*), coalesce(string_agg(next_link, ' '), '') FROM staged_pages WHERE next_link IS NOT NULL`).Scan(&stored, &links); err != nil {
		t.Fatal(err)
	}
	if stored != 1 || strings.Contains(links, key) {
		t.Errorf("%d staged pages keep a next link (%s), want page 0's, without the key", stored, links)
	}
	// Due now, rather than after the retry_after a backoff set.
	if _, err := pool.Exec(ctx, `UPDATE dead_letter SET retry_after = now()`); err != nil {
		t.Fatal(err)
	}
	replayer := deadletter.NewReplayer(pool, manager.Replay, deadletter.WithSecrets(secrets))
	if claimed, err := replayer.RunOnce(ctx); err != nil || len(claimed) != 1 {
		t.Fatalf("replay claimed %d rows (err %v), want 1", len(claimed), err)
	}
	var status, lastError string
	var features int
	if err := pool.QueryRow(ctx, `SELECT d.status, coalesce(d.last_error, ''), (SELECT count(*) FROM features WHERE feed = 'parcels')
		FROM dead_letter d`).Scan(&status, &lastError, &features); err != nil {
		t.Fatal(err)
	}
	if status != string(deadletter.StatusDone) || features != 25 {
		t.Fatalf("after the replay: dead letter %s (%q), %d features; want done, 25", status, lastError, features)
	}
	if n := server.keyless.Load(); n != 0 {
		t.Errorf("%d requests came without the key, or with it twice", n)
	}
	if n := api.ItemRequests("parcels", 0); n != 2 {
		t.Errorf("the first page was fetched %d times, want 2 (the replay reads it again, its proof)", n)
	}
	if n := server.requests.Load(); n != 2 {
		t.Errorf("the second page was asked for %d times, want 2 (failed, then replayed)", n)
	}
}
