package postgis_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/twpayne/go-geom"

	ft "github.com/ingestd/ingestd/feature"
	"github.com/ingestd/ingestd/feeds"
	"github.com/ingestd/ingestd/feeds/postgis"
	"github.com/ingestd/ingestd/migrations/pgtest"
)

// TestMain runs up to 8 tests at once: each waits on a database of its own
// far more than it computes (see pgtest.Main).
func TestMain(m *testing.M) {
	os.Exit(pgtest.Main(m, 8))
}

// bundle is what most tests need: a store on a fresh database.
type bundle struct {
	ctx   context.Context
	pool  *pgxpool.Pool
	store *postgis.Store
}

func setup(t *testing.T) *bundle {
	t.Helper()
	pool := pgtest.Pool(t)
	return &bundle{ctx: t.Context(), pool: pool, store: postgis.New(pool)}
}

// session is a connection of b's pool with the statements set run on it
// (SET …), held until the test ends.
func (b *bundle) session(t *testing.T, set ...string) *pgxpool.Conn {
	t.Helper()
	conn, err := b.pool.Acquire(b.ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(conn.Release)
	for _, stmt := range set {
		if _, err := conn.Exec(b.ctx, stmt); err != nil {
			t.Fatalf("%s: %v", stmt, err)
		}
	}
	return conn
}

func feedInfo(name string) feeds.FeedInfo {
	return feeds.FeedInfo{
		Jurisdiction:     "wake",
		Feed:             name,
		Kind:             "wfs",
		URL:              "https://gis.example.org/wfs?typeName=" + name,
		Origin:           "https://gis.example.org:443",
		ExpectedInterval: time.Hour,
	}
}

// sliceReader yields features, then err (io.EOF when nil) — like a decoder,
// it reuses the Feature it returns.
type sliceReader struct {
	features []ft.Feature
	err      error
	cur      ft.Feature
}

func (r *sliceReader) Next() (*ft.Feature, error) {
	if len(r.features) == 0 {
		if r.err != nil {
			return nil, r.err
		}
		return nil, io.EOF
	}
	r.cur, r.features = r.features[0], r.features[1:]
	return &r.cur, nil
}

func reader(fs ...ft.Feature) *sliceReader { return &sliceReader{features: fs} }

func point(x, y float64, srid int) geom.T {
	return geom.NewPointFlat(geom.XY, []float64{x, y}).SetSRID(srid)
}

func square(x, y, d float64) geom.T {
	return geom.NewPolygonFlat(geom.XY, []float64{x, y, x + d, y, x + d, y + d, x, y + d, x, y}, []int{10}).SetSRID(4326)
}

func props(kv ...any) json.RawMessage {
	m := map[string]any{}
	for i := 0; i < len(kv); i += 2 {
		m[kv[i].(string)] = kv[i+1]
	}
	b, err := json.Marshal(m)
	if err != nil {
		panic(err)
	}
	return b
}

func feature(id string, g geom.T, p json.RawMessage) ft.Feature {
	return ft.Feature{ID: id, Geometry: g, Properties: p}
}

// poll runs a whole successful poll of pages and returns Apply's result.
// begin starts a poll of feed and returns its id.
func (b *bundle) begin(t *testing.T, feed feeds.FeedInfo) int64 {
	t.Helper()
	id, err := b.store.BeginPoll(b.ctx, feed)
	if err != nil {
		t.Fatal(err)
	}
	return id
}

func (b *bundle) poll(t *testing.T, feed feeds.FeedInfo, pages ...[]ft.Feature) (int64, feeds.ApplyResult) {
	t.Helper()
	id := b.stage(t, feed, pages...)
	res, err := b.store.Apply(b.ctx, id, feed)
	if err != nil {
		t.Fatal(err)
	}
	return id, res
}

// stage begins a poll of feed and stages pages as its pages 0, 1, …
func (b *bundle) stage(t *testing.T, feed feeds.FeedInfo, pages ...[]ft.Feature) int64 {
	t.Helper()
	id := b.begin(t, feed)
	for i, p := range pages {
		n, err := b.store.StagePage(b.ctx, id, i, reader(p...))
		if err != nil {
			t.Fatal(err)
		}
		if n != len(p) {
			t.Fatalf("StagePage staged %d, want %d", n, len(p))
		}
	}
	return id
}

// applyIncomplete applies poll id, which must fail with an
// *feeds.IncompleteSnapshotError whose reason contains want.
func (b *bundle) applyIncomplete(t *testing.T, id int64, feed feeds.FeedInfo, want string) {
	t.Helper()
	_, err := b.store.Apply(b.ctx, id, feed)
	var ie *feeds.IncompleteSnapshotError
	if !errors.As(err, &ie) || !strings.Contains(ie.Reason, want) {
		t.Fatalf("apply: %v, want an IncompleteError saying %q", err, want)
	}
}

func (b *bundle) scalar(t *testing.T, dst any, sql string, args ...any) {
	t.Helper()
	if err := b.pool.QueryRow(b.ctx, sql, args...).Scan(dst); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
}

// textMap runs sql, whose rows are two text columns, and maps the first to
// the second.
func (b *bundle) textMap(t *testing.T, sql string, args ...any) map[string]string {
	t.Helper()
	rows, err := b.pool.Query(b.ctx, sql, args...)
	if err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	defer rows.Close()
	m := map[string]string{}
	for rows.Next() {
		var k, v string
		if err := rows.Scan(&k, &v); err != nil {
			t.Fatal(err)
		}
		m[k] = v
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return m
}

func (b *bundle) count(t *testing.T, sql string, args ...any) int {
	t.Helper()
	var n int
	b.scalar(t, &n, sql, args...)
	return n
}

// generatePolygons makes n distinct small squares for benchmarks.
func generatePolygons(n int) []ft.Feature {
	out := make([]ft.Feature, n)
	for i := range out {
		x := -78.9 + float64(i%1000)*1e-4
		y := 35.7 + float64(i/1000)*1e-4
		out[i] = feature(fmt.Sprintf("parcel.%d", i), square(x, y, 5e-5),
			props("pin", fmt.Sprintf("%010d", i), "owner", "Example Owner LLC", "acres", float64(i%97)/10))
	}
	return out
}
