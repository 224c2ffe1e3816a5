package feeds_test

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/ingestd/ingestd/breaker"
	"github.com/ingestd/ingestd/config"
	"github.com/ingestd/ingestd/feeds"
	"github.com/ingestd/ingestd/feeds/postgis"
	"github.com/ingestd/ingestd/internal/layertest"
	"github.com/ingestd/ingestd/internal/memstat"
	"github.com/ingestd/ingestd/migrations/pgtest"
	"github.com/ingestd/ingestd/wfs"
	"github.com/ingestd/ingestd/wfs/wfstest"
)

// BenchmarkSchedulerScale runs one manager with many feeds spread over many
// origins (each origin its own loopback listener of the fixture server, each
// feed a small paged WFS layer) against a real PostGIS, and prints the
// scheduling lag between each tick's planned and actual start (p50, p99,
// max), peak RSS and peak goroutines of this process (the fixture server
// runs in a child process).
//
//	INGESTD_SCALE_FEEDS    feeds (default 5000)
//	INGESTD_SCALE_ORIGINS  origins (default 1000)
//	INGESTD_SCALE_SECONDS  run time (default 60)
//	INGESTD_SCALE_EVERY    each feed's schedule interval (default 20s)
func BenchmarkSchedulerScale(b *testing.B) {
	nFeeds := envInt(b, "INGESTD_SCALE_FEEDS", 5000)
	nOrigins := envInt(b, "INGESTD_SCALE_ORIGINS", 1000)
	period := time.Duration(envInt(b, "INGESTD_SCALE_SECONDS", 60)) * time.Second
	every := os.Getenv("INGESTD_SCALE_EVERY")
	if every == "" {
		every = "20s"
	}

	// The fixture server runs in a process of its own, so that the RSS
	// and goroutines measured are the manager's, not the server's.
	origins := startScaleOrigins(b, nOrigins)

	var yaml strings.Builder
	fmt.Fprintf(&yaml, "max_in_flight: 50\ndefaults:\n  schedule: \"@every %s\"\n  page_size: 5\n  timeout: 1m\n  request_timeout: 10s\njurisdictions:\n", every)
	perJurisdiction := 50
	for j := 0; j*perJurisdiction < nFeeds; j++ {
		fmt.Fprintf(&yaml, "  - id: j%d\n    feeds:\n", j)
		for k := 0; k < perJurisdiction && j*perJurisdiction+k < nFeeds; k++ {
			i := j*perJurisdiction + k
			fmt.Fprintf(&yaml, "      - {id: f%d, kind: wfs, url: \"%s/wfs\", type_name: parcels, sort_by: pin}\n", i, origins[i%nOrigins])
		}
	}
	cfg, err := config.Parse("scale.yaml", []byte(yaml.String()), nil)
	if err != nil {
		b.Fatal(err)
	}

	pool, err := pgxpool.New(b.Context(), pgtest.PoolURL(pgtest.URLFor(b, 20), 20))
	if err != nil {
		b.Fatal(err)
	}
	defer pool.Close()
	breakers := breaker.NewRegistry(breaker.Config{MaxInFlight: cfg.MaxInFlight, Policy: cfg.Defaults.Breaker}, nil)
	client := wfs.NewClient(&http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 2, IdleConnTimeout: 30 * time.Second}}, breakers, nil)

	var mu sync.Mutex
	var lags []time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		// A manager starts once: each run gets its own.
		// As the daemon runs it: at most max_in_flight polls at once, and
		// twice an origin's requests in flight of one origin.
		manager := feeds.NewManager(postgis.New(pool), client, feeds.WithCatchUp(false), feeds.WithPollSlots(cfg.MaxInFlight),
			feeds.WithOriginPollSlots(func(o string) int { return 2 * breakers.Policy(o).MaxInFlightPerOrigin }),
			feeds.WithTickObserver(func(_ string, planned, started time.Time) {
				mu.Lock()
				lags = append(lags, started.Sub(planned))
				mu.Unlock()
			}))
		if err := manager.Update(b.Context(), cfg); err != nil {
			b.Fatal(err)
		}
		if err := manager.Start(b.Context()); err != nil {
			b.Fatal(err)
		}
		peakGoroutines := 0
		deadline := time.Now().Add(period)
		for time.Now().Before(deadline) {
			peakGoroutines = max(peakGoroutines, runtime.NumGoroutine())
			// A benchmark of the real clock: the run lasts period of
			// wall time, sampled every 100ms; it prints figures, asserts none.
			time.Sleep(100 * time.Millisecond)
		}
		manager.Stop()

		mu.Lock()
		slices.Sort(lags)
		n := len(lags)
		if n == 0 {
			b.Fatal("no tick ran")
		}
		q := func(p float64) time.Duration { return lags[min(n-1, int(p*float64(n)))] }
		var polls int64
		_ = pool.QueryRow(b.Context(), `SELECT count(*) FROM polls WHERE status = 'succeeded'`).Scan(&polls)
		fmt.Printf("\nscheduler scale: %d feeds over %d origins, @every %s, %s run\n", nFeeds, nOrigins, every, period)
		fmt.Printf("ticks %d, polls succeeded %d; lag p50 %s, p99 %s, max %s; peak RSS %.0f MB; peak goroutines %d\n",
			n, polls, q(0.5).Round(time.Microsecond), q(0.99).Round(time.Microsecond), lags[n-1].Round(time.Microsecond),
			float64(memstat.PeakRSS())/(1<<20), peakGoroutines)
		b.ReportMetric(q(0.5).Seconds(), "lag-p50-s")
		b.ReportMetric(q(0.99).Seconds(), "lag-p99-s")
		b.ReportMetric(float64(memstat.PeakRSS())/(1<<20), "peak-RSS-MB")
		b.ReportMetric(float64(peakGoroutines), "peak-goroutines")
		mu.Unlock()
	}
}

// scaleOriginsEnv, set in a child process of the test binary, makes it the
// fixture server of BenchmarkSchedulerScale: that many origins.
const scaleOriginsEnv = "INGESTD_SCALE_SERVE_ORIGINS"

// TestMain serves BenchmarkSchedulerScale's origins in its child process,
// and otherwise runs up to 8 tests at once: they wait on PostgreSQL,
// loopback servers and schedules far more than they compute (see
// pgtest.Main).
func TestMain(m *testing.M) {
	if n := os.Getenv(scaleOriginsEnv); n != "" {
		serveScaleOrigins(n)
		return
	}
	os.Exit(pgtest.Main(m, 8))
}

// serveScaleOrigins serves a small parcel layer on n loopback listeners,
// prints their addresses one per line, and exits when stdin closes (the
// benchmark ended or died).
func serveScaleOrigins(n string) {
	count, err := strconv.Atoi(n)
	if err != nil {
		fmt.Fprintln(os.Stderr, scaleOriginsEnv+":", err)
		os.Exit(2)
	}
	server := wfstest.New()
	server.AddLayer("parcels", layertest.Parcels{N: 8})
	srv := &http.Server{Handler: server}
	out := bufio.NewWriter(os.Stdout)
	for range count {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		go func() { _ = srv.Serve(ln) }()
		fmt.Fprintln(out, "http://"+ln.Addr().String())
	}
	out.Flush()
	_, _ = io.Copy(io.Discard, os.Stdin)
}

// startScaleOrigins starts the fixture server's process and returns its
// origins.
func startScaleOrigins(b *testing.B, n int) []string {
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), fmt.Sprintf("%s=%d", scaleOriginsEnv, n))
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		b.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		stdin.Close()
		_ = cmd.Wait()
	})
	origins := make([]string, 0, n)
	lines := bufio.NewScanner(stdout)
	for len(origins) < n && lines.Scan() {
		origins = append(origins, lines.Text())
	}
	if len(origins) < n {
		b.Fatalf("fixture server process gave %d of %d origins: %v", len(origins), n, lines.Err())
	}
	return origins
}
