// Package interoptest holds what the interop tests of the protocols
// (wfs/interop, ogcapi/interop, arcgis/interop) share: reaching a real
// server that the test command starts (MapServer, Koop), the policy of
// failing under CI=true rather than skipping, the nc.gpkg that
// scripts/mapserver.sh extracts, and running GDAL (ogr2ogr, the reference
// reader) against the test's database. What each protocol compares, and
// how, stays in its own tests.
package interoptest

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
)

// Unavailable fails t under CI=true, where the test command starts every
// server the tests need, and skips it otherwise.
func Unavailable(t testing.TB, msg string) {
	t.Helper()
	if os.Getenv("CI") == "true" {
		t.Fatal(msg)
	}
	t.Skip(msg)
}

// Server is a real server a script of the repository starts.
type Server struct {
	// What names it in the message when it does not answer ("MapServer WFS").
	What string
	// URLEnv is the variable that gives its URL (scripts/test.sh exports
	// it); PortEnv, DefaultPort and Path make the script's default URL,
	// http://127.0.0.1:port/path, when URLEnv is unset.
	URLEnv, PortEnv, DefaultPort, Path string
	// Probe is appended to the URL for the request that must answer 200.
	Probe string
	// Start says how to start it.
	Start string
}

// URL returns the server's URL when it answers the probe; otherwise it
// fails or skips t (Unavailable).
func (s Server) URL(t testing.TB) string {
	t.Helper()
	u := os.Getenv(s.URLEnv)
	if u == "" {
		port := os.Getenv(s.PortEnv)
		if port == "" {
			port = s.DefaultPort
		}
		u = "http://127.0.0.1:" + port + s.Path
	}
	if err := Answers(t, http.MethodGet, u+s.Probe); err != nil {
		Unavailable(t, fmt.Sprintf("no %s at %s: %v; %s", s.What, u, err, s.Start))
		return ""
	}
	return u
}

// probeWait bounds the probe. A server that is not there refuses the
// connection at once; one that is there may be slow to answer: MapServer
// runs as a CGI, one process per request, and on a busy 2-core machine
// the other packages' tests queue their requests beside this one.
const probeWait = 3 * time.Minute

// Answers reports why a request of method at u did not answer 200 (nil
// when it did), waiting up to probeWait for the answer.
func Answers(t testing.TB, method, u string) error {
	ctx, cancel := context.WithTimeout(t.Context(), probeWait)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, method, u, nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("HTTP %d", resp.StatusCode)
	}
	return nil
}

// NCGpkg is the file MapServer serves, the North Carolina counties of
// r-cran-sf's nc.gpkg: INGESTD_NC_GPKG, else where scripts/mapserver.sh
// extracts it (.mapserver/data at the repo root, seen from a package two
// levels down).
func NCGpkg(t testing.TB) string {
	t.Helper()
	p := os.Getenv("INGESTD_NC_GPKG")
	if p == "" {
		p = filepath.Join(moduleRoot(), ".mapserver", "data", "nc.gpkg")
	}
	if _, err := os.Stat(p); err != nil {
		Unavailable(t, fmt.Sprintf("nc.gpkg: %v (scripts/mapserver.sh start extracts it)", err))
	}
	return p
}

// ModuleRoot is the directory of the go.mod above the test's package,
// where the scripts keep their servers' folders (.mapserver, .ftp).
func ModuleRoot() string { return moduleRoot() }

// moduleRoot is the directory of the go.mod above the test's package
// (where scripts/mapserver.sh keeps .mapserver), whatever the package's
// depth; "." when there is none.
func moduleRoot() string {
	dir, err := os.Getwd()
	if err != nil {
		return "."
	}
	for d := dir; ; d = filepath.Dir(d) {
		if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil {
			return d
		}
		if filepath.Dir(d) == d {
			return "."
		}
	}
}

// PGDataset is GDAL's PG: dataset for the database pool connects to (GDAL
// reads libpq keyword/value pairs, not a URL), and the environment a GDAL
// command needs for it: its password as PGPASSWORD, never on the command
// line.
func PGDataset(pool *pgxpool.Pool) (dataset string, env []string) {
	pc := pool.Config().ConnConfig
	env = os.Environ()
	if pc.Password != "" {
		env = append(env, "PGPASSWORD="+pc.Password)
	}
	return fmt.Sprintf("PG:host=%s port=%d user=%s dbname=%s", pc.Host, pc.Port, pc.User, pc.Database), env
}

// GDAL runs a GDAL command (ogr2ogr, ogrinfo) with env and returns its
// output; it fails t with the output when the command fails, and calls
// Unavailable when the command is not installed.
func GDAL(t testing.TB, env []string, command string, args ...string) []byte {
	t.Helper()
	if _, err := exec.LookPath(command); err != nil {
		Unavailable(t, command+" not found (Debian gdal-bin; scripts/mapserver.sh installs it)")
	}
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, command, args...)
	cmd.Env = env
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s %v: %v\n%s", command, args, err, out)
	}
	return out
}

// OGR2OGR loads what args name into the database pool connects to:
// ogr2ogr -f PostgreSQL PG:… args….
func OGR2OGR(t testing.TB, pool *pgxpool.Pool, args ...string) {
	t.Helper()
	pg, env := PGDataset(pool)
	GDAL(t, env, "ogr2ogr", append([]string{"-f", "PostgreSQL", pg}, args...)...)
}

// Lighttpd is the static server scripts/mapserver.sh starts (it serves
// MapServer's WFS too, which is what its probe asks).
var Lighttpd = Server{
	What:   "lighttpd (scripts/mapserver.sh)",
	URLEnv: "INGESTD_MAPSERVER_URL", PortEnv: "INGESTD_MAPSERVER_PORT", DefaultPort: "18180", Path: "/wfs",
	Probe: "?SERVICE=WFS&REQUEST=GetCapabilities&VERSION=2.0.0",
	Start: "start it with `scripts/mapserver.sh start` and export INGESTD_MAPSERVER_URL=$(scripts/mapserver.sh url)",
}

// Served puts files (name → bytes) in a fresh folder, named with prefix, of
// Lighttpd's document root and returns the folder's base URL; the folder is
// removed when the test ends. The document root is INGESTD_MAPSERVER_DOCROOT,
// else scripts/mapserver.sh's .mapserver/run at the module's root. A probe
// file proves lighttpd serves the folder; when it does not, the test skips
// (fails under CI=true).
func Served(t testing.TB, prefix string, files map[string][]byte) string {
	t.Helper()
	root := strings.TrimSuffix(Lighttpd.URL(t), "/wfs")
	docroot := os.Getenv("INGESTD_MAPSERVER_DOCROOT")
	if docroot == "" {
		docroot = filepath.Join(moduleRoot(), ".mapserver", "run")
	}
	dir, err := os.MkdirTemp(docroot, prefix)
	if err != nil {
		Unavailable(t, fmt.Sprintf("lighttpd's document root %s: %v (set INGESTD_MAPSERVER_DOCROOT)", docroot, err))
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "probe.txt"), []byte("probe"), 0o644); err != nil {
		t.Fatal(err)
	}
	for name, b := range files {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	base := root + "/" + filepath.Base(dir)
	resp, err := http.Get(base + "/probe.txt")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		Unavailable(t, fmt.Sprintf("lighttpd does not serve %s (HTTP %d): set INGESTD_MAPSERVER_DOCROOT to its document root", dir, resp.StatusCode))
	}
	return base
}
