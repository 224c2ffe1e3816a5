// Package polltest starts the feeds.Manager of an interop test: the
// configuration it is given, applied to a test database, polled through a
// breaker registry with no rate limit (one loopback server takes every
// feed's pages). It is apart from interoptest, which the file readers'
// tests import, so that they do not depend on feeds.
package polltest

import (
	"net/http"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/ingestd/ingestd/breaker"
	"github.com/ingestd/ingestd/config"
	"github.com/ingestd/ingestd/feeds"
	"github.com/ingestd/ingestd/feeds/postgis"
	"github.com/ingestd/ingestd/internal/kindconf"
)

// FetcherFunc builds the Manager's fetcher on the test's registry.
type FetcherFunc func(*breaker.Registry) feeds.Fetcher

// Manager parses doc (YAML, name naming it in errors) as the
// configuration and returns a Manager that has applied it to pool and
// polls through fetcher's fetcher (nil: every kind's, feeds.NewFetchers);
// t's cleanup stops it.
func Manager(t testing.TB, pool *pgxpool.Pool, name, doc string, fetcher FetcherFunc) (*feeds.Manager, *config.Config) {
	t.Helper()
	cfg, err := config.Parse(name, []byte(doc), nil)
	if err != nil {
		t.Fatalf("config: %v\n%s", err, doc)
	}
	p := breaker.DefaultPolicy()
	p.RateLimit = 0 // one loopback origin takes every feed's pages
	reg := breaker.NewRegistry(breaker.Config{Policy: p}, nil)
	var f feeds.Fetcher = feeds.NewFetchers(kindconf.FetcherDeps{HTTP: &http.Client{}, Breakers: reg})
	if fetcher != nil {
		f = fetcher(reg)
	}
	mgr := feeds.NewManager(postgis.New(pool), f)
	t.Cleanup(mgr.Stop)
	if err := mgr.Update(t.Context(), cfg); err != nil {
		t.Fatal(err)
	}
	return mgr, cfg
}
