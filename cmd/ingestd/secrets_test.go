package main

import (
	"context"
	"encoding/xml"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/ingestd/ingestd/feature"
	"github.com/ingestd/ingestd/source"
	"github.com/ingestd/ingestd/wfs"
	"github.com/ingestd/ingestd/wfs/wfstest"
)

// secretParams are the query parameters the leak test plants, each with its
// own value: the names tokens travel under in municipal GIS URLs (ArcGIS
// token, Esri/Google key and k, S3/Azure signatures, CAS ticket, session
// ids, OAuth code and client_secret), in the spellings servers use.
var secretParams = []string{
	"token", "key", "apikey", "api_key", "password", "pw", "pass", "secret",
	"ticket", "hash", "k", "access_key_id", "secret_access_key", "signature",
	"sig", "auth", "authorization", "session", "sid", "code", "client_secret",
	"x-amz-signature", "X-Amz-Credential", "access_token", "jwt",
}

// Header values the leak test sends (after the merge of the headers:
// parsing), from the environment as the README tells operators to.
const (
	secretAuthHeader = "Bearer zqsechdrauth"
	secretKeyHeader  = "zqsechdrkey"
)

// secretValue is the planted value of parameter i: letters and digits only,
// so that JSON, SQL and %q escaping cannot hide a leak from the grep.
func secretValue(i int) string { return fmt.Sprintf("zqsecq%02dv", i) }

// secretOrigin is a fixture origin that routes on its first path segment,
// so that one handler serves the healthy and the failing feeds, and that
// records the credential headers it received.
type secretOrigin struct {
	srv      *wfstest.Server
	redirect string // Location of /redirect/

	mu      sync.Mutex
	headers map[string]bool // "Authorization: …" and "X-Api-Key: …" as received
}

func (o *secretOrigin) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	o.mu.Lock()
	for _, h := range []string{"Authorization", "X-Api-Key"} {
		if v := r.Header.Get(h); v != "" {
			o.headers[h+": "+v] = true
		}
	}
	o.mu.Unlock()
	first, rest, _ := strings.Cut(strings.TrimPrefix(r.URL.Path, "/"), "/")
	switch first {
	case "ok":
		r2 := r.Clone(r.Context())
		r2.URL.Path = "/" + rest
		o.srv.ServeHTTP(w, r2)
	case "e404":
		http.Error(w, "no such service", http.StatusNotFound)
	case "e500":
		http.Error(w, "internal error", http.StatusInternalServerError)
	case "html":
		w.Header().Set("Content-Type", "text/html")
		fmt.Fprint(w, "<!DOCTYPE html><html><body><h1>Service Unavailable</h1></body></html>")
	case "redirect":
		http.Redirect(w, r, o.redirect, http.StatusFound)
	case "echo":
		// Some servers quote the request target in their exception text.
		var text strings.Builder
		_ = xml.EscapeText(&text, []byte("cannot parse "+r.URL.RequestURI()))
		w.Header().Set("Content-Type", "text/xml")
		w.WriteHeader(http.StatusBadRequest)
		fmt.Fprintf(w, `<?xml version="1.0"?><ows:ExceptionReport xmlns:ows="http://www.opengis.net/ows/1.1" version="2.0.0">`+
			`<ows:Exception exceptionCode="InvalidParameterValue" locator="typeNames"><ows:ExceptionText>%s</ows:ExceptionText></ows:Exception></ows:ExceptionReport>`, text.String())
	case "badlocation":
		// net/http quotes an unparseable Location in its error, whole.
		w.Header().Set("Location", "http://zqsecbadlocuser@127.0.0.1:bad/x?pw=zqsecbadlocpw")
		w.WriteHeader(http.StatusFound)
	default:
		http.NotFound(w, r)
	}
}

func (o *secretOrigin) saw(header string) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.headers[header]
}

// headersSent reports whether wfs.Client sends a layer's Headers (issue
// 14's merge wires them into the request), by fetching from a loopback
// server that looks for one.
func headersSent(t *testing.T) bool {
	t.Helper()
	var got atomic.Bool
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got.Store(r.Header.Get("X-Probe") == "probe")
		fmt.Fprint(w, `{"type":"FeatureCollection","features":[]}`)
	}))
	defer ts.Close()
	layer := source.Layer{Kind: wfs.KindGeoJSON, URL: ts.URL + "/a.geojson", Headers: map[string]string{"X-Probe": "probe"}}
	_, _ = wfs.NewClient(ts.Client(), nil, nil).Fetch(t.Context(), layer, 0,
		func(_ context.Context, _ source.Page, fr feature.FeatureReader) error {
			for {
				if _, err := fr.Next(); err != nil {
					if err == io.EOF {
						return nil
					}
					return err
				}
			}
		})
	return got.Load()
}

// TestSecretsNeverLeak is issue 14's leak check, end to end: secrets planted
// in userinfo (token only, and user:password), in twenty-five query
// parameters, in headers and in redirect Locations, in a config whose feeds
// succeed, fail (404, 500, an HTML page, connection refused, redirects),
// get parked behind an open breaker and held by a guard. The real binary
// polls them, runs as a daemon for a few seconds and answers every
// subcommand; then its logs, every subcommand's output, /metrics and every
// table of the database are searched for each secret. None may appear.
func TestSecretsNeverLeak(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("builds and runs ingestd")
	}
	heavy(t, heavySecrets)
	withHeaders := headersSent(t)
	bin := buildIngestd(t)
	dbURL, pool := testDB(t)
	ctx := t.Context()

	// Origins: one healthy (its 404 is our mistake and does not trip it),
	// one per kind of failure (each trips its own breaker: an origin opened
	// by one kind would refuse the next before it reached the server), and
	// one that refuses connections.
	fixture := wfstest.New()
	fixture.AddLayer("parcels", wfstest.Parcels{N: 25})
	fixture.AddLayer("shrinking", wfstest.Parcels{N: 20})
	newOrigin := func() (*secretOrigin, string) {
		o := &secretOrigin{srv: fixture, headers: map[string]bool{}}
		ts := httptest.NewServer(o) // loopback only
		t.Cleanup(ts.Close)
		return o, strings.TrimPrefix(ts.URL, "http://")
	}
	good, goodHost := newOrigin()
	e500, e500Host := newOrigin()
	_, htmlHost := newOrigin()
	redir, redirHost := newOrigin()
	_, badLocHost := newOrigin()
	// The redirect goes to another origin, with secrets of its own.
	redir.redirect = "http://zqsecrediruser:zqsecredirpw@" + goodHost + "/ok/wfs?token=zqsecredirtoken&count=1"
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	refusedHost := ln.Addr().String()
	ln.Close()

	secrets := []string{"zqsectokenonly", "zqsecuser", "zqsecpassword",
		"zqsecrediruser", "zqsecredirpw", "zqsecredirtoken", "zqsecbadlocuser", "zqsecbadlocpw",
		"zqsecbrokenuser", "zqsecbrokentoken",
		secretAuthHeader, strings.TrimPrefix(secretAuthHeader, "Bearer "), secretKeyHeader}
	var query []string
	for i, name := range secretParams {
		query = append(query, name+"="+secretValue(i))
		secrets = append(secrets, secretValue(i))
	}
	// Harmless parameters ride along: they must survive redaction.
	qs := strings.Join(query, "&") + "&f=json"
	// feedURL alternates token-only userinfo and user:password.
	n := 0
	feedURL := func(host, path string) string {
		n++
		user := "zqsectokenonly"
		if n%2 == 0 {
			user = "zqsecuser:zqsecpassword"
		}
		return "http://" + user + "@" + host + path + "?" + qs
	}
	headers := ""
	if withHeaders {
		headers = `
        headers:
          Authorization: "${INGESTD_TEST_AUTH}"
          X-Api-Key: "${INGESTD_TEST_APIKEY}"`
	}
	// feed is one feed's YAML; typeName "" makes it a GeoJSON document.
	feed := func(id, typeName, url string) string {
		if typeName == "" {
			return fmt.Sprintf(`
      - id: %s
        kind: geojson
        url: "%s"
        schedule: "@every 2s"`, id, url) + headers
		}
		return fmt.Sprintf(`
      - id: %s
        kind: wfs
        url: "%s"
        type_name: %s
        page_size: 10
        sort_by: pin
        schedule: "@every 2s"`, id, url, typeName) + headers
	}
	yaml := `
dead_letter:
  interval: 500ms
jurisdictions:
  - id: good
    feeds:` +
		feed("wfs", "parcels", feedURL(goodHost, "/ok/wfs")) +
		feed("geojson", "", feedURL(goodHost, "/ok/geojson/parcels.geojson")) +
		feed("missing", "parcels", feedURL(goodHost, "/e404/wfs")) +
		feed("echo", "parcels", feedURL(goodHost, "/echo/wfs")) +
		feed("shrink", "shrinking", feedURL(goodHost, "/ok/wfs")) + `
  - id: bad
    breaker:
      consecutive_failures: 1
      max_attempts: 1
      open_base: 10m
      open_max: 10m
    feeds:` +
		feed("e500", "parcels", feedURL(e500Host, "/e500/wfs")) +
		feed("e500b", "parcels", feedURL(e500Host, "/e500/wfs")) +
		feed("html", "", feedURL(htmlHost, "/html/a.geojson")) +
		feed("redirect", "", feedURL(redirHost, "/redirect/a.geojson")) +
		feed("badlocation", "", feedURL(badLocHost, "/badlocation/a.geojson")) +
		feed("refused", "", feedURL(refusedHost, "/a.geojson"))
	dir := t.TempDir()
	cfgPath := filepath.Join(dir, "j.yaml")
	if err := os.WriteFile(cfgPath, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	// A config whose URL does not parse: validate must not quote it.
	brokenPath := filepath.Join(dir, "broken.yaml")
	broken := "jurisdictions:\n  - id: x\n    feeds:\n      - id: y\n        kind: geojson\n" +
		"        url: \"http://zqsecbrokenuser@127.0.0.1:bad/a.geojson?token=zqsecbrokentoken\"\n"
	if err := os.WriteFile(brokenPath, []byte(broken), 0o600); err != nil {
		t.Fatal(err)
	}

	env := append(os.Environ(), "INGESTD_TEST_AUTH="+secretAuthHeader, "INGESTD_TEST_APIKEY="+secretKeyHeader,
		"INGESTD_LOG_LEVEL=debug", "DATABASE_URL="+dbURL, "INGESTD_CONFIG="+cfgPath)
	// transcript is everything the binary printed, labelled by command.
	var transcript strings.Builder
	cli := func(args ...string) (int, string) {
		t.Helper()
		code, out := runBinEnv(t, env, bin, args...)
		// The label leaves URLs out: the arguments hold the secrets.
		label := slices.Clone(args)
		for i, a := range label {
			if strings.Contains(a, "://") {
				label[i] = "URL"
			}
		}
		fmt.Fprintf(&transcript, "\n=== ingestd %s (exit %d)\n%s", strings.Join(label, " "), code, out)
		return code, out
	}

	if code, out := cli("validate", cfgPath); code != 0 {
		t.Fatalf("validate: exit %d\n%s", code, out)
	}
	if code, _ := cli("validate", brokenPath); code != 1 {
		t.Errorf("validate of a broken URL: exit %d, want 1", code)
	}
	cli("migrate")
	for _, key := range []string{"good/wfs", "good/geojson", "good/shrink"} {
		if code, out := cli("poll", key); code != 0 {
			t.Fatalf("poll %s: exit %d\n%s", key, code, out)
		}
	}
	// The layer shrinks by 90%: the guard holds the snapshot.
	fixture.AddLayer("shrinking", wfstest.Parcels{N: 2})
	for _, key := range []string{"good/shrink", "good/missing", "good/echo", "bad/e500", "bad/e500b", "bad/html",
		"bad/redirect", "bad/badlocation", "bad/refused"} {
		if code, _ := cli("poll", key); code == 0 {
			t.Errorf("poll %s succeeded; it must fail, park or hold", key)
		}
	}
	cli("poll", "good/nope")
	// The tables now, before replays overwrite the first errors.
	dumps := []map[string]string{dumpTables(ctx, t, pool)}

	// The daemon, briefly: schedules, catch-up, the replayer, /metrics.
	metricsAddr := freeLoopbackAddr(t)
	daemon := exec.Command(bin, "run", "-metrics-addr", metricsAddr)
	daemon.Env = env
	daemonOut := &syncBuffer{}
	daemon.Stdout, daemon.Stderr = daemonOut, daemonOut
	if err := daemon.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { _ = daemon.Wait(); close(exited) }()
	t.Cleanup(func() { _ = daemon.Process.Kill(); <-exited })
	if !waitUntil(clusterCeiling, func() bool { return strings.Contains(daemonOut.String(), `"msg":"ingestd running"`) }) {
		t.Fatalf("ingestd run did not start:\n%s", tail(daemonOut.String(), 30))
	}
	// What the daemon logs is searched: wait until it has dealt with every
	// feed twice (its catch-up or a tick, then a scheduled tick), whatever
	// the outcome (succeeded, failed, held, parked, skipped).
	feedKeys := []string{"good/wfs", "good/geojson", "good/missing", "good/echo", "good/shrink",
		"bad/e500", "bad/e500b", "bad/html", "bad/redirect", "bad/badlocation", "bad/refused"}
	dealt := func() map[string]int {
		n := map[string]int{}
		for _, l := range parseLog(daemonOut.String()) {
			msg := fmt.Sprint(l.attrs["msg"])
			if strings.HasPrefix(msg, "poll ") || strings.HasPrefix(msg, "tick skipped") || strings.HasPrefix(msg, "snapshot held") {
				n[fmt.Sprint(l.attrs["jurisdiction"])+"/"+fmt.Sprint(l.attrs["feed"])]++
			}
		}
		return n
	}
	if !waitUntil(clusterCeiling, func() bool {
		n := dealt()
		for _, k := range feedKeys {
			if n[k] < 2 {
				return false
			}
		}
		return true
	}) {
		t.Fatalf("the daemon did not deal with every feed twice within %s: %v\n%s", clusterCeiling, dealt(), tail(daemonOut.String(), 30))
	}
	metrics := fetchText(t, "http://"+metricsAddr+"/metrics")
	_ = daemon.Process.Signal(syscall.SIGTERM)
	select {
	case <-exited:
	case <-time.After(clusterCeiling): // a hang bound, not a speed
		t.Fatal("ingestd run did not stop after SIGTERM")
	}
	fmt.Fprintf(&transcript, "\n=== ingestd run\n%s\n=== /metrics\n%s", daemonOut.String(), metrics)

	// The scenario happened: without it, finding no secret proves nothing.
	var failed, held, parked, openWithError int
	if err := pool.QueryRow(ctx, `SELECT
		(SELECT count(*) FROM polls WHERE status = 'failed'),
		(SELECT count(*) FROM polls WHERE status = 'held'),
		(SELECT count(*) FROM dead_letter),
		(SELECT count(*) FROM breaker_state WHERE state = 'open' AND last_error IS NOT NULL)`).Scan(&failed, &held, &parked, &openWithError); err != nil {
		t.Fatal(err)
	}
	// Parked: e500, e500b, html, badlocation, refused (redirect is a
	// request error once followed, or refused after the merge).
	if failed == 0 || held == 0 || parked < 5 || openWithError < 4 {
		t.Errorf("scenario incomplete: %d failed polls, %d held, %d parked, %d open breakers with last_error",
			failed, held, parked, openWithError)
	}

	e500URL := feedURL(e500Host, "/e500/wfs")
	for _, args := range [][]string{
		{"status"},
		{"deadletter", "list"},
		{"deadletter", "list", "--status", "pending"},
		{"deadletter", "replay", "--all-due"},
		{"held", "list"},
		{"breaker", "list"},
		// ORIGIN may be a feed's URL, and the reason is free text.
		{"breaker", "open", e500URL, "--for", "10m", "--reason", "see " + feedURL(e500Host, "/reason")},
		{"breaker", "list"},
		{"breaker", "close", e500URL, "--for", "1m"},
		{"breaker", "auto", e500URL},
		{"breaker", "open", "http://zqsecbrokenuser@127.0.0.1:bad/?token=zqsecbrokentoken"},
		{"status"},
		{"deadletter", "list"},
		{"held", "accept", "good/shrink"},
		{"held", "list"},
		{"deadletter", "purge", "--done", "--abandoned", "--older-than", "1h"},
		{"version"},
	} {
		cli(args...)
	}

	var urls string
	if err := pool.QueryRow(ctx, `SELECT string_agg(url, ' ') FROM feed_status`).Scan(&urls); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"REDACTED@", "token=REDACTED", "k=REDACTED", "f=json", "/ok/wfs"} {
		if !strings.Contains(urls, want) {
			t.Errorf("feed_status.url lacks %q (redaction must keep the request recognisable): %s", want, urls)
		}
	}

	dumps = append(dumps, dumpTables(ctx, t, pool))
	texts := map[string]string{"output": transcript.String()}
	for i, dump := range dumps {
		for table, text := range dump {
			texts[fmt.Sprintf("table %s (dump %d)", table, i+1)] = text
		}
	}
	for _, where := range slices.Sorted(maps.Keys(texts)) {
		text := texts[where]
		for _, s := range secrets {
			if i := strings.Index(text, s); i >= 0 {
				t.Errorf("secret %q leaks in %s: …%s…", s, where, text[max(0, i-200):min(len(text), i+len(s)+40)])
			}
		}
	}
	if t.Failed() {
		t.Logf("transcript:\n%s", tail(transcript.String(), 200))
	}

	t.Run("headers sent", func(t *testing.T) {
		if !withHeaders {
			t.Skip("wfs.Client does not send Layer.Headers yet (issue 14's merge wires them); the leak check above ran without headers")
		}
		for _, h := range []string{"Authorization: " + secretAuthHeader, "X-Api-Key: " + secretKeyHeader} {
			if !good.saw(h) || !e500.saw(h) {
				t.Errorf("the fixture origins did not receive %q", h)
			}
		}
	})
}

// dumpTables returns every table and view of the test database (PostGIS's
// included) as text, one row per line, by schema.table.
func dumpTables(ctx context.Context, t *testing.T, pool *pgxpool.Pool) map[string]string {
	t.Helper()
	rows, err := pool.Query(ctx, `SELECT table_schema, table_name FROM information_schema.tables
		WHERE table_schema NOT IN ('pg_catalog', 'information_schema') ORDER BY 1, 2`)
	if err != nil {
		t.Fatal(err)
	}
	names, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) ([2]string, error) {
		var n [2]string
		err := r.Scan(&n[0], &n[1])
		return n, err
	})
	if err != nil {
		t.Fatal(err)
	}
	out := make(map[string]string, len(names))
	for _, n := range names {
		id := pgx.Identifier{n[0], n[1]}.Sanitize()
		rows, err := pool.Query(ctx, `SELECT t::text FROM `+id+` t`)
		if err != nil {
			t.Fatalf("dump %s: %v", id, err)
		}
		lines, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			t.Fatalf("dump %s: %v", id, err)
		}
		out[n[0]+"."+n[1]] = strings.Join(lines, "\n")
	}
	if len(out) < 5 {
		t.Fatalf("dumped only %d tables", len(out))
	}
	return out
}

// fetchText GETs a loopback URL and returns the body.
func fetchText(t *testing.T, u string) string {
	t.Helper()
	c := &http.Client{Timeout: clusterCeiling} // a hang bound, not a speed
	resp, err := c.Get(u)
	if err != nil {
		t.Fatalf("GET %s: %v", u, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
