package breaker_test

// BenchmarkPacingPolicies measures what the origin's pacing costs a poll and
// what the origin sees: an OGC API – Features collection of
// generated parcels, served in pygeoapi's mode (pages of at most 1000, the
// collection's own limit) by the ogcapitest fixture with a per-page delay
// (the server's time to answer a page), read through ogcapi.Client and a
// breaker.Registry under each candidate policy. The fetch decodes every
// feature and stages nothing: PostgreSQL's share of a real poll is the same
// under every policy.
//
// It prints two tables (scripts/bench.sh pacing):
//
//   - one poll alone: the wall time of the whole collection, its overhead
//     over the server's own delays (decoding included: noisy on a shared
//     machine) and the time it waited in line for pacing (exact);
//   - several polls of one origin at once (the politeness case): the
//     origin's page requests per second, the requests it had in flight on
//     average (its busy time over the wall) and at most.
//
// With BENCH_PACING_GDAL=1 and ogr2ogr on PATH it also times GDAL's OAPIF
// driver reading the single-poll collection from the same server.
//
// Environment: BENCH_PACING_FEATURES (the single poll's collection, default
// 50000), BENCH_PACING_SLOW (include the 5 s server, default 1).

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ingestd/ingestd/breaker"
	"github.com/ingestd/ingestd/feature"
	"github.com/ingestd/ingestd/internal/layertest"
	"github.com/ingestd/ingestd/ogcapi"
	"github.com/ingestd/ingestd/ogcapi/ogcapitest"
	"github.com/ingestd/ingestd/pollbudget"
	"github.com/ingestd/ingestd/source"
)

// pacingCandidate is a policy under test.
type pacingCandidate struct {
	name string
	set  func(*breaker.Policy)
}

var pacingCandidates = []pacingCandidate{
	{"old default: 5/s burst 10, ≤4 in flight", func(p *breaker.Policy) { p.RateLimit, p.Burst, p.MaxInFlightPerOrigin = 5, 10, 4 }},
	{"unpaced: no rate, ≤4 in flight", func(p *breaker.Policy) { p.MaxInFlightPerOrigin = 4 }},
	{"default: no rate, ≤2 in flight", func(*breaker.Policy) {}},
	{"no rate, ≤1 in flight", func(p *breaker.Policy) { p.MaxInFlightPerOrigin = 1 }},
	{"adaptive target 1, ≤4 in flight", func(p *breaker.Policy) { p.TargetConcurrency, p.MaxInFlightPerOrigin = 1, 4 }},
	{"adaptive target 2, ≤4 in flight", func(p *breaker.Policy) { p.TargetConcurrency, p.MaxInFlightPerOrigin = 2, 4 }},
}

// pacingServer is the fixture with a per-page delay and a count of the
// requests in flight.
type pacingServer struct {
	api      *ogcapitest.Server
	url      string
	delay    atomic.Int64 // per items request, ns
	inFlight atomic.Int64
	peak     atomic.Int64
	items    atomic.Int64
	busy     atomic.Int64 // ns spent answering, summed over requests
}

func newPacingServer(b *testing.B) *pacingServer {
	s := &pacingServer{api: ogcapitest.New()}
	s.api.Mode, s.api.MaxLimit = ogcapitest.PyGeoAPI, 1000
	s.api.Hook = func(string, int) {
		s.items.Add(1)
		time.Sleep(time.Duration(s.delay.Load())) // the server's time to answer a page
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		began := time.Now()
		n := s.inFlight.Add(1)
		defer func() {
			s.inFlight.Add(-1)
			s.busy.Add(int64(time.Since(began)))
		}()
		for p := s.peak.Load(); n > p && !s.peak.CompareAndSwap(p, n); p = s.peak.Load() {
		}
		s.api.ServeHTTP(w, r)
	}))
	b.Cleanup(srv.Close)
	s.url = srv.URL
	return s
}

// reset sets the per-page delay and zeroes the counts.
func (s *pacingServer) reset(delay time.Duration) {
	s.delay.Store(int64(delay))
	s.peak.Store(0)
	s.items.Store(0)
	s.busy.Store(0)
}

// poll reads collection whole through a fresh client of breakers, and
// returns the features and the time the poll waited in line for the
// origin's pacing (its pollbudget's wait, as polls.queue_wait records it).
func poll(ctx context.Context, b *testing.B, breakers *breaker.Registry, url string) (int, time.Duration) {
	ctx, budget, cancel := pollbudget.New(ctx, time.Hour, time.Hour)
	defer cancel()
	c := ogcapi.NewClient(&http.Client{}, breakers, nil)
	layer, _, err := c.Prepare(ctx, source.Layer{Kind: "ogcapi", URL: url, PageSize: 1000})
	if err != nil {
		b.Error(err) // not Fatal: polls run on goroutines of their own
		return 0, 0
	}
	n := 0
	_, err = c.Fetch(ctx, layer, 0, func(_ context.Context, _ source.Page, r feature.FeatureReader) error {
		for {
			if _, err := r.Next(); err == io.EOF {
				return nil
			} else if err != nil {
				return err
			}
			n++
		}
	})
	if err != nil {
		b.Error(err)
	}
	return n, budget.Waited()
}

func registryFor(c pacingCandidate) *breaker.Registry {
	p := breaker.DefaultPolicy()
	c.set(&p)
	return breaker.NewRegistry(breaker.Config{Policy: p}, nil)
}

func envIntOr(b *testing.B, key string, def int) int {
	v := os.Getenv(key)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil {
		b.Fatalf("%s=%q: %v", key, v, err)
	}
	return n
}

func BenchmarkPacingPolicies(b *testing.B) {
	if os.Getenv("BENCH_PACING") != "1" {
		// Minutes long: only `scripts/bench.sh pacing` runs it, not the
		// breaker mode's `-bench .`.
		b.Skip("set BENCH_PACING=1 (scripts/bench.sh pacing)")
	}
	n := envIntOr(b, "BENCH_PACING_FEATURES", 50000)
	s := newPacingServer(b)
	const polls = 8
	// The 5 s server is read for fewer pages, to keep the bench within
	// minutes: a single poll of 2 pages, 8 polls of one page each.
	type server struct {
		delay          time.Duration
		single, shared int // features of the single poll, and of each shared poll
	}
	servers := []server{{50 * time.Millisecond, n, 4000}, {500 * time.Millisecond, 10000, 4000}}
	if envIntOr(b, "BENCH_PACING_SLOW", 1) == 1 {
		servers = append(servers, server{5 * time.Second, 1500, 999})
	}
	for b.Loop() {
		fmt.Printf("\n== one poll alone: pygeoapi mode, pages of 1000, the server's delay per page\n")
		fmt.Printf("%-8s %-40s %8s %6s %8s %10s %9s\n", "delay", "policy", "features", "pages", "wall_s", "overhead_s", "waited_s")
		for _, sv := range servers {
			s.api.Add("single", ogcapitest.Collection{Layer: layertest.Parcels{N: sv.single}, MaxLimit: 1000})
			for _, c := range pacingCandidates {
				s.reset(sv.delay)
				// The bucket starts full, as on an origin polled
				// an hour ago.
				reg := registryFor(c)
				start := time.Now()
				got, waited := poll(b.Context(), b, reg, s.url+"/collections/single")
				wall := time.Since(start)
				pages := s.items.Load()
				fmt.Printf("%-8s %-40s %8d %6d %8.2f %10.2f %9.2f\n", sv.delay, c.name, got, pages, wall.Seconds(),
					(wall - time.Duration(pages)*sv.delay).Seconds(), waited.Seconds())
			}
		}
		if os.Getenv("BENCH_PACING_GDAL") == "1" {
			s.api.Add("single", ogcapitest.Collection{Layer: layertest.Parcels{N: n}, MaxLimit: 1000})
			s.reset(50 * time.Millisecond)
			wall := gdalWall(b, s.url+"/collections/single")
			fmt.Printf("%-8s %-40s %8d %6d %8.2f %10.2f %9s\n", 50*time.Millisecond, "GDAL ogr2ogr (OAPIF, PAGE_SIZE 1000)", n, s.items.Load(),
				wall.Seconds(), (wall - time.Duration(s.items.Load())*50*time.Millisecond).Seconds(), "-")
		}
		fmt.Printf("\n== %d polls of one origin at once (the politeness case)\n", polls)
		fmt.Printf("%-8s %-40s %6s %8s %8s %9s %8s\n", "delay", "policy", "pages", "wall_s", "pages/s", "in_flight", "max")
		for _, sv := range servers {
			for i := range polls {
				s.api.Add("parcels_"+strconv.Itoa(i), ogcapitest.Collection{Layer: layertest.Parcels{N: sv.shared}, MaxLimit: 1000})
			}
			for _, c := range pacingCandidates {
				s.reset(sv.delay)
				reg := registryFor(c)
				start := time.Now()
				var wg sync.WaitGroup
				for i := range polls {
					wg.Go(func() { poll(b.Context(), b, reg, s.url+"/collections/parcels_"+strconv.Itoa(i)) })
				}
				wg.Wait()
				wall := time.Since(start)
				pages := s.items.Load()
				fmt.Printf("%-8s %-40s %6d %8.2f %8.2f %9.2f %8d\n", sv.delay, c.name, pages, wall.Seconds(),
					float64(pages)/wall.Seconds(), float64(s.busy.Load())/float64(wall), s.peak.Load())
			}
		}
	}
}

// gdalWall times ogr2ogr reading collection into a GeoJSON file.
func gdalWall(b *testing.B, collection string) time.Duration {
	if _, err := exec.LookPath("ogr2ogr"); err != nil {
		b.Skip("BENCH_PACING_GDAL=1 but no ogr2ogr on PATH")
	}
	out := filepath.Join(b.TempDir(), "gdal.geojson")
	start := time.Now()
	cmd := exec.Command("ogr2ogr", "-f", "GeoJSON", out, "OAPIF:"+collection, "-oo", "PAGE_SIZE=1000")
	if msg, err := cmd.CombinedOutput(); err != nil {
		b.Fatalf("ogr2ogr: %v\n%s", err, strings.TrimSpace(string(msg)))
	}
	return time.Since(start)
}
