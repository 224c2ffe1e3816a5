package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
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
// well.
const (
	clusterInterval   = time.Second // @every 1s
	clusterOpenBase   = time.Second
	clusterOpenMax    = 2 * time.Second
	clusterProbeLease = 3 * time.Second
	clusterFeeds      = 6 // per origin
	clusterFeatures   = 15
	clusterPageSize   = 10 // so every poll is two pages
	// clusterFailures is the breaker's consecutive_failures: an instance
	// that has not heard of a trip stops after this many failures of its
	// own.
	clusterFailures = 2
	// clusterProbes is how many probes must fail after every instance knew
	// of the trip before the flapping origin recovers: enough cooldowns
	// that instances probing on their own would outnumber the allowance.
	clusterProbes = 3
	// clusterMinPolls is how many successful polls every healthy feed must
	// have after the start-up catch-up: a feed the cluster stopped polling.
	clusterMinPolls = 3
	// clusterCeiling bounds each wait for an event, in this test and the
	// package's other end-to-end tests: it catches a hang, it is no speed
	// a test expects.
	clusterCeiling = 2 * time.Minute
)

// TestCluster runs a cluster end to end: three `ingestd run`
// processes share one PostGIS and poll three fixture origins, one of which
// goes down for a while (503s and connection resets) and comes back. Every
// check is about order and counts, so that it holds on any machine; how long
// things took is printed, and `scripts/bench.sh cluster` reports it
// (BenchmarkCluster). It checks:
//
//  1. the cluster polls a feed once at a time and claims it at most once
//     per half interval (one poll per tick), each poll fetches each page
//     once, and every healthy feed keeps being polled;
//  2. after the trip, the flapping origin gets one request per probe lease,
//     one lease per cooldown taken after its open_until, besides the
//     requests of instances that had not heard of the trip yet (bounded by
//     their own breakers);
//  3. healthy origins see no refusals;
//  4. /metrics shows the flapping origin's transitions;
//  5. kill -9 of the probe holder: no request reaches the origin until a
//     survivor takes the lease, which it does only after the dead holder's
//     expired, and the origin closes;
//  6. `ingestd breaker open` stops traffic on every instance once each has
//     read the override, and `close` resumes it;
//  7. SIGHUP with a broken file keeps the old config and the polling;
//  8. a process started while the origin is open sends it nothing but the
//     probes of the leases it takes.
func TestCluster(t *testing.T) {
	if testing.Short() {
		t.Skip("runs three ingestd processes for about fifteen seconds")
	}
	// Its own database, origins and ports: it runs beside the other
	// end-to-end tests rather than before them.
	t.Parallel()
	heavy(t, heavyCluster)
	fig := runCluster(t)
	t.Logf("figures (3 instances, %d feeds per origin, @every %s, open_base %s, open_max %s, probe lease %s):\n    %s",
		clusterFeeds, clusterInterval, clusterOpenBase, clusterOpenMax, clusterProbeLease, strings.Join(fig.lines, "\n    "))
}

// BenchmarkCluster runs TestCluster's scenario and reports how long things
// took, which no test may assert (`scripts/bench.sh cluster`): polls per
// tick, the time to trip, requests per cooldown while open, the time to
// close after the probe holder's kill -9, the time traffic stopped after
// `breaker open` and resumed after `close`.
func BenchmarkCluster(b *testing.B) {
	for b.Loop() {
		fig := runCluster(b)
		// Printed: go test keeps only ten lines of a benchmark's log.
		fmt.Printf("--- cluster figures (3 instances, %d feeds per origin, @every %s, open_base %s, open_max %s, probe lease %s)\n    %s\n",
			clusterFeeds, clusterInterval, clusterOpenBase, clusterOpenMax, clusterProbeLease, strings.Join(fig.lines, "\n    "))
		for _, m := range fig.metrics {
			b.ReportMetric(m.value, m.unit)
		}
	}
}

// clusterFigures are what a run measured: lines for people, metrics for
// the benchmark.
type clusterFigures struct {
	lines   []string
	metrics []clusterMetric
}

type clusterMetric struct {
	value float64
	unit  string
}

func (f *clusterFigures) line(format string, args ...any) {
	f.lines = append(f.lines, fmt.Sprintf(format, args...))
}

func (f *clusterFigures) metric(value float64, unit string) {
	f.metrics = append(f.metrics, clusterMetric{value, unit})
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// runCluster runs the scenario of TestCluster, failing tb on any check, and
// returns its figures.
func runCluster(tb testing.TB) *clusterFigures {
	fig := &clusterFigures{}
	// Instances A, B and C (D replaces C), and the test's own pool.
	dbURL := pgtest.URLFor(tb, pgtest.PoolConns+3*ingestdConns)
	bin := buildIngestd(tb)
	ctx := tb.Context()
	pool, err := pgxpool.New(ctx, pgtest.PoolURL(dbURL, pgtest.PoolConns))
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(pool.Close)
	if _, err := pool.Exec(ctx, clusterInstrumentSQL); err != nil {
		tb.Fatalf("instrumenting the test database: %v", err)
	}

	var layers []string
	for i := range clusterFeeds {
		layers = append(layers, fmt.Sprintf("l%d", i))
	}
	flap := newClusterOrigin(tb, layers, clusterFeatures)
	h1 := newClusterOrigin(tb, layers, clusterFeatures)
	h2 := newClusterOrigin(tb, layers, clusterFeatures)
	config := clusterConfig(map[string]*clusterOrigin{"flap": flap, "h1": h1, "h2": h2}, layers)
	dir := tb.TempDir()
	writeConfig := func(name, text string) string {
		p := filepath.Join(dir, name+".yaml")
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			tb.Fatal(err)
		}
		return p
	}
	if code, _, stderr := runCLI(tb, "validate", writeConfig("check", config)); code != 0 {
		tb.Fatalf("the test's config does not validate:\n%s", stderr)
	}

	// Each instance has its own copy of the file, so that one of them can be
	// handed a broken one.
	var ins []*instance
	for _, name := range []string{"A", "B", "C"} {
		ins = append(ins, startInstance(tb, bin, name, writeConfig(name, config), dbURL, clusterFlags()...))
	}
	for _, in := range ins {
		in.waitRunning(tb, clusterCeiling)
	}
	if !waitUntil(clusterCeiling, func() bool {
		var n int
		_ = pool.QueryRow(ctx, `SELECT count(DISTINCT (jurisdiction, feed)) FROM polls WHERE status = 'succeeded'`).Scan(&n)
		return n == 3*clusterFeeds
	}) {
		tb.Fatalf("not every feed had a successful poll %s after start", clusterCeiling)
	}
	t0 := time.Now()

	// The flapping origin goes down; two failed calls in a row trip it.
	tDown := time.Now() // before: an instance may trip at once
	flap.mode.Store(serveDown)
	var trip verdict
	if !waitUntil(clusterCeiling, func() bool {
		for _, v := range breakerHistory(tb, pool, flap.origin) {
			if v.state == "open" {
				trip = v
				return true
			}
		}
		return false
	}) {
		tb.Fatalf("the flapping origin never opened")
	}
	fig.line("trip: breaker_state open %s after the origin went down (%d requests reached it meanwhile)",
		trip.at.Sub(tDown).Round(time.Millisecond), len(flap.between(tDown, trip.at)))
	fig.metric(ms(trip.at.Sub(tDown)), "trip-ms")

	// (4) The transition is on /metrics, and (3) nothing healthy was refused.
	var transitions []string
	if !waitUntil(clusterCeiling, func() bool {
		transitions = transitions[:0]
		total := 0.0
		for _, in := range ins {
			n, _ := metricSum(in.scrape(tb), "ingestd_breaker_transitions_total", map[string]string{"origin": flap.origin})
			total += n
			transitions = append(transitions, fmt.Sprintf("%s=%g", in.name, n))
		}
		return total > 0
	}) {
		tb.Errorf("no instance's /metrics shows a transition of %s after it opened", flap.origin)
	}
	for _, in := range ins {
		checkNoRefusals(tb, in, in.scrape(tb), h1, h2)
	}
	fig.line("(4) /metrics ingestd_breaker_transitions_total{origin=flapping} after the trip: %s", strings.Join(transitions, " "))

	// (8) Restart with the origin open: C stops, D starts while
	// breaker_state says open.
	c := ins[2]
	exit := c.stop(tb, clusterCeiling)
	tStopC := time.Now()
	fig.line("SIGTERM of C: exited in %s", exit.Round(time.Millisecond))
	fig.metric(ms(exit), "sigterm-exit-ms")
	d := startInstance(tb, bin, "D", c.config, dbURL, clusterFlags()...)
	d.waitRunning(tb, clusterCeiling)
	ins[2] = d

	// (2) The origin stays down until every instance that polls it knows
	// of the trip and clusterProbes probes failed after that. An instance
	// knows once it logged the origin's transition to open (for D: at its
	// first call, from the row it loaded at start). C knew, or had exited.
	flapOpen := map[string]string{"origin": flap.origin, "to": "open"}
	var aware time.Time
	knows := func() bool {
		aware = tStopC
		if at, ok := c.firstLog(tDown, "breaker state change", flapOpen); ok && at.Before(aware) {
			aware = at
		}
		for _, in := range ins {
			at, ok := in.firstLog(tDown, "breaker state change", flapOpen)
			if !ok {
				return false
			}
			aware = later(aware, at)
		}
		return true
	}
	var dRefused float64
	if !waitUntil(clusterCeiling, func() bool {
		if !knows() {
			return false
		}
		dRefused, _ = metricSum(d.scrape(tb), "ingestd_breaker_calls_total", map[string]string{"origin": flap.origin, "result": "refused"})
		n := 0
		for _, l := range leases(breakerHistory(tb, pool, flap.origin)) {
			if l.at.After(aware) && !l.decided.IsZero() {
				n++
			}
		}
		return dRefused > 0 && n >= clusterProbes
	}) {
		tb.Fatalf("the flapping origin did not see %d probes decided after every instance knew of its trip, with D refusing a call to it, within %s (D refused %g)",
			clusterProbes, clusterCeiling, dRefused)
	}
	tRecover := time.Now()
	flap.mode.Store(serveHangFirst)
	history := breakerHistory(tb, pool, flap.origin)
	checkLeases(tb, leases(history), tRecover)
	var probes []lease
	for _, l := range leases(history) {
		if l.at.After(aware) && l.at.Before(tRecover) {
			probes = append(probes, l)
		}
	}
	after := flap.between(aware, tRecover)
	// Each instance sends the origin one request at a time
	// (max_in_flight_per_origin: 1), so at most one per instance was on its
	// way when that instance learnt of the trip.
	inFlight := len(ins)
	fig.line("(2) after every instance knew of the trip (%s after it): %d requests to the flapping origin, %d probe leases (cooldowns ended), %d instances' requests in flight allowed",
		aware.Sub(trip.at).Round(time.Millisecond), len(after), len(probes), inFlight)
	if len(probes) > 0 {
		fig.metric(float64(len(after))/float64(len(probes)), "requests/cooldown")
	}
	if len(after) > len(probes)+inFlight {
		tb.Errorf("%d requests reached the open origin after every instance knew of the trip, but only %d probe leases were taken (and %d requests may have been in flight): more than one probe per cooldown",
			len(after), len(probes), inFlight)
	}
	early := flap.between(trip.at, aware)
	fig.line("(2) between the trip and the last instance knowing of it: %d requests (allowed: %d failures per instance that had not heard of it, %d probe leases)",
		len(early), clusterFailures, len(leasesBetween(history, trip.at, aware)))
	if allowed := clusterFailures*(len(ins)+1) + len(leasesBetween(history, trip.at, aware)); len(early) > allowed {
		tb.Errorf("%d requests reached the flapping origin between its trip and the moment every instance knew of it, more than %d (each instance's own breaker trips after %d failures)",
			len(early), allowed, clusterFailures)
	}
	// (8) D loaded the open row at start: every request it sent the origin
	// was the probe of a lease it held.
	var dLeases int
	for _, l := range leases(history) {
		if l.owner == d.id {
			dLeases++
		}
	}
	dSent, _ := metricSum(d.scrape(tb), "ingestd_breaker_requests_total", map[string]string{"origin": flap.origin})
	fig.line("(8) D started with the origin open: refused %g calls to it; sent %g requests, held %d probe leases", dRefused, dSent, dLeases)
	if int(dSent) > dLeases {
		tb.Errorf("D, started while the origin was open, sent it %g requests but held only %d probe leases", dSent, dLeases)
	}

	// (5) Kill -9 the holder of the probe lease while its probe hangs.
	select {
	case <-flap.hung:
	case <-time.After(clusterCeiling):
		tb.Fatalf("no probe reached the recovered origin")
	}
	var owner string
	if err := pool.QueryRow(ctx, `SELECT coalesce(probe_owner, '') FROM breaker_state WHERE origin = $1`, flap.origin).Scan(&owner); err != nil {
		tb.Fatal(err)
	}
	holder := slices.IndexFunc(ins, func(in *instance) bool { return in.id == owner })
	if holder < 0 {
		tb.Fatalf("the probe in flight is not covered by a lease of a running instance: probe_owner %q", owner)
	}
	killed := ins[holder]
	if err := killed.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		tb.Fatal(err)
	}
	<-killed.exited
	tKill := time.Now()
	survivors := slices.Delete(slices.Clone(ins), holder, holder+1)

	// (1) Every healthy feed kept being polled.
	checkPolledAgain(tb, ctx, pool, fig, t0, tKill)

	// (6) While the lease of the dead holder runs out: an operator opens a
	// healthy origin from the CLI, every instance stops calling it...
	tOv := breakerCLI(tb, bin, dbURL, fig, "open", h2.ts.URL, "--for", "1m", "--reason", "cluster test")
	// (7) ...and, meanwhile, an instance is sent SIGHUP with a broken file.
	checkBrokenReload(tb, fig, survivors[0])
	checkOverride(tb, ctx, pool, fig, survivors, h2, tOv, layers)
	before := h2.count()
	tClose := breakerCLI(tb, bin, dbURL, fig, "close", h2.ts.URL)
	if !waitUntil(clusterCeiling, func() bool { return h2.count() > before }) {
		tb.Errorf("no request reached %s within %s of `breaker close`", h2.origin, clusterCeiling)
	} else if resumed := h2.between(tClose, time.Now()); len(resumed) > 0 {
		fig.line("(6) breaker close h2: first request +%s after the CLI returned", resumed[0].at.Sub(tClose).Round(time.Millisecond))
		fig.metric(ms(resumed[0].at.Sub(tClose)), "resume-after-close-ms")
	} else {
		// The close takes effect before the CLI returns, so the first
		// request may precede tClose.
		fig.line("(6) breaker close h2: first request before the CLI returned")
		fig.metric(0, "resume-after-close-ms")
	}

	// (5) A survivor probes once the dead holder's lease expired, and
	// closes the origin.
	var closed verdict
	if !waitUntil(clusterCeiling, func() bool {
		for _, v := range breakerHistory(tb, pool, flap.origin) {
			if v.at.After(tKill) && v.state == "closed" {
				closed = v
				return true
			}
		}
		return false
	}) {
		tb.Fatalf("the recovered origin still not closed %s after its probe holder was killed", clusterCeiling)
	}
	history = breakerHistory(tb, pool, flap.origin)
	checkLeases(tb, leases(history), closed.at)
	var dead, next *lease
	for _, l := range leases(history) {
		if l.owner == killed.id && l.at.Before(tKill) {
			dead = &l
		}
		if l.at.After(tKill) && l.owner != killed.id && next == nil {
			next = &l
		}
	}
	if dead == nil || next == nil {
		tb.Fatalf("the history shows no lease of the killed holder %s before the kill, or none of a survivor after it", killed.id)
	}
	deadUntil := lastProbeUntil(history, killed.id, next.at)
	if next.at.Before(deadUntil) {
		tb.Errorf("a survivor took the probe lease at %s, before the dead holder's lease expired at %s",
			next.at.Format("15:04:05.000"), deadUntil.Format("15:04:05.000"))
	}
	if early := flap.between(tKill, next.at); len(early) > 0 {
		tb.Errorf("%d requests reached the recovered origin after its probe holder was killed, before a survivor took the lease", len(early))
	}
	fig.line("(5) kill -9 of probe holder %s: its lease had %s left; a survivor took it %s after it expired; the origin closed %s after the kill",
		killed.name, deadUntil.Sub(tKill).Round(100*time.Millisecond), next.at.Sub(deadUntil).Round(time.Millisecond),
		closed.at.Sub(tKill).Round(100*time.Millisecond))
	fig.metric(ms(closed.at.Sub(tKill)), "close-after-kill-ms")
	fig.metric(ms(next.at.Sub(deadUntil)), "lease-takeover-ms")

	// (3) and (4) again, at the end, on every survivor.
	transitions = transitions[:0]
	for _, in := range survivors {
		m := in.scrape(tb)
		n, _ := metricSum(m, "ingestd_breaker_transitions_total", map[string]string{"origin": flap.origin, "to": "closed"})
		transitions = append(transitions, fmt.Sprintf("%s=%g", in.name, n))
		checkNoRefusals(tb, in, m, h1)
		if !in.alive() {
			tb.Errorf("%s exited", in.name)
		}
	}
	fig.line("(4) /metrics transitions to closed of the flapping origin at the end: %s", strings.Join(transitions, " "))
	var refused int
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM polls WHERE status = 'refused' AND jurisdiction = 'h1'`).Scan(&refused); err != nil {
		tb.Fatal(err)
	}
	if refused != 0 {
		tb.Errorf("%d polls of the healthy origin h1 were refused", refused)
	}

	// (1) Over the whole run: one poll of a feed at a time, claims at
	// least half an interval apart, each page fetched once per run of a
	// poll. The survivors stop first: what the checks count (requests,
	// polls, the log lines of resumed runs) is then complete.
	for _, in := range survivors {
		in.stop(tb, clusterCeiling)
	}
	checkOnePollAtATime(tb, ctx, pool, fig, []string{"h1", "h2"})
	checkClaimGaps(tb, pool, fig)
	checkPagesPerPoll(tb, ctx, pool, fig, layers, map[string]*clusterOrigin{"h1": h1, "h2": h2}, append(slices.Clone(ins), c))
	return fig
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
  timeout: 1m
  request_timeout: 30s
  page_size: %d
  breaker:
    consecutive_failures: %d
    max_attempts: 1          # one request per logical call: a probe is one request
    open_base: %s
    open_max: %s
    rate_limit: 0
dead_letter:
  interval: 250ms
  lease: 3s
  failed_backoff: 1s
jurisdictions:
`, clusterInterval, clusterPageSize, clusterFailures, clusterOpenBase, clusterOpenMax)
	for _, j := range []string{"flap", "h1", "h2"} {
		fmt.Fprintf(&b, "  - id: %s\n", j)
		if j == "flap" {
			// One request at a time per instance: the requests an
			// instance had on their way when it learnt of the trip are
			// at most one.
			b.WriteString("    breaker: {max_in_flight_per_origin: 1}\n")
		}
		b.WriteString("    feeds:\n")
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
func checkNoRefusals(tb testing.TB, in *instance, metrics string, origins ...*clusterOrigin) {
	tb.Helper()
	for _, o := range origins {
		if n, _ := metricSum(metrics, "ingestd_breaker_calls_total", map[string]string{"origin": o.origin, "result": "refused"}); n != 0 {
			tb.Errorf("%s refused %g calls to the healthy origin %s", in.name, n, o.origin)
		}
	}
}

// checkLeases checks the probe leases taken until end: each was taken once
// its cooldown was over, and a cooldown saw a second one only after the
// first had expired (its holder stopped renewing it).
func checkLeases(tb testing.TB, ls []lease, end time.Time) {
	tb.Helper()
	for _, l := range ls {
		if !l.at.Before(end) {
			continue
		}
		if l.at.Before(l.openUntil) {
			tb.Errorf("%s took the probe lease at %s, before its cooldown ended at %s",
				l.owner, l.at.Format("15:04:05.000"), l.openUntil.Format("15:04:05.000"))
		}
		if !l.prevUntil.IsZero() && l.at.Before(l.prevUntil) {
			tb.Errorf("%s took a second probe lease in the cooldown ending %s at %s, while the first was live until %s",
				l.owner, l.openUntil.Format("15:04:05.000"), l.at.Format("15:04:05.000"), l.prevUntil.Format("15:04:05.000"))
		}
	}
}

// leasesBetween are the leases taken in (from, to).
func leasesBetween(history []verdict, from, to time.Time) []lease {
	var out []lease
	for _, l := range leases(history) {
		if l.at.After(from) && l.at.Before(to) {
			out = append(out, l)
		}
	}
	return out
}

// lastProbeUntil is the expiry of owner's lease as last written before t.
func lastProbeUntil(history []verdict, owner string, t time.Time) time.Time {
	var until time.Time
	for _, v := range history {
		if v.at.Before(t) && v.probeOwner == owner {
			until = v.probeUntil
		}
	}
	return until
}

// checkPolledAgain waits until every healthy feed has clusterMinPolls
// successful polls begun after from, and prints how many polls per tick the
// cluster made in [from, to].
func checkPolledAgain(tb testing.TB, ctx context.Context, pool *pgxpool.Pool, fig *clusterFigures, from, to time.Time) {
	tb.Helper()
	count := func(until time.Time) map[string]int {
		rows, err := pool.Query(ctx, `SELECT jurisdiction || '/' || feed, count(*) FROM polls
			WHERE status = 'succeeded' AND jurisdiction IN ('h1', 'h2') AND started_at >= $1 AND started_at <= $2 GROUP BY 1`, from, until)
		if err != nil {
			tb.Fatal(err)
		}
		defer rows.Close()
		polls := map[string]int{}
		for rows.Next() {
			var k string
			var n int
			if err := rows.Scan(&k, &n); err != nil {
				tb.Fatal(err)
			}
			polls[k] = n
		}
		return polls
	}
	var polls map[string]int
	if !waitUntil(clusterCeiling, func() bool {
		polls = count(time.Now())
		if len(polls) < 2*clusterFeeds {
			return false
		}
		for _, n := range polls {
			if n < clusterMinPolls {
				return false
			}
		}
		return true
	}) {
		tb.Errorf("not every healthy feed was polled successfully %d times (polls since the start-up: %v)", clusterMinPolls, polls)
	}
	var perTick []float64
	ticks := float64(to.Sub(from)) / float64(clusterInterval)
	for _, n := range count(to) {
		perTick = append(perTick, float64(n)/ticks)
	}
	if len(perTick) > 0 {
		sort.Float64s(perTick)
		fig.line("(1) healthy feeds over %s (%.1f ticks of %s): successful polls per tick per feed %.2f..%.2f",
			to.Sub(from).Round(100*time.Millisecond), ticks, clusterInterval, perTick[0], perTick[len(perTick)-1])
		fig.metric(perTick[len(perTick)/2], "polls/tick")
	}
}

// checkOnePollAtATime checks that no two polls of a feed of jurisdictions
// overlapped, whichever instances ran them: a poll ends before the next one
// begins. Polls that a dead instance left running are left out: the sweep
// that ended them wrote their end.
func checkOnePollAtATime(tb testing.TB, ctx context.Context, pool *pgxpool.Pool, fig *clusterFigures, jurisdictions []string) {
	tb.Helper()
	rows, err := pool.Query(ctx, `SELECT jurisdiction || '/' || feed, id, coalesce(owner, ''), started_at, coalesce(finished_at, now() + interval '100 years')
		FROM polls WHERE jurisdiction = ANY($1) AND coalesce(error, '') NOT LIKE 'interrupted: instance %'
		ORDER BY 1, started_at, id`, jurisdictions)
	if err != nil {
		tb.Fatal(err)
	}
	defer rows.Close()
	type poll struct {
		feed, owner     string
		id              int64
		start, finished time.Time
	}
	var prev poll
	n := 0
	for rows.Next() {
		var p poll
		if err := rows.Scan(&p.feed, &p.id, &p.owner, &p.start, &p.finished); err != nil {
			tb.Fatal(err)
		}
		n++
		if p.feed == prev.feed && p.start.Before(prev.finished) {
			tb.Errorf("%s: poll %d (%s) began at %s while poll %d (%s) ran until %s", p.feed, p.id, p.owner,
				p.start.Format("15:04:05.000"), prev.id, prev.owner, prev.finished.Format("15:04:05.000"))
		}
		prev = p
	}
	if err := rows.Err(); err != nil {
		tb.Fatal(err)
	}
	fig.line("(1) %d polls of the healthy feeds, none overlapping another of its feed", n)
}

// checkClaimGaps checks that every feed's claims are at least half an
// interval apart in the database's clock (the claim refuses within half an
// interval of the last one: several instances firing one tick poll once),
// unless the sweep cleared a dead instance's claim in between.
func checkClaimGaps(tb testing.TB, pool *pgxpool.Pool, fig *clusterFigures) {
	tb.Helper()
	gap := clusterInterval / 2
	total := 0
	for feed, cs := range claims(tb, pool) {
		var last time.Time
		for _, c := range cs {
			if c.claimedAt.IsZero() {
				last = time.Time{}
				continue
			}
			total++
			if !last.IsZero() && c.claimedAt.Sub(last) < gap {
				tb.Errorf("%s: claimed by %s %s after the previous claim, within half an interval (%s): two polls for one tick",
					feed, c.owner, c.claimedAt.Sub(last), gap)
			}
			last = c.claimedAt
		}
	}
	if total == 0 {
		tb.Errorf("no poll claim recorded: the claims check checked nothing")
	}
	fig.line("(1) %d poll claims, each at least %s after the feed's previous one", total, gap)
}

// checkPagesPerPoll checks that each page of the feeds of origins was
// requested once per run of a poll that reached it, whichever instance ran
// it (with one attempt per call, a second request of a page is a second
// fetch). A poll's first run reads from page 0. A poll parked on its dead
// letter and resumed reads again from the page before its checkpoint (the
// proof that the pages it staged are still the layer's), or from page 0
// when it had staged none; and a resumed run that starts over reads from
// page 0 once more. The resumed runs are counted from the log lines of
// every instance that ran in the cluster (ins: the killed and the stopped
// ones too), which must have exited, so that no line is still on its way.
func checkPagesPerPoll(tb testing.TB, ctx context.Context, pool *pgxpool.Pool, fig *clusterFigures, layers []string, origins map[string]*clusterOrigin, ins []*instance) {
	tb.Helper()
	for _, in := range ins {
		if in.alive() {
			tb.Fatalf("checkPagesPerPoll: %s is still running: its log may not hold its last resumed runs", in.name)
		}
	}
	pages := (clusterFeatures + clusterPageSize - 1) / clusterPageSize
	var ratios []float64
	resumed := 0
	for j, o := range origins {
		reqs := o.between(time.Time{}, time.Now())
		for _, l := range layers {
			var polls int
			if err := pool.QueryRow(ctx, `SELECT count(*) FROM polls WHERE jurisdiction = $1 AND feed = $2`, j, l).Scan(&polls); err != nil {
				tb.Fatal(err)
			}
			// from[p]: the runs that began at page p.
			from := make([]int, pages)
			from[0] = polls
			var resumes []string
			for _, in := range ins {
				want := map[string]string{"jurisdiction": j, "feed": l}
				for _, line := range in.logLines("resuming parked poll", want) {
					next, ok := line.attrs["next_page"].(float64)
					if !ok {
						tb.Fatalf("%s logged %q without a next_page: %v", in.name, "resuming parked poll", line.attrs)
					}
					from[min(max(int(next)-1, 0), pages-1)]++
					resumes = append(resumes, fmt.Sprintf("%s at page %d", in.name, int(next)))
				}
				for range in.logLines("restarting the resumed poll from the first page", want) {
					from[0]++
					resumes = append(resumes, in.name+" from page 0")
				}
			}
			resumed += len(resumes)
			runs := 0
			for page := range pages {
				runs += from[page]
				n := 0
				for _, a := range reqs {
					if a.layer == l && a.page == page {
						n++
					}
				}
				if n > runs {
					tb.Errorf("%s/%s page %d requested %d times by %d runs that reached it (%d polls; resumed or restarted: %v): a run fetched it twice",
						j, l, page, n, runs, polls, resumes)
				}
				if polls > 0 {
					ratios = append(ratios, float64(n)/float64(polls))
				}
			}
		}
	}
	if len(ratios) > 0 {
		fig.line("(1) requests per page per poll of the healthy feeds: %.2f..%.2f; %d runs resumed from a dead letter or restarted", slices.Min(ratios), slices.Max(ratios), resumed)
	}
}

// checkOverride checks (6): once each instance has read the override of o
// (its log says so), no instance sends o more than the requests it had on
// their way; what proves that no later request came is every feed of o
// parked and a later tick of each skipped on every instance.
func checkOverride(tb testing.TB, ctx context.Context, pool *pgxpool.Pool, fig *clusterFigures, ins []*instance, o *clusterOrigin, tOv time.Time, layers []string) {
	tb.Helper()
	override := map[string]string{"origin": o.origin, "override": "open"}
	var read time.Time
	if !waitUntil(clusterCeiling, func() bool {
		read = time.Time{}
		for _, in := range ins {
			at, ok := in.firstLog(time.Time{}, "breaker override", override)
			if !ok {
				return false
			}
			read = later(read, at)
		}
		return true
	}) {
		tb.Errorf("not every instance logged the override of %s within %s of `breaker open`", o.origin, clusterCeiling)
		return
	}
	if !waitUntil(clusterCeiling, func() bool {
		var parked int
		_ = pool.QueryRow(ctx, `SELECT count(DISTINCT feed) FROM dead_letter WHERE jurisdiction = 'h2' AND status IN ('pending', 'replaying')`).Scan(&parked)
		if parked < len(layers) {
			return false
		}
		for _, in := range ins {
			for _, l := range layers {
				if _, ok := in.firstLog(read, "tick skipped: the feed is parked; the dead-letter replayer resumes it",
					map[string]string{"jurisdiction": "h2", "feed": l}); !ok {
					return false
				}
			}
		}
		return true
	}) {
		tb.Errorf("the feeds of %s were not all parked, with a later tick of each skipped on every instance, within %s", o.origin, clusterCeiling)
		return
	}
	// Each instance sends an origin at most max_in_flight_per_origin (4,
	// the default) requests at a time.
	allowed := 4 * len(ins)
	late := o.between(read, time.Now())
	last := "none"
	if all := o.between(tOv, time.Now()); len(all) > 0 {
		d := all[len(all)-1].at.Sub(tOv)
		last = "+" + d.Round(time.Millisecond).String()
		fig.metric(ms(d), "stop-after-open-ms")
	} else {
		fig.metric(0, "stop-after-open-ms")
	}
	fig.metric(ms(read.Sub(tOv)), "override-read-ms")
	fig.line("(6) breaker open h2: every instance read it %s after the CLI returned; last request %s; requests after that: %d (allowed in flight: %d)",
		read.Sub(tOv).Round(time.Millisecond), last, len(late), allowed)
	if len(late) > allowed {
		tb.Errorf("%d requests reached %s after every instance had read `breaker open`, more than the %d they may have had in flight",
			len(late), o.origin, allowed)
	}
}

// breakerCLI runs `ingestd breaker ARGS` as its own process, as an operator
// would, and returns when it exited.
func breakerCLI(tb testing.TB, bin, dbURL string, fig *clusterFigures, args ...string) time.Time {
	tb.Helper()
	start := time.Now()
	cmd := exec.Command(bin, append(append([]string{"breaker"}, args...), "-database-url", dbURL)...)
	var stderr strings.Builder
	cmd.Stderr = &stderr // its log lines; stdout is what it tells the operator
	out, err := cmd.Output()
	if err != nil {
		tb.Fatalf("ingestd breaker %v: %v\n%s%s", args, err, out, stderr.String())
	}
	fig.line("`ingestd breaker %s` (%s): %s", args[0], time.Since(start).Round(time.Millisecond),
		strings.ReplaceAll(strings.TrimSpace(string(out)), "\n", "; "))
	return time.Now()
}

// checkBrokenReload sends SIGHUP to in after breaking its config file: it
// must say the reload was rejected, keep running, and keep polling.
func checkBrokenReload(tb testing.TB, fig *clusterFigures, in *instance) {
	tb.Helper()
	if err := os.WriteFile(in.config, []byte("jurisdictions:\n  - id: [broken\n"), 0o644); err != nil {
		tb.Fatal(err)
	}
	mark := len(in.out.String())
	sent := time.Now()
	if err := in.cmd.Process.Signal(syscall.SIGHUP); err != nil {
		tb.Fatal(err)
	}
	since := func() string { return in.out.String()[mark:] }
	if !waitUntil(clusterCeiling, func() bool { return strings.Contains(since(), `"msg":"reload rejected`) }) {
		tb.Errorf("%s did not log a rejected reload within %s of SIGHUP with a broken file:\n%s", in.name, clusterCeiling, tail(since(), 20))
		return
	}
	rejected := time.Since(sent)
	after := len(in.out.String())
	if !waitUntil(clusterCeiling, func() bool { return strings.Contains(in.out.String()[after:], `"msg":"poll succeeded"`) }) {
		tb.Errorf("%s stopped polling after a rejected reload:\n%s", in.name, tail(since(), 20))
	}
	if !in.alive() {
		tb.Errorf("%s exited after SIGHUP with a broken config", in.name)
	}
	fig.line("(7) SIGHUP to %s with a broken file: \"reload rejected\" after %s; still running: %v",
		in.name, rejected.Round(time.Millisecond), in.alive())
	fig.metric(ms(rejected), "sighup-reject-ms")
}

func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}
