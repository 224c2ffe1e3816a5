package file_test

import (
	"archive/zip"
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/ingestd/ingestd/breaker"
	"github.com/ingestd/ingestd/config"
	"github.com/ingestd/ingestd/feature"
	"github.com/ingestd/ingestd/file"
	"github.com/ingestd/ingestd/internal/ftptest"
)

// zipOne zips one file.
func zipOne(t testing.TB, name, body string) []byte {
	t.Helper()
	var b bytes.Buffer
	zw := zip.NewWriter(&b)
	w, err := zw.Create(name)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Write([]byte(body)); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// testRegistry is a breaker registry whose retries wait a millisecond, so
// that a test of three failing attempts does not wait out real backoffs.
func testRegistry(t *testing.T) *breaker.Registry {
	t.Helper()
	p := breaker.DefaultPolicy()
	p.RateLimit = 0
	p.BackoffBase, p.BackoffMax = time.Millisecond, time.Millisecond
	return breaker.NewRegistry(breaker.Config{Policy: p}, nil)
}

const ftpCSV = "id,lon,lat,addr\n1,-78.6,35.7,12 MAIN ST\n2,-78.7,35.8,9 ELM ST\n"

// TestFTPDownload: a zipped CSV on the real FTP server (vsftpd) is read
// whole; its MDTM and SIZE are the validators, and the next fetch with
// them sends no RETR and is not modified; a rewritten file (another
// second, another size) is downloaded again. A gzipped CSV is read as the
// CSV it holds.
func TestFTPDownload(t *testing.T) {
	t.Parallel()
	srv := ftptest.Real(t)
	dir, folder := srv.Folder(t)
	mtime := time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)
	ftptest.Put(t, dir, "pts.zip", zipOne(t, "pts.csv", ftpCSV), mtime)
	ftptest.Put(t, dir, "pts.csv.gz", []byte(gzipped(t, ftpCSV)), mtime)
	proxy := ftptest.NewProxy(t, srv.Addr)
	tmp := t.TempDir()
	c := file.NewClient(nil, testRegistry(t), nil, file.WithTempDir(tmp))

	l := layer("ftp://"+proxy.Addr()+"/"+folder+"/pts.zip", file.Settings{X: "lon", Y: "lat"})
	var col collect
	stats, err := c.Fetch(t.Context(), l, 0, col.handle)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"id":1,"addr":"12 MAIN ST"}` + "\n" + `{"id":2,"addr":"9 ELM ST"}`
	if got := strings.Join(col.props, "\n"); got != want || stats.Features != 2 {
		t.Errorf("features\n%s\nwant\n%s", got, want)
	}
	if v := stats.Validators.Version; !strings.Contains(v, "mdtm=20261101120000") || !strings.Contains(v, fmt.Sprintf("size=%d", stats.Bytes)) {
		t.Errorf("validators %+v after %d bytes: want MDTM and SIZE", stats.Validators, stats.Bytes)
	}
	if n := proxy.Count("RETR"); n != 1 {
		t.Fatalf("%d RETR for one download", n)
	}

	l.Validators = stats.Validators
	col = collect{}
	again, err := c.Fetch(t.Context(), l, 0, col.handle)
	if err != nil || !again.NotModified || len(col.props) != 0 || again.Validators != stats.Validators {
		t.Errorf("second fetch: %+v, %v, %d features; want not modified", again, err, len(col.props))
	}
	if n, mdtm := proxy.Count("RETR"), proxy.Count("MDTM"); n != 1 || mdtm != 2 {
		t.Errorf("%d RETR and %d MDTM after the second fetch; want 1 and 2", n, mdtm)
	}

	ftptest.Put(t, dir, "pts.zip", zipOne(t, "pts.csv", ftpCSV+"3,-78.8,35.9,1 OAK ST\n"), mtime.Add(time.Second))
	col = collect{}
	third, err := c.Fetch(t.Context(), l, 0, col.handle)
	if err != nil || third.NotModified || len(col.props) != 3 || third.Validators == stats.Validators {
		t.Errorf("fetch of the rewritten file: %+v, %v, %d features", third, err, len(col.props))
	}

	col = collect{}
	if _, err := c.Fetch(t.Context(), layer("ftp://"+srv.Addr+"/"+folder+"/pts.csv.gz", file.Settings{X: "lon", Y: "lat"}), 0, col.handle); err != nil || len(col.props) != 2 {
		t.Errorf("gzipped CSV: %v, %d features", err, len(col.props))
	}
	noDownloadsLeft(t, tmp)
}

// TestFTPCutTransfer: a data connection that ends cleanly mid-file (a
// proxy cuts it) is a failed attempt, retried, and the call fails after
// its attempts with the breaker's *RetryError around the count of bytes;
// the handler never sees a feature. A file over limits.body_bytes (SIZE
// says so) is refused without a RETR, the feed's error, not retried.
func TestFTPCutTransfer(t *testing.T) {
	t.Parallel()
	srv := ftptest.Real(t)
	dir, folder := srv.Folder(t)
	body := zipOne(t, "pts.csv", ftpCSV+strings.Repeat("9,-78.8,35.9,1 OAK ST\n", 2000))
	ftptest.Put(t, dir, "pts.zip", body, time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC))
	proxy := ftptest.NewProxy(t, srv.Addr)
	proxy.CutAfter(int64(len(body) / 2))
	tmp := t.TempDir()
	c := file.NewClient(nil, testRegistry(t), nil, file.WithTempDir(tmp))
	var col collect
	_, err := c.Fetch(t.Context(), layer("ftp://"+proxy.Addr()+"/"+folder+"/pts.zip", file.Settings{}), 0, col.handle)
	var retry *breaker.RetryError
	if !errors.As(err, &retry) || !errors.Is(err, file.ErrFTPShort) || !strings.Contains(err.Error(), fmt.Sprintf("%d of %d bytes", len(body)/2, len(body))) {
		t.Fatalf("cut transfer: %v; want a *breaker.RetryError around %v with the byte counts", err, file.ErrFTPShort)
	}
	t.Logf("%v", err)
	if n := proxy.Count("RETR"); n != retry.Attempts || n < 2 {
		t.Errorf("%d RETR for %d attempts", n, retry.Attempts)
	}
	if len(col.props) != 0 {
		t.Errorf("%d features handed over from a cut transfer", len(col.props))
	}

	proxy.CutAfter(0)
	l := layer("ftp://"+proxy.Addr()+"/"+folder+"/pts.zip", file.Settings{})
	l.Limits = feature.Limits{BodyBytes: int64(len(body) - 1)}.WithDefaults()
	retrs := proxy.Count("RETR")
	_, err = c.Fetch(t.Context(), l, 0, col.handle)
	var le *feature.LimitError
	if !errors.As(err, &le) || errors.As(err, &retry) || proxy.Count("RETR") != retrs {
		t.Errorf("a file over body_bytes: %v, %d RETR more; want a LimitError at once, no RETR", err, proxy.Count("RETR")-retrs)
	}
	noDownloadsLeft(t, tmp)
}

// TestFTPRefusals: a missing file and a login the server refuses are the
// feed's errors (the server answered: one attempt, no retry), naming the
// path; the URL's credentials are in no error. An unreachable server is
// the origin's failure, retried, and its breaker, keyed ftp://host:port,
// opens after its consecutive failures and then refuses without dialling.
func TestFTPRefusals(t *testing.T) {
	t.Parallel()
	srv := ftptest.Real(t)
	_, folder := srv.Folder(t)
	proxy := ftptest.NewProxy(t, srv.Addr)
	c := file.NewClient(nil, testRegistry(t), nil, file.WithTempDir(t.TempDir()))
	var col collect

	_, err := c.Fetch(t.Context(), layer("ftp://"+proxy.Addr()+"/"+folder+"/missing.zip", file.Settings{}), 0, col.handle)
	var re *file.ReplyError
	var retry *breaker.RetryError
	if !errors.Is(err, file.ErrNoFile) || !errors.As(err, &re) || re.Code != 550 || errors.As(err, &retry) ||
		!strings.Contains(err.Error(), folder+"/missing.zip") || proxy.Count("RETR") != 1 {
		t.Errorf("missing file: %v (%d RETR); want one RETR and %v naming the path", err, proxy.Count("RETR"), file.ErrNoFile)
	}
	t.Logf("%v", err)

	const user, password = "gisreader7", "s3cretpassw0rd"
	_, err = c.Fetch(t.Context(), layer("ftp://"+user+":"+password+"@"+proxy.Addr()+"/"+folder+"/x.zip", file.Settings{}), 0, col.handle)
	if !errors.As(err, &re) || !strings.Contains(err.Error(), "logging in") || !strings.Contains(err.Error(), "refused: This FTP server is anonymous only") ||
		errors.As(err, &retry) || proxy.Count("USER") != 2 {
		t.Errorf("refused login: %v (%d USER); want one attempt, refused", err, proxy.Count("USER"))
	}
	if msg := fmt.Sprint(err); strings.Contains(msg, password) || strings.Contains(msg, user) {
		t.Errorf("the error shows the URL's credentials: %s", msg)
	}
	t.Logf("%v", err)

	// A loopback port nobody listens on.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := ln.Addr().String()
	ln.Close()
	var open *breaker.OpenError
	for i := 0; i < 10 && !errors.As(err, &open); i++ {
		_, err = c.Fetch(t.Context(), layer("ftp://"+dead+"/x.zip", file.Settings{}), 0, col.handle)
		if !errors.As(err, &open) && !errors.As(err, &retry) {
			t.Fatalf("call %d to a dead port: %v; want a *breaker.RetryError", i+1, err)
		}
	}
	if !errors.As(err, &open) || open.Origin != "ftp://"+dead {
		t.Errorf("after the dead port's failures: %v; want its breaker (ftp://%s) open", err, dead)
	}
}

// TestFTPSettings: a file feed's url may be ftp://, naming a file (not a
// folder); its headers, HTTP's, are ignored with a warning and not sent;
// any other kind's url is still http or https only.
func TestFTPSettings(t *testing.T) {
	t.Parallel()
	good := `
jurisdictions:
  - id: sioux
    headers: {Accept-Language: en}
    feeds:
      - {id: addresses, kind: file, url: "ftp://ftp.example.org/gis/Address 84.zip", headers: {Accept: "*/*"}}
`
	cfg, err := config.Parse("good.yaml", []byte(good), nil)
	if err != nil {
		t.Fatal(err)
	}
	f := cfg.Jurisdictions[0].Feeds[0]
	if f.URL != "ftp://ftp.example.org/gis/Address 84.zip" || len(f.Headers) != 0 {
		t.Errorf("feed %s: url %q, headers %v", f.Key(), f.URL, f.Headers)
	}
	if len(cfg.Warnings) != 1 || !strings.Contains(cfg.Warnings[0].Error(), "feeds[0].headers: ignored for an ftp:// url") {
		t.Errorf("warnings %v", cfg.Warnings)
	}
	bad := `
jurisdictions:
  - id: sioux
    feeds:
      - {id: a, kind: file, url: "ftp://ftp.example.org/gis/"}
      - {id: b, kind: geojson, url: "ftp://ftp.example.org/b.geojson"}
      - {id: c, kind: file, url: "sftp://ftp.example.org/c.zip"}
`
	_, err = config.Parse("bad.yaml", []byte(bad), nil)
	for _, want := range []string{
		`feeds[0].url: an ftp:// url names a file, not a folder`,
		`feeds[1].url: bad url: scheme "ftp" not supported; use http or https`,
		`feeds[2].url: bad url: scheme "sftp" not supported; use http, https or ftp`,
	} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("errors lack %q:\n%v", want, err)
		}
	}
}

// TestFTPStalledTransfer: jlaffaye/ftp reads without a context, so a
// transfer that falls silent halfway (a proxy holds the data connection
// open) is ended by closing the attempt's connections: at the attempt's
// timeout (request_timeout) a failed attempt that says so, retried; at the
// caller's cancellation an error that wraps it, at once.
func TestFTPStalledTransfer(t *testing.T) {
	t.Parallel()
	srv := ftptest.Real(t)
	dir, folder := srv.Folder(t)
	body := zipOne(t, "pts.csv", ftpCSV)
	ftptest.Put(t, dir, "pts.zip", body, time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC))
	proxy := ftptest.NewProxy(t, srv.Addr)
	proxy.CutAfter(int64(len(body) / 2))
	proxy.Stall(true)
	c := file.NewClient(nil, testRegistry(t), nil, file.WithTempDir(t.TempDir()))
	l := layer("ftp://"+proxy.Addr()+"/"+folder+"/pts.zip", file.Settings{})
	l.RequestTimeout = 300 * time.Millisecond
	var col collect
	_, err := c.Fetch(t.Context(), l, 0, col.handle)
	var retry *breaker.RetryError
	if !errors.As(err, &retry) || !strings.Contains(err.Error(), "attempt timed out after 300ms") ||
		!strings.Contains(err.Error(), fmt.Sprintf("failed after %d bytes", len(body)/2)) || proxy.Count("RETR") != retry.Attempts {
		t.Fatalf("stalled transfer: %v; want each attempt timed out, %d RETR", err, proxy.Count("RETR"))
	}

	for range retry.Attempts { // the timed-out attempts' stalls
		<-proxy.Stalled()
	}
	l.RequestTimeout = time.Hour
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() {
		_, err := c.Fetch(ctx, l, 0, col.handle)
		done <- err
	}()
	<-proxy.Stalled()
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled mid-transfer: %v; want context.Canceled", err)
	}
}
