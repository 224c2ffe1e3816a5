package feeds_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ingestd/ingestd/breaker"
	"github.com/ingestd/ingestd/feature"
	"github.com/ingestd/ingestd/internal/layertest"
	"github.com/ingestd/ingestd/source"
	"github.com/ingestd/ingestd/wfs"
	"github.com/ingestd/ingestd/wfs/wfstest"
)

// BenchmarkRetryStorm replays a flapping county against two pollers and prints
// how many requests the county received from each:
//
//   - naive: every request retried 4 times (5 attempts, 100 ms apart), no breaker;
//   - ingestd: the wfs client through breaker.Registry with its default policy
//     (cooldowns shortened so that probes happen within the run).
//
// The county answers like a real trace: one OK, three timeouts, an HTML 500,
// two OKs, then goes hard down (connection refused) for the rest of the run.
// 50 feeds poll it, and 5 feeds each poll two healthy origins, every 500 ms
// for a fixed period. Requests are counted per origin at the client's
// transport, so a refused connection counts as a request the county saw.
//
//	go test ./feeds -run '^$' -bench RetryStorm -benchtime 1x
//	INGESTD_STORM_SECONDS=20 …   (default 8)
func BenchmarkRetryStorm(b *testing.B) {
	period := time.Duration(envInt(b, "INGESTD_STORM_SECONDS", 8)) * time.Second
	for i := 0; i < b.N; i++ {
		naive := runStorm(b, "naive", period, naivePoller)
		ing := runStorm(b, "ingestd", period, ingestdPoller)
		fmt.Fprintf(os.Stdout, "\nretry storm, %s: 50 feeds on a flapping county, 2×5 feeds on healthy origins, a tick every 500 ms\n", period)
		fmt.Fprintf(os.Stdout, "%-8s %14s %20s %18s %18s %16s\n", "poller", "county reqs", "county reqs after", "healthy reqs", "healthy refusals", "county refusals")
		fmt.Fprintf(os.Stdout, "%-8s %14s %20s %18s %18s %16s\n", "", "(total)", "it went down", "", "", "(no network)")
		for _, r := range []stormResult{naive, ing} {
			fmt.Fprintf(os.Stdout, "%-8s %14d %20d %18d %18d %16d\n", r.name, r.countyTotal, r.countyAfterDown,
				r.healthyRequests, r.healthyRefusals, r.countyRefusals)
		}
		ratio := float64(ing.countyAfterDown) / float64(max(naive.countyAfterDown, 1))
		fmt.Fprintf(os.Stdout, "ingestd/naive requests to the county after it went down: %.3f (target ≤ 0.100)\n", ratio)
		b.ReportMetric(float64(naive.countyAfterDown), "naive-county-reqs")
		b.ReportMetric(float64(ing.countyAfterDown), "ingestd-county-reqs")
		b.ReportMetric(ratio, "ingestd/naive")
		b.ReportMetric(float64(ing.healthyRefusals), "healthy-refusals")
	}
}

type stormResult struct {
	name                         string
	countyTotal, countyAfterDown int64
	healthyRequests              int64
	healthyRefusals              int64
	countyRefusals               int64
}

// pollFunc polls one page of layer; it reports whether the poll was refused
// without touching the network.
type pollFunc func(ctx context.Context, env *stormEnv, layer source.Layer) (refused bool)

type stormEnv struct {
	http     *http.Client
	client   *wfs.Client // used by ingestdPoller
	downAt   atomic.Int64
	counting *countingTransport
}

func runStorm(b *testing.B, name string, period time.Duration, poll pollFunc) stormResult {
	b.Helper()
	county := newFlappingCounty(b)
	healthy := []string{startHealthy(b), startHealthy(b)}

	counting := &countingTransport{next: &http.Transport{MaxIdleConnsPerHost: 64}, counts: map[string]*atomic.Int64{}}
	env := &stormEnv{http: &http.Client{Transport: counting}, counting: counting}
	county.onDown = func() { env.downAt.Store(counting.count(county.origin)) }
	p := breaker.DefaultPolicy()
	p.OpenBase = time.Second // probes within the run; the default 30 s would flatter ingestd
	p.OpenMax = 4 * time.Second
	p.RateLimit = 0 // the bench counts attempts, not pacing
	env.client = wfs.NewClient(env.http, breaker.NewRegistry(breaker.Config{MaxInFlight: 20, Policy: p}, nil), nil)

	type feed struct {
		layer   source.Layer
		healthy bool
		running atomic.Bool
	}
	var feeds []*feed
	for range 50 {
		feeds = append(feeds, &feed{layer: stormLayer(county.url)})
	}
	for _, h := range healthy {
		for range 5 {
			feeds = append(feeds, &feed{layer: stormLayer(h), healthy: true})
		}
	}

	ctx, cancel := context.WithTimeout(b.Context(), period)
	defer cancel()
	var wg sync.WaitGroup
	var healthyRefusals, countyRefusals atomic.Int64
	tick := time.NewTicker(500 * time.Millisecond)
	defer tick.Stop()
	for {
		for _, f := range feeds {
			if !f.running.CompareAndSwap(false, true) {
				continue // skip if still running, as the scheduler does
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer f.running.Store(false)
				if poll(ctx, env, f.layer) {
					if f.healthy {
						healthyRefusals.Add(1)
					} else {
						countyRefusals.Add(1)
					}
				}
			}()
		}
		select {
		case <-ctx.Done():
			wg.Wait()
			var healthyReqs int64
			for _, h := range healthy {
				healthyReqs += counting.count(h)
			}
			total := counting.count(county.origin)
			return stormResult{name: name, countyTotal: total, countyAfterDown: total - env.downAt.Load(),
				healthyRequests: healthyReqs, healthyRefusals: healthyRefusals.Load(), countyRefusals: countyRefusals.Load()}
		case <-tick.C:
		}
	}
}

// naivePoller retries every failure 4 times, 100 ms apart: what the county
// suffers from most pollers.
func naivePoller(ctx context.Context, env *stormEnv, layer source.Layer) bool {
	u, _ := wfs.RequestURL(layer, 0)
	for attempt := 0; attempt < 5; attempt++ {
		actx, cancel := context.WithTimeout(ctx, layer.RequestTimeout)
		req, _ := http.NewRequestWithContext(actx, http.MethodGet, u.String(), nil)
		resp, err := env.http.Do(req)
		if err == nil {
			_, err = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if err == nil && resp.StatusCode == http.StatusOK {
				cancel()
				return false
			}
		}
		cancel()
		select {
		case <-ctx.Done():
			return false
		case <-time.After(100 * time.Millisecond):
		}
	}
	return false
}

// ingestdPoller fetches through the wfs client and its breakers.
func ingestdPoller(ctx context.Context, env *stormEnv, layer source.Layer) bool {
	_, err := env.client.Fetch(ctx, layer, 0, func(_ context.Context, _ source.Page, features feature.FeatureReader) error {
		for {
			if _, err := features.Next(); err != nil {
				if errors.Is(err, io.EOF) {
					return nil
				}
				return fmt.Errorf("draining: %w", err)
			}
		}
	})
	var open *breaker.OpenError
	return errors.As(err, &open)
}

func stormLayer(base string) source.Layer {
	return source.Layer{Kind: wfs.Kind, URL: base + "/wfs", Settings: wfs.Settings{TypeName: "parcels", Version: "2.0.0", OutputFormat: "application/json"}, PageSize: 50, RequestTimeout: 300 * time.Millisecond}
}

// flappingCounty answers by request number: OK, three timeouts, an HTML 500,
// two OKs; the next request takes it hard down (its listener closes, so
// every later connection is refused).
type flappingCounty struct {
	url, origin string
	onDown      func()
}

func newFlappingCounty(b *testing.B) *flappingCounty {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	c := &flappingCounty{url: "http://" + ln.Addr().String()}
	c.origin = c.url
	server := wfstest.New()
	server.AddLayer("parcels", layertest.Parcels{N: 50})
	srv := &http.Server{Handler: server}
	var once sync.Once
	server.SetFault(func(r wfstest.Request) *wfstest.Fault {
		switch {
		case r.Seq == 1 || r.Seq == 6 || r.Seq == 7:
			return nil
		case r.Seq <= 4:
			return &wfstest.Fault{Hang: true}
		case r.Seq == 5:
			return &wfstest.Fault{Status: 500, Body: "<html><head><title>500 Internal Server Error</title></head><body>Proxy error</body></html>"}
		}
		once.Do(func() {
			if c.onDown != nil {
				c.onDown()
			}
			go srv.Close() // hard down: the listener closes, later dials are refused
		})
		return &wfstest.Fault{Hang: true}
	})
	go func() { _ = srv.Serve(ln) }()
	b.Cleanup(func() { _ = srv.Close() })
	return c
}

func startHealthy(b *testing.B) string {
	server := wfstest.New()
	server.AddLayer("parcels", layertest.Parcels{N: 50})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	srv := &http.Server{Handler: server}
	go func() { _ = srv.Serve(ln) }()
	b.Cleanup(func() { _ = srv.Close() })
	return "http://" + ln.Addr().String()
}

// countingTransport counts the attempts sent to each origin, including those
// whose connection is refused.
type countingTransport struct {
	next   http.RoundTripper
	mu     sync.Mutex
	counts map[string]*atomic.Int64
}

func (t *countingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	t.counter("http://" + r.URL.Host).Add(1)
	return t.next.RoundTrip(r)
}

func (t *countingTransport) counter(origin string) *atomic.Int64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	c, ok := t.counts[origin]
	if !ok {
		c = new(atomic.Int64)
		t.counts[origin] = c
	}
	return c
}

func (t *countingTransport) count(origin string) int64 { return t.counter(origin).Load() }
