package wfs

import (
	"errors"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ingestd/ingestd/breaker"
	"github.com/ingestd/ingestd/httpcall"
	"github.com/ingestd/ingestd/internal/layertest"
	"github.com/ingestd/ingestd/source"
	"github.com/ingestd/ingestd/wfs/wfstest"
)

// redirectFixture is two origins: home redirects its /moved/ paths to the
// same path on away (or to wherever to says), away serves the fixture
// layers, and both count requests and the feed header they got.
type redirectFixture struct {
	home, away string
	homeHits   atomic.Int64
	awayHits   atomic.Int64
	awayHeader atomic.Value
	awayFails  atomic.Bool // away answers 503
	to         atomic.Value
	reg        *breaker.Registry
	client     *Client
	fx         *wfstest.Server
}

func newRedirectFixture(t *testing.T) *redirectFixture {
	t.Helper()
	f := &redirectFixture{fx: wfstest.New()}
	f.fx.AddLayer("parcels", layertest.Parcels{N: 12})
	f.awayHeader.Store("")
	f.to.Store("")
	away := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f.awayHits.Add(1)
		f.awayHeader.Store(r.Header.Get("X-Api-Key"))
		if f.awayFails.Load() {
			http.Error(w, "busy", http.StatusServiceUnavailable)
			return
		}
		f.fx.ServeHTTP(w, r)
	}))
	home := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f.homeHits.Add(1)
		switch {
		case strings.HasPrefix(r.URL.Path, "/moved/"):
			to := f.to.Load().(string)
			if to == "" {
				to = away.URL + strings.TrimPrefix(r.URL.Path, "/moved")
			}
			if !strings.Contains(to, "?") {
				to += "?" + r.URL.RawQuery
			}
			http.Redirect(w, r, to, http.StatusFound)
		case strings.HasPrefix(r.URL.Path, "/loop"):
			http.Redirect(w, r, "/loop?"+r.URL.RawQuery, http.StatusMovedPermanently)
		case strings.HasPrefix(r.URL.Path, "/old/"):
			http.Redirect(w, r, strings.Replace(r.URL.String(), "/old/", "/", 1), http.StatusMovedPermanently)
		default:
			f.fx.ServeHTTP(w, r)
		}
	}))
	f.home, f.away = home.URL, away.URL
	p := breaker.DefaultPolicy()
	p.ConsecutiveFailures, p.FailureRatio, p.MaxAttempts, p.RateLimit = 1, 0, 2, 0
	p.BackoffBase, p.BackoffMax = time.Millisecond, time.Millisecond
	f.reg = breaker.NewRegistry(breaker.Config{Policy: p}, nil)
	f.client = NewClient(nil, f.reg, nil)
	return f
}

func (f *redirectFixture) state(t *testing.T, raw string) breaker.OriginState {
	t.Helper()
	o := httpcall.OriginOf(raw)
	for _, s := range f.reg.Snapshot() {
		if s.Origin == o {
			return s
		}
	}
	return breaker.OriginState{Origin: o}
}

func (f *redirectFixture) layer(base, path string, follow bool) source.Layer {
	return source.Layer{Kind: Kind, URL: base + path + "?token=" + testToken, Settings: Settings{TypeName: "parcels"}, PageSize: 5,
		Headers: map[string]string{"X-Api-Key": headerSecret}, CrossOriginRedirects: follow}
}

// TestRedirects: within the feed's origin a redirect is followed with the
// feed's headers; to another origin it is refused by default, naming the
// target's origin with the URL redacted, as the feed's error (the breaker
// of the redirecting origin counts a success, the target is never asked);
// with redirects: follow the target is asked through its own breaker,
// without the feed's headers. file:// and loops are refused.
func TestRedirects(t *testing.T) {
	t.Parallel()
	t.Run("same origin", func(t *testing.T) {
		t.Parallel()
		f := newRedirectFixture(t)
		var col collect
		if _, err := f.client.Fetch(t.Context(), f.layer(f.home, "/old/wfs", false), 0, col.handle); err != nil || col.total() != 12 {
			t.Fatalf("%v, %d features", err, col.total())
		}
	})
	t.Run("cross origin refused", func(t *testing.T) {
		t.Parallel()
		f := newRedirectFixture(t)
		_, err := f.client.Fetch(t.Context(), f.layer(f.home, "/moved/wfs", false), 0, (&collect{}).handle)
		var re *httpcall.RedirectError
		if !errors.As(err, &re) {
			t.Fatalf("err %v, want *RedirectError", err)
		}
		msg := err.Error()
		if !strings.Contains(msg, httpcall.OriginOf(f.away)) || !strings.Contains(msg, "token=REDACTED") || strings.Contains(msg, testToken) || !strings.Contains(msg, "redirects: follow") {
			t.Errorf("message %q must name the target origin, redacted", msg)
		}
		if f.awayHits.Load() != 0 || f.homeHits.Load() != 1 {
			t.Errorf("home %d, away %d requests; want 1 and 0 (not retried, target never asked)", f.homeHits.Load(), f.awayHits.Load())
		}
		if s := f.state(t, f.home); s.State != breaker.StateClosed || s.Counts.Successes != 1 {
			t.Errorf("home breaker %s %+v, want closed with one success", s.State, s.Counts)
		}
		var be *breaker.RetryError
		if errors.As(err, &be) {
			t.Error("a refused redirect was retried as a failure")
		}
	})
	t.Run("cross origin followed", func(t *testing.T) {
		t.Parallel()
		f := newRedirectFixture(t)
		var col collect
		if _, err := f.client.Fetch(t.Context(), f.layer(f.home, "/moved/wfs", true), 0, col.handle); err != nil || col.total() != 12 {
			t.Fatalf("%v, %d features", err, col.total())
		}
		if h := f.awayHeader.Load().(string); h != "" {
			t.Errorf("the target got the feed's header %q, meant for its own origin", h)
		}
		// The target fails: its breaker opens, not the redirecting origin's.
		f.awayFails.Store(true)
		_, err := f.client.Fetch(t.Context(), f.layer(f.home, "/moved/wfs", true), 0, (&collect{}).handle)
		var hse *httpcall.HTTPStatusError
		if !errors.As(err, &hse) || hse.Status != 503 {
			t.Fatalf("err %v, want the target's 503", err)
		}
		if s := f.state(t, f.away); s.State != breaker.StateOpen {
			t.Errorf("target breaker %s, want open", s.State)
		}
		if s := f.state(t, f.home); s.State != breaker.StateClosed || s.Counts.Failures != 0 {
			t.Errorf("redirecting origin %s %+v, want closed without failures", s.State, s.Counts)
		}
	})
	t.Run("file scheme", func(t *testing.T) {
		t.Parallel()
		f := newRedirectFixture(t)
		f.to.Store("file:///etc/passwd")
		_, err := f.client.Fetch(t.Context(), f.layer(f.home, "/moved/wfs", true), 0, (&collect{}).handle)
		var re *httpcall.RedirectError
		if !errors.As(err, &re) || !strings.Contains(err.Error(), `scheme "file"`) {
			t.Fatalf("err %v, want *RedirectError for the scheme", err)
		}
	})
	t.Run("loop", func(t *testing.T) {
		t.Parallel()
		f := newRedirectFixture(t)
		_, err := f.client.Fetch(t.Context(), f.layer(f.home, "/loop", false), 0, (&collect{}).handle)
		var re *httpcall.RedirectError
		if !errors.As(err, &re) || !strings.Contains(err.Error(), "more than 5 redirects") {
			t.Fatalf("err %v, want *RedirectError for the loop", err)
		}
		if n := f.homeHits.Load(); n != httpcall.MaxRedirects+1 {
			t.Errorf("%d requests, want %d", n, httpcall.MaxRedirects+1)
		}
	})
	t.Run("cross-origin ping-pong", func(t *testing.T) {
		t.Parallel()
		f := newRedirectFixture(t)
		// home redirects to away, which redirects back to home, and so on.
		f.fx.SetFault(func(r wfstest.Request) *wfstest.Fault {
			return wfstest.RedirectTo(r, f.home+"/moved/wfs")
		})
		_, err := f.client.Fetch(t.Context(), f.layer(f.home, "/moved/wfs", true), 0, (&collect{}).handle)
		var re *httpcall.RedirectError
		if !errors.As(err, &re) || !strings.Contains(err.Error(), "redirects") {
			t.Fatalf("err %v, want *RedirectError after %d hops", err, httpcall.MaxRedirects)
		}
		if total := f.homeHits.Load() + f.awayHits.Load(); total > httpcall.MaxRedirects+1 {
			t.Errorf("%d requests for one page, want at most %d", total, httpcall.MaxRedirects+1)
		}
	})
}
