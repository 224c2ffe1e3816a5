package interop_test

import (
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ingestd/ingestd/breaker"
	"github.com/ingestd/ingestd/config"
	"github.com/ingestd/ingestd/deadletter"
	"github.com/ingestd/ingestd/feeds"
	"github.com/ingestd/ingestd/feeds/postgis"
	"github.com/ingestd/ingestd/internal/ftptest"
	"github.com/ingestd/ingestd/internal/interoptest"
	"github.com/ingestd/ingestd/internal/kindconf"
	"github.com/ingestd/ingestd/migrations/pgtest"
)

// TestFTPPolls polls ftp:// feeds from the real FTP server scripts/ftp.sh
// starts (vsftpd), through a loopback proxy that counts the client's
// commands and can cut a transfer, with a dead-letter queue and a breaker
// that opens after two failed calls:
//
//   - the North Carolina counties as a zipped Shapefile in NAD27 load
//     complete, every county equal to GDAL's reading of the same zip;
//   - the second poll of the unchanged file is not_modified by its MDTM
//     and SIZE, with no RETR;
//   - the file rewritten, its transfer cut mid-file: the poll fails after
//     its attempts and is parked (reason failed, origin ftp://…), and the
//     feed keeps the 100 counties it had;
//   - a second feed of the origin cut the same way opens the breaker, and
//     a third is refused without a connection and parked circuit_open;
//   - a missing file fails its poll naming the feed and the path, not
//     parked; a refused login likewise, and no table holds the URL's
//     credentials.
func TestFTPPolls(t *testing.T) {
	srv := ftptest.Real(t)
	gpkg := interoptest.NCGpkg(t)
	gen := t.TempDir()
	interoptest.GDAL(t, os.Environ(), "ogr2ogr", "-f", "ESRI Shapefile", "-t_srs", "EPSG:4267", filepath.Join(gen, "nc.shp"), gpkg, "nc.gpkg")
	part := func(ext string) []byte { return read(t, filepath.Join(gen, "nc"+ext)) }
	ncZip := zipOf(t, "counties/nc.shp", part(".shp"), "counties/nc.shx", part(".shx"), "counties/nc.dbf", part(".dbf"), "counties/nc.prj", part(".prj"))
	if err := os.WriteFile(filepath.Join(gen, "nc.zip"), ncZip, 0o644); err != nil {
		t.Fatal(err)
	}
	dir, folder := srv.Folder(t)
	mtime := time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)
	for _, name := range []string{"nc.zip", "other.zip", "third.zip"} {
		ftptest.Put(t, dir, name, ncZip, mtime)
	}
	proxy := ftptest.NewProxy(t, srv.Addr)
	const user, password = "gisreader7", "s3cretpassw0rd"
	doc := `
jurisdictions:
  - id: nc
    feeds:
      - {id: ftp_shp, kind: file, url: "ftp://` + proxy.Addr() + `/` + folder + `/nc.zip", id_property: FIPS}
      - {id: ftp_other, kind: file, url: "ftp://` + proxy.Addr() + `/` + folder + `/other.zip", id_property: FIPS}
      - {id: ftp_third, kind: file, url: "ftp://` + proxy.Addr() + `/` + folder + `/third.zip", id_property: FIPS}
      - {id: ftp_missing, kind: file, url: "ftp://` + srv.Addr + `/` + folder + `/missing.zip"}
      - {id: ftp_login, kind: file, url: "ftp://` + user + `:` + password + `@` + srv.Addr + `/` + folder + `/nc.zip"}
`
	cfg, err := config.Parse("ftp.yaml", []byte(doc), nil)
	if err != nil {
		t.Fatalf("config: %v\n%s", err, doc)
	}
	pool := pgtest.Pool(t)
	p := breaker.DefaultPolicy()
	p.RateLimit = 0
	p.ConsecutiveFailures = 2
	p.BackoffBase, p.BackoffMax = time.Millisecond, time.Millisecond
	reg := breaker.NewRegistry(breaker.Config{Policy: p}, nil)
	t.Setenv("TMPDIR", t.TempDir()) // where the downloads go (os.TempDir)
	mgr := feeds.NewManager(postgis.New(pool), feeds.NewFetchers(kindconf.FetcherDeps{HTTP: &http.Client{}, Breakers: reg}),
		feeds.WithDeadLetters(deadletter.NewQueue(pool), cfg.DeadLetter))
	t.Cleanup(mgr.Stop)
	if err := mgr.Update(t.Context(), cfg); err != nil {
		t.Fatal(err)
	}
	f := &fixture{gen: gen, pool: pool, mgr: mgr}
	ctx := t.Context()
	interoptest.OGR2OGR(t, pool, "/vsizip/"+filepath.Join(gen, "nc.zip")+"/counties/nc.shp", "-nln", "gdal_ftp", "-lco", "GEOMETRY_NAME=geom", "-nlt", "GEOMETRY")

	f.loadsLikeGDAL(t, "ftp_shp", "gdal_ftp")
	res, err := mgr.Poll(ctx, "nc/ftp_shp")
	if err != nil || !res.NotModified || proxy.Count("RETR") != 1 {
		t.Errorf("second poll of the unchanged file: %+v, %v, %d RETR in all; want not modified and one RETR", res, err, proxy.Count("RETR"))
	}

	rewritten := zipOf(t, "counties/nc.shp", part(".shp"), "counties/nc.shx", part(".shx"), "counties/nc.dbf", part(".dbf"))
	ftptest.Put(t, dir, "nc.zip", rewritten, mtime.Add(time.Hour))
	ftptest.Put(t, dir, "other.zip", rewritten, mtime.Add(time.Hour))
	proxy.CutAfter(int64(len(rewritten) / 2))
	before := f.checksum(t, "ftp_shp")
	parked := func(feed, reason string) {
		t.Helper()
		_, err := mgr.Poll(ctx, "nc/"+feed)
		if err == nil || !strings.Contains(err.Error(), "nc/"+feed) {
			t.Fatalf("poll of %s: %v; want it to fail naming the feed", feed, err)
		}
		t.Logf("%s: %v", feed, err)
		var got, origin, url string
		if err := pool.QueryRow(ctx, `SELECT reason, origin, url FROM dead_letter WHERE jurisdiction = 'nc' AND feed = $1`, feed).Scan(&got, &origin, &url); err != nil {
			t.Fatalf("the dead letter of %s: %v", feed, err)
		}
		if got != reason || origin != "ftp://"+proxy.Addr() || !strings.HasPrefix(url, "ftp://"+proxy.Addr()+"/") {
			t.Errorf("%s parked as %s, origin %s, url %s; want %s at ftp://%s", feed, got, origin, url, reason, proxy.Addr())
		}
	}
	parked("ftp_shp", "failed")
	if after := f.checksum(t, "ftp_shp"); after != before {
		t.Errorf("the cut transfer changed the feed's features: %s, was %s", after, before)
	}
	parked("ftp_other", "failed")
	users := proxy.Count("USER")
	parked("ftp_third", "circuit_open")
	if n := proxy.Count("USER"); n != users {
		t.Errorf("%d sessions opened through an open breaker", n-users)
	}

	for _, tc := range []struct{ feed, cause string }{
		{"ftp_missing", folder + "/missing.zip: no such file on the server (550"},
		{"ftp_login", "refused: This FTP server is anonymous only"},
	} {
		_, err := mgr.Poll(ctx, "nc/"+tc.feed)
		if err == nil || !strings.Contains(err.Error(), "nc/"+tc.feed) || !strings.Contains(err.Error(), tc.cause) {
			t.Errorf("poll of %s: %v; want it to name the feed and %q", tc.feed, err, tc.cause)
		}
		t.Logf("%s: %v", tc.feed, err)
		var letters int
		if err := pool.QueryRow(ctx, `SELECT count(*) FROM dead_letter WHERE feed = $1`, tc.feed).Scan(&letters); err != nil || letters != 0 {
			t.Errorf("%s: %d dead letters, %v; the server answered: nothing to retry", tc.feed, letters, err)
		}
		if n := f.count(t, tc.feed); n != 0 {
			t.Errorf("%s: %d features", tc.feed, n)
		}
	}
	var stored string
	if err := pool.QueryRow(ctx, `SELECT concat_ws(' ', (SELECT string_agg(p::text, ' ') FROM polls p), (SELECT string_agg(s::text, ' ') FROM feed_status s),
		(SELECT string_agg(d::text, ' ') FROM dead_letter d))`).Scan(&stored); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(stored, password) || strings.Contains(stored, user) || !strings.Contains(stored, "REDACTED") {
		t.Errorf("the polls, feed_status and dead_letter tables hold the URL's credentials, or no redacted URL:\n%s", stored)
	}
}

// checksum is a digest of feed's features (ids, properties, geometries).
func (f *fixture) checksum(t *testing.T, feed string) string {
	t.Helper()
	var sum string
	if err := f.pool.QueryRow(t.Context(), `SELECT count(*) || ':' || coalesce(md5(string_agg(feature_id || properties::text || ST_AsEWKB(geom)::text, ',' ORDER BY feature_id)), '')
		FROM features WHERE jurisdiction = 'nc' AND feed = $1`, feed).Scan(&sum); err != nil {
		t.Fatal(err)
	}
	return sum
}
