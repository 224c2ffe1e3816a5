package main

import (
	"context"
	"encoding/json"
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
	"github.com/ingestd/ingestd/geojson"
	"github.com/ingestd/ingestd/internal/layertest"
	"github.com/ingestd/ingestd/ogcapi/ogcapitest"
	"github.com/ingestd/ingestd/source"
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
	layer := source.Layer{Kind: geojson.Kind, URL: ts.URL + "/a.geojson", Headers: map[string]string{"X-Probe": "probe"}}
	_, _ = geojson.NewClient(ts.Client(), nil, nil).Fetch(t.Context(), layer, 0,
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

// TestSecretsNeverLeak is the leak check, end to end: secrets planted
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
	// The daemon, and one-off commands beside it.
	dbURL, pool := testDBFor(t, 2*ingestdConns)
	ctx := t.Context()

	// Origins: one healthy (its 404 is our mistake and does not trip it),
	// one per kind of failure (each trips its own breaker: an origin opened
	// by one kind would refuse the next before it reached the server), and
	// one that refuses connections.
	fixture := wfstest.New()
	fixture.AddLayer("parcels", layertest.Parcels{N: 25})
	fixture.AddLayer("shrinking", layertest.Parcels{N: 20})
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
	// Servers that echo the credential they received.
	echo := newEchoServers(t)

	secrets := []string{"zqsectokenonly", "zqsecuser", "zqsecpassword",
		"zqsecrediruser", "zqsecredirpw", "zqsecredirtoken", "zqsecbadlocuser", "zqsecbadlocpw",
		"zqsecbrokenuser", "zqsecbrokentoken",
		secretAuthHeader, strings.TrimPrefix(secretAuthHeader, "Bearer "), secretKeyHeader}
	var query []string
	for i, name := range secretParams {
		query = append(query, name+"="+secretValue(i))
		secrets = append(secrets, secretValue(i))
	}
	for _, s := range echoSecrets {
		secrets = append(secrets, s)
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
	hostileYAML, hostileEnv := echo.yaml()
	yaml += hostileYAML
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
	env = append(env, hostileEnv...)
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
	fixture.AddLayer("shrinking", layertest.Parcels{N: 2})
	for _, key := range []string{"good/shrink", "good/missing", "good/echo", "bad/e500", "bad/e500b", "bad/html",
		"bad/redirect", "bad/badlocation", "bad/refused"} {
		if code, _ := cli("poll", key); code == 0 {
			t.Errorf("poll %s succeeded; it must fail, park or hold", key)
		}
	}
	for _, shape := range slices.Sorted(maps.Keys(echoSecrets)) {
		if code, _ := cli("poll", "hostile/"+shape); code == 0 {
			t.Errorf("poll hostile/%s succeeded; it must fail or park", shape)
		}
	}
	cli("poll", "good/nope")
	// The tables now, before replays overwrite the first errors.
	dumps := []map[string]string{dumpTables(ctx, t, pool)}
	checkEchoesScrubbed(ctx, t, pool, echo)
	// Rows as a version before scrubbing by value left them: the daemon's start
	// scrubs them.
	plantOldLeaks(ctx, t, pool, "a")

	// The daemon, briefly: schedules, catch-up, the replayer, /metrics.
	daemon := exec.Command(bin, "run", "-metrics-addr", "127.0.0.1:0")
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
	for _, shape := range slices.Sorted(maps.Keys(echoSecrets)) {
		feedKeys = append(feedKeys, "hostile/"+shape)
	}
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
	if !waitUntil(clusterCeiling, func() bool { return strings.Contains(daemonOut.String(), `"msg":"stored secrets scrubbed"`) }) {
		t.Errorf("ingestd run did not scrub the stored secrets:\n%s", tail(daemonOut.String(), 30))
	}
	metrics := fetchText(t, "http://"+servingAddr(t, "daemon", daemonOut)+"/metrics")
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

	// The same again, scrubbed on demand: the five rows planted.
	plantOldLeaks(ctx, t, pool, "b")
	if code, out := cli("scrub-secrets"); code != 0 || !strings.Contains(out, "scrubbed 5 rows") {
		t.Errorf("scrub-secrets: exit %d, want 0 and 5 rows scrubbed:\n%s", code, out)
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
	texts["pg_dump"] = pgDump(t, dbURL)
	if !strings.Contains(texts["pg_dump"], "Invalid token: REDACTED") {
		t.Error("pg_dump holds no scrubbed echo: it did not dump the tables this test wrote")
	}
	// The echoed secrets in any case: a server may upper-case them.
	for _, where := range slices.Sorted(maps.Keys(texts)) {
		text := strings.ToLower(texts[where])
		for _, s := range echoSecrets {
			if i := strings.Index(text, s); i >= 0 {
				t.Errorf("echoed secret %q leaks in %s: …%s…", s, where, text[max(0, i-200):min(len(text), i+len(s)+40)])
			}
		}
	}
	for shape, n := range echo.echoed {
		if n.Load() == 0 {
			t.Errorf("the %s server received no credential to echo: the scenario did not happen", shape)
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

// The leak shapes: servers that echo the credential they received
// where no URL redaction sees it. Each runs on an origin of its own and
// answers every request in its shape, with the credential the request
// carried (the X-Esri-Authorization token, or the apikey parameter in any
// case), so what leaks is what ingestd sent.
const (
	echoArcGIS498  = "arcgis498"  // {"error":{"code":498,"message":"Invalid token: <token>"}}
	echoArcGISHTML = "arcgishtml" // an HTML page whose title names the token
	echoArcGIS500  = "arcgis500"  // error 500 whose details quote the request's header
	echoOGC403     = "ogc403"     // a 403 exception document: api key <key> may not read …
	echoOGCQuota   = "ogcquota"   // an HTML page: Quota exceeded for key <KEY>
	echoOGCNext    = "ogcnext"    // next links with APIKEY=<key>&session=<key>.1; page 2 fails
	echoSocrata403 = "socrata403" // a SODA 403 error body: Invalid app_token specified: <token>
)

// echoSecrets are the credential of each shape's feed: arcgis tokens from
// the environment, OGC API keys in the feed's url.
var echoSecrets = map[string]string{
	echoArcGIS498: "zqsecarctok498", echoArcGISHTML: "zqsecarctokhtml", echoArcGIS500: "zqsecarctok500",
	echoOGC403: "zqsecogckey403", echoOGCQuota: "zqsecogckeyquota", echoOGCNext: "zqsecogckeynext",
	echoSocrata403: "zqsecsocratatok403",
}

// echoServers are the hostile origins, by shape.
type echoServers struct {
	hosts  map[string]string
	echoed map[string]*atomic.Int64 // responses that held the credential
}

// newEchoServers starts one origin per shape until t ends; the next-link
// shape pages a collection of 25 parcels of api (an ogcapitest server).
func newEchoServers(t *testing.T) *echoServers {
	t.Helper()
	api := ogcapitest.New()
	api.Add("c", ogcapitest.Collection{Layer: layertest.Parcels{N: 25}})
	e := &echoServers{hosts: map[string]string{}, echoed: map[string]*atomic.Int64{}}
	for shape := range echoSecrets {
		n := &atomic.Int64{}
		ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			echoAnswer(w, r, shape, api, n)
		}))
		t.Cleanup(ts.Close)
		e.hosts[shape], e.echoed[shape] = strings.TrimPrefix(ts.URL, "http://"), n
	}
	return e
}

// echoAnswer answers r in shape, counting in n the answers that echoed a
// credential.
func echoAnswer(w http.ResponseWriter, r *http.Request, shape string, api *ogcapitest.Server, n *atomic.Int64) {
	tok := strings.TrimPrefix(r.Header.Get("X-Esri-Authorization"), "Bearer ")
	if app := r.Header.Get("X-App-Token"); app != "" {
		tok = app
	}
	var key string
	for k, vs := range r.URL.Query() {
		if strings.EqualFold(k, "apikey") && len(vs) > 0 {
			key = vs[0]
		}
	}
	if tok != "" || key != "" {
		n.Add(1)
	}
	writeJSON := func(status int, v any) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		_ = json.NewEncoder(w).Encode(v)
	}
	html := func(title string) {
		w.Header().Set("Content-Type", "text/html")
		fmt.Fprintf(w, "<!DOCTYPE html><html><head><title>%s</title></head><body><p>%s</p></body></html>", title, title)
	}
	switch shape {
	case echoArcGIS498:
		writeJSON(http.StatusOK, map[string]any{"error": map[string]any{"code": 498, "message": "Invalid token: " + tok, "details": []string{}}})
	case echoArcGISHTML:
		html("Token " + tok + " is not valid for this service")
	case echoArcGIS500:
		writeJSON(http.StatusOK, map[string]any{"error": map[string]any{"code": 500, "message": "Unable to complete operation.",
			"details": []string{"X-Esri-Authorization: " + r.Header.Get("X-Esri-Authorization")}}})
	case echoSocrata403:
		writeJSON(http.StatusForbidden, map[string]any{"error": true, "message": "Invalid app_token specified: " + tok})
	case echoOGC403:
		writeJSON(http.StatusForbidden, map[string]string{"code": "Forbidden", "description": "api key " + key + " may not read collection c"})
	case echoOGCQuota:
		html("Quota exceeded for key " + strings.ToUpper(key))
	case echoOGCNext:
		if r.URL.Query().Get("offset") == "10" {
			// The page after the first fails: the poll is parked with
			// the first page's next link staged.
			http.Error(w, "internal error", http.StatusInternalServerError)
			return
		}
		rec := httptest.NewRecorder()
		api.ServeHTTP(rec, r)
		body := rec.Body.String()
		if key != "" {
			// The key under another spelling, and inside another
			// parameter's value (JSON writes & as \u0026).
			body = strings.ReplaceAll(body, "apikey="+key, "APIKEY="+key+`\u0026session=`+key+".1")
		}
		maps.Copy(w.Header(), rec.Header())
		w.WriteHeader(rec.Code)
		_, _ = io.WriteString(w, body)
	}
}

// yaml is a jurisdiction of one feed per shape, whose breaker opens at the
// first failure (so the origin's failures park their polls), and env the
// variables its tokens come from.
func (e *echoServers) yaml() (yaml string, env []string) {
	yaml = `
  - id: hostile
    breaker:
      consecutive_failures: 1
      max_attempts: 1
      open_base: 10m
      open_max: 10m
    feeds:`
	for _, shape := range slices.Sorted(maps.Keys(echoSecrets)) {
		secret, host := echoSecrets[shape], e.hosts[shape]
		if shape == echoSocrata403 {
			v := "INGESTD_TEST_TOKEN_" + strings.ToUpper(shape)
			env = append(env, v+"="+secret)
			yaml += fmt.Sprintf(`
      - id: %s
        kind: socrata
        url: "http://%s/resource/abcd-1234.json"
        app_token: "${%s}"
        schedule: "@every 2s"`, shape, host, v)
			continue
		}
		if strings.HasPrefix(shape, "arcgis") {
			v := "INGESTD_TEST_TOKEN_" + strings.ToUpper(shape)
			env = append(env, v+"="+secret)
			yaml += fmt.Sprintf(`
      - id: %s
        kind: arcgis
        url: "http://%s/arcgis/rest/services/c/FeatureServer/0"
        token: "${%s}"
        schedule: "@every 2s"`, shape, host, v)
			continue
		}
		yaml += fmt.Sprintf(`
      - id: %s
        kind: ogcapi
        url: "http://%s/collections/c?apikey=%s"
        page_size: 10
        schedule: "@every 2s"`, shape, host, secret)
	}
	return yaml, env
}

// plantOldLeaks writes rows as a version before scrubbing by value left
// them: each
// shape's credential, as its server echoed it, in every table's texts, for
// a feed and an origin no poll will write again. tag tells two plantings
// apart.
func plantOldLeaks(ctx context.Context, t *testing.T, pool *pgxpool.Pool, tag string) {
	t.Helper()
	var echo []string
	for _, shape := range slices.Sorted(maps.Keys(echoSecrets)) {
		echo = append(echo, shape+": Invalid token: "+echoSecrets[shape])
	}
	text := strings.Join(echo, "; ")
	feed, origin := "old"+tag, "http://127.0.0.1:"+map[string]string{"a": "1", "b": "2"}[tag]
	key := echoSecrets[echoOGCNext]
	for _, q := range []struct {
		sql  string
		args []any
	}{
		{`INSERT INTO feed_status (jurisdiction, feed, url, last_error, held_reason) VALUES ('hostile', $1, 'http://h/c', $2, $2)`, []any{feed, text}},
		{`INSERT INTO polls (jurisdiction, feed, url, status, error) VALUES ('hostile', $1, 'http://h/c', 'refused', $2)`, []any{feed, text}},
		{`INSERT INTO staged_pages (poll_id, page, features, next_link)
			SELECT max(id), 0, 10, 'http://h/c/items?APIKEY=' || $2 || '&offset=10' FROM polls WHERE feed = $1`, []any{feed, key}},
		{`INSERT INTO dead_letter (jurisdiction, feed, url, origin, reason, retry_after, status, last_error)
			VALUES ('hostile', $1, 'http://h/c', $2, 'failed', now(), 'abandoned', $3)`, []any{feed, origin, text}},
		{`INSERT INTO breaker_state (origin, state, last_error, override_reason) VALUES ($1, 'closed', $2, $2)`, []any{origin, text}},
	} {
		if _, err := pool.Exec(ctx, q.sql, q.args...); err != nil {
			t.Fatalf("planting old leaks: %s: %v", q.sql, err)
		}
	}
}

// pgDump returns the whole test database as pg_dump writes it: every
// table's rows, whatever the test's own dump misses.
func pgDump(t *testing.T, dbURL string) string {
	t.Helper()
	bin, err := exec.LookPath("pg_dump")
	if err != nil {
		found, _ := filepath.Glob("/usr/lib/postgresql/*/bin/pg_dump")
		if len(found) == 0 {
			t.Fatal("pg_dump not found (PATH, /usr/lib/postgresql/*/bin)")
		}
		bin = found[len(found)-1]
	}
	out, err := exec.CommandContext(t.Context(), bin, "--no-owner", "--no-privileges", dbURL).Output()
	if err != nil {
		t.Fatalf("pg_dump: %v", err)
	}
	return string(out)
}

// checkEchoesScrubbed checks that each shape's echo reached the stored text
// and was scrubbed there: finding no secret proves nothing if the echo
// never got that far.
func checkEchoesScrubbed(ctx context.Context, t *testing.T, pool *pgxpool.Pool, e *echoServers) {
	t.Helper()
	want := map[string]string{
		echoArcGIS498:  "Invalid token: REDACTED",
		echoArcGISHTML: "Token REDACTED is not valid",
		echoArcGIS500:  "X-Esri-Authorization: REDACTED", // "Bearer …" is the header's value, one secret
		echoOGC403:     "api key REDACTED may not read collection c",
		echoOGCQuota:   "Quota exceeded for key REDACTED",
		echoSocrata403: "Invalid app_token specified: REDACTED",
	}
	for shape, w := range want {
		var last string
		if err := pool.QueryRow(ctx, `SELECT coalesce(last_error, '') FROM feed_status WHERE jurisdiction = 'hostile' AND feed = $1`, shape).Scan(&last); err != nil {
			t.Fatalf("feed_status of hostile/%s: %v", shape, err)
		}
		if !strings.Contains(last, w) {
			t.Errorf("hostile/%s: last_error %q lacks %q", shape, last, w)
		}
	}
	// The parked OGC API poll keeps page 0's next link for its resume's
	// proof, its paging kept and its key out (the feed's APIKEY= left out,
	// session=<key>.1 scrubbed by value; the dumps find no secret); the
	// failing page's link (APIKEY=<key>&session=<key>.1) reaches the stored
	// error, scrubbed, its paging kept.
	var links int
	var link, lastErr string
	if err := pool.QueryRow(ctx, `SELECT (SELECT count(*) FROM staged_pages s JOIN polls p ON p.id = s.poll_id
		WHERE p.jurisdiction = 'hostile' AND p.feed = $1 AND s.next_link IS NOT NULL),
		coalesce((SELECT min(s.next_link) FROM staged_pages s JOIN polls p ON p.id = s.poll_id WHERE p.jurisdiction = 'hostile' AND p.feed = $1), ''),
		coalesce((SELECT error FROM polls WHERE jurisdiction = 'hostile' AND feed = $1 AND error IS NOT NULL ORDER BY id DESC LIMIT 1), '')`,
		echoOGCNext).Scan(&links, &link, &lastErr); err != nil {
		t.Fatalf("staged next links of hostile/%s: %v", echoOGCNext, err)
	}
	if links != 1 || !strings.Contains(link, "offset=10") || strings.Contains(strings.ToLower(link), "apikey") {
		t.Errorf("hostile/%s: %d staged next links (%q), want page 0's with offset=10 and no APIKEY", echoOGCNext, links, link)
	}
	if !strings.Contains(lastErr, "offset=10") || !strings.Contains(lastErr, "APIKEY=REDACTED") || !strings.Contains(lastErr, "session=REDACTED") {
		t.Errorf("hostile/%s: last error %q, want the failing page's link with APIKEY=REDACTED, session=REDACTED and offset=10", echoOGCNext, lastErr)
	}
}
