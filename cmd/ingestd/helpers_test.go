package main

import (
	"bytes"
	"errors"
	"fmt"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/ingestd/ingestd/internal/layertest"
	"github.com/ingestd/ingestd/migrations/pgtest"
	"github.com/ingestd/ingestd/wfs/wfstest"
)

// Helpers shared by the tests that run ingestd, in this process or as the
// built binary: the build, a run of one subcommand, a database and a fixture
// origin.

// syncBuffer collects a subprocess's output while the test reads it.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestMain runs up to 8 tests at once, fewer on a machine of one core (see
// pgtest.Main: they wait on ingestd processes, PostgreSQL and loopback
// servers far more than they compute; the heavy ones also take shares of
// the cores, see heavy) and removes the ingestd binary they share (see
// buildIngestd) once every test has run.
func TestMain(m *testing.M) {
	code := pgtest.Main(m, 8)
	if dir, err := binDir(); err == nil && dir != "" {
		_ = os.RemoveAll(dir)
	}
	os.Exit(code)
}

// builtIngestd builds this command once per test binary, on first use: the
// tests that run the binary run in parallel, and one link instead of one
// per test saves seconds of CPU on a 2-core machine. It is set once and
// never changed; a failed build is remembered, and reported by every test
// that asks.
var builtIngestd = sync.OnceValues(func() (string, error) {
	dir, err := binDir()
	if err != nil {
		return "", err
	}
	bin := filepath.Join(dir, "ingestd")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build: %v\n%s", err, out)
	}
	return bin, nil
})

// binDir is the temporary directory that holds the shared binary, made on
// first use.
var binDir = sync.OnceValues(func() (string, error) {
	return os.MkdirTemp("", "ingestd-test-bin-")
})

// buildIngestd returns the path of this command built by builtIngestd, or
// ends the test when it does not build.
func buildIngestd(t testing.TB) string {
	t.Helper()
	bin, err := builtIngestd()
	if err != nil {
		t.Fatal(err)
	}
	return bin
}

// runCLI runs ingestd with args in this process, as main does, and returns
// its exit code and what it wrote to stdout and stderr.
func runCLI(t testing.TB, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	code = run(args, &out, &errb)
	return code, out.String(), errb.String()
}

// runBin runs the ingestd binary and returns its exit code and output.
func runBin(t *testing.T, bin string, args ...string) (int, string) {
	t.Helper()
	return runBinEnv(t, nil, bin, args...)
}

// runBinEnv is runBin with the environment env (nil: this process's). An
// exit status is the binary's answer and is returned; failing to run it at
// all ends the test.
func runBinEnv(t *testing.T, env []string, bin string, args ...string) (int, string) {
	t.Helper()
	cmd := exec.CommandContext(t.Context(), bin, args...)
	cmd.Env = env
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.ExitCode(), string(out)
	}
	if err != nil {
		t.Fatalf("ingestd %v: %v", args, err)
	}
	return 0, string(out)
}

// What the tests reserve of the server for each ingestd process running at
// once on a test's database: ingestdConns for an `ingestd run` (its pool is
// capped so, see ingestdURL) or a one-off command, pollConns for a one-off
// poll of TestHostileCorpus's workers, whose pools are capped so.
const (
	ingestdConns = 8
	pollConns    = 4
)

// ingestdURL is dbURL for an ingestd process whose pool holds at most
// conns, what the test reserved for it, not max_in_flight + 5.
func ingestdURL(dbURL string, conns int) string {
	if strings.Contains(dbURL, "pool_max_conns") {
		return dbURL
	}
	return pgtest.PoolURL(dbURL, conns)
}

// testDB creates a fresh migrated database for t and returns its URL, for
// the binary's -database-url, and a pool on it, for the test's own checks,
// having reserved the server's connections for the pool and one ingestd
// process at a time. The pool is closed and the database dropped when t
// ends.
func testDB(t *testing.T) (string, *pgxpool.Pool) {
	t.Helper()
	return testDBFor(t, ingestdConns)
}

// testDBFor is testDB for a test whose ingestd processes open up to conns
// connections at once.
func testDBFor(t *testing.T, conns int) (string, *pgxpool.Pool) {
	t.Helper()
	u := pgtest.URLFor(t, pgtest.PoolConns+conns)
	pool, err := pgxpool.New(t.Context(), pgtest.PoolURL(u, pgtest.PoolConns))
	if err != nil {
		t.Fatalf("pool: %v", err)
	}
	// Registered after URLFor's cleanup, so it runs first: the pool must
	// be closed before its database can be dropped.
	t.Cleanup(pool.Close)
	return u, pool
}

// fixtureOrigin serves layers, each of features parcels, from a wfstest
// server on loopback until t ends. Its feeds' URL is ts.URL + "/wfs".
func fixtureOrigin(t *testing.T, features int, layers ...string) (server *wfstest.Server, ts *httptest.Server) {
	t.Helper()
	server = wfstest.New()
	for _, l := range layers {
		server.AddLayer(l, layertest.Parcels{N: features})
	}
	ts = httptest.NewServer(server) // 127.0.0.1:0: loopback only
	t.Cleanup(ts.Close)
	return server, ts
}
