package main

import (
	"bufio"
	"context"
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
	"github.com/ingestd/ingestd/wfs/wfstest"
)

// Helpers of TestCluster: fixture origins that record every request they
// receive, ingestd processes, a watcher of one breaker_state row, and a
// /metrics reader.

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

func newClusterOrigin(t *testing.T, layers []string, features int) *clusterOrigin {
	t.Helper()
	o := &clusterOrigin{srv: wfstest.New(), hung: make(chan struct{})}
	for _, l := range layers {
		o.srv.AddLayer(l, wfstest.Parcels{N: features})
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
	metrics string // host:port of /metrics
	cmd     *exec.Cmd
	out     *syncBuffer
	exited  chan struct{}
	id      string // host:pid, as breaker_state.probe_owner names it
}

// startInstance starts `ingestd run` (with extra flags) and waits until it
// says it is running. The process is killed when the test ends, whatever
// happened.
func startInstance(t *testing.T, bin, name, config, dbURL string, extra ...string) *instance {
	t.Helper()
	in := &instance{name: name, config: config, metrics: freeLoopbackAddr(t), out: &syncBuffer{}, exited: make(chan struct{})}
	in.cmd = exec.Command(bin, append([]string{"run", "-config", config, "-database-url", dbURL, "-metrics-addr", in.metrics}, extra...)...)
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
func (in *instance) waitRunning(t *testing.T, within time.Duration) {
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
func (in *instance) stop(t *testing.T, within time.Duration) time.Duration {
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
func (in *instance) scrape(t *testing.T) string {
	t.Helper()
	c := &http.Client{Timeout: 5 * time.Second}
	resp, err := c.Get("http://" + in.metrics + "/metrics")
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

// freeLoopbackAddr returns a loopback address nobody listens on, to hand to
// -metrics-addr: with 127.0.0.1:0 the test could not know where to scrape.
func freeLoopbackAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	_ = ln.Close()
	return addr
}

// verdict is one version of a breaker_state row, as the watcher saw it.
type verdict struct {
	seen       time.Time // local time the watcher read it
	state      string
	openedAt   time.Time
	openUntil  time.Time
	probeOwner string
	probeUntil time.Time
	version    int64
}

// stateWatch polls one origin's breaker_state row every 25 ms and keeps every
// version it sees. Cooldowns last seconds, so none is missed.
type stateWatch struct {
	mu   sync.Mutex
	seen []verdict
}

func watchState(ctx context.Context, t *testing.T, pool *pgxpool.Pool, origin string) *stateWatch {
	w := &stateWatch{}
	done := make(chan struct{})
	go func() {
		defer close(done)
		tick := time.NewTicker(25 * time.Millisecond)
		defer tick.Stop()
		var last int64 = -1
		for {
			var v verdict
			var openedAt, openUntil, probeUntil *time.Time
			var owner *string
			err := pool.QueryRow(ctx, `SELECT state, opened_at, open_until, probe_owner, probe_until, version
				FROM breaker_state WHERE origin = $1`, origin).Scan(&v.state, &openedAt, &openUntil, &owner, &probeUntil, &v.version)
			if err == nil && v.version != last {
				last = v.version
				v.seen = time.Now()
				v.openedAt, v.openUntil, v.probeUntil = deref(openedAt), deref(openUntil), deref(probeUntil)
				if owner != nil {
					v.probeOwner = *owner
				}
				w.mu.Lock()
				w.seen = append(w.seen, v)
				w.mu.Unlock()
			}
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
		}
	}()
	t.Cleanup(func() { <-done })
	return w
}

func deref(t *time.Time) time.Time {
	if t == nil {
		return time.Time{}
	}
	return *t
}

func (w *stateWatch) all() []verdict {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]verdict(nil), w.seen...)
}

func (w *stateWatch) latest() (verdict, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.seen) == 0 {
		return verdict{}, false
	}
	return w.seen[len(w.seen)-1], true
}

// waitFor waits until the latest version satisfies ok and returns it.
func (w *stateWatch) waitFor(within time.Duration, ok func(verdict) bool) (verdict, bool) {
	var got verdict
	found := waitUntil(within, func() bool {
		v, have := w.latest()
		if have && ok(v) {
			got = v
			return true
		}
		return false
	})
	return got, found
}

// waitUntil polls cond every 20 ms until it holds or within has passed.
func waitUntil(within time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(within)
	for {
		if cond() {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func tail(s string, lines int) string {
	all := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(all) > lines {
		all = all[len(all)-lines:]
	}
	return strings.Join(all, "\n")
}
