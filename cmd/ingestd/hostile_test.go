package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/ingestd/ingestd/breaker"
	"github.com/ingestd/ingestd/internal/hostile"
)

// hostileMaxGenerated caps each generated body of the corpus in this test:
// far above every limit a case sets or meets, so a working limit still
// decides each case, yet a build without the limit reads tens of megabytes
// instead of the gigabytes a real attacker sends (scripts/bench.sh hostile
// sends those).
const hostileMaxGenerated = 64 << 20

// hostileWorkers is how many `ingestd poll` processes run at once.
const hostileWorkers = 4

// The corpus's time limits in this test, raised so that no case depends on
// the machine's speed: a poll's own timeout never decides a case (the
// cases whose purpose is "the limit, the request timeout or the server's
// answer ends the poll, not its timeout" check that it did not say "poll
// timeout"), and a request is given a minute unless ending it is the
// case's point (the slowloris cases' request_timeout). On a loaded machine
// a good layer of 207 loading at once, or a 16 MiB bomb read to its limit,
// may take many seconds; that is a figure for scripts/bench.sh hostile, not
// a failure.
const (
	hostileTestTimeout        = 2 * time.Minute
	hostileTestRequestTimeout = time.Minute
)

// hostileOutcome is what one `ingestd poll` of a case did.
type hostileOutcome struct {
	code     int // exit status; -1 when it did not exit by itself
	output   string
	duration time.Duration
}

// TestHostileCorpus is the daemon against hostile servers: the real binary
// against every case of the hostile corpus (internal/hostile.Cases, with
// the static bodies of testdata/hostile). Each feed first loads a good
// layer; then the same URL turns hostile and the feed is polled once more.
// For every case: no panic, exit status 0 or 1; a loadable case loaded
// (with its repairs and counts), any other failed naming the feed and its
// cause and left the previous snapshot's digest as it was; no secret in the
// output or the tables; no poll left running. Then the content origin's
// breaker must still be closed: content errors are the feed's. A case
// marked KnownDefect that fails is logged as skipped ("known defect: …"),
// not failed: its expectation is the correct behaviour, still to come.
func TestHostileCorpus(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("polls every case of the hostile corpus with the real binary")
	}
	heavy(t, heavyHostile)
	// The run of every feed, then the workers' polls.
	dbURL, pool := testDBFor(t, max(ingestdConns, hostileWorkers*pollConns))
	bin := buildIngestd(t)
	ctx := t.Context()

	cases := hostile.Cases()
	if re := os.Getenv("INGESTD_HOSTILE_CASES"); re != "" {
		// A subset, while working on one class: INGESTD_HOSTILE_CASES='^gc_'.
		match, err := regexp.Compile(re)
		if err != nil {
			t.Fatalf("INGESTD_HOSTILE_CASES: %v", err)
		}
		cases = slices.DeleteFunc(cases, func(c hostile.Case) bool { return !match.MatchString(c.Name) })
	}
	// The good layers load with generous limits on time: every case's
	// timeouts raised to the test's. The hostile polls keep a request
	// timeout that is the case's point.
	good := slices.Clone(cases)
	for i := range cases {
		good[i].Timeout = max(cases[i].Timeout, hostileTestTimeout)
		good[i].RequestTimeout = max(cases[i].RequestTimeout, hostileTestRequestTimeout)
		cases[i].Timeout = good[i].Timeout
		if cases[i].RequestTimeout == 0 {
			cases[i].RequestTimeout = hostileTestRequestTimeout
		}
	}
	h, err := hostile.NewServer("../../testdata/hostile", cases)
	if err != nil {
		t.Fatal(err)
	}
	h.MaxGenerated = hostileMaxGenerated
	origins := map[string]string{}
	for _, o := range hostile.Origins(cases) {
		ts := httptest.NewServer(h) // 127.0.0.1:0: loopback only
		t.Cleanup(ts.Close)
		origins[o] = ts.URL
	}
	h.SetPeer(origins[hostile.OriginPeer])

	// The good layers are loaded by one `ingestd run` with the corpus's
	// config, catching up on every feed (as scripts/bench.sh hostile does);
	// each hostile poll is an `ingestd poll` of a config with only its
	// case's feed (the same YAML, cut down by HostileConfig). A one-off poll
	// registers every feed of its config in feed_status: 414 polls each
	// upserting all 207 rows, under each other's row locks, took half the
	// test's time and tested nothing about the cases.
	dir := t.TempDir()
	opt := hostile.ConfigOptions{Origins: origins}
	yaml, err := hostile.Config(good, opt)
	if err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(dir, "hostile.yaml")
	if err := os.WriteFile(cfg, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	caseCfg := make(map[string]string, len(cases))
	for i := range cases {
		yaml, err := hostile.Config(cases[i:i+1], opt)
		if err != nil {
			t.Fatal(err)
		}
		caseCfg[cases[i].Name] = filepath.Join(dir, cases[i].Name+".yaml")
		if err := os.WriteFile(caseCfg[cases[i].Name], []byte(yaml), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if code, out := runBin(t, bin, "migrate", "-database-url", dbURL); code != 0 {
		t.Fatalf("migrate: exit %d\n%s", code, out)
	}
	poll := func(c *hostile.Case) hostileOutcome {
		return pollOnce(ctx, bin, caseCfg[c.Name], dbURL, c.Feed(), c.Timeout)
	}

	// The good snapshot of every feed, and its digest.
	loadGoodLayers(t, bin, cfg, dbURL, pool, len(cases))
	before := map[string]string{}
	for i := range cases {
		c := &cases[i]
		var status string
		var lastErr string
		err := pool.QueryRow(ctx, `SELECT status, coalesce(error, '') FROM polls WHERE jurisdiction = $1 AND feed = $2 ORDER BY id DESC LIMIT 1`,
			c.Jurisdiction(), c.Name).Scan(&status, &lastErr)
		if err != nil || status != "succeeded" {
			t.Fatalf("%s: the good layer did not load: poll %s %s (%v)", c.Feed(), status, lastErr, err)
		}
		before[c.Name] = featureDigest(t, pool, c)
	}

	h.SetHostile(true)
	// The content origin's cases last and one at a time, its healthy feed
	// after the rest: a breaker opened by a content error shows there.
	contentOrigin := func(c *hostile.Case) bool { return c.OriginName() == hostile.OriginContent }
	bad := forEachCase(cases, func(c *hostile.Case) bool { return !contentOrigin(c) }, poll)
	for i := range cases {
		if c := &cases[i]; contentOrigin(c) && !c.Load {
			bad[c.Name] = poll(c)
		}
	}
	for i := range cases {
		if c := &cases[i]; contentOrigin(c) && c.Load {
			bad[c.Name] = poll(c)
		}
	}

	var rows []string
	passed, skipped := 0, 0
	var classes []string
	perClass := map[string][2]int{} // class → passed, total
	for i := range cases {
		c := &cases[i]
		o := bad[c.Name]
		problems := checkCase(t, pool, c, o, before[c.Name])
		verdict := "pass"
		switch {
		case len(problems) > 0 && c.KnownDefect != "":
			// The expectation stays the correct behaviour; the case
			// passes once the defect is fixed.
			verdict = "SKIP"
			skipped++
			t.Logf("%s (%s): skipped: known defect: %s: %s", c.Feed(), c.Class, c.KnownDefect, strings.Join(problems, "; "))
		case len(problems) > 0:
			verdict = "FAIL"
			t.Errorf("%s (%s): %s\n  output:\n%s", c.Feed(), c.Class, strings.Join(problems, "; "), indent(clip(tail(o.output, 12))))
		default:
			passed++
		}
		pc, seen := perClass[c.Class]
		if !seen {
			classes = append(classes, c.Class)
		}
		pc[1]++
		if len(problems) == 0 {
			pc[0]++
		}
		perClass[c.Class] = pc
		want := "load"
		if !c.Load {
			want = "fail"
		}
		rows = append(rows, fmt.Sprintf("%-4s %-30s %-4s exit=%-2d %5.1fs %s | %s", verdict, c.Name, want, o.code,
			o.duration.Seconds(), strings.Join(problems, "; "), cause(o.output)))
	}

	var running int
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM polls WHERE status = 'running'`).Scan(&running); err != nil {
		t.Fatal(err)
	}
	if running != 0 {
		t.Errorf("%d polls left running", running)
	}
	contentBreaker := "unused"
	if u, ok := origins[hostile.OriginContent]; ok {
		contentBreaker = breakerStateOf(t, pool, u)
	}
	if contentBreaker == "open" || contentBreaker == "half-open" {
		t.Errorf("the content origin's breaker is %s: a content error was charged to the origin", contentBreaker)
	}

	fmt.Printf("--- TestHostileCorpus: %d of %d cases as expected, %d skipped (known defects); polls left running: %d; content origin breaker: %s\n",
		passed, len(cases), skipped, running, contentBreaker)
	for _, cl := range classes {
		fmt.Printf("    %3d/%-3d %s\n", perClass[cl][0], perClass[cl][1], cl)
	}
	for _, r := range rows {
		fmt.Println("   ", r)
	}
}

// loadGoodLayers runs `ingestd run` with the corpus config cfg until each
// of its feeds has been polled once (catch-up on start) and no poll
// runs, then stops it with SIGTERM, which it must obey.
func loadGoodLayers(t *testing.T, bin, cfg, dbURL string, pool *pgxpool.Pool, feeds int) {
	t.Helper()
	ctx := t.Context()
	out := &syncBuffer{}
	cmd := exec.CommandContext(ctx, bin, "run", "-config", cfg, "-database-url", ingestdURL(dbURL, ingestdConns), "-migrate=false", "-metrics-addr", "off")
	cmd.Stdout, cmd.Stderr, cmd.Env = out, out, append(os.Environ(), hostile.Env()...)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	// A ceiling that only catches a hang: 207 feeds at once on a loaded
	// machine take what they take.
	const ceiling = 5 * time.Minute
	deadline := time.Now().Add(ceiling)
	for {
		var done, running int
		if err := pool.QueryRow(ctx, `SELECT count(DISTINCT (jurisdiction, feed)) FILTER (WHERE status <> 'running'),
			count(*) FILTER (WHERE status = 'running') FROM polls`).Scan(&done, &running); err != nil {
			t.Fatal(err)
		}
		if done >= feeds && running == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("ingestd run polled %d of %d feeds in %s (%d running)\n%s", done, feeds, ceiling, running, tail(out.String(), 20))
		}
		select {
		case err := <-exited:
			t.Fatalf("ingestd run exited (%v) after polling %d of %d feeds\n%s", err, done, feeds, tail(out.String(), 20))
		case <-time.After(50 * time.Millisecond): // polling the polls table: the state it waits for
		}
	}
	_ = cmd.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-exited:
		if err != nil {
			t.Fatalf("ingestd run after SIGTERM: %v\n%s", err, tail(out.String(), 20))
		}
	case <-time.After(clusterCeiling): // a hang bound, not a speed
		t.Fatalf("ingestd run did not stop after SIGTERM\n%s", tail(out.String(), 20))
	}
}

// checkCase returns what case c's hostile poll o did wrong.
func checkCase(t *testing.T, pool *pgxpool.Pool, c *hostile.Case, o hostileOutcome, before string) []string {
	t.Helper()
	var problems []string
	bad := func(format string, args ...any) { problems = append(problems, fmt.Sprintf(format, args...)) }
	switch {
	case o.code == -1:
		bad("did not exit by itself within its timeout (killed)")
	case o.code != 0 && o.code != 1:
		bad("exit status %d", o.code)
	}
	if strings.Contains(o.output, "panic:") || strings.Contains(o.output, "goroutine ") {
		bad("panicked")
	}
	for _, p := range c.NoWrite {
		if _, err := os.Lstat(p); err == nil {
			bad("the poll wrote %s (a zip slip)", p)
		}
	}
	if c.Kind == hostile.File && strings.Contains(o.output, "ingestd-file-") {
		// The kind's temporary files are its own business.
		bad("a temporary file's path in the output")
	}
	if len(o.output) > 64<<10 {
		bad("%d bytes of output: error and log texts must be truncated", len(o.output))
	}
	if c.Within > 0 {
		// The case's bound on wall time (the Case's Within) stands for an
		// outcome: its limit, its request timeout or the server's answer
		// ended the poll, long before the poll's own timeout would have.
		// That is what is checked, whatever the machine's speed; the time
		// it took is in the table below.
		if strings.Contains(o.output, "poll timeout") {
			bad("ended by the poll's own timeout (%s), not by what the case is about", c.Timeout)
		}
		if c.RequestTimeout > 0 && c.RequestTimeout < hostileTestRequestTimeout &&
			!strings.Contains(o.output, "attempt timed out after "+c.RequestTimeout.String()) {
			bad("not ended by its request timeout (%s): %s", c.RequestTimeout, clip(firstErrorLine(o.output)))
		}
	}
	for _, s := range c.Secrets {
		if strings.Contains(o.output, s) {
			bad("secret %q in the output", s)
		}
		var n int
		err := pool.QueryRow(context.Background(), `
			SELECT (SELECT count(*) FROM polls WHERE strpos(coalesce(error, '') || coalesce(url, ''), $1) > 0)
			     + (SELECT count(*) FROM feed_status WHERE strpos(coalesce(last_error, '') || coalesce(url, ''), $1) > 0)
			     + (SELECT count(*) FROM features WHERE jurisdiction = $2 AND feed = $3
			          AND strpos(lower(feature_id || coalesce(properties::text, '')), lower($1)) > 0)`, s, c.Jurisdiction(), c.Name).Scan(&n)
		if err != nil {
			t.Fatal(err)
		}
		if n > 0 {
			bad("secret %q in polls, feed_status or the feed's features", s)
		}
	}
	var status string
	var invalid *int
	err := pool.QueryRow(context.Background(), `
		SELECT status, invalid_geometries FROM polls WHERE jurisdiction = $1 AND feed = $2 ORDER BY id DESC LIMIT 1`,
		c.Jurisdiction(), c.Name).Scan(&status, &invalid)
	if err != nil {
		t.Fatalf("%s: last poll: %v", c.Feed(), err)
	}
	if status == "running" {
		bad("poll left running")
	}
	after := featureDigest(t, pool, c)
	if c.Load {
		if o.code != 0 {
			bad("want loaded, got exit %d: %s", o.code, clip(firstErrorLine(o.output)))
			return problems
		}
		if n := featureCount(t, pool, c); n != c.Features {
			bad("loaded %d features, want %d", n, c.Features)
		}
		if c.Contains != "" {
			var n int
			err := pool.QueryRow(context.Background(), `
				SELECT count(*) FROM features WHERE jurisdiction = $1 AND feed = $2 AND properties @> $3::jsonb`,
				c.Jurisdiction(), c.Name, c.Contains).Scan(&n)
			if err != nil {
				t.Fatal(err)
			}
			if n == 0 {
				bad("no stored feature's properties contain %s", c.Contains)
			}
		}
		if c.Repaired {
			var n int
			err := pool.QueryRow(context.Background(), `
				SELECT count(*) FROM features WHERE jurisdiction = $1 AND feed = $2
				AND strpos(feature_id || coalesce(properties::text, ''), chr(65533)) > 0`, c.Jurisdiction(), c.Name).Scan(&n)
			if err != nil {
				t.Fatal(err)
			}
			if n == 0 {
				bad("no stored id or property holds U+FFFD: the bad text was not repaired")
			}
		}
		if c.InvalidGeometries > 0 && (invalid == nil || *invalid < c.InvalidGeometries) {
			got := 0
			if invalid != nil {
				got = *invalid
			}
			bad("counted %d invalid geometries, want at least %d", got, c.InvalidGeometries)
		}
		return problems
	}
	if o.code == 0 {
		bad("want a failure, but it loaded (%d features)", featureCount(t, pool, c))
	}
	if after != before {
		bad("the previous snapshot changed")
	}
	if status == "succeeded" {
		bad("the last poll succeeded")
	}
	if c.FeedsFault {
		var parked int
		if err := pool.QueryRow(context.Background(), `SELECT count(*) FROM dead_letter WHERE jurisdiction = $1 AND feed = $2`,
			c.Jurisdiction(), c.Name).Scan(&parked); err != nil {
			t.Fatalf("%s: dead letters: %v", c.Feed(), err)
		}
		if parked > 0 {
			bad("parked for a replay: the answer is the feed's fault, which a replay meets again")
		}
	}
	if o.code == 1 {
		if !strings.Contains(o.output, c.Feed()) {
			bad("the error does not name the feed %s", c.Feed())
		}
		// The cause is looked for without the URLs and the feed's name,
		// which would match "redirect" in redirect_loop's own URL.
		msg := strings.ReplaceAll(urlPattern.ReplaceAllString(o.output, "URL"), c.Name, "CASE")
		if len(c.Errors) > 0 && !containsAny(msg, c.Errors) {
			bad("the error names none of %q: %s", c.Errors, clip(firstErrorLine(msg)))
		}
	}
	return problems
}

// forEachCase polls the cases that match in hostileWorkers processes at a
// time and returns the outcomes by case name.
func forEachCase(cases []hostile.Case, match func(*hostile.Case) bool, poll func(*hostile.Case) hostileOutcome) map[string]hostileOutcome {
	out := map[string]hostileOutcome{}
	var mu sync.Mutex
	work := make(chan *hostile.Case)
	var wg sync.WaitGroup
	for range hostileWorkers {
		wg.Go(func() {
			for c := range work {
				o := poll(c)
				mu.Lock()
				out[c.Name] = o
				mu.Unlock()
			}
		})
	}
	for i := range cases {
		if match(&cases[i]) {
			work <- &cases[i]
		}
	}
	close(work)
	wg.Wait()
	return out
}

// pollOnce runs `ingestd poll key` and kills it if it outlives the feed's
// timeout by a wide margin: a hung poll is a finding, not a hung test.
func pollOnce(ctx context.Context, bin, cfg, dbURL, key string, timeout time.Duration) hostileOutcome {
	if timeout <= 0 {
		timeout = 20 * time.Second
	}
	ctx, cancel := context.WithTimeout(ctx, timeout+30*time.Second)
	defer cancel()
	var out bytes.Buffer
	cmd := exec.CommandContext(ctx, bin, "poll", "-config", cfg, "-database-url", ingestdURL(dbURL, pollConns), "-migrate=false", key)
	cmd.Stdout, cmd.Stderr, cmd.Env = &out, &out, append(os.Environ(), hostile.Env()...)
	start := time.Now()
	err := cmd.Run()
	o := hostileOutcome{output: out.String(), duration: time.Since(start)}
	var ee *exec.ExitError
	switch {
	case err == nil:
	case ctx.Err() != nil:
		o.code = -1
	case errors.As(err, &ee):
		o.code = ee.ExitCode()
	default:
		o.code = -1
		o.output += "\n" + err.Error()
	}
	return o
}

// featureDigest sums up a feed's rows: ids and content hashes.
func featureDigest(t *testing.T, pool *pgxpool.Pool, c *hostile.Case) string {
	t.Helper()
	var d *string
	err := pool.QueryRow(context.Background(), `
		SELECT md5(string_agg(feature_id || ':' || encode(content_hash, 'hex'), ',' ORDER BY feature_id))
		FROM features WHERE jurisdiction = $1 AND feed = $2`, c.Jurisdiction(), c.Name).Scan(&d)
	if err != nil {
		t.Fatalf("%s: digest: %v", c.Feed(), err)
	}
	if d == nil {
		return "empty"
	}
	return *d
}

func featureCount(t *testing.T, pool *pgxpool.Pool, c *hostile.Case) int {
	t.Helper()
	var n int
	if err := pool.QueryRow(context.Background(), `SELECT count(*) FROM features WHERE jurisdiction = $1 AND feed = $2`,
		c.Jurisdiction(), c.Name).Scan(&n); err != nil {
		t.Fatalf("%s: count: %v", c.Feed(), err)
	}
	return n
}

// breakerStateOf is the shared breaker state of the origin of baseURL
// ("closed" when it has no row).
func breakerStateOf(t *testing.T, pool *pgxpool.Pool, baseURL string) string {
	t.Helper()
	origin, err := breaker.ParseOrigin(baseURL)
	if err != nil {
		t.Fatal(err)
	}
	var state string
	err = pool.QueryRow(context.Background(), `SELECT state FROM breaker_state WHERE origin = $1`, origin).Scan(&state)
	if err != nil {
		return "closed"
	}
	return state
}

func containsAny(s string, subs []string) bool {
	for _, sub := range subs {
		if strings.Contains(s, sub) {
			return true
		}
	}
	return false
}

// urlPattern matches the URLs in an error message.
var urlPattern = regexp.MustCompile(`https?://[^\s()]+`)

// cause is the end of the error chain in out, short: what the table shows.
func cause(out string) string {
	line := urlPattern.ReplaceAllString(firstErrorLine(out), "URL")
	if !strings.HasPrefix(line, "ingestd:") {
		return ""
	}
	for _, sep := range []string{"last failure: ", "failed: "} {
		if i := strings.LastIndex(line, sep); i >= 0 {
			line = line[i+len(sep):]
			break
		}
	}
	if len(line) > 160 {
		line = line[:160] + "…"
	}
	return line
}

// firstErrorLine is the line of out that says why the poll failed.
func firstErrorLine(out string) string {
	lines := strings.Split(out, "\n")
	sort.SliceStable(lines, func(i, j int) bool {
		return strings.HasPrefix(lines[i], "ingestd:") && !strings.HasPrefix(lines[j], "ingestd:")
	})
	for _, l := range lines {
		if strings.TrimSpace(l) != "" {
			return l
		}
	}
	return ""
}

// clip shortens each line of s to 500 bytes: a failing case may log a 20 MB line.
func clip(s string) string {
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		if len(l) > 500 {
			lines[i] = l[:500] + fmt.Sprintf("… (%d bytes)", len(l))
		}
	}
	return strings.Join(lines, "\n")
}

func indent(s string) string {
	return "    " + strings.ReplaceAll(s, "\n", "\n    ")
}
