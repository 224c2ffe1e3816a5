package feeds_test

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/ingestd/ingestd/config"
	"github.com/ingestd/ingestd/feature"
	"github.com/ingestd/ingestd/feeds"
	"github.com/ingestd/ingestd/feeds/postgis"
	"github.com/ingestd/ingestd/internal/kindconf"
	"github.com/ingestd/ingestd/migrations/pgtest"
)

// lighttpd is a real static file server (Debian lighttpd, which
// scripts/mapserver.sh installs) serving dir on a loopback port.
type lighttpd struct {
	url string
}

// startLighttpd starts lighttpd on 127.0.0.1 serving dir until the test
// ends. Without the binary the test skips, except under CI=true, where it
// fails.
func startLighttpd(t *testing.T, dir string) *lighttpd {
	t.Helper()
	bin, err := exec.LookPath("lighttpd")
	if err != nil {
		bin = "/usr/sbin/lighttpd"
		if _, err := os.Stat(bin); err != nil {
			msg := "lighttpd not found (Debian lighttpd; scripts/mapserver.sh installs it)"
			if os.Getenv("CI") == "true" {
				t.Fatal(msg)
			}
			t.Skip(msg)
		}
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	run := t.TempDir()
	l := &lighttpd{url: fmt.Sprintf("http://127.0.0.1:%d", port)}
	conf := fmt.Sprintf(`server.document-root = %q
server.bind = "127.0.0.1"
server.port = %d
server.errorlog = %q
mimetype.assign = (".geojson" => "application/geo+json")
# A file changed is seen at once, not after the stat cache's second.
server.stat-cache-engine = "disable"
`, dir, port, filepath.Join(run, "error.log"))
	if os.Geteuid() == 0 {
		// lighttpd refuses to serve as root unless told which user to be;
		// the temporary directories must be readable by that user.
		conf += "server.username = \"nobody\"\nserver.groupname = \"nogroup\"\n"
		for _, d := range []string{dir, run, filepath.Dir(dir), filepath.Dir(run)} {
			if err := os.Chmod(d, 0o777); err != nil {
				t.Fatal(err)
			}
		}
	}
	cf := filepath.Join(run, "lighttpd.conf")
	if err := os.WriteFile(cf, []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "-D", "-f", cf)
	out := &strings.Builder{}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	// lighttpd has no way to say it listens but answering: poll it, under a
	// ceiling that only catches one that never starts.
	deadline := time.Now().Add(hangCeiling)
	for {
		resp, err := http.Get(l.url + "/")
		if err == nil {
			resp.Body.Close()
			return l
		}
		if time.Now().After(deadline) {
			errLog, _ := os.ReadFile(filepath.Join(run, "error.log"))
			t.Fatalf("lighttpd did not answer at %s: %v\n%s\n%s", l.url, err, out, errLog)
		}
		time.Sleep(50 * time.Millisecond) // the poll's interval (see above), not a wait for an event
	}
}

// wire records the bytes a client's connections write and read, so that a
// test sees the requests as sent and the responses as received (status
// line, headers and every body byte), whatever the client makes of them.
type wire struct {
	mu          sync.Mutex
	sent, recvd bytes.Buffer
}

// client returns an HTTP client whose connections w records.
func (w *wire) client() *http.Client {
	d := &net.Dialer{}
	tr := &http.Transport{DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := d.DialContext(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		return &wireConn{Conn: c, w: w}, nil
	}}
	return &http.Client{Transport: tr}
}

// take returns what was sent and received since the last take.
func (w *wire) take() (sent, recvd string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	sent, recvd = w.sent.String(), w.recvd.String()
	w.sent.Reset()
	w.recvd.Reset()
	return sent, recvd
}

type wireConn struct {
	net.Conn
	w *wire
}

func (c *wireConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	c.w.mu.Lock()
	c.w.recvd.Write(p[:n])
	c.w.mu.Unlock()
	return n, err
}

func (c *wireConn) Write(p []byte) (int, error) {
	c.w.mu.Lock()
	c.w.sent.Write(p)
	c.w.mu.Unlock()
	return c.Conn.Write(p)
}

// exchange is one request and its response as they crossed the wire.
type exchange struct {
	ifNoneMatch, ifModifiedSince string // as sent, "" when not
	status                       int
	bodyBytes                    int // bytes received after the headers
}

// lastExchange parses what w recorded since its last take: one request,
// one response.
func (w *wire) lastExchange(t *testing.T) exchange {
	t.Helper()
	sent, recvd := w.take()
	req, err := http.ReadRequest(bufio.NewReader(strings.NewReader(sent)))
	if err != nil {
		t.Fatalf("request on the wire: %v\n%q", err, sent)
	}
	head, body, ok := strings.Cut(recvd, "\r\n\r\n")
	if !ok {
		t.Fatalf("response on the wire without headers: %q", recvd)
	}
	var e exchange
	if _, err := fmt.Sscanf(head, "HTTP/1.1 %d", &e.status); err != nil {
		t.Fatalf("status line: %v: %q", err, head)
	}
	e.ifNoneMatch, e.ifModifiedSince = req.Header.Get("If-None-Match"), req.Header.Get("If-Modified-Since")
	e.bodyBytes = len(body)
	return e
}

// stageCounter is the PostGIS store, counting the pages staged.
type stageCounter struct {
	*postgis.Store
	pages atomic.Int64
}

func (s *stageCounter) StagePage(ctx context.Context, pollID int64, page int, features feature.FeatureReader) (int, error) {
	s.pages.Add(1)
	return s.Store.StagePage(ctx, pollID, page, features)
}

// parcelsDoc is a FeatureCollection of n parcels; tag goes into every
// feature's properties, so that two tags are two versions of the layer.
func parcelsDoc(n int, tag string) []byte {
	var b strings.Builder
	b.WriteString(`{"type":"FeatureCollection","features":[`)
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		x, y := -78.6+float64(i)*0.001, 35.7
		fmt.Fprintf(&b, `{"type":"Feature","id":"p%d","properties":{"pin":"p%d","tag":%q},"geometry":{"type":"Polygon","coordinates":[[[%f,%f],[%f,%f],[%f,%f],[%f,%f]]]}}`,
			i, i, tag, x, y, x+0.0005, y, x+0.0005, y+0.0005, x, y)
	}
	b.WriteString(`]}`)
	return []byte(b.String())
}

// TestConditionalGETAgainstLighttpd polls a GeoJSON document that lighttpd
// serves, with its ETag and Last-Modified: an unchanged document is a 304
// that transfers and stages nothing and is recorded as a successful poll;
// a changed one is fetched and applied; after a held snapshot the next poll
// fetches in full, whatever the server's validators.
func TestConditionalGETAgainstLighttpd(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	doc := filepath.Join(dir, "parcels.geojson")
	v1 := parcelsDoc(50, "v1")
	if err := os.WriteFile(doc, v1, 0o644); err != nil {
		t.Fatal(err)
	}
	srv := startLighttpd(t, dir)

	cfg, err := config.Parse("test.yaml", []byte(fmt.Sprintf(`
defaults:
  schedule: "0 5 * * *"
jurisdictions:
  - id: county
    feeds:
      - id: parcels
        kind: geojson
        url: %s/parcels.geojson
        id_property: pin
`, srv.url)), nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	pool := pgtest.Pool(t)
	store := &stageCounter{Store: postgis.New(pool)}
	logger := slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelDebug}))
	reg := prometheus.NewRegistry()
	w := &wire{}
	mgr := feeds.NewManager(store, feeds.NewFetchers(kindconf.FetcherDeps{HTTP: w.client(), Logger: logger}), feeds.WithLogger(logger), feeds.WithRegisterer(reg))
	t.Cleanup(mgr.Stop)
	if err := mgr.Update(ctx, cfg); err != nil {
		t.Fatal(err)
	}
	type pollRecord struct {
		status             string
		notModified        bool
		bytes              *int64
		pages, features    int
		validators         *string
		feedValidators     *string
		lastSuccessMovedTo time.Time
	}
	record := func(id int64) pollRecord {
		t.Helper()
		var r pollRecord
		err := pool.QueryRow(ctx, `
			SELECT p.status, p.not_modified, p.bytes, p.pages, coalesce(p.features, 0), p.validators::text,
			       s.validators::text, s.last_success_at
			FROM polls p JOIN feed_status s USING (jurisdiction, feed) WHERE p.id = $1`, id).Scan(
			&r.status, &r.notModified, &r.bytes, &r.pages, &r.features, &r.validators, &r.feedValidators, &r.lastSuccessMovedTo)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	poll := func() (feeds.PollResult, error) { return mgr.Poll(ctx, "county/parcels") }
	notModifiedPolls := func() float64 {
		return pollsCounted(t, reg, "not_modified")
	}

	// 1. First poll: 200, applied, the validators kept with the snapshot.
	res, err := poll()
	if err != nil {
		t.Fatal(err)
	}
	first := record(res.PollID)
	if res.Added != 50 || first.bytes == nil || *first.bytes != int64(len(v1)) || first.validators == nil ||
		!strings.Contains(*first.validators, `"etag"`) || !strings.Contains(*first.validators, `"last_modified"`) ||
		first.feedValidators == nil || *first.feedValidators != *first.validators {
		t.Fatalf("first poll: %+v; record %+v; want 50 added, %d bytes, the ETag and Last-Modified kept with the poll and the feed", res, first, len(v1))
	}
	if x := w.lastExchange(t); x.status != 200 || x.ifNoneMatch != "" || x.bodyBytes != len(v1) {
		t.Fatalf("first poll's exchange: %+v; want an unconditional request answered 200 with %d bytes", x, len(v1))
	}

	// 2. Unchanged: If-None-Match sent, 304, no body, no staging, a
	// successful poll that fetched nothing, the feed fresh as of now.
	staged := store.pages.Load()
	res, err = poll()
	if err != nil {
		t.Fatal(err)
	}
	second := record(res.PollID)
	x := w.lastExchange(t)
	if x.status != 304 || x.bodyBytes != 0 || x.ifNoneMatch == "" || x.ifModifiedSince == "" ||
		!strings.Contains(*first.validators, strings.ReplaceAll(x.ifNoneMatch, `"`, `\"`)) ||
		!strings.Contains(*first.validators, x.ifModifiedSince) {
		t.Errorf("second poll's exchange: %+v; want a 304 with no body to a request carrying the first poll's ETag and Last-Modified (%s)", x, *first.validators)
	}
	if !res.NotModified || res.Features != 50 || res.Unchanged != 50 || res.Pages != 0 || res.Bytes != 0 {
		t.Errorf("second poll: %+v; want not modified, 50 features unchanged, no page, no byte", res)
	}
	if n := store.pages.Load() - staged; n != 0 {
		t.Errorf("second poll staged %d pages; want none", n)
	}
	if second.status != "succeeded" || !second.notModified || second.bytes == nil || *second.bytes != 0 ||
		second.features != 50 || !second.lastSuccessMovedTo.After(first.lastSuccessMovedTo) ||
		second.feedValidators == nil || *second.feedValidators != *first.validators {
		t.Errorf("second poll recorded as %+v; want succeeded, not_modified, 0 bytes, 50 features, last_success_at moved, validators kept", second)
	}
	if n := notModifiedPolls(); n != 1 {
		t.Errorf("ingestd_feeds_polls_total{outcome=not_modified} = %v; want 1", n)
	}

	// 2b. The feed's URL changes (another request, maybe another document):
	// the old validators are not sent, the document is fetched whole.
	cfg2, err := config.Parse("test.yaml", []byte(fmt.Sprintf(`
defaults:
  schedule: "0 5 * * *"
jurisdictions:
  - id: county
    feeds:
      - id: parcels
        kind: geojson
        url: %s/parcels.geojson?copy=2
        id_property: pin
`, srv.url)), nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := mgr.Update(ctx, cfg2); err != nil {
		t.Fatal(err)
	}
	res, err = poll()
	if err != nil {
		t.Fatal(err)
	}
	if x := w.lastExchange(t); x.status != 200 || x.ifNoneMatch != "" || x.ifModifiedSince != "" || x.bodyBytes != len(v1) {
		t.Errorf("poll after the URL changed: exchange %+v; want an unconditional request answered 200 with the whole %d bytes", x, len(v1))
	}
	if res.NotModified || res.Unchanged != 50 {
		t.Errorf("poll after the URL changed: %+v; want fetched, 50 unchanged", res)
	}

	// 3. The file changes (new content, new mtime): fetched and applied.
	v2 := parcelsDoc(50, "v2")
	if err := os.WriteFile(doc, v2, 0o644); err != nil {
		t.Fatal(err)
	}
	future := time.Now().Add(2 * time.Second)
	if err := os.Chtimes(doc, future, future); err != nil {
		t.Fatal(err)
	}
	res, err = poll()
	if err != nil {
		t.Fatal(err)
	}
	third := record(res.PollID)
	if x := w.lastExchange(t); x.status != 200 || x.bodyBytes != len(v2) || x.ifNoneMatch == "" {
		t.Errorf("third poll's exchange: %+v; want a conditional request answered 200 with the whole %d bytes", x, len(v2))
	}
	if res.NotModified || res.Modified != 50 || third.notModified || third.validators == nil || *third.validators == *first.validators ||
		third.feedValidators == nil || *third.feedValidators != *third.validators {
		t.Errorf("third poll: %+v, record %+v; want 50 modified and the new validators kept", res, third)
	}

	// 4. A snapshot the guard holds (50 → 5 features): its validators are
	// not the feed's, so the next poll fetches the document in full (and
	// holds it again) instead of being told it is unchanged.
	v3 := parcelsDoc(5, "v3")
	if err := os.WriteFile(doc, v3, 0o644); err != nil {
		t.Fatal(err)
	}
	future = future.Add(2 * time.Second)
	if err := os.Chtimes(doc, future, future); err != nil {
		t.Fatal(err)
	}
	if _, err := poll(); err == nil || !strings.Contains(err.Error(), "held") {
		t.Fatalf("fourth poll: %v; want it held", err)
	}
	if x := w.lastExchange(t); x.status != 200 || x.ifNoneMatch == "" {
		t.Errorf("fourth poll's exchange: %+v; want a conditional request (the third poll applied) answered 200", x)
	}
	staged = store.pages.Load()
	res, err = poll()
	if err == nil || !strings.Contains(err.Error(), "held") {
		t.Fatalf("fifth poll: %+v, %v; want it fetched in full and held again", res, err)
	}
	if x := w.lastExchange(t); x.status != 200 || x.ifNoneMatch != "" || x.ifModifiedSince != "" || x.bodyBytes != len(v3) {
		t.Errorf("poll after a held snapshot: exchange %+v; want an unconditional request answered 200 with the whole %d bytes", x, len(v3))
	}
	if n := store.pages.Load() - staged; n != 1 {
		t.Errorf("poll after a held snapshot staged %d pages; want 1", n)
	}
	if n := notModifiedPolls(); n != 1 {
		t.Errorf("ingestd_feeds_polls_total{outcome=not_modified} = %v; want still 1", n)
	}
}

// pollsCounted returns ingestd_feeds_polls_total of the test feed and
// outcome.
func pollsCounted(t *testing.T, reg *prometheus.Registry, outcome string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != "ingestd_feeds_polls_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			if labels["feed"] == "parcels" && labels["outcome"] == outcome {
				return m.GetCounter().GetValue()
			}
		}
	}
	return 0
}
