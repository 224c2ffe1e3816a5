package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ingestd/ingestd/config"
)

// testConfigLackingFeeds (run by TestCrashAndConfig): c/x is parked with a
// dead letter and c/x, c/y, c/z are registered by a configuration that has
// all three; then, with configurations that lack c/x:
//
//  1. a daemon started with only c/y removes nothing and hands the letter of
//     c/x back untouched (pending, same attempts and checkpoint, staging
//     kept) instead of abandoning it;
//  2. a one-off `ingestd poll` of c/y removes nothing;
//  3. that daemon's reload to all three and back to c/y marks c/x and c/z
//     removed (the feeds its previous configuration had), and still
//     abandons nothing;
//  4. `ingestd feeds prune -dry-run` says what it would do and does
//     nothing; `ingestd feeds prune` marks the absent feeds removed and
//     abandons c/x's letter, deleting its staged pages.
func testConfigLackingFeeds(t *testing.T, bin string) {
	dbURL, pool := testDB(t)
	ctx := t.Context()
	server, ts := fixtureOrigin(t, 30, "x", "y", "z")

	dir := t.TempDir()
	write := func(path string, ids ...string) {
		var b strings.Builder
		b.WriteString("dead_letter:\n  interval: 100ms\n  lease: 2s\njurisdictions:\n  - id: c\n    feeds:\n")
		for _, id := range ids {
			fmt.Fprintf(&b, "      - {id: %s, kind: wfs, url: %q, type_name: %s, page_size: 10, sort_by: pin, schedule: \"0 5 1 1 *\"}\n",
				id, ts.URL+"/wfs", id)
		}
		if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	all, only := filepath.Join(dir, "all.yaml"), filepath.Join(dir, "y.yaml")
	write(all, "x", "y", "z")
	write(only, "y")
	cfgAll, err := config.Load(all)
	if err != nil {
		t.Fatal(err)
	}
	letter := parkAtPage(t, pool, server, ts, cfgAll, "c/x", 1)
	if _, err := pool.Exec(ctx, `UPDATE dead_letter SET retry_after = now() WHERE id = $1`, letter.ID); err != nil {
		t.Fatal(err)
	}
	removed := func() string {
		var s string
		if err := pool.QueryRow(ctx, `SELECT coalesce(string_agg(feed, ',' ORDER BY feed), '')
			FROM feed_status WHERE NOT configured`).Scan(&s); err != nil {
			t.Fatal(err)
		}
		return s
	}
	type letterState struct {
		status   string
		attempts int
		pollID   int64
		page     int
		staged   int
		due      time.Duration // retry_after - now()
	}
	readLetter := func() letterState {
		var l letterState
		var due float64
		if err := pool.QueryRow(ctx, `SELECT status, attempts, coalesce(poll_id, 0), next_page,
				(SELECT count(*)::int FROM staged_pages WHERE poll_id = d.poll_id),
				extract(epoch FROM retry_after - now())::float8
			FROM dead_letter d WHERE id = $1`, letter.ID).Scan(&l.status, &l.attempts, &l.pollID, &l.page, &l.staged, &due); err != nil {
			t.Fatal(err)
		}
		l.due = time.Duration(due * float64(time.Second))
		return l
	}
	parked := readLetter()
	if parked.status != "pending" || parked.staged != 1 {
		t.Fatalf("parked letter %+v, want pending with page 0 staged", parked)
	}

	// 1. A daemon that does not know c/x.
	in := startInstance(t, bin, "y-only", only, dbURL)
	in.waitRunning(t, clusterCeiling)
	// Handed back n times: the log says so, and the replayer has put the
	// row back (it logs before it does): the log is read first.
	handedBack := func(n int) bool {
		if strings.Count(in.out.String(), "dead letter left for another instance") < n {
			return false
		}
		var status string
		_ = pool.QueryRow(ctx, `SELECT status FROM dead_letter WHERE id = $1`, letter.ID).Scan(&status)
		return status == "pending"
	}
	if !waitUntil(clusterCeiling, func() bool { return handedBack(1) }) {
		t.Fatalf("the y-only daemon never claimed c/x's due letter:\n%s", tail(in.out.String(), 20))
	}
	// A later replayer tick meets the letter again, made due once more: it
	// must hand it back untouched again, not take it the second time.
	if _, err := pool.Exec(ctx, `UPDATE dead_letter SET retry_after = now() WHERE id = $1`, letter.ID); err != nil {
		t.Fatal(err)
	}
	if !waitUntil(clusterCeiling, func() bool { return handedBack(2) }) {
		t.Fatalf("the y-only daemon never met c/x's letter again once it was due:\n%s", tail(in.out.String(), 20))
	}
	got := readLetter()
	t.Logf("c/x's letter after the y-only daemon's start: %s, %d attempts, checkpoint poll %d page %d (%d staged), due in %s",
		got.status, got.attempts, got.pollID, got.page, got.staged, got.due.Round(time.Second))
	if got.status != "pending" || got.attempts != parked.attempts || got.pollID != parked.pollID ||
		got.page != parked.page || got.staged != parked.staged {
		t.Errorf("c/x's letter is %+v after a daemon without c/x started, want it untouched: %+v", got, parked)
	}
	if got.due < 30*time.Second {
		t.Errorf("c/x's letter is due again in %s, want it left for a minute to the instances that know c/x", got.due)
	}
	if r := removed(); r != "" {
		t.Errorf("start with a config lacking c/x and c/z marked removed: %s", r)
	}

	// 2. A one-off poll with that configuration, once the daemon's catch-up
	// poll of c/y (it never succeeded) is over: both would claim it.
	if !waitUntil(clusterCeiling, func() bool {
		_, ok := in.firstLog(time.Time{}, "poll succeeded", map[string]string{"jurisdiction": "c", "feed": "y"})
		// The success is logged before the claim is released.
		return ok && queryInt(t, pool, `SELECT count(*)::int FROM feed_status WHERE jurisdiction = 'c' AND feed = 'y' AND poll_owner IS NULL`) == 1
	}) {
		t.Fatalf("the y-only daemon did not poll c/y:\n%s", tail(in.out.String(), 20))
	}
	if code, out := runBin(t, bin, "poll", "-config", only, "-database-url", dbURL, "c/y"); code != 0 {
		t.Fatalf("poll c/y: %s", out)
	}
	if r := removed(); r != "" {
		t.Errorf("`ingestd poll` with a config lacking c/x and c/z marked removed: %s", r)
	}

	// 3. The daemon's reloads: to all three feeds, then back to c/y.
	reload := func(ids []string, want string) {
		t.Helper()
		write(in.config, ids...) // the daemon's file, y.yaml
		n := strings.Count(in.out.String(), "configuration reloaded")
		if err := in.cmd.Process.Signal(syscall.SIGHUP); err != nil {
			t.Fatal(err)
		}
		if !waitUntil(clusterCeiling, func() bool { return strings.Count(in.out.String(), "configuration reloaded") > n }) {
			t.Fatalf("no reload:\n%s", tail(in.out.String(), 10))
		}
		if r := removed(); r != want {
			t.Errorf("after the reload to %v, removed feeds: %q, want %q", ids, r, want)
		}
	}
	reload([]string{"x", "y", "z"}, "")
	reload([]string{"y"}, "x,z")
	if got := readLetter(); got.status != "pending" || got.staged != parked.staged {
		t.Errorf("c/x's letter is %+v after the reload that removed c/x; only prune abandons", got)
	}
	in.stop(t, clusterCeiling)

	// 4. feeds prune, dry and for real. c/z is registered again by a
	// one-off poll with all three, so prune has a configured feed to remove.
	if code, out := runBin(t, bin, "poll", "-config", all, "-database-url", dbURL, "c/z"); code != 0 {
		t.Fatalf("poll c/z: %s", out)
	}
	if r := removed(); r != "" {
		t.Fatalf("a poll with all three feeds left removed: %q", r)
	}
	code, out := runBin(t, bin, "feeds", "prune", "-dry-run", "-config", only, "-database-url", dbURL)
	t.Logf("feeds prune -dry-run:\n%s", out)
	if want := fmt.Sprintf("would remove c/x; would abandon dead letter %d\nwould remove c/z\n", letter.ID); code != 0 || !strings.HasPrefix(out, want) {
		t.Errorf("feeds prune -dry-run: exit %d\n%s\nwant it to start with\n%s", code, out, want)
	}
	if r, l := removed(), readLetter(); r != "" || l.status != "pending" {
		t.Errorf("feeds prune -dry-run changed something: removed %q, letter %s", r, l.status)
	}
	code, out = runBin(t, bin, "feeds", "prune", "-config", only, "-database-url", dbURL)
	t.Logf("feeds prune:\n%s", out)
	if want := fmt.Sprintf("removed c/x; abandoned dead letter %d\nremoved c/z\n", letter.ID); code != 0 || !strings.HasPrefix(out, want) {
		t.Errorf("feeds prune: exit %d\n%s\nwant it to start with\n%s", code, out, want)
	}
	if r := removed(); r != "x,z" {
		t.Errorf("after feeds prune, removed feeds: %q, want x,z", r)
	}
	if l := readLetter(); l.status != "abandoned" || l.staged != 0 {
		t.Errorf("after feeds prune, c/x's letter is %s with %d staged pages, want abandoned with none", l.status, l.staged)
	}
	if n := queryInt(t, pool, `SELECT count(*)::int FROM features WHERE feed = 'y'`); n != 30 {
		t.Errorf("c/y has %d features, want 30", n)
	}
}

// A feed renamed in the configuration leaves its old name in the database:
// `poll` (and `run`) warn of it and name `ingestd feeds prune`; once pruned,
// `status` leaves it out unless -all, and says it did.
func TestAbsentFeedsWarnedAndRemovedHidden(t *testing.T) {
	t.Parallel()
	dbURL, _ := testDB(t)
	_, ts := fixtureOrigin(t, 5, "parcels")
	dir := t.TempDir()
	write := func(name, feed, url string) string {
		path := filepath.Join(dir, name)
		yaml := fmt.Sprintf("jurisdictions:\n  - id: c\n    feeds:\n      - {id: %s, kind: wfs, url: %q, type_name: parcels, sort_by: pin, schedule: \"0 5 1 1 *\"}\n",
			feed, url)
		if err := os.WriteFile(path, []byte(yaml), 0o644); err != nil {
			t.Fatal(err)
		}
		return path
	}
	// The earlier configuration's feed fails (its server is gone), as a
	// renamed feed's old name does forever after.
	earlier := write("earlier.yaml", "parcles", "http://127.0.0.1:1/wfs")
	current := write("current.yaml", "parcels", ts.URL+"/wfs")
	cli := func(args ...string) (int, string, string) {
		return runCLI(t, append(args, "-database-url", dbURL)...)
	}
	if code, _, stderr := cli("poll", "c/parcles", "-config", earlier); code != 1 {
		t.Fatalf("poll of the refused feed: exit %d\n%s", code, stderr)
	}
	code, _, stderr := cli("poll", "c/parcels", "-config", current)
	if code != 0 {
		t.Fatalf("poll: exit %d\n%s", code, stderr)
	}
	want := "warning: the database holds 1 feeds that " + current + " does not (c/parcles)"
	if !strings.Contains(stderr, want) || !strings.Contains(stderr, "ingestd feeds prune -config "+current) {
		t.Errorf("poll's stderr lacks the warning %q and the prune command:\n%s", want, stderr)
	}
	if _, stdout, _ := cli("status"); !strings.Contains(stdout, "c/parcles  parked") {
		t.Errorf("before the prune, status does not list the parked old feed:\n%s", stdout)
	}
	// Cut, the error keeps its first clause and its cause; -full prints it whole.
	if _, stdout, _ := cli("status", "-full"); !strings.Contains(stdout, "wfs: page 0 (http://127.0.0.1:1/wfs?") ||
		!strings.Contains(stdout, "connection refused") || strings.Contains(stdout, "…") {
		t.Errorf("status -full does not print the error whole:\n%s", stdout)
	}
	if code, stdout, stderr := cli("feeds", "prune", "-config", current); code != 0 {
		t.Fatalf("prune: exit %d\n%s%s", code, stdout, stderr)
	}
	if code, _, stderr := cli("poll", "c/parcels", "-config", current); code != 0 || strings.Contains(stderr, "warning: the database holds") {
		t.Errorf("after the prune, poll: exit %d, still warns:\n%s", code, stderr)
	}
	_, stdout, _ := cli("status")
	if strings.Contains(stdout, "parcles") || !strings.Contains(stdout, "(1 removed not shown: -all)") {
		t.Errorf("status lists the pruned feed or does not say it hid it:\n%s", stdout)
	}
	if _, stdout, _ := cli("status", "-all"); !strings.Contains(stdout, "parcles") || !strings.Contains(stdout, "removed") {
		t.Errorf("status -all does not list the pruned feed:\n%s", stdout)
	}
}
