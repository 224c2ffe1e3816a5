package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/ingestd/ingestd/breaker"
	"github.com/ingestd/ingestd/internal/layertest"
	"github.com/ingestd/ingestd/wfs/wfstest"
)

// Helpers of TestCluster: fixture origins that record every request they
// receive, ingestd processes and their JSON logs, the history of
// breaker_state and of the poll claims (kept by triggers the test adds to
// its own database), and a /metrics reader.

// How a clusterOrigin answers.
const (
	serveNormally  int32 = iota
	serveDown            // every request fails: a 503, or a 200 cut short by a reset
	serveHangFirst       // the first request hangs until its client goes away; the rest are served
)

// arrival is one request as the origin received it.
type arrival struct {
	at    time.Time
	layer string
	page  int // startIndex / count; 0 without paging
}

// clusterOrigin is one fixture origin on its own loopback listener. It sits
// in front of a wfstest.Server so that it can fail any request (capabilities
// included) and record the arrival time of each, which the assertions about
// "no request before open_until" need.
type clusterOrigin struct {
	srv    *wfstest.Server
	ts     *httptest.Server
	origin string // as breaker keys it: scheme://host:port

	mode   atomic.Int32
	hanged atomic.Bool
	hung   chan struct{} // closed when the hanging request arrived

	mu       sync.Mutex
	arrivals []arrival
}

func newClusterOrigin(t testing.TB, layers []string, features int) *clusterOrigin {
	t.Helper()
	o := &clusterOrigin{srv: wfstest.New(), hung: make(chan struct{})}
	for _, l := range layers {
		o.srv.AddLayer(l, layertest.Parcels{N: features})
	}
	o.ts = httptest.NewServer(o) // 127.0.0.1:0: loopback only
	t.Cleanup(o.ts.Close)
	var err error
	if o.origin, err = breaker.ParseOrigin(o.ts.URL); err != nil {
		t.Fatal(err)
	}
	return o
}

func (o *clusterOrigin) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	a := arrival{at: time.Now(), layer: strings.TrimPrefix(q.Get("typeNames")+q.Get("typeName"), "ingestd:")}
	if n, _ := strconv.Atoi(q.Get("count")); n > 0 {
		start, _ := strconv.Atoi(q.Get("startIndex"))
		a.page = start / n
	}
	if strings.EqualFold(q.Get("request"), "DescribeFeatureType") {
		a.page = -1 // not a page: the layer's schema (typed layers)
	}
	o.mu.Lock()
	o.arrivals = append(o.arrivals, a)
	n := len(o.arrivals)
	o.mu.Unlock()

	switch o.mode.Load() {
	case serveDown:
		if n%2 == 0 {
			http.Error(w, "down for maintenance", http.StatusServiceUnavailable)
			return
		}
		resetAfterHeaders(w)
		return
	case serveHangFirst:
		if o.hanged.CompareAndSwap(false, true) {
			close(o.hung)
			<-r.Context().Done() // the client's process was killed: its connection closes
			return
		}
	}
	o.srv.ServeHTTP(w, r)
}

// resetAfterHeaders answers 200 with a body cut short by a TCP reset. A reset
// before any byte of the response would let net/http's transport resend the
// GET on a fresh connection, and one logical call would then reach the
// origin twice, blurring the probe count; after the headers it cannot.
func resetAfterHeaders(w http.ResponseWriter) {
	conn, bufrw, err := w.(http.Hijacker).Hijack()
	if err != nil {
		return
	}
	defer conn.Close()
	fmt.Fprint(bufrw, "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 4096\r\n\r\n{\"type\":\"FeatureCollection\",\"features\":[")
	_ = bufrw.Flush()
	if tc, ok := conn.(*net.TCPConn); ok {
		_ = tc.SetLinger(0)
	}
}

// between returns the requests that arrived in (from, to].
func (o *clusterOrigin) between(from, to time.Time) []arrival {
	o.mu.Lock()
	defer o.mu.Unlock()
	var out []arrival
	for _, a := range o.arrivals {
		if a.at.After(from) && !a.at.After(to) {
			out = append(out, a)
		}
	}
	return out
}

func (o *clusterOrigin) count() int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return len(o.arrivals)
}

// instance is one `ingestd run` process.
type instance struct {
	name    string
	config  string
	metrics string // host:port of /metrics, once metricsAddr has read it
	cmd     *exec.Cmd
	out     *syncBuffer
	exited  chan struct{}
	id      string // host:pid, as breaker_state.probe_owner names it
}

// startInstance starts `ingestd run` (with extra flags, and a pool of
// ingestdConns) and waits until it says it is running. The process is killed when the test ends, whatever
// happened.
func startInstance(t testing.TB, bin, name, config, dbURL string, extra ...string) *instance {
	t.Helper()
	in := &instance{name: name, config: config, out: &syncBuffer{}, exited: make(chan struct{})}
	in.cmd = exec.Command(bin, append([]string{"run", "-config", config, "-database-url", ingestdURL(dbURL, ingestdConns), "-metrics-addr", "127.0.0.1:0"}, extra...)...)
	in.cmd.Stdout, in.cmd.Stderr = in.out, in.out
	if err := in.cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", name, err)
	}
	host, _ := os.Hostname()
	in.id = fmt.Sprintf("%s:%d", host, in.cmd.Process.Pid)
	go func() {
		_ = in.cmd.Wait()
		close(in.exited)
	}()
	t.Cleanup(func() {
		_ = in.cmd.Process.Kill()
		<-in.exited
		if t.Failed() {
			t.Logf("%s (%s) output:\n%s", name, in.id, tail(in.out.String(), 60))
		}
	})
	return in
}

// waitRunning waits for the process's "ingestd running" log line.
func (in *instance) waitRunning(t testing.TB, within time.Duration) {
	t.Helper()
	if !waitUntil(within, func() bool { return strings.Contains(in.out.String(), `"msg":"ingestd running"`) }) {
		t.Fatalf("%s not running after %s:\n%s", in.name, within, tail(in.out.String(), 30))
	}
}

func (in *instance) alive() bool {
	select {
	case <-in.exited:
		return false
	default:
		return true
	}
}

// stop sends SIGTERM and returns how long the process took to exit.
func (in *instance) stop(t testing.TB, within time.Duration) time.Duration {
	t.Helper()
	start := time.Now()
	_ = in.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-in.exited:
		return time.Since(start)
	case <-time.After(within):
		t.Fatalf("%s still running %s after SIGTERM", in.name, within)
		return 0
	}
}

// scrape returns the instance's /metrics as text.
func (in *instance) scrape(t testing.TB) string {
	t.Helper()
	c := &http.Client{Timeout: clusterCeiling} // a hang bound, not a speed
	resp, err := c.Get("http://" + in.metricsAddr(t) + "/metrics")
	if err != nil {
		t.Fatalf("scrape %s: %v", in.name, err)
	}
	defer resp.Body.Close()
	var b strings.Builder
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() {
		b.WriteString(sc.Text())
		b.WriteByte('\n')
	}
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("scrape %s: %s", in.name, resp.Status)
	}
	return b.String()
}

// metricSum adds up the samples of name whose labels include every pair of
// want, and reports whether there was any. The text exposition format puts
// one sample per line: name{a="x",b="y"} value.
func metricSum(exposition, name string, want map[string]string) (float64, bool) {
	var sum float64
	found := false
	for line := range strings.Lines(exposition) {
		if !strings.HasPrefix(line, name+"{") {
			continue
		}
		labels, value, ok := strings.Cut(strings.TrimPrefix(line, name+"{"), "} ")
		if !ok {
			continue
		}
		match := true
		for k, v := range want {
			if !strings.Contains(","+labels+",", ","+k+"="+strconv.Quote(v)+",") {
				match = false
				break
			}
		}
		if !match {
			continue
		}
		f, err := strconv.ParseFloat(strings.TrimSpace(value), 64)
		if err != nil {
			continue
		}
		sum += f
		found = true
	}
	return sum, found
}

// metricsAddr is where the instance serves /metrics: it listens on
// 127.0.0.1:0 and logs the address the kernel gave it. (A port picked free
// beforehand can be taken by any connection before the daemon binds it.)
func (in *instance) metricsAddr(t testing.TB) string {
	t.Helper()
	if in.metrics == "" {
		in.metrics = servingAddr(t, in.name, in.out)
	}
	return in.metrics
}

// servingAddr waits for a daemon's "serving metrics" log line in out and
// returns its address.
func servingAddr(t testing.TB, name string, out *syncBuffer) string {
	t.Helper()
	var addr string
	found := waitUntil(clusterCeiling, func() bool {
		for line := range strings.Lines(out.String()) {
			if !strings.Contains(line, `"msg":"serving metrics"`) {
				continue
			}
			var rec struct{ Addr string }
			if json.Unmarshal([]byte(line), &rec) == nil && rec.Addr != "" {
				addr = rec.Addr
				return true
			}
		}
		return false
	})
	if !found {
		t.Fatalf("%s never logged its metrics address:\n%s", name, tail(out.String(), 30))
	}
	return addr
}

// waitUntil polls cond every 20 ms until it holds or within has passed.
// cond reads observable state (a table, a log, /metrics); within is a
// ceiling that only bounds a hang, never a speed the test expects.
func waitUntil(within time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(within)
	for {
		if cond() {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(20 * time.Millisecond) // the polling interval of cond, not a wait for an event
	}
}

func tail(s string, lines int) string {
	all := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(all) > lines {
		all = all[len(all)-lines:]
	}
	return strings.Join(all, "\n")
}

// clusterInstrumentSQL adds to the test's own database a record of every
// version of breaker_state and of every poll claim, written by triggers in
// the transaction that made the change: the complete history, in the
// database's clock, where sampling the rows would miss versions on a slow
// machine. at is clock_timestamp() inside the writing transaction, so an
// event's at precedes anything its writer did after the commit (a probe is
// sent after its lease's at; a re-open is written after its probe failed).
const clusterInstrumentSQL = `
CREATE TABLE test_breaker_history AS SELECT clock_timestamp() AS at, b.* FROM breaker_state b WITH NO DATA;
CREATE FUNCTION test_breaker_history() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
	INSERT INTO test_breaker_history SELECT clock_timestamp(), NEW.*;
	RETURN NULL;
END $$;
CREATE TRIGGER test_breaker_history AFTER INSERT OR UPDATE ON breaker_state
	FOR EACH ROW EXECUTE FUNCTION test_breaker_history();

CREATE TABLE test_claims (at timestamptz, jurisdiction text, feed text, owner text, claimed_at timestamptz);
CREATE FUNCTION test_claims() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
	IF NEW.poll_claimed_at IS DISTINCT FROM OLD.poll_claimed_at THEN
		INSERT INTO test_claims VALUES (clock_timestamp(), NEW.jurisdiction, NEW.feed, NEW.poll_owner, NEW.poll_claimed_at);
	END IF;
	RETURN NULL;
END $$;
CREATE TRIGGER test_claims AFTER UPDATE OF poll_claimed_at ON feed_status
	FOR EACH ROW EXECUTE FUNCTION test_claims();
`

// verdict is one version of an origin's breaker_state row.
type verdict struct {
	at         time.Time // database clock_timestamp() of the write
	state      string
	openedAt   time.Time
	openUntil  time.Time
	opens      int
	probeOwner string
	probeUntil time.Time
	override   string
	version    int64
}

// breakerHistory returns every version of origin's row, in order.
func breakerHistory(t testing.TB, pool *pgxpool.Pool, origin string) []verdict {
	t.Helper()
	rows, err := pool.Query(context.Background(), `SELECT at, state, coalesce(opened_at, 'epoch'), coalesce(open_until, 'epoch'),
		consecutive_opens, coalesce(probe_owner, ''), coalesce(probe_until, 'epoch'), override, version
		FROM test_breaker_history WHERE origin = $1 ORDER BY at, version`, origin)
	if err != nil {
		t.Fatalf("breaker history: %v", err)
	}
	defer rows.Close()
	var out []verdict
	for rows.Next() {
		var v verdict
		if err := rows.Scan(&v.at, &v.state, &v.openedAt, &v.openUntil, &v.opens, &v.probeOwner, &v.probeUntil, &v.override, &v.version); err != nil {
			t.Fatalf("breaker history: %v", err)
		}
		out = append(out, v)
	}
	if err := rows.Err(); err != nil {
		t.Fatalf("breaker history: %v", err)
	}
	return out
}

// lease is one taking of an origin's probe lease: the one request of a
// cooldown that the cluster lets through.
type lease struct {
	at        time.Time // when it was taken (database clock)
	owner     string
	openUntil time.Time // the end of the cooldown it probes
	// prevUntil is the expiry of the lease that was live in the same
	// cooldown when this one was taken (zero: none was taken).
	prevUntil time.Time
	// decided is when the lease's probe was decided (the next version that
	// is not a renewal of it), zero while undecided.
	decided time.Time
}

// leases lists the probe leases in history: versions that name a probe
// owner the version before did not (renewals only move probe_until).
func leases(history []verdict) []lease {
	var out []lease
	var prev verdict
	for i, v := range history {
		taken := v.probeOwner != "" && (prev.probeOwner != v.probeOwner || prev.state != "half-open")
		if taken {
			l := lease{at: v.at, owner: v.probeOwner, openUntil: v.openUntil}
			if n := len(out); n > 0 && out[n-1].openUntil.Equal(v.openUntil) {
				l.prevUntil = prev.probeUntil
			}
			for _, w := range history[i+1:] {
				if w.probeOwner != v.probeOwner || w.state != "half-open" {
					l.decided = w.at
					break
				}
			}
			out = append(out, l)
		}
		prev = v
	}
	return out
}

// claim is one change of a feed's poll_claimed_at.
type claim struct {
	feed      string
	owner     string
	claimedAt time.Time // zero: the claim was cleared (a dead instance's)
}

// claims returns every change of poll_claimed_at, per feed in order.
func claims(t testing.TB, pool *pgxpool.Pool) map[string][]claim {
	t.Helper()
	rows, err := pool.Query(context.Background(), `SELECT jurisdiction || '/' || feed, coalesce(owner, ''), coalesce(claimed_at, 'epoch')
		FROM test_claims ORDER BY at`)
	if err != nil {
		t.Fatalf("claims: %v", err)
	}
	defer rows.Close()
	out := map[string][]claim{}
	for rows.Next() {
		var c claim
		if err := rows.Scan(&c.feed, &c.owner, &c.claimedAt); err != nil {
			t.Fatalf("claims: %v", err)
		}
		if c.claimedAt.Equal(time.Unix(0, 0)) {
			c.claimedAt = time.Time{}
		}
		out[c.feed] = append(out[c.feed], c)
	}
	if err := rows.Err(); err != nil {
		t.Fatalf("claims: %v", err)
	}
	return out
}

// logLine is one JSON log line of an instance: its time and attributes.
type logLine struct {
	at    time.Time
	attrs map[string]any
}

// parseLog returns the JSON log lines of text that carry a time.
func parseLog(text string) []logLine {
	var out []logLine
	for line := range strings.Lines(text) {
		var attrs map[string]any
		if !strings.HasPrefix(line, "{") || json.Unmarshal([]byte(line), &attrs) != nil {
			continue
		}
		at, err := time.Parse(time.RFC3339Nano, fmt.Sprint(attrs["time"]))
		if err != nil {
			continue
		}
		out = append(out, logLine{at: at, attrs: attrs})
	}
	return out
}

// has reports whether the line's attributes include every pair of want.
func (l logLine) has(want map[string]string) bool {
	for k, v := range want {
		if fmt.Sprint(l.attrs[k]) != v {
			return false
		}
	}
	return true
}

// logLines returns the lines of an instance's output with message msg whose
// attributes include every pair of want, in order.
func (in *instance) logLines(msg string, want map[string]string) []logLine {
	var out []logLine
	for _, l := range parseLog(in.out.String()) {
		if l.attrs["msg"] == msg && l.has(want) {
			out = append(out, l)
		}
	}
	return out
}

// firstLog is the time of the first line of logLines(msg, want) at or after
// since, and whether there is one.
func (in *instance) firstLog(since time.Time, msg string, want map[string]string) (time.Time, bool) {
	for _, l := range in.logLines(msg, want) {
		if !l.at.Before(since) {
			return l.at, true
		}
	}
	return time.Time{}, false
}
