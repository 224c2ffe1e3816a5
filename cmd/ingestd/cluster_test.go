package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/ingestd/ingestd/migrations/pgtest"
)

// The cluster's settings, as short as the checks allow: what they show is
// the shape (one probe per cooldown, a lease outliving its dead holder, a
// restart honouring open_until), not the length. The probe lease is set with
// `run -breaker-probe-lease`: the default 30 s would make (5) wait out 30 s
// for what a 3 s lease (renewed every second while a probe runs) shows as
// well. The origin stays down long enough for a trip, a failed probe and
// its longer re-open, which (8) restarts an instance in.
const (
	clusterInterval   = time.Second // @every 1s
	clusterOpenBase   = time.Second
	clusterOpenMax    = 2 * time.Second
	clusterProbeLease = 3 * time.Second
	clusterJitter     = 1.2             // cooldowns are ±20%
	clusterDownFor    = 4 * time.Second // a trip, a failed probe and its re-open, and then some
	clusterFeeds      = 6               // per origin
	clusterFeatures   = 15
	clusterPageSize   = 10 // so every poll is two pages
	// restartMargin: (8) restarts an instance in a re-open with at least
	// this much left; a restart takes about 0.1 s.
	restartMargin = clusterOpenMax * 5 / 8
	// tripGrace: requests that other instances sent before the trip reached
	// them (NOTIFY takes milliseconds) are not probes.
	tripGrace = 250 * time.Millisecond
)

// TestCluster is issue 7's "Must show", end to end: three `ingestd run`
// processes share one PostGIS and poll three fixture origins, one of which
// goes down for a while (503s and connection resets) and comes back. It
// checks, and prints:
//
//  1. each healthy feed is polled once per tick across the cluster;
//  2. after the trip the flapping origin gets at most one probe per cooldown;
//  3. healthy origins see no refusals;
//  4. /metrics shows the flapping origin's transitions;
//  5. kill -9 of the probe holder stalls recovery by at most one lease;
//  6. `ingestd breaker open` stops traffic on every instance within 1 s and
//     `close` resumes it;
//  7. SIGHUP with a broken file keeps the old config and the polling;
//  8. a process started while the origin is open sends it nothing before
//     open_until.
func TestCluster(t *testing.T) {
	if testing.Short() {
		t.Skip("runs three ingestd processes for about ten seconds")
	}
	// Its own database, origins and ports: it runs beside the other
	// end-to-end tests rather than before them.
	t.Parallel()
	dbURL := pgtest.URL(t)
	bin := buildIngestd(t)
	ctx := t.Context()
	pool, err := pgxpool.New(ctx, dbURL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)

	var figures []string
	fig := func(format string, args ...any) { figures = append(figures, fmt.Sprintf(format, args...)) }
	// Printed, not logged: the figures are the point of `scripts/cluster.sh`,
	// and a failing run's figures say how far off it was.
	defer func() {
		fmt.Printf("--- TestCluster figures (3 instances, %d feeds per origin, @every %s, open_base %s, open_max %s, probe lease %s)\n",
			clusterFeeds, clusterInterval, clusterOpenBase, clusterOpenMax, clusterProbeLease)
		for _, f := range figures {
			fmt.Println("   ", f)
		}
	}()

	var layers []string
	for i := range clusterFeeds {
		layers = append(layers, fmt.Sprintf("l%d", i))
	}
	flap := newClusterOrigin(t, layers, clusterFeatures)
	h1 := newClusterOrigin(t, layers, clusterFeatures)
	h2 := newClusterOrigin(t, layers, clusterFeatures)
	config := clusterConfig(map[string]*clusterOrigin{"flap": flap, "h1": h1, "h2": h2}, layers)
	dir := t.TempDir()
	writeConfig := func(name, text string) string {
		p := filepath.Join(dir, name+".yaml")
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	if code, _, stderr := runCLI(t, "validate", writeConfig("check", config)); code != 0 {
		t.Fatalf("the test's config does not validate:\n%s", stderr)
	}
	watch := watchState(ctx, t, pool, flap.origin)

	// Each instance has its own copy of the file, so that one of them can be
	// handed a broken one.
	var ins []*instance
	for _, name := range []string{"A", "B", "C"} {
		ins = append(ins, startInstance(t, bin, name, writeConfig(name, config), dbURL, clusterFlags()...))
	}
	for _, in := range ins {
		in.waitRunning(t, 30*time.Second)
	}
	t0 := time.Now()
	if !waitUntil(15*time.Second, func() bool {
		var n int
		_ = pool.QueryRow(ctx, `SELECT count(DISTINCT (jurisdiction, feed)) FROM polls WHERE status = 'succeeded'`).Scan(&n)
		return n == 3*clusterFeeds
	}) {
		t.Fatalf("not every feed had a successful poll 15 s after start")
	}
	// The window of (1) opens once the start-up catch-up is over: an
	// instance that starts while another one's catch-up poll of a feed is
	// still running rightly polls it too (it has never succeeded).
	time.Sleep(clusterInterval / 2)
	t0 = time.Now()

	// The flapping origin goes down; two failed calls in a row trip it.
	flap.mode.Store(serveDown)
	tDown := time.Now()
	trip, ok := watch.waitFor(10*time.Second, func(v verdict) bool { return v.state == "open" })
	if !ok {
		t.Fatalf("the flapping origin never opened")
	}
	fig("trip: breaker_state open %s after the origin went down (%d requests reached it meanwhile)",
		trip.openedAt.Sub(tDown).Round(time.Millisecond), len(flap.between(tDown, trip.openedAt)))

	// (4) The transition is on /metrics, and (3) nothing healthy was refused.
	time.Sleep(300 * time.Millisecond)
	var transitions []string
	total := 0.0
	for _, in := range ins {
		m := in.scrape(t)
		n, _ := metricSum(m, "ingestd_breaker_transitions_total", map[string]string{"origin": flap.origin})
		total += n
		transitions = append(transitions, fmt.Sprintf("%s=%g", in.name, n))
		checkNoRefusals(t, in, m, h1, h2)
	}
	fig("(4) /metrics ingestd_breaker_transitions_total{origin=flapping} after the trip: %s", strings.Join(transitions, " "))
	if total == 0 {
		t.Errorf("no instance's /metrics shows a transition of %s after it opened", flap.origin)
	}

	// (8) Restart with the origin open: C stops, D starts while breaker_state
	// still says open, and must send nothing before open_until. A re-open
	// after a failed probe leaves the most time before open_until.
	reopen, ok := watch.waitFor(10*time.Second, func(v verdict) bool {
		return v.state == "open" && v.version > trip.version && time.Until(v.openUntil) > restartMargin
	})
	if !ok {
		t.Fatalf("no re-open with %s of cooldown left within 10 s of the trip", restartMargin)
	}
	c := ins[2]
	fig("SIGTERM of C: exited in %s", c.stop(t, 15*time.Second).Round(time.Millisecond))
	d := startInstance(t, bin, "D", c.config, dbURL, clusterFlags()...)
	d.waitRunning(t, 30*time.Second)
	tDReady := time.Now()
	ins[2] = d
	// The row's version may have moved (another instance writing the same
	// verdict); what counts is that it still says open, until when.
	if cur, _ := watch.latest(); cur.state != "open" || !tDReady.Before(cur.openUntil) {
		t.Errorf("D was ready only after open_until (%s; state %s, ready %s after the re-open): the restart check shows nothing",
			cur.openUntil.Format("15:04:05.000"), cur.state, tDReady.Sub(reopen.openedAt).Round(time.Millisecond))
	} else {
		early := flap.between(tDReady, cur.openUntil.Add(-50*time.Millisecond))
		fig("(8) D started with the origin open: ready %s before open_until; requests to the origin before open_until: %d",
			cur.openUntil.Sub(tDReady).Round(time.Millisecond), len(early))
		if len(early) != 0 {
			t.Errorf("%d requests reached the open origin after D started, before open_until", len(early))
		}
	}

	// (2) The origin stays down a while; then it recovers, but the first
	// request it gets (the probe) hangs until its sender dies.
	time.Sleep(time.Until(tDown.Add(clusterDownFor)))
	tRecover := time.Now()
	flap.mode.Store(serveHangFirst)
	probes := flap.between(trip.openedAt.Add(tripGrace), tRecover)
	periods := openPeriods(watch.all(), tRecover)
	fig("(2) while down: %d requests to the flapping origin after the trip, over %s in which %d cooldowns ended (%s)",
		len(probes), tRecover.Sub(trip.openedAt).Round(100*time.Millisecond), len(periods), describePeriods(periods, trip.openedAt))
	if len(probes) == 0 {
		t.Errorf("no probe reached the flapping origin in %s: the cooldowns never ended", tRecover.Sub(trip.openedAt))
	}
	if len(probes) > len(periods) {
		t.Errorf("%d requests reached the open origin after the trip, but only %d cooldowns ended: more than one probe per cooldown",
			len(probes), len(periods))
	}
	for _, p := range periods {
		if in := flap.between(p.from.Add(tripGrace), p.until.Add(-50*time.Millisecond)); len(in) > 0 {
			t.Errorf("%d requests reached the origin while it was open (%s .. %s)", len(in),
				p.from.Format("15:04:05.000"), p.until.Format("15:04:05.000"))
		}
	}

	// (5) Kill -9 the holder of the probe lease while its probe hangs.
	select {
	case <-flap.hung:
	case <-time.After(time.Duration(float64(clusterOpenMax)*clusterJitter) + 5*time.Second):
		t.Fatalf("no probe reached the recovered origin")
	}
	var owner string
	var probeUntil time.Time
	if err := pool.QueryRow(ctx, `SELECT coalesce(probe_owner, ''), coalesce(probe_until, now()) FROM breaker_state WHERE origin = $1`,
		flap.origin).Scan(&owner, &probeUntil); err != nil {
		t.Fatal(err)
	}
	holder := slices.IndexFunc(ins, func(in *instance) bool { return in.id == owner })
	if holder < 0 {
		t.Fatalf("the probe in flight is not covered by a lease of a running instance: probe_owner %q", owner)
	}
	killed := ins[holder]
	if err := killed.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-killed.exited
	tKill := time.Now()
	survivors := slices.Delete(slices.Clone(ins), holder, holder+1)

	// (1) Until the kill every instance ran on a fair share: count each
	// healthy feed's polls and page requests since t0. (A dead instance's
	// claims lapse only after the feed's timeout + 1 min, so later windows
	// would measure that lease, not the claim.)
	checkOncePerTick(t, ctx, pool, fig, t0, tKill, layers, map[string]*clusterOrigin{"h1": h1, "h2": h2})

	// (6) While the lease of the dead holder runs out: an operator opens a
	// healthy origin from the CLI, every instance stops calling it...
	tOv := breakerCLI(t, bin, dbURL, fig, "open", h2.ts.URL, "--for", "1m", "--reason", "cluster test")
	// (7) ...and, meanwhile, an instance is sent SIGHUP with a broken file.
	hup := survivors[0]
	checkBrokenReload(t, fig, hup)

	time.Sleep(time.Until(tOv.Add(time.Second)))
	atOneSecond := h2.count()
	time.Sleep(time.Until(tOv.Add(time.Second + clusterInterval + 500*time.Millisecond)))
	later := h2.between(tOv.Add(time.Second), time.Now())
	last := "none"
	if after := h2.between(tOv, time.Now()); len(after) > 0 {
		last = "+" + after[len(after)-1].at.Sub(tOv).Round(time.Millisecond).String()
	}
	fig("(6) breaker open h2: last request %s after the CLI returned; requests from +1s to +%s: %d (count %d → %d)",
		last, (time.Second + clusterInterval + 500*time.Millisecond), len(later), atOneSecond, h2.count())
	if len(later) != 0 {
		t.Errorf("%d requests reached %s more than 1 s after `breaker open`", len(later), h2.origin)
	}
	before := h2.count()
	tClose := breakerCLI(t, bin, dbURL, fig, "close", h2.ts.URL)
	if !waitUntil(3*clusterInterval+2*time.Second, func() bool { return h2.count() > before }) {
		t.Errorf("no request reached %s within %s of `breaker close`", h2.origin, 3*clusterInterval+2*time.Second)
	} else {
		// The close takes effect before the CLI returns, so the first
		// request may precede tClose: then none falls after it.
		if resumed := h2.between(tClose, time.Now()); len(resumed) > 0 {
			fig("(6) breaker close h2: first request +%s after the CLI returned", resumed[0].at.Sub(tClose).Round(time.Millisecond))
		} else {
			fig("(6) breaker close h2: first request before the CLI returned")
		}
	}

	// (5) Some survivor probes once the dead holder's lease expires, and
	// closes the origin.
	bound := clusterProbeLease + time.Duration(float64(clusterOpenMax)*clusterJitter) + 3*time.Second
	closed, ok := watch.waitFor(time.Until(tKill.Add(bound)), func(v verdict) bool { return v.state == "closed" })
	if !ok {
		t.Fatalf("the recovered origin still not closed %s after its probe holder was killed (bound: lease %s + cooldown)", bound, clusterProbeLease)
	}
	first := flap.between(tKill, closed.seen)
	fig("(5) kill -9 of probe holder %s: its lease had %s left; a survivor closed the origin %s after the kill (bound %s); first request after the kill at +%s",
		killed.name, probeUntil.Sub(tKill).Round(100*time.Millisecond), closed.seen.Sub(tKill).Round(100*time.Millisecond), bound,
		firstAt(first, tKill))
	if len(first) > 0 && first[0].at.Before(probeUntil.Add(-300*time.Millisecond)) {
		t.Errorf("a request reached the origin %s before the dead holder's lease expired", probeUntil.Sub(first[0].at))
	}

	// (3) and (4) again, at the end, on every survivor.
	transitions = transitions[:0]
	for _, in := range survivors {
		m := in.scrape(t)
		n, _ := metricSum(m, "ingestd_breaker_transitions_total", map[string]string{"origin": flap.origin, "to": "closed"})
		transitions = append(transitions, fmt.Sprintf("%s=%g", in.name, n))
		checkNoRefusals(t, in, m, h1)
		if !in.alive() {
			t.Errorf("%s exited", in.name)
		}
	}
	fig("(4) /metrics transitions to closed of the flapping origin at the end: %s", strings.Join(transitions, " "))
	var refused int
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM polls WHERE status = 'refused' AND jurisdiction = 'h1'`).Scan(&refused); err != nil {
		t.Fatal(err)
	}
	fig("(3) refusals of healthy origins: none on /metrics of any instance (h2 before its override; h1 throughout); refused h1 polls in the database: %d", refused)
	if refused != 0 {
		t.Errorf("%d polls of the healthy origin h1 were refused", refused)
	}
}

// clusterFlags are the flags of every instance's `ingestd run`.
func clusterFlags() []string {
	return []string{"-breaker-probe-lease", clusterProbeLease.String()}
}

// clusterConfig is the cluster's jurisdictions file: one jurisdiction per
// origin, clusterFeeds feeds each.
func clusterConfig(origins map[string]*clusterOrigin, layers []string) string {
	var b strings.Builder
	fmt.Fprintf(&b, `max_in_flight: 20
defaults:
  schedule: "@every %s"
  timeout: 10s
  request_timeout: 5s
  page_size: %d
  breaker:
    consecutive_failures: 2
    max_attempts: 1          # one request per logical call: a probe is one request
    open_base: %s
    open_max: %s
    rate_limit: 0
dead_letter:
  interval: 250ms
  lease: 3s
  failed_backoff: 1s
jurisdictions:
`, clusterInterval, clusterPageSize, clusterOpenBase, clusterOpenMax)
	for _, j := range []string{"flap", "h1", "h2"} {
		fmt.Fprintf(&b, "  - id: %s\n    feeds:\n", j)
		for _, l := range layers {
			fmt.Fprintf(&b, "      - {id: %s, kind: wfs, url: %q, type_name: %s, sort_by: pin", l, origins[j].ts.URL+"/wfs", l)
			if j == "flap" {
				// The hung probe must outlive the test's wait for it.
				b.WriteString(", request_timeout: 2m, timeout: 3m")
			}
			b.WriteString("}\n")
		}
	}
	return b.String()
}

// checkNoRefusals fails if the instance refused a call to any of origins.
func checkNoRefusals(t *testing.T, in *instance, metrics string, origins ...*clusterOrigin) {
	t.Helper()
	for _, o := range origins {
		if n, _ := metricSum(metrics, "ingestd_breaker_calls_total", map[string]string{"origin": o.origin, "result": "refused"}); n != 0 {
			t.Errorf("%s refused %g calls to the healthy origin %s", in.name, n, o.origin)
		}
	}
}

// checkOncePerTick checks that each feed of origins was polled once per tick
// in [from, to] across the cluster: as many successful polls as ticks (give
// or take the ones cut by the window's ends), and no page requested more
// often than there were ticks, plus one (a poll cancelled by a shutdown).
func checkOncePerTick(t *testing.T, ctx context.Context, pool *pgxpool.Pool, fig func(string, ...any), from, to time.Time, layers []string, origins map[string]*clusterOrigin) {
	t.Helper()
	window := to.Sub(from)
	// The window holds either of these many ticks, depending on its phase.
	minTicks := int(window / clusterInterval)
	maxTicks := minTicks + 1
	rows, err := pool.Query(ctx, `SELECT jurisdiction || '/' || feed, count(*) FROM polls
		WHERE status = 'succeeded' AND started_at >= $1 AND started_at <= $2 GROUP BY 1`, from, to)
	if err != nil {
		t.Fatal(err)
	}
	polls := map[string]int{}
	for rows.Next() {
		var k string
		var n int
		if err := rows.Scan(&k, &n); err != nil {
			t.Fatal(err)
		}
		polls[k] = n
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	var pollCounts, pageCounts []int
	for _, j := range []string{"h1", "h2"} {
		reqs := origins[j].between(from, to)
		for _, l := range layers {
			key := j + "/" + l
			n := polls[key]
			pollCounts = append(pollCounts, n)
			// At most one poll a tick (no instance polls a feed another
			// holds). At least all ticks but two: a poll that outlasts
			// the 1 s interval on a loaded machine (the schema request
			// and typed view made polls a few ms longer) skips a tick,
			// and a feed skipped every tick is what this must catch.
			if n < minTicks-2 || n > maxTicks {
				t.Errorf("%s: %d successful polls in %s, want %d to %d (one per %s tick)", key, n, window.Round(time.Millisecond), minTicks-2, maxTicks, clusterInterval)
			}
			for page := range (clusterFeatures + clusterPageSize - 1) / clusterPageSize {
				c := 0
				for _, a := range reqs {
					if a.layer == l && a.page == page {
						c++
					}
				}
				pageCounts = append(pageCounts, c)
				if c > maxTicks+1 {
					t.Errorf("%s page %d requested %d times in at most %d ticks: some tick fetched it twice", key, page, c, maxTicks)
				}
			}
		}
	}
	fig("(1) healthy feeds over %s (%d-%d ticks of %s): successful polls per feed %s; requests per page %s",
		window.Round(100*time.Millisecond), minTicks, maxTicks, clusterInterval, spread(pollCounts), spread(pageCounts))
}

// spread renders counts as min..max (n values).
func spread(v []int) string {
	if len(v) == 0 {
		return "-"
	}
	return fmt.Sprintf("%d..%d (%d values)", slices.Min(v), slices.Max(v), len(v))
}

// breakerCLI runs `ingestd breaker ARGS` as its own process, as an operator
// would, and returns when it exited.
func breakerCLI(t *testing.T, bin, dbURL string, fig func(string, ...any), args ...string) time.Time {
	t.Helper()
	start := time.Now()
	cmd := exec.Command(bin, append(append([]string{"breaker"}, args...), "-database-url", dbURL)...)
	var stderr strings.Builder
	cmd.Stderr = &stderr // its log lines; stdout is what it tells the operator
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("ingestd breaker %v: %v\n%s%s", args, err, out, stderr.String())
	}
	fig("`ingestd breaker %s` (%s): %s", args[0], time.Since(start).Round(time.Millisecond),
		strings.ReplaceAll(strings.TrimSpace(string(out)), "\n", "; "))
	return time.Now()
}

// checkBrokenReload sends SIGHUP to in after breaking its config file: it
// must say the reload was rejected, keep running, and keep polling.
func checkBrokenReload(t *testing.T, fig func(string, ...any), in *instance) {
	t.Helper()
	if err := os.WriteFile(in.config, []byte("jurisdictions:\n  - id: [broken\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	mark := len(in.out.String())
	sent := time.Now()
	if err := in.cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	since := func() string { return in.out.String()[mark:] }
	if !waitUntil(5*time.Second, func() bool { return strings.Contains(since(), `"msg":"reload rejected`) }) {
		t.Errorf("%s did not log a rejected reload within 5 s of SIGHUP with a broken file:\n%s", in.name, tail(since(), 20))
		return
	}
	rejected := time.Since(sent)
	after := len(in.out.String())
	if !waitUntil(10*time.Second, func() bool { return strings.Contains(in.out.String()[after:], `"msg":"poll succeeded"`) }) {
		t.Errorf("%s stopped polling after a rejected reload:\n%s", in.name, tail(since(), 20))
	}
	if !in.alive() {
		t.Errorf("%s exited after SIGHUP with a broken config", in.name)
	}
	fig("(7) SIGHUP to %s with a broken file: \"reload rejected\" after %s; polls succeeded since: %d; still running: %v",
		in.name, rejected.Round(time.Millisecond), strings.Count(in.out.String()[after:], `"msg":"poll succeeded"`), in.alive())
}

// period is one cooldown: the origin open from from until until.
type period struct{ from, until time.Time }

// openPeriods merges the open verdicts seen into cooldowns that ended by
// end, leaving out verdicts too short to be one. Several instances may write the first trip (the most protective
// open_until wins), so overlapping verdicts are one cooldown.
func openPeriods(vs []verdict, end time.Time) []period {
	var ps []period
	for _, v := range vs {
		if v.state != "open" || v.openUntil.IsZero() {
			continue
		}
		if n := len(ps); n > 0 && !v.openedAt.After(ps[n-1].until) {
			ps[n-1].until = later(ps[n-1].until, v.openUntil)
			continue
		}
		ps = append(ps, period{v.openedAt, v.openUntil})
	}
	var out []period
	for _, p := range ps {
		// A verdict "open" until the moment it was written holds nothing
		// back: it is not a cooldown, and must not make room for a probe.
		if p.until.Sub(p.from) < clusterOpenBase/2 {
			continue
		}
		if !p.until.After(end) {
			out = append(out, p)
		}
	}
	return out
}

func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

func describePeriods(ps []period, since time.Time) string {
	var parts []string
	for _, p := range ps {
		parts = append(parts, fmt.Sprintf("+%.1fs..+%.1fs", p.from.Sub(since).Seconds(), p.until.Sub(since).Seconds()))
	}
	return strings.Join(parts, ", ")
}

func firstAt(as []arrival, since time.Time) string {
	if len(as) == 0 {
		return "-"
	}
	return as[0].at.Sub(since).Round(100 * time.Millisecond).String()
}
