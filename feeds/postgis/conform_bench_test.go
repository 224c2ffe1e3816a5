package postgis_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/twpayne/go-geom"

	ft "github.com/ingestd/ingestd/feature"
	"github.com/ingestd/ingestd/feeds/postgis"
	"github.com/ingestd/ingestd/internal/gdaltest"
	"github.com/ingestd/ingestd/internal/layertest"
	"github.com/ingestd/ingestd/migrations/pgtest"
)

// BenchmarkConformFirstLoad times the Apply of the 250,000-parcel
// fixture's first load (internal/layertest.Parcels, staging outside the
// timer) without a conform and with layertest.ParcelsConform into
// common.addresses, the two alternating in one sitting, and prints the
// median of each, their ratio, and the medians of the CPU the Apply took
// in this process and its database backends: what conforming adds to a
// first load (the goal is at most 10 % more wall).
//
//	go test -run '^$' -bench ConformFirstLoad -benchtime 3x ./feeds/postgis
func BenchmarkConformFirstLoad(b *testing.B) {
	const pageSize = 5_000
	p := layertest.Parcels{N: gdaltest.BenchParcels}
	pool := pgtest.Pool(b)
	ctx := b.Context()
	store := postgis.New(pool)
	cc := addressConform(b, layertest.ParcelsConform)
	page := make([]ft.Feature, pageSize)
	var rec layertest.Record
	var buf []byte
	var times, cpus [2][]time.Duration
	for i := 0; i < b.N; i++ {
		for _, withConform := range []bool{i%2 == 1, i%2 == 0} {
			feed := feedInfo(fmt.Sprintf("parcels-%d-%v", i, withConform))
			if withConform {
				feed.Common = cc
			}
			id, err := store.BeginPoll(ctx, feed)
			if err != nil {
				b.Fatal(err)
			}
			for start := 0; start < p.N; start += pageSize {
				n := min(pageSize, p.N-start)
				for j := range n {
					p.Record(start+j, &rec)
					buf = p.AppendFeature(buf[:0], start+j)
					props := buf[bytes.Index(buf, []byte(`"properties":`))+len(`"properties":`) : len(buf)-1]
					page[j] = feature(rec.ID, geom.NewPolygonFlat(geom.XY, slices.Clone(rec.Coords),
						[]int{len(rec.Coords)}).SetSRID(4326), json.RawMessage(slices.Clone(props)))
				}
				if _, err := store.StagePage(ctx, id, start/pageSize, reader(page[:n]...)); err != nil {
					b.Fatal(err)
				}
			}
			if _, err := pool.Exec(ctx, "CHECKPOINT"); err != nil {
				b.Fatal(err)
			}
			cpu0 := benchCPU(b, pool)
			t0 := time.Now()
			if _, err := store.Apply(ctx, id, feed); err != nil {
				b.Fatal(err)
			}
			k := 0
			if withConform {
				k = 1
			}
			times[k] = append(times[k], time.Since(t0))
			cpus[k] = append(cpus[k], cpuSince(b, pool, cpu0))
		}
	}
	median := func(d []time.Duration) float64 {
		slices.Sort(d)
		return float64(d[len(d)/2].Milliseconds())
	}
	plain, conformed := median(times[0]), median(times[1])
	plainCPU, conformedCPU := median(cpus[0]), median(cpus[1])
	b.ReportMetric(plain, "ms/first-load")
	b.ReportMetric(conformed, "ms/conformed-first-load")
	b.ReportMetric(conformed/plain, "conformed/plain")
	b.ReportMetric(plainCPU, "cpu-ms/first-load")
	b.ReportMetric(conformedCPU, "cpu-ms/conformed-first-load")
	b.ReportMetric(0, "ns/op")
	b.Logf("first load of %d parcels, medians of %d: wall %.0f ms, conformed %.0f ms (%.2fx); CPU %.0f ms, conformed %.0f ms (+%.0f ms)",
		p.N, b.N, plain, conformed, conformed/plain, plainCPU, conformedCPU, conformedCPU-plainCPU)
}

// benchCPU is the CPU time used so far by this process and by each
// client backend serving pool (read from /proc: the server runs on this
// machine), by process id: on a shared machine, a figure its load does
// not inflate as it does wall time. cpuSince sums the difference.
func benchCPU(b *testing.B, pool *pgxpool.Pool) map[int]time.Duration {
	b.Helper()
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	out := map[int]time.Duration{0: time.Duration(ru.Utime.Nano() + ru.Stime.Nano())}
	rows, err := pool.Query(b.Context(), `SELECT pid FROM pg_stat_activity
		WHERE datname = current_database() AND backend_type = 'client backend'`)
	if err != nil {
		b.Fatal(err)
	}
	pids, err := pgx.CollectRows(rows, pgx.RowTo[int])
	if err != nil {
		b.Fatal(err)
	}
	for _, pid := range pids {
		stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			continue // a backend that just ended, or a server elsewhere
		}
		// Fields 14 and 15, utime and stime in clock ticks (100 a second
		// on Linux), counted after the command name's closing parenthesis.
		f := strings.Fields(string(stat[bytes.LastIndexByte(stat, ')')+1:]))
		for _, i := range []int{11, 12} {
			n, _ := strconv.Atoi(f[i])
			out[pid] += time.Duration(n) * 10 * time.Millisecond
		}
	}
	return out
}

// cpuSince is the CPU used since before (benchCPU) by the processes
// that were there then and are still: a parallel worker or an autovacuum
// worker of the database, which may start and end at any time, is not
// counted (the bulk load's workers alike on both sides of
// BenchmarkConformFirstLoad).
func cpuSince(b *testing.B, pool *pgxpool.Pool, before map[int]time.Duration) time.Duration {
	var d time.Duration
	for pid, t := range benchCPU(b, pool) {
		if t0, ok := before[pid]; ok {
			d += t - t0
		}
	}
	return d
}
