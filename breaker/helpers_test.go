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
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ingestd/ingestd/internal/testwait"
)

// upstream is a real HTTP server on its own loopback port that counts the
// requests it receives and answers through a replaceable handler.
type upstream struct {
	srv     *httptest.Server
	hits    atomic.Int64
	mu      sync.Mutex
	handler func(n int64, w http.ResponseWriter, r *http.Request)
}

func newUpstream(t testing.TB, status int) *upstream {
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

func (u *upstream) origin(t testing.TB) string { return originOfURL(t, u.srv.URL) }

func originOfURL(t testing.TB, raw string) string {
	t.Helper()
	pu, err := url.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	return Origin(pu)
}

// closedAddr returns the URL of a loopback port nobody listens on any more,
// so that dialling it is refused.
func closedAddr(t testing.TB) string {
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

// fastPolicy is a valid policy with no pacing, one attempt per call,
// millisecond backoffs and a generous retry budget; tests change what they
// test. Its Window is long because gobreaker keeps its rolling window on the
// real clock: a short one would drop counts whenever a loaded machine is
// slow between two calls. Cooldowns and decay read the fixture's fake clock.
func fastPolicy() Policy {
	return Policy{
		ConsecutiveFailures: 3,
		FailureRatio:        0.5,
		MinCalls:            6,
		Window:              time.Hour,
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

// fixture is what most tests need: a registry with a policy, an HTTP client,
// the fake clock the registry reads and a record of state changes.
type fixture struct {
	reg    *Registry
	client *http.Client
	// clock is the registry's clock when it is a fake one (the default):
	// nothing the registry times passes unless the test advances it.
	clock *fakeClock

	mu     sync.Mutex
	events []StateChange
}

type fixtureOption func(*Config)

// setup builds a fixture. Unless an option sets a Clock or a SharedState, the
// registry reads a new fake clock (f.clock); its waits (backoff, 429 pauses)
// still sleep on real timers unless the test sets f.reg.sleep.
func setup(t testing.TB, p Policy, opts ...fixtureOption) *fixture {
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
	if cfg.Clock == nil && cfg.Shared == nil {
		cfg.Clock = newFakeClock()
	}
	if fc, ok := cfg.Clock.(*fakeClock); ok {
		f.clock = fc
	} else if cfg.Shared != nil {
		f.clock, _ = cfg.Shared.opts.clock.(*fakeClock)
	}
	f.reg = NewRegistry(cfg, testLogger(t))
	tr := &http.Transport{}
	f.client = &http.Client{Transport: tr}
	t.Cleanup(tr.CloseIdleConnections)
	return f
}

func (f *fixture) do(ctx context.Context, t testing.TB, target string) error {
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

func (f *fixture) state(t testing.TB, origin string) OriginState {
	t.Helper()
	for _, s := range f.reg.Snapshot() {
		if s.Origin == origin {
			return s
		}
	}
	t.Fatalf("origin %s not in snapshot", origin)
	return OriginState{}
}

// testLogger logs to t.Log, so that the lines show only for failing tests;
// a benchmark's would show every time, so it discards them.
func testLogger(t testing.TB) *slog.Logger {
	if _, bench := t.(*testing.B); bench {
		return slog.New(slog.DiscardHandler)
	}
	return slog.New(slog.NewTextHandler(testWriter{t}, nil))
}

// testWriter sends log lines to t.Log, so they show only for failing tests.
type testWriter struct{ t testing.TB }

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
func (f *fixture) tripOpen(t testing.TB, target string) *OpenError {
	t.Helper()
	for range 100 {
		if oe, ok := asOpen(f.do(context.Background(), t, target)); ok {
			return oe
		}
	}
	t.Fatal("breaker never opened")
	return nil
}

// hang bounds every wait of these tests for an event: reaching it means a
// hang, not a slow machine.
const hang = testwait.Hang

// await returns the next value of ch, or fails t after hang.
func await[T any](t testing.TB, what string, ch <-chan T) T {
	t.Helper()
	return testwait.Await(t, what, ch)
}

// eventually polls cond until it holds, for state that announces no change
// (a cache filled by NOTIFY, a row written asynchronously); it fails t after
// hang.
func eventually(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(hang)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: still not so after %s", what, hang)
		}
		// Only paces the polling of state that has no signal of its own;
		// nothing is asserted about how long it took.
		time.Sleep(5 * time.Millisecond)
	}
}

// fakeClock is a Clock that moves only when the test advances it, so that a
// cooldown or a decay period passes without sleeping through it. Its Sleep
// (set as the registry's sleep) holds a wait until Advance passes its end,
// and lets the test see who is waiting. It starts at the real time, which
// keeps timestamps plausible in logs.
type fakeClock struct {
	mu       sync.Mutex
	now      time.Time
	sleepers []*fakeSleeper
	slept    []time.Duration // every wait asked of Sleep, in order
	changed  chan struct{}   // closed and replaced when sleepers come or go
}

type fakeSleeper struct {
	until time.Time
	wake  chan struct{}
}

func newFakeClock() *fakeClock { return &fakeClock{now: time.Now(), changed: make(chan struct{})} }

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// Advance moves the clock d forward and wakes the sleepers whose wait ended.
func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
	kept := c.sleepers[:0]
	for _, s := range c.sleepers {
		if s.until.After(c.now) {
			kept = append(kept, s)
		} else {
			close(s.wake)
		}
	}
	c.sleepers = kept
	c.notifyLocked()
}

// Sleep waits until the clock has moved d, or ctx ends, as the registry's
// sleep does on a real timer.
func (c *fakeClock) Sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	c.mu.Lock()
	s := &fakeSleeper{until: c.now.Add(d), wake: make(chan struct{})}
	c.sleepers = append(c.sleepers, s)
	c.slept = append(c.slept, d)
	c.notifyLocked()
	c.mu.Unlock()
	select {
	case <-s.wake:
		return nil
	case <-ctx.Done():
		c.mu.Lock()
		if i := slices.Index(c.sleepers, s); i >= 0 {
			c.sleepers = slices.Delete(c.sleepers, i, i+1)
			c.notifyLocked()
		}
		c.mu.Unlock()
		return ctx.Err()
	}
}

func (c *fakeClock) notifyLocked() {
	close(c.changed)
	c.changed = make(chan struct{})
}

// waitSleeping waits until n calls are sleeping on the clock; t fails if
// ended (the result of a call that should be among them) comes first, or
// after hang.
func (c *fakeClock) waitSleeping(t testing.TB, n int, ended <-chan error) {
	t.Helper()
	timer := time.NewTimer(hang)
	defer timer.Stop()
	for {
		c.mu.Lock()
		k, changed := len(c.sleepers), c.changed
		c.mu.Unlock()
		if k == n {
			return
		}
		select {
		case <-changed:
		case err := <-ended:
			t.Fatalf("a call ended (%v) before %d calls were waiting on the clock", err, n)
		case <-timer.C:
			t.Fatalf("%d calls sleeping on the clock after %s, want %d", k, hang, n)
		}
	}
}

// sleeping returns how many calls are sleeping on the clock now.
func (c *fakeClock) sleeping() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.sleepers)
}

// waits returns every wait asked of Sleep so far, in order.
func (c *fakeClock) waits() []time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.slept)
}

// errSlept is what a forbidden sleep returns.
var errSlept = errors.New("test: the call slept")

// forbidSleep is a registry sleep for tests in which no call may wait: it
// fails t and returns at once, so that a wrong wait shows up as a failure,
// not as a slow test.
func forbidSleep(t *testing.T) func(context.Context, time.Duration) error {
	return func(_ context.Context, d time.Duration) error {
		t.Errorf("a call slept %s", d)
		return errSlept
	}
}

// withClock makes the fixture's registry read clock.
func withClock(clock Clock) fixtureOption {
	return func(c *Config) { c.Clock = clock }
}
