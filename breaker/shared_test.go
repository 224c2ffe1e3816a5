package breaker

import (
	"context"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/ingestd/ingestd/migrations/pgtest"
)

// node is one ingestd instance as far as the breaker goes: its own pool on
// the shared database, its SharedState and its Registry.
type node struct {
	id     string
	pool   *pgxpool.Pool
	shared *SharedState
	*fixture
}

// newNode starts an instance on the database at dbURL. The short refresh
// interval is not what the tests rely on (NOTIFY is): it only keeps a lost
// notification from stalling a test for long.
func newNode(t *testing.T, dbURL, id string, p Policy, opts ...SharedOption) *node {
	t.Helper()
	pool, err := pgxpool.New(context.Background(), dbURL)
	if err != nil {
		t.Fatal(err)
	}
	logger := slog.New(slog.NewTextHandler(testWriter{t}, nil)).With("node", id)
	opts = append([]SharedOption{WithRefreshInterval(5 * time.Second), WithProbeLease(3 * time.Second)}, opts...)
	shared := NewSharedState(pool, id, logger, opts...)
	if err := shared.Start(t.Context()); err != nil {
		t.Fatalf("start %s: %v", id, err)
	}
	n := &node{id: id, pool: pool, shared: shared}
	n.fixture = setup(t, p, func(c *Config) { c.Shared = shared })
	t.Cleanup(n.kill)
	return n
}

// testPool opens a pool on a fresh migrated database; it closes when t ends.
func testPool(t *testing.T) *pgxpool.Pool {
	t.Helper()
	pool, err := pgxpool.New(context.Background(), pgtest.URL(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	return pool
}

// kill stops the instance without releasing anything, as a kill -9 would:
// the loops stop (so the lease is no longer renewed) and the pool closes.
func (n *node) kill() {
	n.shared.Stop()
	n.pool.Close()
}

// admitted runs one call that touches no network: it reports whether the
// breaker admitted it, and the refusal if not.
func (n *node) admitted(t *testing.T, origin string) (bool, *OpenError) {
	t.Helper()
	err := n.reg.Do(t.Context(), origin, func(context.Context, int) Result { return Result{Outcome: Ignored} })
	if oe, ok := asOpen(err); ok {
		return false, oe
	}
	return true, nil
}

// waitRefused polls n every 10 ms until it refuses origin and returns the
// refusal and how long it took; it fails the test after limit.
func (n *node) waitRefused(t *testing.T, origin string, limit time.Duration) (*OpenError, time.Duration) {
	t.Helper()
	start := time.Now()
	for time.Since(start) < limit {
		if ok, oe := n.admitted(t, origin); !ok {
			return oe, time.Since(start)
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("%s still admits %s after %s", n.id, origin, limit)
	return nil, 0
}

func (n *node) waitAdmitted(t *testing.T, origin string, limit time.Duration) time.Duration {
	t.Helper()
	start := time.Now()
	for time.Since(start) < limit {
		if ok, _ := n.admitted(t, origin); ok {
			return time.Since(start)
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("%s still refuses %s after %s", n.id, origin, limit)
	return 0
}

// row reads the origin's breaker_state row straight from the database.
func row(t *testing.T, n *node, origin string) Verdict {
	t.Helper()
	vs, _, err := n.shared.Verdicts(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range vs {
		if v.Origin == origin {
			return v
		}
	}
	t.Fatalf("no breaker_state row for %s", origin)
	return Verdict{}
}

// waitRow waits up to a second for the origin's row to satisfy ok: verdicts
// are written asynchronously.
func waitRow(t *testing.T, n *node, origin string, ok func(Verdict) bool) {
	t.Helper()
	var last Verdict
	for deadline := time.Now().Add(time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		vs, _, err := n.shared.Verdicts(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		for _, v := range vs {
			if v.Origin == origin {
				if last = v; ok(v) {
					return
				}
			}
		}
	}
	t.Fatalf("row of %s never as expected; last %+v", origin, last)
}

// sharedPolicy trips on three consecutive failures and keeps each origin
// open long enough that a test sees the cluster agree before it ends.
func sharedPolicy(open time.Duration) Policy {
	p := fastPolicy()
	p.OpenBase, p.OpenMax = open, 4*open
	return p
}

func closeEnough(a, b time.Time, tol time.Duration) bool {
	d := a.Sub(b)
	return d < tol && d > -tol
}

func TestSharedTripRefusedEverywhere(t *testing.T) {
	t.Parallel()
	db := pgtest.URL(t)
	p := sharedPolicy(5 * time.Second)
	a := newNode(t, db, "a:1", p)
	b := newNode(t, db, "b:2", p)
	up := newUpstream(t, http.StatusServiceUnavailable)
	origin := up.origin(t)

	a.tripOpen(t, up.url())
	tripped := time.Now()
	hits := up.hits.Load()
	oe, took := b.waitRefused(t, origin, time.Second)
	t.Logf("b refused %s after the trip (waited %s)", time.Since(tripped).Round(time.Millisecond), took.Round(time.Millisecond))
	if up.hits.Load() != hits {
		t.Errorf("requests reached the server after the trip")
	}
	aState := a.state(t, origin)
	bUntil := time.Now().Add(oe.RetryAfter)
	if !closeEnough(aState.OpenUntil, bUntil, 150*time.Millisecond) {
		t.Errorf("a open until %s, b refuses until %s", aState.OpenUntil, bUntil)
	}
	v := row(t, a, origin)
	if v.State != StateOpen || v.UpdatedBy != "a:1" || v.ConsecutiveOpens != 1 || v.LastError == "" {
		t.Errorf("row %+v", v)
	}
	if bs := b.state(t, origin); bs.State != StateOpen || !closeEnough(bs.OpenUntil, aState.OpenUntil, 150*time.Millisecond) {
		t.Errorf("b snapshot %+v, a open until %s", bs, aState.OpenUntil)
	}
	b.mu.Lock()
	ev := b.events[0]
	b.mu.Unlock()
	if ev.From != StateClosed || ev.To != StateOpen || ev.DecidedBy != "a:1" {
		t.Errorf("b's first event %+v, want closed>open decided by a:1", ev)
	}
}

// hammer calls Do on every node from several goroutines until ctx ends and
// returns how many calls each node got admitted.
func hammer(ctx context.Context, t *testing.T, target string, nodes ...*node) []int64 {
	counts := make([]int64, len(nodes))
	var wg sync.WaitGroup
	for i, n := range nodes {
		for range 3 {
			wg.Go(func() {
				for ctx.Err() == nil {
					err := n.reg.Do(ctx, originOfURL(t, target), get(n.client, target))
					if _, refused := asOpen(err); !refused && ctx.Err() == nil {
						atomic.AddInt64(&counts[i], 1)
					}
					time.Sleep(5 * time.Millisecond)
				}
			})
		}
	}
	wg.Wait()
	return counts
}

func TestSharedOneProbeAcrossInstances(t *testing.T) {
	t.Parallel()
	db := pgtest.URL(t)
	p := sharedPolicy(400 * time.Millisecond)
	a := newNode(t, db, "a:1", p)
	b := newNode(t, db, "b:2", p)
	up := newUpstream(t, http.StatusServiceUnavailable)
	origin := up.origin(t)

	a.tripOpen(t, up.url())
	b.waitRefused(t, origin, time.Second)
	first := row(t, a, origin)

	// The origin still fails: past the cooldown exactly one probe goes out,
	// from either instance, and it re-opens the origin for both, for longer.
	before := up.hits.Load()
	ctx, cancel := context.WithTimeout(t.Context(), time.Until(first.OpenUntil.Add(-a.shared.view(origin).skew))+600*time.Millisecond)
	hammer(ctx, t, up.url(), a, b)
	cancel()
	if got := up.hits.Load() - before; got != 1 {
		t.Fatalf("%d requests after the cooldown, want exactly one probe", got)
	}
	second := row(t, a, origin)
	if second.State != StateOpen || second.ConsecutiveOpens != 2 || !second.OpenedAt.After(first.OpenedAt) {
		t.Fatalf("after the failed probe: %+v", second)
	}
	if d := second.OpenUntil.Sub(second.OpenedAt); d < time.Duration(0.8*float64(2*p.OpenBase)) {
		t.Errorf("re-opened for %s, want the grown duration (about %s)", d, 2*p.OpenBase)
	}
	// Both agree on the re-opened verdict within the promised second (the
	// other instance hears it by notification, which a loaded machine may
	// deliver some milliseconds after the row was written).
	for _, n := range []*node{a, b} {
		agree := func() (OriginState, bool) {
			s := n.state(t, origin)
			return s, s.State == StateOpen && closeEnough(s.OpenUntil, second.OpenUntil.Add(-n.shared.view(origin).skew), 150*time.Millisecond)
		}
		s, ok := agree()
		for deadline := time.Now().Add(time.Second); !ok && time.Now().Before(deadline); s, ok = agree() {
			time.Sleep(10 * time.Millisecond)
		}
		if !ok {
			t.Errorf("%s after the failed probe: %+v, row open until %s", n.id, s, second.OpenUntil)
		}
	}

	// Now it recovers. The probe hangs until the test has hammered both
	// instances for a while: nothing else may reach the server meanwhile.
	release := make(chan struct{})
	var releaseOnce sync.Once
	t.Cleanup(func() { releaseOnce.Do(func() { close(release) }) })
	probeSeen := make(chan struct{}, 1)
	up.set(func(_ int64, w http.ResponseWriter, _ *http.Request) {
		select {
		case probeSeen <- struct{}{}:
			<-release
		default:
		}
		w.WriteHeader(http.StatusOK)
	})
	before = up.hits.Load()
	ctx, cancel = context.WithCancel(t.Context())
	var counts []int64
	done := make(chan struct{})
	go func() { counts = hammer(ctx, t, up.url(), a, b); close(done) }()
	select {
	case <-probeSeen:
	case <-time.After(time.Until(second.OpenUntil) + 2*time.Second):
		cancel()
		t.Fatal("no probe after the second cooldown")
	}
	time.Sleep(500 * time.Millisecond)
	if got := up.hits.Load() - before; got != 1 {
		t.Errorf("%d requests while the probe ran, want 1", got)
	}
	releaseOnce.Do(func() { close(release) })
	time.Sleep(300 * time.Millisecond) // both instances resume
	cancel()
	<-done
	if counts[0] < 2 || counts[1] < 2 {
		t.Errorf("admitted calls after the close: a %d, b %d; want both resumed", counts[0], counts[1])
	}
	waitRow(t, a, origin, func(v Verdict) bool { return v.State == StateClosed && v.ProbeOwner == "" })
}

func TestSharedLeaseOfDeadProberExpires(t *testing.T) {
	t.Parallel()
	db := pgtest.URL(t)
	const lease = 900 * time.Millisecond
	p := sharedPolicy(300 * time.Millisecond)
	a := newNode(t, db, "a:1", p, WithProbeLease(lease))
	b := newNode(t, db, "b:2", p, WithProbeLease(lease))
	up := newUpstream(t, http.StatusServiceUnavailable)
	origin := up.origin(t)
	release := make(chan struct{})
	var releaseOnce sync.Once
	t.Cleanup(func() { releaseOnce.Do(func() { close(release) }) })

	a.tripOpen(t, up.url())
	b.waitRefused(t, origin, time.Second)
	var probeAt atomic.Int64 // unix nanos of b's probe
	// a's probe hangs; the server answers every later request at once.
	var hung atomic.Bool
	up.set(func(_ int64, w http.ResponseWriter, _ *http.Request) {
		if hung.CompareAndSwap(false, true) {
			<-release
		} else {
			probeAt.CompareAndSwap(0, time.Now().UnixNano())
		}
		w.WriteHeader(http.StatusOK)
	})
	aDone := make(chan struct{})
	go func() {
		defer close(aDone)
		for {
			err := a.do(context.Background(), t, up.url())
			if _, refused := asOpen(err); !refused {
				return
			}
			time.Sleep(10 * time.Millisecond)
		}
	}()
	for !hung.Load() {
		time.Sleep(5 * time.Millisecond)
	}
	if v := row(t, b, origin); v.ProbeOwner != "a:1" {
		t.Fatalf("a probes without the lease: %+v", v)
	}
	a.kill()
	killed := time.Now()

	// b refuses while the dead instance's lease lives, then probes once.
	oe, _ := b.waitRefused(t, origin, time.Second)
	if oe.RetryAfter <= 0 || oe.RetryAfter > lease {
		t.Errorf("b refuses with retry after %s, want the rest of a %s lease", oe.RetryAfter, lease)
	}
	ctx, cancel := context.WithTimeout(t.Context(), lease+time.Second)
	defer cancel()
	for ctx.Err() == nil {
		if err := b.do(ctx, t, up.url()); err == nil {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	at := probeAt.Load()
	if at == 0 {
		t.Fatalf("b never probed after a's lease (%s) expired", lease)
	}
	stall := time.Unix(0, at).Sub(killed)
	t.Logf("b probed %s after a died (lease %s)", stall.Round(time.Millisecond), lease)
	if stall > lease+300*time.Millisecond {
		t.Errorf("recovery stalled %s, more than one lease (%s)", stall, lease)
	}
	if up.hits.Load() != int64(p.ConsecutiveFailures)+2 {
		t.Errorf("server saw %d requests, want the trip, a's probe and b's probe", up.hits.Load())
	}
	waitRow(t, b, origin, func(v Verdict) bool { return v.State == StateClosed && v.UpdatedBy == "b:2" })
	releaseOnce.Do(func() { close(release) })
	<-aDone
}

func TestSharedRestartKeepsOriginOpen(t *testing.T) {
	t.Parallel()
	db := pgtest.URL(t)
	p := sharedPolicy(3 * time.Second)
	a := newNode(t, db, "a:1", p)
	up := newUpstream(t, http.StatusServiceUnavailable)
	origin := up.origin(t)
	a.tripOpen(t, up.url())
	waitRow(t, a, origin, func(v Verdict) bool { return v.State == StateOpen })
	until := a.state(t, origin).OpenUntil
	a.shared.Stop()
	a.pool.Close()

	hits := up.hits.Load()
	c := newNode(t, db, "a:3", p) // the same host, restarted
	for range 20 {
		err := c.do(t.Context(), t, up.url())
		oe, ok := asOpen(err)
		if !ok {
			t.Fatalf("restarted instance admitted a call to an open origin: %v", err)
		}
		if got := time.Now().Add(oe.RetryAfter); !closeEnough(got, until, 150*time.Millisecond) {
			t.Fatalf("refused until %s, want %s", got, until)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if up.hits.Load() != hits {
		t.Errorf("the restarted instance sent %d requests", up.hits.Load()-hits)
	}
}

func TestSharedOverride(t *testing.T) {
	t.Parallel()
	db := pgtest.URL(t)
	p := sharedPolicy(5 * time.Second)
	a := newNode(t, db, "a:1", p)
	b := newNode(t, db, "b:2", p)
	up := newUpstream(t, http.StatusOK)
	origin := up.origin(t)
	if err := b.do(t.Context(), t, up.url()); err != nil {
		t.Fatal(err)
	}

	if _, err := a.shared.SetOverride(t.Context(), OverrideRequest{Origin: up.url(), Override: OverrideOpen, Reason: "county maintenance", By: "alice@ops:9"}); err != nil {
		t.Fatal(err)
	}
	oe, took := b.waitRefused(t, origin, time.Second)
	t.Logf("b honoured the open override after %s", took.Round(time.Millisecond))
	if !oe.Override || oe.Reason != "county maintenance" || oe.RetryAfter != p.OpenMax {
		t.Errorf("refusal %+v", oe)
	}
	if s := b.state(t, origin); s.Override != OverrideOpen || s.OverrideReason != "county maintenance" {
		t.Errorf("b snapshot %+v", s)
	}
	if v := row(t, a, origin); v.OverrideBy != "alice@ops:9" || v.Override != OverrideOpen {
		t.Errorf("row %+v", v)
	}

	// closed admits everything, even calls that fail, without tripping.
	if _, err := a.shared.SetOverride(t.Context(), OverrideRequest{Origin: origin, Override: OverrideClosed, Reason: "fixed"}); err != nil {
		t.Fatal(err)
	}
	b.waitAdmitted(t, origin, time.Second)
	up.setStatus(http.StatusServiceUnavailable)
	for range 3 * p.ConsecutiveFailures {
		if _, refused := asOpen(b.do(t.Context(), t, up.url())); refused {
			t.Fatal("refused under a closed override")
		}
	}

	// auto: b's own breaker decides again, and trips on the failures.
	if _, err := a.shared.SetOverride(t.Context(), OverrideRequest{Origin: origin, Override: OverrideNone}); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(time.Second)
	for b.state(t, origin).Override != OverrideNone && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	b.tripOpen(t, up.url())
	a.waitRefused(t, origin, time.Second)

	// An override with an end lapses by itself.
	up.setStatus(http.StatusOK)
	other := newUpstream(t, http.StatusOK)
	if _, err := a.shared.SetOverride(t.Context(), OverrideRequest{Origin: other.url(), Override: OverrideOpen, For: 400 * time.Millisecond}); err != nil {
		t.Fatal(err)
	}
	oe, _ = b.waitRefused(t, other.origin(t), time.Second)
	if oe.RetryAfter > 400*time.Millisecond {
		t.Errorf("retry after %s under a 400ms override", oe.RetryAfter)
	}
	b.waitAdmitted(t, other.origin(t), time.Second)
}

func TestSharedDatabaseUnreachable(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	pool, err := pgxpool.New(context.Background(), "postgres://postgres@"+addr+"/none?connect_timeout=1")
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	// No database, so nothing but this process's clock times the cooldown:
	// a fake one passes it at once (the Registry uses the SharedState's).
	clock := newFakeClock()
	shared := NewSharedState(pool, "lonely:1", nil, WithClock(clock))
	if err := shared.Start(t.Context()); err == nil {
		t.Fatal("Start reported no error without a database")
	}
	defer shared.Stop()
	f := setup(t, fastPolicy(), func(c *Config) { c.Shared = shared })
	up := newUpstream(t, http.StatusServiceUnavailable)

	oe := f.tripOpen(t, up.url())
	up.setStatus(http.StatusOK)
	clock.Advance(oe.RetryAfter)
	start := time.Now()
	if err := f.do(t.Context(), t, up.url()); err != nil {
		t.Fatalf("local probe: %v", err)
	}
	if took := time.Since(start); took > 500*time.Millisecond {
		t.Errorf("the probe waited %s on the missing database", took)
	}
	want := []string{"closed>open", "open>half-open", "half-open>closed"}
	if got := f.transitions(); len(got) != 3 || got[0] != want[0] || got[1] != want[1] || got[2] != want[2] {
		t.Errorf("transitions %v, want %v", got, want)
	}
}

func TestSharedNoQueryPerCall(t *testing.T) {
	t.Parallel()
	db := pgtest.URL(t)
	a := newNode(t, db, "a:1", fastPolicy(), WithRefreshInterval(time.Minute))
	up := newUpstream(t, http.StatusOK)
	if err := a.do(t.Context(), t, up.url()); err != nil {
		t.Fatal(err)
	}
	before := a.pool.Stat().AcquireCount()
	for range 200 {
		if err := a.do(t.Context(), t, up.url()); err != nil {
			t.Fatal(err)
		}
	}
	if got := a.pool.Stat().AcquireCount() - before; got != 0 {
		t.Errorf("200 calls acquired %d database connections, want 0", got)
	}
}

// Lifting an open override resumes what it parked: now for closed, at the
// end of the breaker's own cooldown for none on an open origin; setting
// open resumes nothing.
func TestSharedOverrideLiftedResumesParked(t *testing.T) {
	t.Parallel()
	pool := testPool(t)
	type call struct {
		origin    string
		notBefore time.Time
	}
	var calls []call
	resume := func(_ context.Context, origin string, notBefore time.Time) (int64, error) {
		calls = append(calls, call{origin, notBefore})
		return 3, nil
	}
	shared := NewSharedState(pool, "ops:1", nil, WithResume(resume))
	const origin = "http://gis.example.org:80"
	set := func(ov Override) OverrideResult {
		t.Helper()
		res, err := shared.SetOverride(t.Context(), OverrideRequest{Origin: origin, Override: ov})
		if err != nil {
			t.Fatal(err)
		}
		return res
	}

	if res := set(OverrideOpen); res.Resumed != 0 || len(calls) != 0 {
		t.Fatalf("open resumed %d (calls %v), want nothing", res.Resumed, calls)
	}
	if res := set(OverrideClosed); res.Resumed != 3 || !res.ResumeAt.IsZero() || len(calls) != 1 || !calls[0].notBefore.IsZero() {
		t.Fatalf("closed: %+v, calls %v; want 3 resumed now", res, calls)
	}
	// The breaker holds the origin open on its own: auto hands it back to
	// that verdict, so parked work waits for its cooldown.
	until := time.Now().Add(time.Hour).UTC().Truncate(time.Microsecond)
	if _, err := pool.Exec(t.Context(), `UPDATE breaker_state SET state = 'open', opened_at = now(), open_until = $2
		WHERE origin = $1`, origin, until); err != nil {
		t.Fatal(err)
	}
	if res := set(OverrideNone); res.Resumed != 3 || !res.ResumeAt.Equal(until) || len(calls) != 2 || !calls[1].notBefore.Equal(until) || calls[1].origin != origin {
		t.Fatalf("none on an open origin: %+v, calls %v; want 3 resumed at %s", res, calls, until)
	}
}
