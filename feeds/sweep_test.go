package feeds_test

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/ingestd/ingestd/feeds"
	"github.com/ingestd/ingestd/feeds/postgis"
	"github.com/ingestd/ingestd/internal/kindconf"
)

// TestSweepEndsDeadInstancesWork plants the claims and running polls that
// dead and live instances leave, starts a manager named testhost:1 with
// recovery, and checks which the sweep ends: its own poll that nothing in
// the process runs (PostgreSQL was down when it ended), a poll of a process
// of its host that is gone, a poll of another host whose heartbeat lapsed
// (only once the manager itself has been connected for a whole TTL), an
// expired claim of an owner without a heartbeat, and an ownerless poll older
// than its feed's timeout. A live other host's poll (even an old one: that
// instance's own sweep judges it), a live local process's recent poll, and
// the poll of a process of the same host name in another PID namespace (a
// container), whose pid means nothing here, are left alone.
func TestSweepEndsDeadInstancesWork(t *testing.T) {
	t.Parallel()
	var yaml strings.Builder
	for _, f := range []string{"own", "gone", "lapsed", "fresh", "alive", "otherns", "claim", "ownerless"} {
		fmt.Fprintf(&yaml, "      - {id: %s, kind: wfs, url: \"%%[1]s/wfs\", type_name: %s}\n", f, f)
	}
	b := setup(t, withFeeds(yaml.String()))
	ctx := b.ctx
	exec := func(sql string, args ...any) {
		t.Helper()
		if _, err := b.pool.Exec(ctx, sql, args...); err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
	}
	running := func(feed, owner string, age time.Duration) int64 {
		t.Helper()
		var id int64
		if err := b.pool.QueryRow(ctx, `INSERT INTO polls (jurisdiction, feed, owner, active_at)
			VALUES ('county', $1, nullif($2, ''), now() - $3::interval) RETURNING id`, feed, owner, age).Scan(&id); err != nil {
			t.Fatal(err)
		}
		exec(`INSERT INTO staged_pages (poll_id, page, features) VALUES ($1, 0, 0)`, id)
		if owner != "" {
			exec(`UPDATE feed_status SET poll_owner = $2, poll_lease_until = now() + interval '1 hour', poll_claimed_at = now()
				WHERE jurisdiction = 'county' AND feed = $1`, feed, owner)
		}
		return id
	}
	deadPid := 1 << 30 // beyond any pid_max
	polls := map[string]int64{
		"own":       running("own", "testhost:1", time.Second),
		"gone":      running("gone", fmt.Sprintf("testhost:%d", deadPid), time.Second),
		"lapsed":    running("lapsed", "far:7", time.Second),
		"fresh":     running("fresh", "far:8", time.Hour),
		"alive":     running("alive", fmt.Sprintf("testhost:%d", os.Getppid()), time.Second),
		"otherns":   running("otherns", fmt.Sprintf("testhost:%d", deadPid+1), time.Second),
		"ownerless": running("ownerless", "", 2*time.Hour),
	}
	exec(`INSERT INTO instances (owner, host, pid, pid_ns, expires_at) VALUES
		('far:7', 'far', 7, NULL, now() - interval '1 minute'), ('far:8', 'far', 8, NULL, now() + interval '1 hour'),
		($1, 'testhost', $2, 'pid:[1]', now() + interval '1 hour')`, fmt.Sprintf("testhost:%d", deadPid+1), deadPid+1)
	exec(`UPDATE feed_status SET poll_owner = 'far:9', poll_lease_until = now() - interval '1 second',
		poll_claimed_at = now() - interval '10 minutes' WHERE feed = 'claim'`)

	// The heartbeat runs on a fake clock: the test moves it one beat at a
	// time and waits for that beat's sweep.
	const beat = time.Minute
	clock := feeds.NewFakeClock(time.Now())
	var sig feeds.Signals
	m := feeds.NewManager(b.store, feeds.NewFetchers(kindconf.FetcherDeps{Breakers: b.breakers}), feeds.WithInstanceID("testhost:1"), feeds.WithCatchUp(false),
		feeds.WithRecovery(b.store, beat), feeds.WithClock(clock), feeds.WithSignals(&sig),
		feeds.WithLogger(slog.New(slog.NewTextHandler(testWriter{t}, nil))))
	if err := m.Update(ctx, b.cfg); err != nil {
		t.Fatal(err)
	}
	if err := m.Start(ctx); err != nil {
		t.Fatal(err)
	}
	status := func(feed string) (string, string) {
		var s, e string
		if err := b.pool.QueryRow(ctx, `SELECT status, coalesce(error, '') FROM polls WHERE id = $1`, polls[feed]).Scan(&s, &e); err != nil {
			t.Fatal(err)
		}
		return s, e
	}
	forgotten := func() bool {
		var n int
		if err := b.pool.QueryRow(ctx, `SELECT count(*)::int FROM instances WHERE owner = 'far:7'`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n == 0
	}
	// At start, and after two beats: everything but the lapsed heartbeat,
	// which the manager trusts only once it has itself been connected for
	// more than two beats.
	for i := range 3 {
		if i > 0 {
			clock.Advance(beat)
			await(t, sig.Swept, "sweep")
		}
		if s, _ := status("lapsed"); s != "running" || forgotten() {
			t.Fatalf("after %d beats the poll of far:7 (heartbeat lapsed) is %s, before this instance could trust a lapse", i, s)
		}
	}
	// The third beat's sweep ends it and forgets far:7 (Stop would cancel a
	// sweep in the middle: the signal says it ended).
	clock.Advance(beat)
	await(t, sig.Swept, "sweep")
	if s, _ := status("lapsed"); s == "running" || !forgotten() {
		t.Fatalf("after 3 beats the poll of far:7, whose heartbeat lapsed, is %s (owner forgotten: %v)", s, forgotten())
	}
	m.Stop()

	want := map[string]string{
		"own":       "interrupted: instance testhost:1 no longer runs it (its outcome could not be recorded)",
		"gone":      fmt.Sprintf("interrupted: instance testhost:%d is gone", deadPid),
		"lapsed":    "interrupted: instance far:7 is gone (its heartbeat lapsed)",
		"ownerless": "interrupted: left running for 2h0m0s by an instance that did not record itself",
	}
	for feed, id := range polls {
		s, e := status(feed)
		staged := 0
		if err := b.pool.QueryRow(ctx, `SELECT count(*)::int FROM staged_pages WHERE poll_id = $1`, id).Scan(&staged); err != nil {
			t.Fatal(err)
		}
		if msg, ok := want[feed]; ok {
			if s != "failed" || !strings.HasPrefix(e, strings.TrimSuffix(msg, "2h0m0s by an instance that did not record itself")) || staged != 0 {
				t.Errorf("poll of %s: %s %q with %d staged pages, want failed %q and none", feed, s, e, staged, msg)
			}
		} else if s != "running" || staged != 1 {
			t.Errorf("poll of %s (a live owner): %s %q with %d staged pages, want it left running", feed, s, e, staged)
		}
	}
	var owners string
	if err := b.pool.QueryRow(ctx, `SELECT coalesce(string_agg(feed || '=' || poll_owner, ',' ORDER BY feed), '')
		FROM feed_status WHERE poll_owner IS NOT NULL`).Scan(&owners); err != nil {
		t.Fatal(err)
	}
	if want := fmt.Sprintf("alive=testhost:%d,fresh=far:8,otherns=testhost:%d", os.Getppid(), deadPid+1); owners != want {
		t.Errorf("claims left: %s, want %s", owners, want)
	}
	var instances string
	if err := b.pool.QueryRow(ctx, `SELECT coalesce(string_agg(owner, ',' ORDER BY owner), '') FROM instances`).Scan(&instances); err != nil {
		t.Fatal(err)
	}
	if want := fmt.Sprintf("far:8,testhost:%d", deadPid+1); instances != want {
		t.Errorf("liveness rows left: %q, want %s (far:7 forgotten, testhost:1 retired at Stop)", instances, want)
	}
}

// TestSweepRepollsOnlyUnfinishedTicks plants the work a dead process of
// this host left: a claim whose tick's poll succeeded before the process
// died (it never released the claim), a claim whose tick's poll never
// ended, and a running poll that is a dead letter's replay. The sweep at
// start ends all three and polls again only the feed whose tick was not
// done: a county is not asked twice for a tick that was applied (the claim
// time of the done tick stays, so that no other instance polls it either),
// and a parked feed is left to the replayer, whose checkpoint it keeps.
func TestSweepRepollsOnlyUnfinishedTicks(t *testing.T) {
	t.Parallel()
	b := setup(t, withFeeds(`      - {id: done, kind: wfs, url: "%[1]s/wfs", type_name: parcels, page_size: 10, sort_by: pin, id_property: pin}
      - {id: undone, kind: wfs, url: "%[1]s/wfs", type_name: parcels, page_size: 10, sort_by: pin, id_property: pin}
      - {id: parked, kind: wfs, url: "%[1]s/wfs", type_name: parcels, page_size: 10, sort_by: pin, id_property: pin}
`))
	ctx := b.ctx
	dead := fmt.Sprintf("testhost:%d", 1<<30) // beyond any pid_max
	// All fresh enough that the catch-up of overdue feeds leaves them alone.
	for _, q := range []string{
		`UPDATE feed_status SET poll_owner = $1, poll_lease_until = now() + interval '1 hour',
			poll_claimed_at = now() - interval '1 minute', last_success_at = now() WHERE feed = 'done'`,
		`UPDATE feed_status SET poll_owner = $1, poll_lease_until = now() + interval '1 hour',
			poll_claimed_at = now(), last_success_at = now() - interval '1 hour' WHERE feed = 'undone'`,
		`UPDATE feed_status SET last_success_at = now() - interval '1 hour' WHERE feed = 'parked' AND $1 <> ''`,
		`WITH p AS (INSERT INTO polls (jurisdiction, feed, owner) VALUES ('county', 'parked', $1) RETURNING id),
			s AS (INSERT INTO staged_pages (poll_id, page, features) SELECT id, 0, 0 FROM p)
		INSERT INTO dead_letter (jurisdiction, feed, url, origin, reason, retry_after, poll_id, next_page)
		SELECT 'county', 'parked', 'http://127.0.0.1/wfs', 'http://127.0.0.1', 'circuit_open', now() + interval '1 hour', id, 1 FROM p`,
	} {
		if _, err := b.pool.Exec(ctx, q, dead); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	var sig feeds.Signals
	m := feeds.NewManager(b.store, feeds.NewFetchers(kindconf.FetcherDeps{Breakers: b.breakers}), feeds.WithInstanceID("testhost:1"),
		feeds.WithRecovery(b.store, time.Hour), feeds.WithClock(feeds.NewFakeClock(time.Now())), feeds.WithSignals(&sig),
		feeds.WithLogger(slog.New(slog.NewTextHandler(testWriter{t}, nil))))
	if err := m.Update(ctx, b.cfg); err != nil {
		t.Fatal(err)
	}
	if err := m.Start(ctx); err != nil {
		t.Fatal(err)
	}
	runs := []feeds.TickRun{awaitRun(t, &sig)}
	for runs[len(runs)-1].Key != "county/undone" {
		runs = append(runs, awaitRun(t, &sig))
	}
	m.Stop()
	runs = append(runs, pending(sig.Ran)...)
	if len(runs) != 1 || runs[0].Outcome != "polled" {
		t.Errorf("runs after the sweep: %+v, want county/undone polled and nothing else", runs)
	}
	var doneClaimed, undonePolled bool
	var owners, parkedStaged int
	if err := b.pool.QueryRow(ctx, `SELECT
			(SELECT poll_claimed_at IS NOT NULL FROM feed_status WHERE feed = 'done'),
			EXISTS (SELECT FROM polls WHERE feed = 'undone'),
			(SELECT count(*)::int FROM feed_status WHERE poll_owner IS NOT NULL),
			(SELECT count(*)::int FROM staged_pages s JOIN polls p ON p.id = s.poll_id WHERE p.feed = 'parked' AND p.status = 'failed')`).
		Scan(&doneClaimed, &undonePolled, &owners, &parkedStaged); err != nil {
		t.Fatal(err)
	}
	if !doneClaimed || !undonePolled || owners != 0 || parkedStaged != 1 {
		t.Errorf("done's claim time kept: %v (want true); undone polled: %v (want true); claims left: %d (want 0); "+
			"the parked poll ended with its staged page kept: %d (want 1)", doneClaimed, undonePolled, owners, parkedStaged)
	}
}

// commitThenFail is the store's Recovery whose Interrupt of a running poll
// commits and then reports an error, once: a sweep whose deadline passed
// while PostgreSQL committed its work.
type commitThenFail struct {
	*postgis.Store
	failed bool
}

func (r *commitThenFail) Interrupt(ctx context.Context, a feeds.Activity, cause error) (feeds.Interruption, error) {
	out, err := r.Store.Interrupt(ctx, a, cause)
	if err == nil && a.PollID != 0 && !r.failed {
		r.failed = true
		return feeds.Interruption{}, context.DeadlineExceeded
	}
	return out, err
}

// TestSweepPollsWhatItCouldNotConfirmEnded: a dead instance's claim ends,
// but the end of its running poll reports an error though it committed. The
// sweep does not poll the feed beside a poll it believes running; the next
// sweep no longer finds that poll, and polls the feed then.
func TestSweepPollsWhatItCouldNotConfirmEnded(t *testing.T) {
	t.Parallel()
	b := setup(t, withFeeds(`      - {id: x, kind: wfs, url: "%[1]s/wfs", type_name: parcels, page_size: 10, sort_by: pin, id_property: pin}
`))
	ctx := b.ctx
	dead := fmt.Sprintf("testhost:%d", 1<<30) // beyond any pid_max
	if _, err := b.pool.Exec(ctx, `UPDATE feed_status SET poll_owner = $1, poll_lease_until = now() + interval '1 hour',
		poll_claimed_at = now(), last_success_at = now() - interval '1 hour' WHERE feed = 'x'`, dead); err != nil {
		t.Fatal(err)
	}
	if _, err := b.pool.Exec(ctx, `INSERT INTO polls (jurisdiction, feed, owner) VALUES ('county', 'x', $1)`, dead); err != nil {
		t.Fatal(err)
	}
	const beat = time.Minute
	clock := feeds.NewFakeClock(time.Now())
	var sig feeds.Signals
	m := feeds.NewManager(b.store, feeds.NewFetchers(kindconf.FetcherDeps{Breakers: b.breakers}), feeds.WithInstanceID("testhost:1"),
		feeds.WithRecovery(&commitThenFail{Store: b.store}, beat), feeds.WithClock(clock), feeds.WithSignals(&sig),
		feeds.WithLogger(slog.New(slog.NewTextHandler(testWriter{t}, nil))))
	if err := m.Update(ctx, b.cfg); err != nil {
		t.Fatal(err)
	}
	if err := m.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer m.Stop()
	clock.Advance(beat)
	await(t, sig.Swept, "sweep")
	if run := awaitRun(t, &sig); run.Key != "county/x" || run.Outcome != "polled" {
		t.Fatalf("run after the second sweep: %+v, want county/x polled", run)
	}
}

// TestStopEndsItsOwnLeftovers plants, after Start, a running poll and a
// claim of the manager's own instance that none of its polls runs: what a
// poll leaves when the stop cancels it after its start was committed but
// before it learnt the poll's id. Stop ends both before it retires the
// instance; without that they would stay until another instance's sweep,
// and for ever if every instance stopped.
func TestStopEndsItsOwnLeftovers(t *testing.T) {
	t.Parallel()
	b := setup(t, withFeeds(`      - {id: orphan, kind: wfs, url: "%[1]s/wfs", type_name: orphan}
      - {id: claimed, kind: wfs, url: "%[1]s/wfs", type_name: claimed}
`))
	ctx := b.ctx
	clock := feeds.NewFakeClock(time.Now())
	m := feeds.NewManager(b.store, feeds.NewFetchers(kindconf.FetcherDeps{Breakers: b.breakers}), feeds.WithInstanceID("testhost:1"),
		feeds.WithCatchUp(false), feeds.WithRecovery(b.store, time.Minute), feeds.WithClock(clock),
		feeds.WithLogger(slog.New(slog.NewTextHandler(testWriter{t}, nil))))
	if err := m.Update(ctx, b.cfg); err != nil {
		t.Fatal(err)
	}
	if err := m.Start(ctx); err != nil {
		t.Fatal(err)
	}
	var poll int64
	if err := b.pool.QueryRow(ctx, `INSERT INTO polls (jurisdiction, feed, owner, active_at)
		VALUES ('county', 'orphan', 'testhost:1', now()) RETURNING id`).Scan(&poll); err != nil {
		t.Fatal(err)
	}
	if _, err := b.pool.Exec(ctx, `UPDATE feed_status SET poll_owner = 'testhost:1', poll_lease_until = now() + interval '1 hour',
		poll_claimed_at = now() WHERE jurisdiction = 'county' AND feed IN ('orphan', 'claimed')`); err != nil {
		t.Fatal(err)
	}
	m.Stop()

	var status, msg string
	if err := b.pool.QueryRow(ctx, `SELECT status, coalesce(error, '') FROM polls WHERE id = $1`, poll).Scan(&status, &msg); err != nil {
		t.Fatal(err)
	}
	if want := "interrupted: instance testhost:1 stopped before it recorded the poll's outcome"; status != "failed" || !strings.HasPrefix(msg, want) {
		t.Errorf("the leftover poll is %s %q after Stop, want failed %q", status, msg, want)
	}
	var claims, instances int
	if err := b.pool.QueryRow(ctx, `SELECT (SELECT count(*)::int FROM feed_status WHERE poll_owner = 'testhost:1'),
		(SELECT count(*)::int FROM instances WHERE owner = 'testhost:1')`).Scan(&claims, &instances); err != nil {
		t.Fatal(err)
	}
	if claims != 0 || instances != 0 {
		t.Errorf("after Stop testhost:1 still holds %d claims and %d liveness rows, want none", claims, instances)
	}
}
