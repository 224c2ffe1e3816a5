package breaker

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// upstream is a real HTTP server on its own loopback port that counts the
// requests it receives and answers through a replaceable handler.
type upstream struct {
	srv     *httptest.Server
	hits    atomic.Int64
	mu      sync.Mutex
	handler func(n int64, w http.ResponseWriter, r *http.Request)
}

func newUpstream(t *testing.T, status int) *upstream {
	t.Helper()
	u := &upstream{}
	u.setStatus(status)
	u.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := u.hits.Add(1)
		u.mu.Lock()
		h := u.handler
		u.mu.Unlock()
		h(n, w, r)
	}))
	t.Cleanup(u.srv.Close)
	return u
}

func (u *upstream) set(h func(n int64, w http.ResponseWriter, r *http.Request)) {
	u.mu.Lock()
	u.handler = h
	u.mu.Unlock()
}

func (u *upstream) setStatus(status int) {
	u.set(func(_ int64, w http.ResponseWriter, _ *http.Request) { w.WriteHeader(status) })
}

func (u *upstream) url() string { return u.srv.URL + "/layer" }

func (u *upstream) origin(t *testing.T) string { return originOfURL(t, u.srv.URL) }

func originOfURL(t *testing.T, raw string) string {
	t.Helper()
	pu, err := url.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	return Origin(pu)
}

// closedAddr returns the URL of a loopback port nobody listens on any more,
// so that dialling it is refused.
func closedAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return "http://" + addr + "/layer"
}

// errHTTPStatus is the error of an attempt that got an unwelcome status.
type errHTTPStatus int

func (e errHTTPStatus) Error() string { return fmt.Sprintf("http status %d", int(e)) }

// get is the tiny classifier the tests use: a real GET whose status decides
// the outcome. 2xx succeeds; 429 is throttled (Retry-After in seconds, which
// this helper also accepts as a fraction so tests stay fast); other 4xx are a
// success with an error; 5xx and transport errors fail; a cancelled context
// is ignored.
func get(client *http.Client, target string) AttemptFunc {
	return func(ctx context.Context, _ int) Result {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, target, nil)
		if err != nil {
			return Result{Outcome: Ignored, Err: err}
		}
		resp, err := client.Do(req)
		if err != nil {
			if ctx.Err() != nil {
				return Result{Outcome: Ignored, Err: err}
			}
			return Result{Outcome: Failure, Err: err}
		}
		defer resp.Body.Close()
		if _, err := io.Copy(io.Discard, resp.Body); err != nil {
			if ctx.Err() != nil {
				return Result{Outcome: Ignored, Err: err}
			}
			return Result{Outcome: Failure, Err: err}
		}
		switch s := resp.StatusCode; {
		case s >= 200 && s < 300:
			return Result{Outcome: Success}
		case s == http.StatusTooManyRequests:
			var ra time.Duration
			if secs, err := strconv.ParseFloat(resp.Header.Get("Retry-After"), 64); err == nil {
				ra = time.Duration(secs * float64(time.Second))
			}
			return Result{Outcome: Throttled, Err: errHTTPStatus(s), RetryAfter: ra}
		case s >= 500:
			return Result{Outcome: Failure, Err: errHTTPStatus(s)}
		default:
			return Result{Outcome: Success, Err: errHTTPStatus(s)}
		}
	}
}

// fastPolicy is a valid policy with millisecond durations, no pacing, one
// attempt per call and a generous retry budget; tests change what they test.
func fastPolicy() Policy {
	return Policy{
		ConsecutiveFailures: 3,
		FailureRatio:        0.5,
		MinCalls:            6,
		Window:              5 * time.Second,
		OpenBase:            200 * time.Millisecond,
		OpenMax:             time.Second,
		OpenDecay:           5 * time.Second,
		HalfOpenMaxCalls:    1,
		MaxAttempts:         1,
		BackoffBase:         time.Millisecond,
		BackoffMax:          5 * time.Millisecond,
		MaxRetryAfter:       time.Second,
		RetryBudgetRatio:    10,
		RetryBudgetMin:      10,
	}
}

// fixture is what most tests need: a registry with a policy, an HTTP client
// and a record of state changes.
type fixture struct {
	reg    *Registry
	client *http.Client

	mu     sync.Mutex
	events []StateChange
}

type fixtureOption func(*Config)

func setup(t *testing.T, p Policy, opts ...fixtureOption) *fixture {
	t.Helper()
	if err := p.Validate(); err != nil {
		t.Fatal(err)
	}
	f := &fixture{}
	cfg := Config{Policy: p}
	cfg.OnStateChange = func(ev StateChange) {
		f.mu.Lock()
		f.events = append(f.events, ev)
		f.mu.Unlock()
	}
	for _, o := range opts {
		o(&cfg)
	}
	logger := slog.New(slog.NewTextHandler(testWriter{t}, nil))
	f.reg = NewRegistry(cfg, logger)
	tr := &http.Transport{}
	f.client = &http.Client{Transport: tr}
	t.Cleanup(tr.CloseIdleConnections)
	return f
}

func (f *fixture) do(ctx context.Context, t *testing.T, target string) error {
	t.Helper()
	return f.reg.Do(ctx, originOfURL(t, target), get(f.client, target))
}

func (f *fixture) transitions() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []string
	for _, ev := range f.events {
		out = append(out, ev.From.String()+">"+ev.To.String())
	}
	return out
}

// openDurations returns the RetryAfter of every transition to open.
func (f *fixture) openDurations() []time.Duration {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []time.Duration
	for _, ev := range f.events {
		if ev.To == StateOpen {
			out = append(out, ev.RetryAfter)
		}
	}
	return out
}

func (f *fixture) state(t *testing.T, origin string) OriginState {
	t.Helper()
	for _, s := range f.reg.Snapshot() {
		if s.Origin == origin {
			return s
		}
	}
	t.Fatalf("origin %s not in snapshot", origin)
	return OriginState{}
}

// testWriter sends log lines to t.Log, so they show only for failing tests.
type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Helper()
	w.t.Log(string(p))
	return len(p), nil
}

func asOpen(err error) (*OpenError, bool) {
	var oe *OpenError
	ok := errors.As(err, &oe)
	return oe, ok
}

// tripOpen makes calls against a failing target until the breaker opens and
// returns the refusal.
func (f *fixture) tripOpen(t *testing.T, target string) *OpenError {
	t.Helper()
	for range 100 {
		if oe, ok := asOpen(f.do(context.Background(), t, target)); ok {
			return oe
		}
	}
	t.Fatal("breaker never opened")
	return nil
}

// fakeClock is a Clock that moves only when the test advances it, so that a
// cooldown or a decay period passes without sleeping through it. It starts
// at the real time, which keeps timestamps plausible in logs.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func newFakeClock() *fakeClock { return &fakeClock{now: time.Now()} }

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// Advance moves the clock d forward.
func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

// withClock makes the fixture's registry read clock.
func withClock(clock Clock) fixtureOption {
	return func(c *Config) { c.Clock = clock }
}
