package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/ingestd/ingestd/feature"
	"github.com/ingestd/ingestd/feeds"
	"github.com/ingestd/ingestd/feeds/postgis"
	"github.com/ingestd/ingestd/internal/layertest"
	"github.com/ingestd/ingestd/internal/testwait"
	"github.com/ingestd/ingestd/wfs/wfstest"
)

// What a PostgreSQL crash and a kill -9 leave
// behind. The crash is real (pg_ctl -m immediate) on a throwaway cluster
// this test starts on its own Unix socket, never the shared one.

// throwawayPG is a PostgreSQL cluster in a temporary directory, started with
// synchronous_commit = on, that a test may crash.
type throwawayPG struct {
	pgBin, dir, data, sock, log string
	url                         string
}

// startThrowawayPG initialises and starts a cluster like scripts/postgis.sh
// does (as the postgres OS user when the test runs as root), with a
// migrated database "ingestd". It is stopped and deleted at cleanup.
func startThrowawayPG(t *testing.T) *throwawayPG {
	t.Helper()
	p := &throwawayPG{pgBin: "/usr/lib/postgresql/15/bin"}
	if _, err := os.Stat(filepath.Join(p.pgBin, "initdb")); err != nil {
		t.Skipf("no PostgreSQL 15 binaries to start a cluster to crash: %v", err)
	}
	dir, err := os.MkdirTemp("", "ingestd-crash-")
	if err != nil {
		t.Fatal(err)
	}
	p.dir, p.data, p.sock, p.log = dir, filepath.Join(dir, "data"), filepath.Join(dir, "run"), filepath.Join(dir, "postgres.log")
	if os.Geteuid() == 0 {
		u, err := user.Lookup("postgres")
		if err != nil {
			t.Skipf("running as root without a postgres user: %v", err)
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		if err := os.Chown(dir, uid, gid); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() {
		_ = p.pg("pg_ctl", "-D", p.data, "-m", "immediate", "-w", "stop").Run()
		_ = os.RemoveAll(dir)
	})
	p.run(t, "/bin/mkdir", "-p", p.sock)
	p.run(t, filepath.Join(p.pgBin, "initdb"), "-D", p.data, "-U", "postgres", "-E", "UTF8", "--locale=C.UTF-8",
		"--auth-local=trust", "--auth-host=trust", "--no-sync")
	// No TCP: a port picked free and then bound by postgres can be taken in
	// between by any outgoing connection of the parallel tests (CI saw
	// "could not start server"). The socket's directory is this cluster's own.
	conf := fmt.Sprintf(`
listen_addresses = ''
unix_socket_directories = '%s'
# The point of this cluster: commits are durable, so what a crash keeps
# and loses is what production sees.
synchronous_commit = on
fsync = on
max_connections = 60
`, p.sock)
	f, err := os.OpenFile(filepath.Join(p.data, "postgresql.conf"), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString(conf); err != nil {
		t.Fatal(err)
	}
	_ = f.Close()
	p.start(t)
	admin := "postgres://postgres@/postgres?host=" + p.sock + "&sslmode=disable"
	conn, err := pgx.Connect(t.Context(), admin)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(t.Context(), "CREATE DATABASE ingestd"); err != nil {
		t.Fatal(err)
	}
	_ = conn.Close(t.Context())
	p.url = "postgres://postgres@/ingestd?host=" + p.sock + "&sslmode=disable"
	return p
}

// pg returns a command run as the cluster's owner.
func (p *throwawayPG) pg(name string, args ...string) *exec.Cmd {
	if !filepath.IsAbs(name) {
		name = filepath.Join(p.pgBin, name)
	}
	if os.Geteuid() == 0 {
		return exec.Command("runuser", append([]string{"-u", "postgres", "--", name}, args...)...)
	}
	return exec.Command(name, args...)
}

func (p *throwawayPG) run(t *testing.T, name string, args ...string) {
	t.Helper()
	if out, err := p.pg(name, args...).CombinedOutput(); err != nil {
		t.Fatalf("%s %v: %v\n%s", name, args, err, out)
	}
}

func (p *throwawayPG) start(t *testing.T) {
	t.Helper()
	if out, err := p.pg("pg_ctl", "-D", p.data, "-l", p.log, "-w", "-t", "60", "start").CombinedOutput(); err != nil {
		log, _ := os.ReadFile(p.log)
		t.Fatalf("pg_ctl start: %v\n%s\npostgres log:\n%s", err, out, tail(string(log), 30))
	}
}

// crash stops the cluster the way a crash does: every process killed
// without a checkpoint, so the next start runs crash recovery, which
// empties unlogged tables.
func (p *throwawayPG) crash(t *testing.T) {
	t.Helper()
	p.run(t, "pg_ctl", "-D", p.data, "-m", "immediate", "-w", "stop")
}

// featureList is a feature.FeatureReader over a slice.
type featureList struct{ fs []feature.Feature }

func (l *featureList) Next() (*feature.Feature, error) {
	if len(l.fs) == 0 {
		return nil, io.EOF
	}
	f := l.fs[0]
	l.fs = l.fs[1:]
	return &f, nil
}

func queryInt(t *testing.T, pool *pgxpool.Pool, sql string, args ...any) int {
	t.Helper()
	var n int
	if err := pool.QueryRow(t.Context(), sql, args...).Scan(&n); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	return n
}

// TestCrashAndConfig runs the crash, kill and configuration tests side by
// side (each has its own database, or cluster), with one build of ingestd.
func TestCrashAndConfig(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("builds and runs ingestd, and starts and crashes a PostgreSQL cluster")
	}
	heavy(t, heavyCrash)
	bin := buildIngestd(t)
	for name, test := range map[string]func(*testing.T, string){
		"PostgresCrash":           testPostgresCrash,
		"KilledInstanceRecovered": testKilledInstanceIsRecovered,
		"ConfigLackingFeeds":      testConfigLackingFeeds,
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			test(t, bin)
		})
	}
}

// testPostgresCrash crashes PostgreSQL (pg_ctl -m immediate, with
// synchronous_commit = on) while
//
//   - a daemon's apply of c/apply waits for the feed's lock,
//   - c/held has a held snapshot (20 features, 3 in the snapshot),
//   - c/staged is half staged (page 0 of 2), in this process,
//   - c/parked is parked with page 0 staged,
//
// and shows after the restart: the apply's poll ends failed (not running)
// and the layer keeps its 20 features; `held accept` refuses the emptied
// snapshot with a message, discards it and keeps the 20 features; an apply of
// the half-staged poll refuses what is left; the resume reports its
// checkpoint lost; and no staged rows stay behind.
func testPostgresCrash(t *testing.T, bin string) {
	pg := startThrowawayPG(t)
	ctx := t.Context()
	if code, out := runBin(t, bin, "migrate", "-database-url", pg.url); code != 0 {
		t.Fatalf("migrate: %s", out)
	}
	pool, err := pgxpool.New(ctx, pg.url)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()

	server, ts := fixtureOrigin(t, 20, "apply", "held")
	cfgPath := filepath.Join(t.TempDir(), "j.yaml")
	var yaml strings.Builder
	fmt.Fprintf(&yaml, "jurisdictions:\n  - id: c\n    feeds:\n")
	// c/staged and c/parked are staged by this process, not polled.
	for _, l := range []string{"apply", "held"} {
		fmt.Fprintf(&yaml, "      - {id: %s, kind: wfs, url: %q, type_name: %s, page_size: 10, sort_by: pin, schedule: \"0 5 1 1 *\", timeout: 5m}\n",
			l, ts.URL+"/wfs", l)
	}
	if err := os.WriteFile(cfgPath, []byte(yaml.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	features := func(feed string) int {
		return queryInt(t, pool, `SELECT count(*)::int FROM features WHERE jurisdiction = 'c' AND feed = $1`, feed)
	}
	for _, l := range []string{"apply", "held"} {
		if code, out := runBin(t, bin, "poll", "-config", cfgPath, "-database-url", pg.url, "c/"+l); code != 0 {
			t.Fatalf("first poll of c/%s: %s", l, out)
		}
	}
	server.AddLayer("held", layertest.Parcels{N: 3})
	if code, out := runBin(t, bin, "poll", "-config", cfgPath, "-database-url", pg.url, "c/held"); code == 0 || !strings.Contains(out, "held") {
		t.Fatalf("poll of c/held shrunk to 3: exit %d, want it held:\n%s", code, out)
	}

	// In this process: a poll half staged, and one parked at page 1.
	store := postgis.New(pool)
	info := func(feed string) feeds.FeedInfo {
		return feeds.FeedInfo{Jurisdiction: "c", Feed: feed, Kind: "wfs", URL: ts.URL + "/wfs"}
	}
	three := func(first int) feature.FeatureReader {
		r := &featureList{}
		for i := range 3 {
			r.fs = append(r.fs, feature.Feature{ID: fmt.Sprint(first + i), Properties: []byte(fmt.Sprintf(`{"n": %d}`, first+i))})
		}
		return r
	}
	stagedPoll, err := store.BeginPoll(ctx, info("staged"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := store.StagePage(ctx, stagedPoll, 0, three(0)); err != nil {
		t.Fatal(err)
	}
	parkedPoll, err := store.BeginPoll(ctx, info("parked"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := store.StagePage(ctx, parkedPoll, 0, three(0)); err != nil {
		t.Fatal(err)
	}
	if err := store.SuspendPoll(ctx, info("parked"), parkedPoll, time.Time{}, errors.New("origin down")); err != nil {
		t.Fatal(err)
	}

	// A daemon whose apply of c/apply waits for the feed's lock, which this
	// test holds; the crash happens while it waits.
	lock, err := pgx.Connect(ctx, pg.url)
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Close(context.Background())
	if _, err := lock.Exec(ctx, `SELECT pg_advisory_lock($1, hashtext('c/apply'))`, postgis.ApplyLockClass); err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Exec(ctx, `UPDATE feed_status SET last_success_at = now() - interval '2 years', poll_claimed_at = NULL
		WHERE feed = 'apply'`); err != nil {
		t.Fatal(err)
	}
	in := startInstance(t, bin, "daemon", cfgPath, pg.url)
	in.waitRunning(t, clusterCeiling)
	if !waitUntil(clusterCeiling, func() bool {
		return queryInt(t, pool, `SELECT count(*)::int FROM pg_locks WHERE locktype = 'advisory' AND NOT granted`) > 0
	}) {
		t.Fatalf("the daemon's apply of c/apply never waited for the lock:\n%s", tail(in.out.String(), 30))
	}
	var applyPoll int64
	if err := pool.QueryRow(ctx, `SELECT id FROM polls WHERE feed = 'apply' AND status = 'running'`).Scan(&applyPoll); err != nil {
		t.Fatal(err)
	}

	pool.Reset()
	pg.crash(t)
	crashed := time.Now()
	pg.start(t)
	t.Logf("PostgreSQL crashed and restarted in %s", time.Since(crashed).Round(time.Millisecond)) // a figure, not a check

	// The daemon's apply failed with the connection; recording the failure
	// waits for PostgreSQL to come back.
	var status, perr string
	if !waitUntil(clusterCeiling, func() bool {
		err := pool.QueryRow(ctx, `SELECT status, coalesce(error, '') FROM polls WHERE id = $1`, applyPoll).Scan(&status, &perr)
		return err == nil && status != "running"
	}) {
		t.Fatalf("the poll whose apply the crash interrupted is still %q:\n%s", status, tail(in.out.String(), 30))
	}
	t.Logf("interrupted apply's poll %d: %s (%s)", applyPoll, status, perr)
	if status != "failed" {
		t.Errorf("interrupted apply's poll is %s, want failed", status)
	}
	if n := features("apply"); n != 20 {
		t.Errorf("c/apply has %d features after the crash, want its 20", n)
	}
	if !in.alive() {
		t.Fatalf("the daemon died with PostgreSQL:\n%s", tail(in.out.String(), 30))
	}

	// held accept refuses, discards, and applies nothing.
	code, out := runBin(t, bin, "held", "accept", "-database-url", pg.url, "c/held")
	t.Logf("held accept: exit %d: %s", code, strings.TrimSpace(out))
	if code == 0 || !strings.Contains(out, "feed c/held: the held snapshot") ||
		!strings.Contains(out, "was lost with a database crash (staged 0 of 3 features") || !strings.Contains(out, "poll again") {
		t.Errorf("held accept after the crash: exit %d, %q; want a refusal saying the snapshot was lost", code, out)
	}
	if n := features("held"); n != 20 {
		t.Errorf("c/held has %d features after held accept, want its 20", n)
	}
	if n := queryInt(t, pool, `SELECT count(*)::int FROM polls WHERE feed = 'held' AND status = 'held'`); n != 0 {
		t.Errorf("%d polls of c/held are still held after the refused accept", n)
	}
	if n := queryInt(t, pool, `SELECT count(*)::int FROM feed_status WHERE feed = 'held' AND held_poll_id IS NULL
		AND last_error LIKE 'lost: %'`); n != 1 {
		t.Errorf("feed_status of c/held still shows the hold, or not the loss")
	}
	if code, out := runBin(t, bin, "held", "accept", "-database-url", pg.url, "c/held"); code == 0 || !strings.Contains(out, "no held snapshot") {
		t.Errorf("second held accept: exit %d, %q; want 'no held snapshot'", code, out)
	}

	// The half-staged poll: page 1 comes in after the crash; the apply
	// refuses, and failing it cleans up.
	if _, err := store.StagePage(ctx, stagedPoll, 1, three(3)); err != nil {
		t.Fatal(err)
	}
	_, err = store.Apply(ctx, stagedPoll, info("staged"))
	var lost *feeds.StagingLostError
	if !errors.As(err, &lost) || lost.Staged != 3 || lost.Recorded != 6 {
		t.Errorf("apply of a poll whose page 0 the crash emptied: %v, want a StagingLostError (staged 3 of 6)", err)
	}
	if err := store.FailPoll(ctx, stagedPoll, info("staged"), err); err != nil {
		t.Fatal(err)
	}

	// The parked poll's checkpoint is lost, and says so.
	_, err = store.ResumePoll(ctx, info("parked"), parkedPoll, 1)
	if !errors.Is(err, feeds.ErrCheckpointLost) || !errors.As(err, &lost) {
		t.Errorf("resume of a checkpoint the crash emptied: %v, want ErrCheckpointLost with a StagingLostError", err)
	}
	if err := store.DiscardPoll(ctx, info("parked"), parkedPoll, err); err != nil {
		t.Fatal(err)
	}

	in.stop(t, clusterCeiling)
	if n := queryInt(t, pool, `SELECT count(*)::int FROM polls WHERE status = 'running'`); n != 0 {
		t.Errorf("%d polls left running", n)
	}
	if n := queryInt(t, pool, `SELECT (SELECT count(*) FROM staged_pages) + (SELECT count(*) FROM staged_features)`); n != 0 {
		t.Errorf("%d staged rows left behind", n)
	}
}

// testKilledInstanceIsRecovered: kill -9 of an
// `ingestd run` in the middle of a poll (page 0 staged, page 1 in flight)
// leaves a running poll, a claim and staged rows. The instance started next
// on this host recognises them as its dead predecessor's at start-up: the
// poll ends failed ("interrupted: instance … is gone"), its staging is
// deleted, the claim released, and the feed is polled again at once rather
// than after the claim's six-minute lease. Then, while that instance runs, a
// one-off `ingestd poll` is killed the same way and the periodic sweep
// does the same. The layer keeps its features throughout.
func testKilledInstanceIsRecovered(t *testing.T, bin string) {
	// Instances a and b, and a poll.
	dbURL, pool := testDBFor(t, 3*ingestdConns)
	ctx := t.Context()
	server, ts := fixtureOrigin(t, 30, "parcels")
	cfgPath := filepath.Join(t.TempDir(), "j.yaml")
	// Yearly: only a catch-up or a recovery polls it during the test. The
	// timeout makes a dead claim's lease 6 minutes.
	if err := os.WriteFile(cfgPath, []byte(fmt.Sprintf(`jurisdictions:
  - id: c
    feeds:
      - {id: parcels, kind: wfs, url: %q, type_name: parcels, page_size: 10, sort_by: pin, schedule: "0 5 1 1 *", timeout: 5m}
`, ts.URL+"/wfs")), 0o644); err != nil {
		t.Fatal(err)
	}
	if code, out := runBin(t, bin, "poll", "-config", cfgPath, "-database-url", dbURL, "c/parcels"); code != 0 {
		t.Fatalf("first poll: %s", out)
	}
	features := func() int {
		return queryInt(t, pool, `SELECT count(*)::int FROM features WHERE feed = 'parcels'`)
	}
	// hang(true) makes page 1 hang until the client gives up, and returns
	// a channel closed once a request for it hangs; hang(false) serves
	// page 1 again (a request already hanging keeps hanging).
	hang := func(on bool) <-chan struct{} {
		if !on {
			server.SetFault(nil)
			return nil
		}
		hung := make(chan struct{})
		var once sync.Once
		server.SetFault(func(r wfstest.Request) *wfstest.Fault {
			if r.Page == 1 {
				once.Do(func() { close(hung) })
				return &wfstest.Fault{Hang: true}
			}
			return nil
		})
		return hung
	}
	// waitStaged waits for a running poll with page 0 staged and returns it.
	waitStaged := func(who string, out func() string) int64 {
		var id int64
		if !waitUntil(clusterCeiling, func() bool {
			err := pool.QueryRow(ctx, `SELECT p.id FROM polls p WHERE p.status = 'running'
				AND EXISTS (SELECT FROM staged_pages s WHERE s.poll_id = p.id)`).Scan(&id)
			return err == nil
		}) {
			t.Fatalf("%s never staged page 0:\n%s", who, tail(out(), 20))
		}
		return id
	}
	// checkInterrupted waits until poll id ended failed with the message
	// naming owner, its staging gone, and a later poll of the feed
	// succeeded and released its claim (a one-off poll started while the
	// claim is held would be refused); it returns when that poll started.
	checkInterrupted := func(id int64, owner string, since time.Time, out func() string) time.Time {
		t.Helper()
		var status, msg string
		var again time.Time
		var released bool
		if !waitUntil(clusterCeiling, func() bool {
			err := pool.QueryRow(ctx, `SELECT p.status, coalesce(p.error, ''),
				coalesce((SELECT max(started_at) FROM polls WHERE feed = 'parcels' AND id > p.id AND status = 'succeeded'), 'epoch'),
				coalesce((SELECT poll_owner IS NULL FROM feed_status WHERE feed = 'parcels'), false)
				FROM polls p WHERE p.id = $1`, id).Scan(&status, &msg, &again, &released)
			return err == nil && status != "running" && again.After(since) && released
		}) {
			t.Fatalf("poll %d is %s (%q), no later success; output:\n%s", id, status, msg, tail(out(), 30))
		}
		if want := "interrupted: instance " + owner + " is gone"; status != "failed" || msg != want {
			t.Errorf("poll %d: %s %q, want failed %q", id, status, msg, want)
		}
		if n := queryInt(t, pool, `SELECT (SELECT count(*) FROM staged_pages WHERE poll_id = $1) +
			(SELECT count(*) FROM staged_features WHERE poll_id = $1)`, id); n != 0 {
			t.Errorf("poll %d left %d staged rows", id, n)
		}
		return again
	}

	// 1. kill -9 of a daemon mid-poll.
	hang(true)
	if _, err := pool.Exec(ctx, `UPDATE feed_status SET last_success_at = now() - interval '2 years', poll_claimed_at = NULL`); err != nil {
		t.Fatal(err)
	}
	a := startInstance(t, bin, "a", cfgPath, dbURL)
	killed := waitStaged("instance a", a.out.String)
	if err := a.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	<-a.exited
	left := queryInt(t, pool, `SELECT count(*)::int FROM staged_features WHERE poll_id = $1`, killed)
	// The dead claim's lease (the feed's timeout plus a minute): without the
	// recovery, nobody could poll the feed before it lapsed.
	var leaseUntil time.Time
	if err := pool.QueryRow(ctx, `SELECT poll_lease_until FROM feed_status WHERE poll_owner = $1`, a.id).Scan(&leaseUntil); err != nil {
		t.Fatalf("the killed instance's claim: %v", err)
	}
	if n := queryInt(t, pool, `SELECT count(*)::int FROM feed_status WHERE poll_owner = $1`, a.id); n != 1 || left == 0 {
		t.Fatalf("after kill -9: %d claims by %s and %d staged rows; the test expects the debris of a killed poll", n, a.id, left)
	}
	hang(false)
	restarted := time.Now()
	b := startInstance(t, bin, "b", cfgPath, dbURL, "-heartbeat", "500ms")
	b.waitRunning(t, clusterCeiling)
	again := checkInterrupted(killed, a.id, restarted, b.out.String)
	// At start-up, before the first tick, not by the periodic sweep.
	if out := b.out.String(); !strings.Contains(out, `"msg":"sweep: ended a dead instance's work"`) ||
		strings.Index(out, `"msg":"sweep: ended a dead instance's work"`) > strings.Index(out, `"msg":"ingestd running"`) {
		t.Errorf("b ended a's work after it started running, not at start-up:\n%s", tail(out, 20))
	}
	t.Logf("kill -9 of %s mid-poll (%d rows staged): polled again %s after the restart",
		a.id, left, again.Sub(restarted).Round(time.Millisecond)) // a figure, not a check
	// Polled again by the recovery, not once the dead claim lapsed: both
	// times are the database's.
	if !again.Before(leaseUntil) {
		t.Errorf("the interrupted feed was polled again at %s, not before the dead claim's lease ran out at %s: recovered by the lease, not at start-up",
			again.Format(time.RFC3339Nano), leaseUntil.Format(time.RFC3339Nano))
	}
	if n := features(); n != 30 {
		t.Errorf("the layer has %d features, want 30", n)
	}

	// 2. kill -9 of a one-off poll while b runs: b's periodic sweep.
	hung := hang(true)
	poll := exec.Command(bin, "poll", "-config", cfgPath, "-database-url", dbURL, "c/parcels")
	pollOut := &syncBuffer{}
	poll.Stdout, poll.Stderr = pollOut, pollOut
	if err := poll.Start(); err != nil {
		t.Fatal(err)
	}
	host, _ := os.Hostname()
	pollOwner := fmt.Sprintf("%s:%d", host, poll.Process.Pid)
	killed = waitStaged("ingestd poll", pollOut.String)
	// Once its page 1 hangs, page 1 stops hanging and the clock starts
	// before the kill: b's sweep can end the dead poll and poll again
	// within milliseconds of it, and that poll must neither hang nor count
	// as started before the kill.
	testwait.Await(t, "the one-off poll's page 1 hanging", hung)
	hang(false)
	killedAt := time.Now()
	_ = poll.Process.Kill()
	_ = poll.Wait()
	again = checkInterrupted(killed, pollOwner, killedAt, b.out.String)
	t.Logf("kill -9 of a one-off poll: ended and polled again by the sweep %s later", again.Sub(killedAt).Round(time.Millisecond)) // a figure
	if n := features(); n != 30 {
		t.Errorf("the layer has %d features, want 30", n)
	}

	b.stop(t, clusterCeiling)
	if n := queryInt(t, pool, `SELECT count(*)::int FROM polls WHERE status = 'running'`); n != 0 {
		t.Errorf("%d polls left running", n)
	}
	if n := queryInt(t, pool, `SELECT (SELECT count(*) FROM staged_pages) + (SELECT count(*) FROM staged_features)`); n != 0 {
		t.Errorf("%d staged rows left behind", n)
	}
	if n := queryInt(t, pool, `SELECT count(*)::int FROM feed_status WHERE poll_owner IS NOT NULL`); n != 0 {
		t.Errorf("%d claims left behind", n)
	}
	if n := queryInt(t, pool, `SELECT count(*)::int FROM instances`); n != 0 {
		t.Errorf("%d liveness rows left behind (a's, or b's after its clean stop)", n)
	}
}
