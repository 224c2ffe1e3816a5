package main

import (
	"context"
	"errors"
	"fmt"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/ingestd/ingestd/breaker"
	"github.com/ingestd/ingestd/config"
	"github.com/ingestd/ingestd/deadletter"
	"github.com/ingestd/ingestd/feeds"
	"github.com/ingestd/ingestd/feeds/postgis"
	"github.com/ingestd/ingestd/internal/kindconf"
	"github.com/ingestd/ingestd/wfs/wfstest"
)

// parkAtPage polls feed key in this process through a breaker that opens
// while page k-1 is served, so the poll is parked at page k with pages
// 0..k-1 staged. It returns the dead letter.
func parkAtPage(t *testing.T, pool *pgxpool.Pool, server *wfstest.Server, ts *httptest.Server, cfg *config.Config, key string, k int) *deadletter.Letter {
	t.Helper()
	ctx := t.Context()
	p := breaker.DefaultPolicy()
	p.ConsecutiveFailures, p.MaxAttempts, p.RateLimit = 1, 1, 0
	breakers := breaker.NewRegistry(breaker.Config{Policy: p}, nil)
	q := deadletter.NewQueue(pool)
	m := feeds.NewManager(postgis.New(pool), feeds.NewFetchers(kindconf.FetcherDeps{HTTP: ts.Client(), Breakers: breakers}), feeds.WithDeadLetters(q, cfg.DeadLetter))
	defer m.Stop()
	if err := m.Update(ctx, cfg); err != nil {
		t.Fatal(err)
	}
	u, _ := url.Parse(ts.URL)
	origin := breaker.Origin(u)
	var tripped atomic.Bool
	server.SetFault(func(r wfstest.Request) *wfstest.Fault {
		if r.Page == k-1 && tripped.CompareAndSwap(false, true) {
			_ = breakers.Do(context.Background(), origin, func(context.Context, int) breaker.Result {
				return breaker.Result{Outcome: breaker.Failure, Err: errors.New("tripped by the test")}
			})
		}
		return nil
	})
	defer server.SetFault(nil)
	var de *deadletter.DeferError
	if _, err := m.Poll(ctx, key); !errors.As(err, &de) {
		t.Fatalf("poll: %v, want it parked", err)
	}
	l, err := q.Open(ctx, cfg.Jurisdictions[0].ID, cfg.Jurisdictions[0].Feeds[0].ID)
	if err != nil || l == nil || l.Checkpoint.Page != k {
		t.Fatalf("dead letter %+v (%v), want one parked at page %d", l, err, k)
	}
	return l
}

// kill -9 of an instance during a replay loses nothing: once its lease has
// expired another instance takes the row over, resumes from the pages the
// dead one staged, and the row is replayed to the end exactly once.
func TestKilledReplayIsTakenOverAfterItsLease(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("builds and runs ingestd")
	}
	bin := buildIngestd(t)
	server, ts := fixtureOrigin(t, 50, "parcels")
	dbURL, pool := testDB(t)
	ctx := t.Context()

	cfgPath := filepath.Join(t.TempDir(), "j.yaml")
	yaml := fmt.Sprintf(`
dead_letter:
  lease: 2s
  interval: 100ms
jurisdictions:
  - id: county
    feeds:
      - id: parcels
        kind: wfs
        url: %s/wfs
        type_name: parcels
        page_size: 10
        sort_by: pin
        schedule: "0 5 1 1 *"
`, ts.URL)
	if err := os.WriteFile(cfgPath, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Load(cfgPath)
	if err != nil {
		t.Fatal(err)
	}

	const k = 2
	l := parkAtPage(t, pool, server, ts, cfg, "county/parcels", k)
	if _, err := pool.Exec(ctx, `UPDATE dead_letter SET retry_after = now() WHERE id = $1`, l.ID); err != nil {
		t.Fatal(err)
	}

	// Instance A replays: page k is staged, page k+1 hangs, and A is killed.
	// Page k+1 is requested while page k is being staged (pages are staged
	// while the next one is fetched): A is killed once page k's staging has
	// committed, which is what this test is about.
	hung := make(chan struct{})
	var once sync.Once
	var stagedK atomic.Bool
	server.SetFault(func(r wfstest.Request) *wfstest.Fault {
		if r.Page == k+1 {
			once.Do(func() {
				stagedK.Store(waitUntil(clusterCeiling, func() bool {
					var staged bool
					err := pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM staged_pages WHERE page = $1)`, k).Scan(&staged)
					return err == nil && staged
				}))
				close(hung)
			})
			return &wfstest.Fault{Hang: true}
		}
		return nil
	})
	start := func(name string) (*exec.Cmd, *syncBuffer) {
		out := &syncBuffer{}
		cmd := exec.Command(bin, "run", "-config", cfgPath, "-database-url", dbURL, "-catch-up=true", "-log-level", "debug", "-metrics-addr", "off")
		cmd.Stdout, cmd.Stderr = out, out
		if err := cmd.Start(); err != nil {
			t.Fatalf("start %s: %v", name, err)
		}
		t.Cleanup(func() {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
			if t.Failed() {
				t.Logf("%s output:\n%s", name, out.String())
			}
		})
		return cmd, out
	}
	a, _ := start("instance A")
	select {
	case <-hung:
	case <-time.After(clusterCeiling):
		t.Fatal("instance A never reached the hanging page")
	}
	if !stagedK.Load() {
		t.Fatalf("instance A requested page %d but never staged page %d", k+1, k)
	}
	var status, claimedBy string
	if err := pool.QueryRow(ctx, `SELECT status, claimed_by FROM dead_letter WHERE id = $1`, l.ID).Scan(&status, &claimedBy); err != nil {
		t.Fatal(err)
	}
	if status != "replaying" {
		t.Fatalf("row is %s while A replays it, want replaying", status)
	}
	if err := a.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = a.Wait()
	server.SetFault(nil)
	// A's lease as A last renewed it: nobody may take the row before it.
	var leaseA time.Time
	if err := pool.QueryRow(ctx, `SELECT lease_until FROM dead_letter WHERE id = $1`, l.ID).Scan(&leaseA); err != nil {
		t.Fatal(err)
	}

	// Instance B takes the row over once A's lease has expired.
	_, outB := start("instance B")
	var finished time.Time
	if !waitUntil(clusterCeiling, func() bool {
		err := pool.QueryRow(ctx, `SELECT status, coalesce(claimed_by, ''), coalesce(finished_at, 'epoch') FROM dead_letter WHERE id = $1`,
			l.ID).Scan(&status, &claimedBy, &finished)
		return err == nil && status == "done"
	}) {
		t.Fatalf("row still %s %s after A was killed", status, clusterCeiling)
	}
	if claimedBy == "" || !strings.Contains(outB.String(), claimedBy) {
		t.Errorf("row finished by %q, want instance B", claimedBy)
	}
	// In the database's clock: B could claim the row only once A's lease
	// had expired, and finished it after that.
	if !finished.After(leaseA) {
		t.Errorf("row finished at %s, before A's lease expired at %s", finished.Format(time.RFC3339Nano), leaseA.Format(time.RFC3339Nano))
	}
	// Pages before k: once, by the first poll, and k-1 once more by A, its
	// proof that the staged pages are still the layer's. Page k: by A, and
	// by B as its proof (B keeps what A staged). Page k+1: by A (hung) and
	// by B. The rest: once, by B.
	want := map[int]int{0: 1, 1: 2, 2: 2, 3: 2, 4: 1}
	for page, n := range want {
		if got := server.PageRequests("parcels", page); got != n {
			t.Errorf("page %d requested %d times, want %d", page, got, n)
		}
	}
	if n := strings.Count(outB.String(), `"msg":"replaying dead letter"`); n != 1 {
		t.Errorf("instance B replayed the row %d times, want once", n)
	}
	var succeeded, features, attempts int
	if err := pool.QueryRow(ctx, `SELECT (SELECT count(*) FROM polls WHERE status = 'succeeded'),
		(SELECT count(*) FROM features), (SELECT attempts FROM dead_letter WHERE id = $1)`, l.ID).Scan(&succeeded, &features, &attempts); err != nil {
		t.Fatal(err)
	}
	if succeeded != 1 || features != 50 || attempts != 0 {
		t.Errorf("%d polls succeeded, %d features, %d attempts; want 1, 50, 0", succeeded, features, attempts)
	}
	if !strings.Contains(outB.String(), "tick skipped") && !strings.Contains(outB.String(), "lease expired") {
		t.Errorf("instance B logged neither the skipped catch-up of the parked feed nor the expired lease")
	}
}

// The CLI lists, replays now (ignoring retry_after) and purges.
func TestDeadLetterCLI(t *testing.T) {
	t.Parallel()
	server, ts := fixtureOrigin(t, 30, "parcels")
	dbURL, pool := testDB(t)
	ctx := t.Context()
	cfgPath := filepath.Join(t.TempDir(), "j.yaml")
	if err := os.WriteFile(cfgPath, fmt.Appendf(nil, `
jurisdictions:
  - id: county
    feeds:
      - id: parcels
        kind: wfs
        url: %s/wfs
        type_name: parcels
        page_size: 10
        sort_by: pin
`, ts.URL), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Load(cfgPath)
	if err != nil {
		t.Fatal(err)
	}
	parkAtPage(t, pool, server, ts, cfg, "county/parcels", 1)

	code, out, stderr := runCLI(t, "deadletter", "list", "-database-url", dbURL, "--status", "pending")
	if code != 0 || !strings.Contains(out, "county/parcels") || !strings.Contains(out, "circuit_open") {
		t.Fatalf("list: exit %d\n%s%s", code, out, stderr)
	}
	code, out, stderr = runCLI(t, "deadletter", "replay", "-database-url", dbURL, "-config", cfgPath, "--feed", "county/parcels")
	if code != 0 || !strings.Contains(out, "done") {
		t.Fatalf("replay: exit %d\n%s%s", code, out, stderr)
	}
	if n := server.PageRequests("parcels", 0); n != 2 {
		t.Errorf("page 0 requested %d times, want 2: the replay reads it again as its proof and resumes at page 1", n)
	}
	if code, _, _ := runCLI(t, "deadletter", "replay", "-database-url", dbURL, "-config", cfgPath, "--all-due"); code != 1 {
		t.Errorf("replay with nothing pending: exit %d, want 1", code)
	}
	if _, err := pool.Exec(ctx, `UPDATE dead_letter SET finished_at = now() - interval '31 days'`); err != nil {
		t.Fatal(err)
	}
	code, out, _ = runCLI(t, "deadletter", "purge", "-database-url", dbURL, "--done", "--older-than", "30d")
	if code != 0 || !strings.Contains(out, "purged 1") {
		t.Errorf("purge: exit %d: %s", code, out)
	}
	for _, args := range [][]string{{"deadletter"}, {"deadletter", "replay", "-database-url", dbURL}, {"deadletter", "purge", "--done"}} {
		if code, _, _ := runCLI(t, args...); code != 2 {
			t.Errorf("ingestd %v: exit %d, want 2", args, code)
		}
	}
}
