package pgshare

import (
	. "github.com/ingestd/ingestd/breaker"
	. "github.com/ingestd/ingestd/breaker/internal/breakertest"

	"context"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/ingestd/ingestd/migrations/pgtest"
)

// node is one ingestd instance as far as the breaker goes: its own pool on
// the shared database, its Cluster and its Registry.
type node struct {
	id     string
	pool   *pgxpool.Pool
	shared *Cluster
	jitter atomic.Pointer[float64]
	*Fixture
}

// newNode starts an instance on the database at dbURL, on a fake clock of
// its own (n.Clock) that the tests never move: the node then reckons the
// database's time as of its last query, so a verdict it reads lasts exactly
// what is left of it in the database, whatever the machine's speed. Probe
// leases last an hour and the tests' cooldowns as long, so that nothing
// ends unless the test ends it (see expire). The tests rely on NOTIFY, whose
// re-read always follows the write it announces; the periodic reload is an
// hour away because a reload that began a hair before a write committed
// could read the row with a database time just before the write's.
func newNode(t testing.TB, dbURL, id string, p Policy, opts ...Option) *node {
	t.Helper()
	pool, err := pgxpool.New(context.Background(), pgtest.PoolURL(dbURL, pgtest.PoolConns))
	if err != nil {
		t.Fatal(err)
	}
	logger := Logger(t).With("node", id)
	opts = append([]Option{WithRefreshInterval(time.Hour), WithProbeLease(time.Hour), WithClock(NewFakeClock())}, opts...)
	shared := New(pool, id, logger, opts...)
	if err := shared.Start(t.Context()); err != nil {
		t.Fatalf("start %s: %v", id, err)
	}
	n := &node{id: id, pool: pool, shared: shared}
	n.Fixture = Setup(t, p, func(c *Config) { c.Shared, c.Jitter = shared, n.rand })
	t.Cleanup(n.kill)
	return n
}

// rand is the node's jitter source: random unless pinJitter pinned it.
func (n *node) rand() float64 {
	if j := n.jitter.Load(); j != nil {
		return *j
	}
	return rand.Float64()
}

// pinJitter makes every jitter of the node's registry j.
func (n *node) pinJitter(j float64) { n.jitter.Store(&j) }

// nodesConns is what a test reserves of the server for its database: up to
// three nodes' pools (newNode) or the test's own (poolOn), of
// pgtest.PoolConns each.
const nodesConns = 3 * pgtest.PoolConns

// testPool opens a pool on a fresh migrated database; it closes when t ends.
func testPool(t testing.TB) *pgxpool.Pool {
	t.Helper()
	return poolOn(t, pgtest.URL(t))
}

// poolOn opens a pool on dbURL (the test's own hand on the database); it
// closes when t ends.
func poolOn(t testing.TB, dbURL string) *pgxpool.Pool {
	t.Helper()
	pool, err := pgxpool.New(context.Background(), pgtest.PoolURL(dbURL, pgtest.PoolConns))
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
func (n *node) admitted(t testing.TB, origin string) (bool, *OpenError) {
	t.Helper()
	err := n.Reg.Do(t.Context(), origin, func(context.Context, int) Result { return Result{Outcome: Ignored} })
	if oe, ok := AsOpen(err); ok {
		return false, oe
	}
	return true, nil
}

// waitRefused waits until n refuses origin (it hears of other instances'
// verdicts by NOTIFY) and returns the refusal.
func (n *node) waitRefused(t testing.TB, origin string) *OpenError {
	t.Helper()
	var oe *OpenError
	Eventually(t, n.id+" refuses "+origin, func() bool {
		var ok bool
		ok, oe = n.admitted(t, origin)
		return !ok
	})
	return oe
}

// waitAdmitted waits until n admits a call to origin.
func (n *node) waitAdmitted(t testing.TB, origin string) {
	t.Helper()
	Eventually(t, n.id+" admits "+origin, func() bool {
		ok, _ := n.admitted(t, origin)
		return ok
	})
}

// waitVersion waits until n's cache holds origin's row at version v or later.
func (n *node) waitVersion(t testing.TB, origin string, v int64) {
	t.Helper()
	Eventually(t, fmt.Sprintf("%s reads version %d of %s", n.id, v, origin), func() bool {
		return n.shared.View(origin).Verdict.Version >= v
	})
}

// expire moves one of the origin's deadlines (open_until, probe_until or
// override_until) a minute into the past, as if the database's clock had
// passed it: PostgreSQL's now() cannot be moved, and the tests' verdicts
// last hours so that none ends by itself on a slow machine. The row's
// trigger notifies the instances; expire waits until each of nodes has read
// the new row.
func expire(t testing.TB, pool *pgxpool.Pool, column, origin string, nodes ...*node) {
	t.Helper()
	switch column {
	case "open_until", "probe_until", "override_until":
	default:
		t.Fatalf("expire: %q is not a deadline of breaker_state", column)
	}
	var version int64
	if err := pool.QueryRow(t.Context(), `UPDATE breaker_state SET `+column+` = now() - interval '1 minute'
		WHERE origin = $1 RETURNING version`, origin).Scan(&version); err != nil {
		t.Fatalf("expire %s of %s: %v", column, origin, err)
	}
	for _, n := range nodes {
		n.waitVersion(t, origin, version)
	}
}

// row reads the origin's breaker_state row straight from the database.
func row(t testing.TB, pool *pgxpool.Pool, origin string) Verdict {
	t.Helper()
	v, ok := findRow(t, pool, origin)
	if !ok {
		t.Fatalf("no breaker_state row for %s", origin)
	}
	return v
}

func findRow(t testing.TB, pool *pgxpool.Pool, origin string) (Verdict, bool) {
	t.Helper()
	vs, _, err := New(pool, "test:0", nil).Verdicts(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range vs {
		if v.Origin == origin {
			return v, true
		}
	}
	return Verdict{}, false
}

// waitRow waits for the origin's row to satisfy ok (verdicts are written
// asynchronously) and returns it.
func waitRow(t testing.TB, pool *pgxpool.Pool, origin string, ok func(Verdict) bool) Verdict {
	t.Helper()
	var last Verdict
	Eventually(t, "the row of "+origin+" as expected", func() bool {
		v, found := findRow(t, pool, origin)
		last = v
		return found && ok(v)
	})
	return last
}

// sharedPolicy trips on three consecutive failures and keeps each origin
// open for open (hours in these tests: a cooldown ends when the test expires
// it).
func sharedPolicy(open time.Duration) Policy {
	p := FastPolicy()
	p.OpenBase, p.OpenMax = open, 4*open
	return p
}

func TestSharedTripRefusedEverywhere(t *testing.T) {
	t.Parallel()
	db := pgtest.URLFor(t, nodesConns)
	ctl := poolOn(t, db)
	p := sharedPolicy(time.Hour)
	a := newNode(t, db, "a:1", p)
	b := newNode(t, db, "b:2", p)
	up := NewUpstream(t, http.StatusServiceUnavailable)
	origin := up.Origin(t)

	a.TripOpen(t, up.URL())
	hits := up.Hits.Load()
	oe := b.waitRefused(t, origin) // b never tripped: only a's verdict can refuse
	if up.Hits.Load() != hits {
		t.Errorf("requests reached the server after the trip")
	}
	v := row(t, ctl, origin)
	if v.State != StateOpen || v.UpdatedBy != "a:1" || v.ConsecutiveOpens != 1 || v.LastError == "" {
		t.Errorf("row %+v", v)
	}
	// b refuses until the row's open_until: it holds a's row, and its
	// refusal is what is left of the row's span as of b's last read of the
	// database (b's clock stands still), never more.
	span := v.OpenUntil.Sub(v.OpenedAt)
	if bv := b.shared.View(origin).Verdict; bv.Version != v.Version || !bv.OpenUntil.Equal(v.OpenUntil) {
		t.Errorf("b caches %+v, want the row %+v", bv, v)
	}
	if oe.RetryAfter <= 0 || oe.RetryAfter > span {
		t.Errorf("b refuses for %s, want at most what is left of the row's %s", oe.RetryAfter, span)
	}
	if bs := b.State(t, origin); bs.State != StateOpen || !bs.OpenUntil.Equal(b.Clock.Now().Add(oe.RetryAfter)) {
		t.Errorf("b snapshot %+v, refusing for %s", bs, oe.RetryAfter)
	}
	if as := a.State(t, origin); as.State != StateOpen || as.OpenUntil.Sub(a.Clock.Now()) <= 0 || as.OpenUntil.Sub(a.Clock.Now()) > span {
		t.Errorf("a snapshot %+v, want open for at most the row's %s", as, span)
	}
	ev := b.Events()[0]
	if ev.From != StateClosed || ev.To != StateOpen || ev.DecidedBy != "a:1" {
		t.Errorf("b's first event %+v, want closed>open decided by a:1", ev)
	}
}

// load calls Do on every node from three goroutines each until halted, and
// counts per node the calls admitted and refused.
type load struct {
	cancel   context.CancelFunc
	wg       sync.WaitGroup
	admitted []atomic.Int64
	refused  []atomic.Int64
}

func hammer(t testing.TB, target string, nodes ...*node) *load {
	ctx, cancel := context.WithCancel(t.Context())
	l := &load{cancel: cancel, admitted: make([]atomic.Int64, len(nodes)), refused: make([]atomic.Int64, len(nodes))}
	for i, n := range nodes {
		for range 3 {
			l.wg.Go(func() {
				for ctx.Err() == nil {
					err := n.Reg.Do(ctx, OriginOf(t, target), Get(n.Client, target))
					switch _, refused := AsOpen(err); {
					case refused:
						l.refused[i].Add(1)
					case ctx.Err() == nil:
						l.admitted[i].Add(1)
					}
					// Paces the load so that it does not starve the
					// instances' own goroutines; nothing waits on it.
					time.Sleep(time.Millisecond)
				}
			})
		}
	}
	t.Cleanup(l.halt)
	return l
}

// more waits until every node has had n more calls counted in c than now.
func (l *load) more(t testing.TB, what string, c []atomic.Int64, n int64) {
	t.Helper()
	from := make([]int64, len(c))
	for i := range c {
		from[i] = c[i].Load()
	}
	Eventually(t, fmt.Sprintf("%d more calls %s on every node", n, what), func() bool {
		for i := range c {
			if c[i].Load() < from[i]+n {
				return false
			}
		}
		return true
	})
}

func (l *load) halt() {
	l.cancel()
	l.wg.Wait()
}

// holdFirst makes up hold its first request from now on until release is
// called (or the request is cancelled), closing held when it arrives, and
// answer every request with status. The test's end releases it too.
func holdFirst(t testing.TB, up *Upstream, status int) (held <-chan struct{}, release func()) {
	arrived, gate := make(chan struct{}), make(chan struct{})
	release = sync.OnceFunc(func() { close(gate) })
	t.Cleanup(release)
	var n atomic.Int64
	up.Set(func(_ int64, w http.ResponseWriter, r *http.Request) {
		if n.Add(1) == 1 {
			close(arrived)
			select {
			case <-gate:
			case <-r.Context().Done():
			}
		}
		w.WriteHeader(status)
	})
	return arrived, release
}

// Past the cooldown exactly one probe goes out in the cluster, however hard
// both instances are pushed: while it runs every other call is refused, and
// its verdict (re-open, longer; or close) reaches both.
func TestSharedOneProbeAcrossInstances(t *testing.T) {
	t.Parallel()
	db := pgtest.URLFor(t, nodesConns)
	ctl := poolOn(t, db)
	p := sharedPolicy(time.Hour)
	a := newNode(t, db, "a:1", p)
	b := newNode(t, db, "b:2", p)
	a.pinJitter(0.5) // no jitter: open durations are exact
	b.pinJitter(0.5)
	up := NewUpstream(t, http.StatusServiceUnavailable)
	origin := up.Origin(t)

	a.TripOpen(t, up.URL())
	b.waitRefused(t, origin)
	first := row(t, ctl, origin)

	// The origin still fails. The probe hangs until both instances have
	// been refused many times beside it, and then fails.
	held, release := holdFirst(t, up, http.StatusServiceUnavailable)
	before := up.Hits.Load()
	expire(t, ctl, "open_until", origin, a, b)
	l := hammer(t, up.URL(), a, b)
	Await(t, "the probe after the cooldown", held)
	l.more(t, "refused while the probe runs", l.refused, 20)
	release()
	// The failed probe re-opens the origin for both, for twice OpenBase.
	second := waitRow(t, ctl, origin, func(v Verdict) bool { return v.State == StateOpen && v.ConsecutiveOpens == 2 })
	for _, n := range []*node{a, b} {
		n.waitVersion(t, origin, second.Version)
		if s := n.State(t, origin); s.State != StateOpen || s.OpenUntil.Sub(n.Clock.Now()) > 2*p.OpenBase {
			t.Errorf("%s after the failed probe: %+v, want open for at most %s", n.id, s, 2*p.OpenBase)
		}
	}
	l.more(t, "refused under the new verdict", l.refused, 20)
	l.halt()
	if got := up.Hits.Load() - before; got != 1 {
		t.Fatalf("%d requests after the cooldown, want exactly one probe", got)
	}
	if !second.OpenedAt.After(first.OpenedAt) || second.ProbeOwner != "" {
		t.Errorf("after the failed probe: %+v", second)
	}
	if d := second.OpenUntil.Sub(second.OpenedAt); d != 2*p.OpenBase {
		t.Errorf("re-opened for %s, want the grown duration %s", d, 2*p.OpenBase)
	}

	// Now it recovers. Again one probe, held until both instances have been
	// refused beside it; its success closes the origin for both.
	held, release = holdFirst(t, up, http.StatusOK)
	before = up.Hits.Load()
	expire(t, ctl, "open_until", origin, a, b)
	l = hammer(t, up.URL(), a, b)
	Await(t, "the probe after the second cooldown", held)
	l.more(t, "refused while the probe runs", l.refused, 20)
	if got := up.Hits.Load() - before; got != 1 {
		t.Errorf("%d requests while the probe ran, want 1", got)
	}
	release()
	l.more(t, "admitted after the close", l.admitted, 2)
	l.halt()
	waitRow(t, ctl, origin, func(v Verdict) bool { return v.State == StateClosed && v.ProbeOwner == "" })
}

// An instance asks for the probe lease from the row it last saw; the
// statement runs without the origin's lock, and by then another instance
// may have taken the lease, probed and closed the origin. That close
// stands: the lease of a closed row is taken only at the version the
// instance saw (its own open never reached the table), else the late
// asker would re-open the origin for the whole cluster under a lease it
// may never probe with.
func TestSharedLateLeaseLeavesAnotherInstancesClose(t *testing.T) {
	t.Parallel()
	db := pgtest.URL(t)
	ctl := poolOn(t, db)
	p := sharedPolicy(time.Hour)
	a := newNode(t, db, "a:1", p)
	b := newNode(t, db, "b:2", p)
	up := NewUpstream(t, http.StatusServiceUnavailable)
	origin := up.Origin(t)

	a.TripOpen(t, up.URL())
	b.waitRefused(t, origin)
	expire(t, ctl, "open_until", origin, a, b)
	seen := b.shared.View(origin).Verdict.Version // what b decides its lease from
	up.SetStatus(http.StatusOK)
	if err := a.Do(t.Context(), t, up.URL()); err != nil {
		t.Fatalf("a's probe: %v", err)
	}
	closed := waitRow(t, ctl, origin, func(v Verdict) bool { return v.State == StateClosed })

	won, err := b.shared.AcquireLease(t.Context(), origin, 1, seen)
	if err != nil || won {
		t.Fatalf("b's lease from the open row it saw, after a's close: won %v, %v; want lost", won, err)
	}
	if v := row(t, ctl, origin); v.State != StateClosed || v.Version != closed.Version {
		t.Fatalf("after b's late lease: %+v, want a's close untouched", v)
	}
	// b's cache now holds the close, and its next call adopts it.
	b.waitAdmitted(t, origin)
	if v := row(t, ctl, origin); v.State != StateClosed || v.Version != closed.Version {
		t.Fatalf("after b's call: %+v, want a's close untouched", v)
	}
	// A closed row at the version an instance saw is one its own open never
	// reached: the lease is its to take, and publishes the open.
	won, err = b.shared.AcquireLease(t.Context(), origin, 1, closed.Version)
	if err != nil || !won {
		t.Fatalf("b's lease of the closed row it saw: won %v, %v; want won", won, err)
	}
	if v := row(t, ctl, origin); v.State != StateHalfOpen || v.ProbeOwner != "b:2" {
		t.Fatalf("after b's lease: %+v, want half-open under b's lease", v)
	}
}

// A prober that dies holds the cluster back for the rest of its lease, and
// no longer: once the lease has lapsed another instance probes, once.
func TestSharedLeaseOfDeadProberExpires(t *testing.T) {
	t.Parallel()
	db := pgtest.URLFor(t, nodesConns)
	ctl := poolOn(t, db)
	const lease = time.Hour
	p := sharedPolicy(3 * time.Hour) // unlike the lease, so that a refusal tells which held it
	a := newNode(t, db, "a:1", p, WithProbeLease(lease))
	b := newNode(t, db, "b:2", p, WithProbeLease(lease))
	up := NewUpstream(t, http.StatusServiceUnavailable)
	origin := up.Origin(t)

	a.TripOpen(t, up.URL())
	b.waitRefused(t, origin)
	// a's probe hangs; the server answers every later request at once.
	held, release := holdFirst(t, up, http.StatusOK)
	expire(t, ctl, "open_until", origin, a, b)
	aDone := make(chan error, 1)
	go func() { aDone <- a.Do(context.Background(), t, up.URL()) }()
	Await(t, "a's probe", held)
	if v := row(t, ctl, origin); v.ProbeOwner != "a:1" {
		t.Fatalf("a probes without the lease: %+v", v)
	}
	a.kill()

	// b refuses while the dead instance's lease lives, for the rest of it.
	oe := b.waitRefused(t, origin)
	if oe.RetryAfter <= 0 || oe.RetryAfter > lease {
		t.Errorf("b refuses with retry after %s, want the rest of a %s lease", oe.RetryAfter, lease)
	}
	// The lease lapses: b probes once, and closes the origin for everyone.
	expire(t, ctl, "probe_until", origin, b)
	if err := b.Do(t.Context(), t, up.URL()); err != nil {
		t.Fatalf("b's probe after a's lease lapsed: %v", err)
	}
	if up.Hits.Load() != int64(p.ConsecutiveFailures)+2 {
		t.Errorf("server saw %d requests, want the trip, a's probe and b's probe", up.Hits.Load())
	}
	waitRow(t, ctl, origin, func(v Verdict) bool { return v.State == StateClosed && v.UpdatedBy == "b:2" })
	release()
	Await(t, "a's probe to end", aDone)
}

// The holder of the probe lease renews it while its probe runs, so that a
// slow probe does not lose it.
func TestSharedProberRenewsItsLease(t *testing.T) {
	t.Parallel()
	db := pgtest.URLFor(t, nodesConns)
	ctl := poolOn(t, db)
	// Renewed every 100 ms. No other instance: nothing could take the lease
	// if a renewal came late, so the machine's speed cannot matter.
	const lease = 300 * time.Millisecond
	a := newNode(t, db, "a:1", sharedPolicy(time.Hour), WithProbeLease(lease))
	up := NewUpstream(t, http.StatusServiceUnavailable)
	origin := up.Origin(t)
	a.TripOpen(t, up.URL())
	waitRow(t, ctl, origin, func(v Verdict) bool { return v.State == StateOpen })
	held, release := holdFirst(t, up, http.StatusOK)
	expire(t, ctl, "open_until", origin, a)
	aDone := make(chan error, 1)
	go func() { aDone <- a.Do(context.Background(), t, up.URL()) }()
	Await(t, "a's probe", held)
	v := row(t, ctl, origin)
	if v.ProbeOwner != "a:1" {
		t.Fatalf("a probes without the lease: %+v", v)
	}
	for i := range 2 {
		prev := v.ProbeUntil
		v = waitRow(t, ctl, origin, func(v Verdict) bool { return v.ProbeUntil.After(prev) })
		if v.ProbeOwner != "a:1" {
			t.Fatalf("renewal %d: %+v, want a's lease extended", i+1, v)
		}
	}
	release()
	if err := Await(t, "a's probe to end", aDone); err != nil {
		t.Fatal(err)
	}
	waitRow(t, ctl, origin, func(v Verdict) bool { return v.State == StateClosed && v.ProbeOwner == "" })
}

func TestSharedRestartKeepsOriginOpen(t *testing.T) {
	t.Parallel()
	db := pgtest.URLFor(t, nodesConns)
	ctl := poolOn(t, db)
	p := sharedPolicy(time.Hour)
	a := newNode(t, db, "a:1", p)
	up := NewUpstream(t, http.StatusServiceUnavailable)
	origin := up.Origin(t)
	a.TripOpen(t, up.URL())
	v := waitRow(t, ctl, origin, func(v Verdict) bool { return v.State == StateOpen })
	span := v.OpenUntil.Sub(v.OpenedAt)
	a.shared.Stop()
	a.pool.Close()

	hits := up.Hits.Load()
	c := newNode(t, db, "a:3", p) // the same host, restarted
	if cv := c.shared.View(origin).Verdict; cv.Version != v.Version {
		t.Errorf("the restarted instance loaded %+v, want the row %+v", cv, v)
	}
	for range 20 {
		err := c.Do(t.Context(), t, up.URL())
		oe, ok := AsOpen(err)
		if !ok {
			t.Fatalf("restarted instance admitted a call to an open origin: %v", err)
		}
		if oe.RetryAfter <= 0 || oe.RetryAfter > span {
			t.Fatalf("refused for %s, want what is left of the row's %s", oe.RetryAfter, span)
		}
	}
	if up.Hits.Load() != hits {
		t.Errorf("the restarted instance sent %d requests", up.Hits.Load()-hits)
	}
}

func TestSharedOverride(t *testing.T) {
	t.Parallel()
	db := pgtest.URLFor(t, nodesConns)
	ctl := poolOn(t, db)
	p := sharedPolicy(time.Hour)
	a := newNode(t, db, "a:1", p)
	b := newNode(t, db, "b:2", p)
	up := NewUpstream(t, http.StatusOK)
	origin := up.Origin(t)
	if err := b.Do(t.Context(), t, up.URL()); err != nil {
		t.Fatal(err)
	}

	if _, err := a.shared.SetOverride(t.Context(), OverrideRequest{Origin: up.URL(), Override: OverrideOpen, Reason: "county maintenance", By: "alice@ops:9"}); err != nil {
		t.Fatal(err)
	}
	oe := b.waitRefused(t, origin)
	if !oe.Override || oe.Reason != "county maintenance" || oe.RetryAfter != p.OpenMax {
		t.Errorf("refusal %+v", oe)
	}
	if s := b.State(t, origin); s.Override != OverrideOpen || s.OverrideReason != "county maintenance" {
		t.Errorf("b snapshot %+v", s)
	}
	if v := row(t, ctl, origin); v.OverrideBy != "alice@ops:9" || v.Override != OverrideOpen {
		t.Errorf("row %+v", v)
	}

	// closed admits everything, even calls that fail, without tripping.
	if _, err := a.shared.SetOverride(t.Context(), OverrideRequest{Origin: origin, Override: OverrideClosed, Reason: "fixed"}); err != nil {
		t.Fatal(err)
	}
	b.waitAdmitted(t, origin)
	up.SetStatus(http.StatusServiceUnavailable)
	for range 3 * p.ConsecutiveFailures {
		if _, refused := AsOpen(b.Do(t.Context(), t, up.URL())); refused {
			t.Fatal("refused under a closed override")
		}
	}

	// auto: b's own breaker decides again, and trips on the failures.
	res, err := a.shared.SetOverride(t.Context(), OverrideRequest{Origin: origin, Override: OverrideNone})
	if err != nil {
		t.Fatal(err)
	}
	b.waitVersion(t, origin, res.Version)
	b.TripOpen(t, up.URL())
	a.waitRefused(t, origin)

	// An override with an end lapses by itself: refused for the rest of
	// it, admitted once its end has passed.
	up.SetStatus(http.StatusOK)
	other := NewUpstream(t, http.StatusOK)
	if _, err := a.shared.SetOverride(t.Context(), OverrideRequest{Origin: other.URL(), Override: OverrideOpen, For: time.Hour}); err != nil {
		t.Fatal(err)
	}
	oe = b.waitRefused(t, other.Origin(t))
	if !oe.Override || oe.RetryAfter <= 0 || oe.RetryAfter > time.Hour {
		t.Errorf("refusal %+v under a one-hour override, want the rest of it", oe)
	}
	expire(t, ctl, "override_until", other.Origin(t), b)
	if ok, oe := b.admitted(t, other.Origin(t)); !ok {
		t.Errorf("refused after the override's end: %+v", oe)
	}
}

func TestSharedDatabaseUnreachable(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	cfg, err := pgxpool.ParseConfig("postgres://postgres@" + addr + "/none?connect_timeout=1")
	if err != nil {
		t.Fatal(err)
	}
	// Every statement of the shared state goes through the pool, which
	// calls BeforeConnect for each connection it tries (it never holds one).
	var connects atomic.Int64
	cfg.BeforeConnect = func(context.Context, *pgx.ConnConfig) error {
		connects.Add(1)
		return nil
	}
	pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	// No database, so nothing but this process's clock times the cooldown:
	// a fake one passes it at once (the Registry uses the Cluster's).
	clock := NewFakeClock()
	shared := New(pool, "lonely:1", nil, WithClock(clock), WithRefreshInterval(time.Hour))
	if err := shared.Start(t.Context()); err == nil {
		t.Fatal("Start reported no error without a database")
	}
	defer shared.Stop()
	f := Setup(t, FastPolicy(), func(c *Config) { c.Shared = shared })
	up := NewUpstream(t, http.StatusServiceUnavailable)
	origin := up.Origin(t)

	oe := f.TripOpen(t, up.URL())
	// The trip's write fails and waits for the next reload (an hour away):
	// from then on only a probe lease would try the database.
	Eventually(t, "the trip's write failed", func() bool {
		shared.mu.Lock()
		defer shared.mu.Unlock()
		_, ok := shared.pending[origin]
		return ok
	})
	if shared.View(origin).Reachable {
		t.Fatal("the shared state thinks the database reachable")
	}
	before := connects.Load()
	up.SetStatus(http.StatusOK)
	clock.Advance(oe.RetryAfter)
	if err := f.Do(t.Context(), t, up.URL()); err != nil {
		t.Fatalf("local probe: %v", err)
	}
	if n := connects.Load() - before; n != 0 {
		t.Errorf("the probe tried the missing database %d times: it waited for a lease it could not get", n)
	}
	want := []string{"closed>open", "open>half-open", "half-open>closed"}
	if got := f.Transitions(); !slices.Equal(got, want) {
		t.Errorf("transitions %v, want %v", got, want)
	}
}

func TestSharedNoQueryPerCall(t *testing.T) {
	t.Parallel()
	db := pgtest.URLFor(t, nodesConns)
	a := newNode(t, db, "a:1", FastPolicy(), WithRefreshInterval(time.Minute))
	up := NewUpstream(t, http.StatusOK)
	if err := a.Do(t.Context(), t, up.URL()); err != nil {
		t.Fatal(err)
	}
	before := a.pool.Stat().AcquireCount()
	for range 200 {
		if err := a.Do(t.Context(), t, up.URL()); err != nil {
			t.Fatal(err)
		}
	}
	if got := a.pool.Stat().AcquireCount() - before; got != 0 {
		t.Errorf("200 calls acquired %d database connections, want 0", got)
	}
}

// What an instance decides from a cached row, without a database: times in
// the row are the database's, converted by the estimated offset of its
// clock, so every instance refuses until the same moment.
func TestSharedCacheDecides(t *testing.T) {
	t.Parallel()
	clock := NewFakeClock()
	shared := New(nil, "me:1", nil, WithClock(clock))
	const skew = 3 * time.Second // the database's clock runs 3 s ahead
	shared.skew, shared.reachable, shared.known = skew, true, true
	put := func(v Verdict) {
		shared.mu.Lock()
		defer shared.mu.Unlock()
		shared.gen++
		v.Version = int64(shared.gen)
		shared.rows[v.Origin] = cachedVerdict{v: v, gen: shared.gen, at: clock.Now()}
	}
	f := Setup(t, FastPolicy(), func(c *Config) { c.Shared = shared })
	const origin = "http://gis.example.org:80"
	refused := func(what string) *OpenError {
		t.Helper()
		err := f.Reg.Do(t.Context(), origin, func(context.Context, int) Result {
			t.Errorf("%s: the call went out", what)
			return Result{Outcome: Ignored}
		})
		oe, ok := AsOpen(err)
		if !ok {
			t.Fatalf("%s: %v, want a refusal", what, err)
		}
		return oe
	}

	dbNow := clock.Now().Add(skew)
	v := Verdict{Origin: origin, State: StateOpen, OpenedAt: dbNow, OpenUntil: dbNow.Add(10 * time.Minute),
		ConsecutiveOpens: 2, UpdatedBy: "other:2"}
	put(v)
	if oe := refused("open"); oe.RetryAfter != 10*time.Minute || oe.Override {
		t.Errorf("open row: %+v, want refused for 10m", oe)
	}
	if s := f.State(t, origin); s.State != StateOpen || !s.OpenUntil.Equal(clock.Now().Add(10*time.Minute)) || s.ConsecutiveOpens != 2 {
		t.Errorf("snapshot %+v, want open 10m from now", s)
	}
	clock.Advance(time.Minute)
	if oe := refused("open, a minute later"); oe.RetryAfter != 9*time.Minute {
		t.Errorf("a minute later: retry after %s, want 9m", oe.RetryAfter)
	}
	// Past open_until another instance holds the lease: refused for the
	// rest of it, without a query.
	dbNow = clock.Now().Add(skew)
	v.State, v.OpenUntil, v.ProbeOwner, v.ProbeUntil = StateHalfOpen, dbNow.Add(-time.Second), "other:2", dbNow.Add(20*time.Second)
	put(v)
	if oe := refused("another's lease"); oe.RetryAfter != 20*time.Second {
		t.Errorf("under another's lease: retry after %s, want 20s", oe.RetryAfter)
	}
	// An operator's open override, for five minutes.
	v.Override, v.OverrideUntil, v.OverrideReason = OverrideOpen, dbNow.Add(5*time.Minute), "maintenance"
	put(v)
	if oe := refused("override"); !oe.Override || oe.RetryAfter != 5*time.Minute || oe.Reason != "maintenance" {
		t.Errorf("override: %+v, want refused by the override for 5m", oe)
	}
	evs := f.Events()
	if len(evs) == 0 || evs[0].To != StateOpen || evs[0].DecidedBy != "other:2" || evs[0].RetryAfter != 10*time.Minute {
		t.Errorf("events %+v, want closed>open for 10m decided by other:2 first", evs)
	}
}

// The offset of the database's clock is estimated like NTP: a sample's
// error is at most half its round trip, so the sample with the shortest
// round trip is kept.
func TestSkewKeepsTheShortestRoundTrip(t *testing.T) {
	t.Parallel()
	s := New(nil, "me:1", nil)
	sent := time.Date(2025, 1, 1, 12, 0, 0, 0, time.UTC)
	// The database read its clock (10 s ahead) 20 ms into a 100 ms round
	// trip: the estimate is off by 30 ms, under half the round trip.
	s.noteSkewLocked(sent.Add(10*time.Second+20*time.Millisecond), sent, 100*time.Millisecond)
	if s.skew != 10*time.Second-30*time.Millisecond {
		t.Fatalf("skew %s, want 9.97s", s.skew)
	}
	// A slower sample, seconds later, does not replace it however wrong it is.
	later := sent.Add(5 * time.Second)
	s.noteSkewLocked(later.Add(10*time.Second+400*time.Millisecond), later, 500*time.Millisecond)
	if s.skew != 10*time.Second-30*time.Millisecond {
		t.Errorf("a slower sample moved the skew to %s", s.skew)
	}
	// A faster one does.
	s.noteSkewLocked(later.Add(10*time.Second+2*time.Millisecond), later, 4*time.Millisecond)
	if s.skew != 10*time.Second {
		t.Errorf("skew %s after a 4 ms sample, want 10s", s.skew)
	}
	// After ten minutes any sample replaces the best, in case a clock was stepped.
	aged := later.Add(11 * time.Minute)
	s.noteSkewLocked(aged.Add(time.Second+250*time.Millisecond), aged, 500*time.Millisecond)
	if s.skew != time.Second {
		t.Errorf("skew %s after ten minutes, want the new sample's 1s", s.skew)
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
	shared := New(pool, "ops:1", nil, WithResume(resume))
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
