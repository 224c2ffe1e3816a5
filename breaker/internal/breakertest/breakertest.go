// Package breakertest holds what the tests of the breaker and of its shared
// state need alike: a counting loopback Upstream, the tests' classifier, a
// registry Fixture recording state changes, and a fake clock that the tests
// move instead of sleeping.
package breakertest

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

	"github.com/ingestd/ingestd/breaker"
	"github.com/ingestd/ingestd/internal/testwait"
)

// Upstream is a real HTTP server on its own loopback port that counts the
// requests it receives and answers through a replaceable handler.
type Upstream struct {
	Srv     *httptest.Server
	Hits    atomic.Int64
	mu      sync.Mutex
	handler func(n int64, w http.ResponseWriter, r *http.Request)
}

// NewUpstream starts an upstream answering status; it closes when t ends.
func NewUpstream(t testing.TB, status int) *Upstream {
	t.Helper()
	u := &Upstream{}
	u.SetStatus(status)
	u.Srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := u.Hits.Add(1)
		u.mu.Lock()
		h := u.handler
		u.mu.Unlock()
		h(n, w, r)
	}))
	t.Cleanup(u.Srv.Close)
	return u
}

// Set replaces the handler; n counts the requests from 1.
func (u *Upstream) Set(h func(n int64, w http.ResponseWriter, r *http.Request)) {
	u.mu.Lock()
	u.handler = h
	u.mu.Unlock()
}

// SetStatus makes every answer status.
func (u *Upstream) SetStatus(status int) {
	u.Set(func(_ int64, w http.ResponseWriter, _ *http.Request) { w.WriteHeader(status) })
}

// URL is the layer URL of the upstream.
func (u *Upstream) URL() string { return u.Srv.URL + "/layer" }

// Origin is the upstream's breaker key.
func (u *Upstream) Origin(t testing.TB) string { return OriginOf(t, u.Srv.URL) }

// OriginOf is raw's breaker key; t fails on a bad URL.
func OriginOf(t testing.TB, raw string) string {
	t.Helper()
	pu, err := url.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	return breaker.Origin(pu)
}

// ClosedAddr returns the URL of a loopback port nobody listens on any more,
// so that dialling it is refused.
func ClosedAddr(t testing.TB) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return "http://" + addr + "/layer"
}

// ErrHTTPStatus is the error of an attempt that got an unwelcome status.
type ErrHTTPStatus int

// Error names the status.
func (e ErrHTTPStatus) Error() string { return fmt.Sprintf("http status %d", int(e)) }

// Get is the tiny classifier the tests use: a real GET whose status decides
// the outcome. 2xx succeeds; 429 is throttled (Retry-After in seconds, which
// this helper also accepts as a fraction so tests stay fast); other 4xx are a
// success with an error; 5xx and transport errors fail; a cancelled context
// is ignored.
func Get(client *http.Client, target string) breaker.AttemptFunc {
	return func(ctx context.Context, _ int) breaker.Result {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, target, nil)
		if err != nil {
			return breaker.Result{Outcome: breaker.Ignored, Err: err}
		}
		resp, err := client.Do(req)
		if err != nil {
			if ctx.Err() != nil {
				return breaker.Result{Outcome: breaker.Ignored, Err: err}
			}
			return breaker.Result{Outcome: breaker.Failure, Err: err}
		}
		defer resp.Body.Close()
		if _, err := io.Copy(io.Discard, resp.Body); err != nil {
			if ctx.Err() != nil {
				return breaker.Result{Outcome: breaker.Ignored, Err: err}
			}
			return breaker.Result{Outcome: breaker.Failure, Err: err}
		}
		switch s := resp.StatusCode; {
		case s >= 200 && s < 300:
			return breaker.Result{Outcome: breaker.Success}
		case s == http.StatusTooManyRequests:
			var ra time.Duration
			if secs, err := strconv.ParseFloat(resp.Header.Get("Retry-After"), 64); err == nil {
				ra = time.Duration(secs * float64(time.Second))
			}
			return breaker.Result{Outcome: breaker.Throttled, Err: ErrHTTPStatus(s), RetryAfter: ra}
		case s >= 500:
			return breaker.Result{Outcome: breaker.Failure, Err: ErrHTTPStatus(s)}
		default:
			return breaker.Result{Outcome: breaker.Success, Err: ErrHTTPStatus(s)}
		}
	}
}

// FastPolicy is a valid policy with no pacing, one attempt per call,
// millisecond backoffs and a generous retry budget; tests change what they
// test. Its Window is long because gobreaker keeps its rolling window on the
// real clock: a short one would drop counts whenever a loaded machine is
// slow between two calls. Cooldowns and decay read the Fixture's fake clock.
func FastPolicy() breaker.Policy {
	return breaker.Policy{
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

// Fixture is what most tests need: a registry with a policy, an HTTP client,
// the fake clock the registry reads and a record of state changes.
type Fixture struct {
	Reg    *breaker.Registry
	Client *http.Client
	// Clock is the registry's clock when it is a fake one (the default):
	// nothing the registry times passes unless the test advances it.
	Clock *FakeClock

	mu     sync.Mutex
	events []breaker.StateChange
}

// FixtureOption changes the registry configuration of a Fixture.
type FixtureOption func(*breaker.Config)

// Setup builds a Fixture. Unless an option sets a Clock or a Shared, the
// registry reads a new fake clock (f.Clock); its waits (backoff, 429 pauses)
// still sleep on real timers unless the test replaces the registry's sleep.
func Setup(t testing.TB, p breaker.Policy, opts ...FixtureOption) *Fixture {
	t.Helper()
	if err := p.Validate(); err != nil {
		t.Fatal(err)
	}
	f := &Fixture{}
	cfg := breaker.Config{Policy: p}
	cfg.OnStateChange = func(ev breaker.StateChange) {
		f.mu.Lock()
		f.events = append(f.events, ev)
		f.mu.Unlock()
	}
	for _, o := range opts {
		o(&cfg)
	}
	if cfg.Clock == nil && cfg.Shared == nil {
		cfg.Clock = NewFakeClock()
	}
	if fc, ok := cfg.Clock.(*FakeClock); ok {
		f.Clock = fc
	} else if cfg.Shared != nil {
		f.Clock, _ = cfg.Shared.Clock().(*FakeClock)
	}
	f.Reg = breaker.NewRegistry(cfg, Logger(t))
	tr := &http.Transport{}
	f.Client = &http.Client{Transport: tr}
	t.Cleanup(tr.CloseIdleConnections)
	return f
}

// Do runs one logical call of a GET of target through the registry.
func (f *Fixture) Do(ctx context.Context, t testing.TB, target string) error {
	t.Helper()
	return f.Reg.Do(ctx, OriginOf(t, target), Get(f.Client, target))
}

// Transitions returns every state change so far as "from>to".
func (f *Fixture) Transitions() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []string
	for _, ev := range f.events {
		out = append(out, ev.From.String()+">"+ev.To.String())
	}
	return out
}

// Events returns every state change so far, in order.
func (f *Fixture) Events() []breaker.StateChange {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.events)
}

// OpenDurations returns the RetryAfter of every transition to open.
func (f *Fixture) OpenDurations() []time.Duration {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []time.Duration
	for _, ev := range f.events {
		if ev.To == breaker.StateOpen {
			out = append(out, ev.RetryAfter)
		}
	}
	return out
}

// State returns origin's entry of the registry's snapshot; t fails without one.
func (f *Fixture) State(t testing.TB, origin string) breaker.OriginState {
	t.Helper()
	for _, s := range f.Reg.Snapshot() {
		if s.Origin == origin {
			return s
		}
	}
	t.Fatalf("origin %s not in snapshot", origin)
	return breaker.OriginState{}
}

// Logger logs to t.Log, so that the lines show only for failing tests;
// a benchmark's would show every time, so it discards them.
func Logger(t testing.TB) *slog.Logger {
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

// AsOpen returns err as an *OpenError, if it is one.
func AsOpen(err error) (*breaker.OpenError, bool) {
	var oe *breaker.OpenError
	ok := errors.As(err, &oe)
	return oe, ok
}

// tripOpen makes calls against a failing target until the breaker opens and
// returns the refusal.
func (f *Fixture) TripOpen(t testing.TB, target string) *breaker.OpenError {
	t.Helper()
	for range 100 {
		if oe, ok := AsOpen(f.Do(context.Background(), t, target)); ok {
			return oe
		}
	}
	t.Fatal("breaker never opened")
	return nil
}

// Hang bounds every wait of these tests for an event: reaching it means a
// Hang, not a slow machine.
const Hang = testwait.Hang

// await returns the next value of ch, or fails t after Hang.
func Await[T any](t testing.TB, what string, ch <-chan T) T {
	t.Helper()
	return testwait.Await(t, what, ch)
}

// eventually polls cond until it holds, for state that announces no change
// (a cache filled by NOTIFY, a row written asynchronously); it fails t after
// Hang.
func Eventually(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(Hang)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: still not so after %s", what, Hang)
		}
		// Only paces the polling of state that has no signal of its own;
		// nothing is asserted about how long it took.
		time.Sleep(5 * time.Millisecond)
	}
}

// FakeClock is a breaker.Clock that moves only when the test advances it, so that a
// cooldown or a decay period passes without sleeping through it. Its Sleep
// (set as the registry's sleep) holds a wait until Advance passes its end,
// and lets the test see who is waiting. It starts at the real time, which
// keeps timestamps plausible in logs.
type FakeClock struct {
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

// NewFakeClock returns a fake clock set to the real time.
func NewFakeClock() *FakeClock { return &FakeClock{now: time.Now(), changed: make(chan struct{})} }

// Now returns the clock's time.
func (c *FakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// Advance moves the clock d forward and wakes the sleepers whose wait ended.
func (c *FakeClock) Advance(d time.Duration) {
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
func (c *FakeClock) Sleep(ctx context.Context, d time.Duration) error {
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

func (c *FakeClock) notifyLocked() {
	close(c.changed)
	c.changed = make(chan struct{})
}

// waitSleeping waits until n calls are sleeping on the clock; t fails if
// ended (the result of a call that should be among them) comes first, or
// after Hang.
func (c *FakeClock) WaitSleeping(t testing.TB, n int, ended <-chan error) {
	t.Helper()
	timer := time.NewTimer(Hang)
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
			t.Fatalf("%d calls sleeping on the clock after %s, want %d", k, Hang, n)
		}
	}
}

// sleeping returns how many calls are sleeping on the clock now.
func (c *FakeClock) Sleeping() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.sleepers)
}

// waits returns every wait asked of Sleep so far, in order.
func (c *FakeClock) Waits() []time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.slept)
}

// ErrSlept is what a forbidden sleep returns.
var ErrSlept = errors.New("test: the call slept")

// ForbidSleep is a registry sleep for tests in which no call may wait: it
// fails t and returns at once, so that a wrong wait shows up as a failure,
// not as a slow test.
func ForbidSleep(t *testing.T) func(context.Context, time.Duration) error {
	return func(_ context.Context, d time.Duration) error {
		t.Errorf("a call slept %s", d)
		return ErrSlept
	}
}

// RegistryClock makes the Fixture's registry read clock.
func RegistryClock(clock breaker.Clock) FixtureOption {
	return func(c *breaker.Config) { c.Clock = clock }
}

// RealClock is the real clock, for benchmarks that time real waits.
type RealClock struct{}

// Now returns the real time.
func (RealClock) Now() time.Time { return time.Now() }

// PollUntil polls cond every millisecond, the resolution of the figures.
func PollUntil(b *testing.B, what string, cond func() bool) time.Time {
	b.Helper()
	deadline := time.Now().Add(Hang)
	for !cond() {
		if time.Now().After(deadline) {
			b.Fatalf("%s: not after %s", what, Hang)
		}
		time.Sleep(time.Millisecond) // the figures' resolution; a benchmark, not a test

	}
	return time.Now()
}
