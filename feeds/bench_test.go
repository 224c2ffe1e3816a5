package feeds_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"runtime/metrics"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/ingestd/ingestd/breaker"
	"github.com/ingestd/ingestd/config"
	"github.com/ingestd/ingestd/feeds"
	"github.com/ingestd/ingestd/feeds/postgis"
	"github.com/ingestd/ingestd/internal/kindconf"
	"github.com/ingestd/ingestd/internal/layertest"
	"github.com/ingestd/ingestd/internal/memstat"
	"github.com/ingestd/ingestd/migrations/pgtest"
	"github.com/ingestd/ingestd/wfs/wfstest"
)

// BenchmarkPollLayer streams one generated parcel layer through the whole poll
// path (fetch pages → decode → COPY into staging → apply) and reports
// features/s, peak Go heap and peak RSS of this process.
//
// Size and source come from the environment, so scripts/bench.sh can run each
// size in its own process (peak RSS is per process) with the feed server in
// another process:
//
//	INGESTD_BENCH_FEATURES  features in the layer (default 200000)
//	INGESTD_BENCH_URL       WFS endpoint serving layer "parcels"; default: an
//	                        in-process fixture server
//	INGESTD_BENCH_PAGE_SIZE features per page (default 5000; 0: the whole
//	                        layer in one unpaged response, which peak RSS
//	                        must not grow with: pages are staged in chunks)
func BenchmarkPollLayer(b *testing.B) {
	n := envInt(b, "INGESTD_BENCH_FEATURES", 200000)
	pageSize := 5000
	if v := os.Getenv("INGESTD_BENCH_PAGE_SIZE"); v == "0" {
		pageSize = 0
	} else {
		pageSize = envInt(b, "INGESTD_BENCH_PAGE_SIZE", pageSize)
	}
	url := os.Getenv("INGESTD_BENCH_URL")
	if url == "" {
		server := wfstest.New()
		server.AddLayer("parcels", layertest.Parcels{N: n})
		ts := httptest.NewServer(server)
		defer ts.Close()
		url = ts.URL + "/wfs"
	}
	cfg, err := config.Parse("bench.yaml", []byte(fmt.Sprintf(`
jurisdictions:
  - id: bench
    feeds:
      - id: parcels
        kind: wfs
        url: %s
        type_name: parcels
        page_size: %d
        sort_by: pin
        timeout: 1h
`, url, pageSize)), nil)
	if err != nil {
		b.Fatal(err)
	}
	pool := pgtest.Pool(b)
	p := breaker.DefaultPolicy()
	p.RateLimit = 0 // measure ingestd, not the politeness towards a county
	breakers := breaker.NewRegistry(breaker.Config{Policy: p}, nil)
	manager := feeds.NewManager(postgis.New(pool), feeds.NewFetchers(kindconf.FetcherDeps{HTTP: &http.Client{}, Breakers: breakers}))
	if err := manager.Update(b.Context(), cfg); err != nil {
		b.Fatal(err)
	}

	peak := startPeakSampler()
	b.ResetTimer()
	var total time.Duration
	for i := 0; i < b.N; i++ {
		// Each iteration starts from an empty feed, so every run loads every
		// row instead of finding them unchanged.
		b.StopTimer()
		if _, err := pool.Exec(b.Context(), `DELETE FROM features`); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		start := time.Now()
		res, err := manager.Poll(b.Context(), "bench/parcels")
		if err != nil {
			b.Fatal(err)
		}
		total += time.Since(start)
		if res.Features != n {
			b.Fatalf("loaded %d features, want %d", res.Features, n)
		}
	}
	b.StopTimer()
	heap, rss := peak()
	b.ReportMetric(float64(n)*float64(b.N)/total.Seconds(), "features/s")
	b.ReportMetric(float64(heap)/(1<<20), "peak-heap-MB")
	b.ReportMetric(float64(rss)/(1<<20), "peak-RSS-MB")
}

// startPeakSampler samples the live heap every 5 ms until the returned func is
// called, which returns the peak heap and the process's peak RSS (VmHWM).
func startPeakSampler() func() (heap, rss uint64) {
	var mu sync.Mutex
	var peakHeap uint64
	done := make(chan struct{})
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		sample := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
		t := time.NewTicker(5 * time.Millisecond)
		defer t.Stop()
		for {
			metrics.Read(sample)
			mu.Lock()
			peakHeap = max(peakHeap, sample[0].Value.Uint64())
			mu.Unlock()
			select {
			case <-done:
				return
			case <-t.C:
			}
		}
	}()
	return func() (uint64, uint64) {
		close(done)
		<-stopped
		return peakHeap, memstat.PeakRSS()
	}
}

func envInt(b *testing.B, key string, def int) int {
	v := os.Getenv(key)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil || n <= 0 {
		b.Fatalf("%s=%q: want a positive integer", key, v)
	}
	return n
}
