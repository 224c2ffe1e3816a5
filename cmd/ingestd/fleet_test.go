package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/ingestd/ingestd/feeds/postgis"
)

// The fleet's invariants at test size (scripts/bench.sh fleet shows them at
// 5,000 feeds): two `ingestd run` share one database and catch up the same
// feeds at start, and one of them is killed with SIGKILL while it applies a
// snapshot.
const (
	fleetOrigins  = 2
	fleetLayers   = 6 // per origin
	fleetFeatures = 25
	fleetPageSize = 10 // three pages a poll
)

// TestFleetKilledMidApply starts two instances on one database with a
// yearly schedule, so that the catch-up at start is the only poll each feed
// gets: every feed must end with exactly one successful poll. The test holds
// the apply lock of one feed (postgis.ApplyLockClass, the first thing an
// apply's transaction takes), waits until an instance's apply blocks on it,
// and SIGKILLs that instance there, its transaction open and its other
// polls wherever they were. It shows:
//
//  1. no feed was polled by two instances at once, and no feed's snapshot
//     was applied twice: one successful poll per feed, whose added count
//     is the layer's size, and the layer holds exactly its features;
//  2. no poll was lost: every feed has that success, the killed instance's
//     polls ended as interrupted (none left running), and no claim or
//     staged row stays behind;
//  3. the killed instance's claims were taken over by the survivor before
//     their leases ran out (the database's clock), but for those whose
//     poll had succeeded before the kill: those feeds are not polled again.
//
// It waits for rows and log lines, never for time; the waits' ceiling only
// bounds a hang.
func TestFleetKilledMidApply(t *testing.T) {
	if testing.Short() {
		t.Skip("runs two ingestd processes and kills one")
	}
	t.Parallel()
	heavy(t, heavyCluster)
	bin := buildIngestd(t)
	ctx := t.Context()
	dbURL, pool := testDBFor(t, 3*ingestdConns)
	if _, err := pool.Exec(ctx, clusterInstrumentSQL); err != nil {
		t.Fatalf("instrument: %v", err)
	}

	var cfg strings.Builder
	cfg.WriteString("max_in_flight: 4\ndefaults:\n  schedule: \"0 5 1 1 *\"\n  timeout: 5m\njurisdictions:\n")
	var all []string
	for o := range fleetOrigins {
		layers := make([]string, fleetLayers)
		for i := range layers {
			layers[i] = fmt.Sprintf("l%d", i)
		}
		_, ts := fixtureOrigin(t, fleetFeatures, layers...)
		fmt.Fprintf(&cfg, "  - id: o%d\n    feeds:\n", o)
		for _, l := range layers {
			fmt.Fprintf(&cfg, "      - {id: %s, kind: wfs, url: %q, type_name: %s, page_size: %d, sort_by: pin}\n",
				l, ts.URL+"/wfs", l, fleetPageSize)
			all = append(all, fmt.Sprintf("o%d/%s", o, l))
		}
	}
	cfgPath := filepath.Join(t.TempDir(), "fleet.yaml")
	if err := os.WriteFile(cfgPath, []byte(cfg.String()), 0o644); err != nil {
		t.Fatal(err)
	}

	// The victim's apply will wait for this lock; held from another
	// session, it keeps the apply's transaction open until the kill.
	const victim = "o1/l3"
	lock, err := pool.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Release()
	if _, err := lock.Exec(ctx, `SELECT pg_advisory_lock($1, hashtext($2))`, postgis.ApplyLockClass, victim); err != nil {
		t.Fatal(err)
	}

	ins := []*instance{
		startInstance(t, bin, "a", cfgPath, dbURL, "-heartbeat", "500ms", "-log-level", "debug"),
		startInstance(t, bin, "b", cfgPath, dbURL, "-heartbeat", "500ms", "-log-level", "debug"),
	}
	// Whichever instance claimed the victim: its poll is running, its
	// pages staged, and its apply waits for the lock.
	var pollID int64
	var owner string
	if !waitUntil(clusterCeiling, func() bool {
		err := pool.QueryRow(ctx, `SELECT p.id, p.owner FROM polls p
			WHERE p.jurisdiction || '/' || p.feed = $1 AND p.status = 'running'
			AND EXISTS (SELECT FROM pg_locks l WHERE l.locktype = 'advisory' AND NOT l.granted
				AND l.classid = $2::int::oid AND l.objid = hashtext($1)::oid)`,
			victim, postgis.ApplyLockClass).Scan(&pollID, &owner)
		return err == nil
	}) {
		t.Fatalf("no instance's apply of %s waited for its lock:\n%s\n%s", victim, tail(ins[0].out.String(), 20), tail(ins[1].out.String(), 20))
	}
	var killed, survivor *instance
	for _, in := range ins {
		if in.id == owner {
			killed = in
		} else {
			survivor = in
		}
	}
	if killed == nil {
		t.Fatalf("the victim's poll belongs to %q, neither instance (%s, %s)", owner, ins[0].id, ins[1].id)
	}
	if err := killed.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	<-killed.exited
	type held struct {
		feed  string
		until time.Time
	}
	var claimsAtKill []held
	rows, err := pool.Query(ctx, `SELECT jurisdiction || '/' || feed, poll_lease_until FROM feed_status WHERE poll_owner = $1`, killed.id)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var h held
		if err := rows.Scan(&h.feed, &h.until); err != nil {
			t.Fatal(err)
		}
		claimsAtKill = append(claimsAtKill, h)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	if len(claimsAtKill) == 0 {
		t.Fatalf("%s held no claim when it was killed, though its apply of %s waited", killed.id, victim)
	}
	// The dead backend takes the lock, finds its client gone and rolls
	// the apply back; the survivor's apply of the victim can then run.
	if _, err := lock.Exec(ctx, `SELECT pg_advisory_unlock($1, hashtext($2))`, postgis.ApplyLockClass, victim); err != nil {
		t.Fatal(err)
	}

	// Every feed polled successfully, nothing left running.
	if !waitUntil(clusterCeiling, func() bool {
		return queryInt(t, pool, `SELECT count(DISTINCT jurisdiction || '/' || feed)::int FROM polls WHERE status = 'succeeded'`) == len(all) &&
			queryInt(t, pool, `SELECT count(*)::int FROM polls WHERE status = 'running'`) == 0
	}) {
		t.Fatalf("not every feed was polled once the instance died: %d of %d succeeded, %d running:\n%s",
			queryInt(t, pool, `SELECT count(DISTINCT jurisdiction || '/' || feed)::int FROM polls WHERE status = 'succeeded'`), len(all),
			queryInt(t, pool, `SELECT count(*)::int FROM polls WHERE status = 'running'`), unpolledStory(t, pool, survivor))
	}
	survivor.stop(t, clusterCeiling)

	// 1. One poll at a time per feed, one success per feed, applied once.
	fig := &clusterFigures{}
	checkOnePollAtATime(t, ctx, pool, fig, []string{"o0", "o1"})
	rows, err = pool.Query(ctx, `SELECT s.jurisdiction || '/' || s.feed, s.feature_count,
			(SELECT count(*) FROM polls p WHERE p.jurisdiction = s.jurisdiction AND p.feed = s.feed AND p.status = 'succeeded'),
			(SELECT coalesce(sum(p.added), 0) FROM polls p WHERE p.jurisdiction = s.jurisdiction AND p.feed = s.feed AND p.status = 'succeeded'),
			(SELECT count(*) FROM features f WHERE f.jurisdiction = s.jurisdiction AND f.feed = s.feed)
		FROM feed_status s ORDER BY 1`)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for rows.Next() {
		var feed string
		var count, succeeded, added, stored int64
		if err := rows.Scan(&feed, &count, &succeeded, &added, &stored); err != nil {
			t.Fatal(err)
		}
		n++
		// A feed whose poll succeeded just before its instance was killed,
		// its claim still held, is not polled again after the takeover.
		if succeeded != 1 || added != fleetFeatures || stored != fleetFeatures || count != fleetFeatures {
			t.Errorf("%s: %d successful polls, adding %d features, %d stored, feature_count %d; want one poll of %d",
				feed, succeeded, added, stored, count, fleetFeatures)
		}
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	if n != len(all) {
		t.Errorf("%d feeds in feed_status, want %d", n, len(all))
	}

	// 2. The killed instance's polls ended as interrupted; the victim's
	// among them; nothing left behind.
	var victimStatus, victimErr string
	if err := pool.QueryRow(ctx, `SELECT status, coalesce(error, '') FROM polls WHERE id = $1`, pollID).Scan(&victimStatus, &victimErr); err != nil {
		t.Fatal(err)
	}
	if want := "interrupted: instance " + killed.id + " is gone"; victimStatus != "failed" || victimErr != want {
		t.Errorf("the poll killed mid-apply (%d) is %s %q, want failed %q", pollID, victimStatus, victimErr, want)
	}
	if bad := queryInt(t, pool, `SELECT count(*)::int FROM polls WHERE status <> 'succeeded'
		AND (status <> 'failed' OR owner <> $1 OR error <> 'interrupted: instance ' || $1 || ' is gone')`, killed.id); bad != 0 {
		t.Errorf("%d polls failed otherwise than interrupted by the kill", bad)
	}
	if n := queryInt(t, pool, `SELECT (SELECT count(*) FROM staged_pages) + (SELECT count(*) FROM staged_features)`); n != 0 {
		t.Errorf("%d staged rows left behind", n)
	}
	if n := queryInt(t, pool, `SELECT count(*)::int FROM feed_status WHERE poll_owner IS NOT NULL`); n != 0 {
		t.Errorf("%d claims left behind", n)
	}

	// 3. Each claim the killed instance held was taken by the survivor
	// before its lease would have let anyone else poll the feed; unless
	// the killed instance's poll of that tick had succeeded (it died before
	// releasing the claim): then nobody polls the feed again.
	history := claims(t, pool)
	var lastTakeover time.Duration
	for _, h := range claimsAtKill {
		if queryInt(t, pool, `SELECT count(*)::int FROM polls WHERE jurisdiction || '/' || feed = $1
			AND status = 'succeeded' AND owner = $2`, h.feed, killed.id) == 1 {
			continue
		}
		var taken time.Time
		var prev time.Time
		for _, c := range history[h.feed] {
			if c.owner == survivor.id && !c.claimedAt.IsZero() {
				taken = c.claimedAt
			}
			if c.owner == killed.id && !c.claimedAt.IsZero() {
				prev = c.claimedAt
			}
		}
		switch {
		case taken.IsZero():
			t.Errorf("%s: the killed instance's claim was never taken by %s", h.feed, survivor.id)
		case !taken.Before(h.until):
			t.Errorf("%s: taken by %s at %s, not before the dead claim's lease ran out at %s",
				h.feed, survivor.id, taken.Format(time.RFC3339Nano), h.until.Format(time.RFC3339Nano))
		case !prev.IsZero():
			lastTakeover = max(lastTakeover, taken.Sub(prev))
		}
	}
	t.Logf("%d feeds over 2 instances; %s killed mid-apply of %s holding %d claims, taken by %s (the longest %s after the dead claim; a figure, not a check); %s",
		len(all), killed.id, victim, len(claimsAtKill), survivor.id, lastTakeover.Round(time.Millisecond), strings.Join(fig.lines, "; "))
}

// unpolledStory tells, for each feed without a successful poll, its claims
// and polls as the database recorded them and the survivor's log lines
// about it: what a failure needs to be understood.
func unpolledStory(t *testing.T, pool *pgxpool.Pool, survivor *instance) string {
	var b strings.Builder
	rows, err := pool.Query(context.Background(), `SELECT s.jurisdiction, s.feed,
			coalesce((SELECT string_agg(format('%s claimed_at=%s by %s', c.at, c.claimed_at, c.owner), E'\n\t') FROM test_claims c
				WHERE c.jurisdiction = s.jurisdiction AND c.feed = s.feed), ''),
			coalesce((SELECT string_agg(format('poll %s %s by %s: %s', p.id, p.status, p.owner, p.error), E'\n\t') FROM polls p
				WHERE p.jurisdiction = s.jurisdiction AND p.feed = s.feed), ''),
			format('owner=%s lease_until=%s claimed_at=%s', s.poll_owner, s.poll_lease_until, s.poll_claimed_at)
		FROM feed_status s
		WHERE NOT EXISTS (SELECT FROM polls p WHERE p.jurisdiction = s.jurisdiction AND p.feed = s.feed AND p.status = 'succeeded')`)
	if err != nil {
		return err.Error()
	}
	defer rows.Close()
	for rows.Next() {
		var j, f, claims, polls, now string
		if err := rows.Scan(&j, &f, &claims, &polls, &now); err != nil {
			return err.Error()
		}
		fmt.Fprintf(&b, "%s/%s now %s\nclaims:\n\t%s\npolls:\n\t%s\nsurvivor's lines:\n", j, f, now, claims, polls)
		for _, line := range strings.Split(survivor.out.String(), "\n") {
			if strings.Contains(line, `"jurisdiction":"`+j+`"`) && strings.Contains(line, `"feed":"`+f+`"`) {
				fmt.Fprintf(&b, "\t%s\n", line)
			}
		}
	}
	return b.String()
}
