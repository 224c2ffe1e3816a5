package breaker_test

import (
	. "github.com/ingestd/ingestd/breaker"
	. "github.com/ingestd/ingestd/breaker/internal/breakertest"

	"errors"
	"net/http"
	"net/url"
	"testing"
	"time"
)

func TestDefaultPolicyIsValid(t *testing.T) {
	t.Parallel()
	if err := DefaultPolicy().Validate(); err != nil {
		t.Fatal(err)
	}
	if err := FastPolicy().Validate(); err != nil {
		t.Fatal(err)
	}
}

func TestValidateRejects(t *testing.T) {
	t.Parallel()
	for name, mutate := range map[string]func(*Policy){
		"no trip rule":         func(p *Policy) { p.ConsecutiveFailures, p.FailureRatio = 0, 0 },
		"ratio above one":      func(p *Policy) { p.FailureRatio = 1.5 },
		"ratio without calls":  func(p *Policy) { p.MinCalls = 0 },
		"zero window":          func(p *Policy) { p.Window = 0 },
		"max below base":       func(p *Policy) { p.OpenMax = p.OpenBase / 2 },
		"no probes":            func(p *Policy) { p.HalfOpenMaxCalls = 0 },
		"no attempts":          func(p *Policy) { p.MaxAttempts = 0 },
		"rate without burst":   func(p *Policy) { p.RateLimit, p.Burst = 1, 0 },
		"negative budget":      func(p *Policy) { p.RetryBudgetRatio = -1 },
		"zero retry-after":     func(p *Policy) { p.MaxRetryAfter = 0 },
		"call outlives window": func(p *Policy) { p.AttemptTimeout = p.Window / 2 },
	} {
		p := DefaultPolicy()
		mutate(&p)
		if err := p.Validate(); !errors.Is(err, ErrInvalidPolicy) {
			t.Errorf("%s: Validate() = %v, want ErrInvalidPolicy", name, err)
		}
	}
}

func TestMoreProtective(t *testing.T) {
	t.Parallel()
	a := DefaultPolicy()
	b := DefaultPolicy()
	b.ConsecutiveFailures = 3
	b.FailureRatio = 0 // disabled: a's ratio must survive
	b.OpenBase = time.Minute
	b.MaxAttempts = 5
	b.RateLimit = 0 // unlimited: a's limit must survive
	b.MaxInFlightPerOrigin = 2
	b.MaxRetryAfter = time.Hour
	got := MoreProtective(a, b)
	if got != MoreProtective(b, a) {
		t.Error("MoreProtective is not symmetric")
	}
	want := a
	want.ConsecutiveFailures = 3
	want.OpenBase = time.Minute
	want.MaxInFlightPerOrigin = 2
	want.MaxRetryAfter = time.Hour
	if got != want {
		t.Errorf("MoreProtective =\n%+v\nwant\n%+v", got, want)
	}
	if err := got.Validate(); err != nil {
		t.Errorf("the merge of two valid policies is invalid: %v", err)
	}
}

func TestOrigin(t *testing.T) {
	t.Parallel()
	for raw, want := range map[string]string{
		"https://GIS.example.org/arcgis?x=1": "https://gis.example.org:443",
		"https://gis.example.org:443/wfs":    "https://gis.example.org:443",
		"http://gis.example.org/wfs":         "http://gis.example.org:80",
		"http://[::1]:8080/wfs":              "http://[::1]:8080",
		"ftp://ftp.example.org/gis/a.zip":    "ftp://ftp.example.org:21",
		"ftp://u:p@ftp.example.org:2121/a":   "ftp://ftp.example.org:2121",
	} {
		u, err := url.Parse(raw)
		if err != nil {
			t.Fatal(err)
		}
		if got := Origin(u); got != want {
			t.Errorf("Origin(%s) = %s, want %s", raw, got, want)
		}
	}
}

func TestSetPolicy(t *testing.T) {
	t.Parallel()
	f := Setup(t, FastPolicy())
	up := NewUpstream(t, http.StatusServiceUnavailable)
	origin := up.Origin(t)
	bad := FastPolicy()
	bad.MaxAttempts = 0
	if err := f.Reg.SetPolicy(origin, bad); !errors.Is(err, ErrInvalidPolicy) {
		t.Fatalf("SetPolicy(invalid) = %v", err)
	}
	p := FastPolicy()
	p.ConsecutiveFailures = 2
	p.OpenBase = 300 * time.Millisecond
	if err := f.Reg.SetPolicy(origin, p); err != nil {
		t.Fatal(err)
	}
	if f.Reg.Policy(origin) != p {
		t.Fatal("Policy does not return the policy set")
	}
	f.TripOpen(t, up.URL())
	if got := up.Hits.Load(); got != 2 {
		t.Fatalf("tripped after %d calls, want 2 (the origin's own policy)", got)
	}
	// Replacing the policy of an open origin keeps it open.
	p.ConsecutiveFailures = 4
	if err := f.Reg.SetPolicy(origin, p); err != nil {
		t.Fatal(err)
	}
	if _, ok := AsOpen(f.Do(t.Context(), t, up.URL())); !ok {
		t.Fatal("a new policy reopened the origin to traffic")
	}
	if s := f.State(t, origin); s.State != StateOpen || s.ConsecutiveOpens != 1 {
		t.Errorf("after SetPolicy: %+v", s)
	}
	// Another origin keeps the registry's default.
	if f.Reg.Policy("http://elsewhere:80") != FastPolicy() {
		t.Error("another origin lost the default policy")
	}
}

func TestStateChangeHookMayCallBack(t *testing.T) {
	t.Parallel()
	p := FastPolicy()
	p.ConsecutiveFailures = 1
	up := NewUpstream(t, http.StatusServiceUnavailable)
	var reg *Registry
	var seen []OriginState
	// The clock stands still, so the hook's call meets the open breaker
	// however long the machine takes.
	reg = NewRegistry(Config{Policy: p, Clock: NewFakeClock(), OnStateChange: func(ev StateChange) {
		// A hook that reads the registry, or even calls the same origin,
		// must not deadlock: events are delivered outside gobreaker's lock.
		seen = append(seen, reg.Snapshot()...)
		_ = reg.Do(t.Context(), ev.Origin, Get(http.DefaultClient, up.URL()))
	}}, nil)
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = reg.Do(t.Context(), up.Origin(t), Get(http.DefaultClient, up.URL()))
	}()
	Await(t, "deadlock: Do did not return", done)
	if len(seen) != 1 || seen[0].State != StateOpen {
		t.Errorf("the hook saw %+v, want one open origin", seen)
	}
}

func TestErrorMessages(t *testing.T) {
	t.Parallel()
	oe := &OpenError{Origin: "https://a:443", RetryAfter: 1500 * time.Millisecond}
	if got, want := oe.Error(), "breaker: https://a:443 is open, retry after 2s"; got != want {
		t.Errorf("%q, want %q", got, want)
	}
	oe.RetryAfter = 42 * time.Millisecond
	if got, want := oe.Error(), "breaker: https://a:443 is open, retry after 42ms"; got != want {
		t.Errorf("%q, want %q", got, want)
	}
	inner := ErrHTTPStatus(503)
	re := &RetryError{Origin: "https://a:443", Attempts: 3, Outcome: Failure, Err: inner}
	if !errors.Is(re, inner) {
		t.Error("RetryError does not unwrap to the last error")
	}
}
